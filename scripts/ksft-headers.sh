#!/bin/sh
# Extract from Debian's linux-source-6.1 what the build needs but must not
# commit: the kselftest harness headers, checkpatch.pl with its data, and
# coccicheck with its semantic patches (scripts/kernel-checks.sh: Debian's
# headers packages have none).
# Usage: scripts/ksft-headers.sh OUTDIR   (idempotent; a stamp marks success)
set -eu
out=${1:?usage: $0 OUTDIR}
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$tarball" ]; then
	echo "ksft-headers: /usr/src/linux-source-6.1.tar.* not found;" \
	     "install it: apt-get install linux-source-6.1" >&2
	exit 1
fi
stamp="$out/.stamp"
[ -f "$stamp" ] && [ "$stamp" -nt "$tarball" ] &&
	[ -f "$out/scripts/coccicheck" ] && exit 0
# Unpacking them reads the whole tarball (about 10 s): the result is kept
# for every clone on the machine, under the tarball's name, size and time
# and what is taken from it (the list's version, below).
cache=${GPUPOOL_CACHE:-/var/cache/gpupool}/ksft/$( { stat -L -c '%n %s %Y' "$tarball";
	echo "with coccinelle"; } | cksum | cut -d' ' -f1)
if [ -f "$cache/.stamp" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	cp -a "$cache/." "$out/"
	touch "$stamp"
	exit 0
fi
tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xf "$tarball" -C "$tmp" --strip-components=1 \
	linux-source-6.1/tools/testing/selftests/kselftest.h \
	linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
	linux-source-6.1/scripts/checkpatch.pl \
	linux-source-6.1/scripts/spelling.txt \
	linux-source-6.1/scripts/const_structs.checkpatch \
	linux-source-6.1/scripts/coccicheck \
	linux-source-6.1/scripts/coccinelle
rm -rf "$out"
mkdir -p "$out"
mv "$tmp/tools/testing/selftests/kselftest.h" \
   "$tmp/tools/testing/selftests/kselftest_harness.h" "$out/"
mv "$tmp/scripts" "$out/scripts"
rm -rf "$tmp"
touch "$stamp"
if mkdir -p "$cache.tmp.$$" 2>/dev/null; then
	cp -a "$out/." "$cache.tmp.$$/" && rm -rf "$cache" &&
		mv "$cache.tmp.$$" "$cache" || rm -rf "$cache.tmp.$$"
fi
