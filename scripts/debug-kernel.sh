#!/bin/sh
# Build (or reuse) the debug kernel of the test matrix: Debian's
# linux-source-7.2 (Linux 7.2: it has the dmem cgroup controller),
# tinyconfig plus vm/debug-kernel.config (KASAN, lockdep, DEBUG_ATOMIC_SLEEP,
# DEBUG_VM, kmemleak, UBSAN, failslab, fail_page_alloc, cgroup v2 with the
# dmem controller, user namespaces, and what the VM harness needs, all
# built in).
#
# Usage: scripts/debug-kernel.sh [--hold PID] [DIR [TARBALL]]
#   DIR: the cache, outside the clone so that every clone on this machine
#   shares one build (default, or when DIR is ""):
#   $GPUPOOL_CACHE/debug-kernel, GPUPOOL_CACHE defaulting to
#   /var/cache/gpupool (~/.cache/gpupool when that is not writable).
#   TARBALL: another kernel's sources to build the same configuration from
#   (default: /usr/src/linux-source-7.2.tar.*, which `make deps` installs;
#   /usr/src/linux-source-6.1.tar.xz builds it from 6.1).  Fragment options
#   that such a kernel does not have at all (CGROUP_DMEM before 6.14) are
#   named and left out; from the default sources they fail the build.
#   --hold PID: the build handed out is not removed by another run's
#   clean-up while process PID lives (scripts/check.sh passes its own).
#   GPUPOOL_REBUILD=1 in the environment builds anew whatever the cache holds.
# Prints the obj/ directory: obj/arch/x86/boot/bzImage is the kernel, and
# obj/ is the tree to build gpupool.ko against.
#
# The cache: DIR/<key>/{src,obj,build.log,done}.  <key> hashes the fragment,
# this script, the tarball's content (its sha256, computed once and kept
# in DIR/tarballs under the tarball's path, size and mtime) and the
# versions of gcc and ld.  A build is reused only after checking it: the
# `done` marker, bzImage with the sha256 that `done` recorded, every line
# of the fragment in obj/.config, and obj/include/config/kernel.release;
# when one fails it says which and builds anew.  DIR/.lock (flock) lets one
# run at a time look at or change the cache: a second run (another clone's
# check) waits for the first one's build, then reuses it.  After a build,
# the other keys' builds are removed, but for those that a --hold keeps.
# Fails (exit 1, saying which) when a fragment option did not end up in the
# final .config: a silently dropped option would be a hole in the matrix.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
self=$(realpath "$0")
frag=$top/vm/debug-kernel.config
log() { echo "debug-kernel: $*" >&2; }

hold=""
if [ "${1:-}" = --hold ]; then
	hold=${2:?usage: $0 [--hold PID] [DIR [TARBALL]]}
	shift 2
fi
if [ -n "${1:-}" ]; then
	# Absolute: the kernel's make runs in src/ and reads O= from there.
	base=$(realpath -m "$1")
elif [ -n "${GPUPOOL_CACHE:-}" ]; then
	base=$(realpath -m "$GPUPOOL_CACHE/debug-kernel")
else
	base=/var/cache/gpupool/debug-kernel
	if ! mkdir -p "$base" 2>/dev/null || [ ! -w "$base" ]; then
		base=${XDG_CACHE_HOME:-$HOME/.cache}/gpupool/debug-kernel
		log "/var/cache/gpupool is not writable here: using $base"
	fi
fi
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
mkdir -p "$base"

# One run at a time in the cache: looking, building, cleaning up.
exec 9>> "$base/.lock"
if ! flock -n 9; then
	log "waiting for $base/.lock (another run is building or checking)"
	flock 9
fi

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

key=$( { cat "$frag" "$self"; echo "tarball sha256 $tsum";
	gcc --version | head -n 1; ld --version | head -n 1; } |
	sha256sum | cut -c1-16)
dir=$base/$key
img=$dir/obj/arch/x86/boot/bzImage

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
	[ -f "$img" ] || { why="no bzImage"; return 1; }
	rec=$(sed -n 's/^bzImage-sha256 //p' "$dir/done")
	[ -n "$rec" ] || { why="done records no sha256 of bzImage"; return 1; }
	cur=$(sha256sum < "$img" | cut -d' ' -f1)
	[ "$cur" = "$rec" ] ||
		{ why="bzImage's sha256 is $cur, not the $rec recorded"; return 1; }
	[ -f "$dir/obj/.config" ] || { why="no obj/.config"; return 1; }
	m=$(missing_from "$dir/obj/.config" "$dir/done")
	[ -z "$m" ] || { why="obj/.config lacks $(echo "$m" | paste -sd " " -)"; return 1; }
	[ -s "$dir/obj/include/config/kernel.release" ] ||
		{ why="no obj/include/config/kernel.release"; return 1; }
}

# --hold: a shared lock on DIR/<key>.inuse, taken while the cache is
# locked and kept, after this script exits, by a child that waits for PID.
hand_out() {
	if [ -n "$hold" ]; then
		exec 8>> "$base/$key.inuse"
		flock -s 8
		(while kill -0 "$hold" 2>/dev/null; do sleep 10; done) \
			> /dev/null 2>&1 < /dev/null 9>&- &
	fi
	echo "$dir/obj"
}

if [ "${GPUPOOL_REBUILD:-0}" = 1 ]; then
	[ ! -e "$dir" ] || log "GPUPOOL_REBUILD=1: building $dir anew"
elif verify; then
	log "reusing $dir ($(cat "$dir/obj/include/config/kernel.release"); done, bzImage's sha256, .config and kernel.release checked)"
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

log "building bzImage and modules with $(nproc) jobs"
kmake -s bzImage modules
{
	echo "bzImage-sha256 $(sha256sum < "$img" | cut -d' ' -f1)"
	echo "release $(cat "$dir/obj/include/config/kernel.release")"
	echo "tarball $tarball $tsum"
	echo "seconds $(( $(date +%s) - start ))"
	for sym in $absent; do echo "absent $sym"; done
} > "$dir/done.new"
mv "$dir/done.new" "$dir/done"
log "built in $(( $(date +%s) - start )) s: $img"
# Older builds of other configurations: keep only this one, and those
# another run holds (--hold).
for old in "$base"/*/; do
	old=${old%/}
	[ -d "$old" ] && [ "$old" != "$dir" ] || continue
	if flock -n -x "$old.inuse" rm -rf "$old" "$old.inuse"; then
		log "removed the older build $old"
	else
		log "kept the older build $old: a run is using it"
	fi
done
hand_out
