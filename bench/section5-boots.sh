#!/bin/sh
# Section 5's verdict over several boots (make -f bench/kmod.mk run
# BOOTS=N): one boot's ratios move by 0.1 to 0.3 from one boot to the next
# under TCG (bench/README.md), more than the 5% judged, so the verdict is
# on the median of the boots' ratios, each size on its own.
#
# Usage: bench/section5-boots.sh TESTS-LOG...   (build/vm/<name>/tests.log)
# Prints each boot's line and the verdict; exit 1 when a log has no
# section 5 verdict (the boot failed, or the section did not run).
set -eu
[ $# -gt 0 ] || { echo "usage: $0 TESTS-LOG..." >&2; exit 2; }
rows=""
for log in "$@"; do
	line=$(grep -E '^ +(PASS|MISS) section 5: ALLOC p50 ' "$log" 2>/dev/null |
		tail -n 1)
	[ -n "$line" ] || {
		echo "section 5 over boots: no verdict in $log (the boot failed, or section 5 did not run: KMOD_BENCH_SECTIONS without 5, or no baseline module)" >&2
		exit 1
	}
	r=$(printf '%s\n' "$line" |
		sed -n 's/.* = \([0-9.]*\) at 4 KiB, \([0-9.]*\) at 1 GiB.*/\1 \2/p')
	[ -n "$r" ] || { echo "section 5 over boots: unreadable verdict in $log: $line" >&2; exit 1; }
	echo "   boot $(basename "$(dirname "$log")"): $r (4 KiB, 1 GiB)"
	rows="$rows$r
"
done
printf '%s' "$rows" | awk '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k[++n] = $1; g[n] = $2 }
END {
	mk = median(k, n); mg = median(g, n)
	printf "   %s section 5 over %d boots: median ratio %.3f at 4 KiB, %.3f at 1 GiB (target <= 1.05 at each)\n",
	       (mk <= 1.05 && mg <= 1.05) ? "PASS" : "MISS", n, mk, mg
}'
