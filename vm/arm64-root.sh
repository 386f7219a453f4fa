#!/bin/sh
# The arm64 VMs' userland: Debian's arm64 dash, bash, coreutils,
# util-linux, kmod, e2fsprogs, sed, grep, the C runtime and the
# sanitizers' (libc6, libubsan1, libasan8), with everything they depend
# on, and busybox-static (the initramfs's shell), unpacked on this amd64
# machine into a directory of the machine-wide cache, merged-/usr like
# the host's root.  vm/init lays it over the host's root in the guest
# (overlayfs), so that /bin/sh, modprobe or mkfs.ext4 there are arm64
# programs and the host's cross-built test programs find their libraries;
# a program it lacks is the host's x86-64 one and fails to exec (python3:
# the Python suites run on x86 only).  The arm64 kernel is
# scripts/arm64-kernel.sh's.
#
# Usage: vm/arm64-root.sh [--fetch] [--hold PID]
#   Prints the root's directory; on stderr, what it did.  Without
#   --fetch: the newest complete root in the cache (exit 1, saying so,
#   when there is none).  --fetch (make deps, as root): the root of this
#   script's package list, downloaded and unpacked when the cache does not
#   hold it yet (older ones are then removed, but for those a run holds);
#   apt resolves the packages as for an empty arm64 system, from the
#   machine's package lists, which need arm64 among dpkg's architectures
#   (scripts/deps.sh adds it).
#   --hold PID: the root printed is not removed while process PID lives.
# The cache (scripts/cache.sh): $GPUPOOL_CACHE/arm64-root/<key>/{root,done},
# <key> hashing this script and scripts/cache.sh; done lists the
# packages' URIs (names and versions).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
log() { echo "arm64-root: $*" >&2; }
# shellcheck source=scripts/cache.sh
. "$top/scripts/cache.sh"

fetch=0 hold=""
while [ $# -gt 0 ]; do
	case $1 in
	--fetch) fetch=1; shift ;;
	--hold) hold=${2:?--hold PID}; shift 2 ;;
	*) echo "usage: $0 [--fetch] [--hold PID]" >&2; exit 2 ;;
	esac
done

# What the guest runs besides the tests: the packages named, with their
# dependencies.
USERLAND="dash bash coreutils util-linux mount kmod e2fsprogs sed grep
	busybox-static libc6 libubsan1 libasan8"

base=$(cache_base arm64-root)
cache_lock "$base"

# Whether $1 is a complete root.
root_complete() {
	[ -f "$1/done" ] && [ -x "$1/root/bin/busybox" ] &&
		[ -x "$1/root/bin/sh" ] && [ -e "$1/root/lib/ld-linux-aarch64.so.1" ]
}

hand_out() {
	cache_hold "$base" "$(basename "$1")" "$hold"
	echo "$1/root"
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

key=$(cat "$0" "$top/scripts/cache.sh" | sha256sum | cut -c1-16)
dir=$base/$key
if root_complete "$dir"; then
	log "reusing $dir"
	hand_out "$dir"
	exit 0
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
start=$(date +%s)
# shellcheck disable=SC2086 # a list of words
uris=$(arm64_apt install --print-uris -y --no-install-recommends $USERLAND |
	sed -n "s/^'\([^']*\)'.*/\1/p" | sort)
[ -n "$uris" ] || {
	log "apt offers no arm64 packages: is arm64 among dpkg's architectures (dpkg --add-architecture arm64; apt-get update)?"
	exit 1
}
log "fetching the guest's userland ($(echo "$uris" | wc -l) packages) into $dir"
# apt's output to a log, shown when it fails.
# shellcheck disable=SC2086
arm64_apt install --download-only -y --no-install-recommends $USERLAND \
	> "$tmp/apt.log" 2>&1 || {
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
{
	echo "seconds $(( $(date +%s) - start ))"
	echo "$uris" | sed 's/^/uri /'
} > "$dir/done.new"
mv "$dir/done.new" "$dir/done"
root_complete "$dir" || { log "$dir is incomplete after unpacking"; exit 1; }
log "unpacked in $(( $(date +%s) - start )) s: $r"
cache_prune "$base" "$dir"
hand_out "$dir"
