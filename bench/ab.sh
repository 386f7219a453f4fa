#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# bench/ab.sh - compare versions of the BFC core on the replay benchmark.
#
#   bench/ab.sh [-n RUNS] VERSION... [-- TRACE.csv...]
#
# A VERSION is a git revision (HEAD, a hash, a branch), "wt" for the working
# tree as it is, or REV:PATCH for a revision with a patch applied (git apply;
# PATCH relative to the repository or absolute).  Each is built once, under
# ${AB_DIR:-/tmp/gpupool-ab}, as `make -C bench` builds bfc_bench.  Then all
# of them replay the traces (default: the three MiniMalloc traces, the
# smallest and so the most sensitive) in turn, RUNS times (default 7), so
# that a change in the machine's load hits every version alike.  Printed:
# each version's median over the runs of ours(handle), ours(addr), TF (ns
# per operation), TF/ours(addr) and the candidate policy's time over
# ours(addr) (cand/addr), per trace; then per version the geometric mean
# of those cand/addr medians over the traces (target P5's reading).
#
# Differences under about 0.1 ns an operation are within run-to-run noise on
# the project's 2-core machine.  Nothing is asserted.  The builds are kept
# (per commit and patch) for the next call; to remove them:
#   rm -rf /tmp/gpupool-ab && git worktree prune
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runs=7
versions=()
traces=()
while [ $# -gt 0 ]; do
	case $1 in
	-n) runs=$2; shift 2 ;;
	--) shift; traces=("$@"); break ;;
	-h|--help) sed -n '4,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) versions+=("$1"); shift ;;
	esac
done
[ ${#versions[@]} -gt 0 ] || { echo "usage: bench/ab.sh [-n RUNS] VERSION... [-- TRACE.csv...]" >&2; exit 2; }
[ ${#traces[@]} -gt 0 ] ||
	traces=("$top"/bench/data/minimalloc_{A,F,K}.csv)

dir=${AB_DIR:-/tmp/gpupool-ab}
mkdir -p "$dir"

# build VERSION -> path of its bfc_bench (progress on stderr)
build() {
	local v=$1 rev=${1%%:*} patch='' key src out
	[[ $v == *:* ]] && patch=${v#*:}
	if [ "$v" != wt ]; then	# a build is kept per commit (and patch)
		rev=$(git -C "$top" rev-parse --verify "$rev^{commit}")
	fi
	key=$(printf '%s' "$rev${patch:+:$patch}" | tr -c 'A-Za-z0-9._-' '_')
	out=$dir/out-$key
	if [ "$v" = wt ]; then
		src=$top
		rm -rf "$out"
	else
		src=$dir/src-$key
		if [ ! -x "$out/bench/bfc_bench" ]; then
			rm -rf "$src" "$out"
			git -C "$top" worktree prune
			git -C "$top" worktree add -q --detach "$src" "$rev" >&2
			if [ -n "$patch" ]; then
				[[ $patch == /* ]] || patch=$top/$patch
				git -C "$src" apply "$patch" >&2
			fi
		fi
	fi
	if [ ! -x "$out/bench/bfc_bench" ]; then
		echo "ab: building $v" >&2
		make -s -C "$src/bench" O="$out" TOP="$src" "$out/bench/bfc_bench" >&2
	fi
	echo "$out/bench/bfc_bench"
}

bins=()
for v in "${versions[@]}"; do
	bins+=("$(build "$v")")
done

res=$dir/results.$$
: > "$res"
for ((r = 1; r <= runs; r++)); do
	for i in "${!versions[@]}"; do
		# Section 1's rows: trace ops/rep reps handle addr TF malloc loop
		# ratio ...; then the candidate's: trace ours cand cand/ours.
		"${bins[$i]}" --no-frag --no-scale --runs 1 "${traces[@]}" |
			awk -v v="${versions[$i]}" '
				/^[0-9]+\. / { sect = $1; cand = 0 }
				/cand\/ours/ { cand = 1; next }
				sect == "1." && cand && NF == 4 && $4 ~ /x$/ {
					print v, "C", $1, $4
				}
				sect == "1." && !cand && NF >= 11 && $9 ~ /x$/ {
					print v, "S", $1, $4, $5, $6, $9
				}' >> "$res"
	done
	echo "ab: run $r of $runs done" >&2
done

w=7
for v in "${versions[@]}"; do [ ${#v} -le "$w" ] || w=${#v}; done
printf "%-${w}s  %-20s %12s %10s %8s %8s %9s\n" version trace 'ours(handle)' 'ours(addr)' TF 'TF/addr' 'cand/addr'
table=$res.table
for v in "${versions[@]}"; do
	for t in "${traces[@]}"; do
		n=$(basename "$t" .csv)
		awk -v v="$v" -v t="$n" '$1 == v && $3 == t' "$res" |
			awk -v v="$v" -v t="$n" -v w="$w" '
				$2 == "S" { s++; h[s] = $4; a[s] = $5; f[s] = $6; q[s] = $7 + 0 }
				$2 == "C" { c++; r[c] = $4 + 0 }
				function med(x, n,   i, j, tmp) {
					for (i = 1; i <= n; i++)
						for (j = i + 1; j <= n; j++)
							if (x[j] < x[i]) { tmp = x[i]; x[i] = x[j]; x[j] = tmp }
					return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
				}
				END {
					if (!s) { printf "%-*s  %-20s (no result)\n", w, v, t; exit }
					printf "%-*s  %-20s %12.2f %10.2f %8.2f %7.2fx", w, v, t,
					       med(h, s), med(a, s), med(f, s), med(q, s)
					if (c)
						printf " %8.3fx", med(r, c)
					printf "\n"
				}'
	done
done | tee "$table"
awk -v w="$w" '$NF ~ /x$/ && NF == 7 { n[$1]++; g[$1] += log($NF + 0) }
	END { for (v in n) printf "%-*s  cand/addr, geometric mean over %d traces: %.3fx\n",
			w, v, n[v], exp(g[v] / n[v]) }' "$table" | sort
rm -f "$res" "$table"
