#!/bin/sh
# `make deb`: the Debian packages, built with dpkg-buildpackage from a copy
# of the tree (so that the checkout stays clean), collected in one place.
#
# Usage: scripts/deb.sh [--version V] [--out DIR] [--arch A...]
#   --version V  build as version V instead of debian/changelog's (the
#                upgrade check builds an older one from the same tree);
#                the module's version follows it
#   --out DIR    where the .debs go (default: $O/deb, i.e. build/deb/)
#   --arch A     the architectures to build for, repeatable (default:
#                this machine's and arm64): another one is a cross build,
#                dpkg-buildpackage --host-arch A with the profiles cross
#                and nocheck, of the architecture-dependent packages only
#                (-B: the Architecture: all ones are the native build's),
#                without the SPANK plugin (pkg.gpupool.noslurm:
#                libslurm-dev is not Multi-Arch, so its arm64 package
#                cannot be installed beside this machine's)
# Prints the .debs' paths.  Needs debhelper and dh-dkms, and for arm64
# crossbuild-essential-arm64 and libc6-dev:arm64 (make deps).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
out=$O/deb version='' arches=''
while [ $# -gt 0 ]; do
	case $1 in
	--version) version=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--arch) arches="$arches $2"; shift 2 ;;
	*) echo "usage: scripts/deb.sh [--version V] [--out DIR] [--arch A...]" >&2
	   exit 2 ;;
	esac
done
native=$(dpkg --print-architecture)
[ -n "$arches" ] || arches="$native arm64"
for t in dpkg-buildpackage dh dh_dkms; do
	command -v $t >/dev/null || {
		echo "deb: $t missing: make deps (debhelper, dh-dkms)" >&2; exit 1; }
done
for a in $arches; do
	[ "$a" = "$native" ] && continue
	gnu=$(dpkg-architecture -a"$a" -qDEB_HOST_GNU_TYPE 2>/dev/null) &&
		command -v "$gnu-gcc" >/dev/null &&
		dpkg-query -W -f='${Status}' "libc6-dev:$a" 2>/dev/null |
		grep -q 'ok installed' || {
		echo "deb: no cross toolchain for $a (${gnu:-?}-gcc, libc6-dev:$a):" \
		     "make deps, or --arch $native" >&2
		exit 1
	}
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src/gpupool
rm -rf "$out/src"
mkdir -p "$src"
# The files git knows (tracked, or new and not ignored): never build/.
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	cpio -0 -pdm --quiet "$src")
if [ -n "$version" ]; then
	(cd "$src" && {
		printf 'gpupool (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Built from the same tree as version %s.\n\n' "$version"
		printf ' -- gpupool maintainers <maintainers@users.noreply.a-seed-519d4f15.example>  %s\n\n' \
			"$(date -R)"
		cat debian/changelog
	} > debian/changelog.new && mv debian/changelog.new debian/changelog)
fi
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes "$out"/build*.log
for a in $arches; do
	cross_cc=''
	if [ "$a" = "$native" ]; then
		set -- -b
	else
		set -- -B --host-arch "$a" -Pcross,nocheck,pkg.gpupool.noslurm
		# dpkg-buildpackage checks the architecture against CC's.
		cross_cc=$(dpkg-architecture -a"$a" -qDEB_HOST_GNU_TYPE 2>/dev/null)-gcc
	fi
	log=$out/build-$a.log
	(cd "$src" && ${cross_cc:+env CC="$cross_cc" DEB_BUILD_OPTIONS=nocheck} \
		dpkg-buildpackage -us -uc "$@") > "$log" 2>&1 || {
		tail -n 40 "$log" >&2
		echo "deb: dpkg-buildpackage $* failed; log: $log" >&2
		exit 1
	}
	mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/
done
rm -rf "$out/src"
ls "$out"/*.deb
