#!/bin/sh
# The arm64 root: Debian's arm64 packages that the arm64 VMs need, unpacked
# on this amd64 machine into a directory of the machine-wide cache:
#   - Debian's arm64 kernel, 6.12 (the newest linux-image-6.12.*+deb12-arm64
#     that apt offers), its modules and its headers, with the build
#     machine's linux-kbuild (the headers' scripts and tools): what the
#     4K-page arm64 VMs boot, and what gpupool.ko is cross-built against
#     (scripts/build-module.sh RELEASE OUT ROOT/lib/modules/RELEASE/build;
#     the headers name their compiler, aarch64-linux-gnu-gcc-12);
#   - the guest's userland: dash, coreutils, util-linux, kmod, e2fsprogs,
#     sed, grep, the C runtime and the sanitizers' (libc6, libubsan1,
#     libasan8), with everything they depend on, and busybox-static (the
#     initramfs's shell).  vm/init lays this root over the host's in the
#     guest (overlayfs), so that /bin/sh, modprobe or mkfs.ext4 there are
#     arm64 programs and the host's arm64 test programs find their
#     libraries; a program the root lacks is the host's x86-64 one and
#     fails to exec (python3: the Python suites run on x86 only).
#
# Usage: vm/arm64-root.sh [--fetch] [--hold PID] [--release]
#   Prints the root's directory (ROOT/boot/vmlinuz-RELEASE,
#   ROOT/lib/modules/RELEASE, ROOT/usr/src/linux-headers-RELEASE), or
#   with --release the kernel's RELEASE; on stderr, what it did.
#   Without --fetch: the newest complete root in the cache (exit 1,
#   saying so, when there is none).  --fetch (make deps, as root): the
#   root of the newest kernel apt offers, downloaded and unpacked when
#   the cache does not hold it yet (older ones are then removed, but for
#   those a run holds); it needs arm64 among dpkg's architectures
#   (scripts/deps.sh adds it), for apt to know arm64's packages.
#   --hold PID: the root printed is not removed while process PID lives.
# The cache (scripts/cache.sh): $GPUPOOL_CACHE/arm64-root/<key>/{root,done},
# <key> hashing this script, scripts/cache.sh and the kernel's package
# name: one apt-cache call when it is there already (the userland's
# packages, resolved when it is built, are listed in done).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
log() { echo "arm64-root: $*" >&2; }
# shellcheck source=scripts/cache.sh
. "$top/scripts/cache.sh"

fetch=0 hold="" what=root
while [ $# -gt 0 ]; do
	case $1 in
	--fetch) fetch=1; shift ;;
	--hold) hold=${2:?--hold PID}; shift 2 ;;
	--release) what=release; shift ;;
	*) echo "usage: $0 [--fetch] [--hold PID] [--release]" >&2; exit 2 ;;
	esac
done

# What the guest runs besides the tests: the packages named, with their
# dependencies (apt resolves them as for an empty arm64 system).
USERLAND="dash bash coreutils util-linux mount kmod e2fsprogs sed grep
	busybox-static libc6 libubsan1 libasan8"

base=$(cache_base arm64-root)
cache_lock "$base"

# Whether $1/done is a complete root, its release in $rel.
root_complete() {
	[ -f "$1/done" ] || return 1
	rel=$(sed -n 's/^release //p' "$1/done")
	[ -n "$rel" ] && [ -f "$1/root/boot/vmlinuz-$rel" ] &&
		[ -f "$1/root/lib/modules/$rel/modules.dep" ] &&
		[ -e "$1/root/lib/modules/$rel/build/Makefile" ] &&
		[ -x "$1/root/bin/busybox" ]
}

hand_out() {
	cache_hold "$base" "$(basename "$1")" "$hold"
	if [ $what = release ]; then
		sed -n 's/^release //p' "$1/done"
	else
		echo "$1/root"
	fi
}

