# shellcheck shell=sh
# Sourced by the check scripts that count their own tests
# (install-check.sh, bench-smoke.sh): TAP-style lines and the counts file
# that scripts/summarize.sh adds up.  The caller sets pass=0 fail=0 n=0
# and results (the directory of the counts files).

# ok STATUS DESCRIPTION: one test, passed when STATUS is 0.
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok $n $2"
	else
		fail=$((fail + 1))
		echo "not ok $n $2"
	fi
}

# tap_done SUITE: the summary line and $results/SUITE.counts; the status is
# 0 when nothing failed.
# shellcheck disable=SC2154 # results, pass, fail: the caller's
tap_done() {
	echo "$1: $pass passed, $fail failed, 0 skipped"
	echo "pass=$pass fail=$fail skip=0" > "$results/$1.counts"
	[ "$fail" -eq 0 ]
}
