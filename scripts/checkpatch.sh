#!/bin/sh
# Run the kernel's checkpatch.pl (from Debian's linux-source-6.1, extracted
# into build/ksft/scripts by scripts/ksft-headers.sh) over the module's
# sources and the allocator core it compiles.  Errors fail; warnings are
# shown.  Writes build/results/checkpatch.counts (one test).
# NEW_TYPEDEFS is ignored: the shared core keeps one typedef, bfc_handle_t
# (an opaque index, the case the kernel style allows).
# Second test: the code builds as kbuild before 5.18 compiles it (gnu89,
# the oldest supported kernel being 5.10): the core compiled so in user
# space, and no declaration in a for statement in kmod/ (its compile needs
# 5.10's headers: vm/README.md, "Other kernels").
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
pass=0 fail=0
if [ "$nerr" -eq 0 ]; then
	pass=$((pass + 1))
	echo "checkpatch: 0 errors, $nwarn warnings in $(echo $files | wc -w) files"
else
	fail=$((fail + 1))
	echo "checkpatch: $nerr errors, $nwarn warnings"
fi
c89=$(cd "$top" && for f in core/*.c; do
	${CC:-cc} -std=gnu89 -Wall -Werror -fsyntax-only -Iinclude \
		-Iinclude/uapi -Icore -Iuserlib "$f" 2>&1
done; grep -nE 'for \([a-z_][a-z0-9_ ]*[ *]+[a-z_][a-z0-9_]* = ' kmod/*.c kmod/*.h)
if [ -z "$c89" ]; then
	pass=$((pass + 1))
	echo "gnu89: the core compiles as C89 for 5.10's kbuild; no for-statement declaration in kmod/"
else
	fail=$((fail + 1))
	echo "$c89"
	echo "gnu89: the code above would not build on kernels before 5.18 (C89)"
fi
echo "pass=$pass fail=$fail skip=0" > "$results/checkpatch.counts"
[ "$fail" -eq 0 ]
