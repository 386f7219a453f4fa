#!/bin/sh
# Build (or reuse) a kernel of the test matrix from Debian's
# linux-source-7.2, once per machine: tinyconfig plus a fragment of vm/.
#
# Usage: scripts/test-kernel.sh NAME [--hold PID] [DIR [TARBALL]]
#   NAME: which kernel:
#     debug      x86_64, vm/debug-kernel.config: KASAN, lockdep,
#                DEBUG_ATOMIC_SLEEP, DEBUG_VM, kmemleak, UBSAN, failslab,
#                fail_page_alloc, cgroup v2 with the dmem controller, user
#                namespaces, and what the VM harness needs, all built in
#                (scripts/debug-kernel.sh is this with NAME debug);
#     arm64-64k  arm64 with 64 KiB pages, cross-compiled
#                (aarch64-linux-gnu-), vm/arm64-64k.config: what the VM
#                harness and the suites need, built in, and the debugging
#                that costs little (vm/README.md, "The arm64 VMs").
#   DIR: the cache, outside the clone so that every clone on this machine
#   shares one build (default, or when DIR is ""): $GPUPOOL_CACHE/<cache>
#   (debug-kernel, arm64-64k-kernel), GPUPOOL_CACHE defaulting to
#   /var/cache/gpupool (~/.cache/gpupool when that is not writable).
#   TARBALL: another kernel's sources to build the same configuration from
#   (default: /usr/src/linux-source-7.2.tar.*, which `make deps` installs;
#   /usr/src/linux-source-6.1.tar.xz builds it from 6.1).  Fragment options
#   that such a kernel does not have at all (CGROUP_DMEM before 6.14) are
#   named and left out; from the default sources they fail the build.
#   --hold PID: the build handed out is not removed by another run's
#   clean-up while process PID lives (scripts/check.sh passes its own).
#   GPUPOOL_REBUILD=1 in the environment builds anew whatever the cache holds.
# Prints the obj/ directory: obj/arch/x86/boot/bzImage (arm64:
# obj/arch/arm64/boot/Image) is the kernel, and obj/ is the tree to build
# gpupool.ko against.
#
# The cache (scripts/cache.sh): DIR/<key>/{src,obj,build.log,done}.  <key>
# hashes the fragment, this script and scripts/cache.sh, the tarball's
# content (its sha256, computed once and kept in DIR/tarballs under the
# tarball's path, size and mtime) and the versions of the compiler and ld
# it builds with.  A build is reused only after checking it: the `done`
# marker, the image with the sha256 that `done` recorded, every line of
# the fragment in obj/.config, and obj/include/config/kernel.release; when
# one fails it says which and builds anew.  DIR/.lock (flock) lets one run
# at a time look at or change the cache: a second run (another clone's
# check) waits for the first one's build, then reuses it.  After a build,
# the other keys' builds are removed, but for those that a --hold keeps.
# Fails (exit 1, saying which) when a fragment option did not end up in the
# final .config: a silently dropped option would be a hole in the matrix.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
self=$(realpath "$0")
name=${1:-}
[ $# -gt 0 ] && shift
# What each kernel is: its fragment, the cache's name, the kernel's make
# variables (none: the build machine's), and the image it boots from.
case $name in
debug)
	frag=$top/vm/debug-kernel.config cache=debug-kernel
	arch="" cross="" image=arch/x86/boot/bzImage target=bzImage ;;
arm64-64k)
	frag=$top/vm/arm64-64k.config cache=arm64-64k-kernel
	arch=arm64 cross=aarch64-linux-gnu- image=arch/arm64/boot/Image target=Image ;;
*)
	echo "usage: $0 debug|arm64-64k [--hold PID] [DIR [TARBALL]]" >&2
	exit 2 ;;
esac
log() { echo "$name-kernel: $*" >&2; }
# shellcheck source=scripts/cache.sh
. "$top/scripts/cache.sh"
command -v "${cross}gcc" >/dev/null || {
	log "${cross}gcc not found; run: make deps"
	exit 1
}

hold=""
if [ "${1:-}" = --hold ]; then
	hold=${2:?usage: $0 NAME [--hold PID] [DIR [TARBALL]]}
	shift 2
