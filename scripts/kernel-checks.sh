#!/bin/sh
# The kernel's own static checkers on the module, as kernel engineers run
# them before they read one: sparse (`make C=2`) and Coccinelle (`make
# coccicheck MODE=report`), against the 6.12 headers (vm/kernels.sh's).
#
#   sparse      on every source of kmod/ and core/ in the module's build
#               for that kernel ($O/kmod/<rel>, made by `make modules-all`):
#               its objects are up to date, so only the checker runs, and
#               gpupool.ko is left alone.  Any warning fails: what sparse
#               cannot see is told in sparse's own annotations (__acquires,
#               __releases, __release, ...), never silenced here.
#   coccicheck  the kernel's coccicheck script and semantic patches, taken
#               from Debian's linux-source-6.1 (scripts/ksft-headers.sh
#               extracts them beside checkpatch: the headers packages have
#               none, and 6.1's are those Debian 12's spatch was released
#               with), run by the 6.12 headers' own `make coccicheck`
#               (its $(BASH) pointed at this script, which runs 6.1's
#               script with its srctree) on a copy of the module's
#               sources.  A report fails unless the line it names, or the
#               line above, carries a comment "coccicheck: <why>".
#
# Both read only the module's sources, the checkers and the headers: a
# result is kept in $GPUPOOL_CACHE/kernel-checks/ under a hash of them all,
# and a second run on the same sources prints it again (coccicheck spends
# about 110 CPU seconds, sparse about 25).
#
# Usage: scripts/kernel-checks.sh      Writes build/results/kernel-checks.counts
#                                      (two tests: sparse, coccicheck).
set -u

# Called by the kernel's `make coccicheck` as $(BASH) with the headers'
# (missing) scripts/coccicheck: run 6.1's with its own tree.
if [ -n "${GP_COCCICHECK:-}" ]; then
	srctree=$GP_COCCICHECK exec bash "$GP_COCCICHECK/scripts/coccicheck"
fi

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
ksft=$O/ksft
mkdir -p "$results"
pass=0 fail=0

finish() {
	echo "pass=$pass fail=$fail skip=0" > "$results/kernel-checks.counts"
	[ "$fail" -eq 0 ]
	exit
}

give_up() {
	echo "kernel-checks: $*"
	fail=2
	finish
}

rel=$("$top/vm/kernels.sh" 2>/dev/null | grep '^6\.12\.' | tail -n 1)
[ -n "$rel" ] || give_up "no 6.12 kernel with headers (make deps installs it)"
kdir=/lib/modules/$rel/build
built=$O/kmod/$rel
[ -f "$built/gpupool.ko" ] || give_up "$built/gpupool.ko is missing (make modules-all)"
# (Files the tree no longer has may linger there: kbuild never reads them.)
stale=$(cd "$top" && find kmod core include/uapi Kbuild -type f | while read -r f; do
	cmp -s "$f" "$built/$f" || echo "$f"
done)
[ -z "$stale" ] || give_up "$built is not the tree's (" $stale "): build the module again (make modules-all)"
[ -f "$ksft/scripts/coccicheck" ] || give_up "$ksft/scripts/coccicheck is missing (scripts/ksft-headers.sh)"
command -v sparse >/dev/null && command -v spatch >/dev/null ||
	give_up "sparse or spatch is missing (make deps installs sparse and coccinelle)"

# The sources as the module builds them, for coccicheck and the key.
work=$O/kernel-checks/$rel
src=$work/src
rm -rf "$src"
mkdir -p "$src/include"
(cd "$top" && cp -a kmod core Kbuild VERSION "$src/" && cp -a include/uapi "$src/include/")
key=$( {
	cd "$src" && find . -type f | LC_ALL=C sort | xargs sha256sum
	cd "$ksft/scripts" && find coccicheck coccinelle -type f | LC_ALL=C sort | xargs sha256sum
	echo "$rel"; sparse --version; spatch --version | head -n 1
	sha256sum "$top/scripts/kernel-checks.sh"
} | sha256sum | cut -c1-16)
cache=${GPUPOOL_CACHE:-/var/cache/gpupool}/kernel-checks/$key
mkdir -p "$work"

# sparse: every object's checker run; its complaints (paths as the tree's).
run_sparse() {
	objs=$(cd "$top" && ls kmod/*.c core/*.c | sed 's/\.c$/.o/')
	# shellcheck disable=SC2086 # one word per object
	env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u O \
		make -C "$kdir" M="$built" C=2 $objs > "$work/sparse.log" 2>&1 ||
		echo "sparse: make failed (log: $work/sparse.log)"
	grep -E ': (warning|error): ' "$work/sparse.log" | sed "s|^$built/||"
	grep -c '^  CHECK ' "$work/sparse.log" | sed 's/^/checked /'
}

# coccicheck's reports (paths as the tree's), or "coccicheck failed".
run_cocci() {
	GP_COCCICHECK=$ksft env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u O \
		make -C "$kdir" M="$src" coccicheck MODE=report J=1 \
		BASH="$top/scripts/kernel-checks.sh" > "$work/cocci.log" 2>&1 ||
		echo "coccicheck failed (log: $work/cocci.log)"
	grep "^$src/" "$work/cocci.log" | sed "s|^$src/||"
}

if [ -f "$cache/done" ]; then
	echo "kernel-checks: sources and checkers as in a run before: its results ($cache)"
else
	t0=$(date +%s)
	run_sparse > "$work/sparse.out"
	t1=$(date +%s)
	run_cocci > "$work/cocci.out"
	t2=$(date +%s)
	echo "kernel-checks: sparse $((t1 - t0)) s, coccicheck $((t2 - t1)) s"
	mkdir -p "$cache" && cp "$work/sparse.out" "$work/cocci.out" "$cache/" &&
		touch "$cache/done"
	cache=$work
fi

# sparse: clean, every source checked.
n=$(sed -n 's/^checked //p' "$cache/sparse.out")
bad=$(grep -v '^checked ' "$cache/sparse.out")
if [ -z "$bad" ] && [ "${n:-0}" -gt 0 ]; then
	pass=$((pass + 1))
	echo "sparse (C=2, $rel): clean, $n files"
else
	fail=$((fail + 1))
	echo "$bad"
	echo "sparse (C=2, $rel): the complaints above (${n:-0} files checked)"
fi

# coccicheck: each report annotated at its line, or a failure.
nrep=0 nbad=0
while IFS= read -r r; do
	case $r in
	"coccicheck failed"*) nbad=$((nbad + 1)); echo "$r"; continue ;;
	esac
	nrep=$((nrep + 1))
	f=${r%%:*} l=${r#*:}
	l=${l%%:*}
	why=$(sed -n "$((l > 1 ? l - 1 : 1)),${l}p" "$top/$f" 2>/dev/null |
	      sed -n 's/.*coccicheck: \(.*[^ ]\) *\*\/.*/\1/p' | head -n 1)
	if [ -n "$why" ]; then
		echo "$r (annotated: $why)"
	else
		nbad=$((nbad + 1))
		echo "$r (not annotated: fix it, or say why at that line with \"coccicheck: <why>\")"
	fi
done < "$cache/cocci.out"
if [ "$nbad" -eq 0 ]; then
	pass=$((pass + 1))
	echo "coccicheck (MODE=report, 6.1's semantic patches, $rel): clean but for $nrep report(s) annotated in the code"
else
	fail=$((fail + 1))
	echo "coccicheck (MODE=report, 6.1's semantic patches, $rel): $nbad of the above to fix"
fi
finish
