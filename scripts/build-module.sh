#!/bin/sh
# Build gpupool.ko for one kernel release, out of tree, in its own directory
# (build/kmod/<release>/) so that builds for several kernels never share
# object files.  The module's sources are copied there first, exactly the
# files DKMS would get.
# Usage: scripts/build-module.sh RELEASE OUTDIR [KDIR]
# KCC=<compiler> in the environment builds with that compiler instead of
# the one the kernel's headers name (Debian 11's 5.10 names gcc-10).
# ARCH= and CROSS_COMPILE= in the environment go to kbuild, for another
# architecture's kernel (`make module ARCH=arm64 CROSS_COMPILE=...`);
# Debian's headers name their own (.kernelvariables), which wins.
set -eu
rel=${1:?usage: $0 RELEASE OUTDIR [KDIR]}
out=${2:?usage: $0 RELEASE OUTDIR [KDIR]}
kdir=${3:-/lib/modules/$rel/build}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -e "$kdir/Makefile" ]; then
	echo "build-module: no kernel build tree at $kdir;" \
	     "install the headers: apt-get install linux-headers-$rel" >&2
	exit 1
fi
# Debian's headers name the compiler the kernel was built with; without it
# kbuild stops at "gcc-10: not found".  Say what to do instead.
# Since 6.12 they name the target's prefix too (aarch64-linux-gnu-gcc-12
# for arm64: gcc-aarch64-linux-gnu here, gcc-12 on an arm64 machine).
kcc=$(sed -n 's/^CC = .*[^a-z0-9_-]\(gcc-[0-9][0-9]*\)$/\1/p' \
	"$kdir/.kernelvariables" 2>/dev/null || true)
kcross=$(sed -n 's/^override CROSS_COMPILE = \([a-z0-9_-]*\)$/\1/p' \
	"$kdir/.kernelvariables" 2>/dev/null || true)
[ -z "$kcc" ] || kcc=$kcross$kcc
if [ -z "${KCC:-}" ] && [ -n "$kcc" ] && ! command -v "$kcc" >/dev/null; then
	echo "build-module: $rel's headers build with $kcc, which is not" \
	     "installed: make deps, or KCC=<compiler> to use another" >&2
	exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Copy, keeping timestamps so that kbuild rebuilds only what changed.
# (A source file deleted from the tree may linger in the copy; Kbuild
# names what is compiled, so it is never built.)
mkdir -p "$out/include"
cp -a "$top/kmod" "$top/core" "$out/"
cp -a "$top/include/uapi" "$out/include/"
cp -a "$top/Kbuild" "$top/VERSION" "$out/"
# W=1: extra warnings; KCFLAGS=-Werror makes every warning fatal in our
# own build (DKMS builds without -Werror so a new compiler cannot break an
# install).
# Our own make's command-line variables (O= above all, which means
# something else to kbuild) must not reach the kernel's make.
unset MAKEFLAGS MAKEOVERRIDES MFLAGS O
# Empty is not unset to kbuild (ARCH ?= would keep an empty one).
[ -n "${ARCH:-}" ] || unset ARCH
[ -n "${CROSS_COMPILE:-}" ] || unset CROSS_COMPILE
make -C "$kdir" M="$out" W=1 KCFLAGS=-Werror ${KCC:+CC="$KCC"} \
	${ARCH:+ARCH="$ARCH"} ${CROSS_COMPILE:+CROSS_COMPILE="$CROSS_COMPILE"} modules
