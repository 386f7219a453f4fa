#!/bin/sh
# In-guest test runner.  vm/init runs it inside the chroot into the host's
# root filesystem, with stdout/stderr on the test serial port (ttyS1), so
# everything here is the host's own /bin/sh and coreutils.
#
# Environment (from run.conf, written by vm/run-vm.sh):
#   GPUPOOL_KO         path of gpupool.ko, for the tests (may be empty)
#   VM_SCRATCH         writable scratch directory (host path, 9p)
#   VM_TEST_TIMEOUT    per-program timeout in seconds
#   VM_KMEMLEAK        end | each | off: when to run a kmemleak scan
#   VM_RUN             a command to run as the only "test" (named run)
#   VM_GROUPS          how many groups of tests run, one after another; group
#                      G's settings are in $VM_SCRATCH/group-G.conf (shell
#                      assignments, read for that group's tests only):
#     GPUPOOL_TESTS_DIR  directory of test programs (every executable, sorted)
#     VM_FILTER          comma-separated shell patterns on test names (or empty)
#     VM_EXCLUDE         the same, for tests not to run (or empty)
#     VM_LOAD            1: insmod $GPUPOOL_KO $VM_LOAD_PARAMS before each test
#     and the group's --env variables, exported
#
# Output, a TAP stream the host side (vm/vmreport.py) parses:
#   TAP version 13 / 1..N
#   # gpupool-test: begin NAME       (also written to /dev/kmsg)
#   <the program's own output, as it is>
#   # gpupool-test: end NAME rc=RC secs=S   (also written to /dev/kmsg)
#   ok N NAME | not ok N NAME # reason
#   # gpupool-vm: done
# The host's verdict also weighs the kernel log (splats between markers).

export LC_ALL=C
export GPUPOOL_VM=1
scratch=${VM_SCRATCH:?}
groups=${VM_GROUPS:-1}
tmo=${VM_TEST_TIMEOUT:-300}
leak=${VM_KMEMLEAK:-end}
kml=/sys/kernel/debug/kmemleak

kmsg() { echo "$*" > /dev/kmsg; }
uptime_s() { read -r up _ < /proc/uptime; echo "$up"; }

read -r kver < /proc/sys/kernel/osrelease
echo "# gpupool-vm: runner start uptime=$(uptime_s) kernel=$kver"
kmsg "gpupool-vm: runner start"

# Does name $1 match one of the comma-separated shell patterns $2?
matches() {
	m=1
	old_ifs=$IFS; IFS=,
	set -f		# the patterns are for case, not for files
	for pat in $2; do
		# shellcheck disable=SC2254
		case $1 in $pat) m=0 ;; esac
	done
	set +f
	IFS=$old_ifs
	return $m
}

# The names of the tests group $1 picks, on stdout (what it skips and
# why, on stderr: the same serial port).
pick() {
	# shellcheck disable=SC1090 # written by run-vm.sh
	. "$scratch/group-$1.conf"
	dir=${GPUPOOL_TESTS_DIR:-}
	if [ -n "${VM_RUN:-}" ]; then
		echo run
	elif [ -d "$dir" ]; then
		for f in "$dir"/*; do
			if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
			n=${f##*/}
			case $n in *[!A-Za-z0-9._+-]*) echo "# gpupool-vm: skipping '$n': odd characters in the name" >&2; continue ;; esac
			if [ -n "${VM_FILTER:-}" ] && ! matches "$n" "$VM_FILTER"; then
				continue
			fi
			if [ -n "${VM_EXCLUDE:-}" ] && matches "$n" "$VM_EXCLUDE"; then
				continue
			fi
			echo "$n"
		done
	else
		echo "# gpupool-vm: tests directory $dir not found" >&2
	fi
}

# Pick every group's tests; a name is reported once (the judge keys
# results by name), so a later group's test of an earlier one's name is
# left out, and says so.
names=
g=1
while [ "$g" -le "$groups" ]; do
	picked=
	for n in $(pick "$g"); do
		case " $names " in
		*" $n "*) echo "# gpupool-vm: skipping '$n' of group $g: a test of that name runs earlier" ;;
		*) names="$names $n" picked="$picked $n" ;;
		esac
	done
	eval "names_$g=\$picked"
	g=$((g + 1))
done
# shellcheck disable=SC2086 # names are words (checked above)
set -- $names
echo "TAP version 13"
echo "1..$#"
echo "# gpupool-vm: plan$names"

