#!/bin/sh
# Run the kernel's checkpatch.pl (from Debian's linux-source-6.1, extracted
# into build/ksft/scripts by scripts/ksft-headers.sh) over the module's
# sources and the allocator core it compiles.  Errors fail; warnings are
# shown.  Writes build/results/checkpatch.counts (one test).
# NEW_TYPEDEFS is ignored: the shared core keeps one typedef, bfc_handle_t
# (an opaque index, the case the kernel style allows).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cp="${O:-$top/build}/ksft/scripts/checkpatch.pl"
results=${RESULTS_DIR:-${O:-$top/build}/results}
mkdir -p "$results"
if [ ! -r "$cp" ]; then	# else perl's complaint would count as a pass
	echo "checkpatch: $cp is missing (scripts/ksft-headers.sh extracts it)"
	echo "pass=0 fail=1 skip=0" > "$results/checkpatch.counts"
	exit 1
fi
files=$(cd "$top" && ls kmod/*.c kmod/*.h core/*.c core/*.h 2>/dev/null)
out=$(cd "$top" && perl "$cp" --no-tree --terse --show-types \
	--ignore NEW_TYPEDEFS \
	-f $files 2>&1)
echo "$out" | grep -E ': (ERROR|WARNING|CHECK):' || true
nerr=$(echo "$out" | grep -c ': ERROR:')
nwarn=$(echo "$out" | grep -c ': WARNING:')
if [ "$nerr" -eq 0 ]; then
	echo "pass=1 fail=0 skip=0" > "$results/checkpatch.counts"
	echo "checkpatch: 0 errors, $nwarn warnings in $(echo $files | wc -w) files"
else
	echo "pass=0 fail=1 skip=0" > "$results/checkpatch.counts"
	echo "checkpatch: $nerr errors, $nwarn warnings"
	exit 1
fi
