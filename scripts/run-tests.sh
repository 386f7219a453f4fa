#!/bin/sh
# Run every kselftest_harness program in a directory on this machine, each
# under a timeout, and count what they report.
#
# Usage: scripts/run-tests.sh SUITE-NAME TEST-DIR [TIMEOUT-SECONDS]
#   TEST_RUNNER in the environment: a command each program runs under
#   (qemu-aarch64 for an arm64 build: scripts/arm64-user.sh); TEST_SKIP:
#   programs not run there, each counted as one skipped test, with
#   TEST_SKIP_WHY in the log.
#
# Writes build/results/<suite>.counts as one line `pass=N fail=N skip=N`
# (summed by scripts/summarize.sh) and prints `<suite>: N passed, N failed,
# N skipped`.  A program that exits non-zero without reporting a failure
# (crash, sanitizer report, timeout) counts as one failed test.  Exit status:
# non-zero when anything failed.
set -u
suite=${1:?usage: $0 SUITE TEST-DIR [TIMEOUT]}
dir=${2:?usage: $0 SUITE TEST-DIR [TIMEOUT]}
tmo=${3:-300}
top=$(cd "$(dirname "$0")/.." && pwd)
results=${RESULTS_DIR:-$top/build/results}
mkdir -p "$results"
log="$results/$suite.log"
: > "$log"
pass=0 fail=0 skip=0
for t in "$dir"/*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	name=$(basename "$t")
	case " ${TEST_SKIP:-} " in
	*" $name "*)
		echo "ok $name # SKIP ${TEST_SKIP_WHY:-}" >> "$log"
		skip=$((skip + 1))
		continue ;;
	esac
	out=$(mktemp)
	# shellcheck disable=SC2086 # TEST_RUNNER: a command and its words
	timeout -k 5 "$tmo" ${TEST_RUNNER:-} "$t" > "$out" 2>&1
	rc=$?
	cat "$out" >> "$log"
	totals=$(grep '^# Totals: ' "$out" | tail -n 1)
	if [ -n "$totals" ]; then
		p=$(echo "$totals" | sed -n 's/.*Totals: pass:\([0-9]*\).*/\1/p')
		f=$(echo "$totals" | sed -n 's/.* fail:\([0-9]*\).*/\1/p')
		s=$(echo "$totals" | sed -n 's/.* skip:\([0-9]*\).*/\1/p')
		e=$(echo "$totals" | sed -n 's/.*error:\([0-9]*\).*/\1/p')
		f=$((f + ${e:-0}))
	else
		p=0 f=0 s=0
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# Died without saying a test failed: a crash, a sanitizer
		# report or a timeout (124).
		f=1
		echo "not ok $name # exited with status $rc" >> "$log"
	fi
	if [ "$f" -gt 0 ]; then
		echo "FAIL $suite/$name ($f failed, exit $rc):"
		grep -E '^(not ok|# .*(FAIL|fail|Assertion|expected|ERROR|error:)|.*Sanitizer|.*runtime error)' "$out" | head -n 40
		[ "$rc" -eq 124 ] && echo "  timed out after ${tmo}s"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	rm -f "$out"
done
echo "pass=$pass fail=$fail skip=$skip" > "$results/$suite.counts"
echo "$suite: $pass passed, $fail failed, $skip skipped (log: $log)"
[ "$fail" -eq 0 ]
