#!/bin/sh
# Install what building and testing gpupool needs on Debian 12: as root with
# apt-get; otherwise print the exact command and fail.
#
# Usage: scripts/deps.sh [demo]
#   (nothing)  everything: the build, every test suite (`make deps`,
#              `make check`)
#   demo       only what `make demo` runs (`make deps-demo`): a subset
# The two lists below (and linux-source-7.2 after them) are the only places
# dependencies are named.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

case ${1:-all} in
all|demo) part=${1:-all} ;;
*) echo "usage: $0 [demo]" >&2; exit 2 ;;
esac

# What `make demo` needs: a C compiler and make (no C++, no dpkg-dev:
# build-essential is for `make check`), perl (the module's W=1 build runs
# the kernel's kernel-doc), Debian's 6.1 kernel with its headers (the
# module is built for it; when the running kernel cannot load it, the demo
# boots that kernel in qemu under TCG), busybox-static and cpio for the
# VM's initramfs, kmod (insmod), python3 for the VM scripts and the Python
# loader (the standard library only: the loader needs no numpy).  On a
# bare Debian 12 this is the whole apt step of `make demo`.
demo_pkgs="gcc make libc6-dev perl kmod cpio
      qemu-system-x86 busybox-static
      linux-image-amd64 linux-headers-amd64 python3"

# The rest, for `make check`.
# Build: ccache, clang, kernel build tools, the two kernels we test (6.1
# above, 6.12 from bookworm's backported packages) with headers; xz-utils
# for the 6.12 kernel's modules (.ko.xz) in the VM's initramfs.
# Test: kernel sources for the kselftest headers and checkpatch (6.1) and
# for the debug kernel (7.2, from trixie-backports: below), dkms, liburing
# (io_uring pinning tests), numpy, pip and setuptools (Python tests, `pip
# install ./python` offline, with Debian's /usr/bin/python3), pkg-config
# (the install check); zstd unpacks the 6.12 kernel image for the VM's
# fast (PVH) boot.  libclang-rt-14-dev: clang's libFuzzer and sanitizer
# runtimes (only a Recommends of clang's packages).
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
# sparse, coccinelle and ocaml-nox (the OCaml compiler two of the kernel's
# semantic patches are scripted in): the kernel's static checkers on the
# module (scripts/kernel-checks.sh).
# gdb: unwinds through the interposer's dlsym entry (tests/interpose).
# ccache: `make check` compiles through it, with a cache every clone on the
# machine shares (scripts/check.sh).
# qemu-system-arm: qemu-system-aarch64, for the arm64 VMs (vm/README.md,
# "The arm64 VMs"; their Debian packages are unpacked below).
# arm64 (docs/development.md, "Cross builds"): gcc-aarch64-linux-gnu and
# crossbuild-essential-arm64 (the arm64 packages, dpkg-buildpackage
# --host-arch arm64), libc6-dev:arm64 (libc6:arm64, whose symbols
# dpkg-shlibdeps reads for the arm64 packages, and whose loader runs the
# arm64 programs under qemu-user), libubsan1:arm64 (their UBSan runtime,
# beside that libc: the cross toolchain's copies under
# /usr/aarch64-linux-gnu are another glibc build, which must not mix with
# it), qemu-user (qemu-aarch64: the library's and the interposer's suites
# for arm64 on this machine) and qemu-user-binfmt (the arm64 programs those
# tests exec go to it; registered below where no systemd did it).  Debian's arm64
# kernel headers cannot be installed here: scripts/arm64-kernel.sh
# unpacks them, below.
check_pkgs="build-essential ccache clang libclang-rt-14-dev bc flex bison xz-utils zstd
      gcc-aarch64-linux-gnu crossbuild-essential-arm64 libc6-dev:arm64 libubsan1:arm64
      qemu-user qemu-user-binfmt qemu-system-arm
      libelf-dev libssl-dev
      linux-source-6.1
      dkms liburing-dev python3-numpy python3-pip python3-setuptools
      pkg-config
      python3-torch fio e2fsprogs
      debhelper dh-dkms lintian prometheus python3-yaml python3-jsonschema
      podman crun
      libslurm-dev slurmd slurmctld slurm-client munge
      sparse coccinelle ocaml-nox
      gdb"

