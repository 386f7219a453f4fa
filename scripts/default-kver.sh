#!/bin/sh
# The kernel to build gpupool.ko for when KVER is not given.
#
# Usage: scripts/default-kver.sh [ARCH]
#   prints a release: the running kernel when its headers are installed,
#   else the newest installed kernel headers (Debian's
#   /lib/modules/<release>/build).  With ARCH (kbuild's: arm64, x86) other
#   than this machine's, the newest of Debian's arm64 headers that
#   `make deps` unpacked (scripts/arm64-kernel.sh), for a cross build.
# Usage: scripts/default-kver.sh --kdir RELEASE
#   prints that release's build tree: /lib/modules/<release>/build, else
#   the unpacked arm64 headers of that release.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --kdir ]; then
	rel=${2:?usage: $0 --kdir RELEASE}
	if [ -e "/lib/modules/$rel/build/Makefile" ]; then
		echo "/lib/modules/$rel/build"
	elif "$top/scripts/arm64-kernel.sh" kdir "$rel" 2>/dev/null; then
		:
	else
		echo "/lib/modules/$rel/build"
	fi
	exit 0
fi

# kbuild's name for this machine's architecture (the kernel's, not the
# compiler's: this picks the headers).
case $(uname -m) in
aarch64*|arm64) here=arm64 ;;
x86_64|i?86) here=x86 ;;
*) here=$(uname -m) ;;
esac
arch=${1:-$here}
case $arch in
x86_64|i386) arch=x86 ;;
esac
if [ "$arch" != "$here" ]; then
	if [ "$arch" != arm64 ]; then
		echo "default-kver: no headers for ARCH=$arch here: give KDIR=" >&2
		exit 1
	fi
	rel=$("$top/scripts/arm64-kernel.sh" list | tail -n 1)
	if [ -z "$rel" ]; then
		echo "default-kver: no arm64 kernel headers unpacked;" \
		     "run: make deps (scripts/arm64-kernel.sh fetch)" >&2
		exit 1
	fi
	echo "$rel"
	exit 0
fi

running=$(uname -r)
if [ -e "/lib/modules/$running/build/Makefile" ]; then
	echo "$running"
	exit 0
fi
newest=$(ls -d /lib/modules/*/build 2>/dev/null | while read -r d; do
	[ -e "$d/Makefile" ] && basename "$(dirname "$d")"
done | sort -V | tail -n 1)
if [ -z "$newest" ]; then
	echo "default-kver: no kernel headers installed (/lib/modules/*/build);" \
	     "run: make deps" >&2
	exit 1
fi
echo "$newest"
