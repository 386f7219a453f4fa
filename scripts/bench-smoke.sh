#!/bin/sh
# The BFC benchmark as `make bench` runs it, in its quick mode
# (BENCH_QUICK=1, a few seconds): it must build, replay every trace in
# bench/data and the generated ones through the core and the TF-structured
# baseline (the benchmark checks both allocators' invariants after its
# replays and exits non-zero on a violation), and print every section with a
# number in each figure.  Nothing about speed is asserted: the figures are
# the benchmark's to print (bench/README.md).
#
# Usage: scripts/bench-smoke.sh   (O= the build directory, default build/)
# Writes $RESULTS_DIR/bench.counts; exit status non-zero on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
out=$O/bench/smoke.out
mkdir -p "$results" "$O/bench"
pass=0 fail=0 n=0

# shellcheck source=scripts/tap.sh
. "$top/scripts/tap.sh"

make -s -C "$top/bench" O="$O" TOP="$top" all > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] || cat "$out"
ok $rc "the host benchmarks build (bfc_bench, gen_trace, derive_trace, lib_bench, io_bench, loader_bench)"

# The module's benchmark runs only in a VM (make -C bench kmod, by hand):
# here it must at least build.
make -s -f "$top/bench/kmod.mk" O="$O" TOP="$top" > "$out.kmod" 2>&1
rc_kmod=$?
[ $rc_kmod -eq 0 ] || cat "$out.kmod"
ok $rc_kmod "the module benchmark builds (bench/kmod.mk: kmod_bench)"

if [ $rc -eq 0 ]; then
	BENCH_QUICK=1 make -s -C "$top/bench" O="$O" TOP="$top" bfc \
		> "$out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || tail -20 "$out"
	ok $rc "BENCH_QUICK=1 make -C bench bfc exits 0 (output: $out)"

	missing=""
	for s in '^1\. Replay speed' '^2\. Fragmentation' '^3\. Failed' \
		 '^4\. Smallest' '^5\. Scaling' '^6\. Targets' \
		 'The reads a free cannot skip' '^T1 ' '^T2 ' '^T3 ' '^T4 ' \
		 '^The issue.s targets as worded: [0-9]* of [0-9]* rows PASS'; do
		grep -q "$s" "$out" || missing="$missing '$s'"
	done
	[ -z "$missing" ] || echo "# not in the output:$missing"
	ok "$([ -z "$missing" ]; echo $?)" "every section, target line and the targets' tally is printed"

	# printf's nan/inf, alone or as a ratio ("nanx")
	bad=$(grep -Ei '(^|[^a-z])-?(nan|inf)x?($|[^a-z])' "$out")
	[ -z "$bad" ] || echo "$bad" | sed 's/^/# /'
	ok "$([ -z "$bad" ]; echo $?)" "no figure is nan or inf (every median had samples)"

	# A trace too large for the machine: one allocation of 2^47 bytes,
	# whose TF-structured region would need 4 TiB of handles.  It must stop
	# with status 4 and say so before it touches that memory, not be
	# killed by the OOM killer or abort on std::bad_alloc.
	big=$O/bench/smoke-too-large.csv
	printf 'a,0,140737488355328,,0\nf,0,1\n' > "$big"
	"$O/bench/bfc_bench" --no-scale "$big" > "$out.big" 2>&1
	rc=$?
	msg=$(grep -c "smoke-too-large: the TF-structured baseline cannot add a region" "$out.big")
	[ $rc -eq 4 ] && [ "$msg" -eq 1 ] || { echo "# exit status $rc:"; sed 's/^/# /' "$out.big"; }
	ok "$([ $rc -eq 4 ] && [ "$msg" -eq 1 ]; echo $?)" "a trace too large for this machine's memory stops with status 4 and says why"

	# P5 compares the candidate with today's core (policy tf), also when
	# ours has another policy: with --policy age and the candidate age,
	# comparing it with ours would read 1.00x whatever age costs.
	BENCH_QUICK=1 "$O/bench/bfc_bench" --no-frag --no-scale --policy age \
		--candidate age "$top/bench/data/minimalloc_F.csv" > "$out.pol" 2>&1
	rc=$?
	hdr=$(grep -cE '^trace +tf\(addr\) +candidate +cand/tf$' "$out.pol")
	p5=$(grep -c "^P5  replay speed of policy 'age' within 1.2x of today's core (policy 'tf')" "$out.pol")
	[ $rc -eq 0 ] && [ "$hdr" -eq 1 ] && [ "$p5" -eq 1 ] || { echo "# exit status $rc:"; sed 's/^/# /' "$out.pol" | tail -30; }
	ok "$([ $rc -eq 0 ] && [ "$hdr" -eq 1 ] && [ "$p5" -eq 1 ]; echo $?)" "with --policy age, P5 times the candidate against a replay of policy tf, not against ours"
else
	for t in "the quick run" "its sections" "its figures" "a trace too large" "P5's reference"; do
		ok 1 "$t (not run: the benchmark did not build)"
	done
fi

tap_done bench