fi
base=$(cache_base "$cache" "${1:-}")
if [ $# -ge 2 ]; then
	tarball=$(realpath -e "$2") || {
		log "$2: no such source tarball"
		exit 1
	}
	strict=0
else
	tarball=$(ls /usr/src/linux-source-7.2.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || {
		log "/usr/src/linux-source-7.2.tar.* not found; run: make deps"
		exit 1
	}
	strict=1
fi

# One run at a time in the cache: looking, building, cleaning up.
cache_lock "$base"

# The tarball's sha256, hashed once per path, size and mtime (apt gives
# a replaced file a new mtime): 140 MB is not read again on every run.
tid="$(stat -c '%s %Y' "$tarball") "
tsum=$(awk -v id="$tid" -v p="$tarball" '
	{ path = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", path) }
	$1 " " $2 " " == id && path == p { print $3; exit }' \
	"$base/tarballs" 2>/dev/null || true)
if [ -z "$tsum" ]; then
	log "hashing $tarball (once: kept in $base/tarballs)"
	tsum=$(sha256sum < "$tarball" | cut -d' ' -f1)
	{ awk -v p="$tarball" '
		{ path = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", path) }
		path != p' "$base/tarballs" 2>/dev/null || true
	  echo "$tid$tsum $tarball"; } > "$base/tarballs.new"
	mv "$base/tarballs.new" "$base/tarballs"
fi

key=$( { cat "$frag" "$self" "$top/scripts/cache.sh"; echo "tarball sha256 $tsum";
	"${cross}gcc" --version | head -n 1; "${cross}ld" --version | head -n 1; } |
	sha256sum | cut -c1-16)
dir=$base/$key
img=$dir/obj/$image

# The fragment's lines that CONFIG does not hold, one a line (CONFIG_X=n
# for a "# CONFIG_X is not set" that is set), but for those named in the
# files after it (options this kernel does not have: "absent CONFIG_X").
missing_from() {
	config=$1
	shift
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			grep -qxF "$line" "$config" || echo "$line" ;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			! grep -q "^$sym=" "$config" || echo "$sym=n" ;;
		esac
	done < "$frag" | while IFS= read -r m; do
		sym=${m%%=*}
		[ $# -gt 0 ] && grep -qxF "absent $sym" "$@" || echo "$m"
	done
}

# Whether the build in $dir can be used as it is; if not, why.
verify() {
	[ -f "$dir/done" ] || { why="no done marker"; return 1; }
	[ -f "$img" ] || { why="no $image"; return 1; }
	rec=$(sed -n 's/^image-sha256 //p' "$dir/done")
	[ -n "$rec" ] || { why="done records no sha256 of the image"; return 1; }
	cur=$(sha256sum < "$img" | cut -d' ' -f1)
	[ "$cur" = "$rec" ] ||
		{ why="the image's sha256 is $cur, not the $rec recorded"; return 1; }
	[ -f "$dir/obj/.config" ] || { why="no obj/.config"; return 1; }
	m=$(missing_from "$dir/obj/.config" "$dir/done")
	[ -z "$m" ] || { why="obj/.config lacks $(echo "$m" | paste -sd " " -)"; return 1; }
	[ -s "$dir/obj/include/config/kernel.release" ] ||
		{ why="no obj/include/config/kernel.release"; return 1; }
}

hand_out() {
	cache_hold "$base" "$key" "$hold"
	echo "$dir/obj"
}

if [ "${GPUPOOL_REBUILD:-0}" = 1 ]; then
	[ ! -e "$dir" ] || log "GPUPOOL_REBUILD=1: building $dir anew"
elif verify; then
	log "reusing $dir ($(cat "$dir/obj/include/config/kernel.release"); done, the image's sha256, .config and kernel.release checked)"
	hand_out
	exit 0
elif [ -e "$dir" ]; then
	log "not reusing $dir: $why; building it anew"
else
	log "no build of this configuration in $base yet: building $dir"
fi

start=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir/src" "$dir/obj"
log "extracting $(basename "$tarball") into $dir/src"
tar -xf "$tarball" -C "$dir/src" --strip-components=1

# The build's own output goes to build.log; its tail is shown on failure.
kmake() {
	make -C "$dir/src" O="$dir/obj" ${arch:+ARCH="$arch"} ${cross:+CROSS_COMPILE="$cross"} \
		-j"$(nproc)" "$@" >> "$dir/build.log" 2>&1 || {
		log "make $* failed; the end of $dir/build.log:"
		tail -n 30 "$dir/build.log" >&2
		exit 1
	}
}
kmake -s tinyconfig
"$dir/src/scripts/kconfig/merge_config.sh" -m -O "$dir/obj" \
	"$dir/obj/.config" "$frag" >> "$dir/build.log" 2>&1
kmake -s olddefconfig

# A missing option is an error, but for one that these sources do not
# define at all when they are not the default ones (6.1 has no
# CGROUP_DMEM): that one is named, recorded in done, and left out.
absent=""
bad=""
for m in $(missing_from "$dir/obj/.config"); do
	sym=${m%%=*}
	if [ "$strict" = 0 ] && ! grep -rqsx --include='Kconfig*' \
	     "[[:space:]]*\(menu\)\{0,1\}config ${sym#CONFIG_}[[:space:]]*" \
	     "$dir/src"; then
		absent="$absent $sym"
	else
		bad="$bad $m"
	fi
done
if [ -n "$bad" ]; then
	log "these options of $frag did not stick (a dependency is missing):"
	for m in $bad; do log "  $m"; done
	exit 1
fi
for sym in $absent; do
	log "$(basename "$tarball") has no $sym: built without it"
done

log "building $target and modules with $(nproc) jobs"
kmake -s "$target" modules
{
	echo "image-sha256 $(sha256sum < "$img" | cut -d' ' -f1)"
	echo "release $(cat "$dir/obj/include/config/kernel.release")"
	echo "tarball $tarball $tsum"
	echo "seconds $(( $(date +%s) - start ))"
	for sym in $absent; do echo "absent $sym"; done
} > "$dir/done.new"
mv "$dir/done.new" "$dir/done"
log "built in $(( $(date +%s) - start )) s: $img"
# Older builds of other configurations: keep only this one, and those
# another run holds (--hold).
cache_prune "$base" "$dir"
hand_out
