#!/bin/sh
# Install what building and testing gpupool needs on Debian 12: as root with
# apt-get; otherwise print the exact command and fail.
#
# Usage: scripts/deps.sh
# The list below is the only place dependencies are named.
set -eu

# Build: compilers, kernel build tools, the two kernels we test (6.1 from
# linux-image-amd64, 6.12 from bookworm's backported packages) with headers.
# Test: qemu (TCG), busybox for the VM's initramfs, kernel sources for the
# kselftest headers and checkpatch, dkms, liburing (io_uring pinning tests),
# numpy, pip and setuptools (Python tests, `pip install ./python` offline, with
# Debian's /usr/bin/python3), pkg-config (the install check); zstd unpacks the 6.12
# kernel image for the VM's fast (PVH) boot.  libclang-rt-14-dev: clang's
# libFuzzer and sanitizer runtimes (only a Recommends of clang's packages).
# python3-torch (Debian's 1.13, CPU-only): the DataLoader integration's tests
# and benchmark.  fio: the reference the file-reading benchmark compares with;
# e2fsprogs: mkfs.ext4 for the in-VM O_DIRECT tests.  debhelper, dh-dkms,
# lintian: the Debian packages and their checks; prometheus: promtool, which
# checks the exported metrics; python3-yaml: parses the YAML in the tree;
# libslurm-dev, slurmd, slurmctld, slurm-client, munge: the SPANK plugin's
# build (slurm/, the slurm-gpupool package) and its test in the VM
# (tests/slurm).
# python3-jsonschema: validates the CDI spec against the CDI schema; podman,
# crun: the container the VM runs with the CDI device (tests/containers).
pkgs="build-essential clang libclang-rt-14-dev bc flex bison cpio kmod xz-utils zstd
      libelf-dev libssl-dev
      qemu-system-x86 busybox-static
      linux-image-amd64 linux-headers-amd64 linux-source-6.1
      dkms liburing-dev python3 python3-numpy python3-pip python3-setuptools
      pkg-config
      python3-torch fio e2fsprogs
      debhelper dh-dkms lintian prometheus python3-yaml python3-jsonschema
      podman crun
      libslurm-dev slurmd slurmctld slurm-client munge"

have() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=""
for p in $pkgs; do
	have "$p" || missing="$missing $p"
done

# The 6.12 kernel: any installed linux-image-6.12.*+deb12-amd64(-unsigned)
# with its headers will do; else the newest one the archive has.
k612=$(ls -d /lib/modules/6.12.*+deb12-amd64 2>/dev/null | while read -r d; do
	r=$(basename "$d")
	[ -e "/boot/vmlinuz-$r" ] && [ -e "$d/build/Makefile" ] && echo "$r"
done | sort -V | tail -n 1)
need612=""
if [ -z "$k612" ]; then
	if [ "$(id -u)" -eq 0 ] && ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
		apt-get update -q
	fi
	img=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' |
		awk '{print $1}' | sort -V | tail -n 1)
	if [ -z "$img" ]; then
		[ "$(id -u)" -eq 0 ] && apt-get update -q
		img=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' |
			awk '{print $1}' | sort -V | tail -n 1)
	fi
	if [ -z "$img" ]; then
		echo "deps: no linux-image-6.12.*+deb12-amd64-unsigned in the apt archive" >&2
		exit 1
	fi
	rel=${img#linux-image-}
	rel=${rel%-unsigned}
	need612="$img linux-headers-$rel"
fi

[ -z "$missing$need612" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing $need612"
if [ "$(id -u)" -ne 0 ]; then
	echo "gpupool needs packages that are not installed. As root, run:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi
echo "deps: installing:$missing $need612"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing $need612