pkgs=$demo_pkgs
[ "$part" = demo ] || pkgs="$demo_pkgs $check_pkgs"

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
if [ "$part" = all ] && [ -z "$k612" ]; then
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

# The debug kernel's sources: Linux 7.2, which has the dmem cgroup
# controller (6.14 and later), packaged as linux-source-7.2 in
# trixie-backports only (Architecture: all; bookworm's binutils and
# xz-utils satisfy it).  That suite goes into apt's sources from the same
# mirror as the system's own Debian entry, in a file of its own, with a pin
# that lets nothing else come from it: everything of trixie-backports at -1
# (never installed), linux-source-7.2 alone at 500.
bp=trixie-backports
bp_src=/etc/apt/sources.list.d/gpupool-$bp.sources
bp_pin=/etc/apt/preferences.d/gpupool-$bp
need72=""
[ "$part" = demo ] || have linux-source-7.2 || need72=linux-source-7.2

# Debian's arm64 kernel, its modules and headers, unpacked
# (scripts/arm64-kernel.sh): the module's cross build is checked against
# the headers, and the arm64 VMs boot the image; and the arm64 VMs'
# userland (vm/arm64-root.sh).  As root, both are brought up to what apt
# offers (each a no-op, an apt-cache call, when the cache has it).
needa64=""
if [ "$part" = all ]; then
	rel=$("$top/scripts/arm64-kernel.sh" list | tail -n 1)
	{ [ -n "$rel" ] && "$top/scripts/arm64-kernel.sh" tree "$rel" &&
	  "$top/vm/arm64-root.sh"; } >/dev/null 2>&1 || needa64=1
fi
fetch_a64() {
	if [ "$part" = all ]; then
		"$top/scripts/arm64-kernel.sh" fetch --image >/dev/null
		"$top/vm/arm64-root.sh" --fetch >/dev/null
	fi
	# qemu-user-binfmt's entry, where no systemd-binfmt loaded it (a
	# container): mounted and registered as root, else said.
	b=/proc/sys/fs/binfmt_misc
	[ "$part" = demo ] || [ -e $b/qemu-aarch64 ] && return 0
	{ mountpoint -q $b || mount -t binfmt_misc binfmt_misc $b; } &&
		cat /usr/lib/binfmt.d/qemu-aarch64.conf > $b/register ||
		echo "deps: could not register qemu-aarch64 with binfmt_misc (as root: make deps)" >&2
}

if [ -z "$missing$need612$need72" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		[ -z "$needa64" ] && exit 0
		echo "gpupool needs Debian's arm64 kernel and userland, unpacked. As root, run:" >&2
		echo "  scripts/deps.sh" >&2
		exit 1
	fi
	fetch_a64
	exit 0
fi

cmd="apt-get install -y --no-install-recommends$missing $need612 $need72"
if [ "$(id -u)" -ne 0 ]; then
	echo "gpupool needs packages that are not installed. As root, run:" >&2
	if [ -n "$need72" ]; then
		echo "  scripts/deps.sh   (it adds $bp to apt's sources for" \
		     "linux-source-7.2 alone, then installs)" >&2
	else
		echo "  apt-get update && $cmd" >&2
	fi
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# The URI (and Signed-By) of the entry that carries this release's own
# suite (bookworm, not bookworm-security), from the deb822 .sources files
# or the one-line sources.list entries; printed as "URI<TAB>SIGNED-BY".
debian_entry() {
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || return 1
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] && [ "$f" != "$bp_src" ] || continue
		awk -v want="$codename" '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") &&
			    enabled != "no" && uri != "") {
				print uri "\t" signed; found = 1; exit
			}
			types = suites = uri = signed = enabled = ""; insig = 0
		}
		/^[ \t]*$/ { flush(); next }
		/^#/ { next }
		/^[ \t]/ { if (insig) signed = signed "\n" $0; next }
		{
			insig = 0
			k = tolower($1); v = $0; sub(/^[^:]*:[ \t]*/, "", v)
			if (k == "types:") types = v
			else if (k == "suites:") suites = v
			else if (k == "uris:") { split(v, u, /[ \t]+/); uri = u[1] }
			else if (k == "enabled:") enabled = tolower(v)
			else if (k == "signed-by:") { signed = v; insig = 1 }
		}
		END { if (!found) flush() }' "$f" | grep . && return 0
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk -v want="$codename" '
		$1 != "deb" { next }
		{
			i = 2; signed = ""
			if ($2 ~ /^\[/) {
				for (; i <= NF; i++) {
					if ($i ~ /^\[?signed-by=/) {
						signed = $i; sub(/^\[?signed-by=/, "", signed)
						sub(/\]$/, "", signed)
					}
					if ($i ~ /\]$/) { i++; break }
				}
			}
			if ($(i + 1) == want) { print $i "\t" signed; exit }
		}' "$f" | grep . && return 0
	done
	return 1
}

