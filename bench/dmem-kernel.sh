#!/bin/sh
# Build (or reuse) the kernel that section 5 of the module benchmark runs
# on for the dmem path (bench/kmod.mk run-dmem): the check's debug kernel
# (scripts/debug-kernel.sh) without its debugging options.  The debug
# kernel's instrumentation (KASAN in every memory access, lockdep in every
# lock and RCU section) falls on dmem's charge far more than on the rest
# of an ALLOC, so there the ratio measures the instrumentation; users run
# kernels without it.
#
# Usage: bench/dmem-kernel.sh
# Prints the build tree (obj/; obj/arch/x86/boot/bzImage is the kernel).
#
# The sources are the debug kernel's (scripts/debug-kernel.sh builds or
# finds that one first); the configuration is tinyconfig plus
# vm/debug-kernel.config up to its "the debugging this kernel is for"
# section, plus bench/dmem-kernel.config.  The build lives beside the
# debug kernel's cache, in .../bench-kernel/<key>, <key> hashing the
# sources' path, both fragments and this script; it is reused when its
# `done` marker, bzImage and kernel.release are there, and built anew
# otherwise (706 s on this project's two-core machine).  Only the
# benchmark uses it: `make check` builds no kernel for it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "dmem-kernel: $*" >&2; }

# Held (--hold): its sources are not removed while this one builds.
debug_obj=$("$top/scripts/debug-kernel.sh" --hold $$)
src=$(realpath "$debug_obj/../src")
base=$(realpath -m "$debug_obj/../../../bench-kernel")
mkdir -p "$base"
exec 9>> "$base/.lock"
flock 9

frag=$base/fragment.new
# (its name is bench/dmem-kernel.config's)
sed -e '/^# --- the debugging this kernel is for ---$/,$d' \
	-e '/^CONFIG_LOCALVERSION=/d' "$top/vm/debug-kernel.config" > "$frag"
cat "$top/bench/dmem-kernel.config" >> "$frag"
key=$( { echo "$src"; cat "$frag" "$0"; } | sha256sum | cut -c1-16)
dir=$base/$key
if [ -f "$dir/done" ] && [ -f "$dir/obj/arch/x86/boot/bzImage" ] &&
   [ -s "$dir/obj/include/config/kernel.release" ]; then
	log "reusing $dir ($(cat "$dir/obj/include/config/kernel.release"))"
	echo "$dir/obj"
	exit 0
fi

start=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir/obj"
mv "$frag" "$dir/fragment"
build() {
	make -C "$src" O="$dir/obj" -j"$(nproc)" "$@" >> "$dir/build.log" 2>&1 || {
		log "make $* failed; the end of $dir/build.log:"
		tail -n 30 "$dir/build.log" >&2
		exit 1
	}
}
log "configuring $dir from $src"
build -s tinyconfig
"$src/scripts/kconfig/merge_config.sh" -m -O "$dir/obj" \
	"$dir/obj/.config" "$dir/fragment" >> "$dir/build.log" 2>&1
build -s olddefconfig
# Every CONFIG_X=... line must have stuck, and no debugging option crept in.
lost=$(grep '^CONFIG_' "$dir/fragment" | grep -vxF -f "$dir/obj/.config" || true)
[ -z "$lost" ] || { log "did not stick: $lost"; exit 1; }
for sym in KASAN PROVE_LOCKING DEBUG_KMEMLEAK UBSAN DEBUG_VM; do
	! grep -q "^CONFIG_$sym=y" "$dir/obj/.config" ||
		{ log "CONFIG_$sym is on"; exit 1; }
done
log "building bzImage and modules with $(nproc) jobs (log: $dir/build.log)"
build -s bzImage modules
echo "seconds $(( $(date +%s) - start ))" > "$dir/done"
log "built in $(( $(date +%s) - start )) s"
# Older configurations' builds go.
for old in "$base"/*/; do
	[ "${old%/}" = "$dir" ] || rm -rf "${old%/}"
done
echo "$dir/obj"