# Centiseconds of uptime, with shell builtins only: under TCG every exec of a
# host binary over 9p costs ~0.1 s.
now_cs() {
	read -r up _ < /proc/uptime
	echo $(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}

# kmemleak: a scan records each object's checksum, and only a later scan
# reports an unreferenced object whose contents did not change in between
# and that was 5 s old when that later scan began (mm/kmemleak.c).  So two
# scans, the second starting at least 5 s after the first, which began
# after the tests had ended: every object they left is old enough by then
# (the first scan takes 5-8 s on the debug kernel under TCG, so there is
# seldom anything to wait for).  No scan at the start: with nothing scanned
# before it, it could report nothing, so its "clear" forgot nothing; a
# leak from boot is reported at the end either way.
kmemleak_check() {	# $1: label for the report file
	[ -w $kml ] || return 0
	t0=$(now_cs)
	echo scan > $kml 2>/dev/null
	wait_cs=$((t0 + 500 - $(now_cs)))
	[ "$wait_cs" -gt 0 ] && sleep "$((wait_cs / 100)).$((wait_cs % 100 / 10))$((wait_cs % 10))"
	echo scan > $kml 2>/dev/null
	cat $kml > "$scratch/kmemleak-$1.txt" 2>/dev/null
	if [ -s "$scratch/kmemleak-$1.txt" ]; then
		echo "# gpupool-vm: kmemleak ($1):"
		sed 's/^/# /' "$scratch/kmemleak-$1.txt"
	fi
	echo clear > $kml 2>/dev/null
}

module_loaded() {
	while read -r m _; do
		[ "$m" = gpupool ] && return 0
	done < /proc/modules
	return 1
}

# Test $1 of the current group, numbered $2.
run_one() {
	n=$1 i=$2
	kmsg "gpupool-test: begin $n"
	echo "# gpupool-test: begin $n"
	t0=$(now_cs)
	# Straight to the serial tty: line-buffered stdio (so output printed in
	# a kselftest child before its _exit() is not lost), no extra processes.
	rc=0
	if [ "${VM_LOAD:-0}" = 1 ] && ! module_loaded; then
		# shellcheck disable=SC2086 # parameters are words
		insmod "$GPUPOOL_KO" ${VM_LOAD_PARAMS:-} || rc=$?
		[ $rc = 0 ] || echo "# gpupool-vm: insmod $GPUPOOL_KO ${VM_LOAD_PARAMS:-} failed"
	fi
	if [ $rc != 0 ]; then
		:
	elif [ -n "${VM_RUN:-}" ]; then
		# One command instead of test programs: its exit status is the
		# verdict, reported the way a kselftest program would.
		(cd "${VM_REPO:-/tmp}" && exec timeout -k 10 "$tmo" sh -c "$VM_RUN") < /dev/null
		rc=$?
		if [ $rc = 0 ]; then
			echo "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
		else
			echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
		fi
	else
		(cd /tmp && exec timeout -k 10 "$tmo" "$dir/$n") < /dev/null
		rc=$?
	fi
	t1=$(now_cs)
	secs=$(( (t1 - t0) / 100 )).$(( (t1 - t0) % 100 / 10 ))$(( (t1 - t0) % 10 ))
	[ "$rc" = 124 ] && echo "# gpupool-vm: $n timed out after ${tmo}s"
	if module_loaded; then
		echo "# gpupool-vm: note: $n left gpupool loaded; unloading"
		rmmod gpupool
	fi
	kmsg "gpupool-test: end $n rc=$rc"
	echo "# gpupool-test: end $n rc=$rc secs=$secs"
	[ "$leak" = each ] && kmemleak_check "$n"
	case $rc in
	0) echo "ok $i $n" ;;
	4) echo "ok $i $n # SKIP" ;;
	*) echo "not ok $i $n # exit status $rc" ;;
	esac
}

# Each group in a subshell of its own: its settings and --env variables
# reach its tests only.
i=0
g=1
while [ "$g" -le "$groups" ]; do
	eval "picked=\$names_$g"
	(
		# shellcheck disable=SC1090 # written by run-vm.sh
		. "$scratch/group-$g.conf"
		dir=${GPUPOOL_TESTS_DIR:-}
		k=$i
		for n in $picked; do
			k=$((k + 1))
			run_one "$n" "$k"
		done
	)
	# shellcheck disable=SC2086 # names are words
	set -- $picked
	i=$((i + $#))
	g=$((g + 1))
done

[ "$leak" = end ] && kmemleak_check end
dmesg > "$scratch/dmesg.txt" 2>/dev/null
kmsg "gpupool-vm: done"
echo "# gpupool-vm: done uptime=$(uptime_s)"