# Write FILE with CONTENT unless it already holds exactly that.
put() {
	if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then
		echo "deps: $1 is already in place"
		return 1
	fi
	printf '%s\n' "$2" > "$1"
	echo "deps: wrote $1:"
	sed 's/^/    /' "$1"
}

if [ -n "$need72" ]; then
	entry=$(debian_entry) || {
		echo "deps: found no Debian entry for this release's suite in" \
		     "/etc/apt/sources.list.d/*.sources or sources.list, so no" \
		     "mirror to take $bp from" >&2
		exit 1
	}
	uri=$(printf '%s\n' "$entry" | head -n 1 | cut -f1)
	signed=$(printf '%s\n' "$entry" | cut -f2-)
	echo "deps: linux-source-7.2 comes from $bp, on this system's Debian mirror $uri"
	put "$bp_src" "# Written by gpupool's scripts/deps.sh: $bp, for linux-source-7.2
# alone (the debug kernel's sources); the pin in
# $bp_pin keeps the rest out.
Types: deb
URIs: $uri
Suites: $bp
Components: main${signed:+
Signed-By: $signed}" || true
	put "$bp_pin" "# Written by gpupool's scripts/deps.sh: from $bp, linux-source-7.2
# (the debug kernel's sources) and nothing else.
Package: linux-source-7.2
Pin: release n=$bp
Pin-Priority: 500

Package: *
Pin: release n=$bp
Pin-Priority: -1" || true
fi

# Packages of another architecture (libc6-dev:arm64) need it in dpkg's list.
case "$missing " in
*:arm64\ *)
	dpkg --print-foreign-architectures | grep -qx arm64 || {
		echo "deps: adding the arm64 architecture (dpkg --add-architecture arm64)"
		dpkg --add-architecture arm64
	} ;;
esac

echo "deps: installing:$missing $need612 $need72"
apt-get update -q
if [ -n "$need72" ] &&
   ! apt-cache policy linux-source-7.2 | grep -q 'Candidate: [0-9]'; then
	echo "deps: apt offers no linux-source-7.2 from $bp at $uri:" >&2
	apt-cache policy linux-source-7.2 >&2
	exit 1
fi

# The kernel images last, in an apt-get call of their own, with the
# initramfs generator already in place.  Each image builds its initramfs
# when it is configured; packages with initramfs hooks (busybox-static,
# udev, kmod, klibc-utils) unpacked in the same call would have it built
# once more, for nothing, by their trigger at the end of the call (on a
# bare Debian 12, 36-65 s of the demo's apt step: docs/development.md).
# initramfs-tools is what apt would pick for the images anyway, unless
# another generator is installed.
images="" rest=""
for p in $missing $need612 $need72; do
	case $p in
	linux-image-*) images="$images $p" ;;
	*) rest="$rest $p" ;;
	esac
done
if [ -n "$images" ] && ! have initramfs-tools && ! have dracut &&
   ! have tiny-initramfs; then
	rest="$rest initramfs-tools"
fi
# shellcheck disable=SC2086
[ -z "$rest" ] || apt-get install -y -q --no-install-recommends $rest
# shellcheck disable=SC2086
[ -z "$images" ] || apt-get install -y -q --no-install-recommends $images
fetch_a64
