#!/bin/sh
# Extract from Debian's linux-source-6.1 what the build needs but must not
# commit: the kselftest harness headers and checkpatch.pl with its data.
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
[ -f "$stamp" ] && [ "$stamp" -nt "$tarball" ] && exit 0
tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
tar -xf "$tarball" -C "$tmp" --strip-components=1 \
	linux-source-6.1/tools/testing/selftests/kselftest.h \
	linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
	linux-source-6.1/scripts/checkpatch.pl \
	linux-source-6.1/scripts/spelling.txt \
	linux-source-6.1/scripts/const_structs.checkpatch
rm -rf "$out"
mkdir -p "$out"
mv "$tmp/tools/testing/selftests/kselftest.h" \
   "$tmp/tools/testing/selftests/kselftest_harness.h" "$out/"
mv "$tmp/scripts" "$out/scripts"
rm -rf "$tmp"
touch "$stamp"
