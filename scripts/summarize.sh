#!/bin/sh
# Sum every suite's counts (build/results/*.counts, written by
# scripts/run-tests.sh, vm/run-vm.sh and scripts/deb-check.sh) into the one
# line CI reads: `N passed, N failed, N skipped`.  Exit status non-zero when
# anything failed or no suite ran.
set -u
results=${1:?usage: $0 RESULTS-DIR}
pass=0 fail=0 skip=0 n=0
for c in "$results"/*.counts; do
	[ -f "$c" ] || continue
	n=$((n + 1))
	eval "$(sed -n 's/^pass=\([0-9]*\) fail=\([0-9]*\) skip=\([0-9]*\)$/p=\1 f=\2 s=\3/p' "$c")"
	pass=$((pass + ${p:-0})) fail=$((fail + ${f:-1})) skip=$((skip + ${s:-0}))
	unset p f s
done
[ "$n" -eq 0 ] && fail=$((fail + 1))
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
