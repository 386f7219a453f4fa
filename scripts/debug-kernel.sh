#!/bin/sh
# Build (or reuse) the debug kernel of the test matrix: Debian's
# linux-source-6.1, tinyconfig plus vm/debug-kernel.config (KASAN, lockdep,
# DEBUG_ATOMIC_SLEEP, DEBUG_VM, kmemleak, UBSAN, failslab, fail_page_alloc,
# and what the VM harness needs, all built in).
#
# Usage: scripts/debug-kernel.sh DIR [TARBALL]
#   TARBALL: another kernel's sources to build the same configuration from
#   (default: /usr/src/linux-source-6.1.tar.*; vm/README.md "Other kernels"
#   uses Debian's linux-source-7.2).
#   Builds in DIR/<key>/ (src/: the sources, obj/: the build, out of tree)
#   and prints that obj/ directory: obj/arch/x86/boot/bzImage is the kernel,
#   and obj/ is the tree to build gpupool.ko against.  <key> hashes the
#   fragment, this script, the source tarball and the compiler, so a second
#   run reuses the build; a changed fragment builds anew.
# Fails (exit 1, saying which) when a fragment option did not end up in the
# final .config: a silently dropped option would be a hole in the matrix.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
# Absolute: the kernel's make runs in src/ and reads O= from there.
base=$(realpath -m "${1:?usage: $0 DIR}")
frag=$top/vm/debug-kernel.config
if [ $# -ge 2 ]; then
	tarball=$(realpath -e "$2") || {
		echo "debug-kernel: $2: no such source tarball" >&2
		exit 1
	}
else
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || {
		echo "debug-kernel: /usr/src/linux-source-6.1.tar.* not found; run: make deps" >&2
		exit 1
	}
fi

key=$( (cat "$frag" "$0"; stat -c '%n %s %Y' "$tarball"; cc --version | head -n 1) |
	sha256sum | cut -c1-16)
dir=$base/$key
if [ -f "$dir/done" ]; then
	echo "$dir/obj"
	exit 0
fi

log() { echo "debug-kernel: $*" >&2; }
start=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir/src" "$dir/obj"
log "extracting $(basename "$tarball") into $dir/src"
tar -xf "$tarball" -C "$dir/src" --strip-components=1

# The build's own output goes to build.log; its tail is shown on failure.
kmake() {
	make -C "$dir/src" O="$dir/obj" -j"$(nproc)" "$@" >> "$dir/build.log" 2>&1 || {
		log "make $* failed; the end of $dir/build.log:"
		tail -n 30 "$dir/build.log" >&2
		exit 1
	}
}
kmake -s tinyconfig
"$dir/src/scripts/kconfig/merge_config.sh" -m -O "$dir/obj" \
	"$dir/obj/.config" "$frag" >> "$dir/build.log" 2>&1
kmake -s olddefconfig

missing=""
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF "$line" "$dir/obj/.config" || missing="$missing $line" ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }
		sym=${sym%% *}
		! grep -q "^$sym=" "$dir/obj/.config" || missing="$missing $sym=n" ;;
	esac
done < "$frag"
if [ -n "$missing" ]; then
	log "these options of $frag did not stick (a dependency is missing):"
	for m in $missing; do log "  $m"; done
	exit 1
fi

log "building bzImage and modules with $(nproc) jobs"
kmake -s bzImage modules
touch "$dir/done"
log "built in $(( $(date +%s) - start )) s: $dir/obj/arch/x86/boot/bzImage"
# Older builds of other configurations: keep only this one.
for old in "$base"/*; do
	[ "$old" = "$dir" ] || rm -rf "$old"
done
echo "$dir/obj"
