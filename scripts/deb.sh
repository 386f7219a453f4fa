#!/bin/sh
# `make deb`: the Debian packages, built with dpkg-buildpackage from a copy
# of the tree (so that the checkout stays clean), collected in one place.
#
# Usage: scripts/deb.sh [--version V] [--out DIR]
#   --version V  build as version V instead of debian/changelog's (the
#                upgrade check builds an older one from the same tree);
#                the module's version follows it
#   --out DIR    where the .debs go (default: $O/deb, i.e. build/deb/)
# Prints the .debs' paths.  Needs debhelper and dh-dkms (make deps).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
out=$O/deb version=''
while [ $# -gt 0 ]; do
	case $1 in
	--version) version=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: scripts/deb.sh [--version V] [--out DIR]" >&2; exit 2 ;;
	esac
done
for t in dpkg-buildpackage dh dh_dkms; do
	command -v $t >/dev/null || {
		echo "deb: $t missing: make deps (debhelper, dh-dkms)" >&2; exit 1; }
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
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
(cd "$src" && dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 || {
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed; log: $out/build.log" >&2
	exit 1
}
mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/
rm -rf "$out/src"
ls "$out"/*.deb
