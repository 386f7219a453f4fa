#!/bin/sh
# Run every libFuzzer harness in a directory for a fixed number of inputs
# from a fixed seed, each under a timeout.  Runs are alike but not the
# same: libFuzzer also mutates with the values its comparisons saw, and
# addresses move between runs (ASLR), so a run can find what the last
# hundred did not; a crashing input is kept and replays exactly (then
# make it a seed, tests/fuzz/corpus/NAME/, below).  One harness is one
# test: it passes when libFuzzer finishes its runs without a crash, leak,
# sanitizer report or broken property (the harnesses abort on those).
#
# Usage: scripts/run-fuzz.sh SUITE-NAME FUZZ-DIR
# Environment: FUZZ_RUNS (inputs per harness, default below per harness),
# FUZZ_SEED (default 1), FUZZ_TIMEOUT (seconds per harness, default 300).
#
# Writes build/results/<suite>.counts (`pass=N fail=N skip=N`); a crashing
# input is kept under build/results/<suite>-artifacts/ and the line to
# replay it is printed.
set -u
suite=${1:?usage: $0 SUITE FUZZ-DIR}
dir=${2:?usage: $0 SUITE FUZZ-DIR}
top=$(cd "$(dirname "$0")/.." && pwd)
results=${RESULTS_DIR:-$top/build/results}
seed=${FUZZ_SEED:-1}
tmo=${FUZZ_TIMEOUT:-300}
mkdir -p "$results"
log="$results/$suite.log"
art="$results/$suite-artifacts"
rm -rf "$art"
mkdir -p "$art"
: > "$log"

# Inputs per harness: about 30 s each on a 2-core machine.
runs_for() {
	case $1 in
	fuzz_bfc)		echo 50000 ;;
	fuzz_ioctl_reply)	echo 150000 ;;
	fuzz_dev_pool)		echo 60000 ;;
	*)			echo 500000 ;;
	esac
}

pass=0 fail=0
for f in "$dir"/fuzz_*; do
	[ -f "$f" ] && [ -x "$f" ] || continue
	name=$(basename "$f")
	runs=${FUZZ_RUNS:-$(runs_for "$name")}
	corpus=$(mktemp -d)
	# The harness's seeds in the tree (tests/fuzz/corpus/NAME/: inputs
	# worth starting from, and every input that once broke a property,
	# so that it is replayed on every run).
	if [ -d "$top/tests/fuzz/corpus/$name" ]; then
		cp "$top/tests/fuzz/corpus/$name"/* "$corpus"/ 2>/dev/null
	fi
	start=$(date +%s)
	echo "# $name: -seed=$seed -runs=$runs" >> "$log"
	timeout -k 5 "$tmo" "$f" -seed="$seed" -runs="$runs" \
		-artifact_prefix="$art/$name-" -print_final_stats=1 \
		"$corpus" >> "$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	rm -rf "$corpus"
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok $name ($runs inputs, ${secs}s)"
	else
		fail=$((fail + 1))
		echo "not ok $name # exit $rc after ${secs}s"
		[ "$rc" -eq 124 ] && echo "  timed out after ${tmo}s"
		for a in "$art/$name"-*; do
			[ -e "$a" ] && echo "  replay: $f $a"
		done
		grep -E 'ERROR: |SUMMARY: |runtime error|property violated' "$log" |
			tail -n 20 | sed 's/^/  /'
	fi
done
echo "pass=$pass fail=$fail skip=0" > "$results/$suite.counts"
echo "$suite: $pass passed, $fail failed, 0 skipped (log: $log)"
[ "$fail" -eq 0 ]