if [ $fetch = 0 ]; then
	# shellcheck disable=SC2012 # the cache's names are hex keys
	newest=$(ls -td "$base"/*/done 2>/dev/null | head -n 1)
	if [ -n "$newest" ] && root_complete "$(dirname "$newest")"; then
		hand_out "$(dirname "$newest")"
		exit 0
	fi
	log "no arm64 root in $base: run make deps (scripts/deps.sh)"
	exit 1
fi

# apt, as for an empty system whose architecture is arm64: the state
# (status, lock) of its own, apt's package lists and sources the system's.
tmp=$(mktemp -d "$base/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/state" "$tmp/debs/partial"
: > "$tmp/state/status"
arm64_apt() {
	apt-get -q -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
		-o Dir::State::status="$tmp/state/status" \
		-o Dir::Cache::archives="$tmp/debs" -o Dir::Cache::pkgcache= \
		-o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root "$@"
}

img=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-arm64-unsigned$' |
	awk '{ print $1 }' | sort -V | tail -n 1)
if [ -z "$img" ]; then
	log "apt offers no linux-image-6.12.*+deb12-arm64-unsigned: is arm64 among dpkg's architectures (dpkg --add-architecture arm64; apt-get update)?"
	exit 1
fi
rel=${img#linux-image-}
rel=${rel%-unsigned}
kver=${rel%-arm64}
kernel="$img:arm64 linux-headers-$rel:arm64 linux-headers-$kver-common
	linux-kbuild-$kver:$(dpkg --print-architecture)"

key=$( { cat "$0" "$top/scripts/cache.sh"; echo "$img"; } | sha256sum | cut -c1-16)
dir=$base/$key
if root_complete "$dir"; then
	log "reusing $dir ($rel)"
	hand_out "$dir"
	exit 0
fi

# The packages' URIs (name, version, architecture), from apt's lists.
# shellcheck disable=SC2086 # lists of words
uris=$( { apt-get download --print-uris $kernel
	arm64_apt install --print-uris -y --no-install-recommends $USERLAND; } |
	sed -n "s/^'\([^']*\)'.*/\1/p" | sort)
[ -n "$uris" ] || { log "apt names no package to fetch"; exit 1; }
start=$(date +%s)
log "fetching $rel and the guest's userland ($(echo "$uris" | wc -l) packages) into $dir"
# apt's output to a log, shown when it fails.
# shellcheck disable=SC2086
{ (cd "$tmp/debs" && apt-get -q -o APT::Sandbox::User=root download $kernel) &&
	arm64_apt install --download-only -y --no-install-recommends $USERLAND
} > "$tmp/apt.log" 2>&1 || {
	log "apt-get could not fetch them:"
	tail -n 20 "$tmp/apt.log" >&2
	exit 1
}
rm -rf "$dir"
mkdir -p "$dir/root"
r=$dir/root
for deb in "$tmp"/debs/*.deb; do
	dpkg-deb -x "$deb" "$r"
done
# The host's root has merged /usr (/bin a link to usr/bin ...), and
# overlayfs lays directories over directories only: the same here.
for d in bin sbin lib; do
	if [ ! -d "$r/$d" ] || [ -L "$r/$d" ]; then continue; fi
	mkdir -p "$r/usr/$d"
	cp -a "$r/$d/." "$r/usr/$d/"
	rm -rf "${r:?}/$d"
	ln -s "usr/$d" "$r/$d"
done
# The headers name their common part by an absolute path, the modules
# their headers: both into this root.
sed -i "s|^include /usr/src/|include $r/usr/src/|" \
	"$r/usr/src/linux-headers-$rel/Makefile"
ln -sfn "../../../src/linux-headers-$rel" "$r/lib/modules/$rel/build"
ln -sfn "../../../src/linux-headers-$kver-common" "$r/lib/modules/$rel/source"
depmod -b "$r" "$rel"
{
	echo "release $rel"
	echo "seconds $(( $(date +%s) - start ))"
	echo "$uris" | sed 's/^/uri /'
} > "$dir/done.new"
mv "$dir/done.new" "$dir/done"
root_complete "$dir" || { log "$dir is incomplete after unpacking"; exit 1; }
log "unpacked in $(( $(date +%s) - start )) s: $r"
cache_prune "$base" "$dir"
hand_out "$dir"
