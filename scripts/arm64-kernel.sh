#!/bin/sh
# Debian's arm64 kernel packages on this (amd64) machine, for cross builds
# of gpupool.ko against Debian's arm64 headers and for arm64 VMs.
#
# They cannot be installed here with apt: linux-headers-<rel>-arm64
# depends on gcc-12:arm64, whose binutils:arm64 conflicts with the
# machine's own binutils (apt would remove the native compilers).  So the
# arm64 packages are fetched with `apt-get download` and unpacked with
# `dpkg -x` into a cache, one tree per release, outside every clone:
#   $GPUPOOL_CACHE/arm64-kernel/<rel>/usr/src/linux-headers-<rel>/  (KDIR)
#   $GPUPOOL_CACHE/arm64-kernel/<rel>/boot/vmlinuz-<rel>, lib/modules/<rel>/
#                                          (with --image: linux-image-<rel>-unsigned,
#                                          its modules.dep made here by depmod:
#                                          what the arm64 VMs boot, vm/run-vm.sh)
# GPUPOOL_CACHE defaults to /var/cache/gpupool.  What the headers need from
# the machine is installed with apt, as for the amd64 kernels: their
# Makefile includes /usr/src/linux-headers-<version>-common (Architecture:
# all) and their scripts/ and tools/ are linux-kbuild-<version>'s
# (Multi-Arch: foreign, so the amd64 build runs them); the cache's links
# to those are made absolute.  Their compiler is aarch64-linux-gnu-gcc-12
# (gcc-aarch64-linux-gnu), which their .kernelvariables name.
#
# Usage:
#   scripts/arm64-kernel.sh fetch [--image] [REL]   (as root: make deps)
#       REL, e.g. 6.12.118+deb12-arm64, defaults to the newest
#       linux-headers-6.12.*+deb12-arm64 that apt knows; prints REL
#   scripts/arm64-kernel.sh list        the cached releases, oldest first
#   scripts/arm64-kernel.sh kdir REL    the cached headers' tree of REL
#   scripts/arm64-kernel.sh tree REL    the cached tree of REL, when it has
#                                       the image (boot/, lib/modules/)
set -eu
cache=${GPUPOOL_CACHE:-/var/cache/gpupool}/arm64-kernel
log() { echo "arm64-kernel: $*" >&2; }
usage() {
	echo "usage: $0 fetch [--image] [REL] | list | kdir REL | tree REL" >&2
	exit 2
}

# The headers' tree of REL when it is complete.
kdir() {
	d=$cache/$1/usr/src/linux-headers-$1
	[ -e "$cache/$1/.done" ] && [ -e "$d/Makefile" ] && echo "$d"
}

# The tree of REL when it has the image and its modules.
tree() {
	[ -n "$(kdir "$1")" ] && grep -qx "linux-image-$1-unsigned" "$cache/$1/.done" &&
		[ -f "$cache/$1/boot/vmlinuz-$1" ] &&
		[ -f "$cache/$1/lib/modules/$1/modules.dep" ] && echo "$cache/$1"
}

list() {
	for d in "$cache"/*/.done; do
		[ -e "$d" ] || continue
		r=${d%/.done}
		echo "${r##*/}"
	done | sort -V
}

# The newest Debian 12 arm64 6.12 headers apt offers, as a release.
newest() {
	apt-cache search --names-only '^linux-headers-6\.12\.[0-9]+\+deb12-arm64$' |
		awk '{print $1}' | sed 's/^linux-headers-//' | sort -V | tail -n 1
}

fetch() {
	image=0
	if [ "${1:-}" = --image ]; then
		image=1
		shift
	fi
	rel=${1:-}
	[ -n "$rel" ] || rel=$(newest)
	if [ -z "$rel" ]; then
		apt-get update -q >&2
		rel=$(newest)
	fi
	[ -n "$rel" ] || { log "apt knows no linux-headers-6.12.*+deb12-arm64"; exit 1; }
	case $rel in
	*-arm64) ;;
	*) log "$rel: not a Debian arm64 release (…-arm64)"; exit 1 ;;
	esac
	ver=${rel%-arm64}
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
	# What is there already stays: a tree is only ever unpacked whole.
	want="linux-headers-$rel"
	if [ "$image" = 1 ] || grep -qx "linux-image-$rel-unsigned" \
		"$cache/$rel/.done" 2>/dev/null; then
		want="$want linux-image-$rel-unsigned"
	fi
	if kdir "$rel" >/dev/null &&
	   [ "$(tr '\n' ' ' < "$cache/$rel/.done")" = "$want " ] &&
	   { [ "$want" = "linux-headers-$rel" ] ||
	     [ -f "$cache/$rel/lib/modules/$rel/modules.dep" ]; }; then
		echo "$rel"
		return 0
	fi
	# The machine's part: the common headers and kbuild of that version.
	need=""
	for p in "linux-headers-$ver-common" "linux-kbuild-$ver"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q 'install ok installed' || need="$need $p"
	done
	if [ -n "$need" ]; then
		log "installing$need"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $need >&2
	fi
	tmp=$(mktemp -d "$cache/.new-$rel.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/debs" "$tmp/root"
	# apt-get download fetches as _apt where that user can write.
	chmod 755 "$tmp"
	chmod 777 "$tmp/debs"
	pkgs=""
	for p in $want; do
		pkgs="$pkgs $p:arm64"
	done
	# shellcheck disable=SC2086
	(cd "$tmp/debs" && apt-get download -q $pkgs) >&2 || {
		log "apt-get download$pkgs failed"
		exit 1
	}
	for deb in "$tmp"/debs/*.deb; do
		dpkg -x "$deb" "$tmp/root"
	done
	# scripts -> ../../lib/linux-kbuild-<ver>/scripts, relative to
	# /usr/src: the installed kbuild's, wherever the tree is.
	for l in scripts tools; do
		ln -sfn "/usr/lib/linux-kbuild-$ver/$l" \
			"$tmp/root/usr/src/linux-headers-$rel/$l"
	done
	# The modules' dependencies, for the VM's initramfs and modprobe.
	case $want in
	*linux-image-*) depmod -b "$tmp/root" "$rel" ;;
	esac
	# shellcheck disable=SC2086
	printf '%s\n' $want > "$tmp/root/.done"
	rm -rf "${cache:?}/$rel"
	mv "$tmp/root" "$cache/$rel"
	rm -rf "$tmp"
	trap - EXIT
	log "Debian's $want unpacked in $cache/$rel"
	echo "$rel"
}

case ${1:-} in
fetch) shift; fetch "$@" ;;
list) list ;;
kdir) [ -n "${2:-}" ] || usage
      kdir "$2" || { log "$2 is not in $cache: make deps (or $0 fetch $2)"; exit 1; } ;;
tree) [ -n "${2:-}" ] || usage
      tree "$2" || { log "$2's image is not in $cache: make deps (or $0 fetch --image $2)"; exit 1; } ;;
*) usage ;;
esac
