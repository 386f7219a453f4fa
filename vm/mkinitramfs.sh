#!/bin/bash
# Build (or reuse) the tiny initramfs that boots a test VM: busybox-static,
# vm/init, and the virtio/9p kernel modules the guest needs to mount the
# host's root filesystem.  Modules already built into the kernel are skipped,
# so a kernel with virtio/9p built in gets an initramfs with no modules.
#
# Usage:
#   vm/mkinitramfs.sh --out FILE --moddir /lib/modules/RELEASE
#   vm/mkinitramfs.sh --out FILE --kbuild /path/to/kernel/build/tree
#   vm/mkinitramfs.sh --out FILE --none     (everything built into the kernel)
#   --with MODULE (repeatable) wants that module too (the arm64 VMs:
#   overlay, vm/run-vm.sh); BUSYBOX=FILE in the environment takes that
#   busybox-static instead of /bin/busybox (the arm64 VMs: the arm64 root's,
#   vm/arm64-root.sh).  The busybox is never run here: it may be another
#   architecture's; vm/init makes its applets' links in the guest.
#
# The result is cached: FILE.key records a hash of every input (this script,
# vm/init, busybox, the module files and the kernel's module lists); FILE is
# rebuilt only when that hash changes.  Prints FILE's path.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out='' moddir='' kbuild='' none=0
# What the guest must be able to load, in no particular order: the rest
# (virtio core, virtio_ring, netfs, fscache, 9pnet ...) comes in as
# dependencies.
WANT=(virtio_pci 9pnet_virtio 9p)

die() { echo "mkinitramfs: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--moddir) moddir=$2; shift 2 ;;
	--kbuild) kbuild=$2; shift 2 ;;
	--none) none=1; shift ;;
	--with) WANT+=("$2"); shift 2 ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) die "unknown argument: $1" ;;
	esac
done
[ -n "$out" ] || die "--out is required"
[ -n "$moddir" ] || [ -n "$kbuild" ] || [ $none = 1 ] ||
	die "--moddir, --kbuild or --none is required"
BUSYBOX=${BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || die "$BUSYBOX missing: apt-get install busybox-static"
# The initramfs has no libc: busybox must be the static build.
if ldd "$BUSYBOX" >/dev/null 2>&1; then
	die "$BUSYBOX is dynamically linked: apt-get install busybox-static"
fi

norm() { echo "${1//-/_}"; }

# --- locate modules -------------------------------------------------------
declare -A MODPATH=()	# name -> file
declare -A BUILTIN=()	# name -> 1
declare -A DEPS=()	# name -> "dep dep"

if [ -n "$moddir" ]; then
	[ -f "$moddir/modules.dep" ] || die "$moddir/modules.dep not found"
	while IFS= read -r l; do
		n=${l##*/}; n=${n%%.ko*}
		BUILTIN[${n//-/_}]=1
	done < <(cat "$moddir/modules.builtin" 2>/dev/null || true)
	# modules.dep: "kernel/x/y.ko[.xz]: dep.ko dep.ko" (no subshells here:
	# the file has thousands of lines)
	while IFS= read -r l; do
		f=${l%%:*}; rest=${l#*:}
		n=${f##*/}; n=${n%%.ko*}; n=${n//-/_}
		MODPATH[$n]=$moddir/$f
		d=
		for p in $rest; do p=${p##*/}; p=${p%%.ko*}; d="$d ${p//-/_}"; done
		DEPS[$n]=$d
	done < "$moddir/modules.dep"
elif [ -n "$kbuild" ]; then
	[ -f "$kbuild/.config" ] || die "$kbuild/.config not found (not a kernel build tree?)"
	if [ -f "$kbuild/modules.builtin" ]; then
		while IFS= read -r l; do
			n=${l##*/}; n=${n%%.ko*}; BUILTIN[${n//-/_}]=1
		done < "$kbuild/modules.builtin"
	fi
	if [ -f "$kbuild/modules.order" ]; then
		while IFS= read -r l; do
			l=${l%.o}; l=${l%.ko}
			f=$kbuild/$l.ko
			[ -f "$f" ] || continue
			n=$(norm "$(basename "$l")")
			MODPATH[$n]=$f
		done < "$kbuild/modules.order"
	fi
fi

ORDER=()
declare -A SEEN=()
resolve() {		# depth-first: dependencies before the module itself
	local n d
	n=$(norm "$1")
	[ -n "${SEEN[$n]:-}" ] && return 0
	SEEN[$n]=1
	if [ -n "${BUILTIN[$n]:-}" ]; then return 0; fi
	if [ -z "${MODPATH[$n]:-}" ]; then
		if [ -z "$moddir" ]; then
			echo "mkinitramfs: note: $n neither built in (no modules.builtin entry) nor built as a module in $kbuild; assuming built in" >&2
			return 0
		fi
		die "module $n not found in $moddir"
	fi
	if [ -z "${DEPS[$n]+x}" ]; then
		DEPS[$n]=$(modinfo -F depends "${MODPATH[$n]}" | tr ',' ' ')
	fi
	for d in ${DEPS[$n]}; do resolve "$d"; done
	ORDER+=("$n")
}
[ $none = 1 ] || for w in "${WANT[@]}"; do resolve "$w"; done

# --- cache key ------------------------------------------------------------
key=$( {
	echo "v2 ${ORDER[*]:-}"
	cat "$0" "$here/init" "$BUSYBOX" | sha256sum
	for n in "${ORDER[@]}"; do stat -L -c '%n %s %Y' "${MODPATH[$n]}"; done
	if [ -n "$moddir" ]; then stat -L -c '%n %s %Y' "$moddir/modules.dep"; fi
	if [ -n "$kbuild" ]; then stat -L -c '%n %s %Y' "$kbuild/.config"; fi
} | sha256sum | cut -d' ' -f1 )
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
	echo "$out"
	exit 0
fi

# --- build ----------------------------------------------------------------
mkdir -p "$(dirname "$out")"
stage=$(mktemp -d "${out}.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,dev,proc,sys,newroot,scratch,modules,tmp}
cp "$BUSYBOX" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
install -m 0755 "$here/init" "$stage/init"
: > "$stage/modules/order"
for n in "${ORDER[@]}"; do
	f=${MODPATH[$n]}
	case $f in
	*.ko.xz)  xz -dc "$f" > "$stage/modules/$n.ko" ;;
	*.ko.zst) zstd -qdc "$f" > "$stage/modules/$n.ko" ;;
	*.ko.gz)  gzip -dc "$f" > "$stage/modules/$n.ko" ;;
	*.ko)     cp "$f" "$stage/modules/$n.ko" ;;
	*) die "unknown module file type: $f" ;;
	esac
	echo "$n" >> "$stage/modules/order"
done
# /dev/console comes from the kernel's built-in default initramfs, which is
# unpacked before this one.
# Uncompressed: unpacking a ~3 MB cpio is faster under TCG than any
# decompressor.
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0) > "$out.tmp"
mv "$out.tmp" "$out"
echo "$key" > "$out.key"
echo "mkinitramfs: built $out (modules: ${ORDER[*]:-none})" >&2
echo "$out"
