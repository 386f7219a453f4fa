#!/bin/sh
# In-guest test runner.  vm/init runs it inside the chroot into the host's
# root filesystem, with stdout/stderr on the test serial port (ttyS1), so
# everything here is the host's own /bin/sh and coreutils.
#
# Environment (from run.conf, written by vm/run-vm.sh):
#   GPUPOOL_TESTS_DIR  directory of test programs (every executable, sorted)
#   GPUPOOL_KO         path of gpupool.ko, for the tests (may be empty)
#   VM_SCRATCH         writable scratch directory (host path, 9p)
#   VM_FILTER          comma-separated shell patterns on test names (or empty)
#   VM_EXCLUDE         the same, for tests not to run (or empty)
#   VM_TEST_TIMEOUT    per-program timeout in seconds
#   VM_KMEMLEAK        end | each | off: when to run a kmemleak scan
#   VM_LOAD            1: insmod $GPUPOOL_KO $VM_LOAD_PARAMS before each test
#   VM_RUN             a command to run as the only "test" (named run)
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
dir=${GPUPOOL_TESTS_DIR:?}
scratch=${VM_SCRATCH:?}
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

# Pick the tests.
names=
if [ -n "${VM_RUN:-}" ]; then
	names=" run"
elif [ -d "$dir" ]; then
	for f in "$dir"/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
		n=${f##*/}
		case $n in *[!A-Za-z0-9._+-]*) echo "# gpupool-vm: skipping '$n': odd characters in the name"; continue ;; esac
		if [ -n "${VM_FILTER:-}" ] && ! matches "$n" "$VM_FILTER"; then
			continue
		fi
		if [ -n "${VM_EXCLUDE:-}" ] && matches "$n" "$VM_EXCLUDE"; then
			continue
		fi
		names="$names $n"
	done
else
	echo "# gpupool-vm: tests directory $dir not found"
fi
# shellcheck disable=SC2086 # names are words (checked above)
set -- $names
echo "TAP version 13"
echo "1..$#"
echo "# gpupool-vm: plan$names"

# kmemleak: reports only objects older than 5 s, and a second scan confirms
# what the first found.
kmemleak_check() {	# $1: label for the report file
	[ -w $kml ] || return 0
	sleep 5
	echo scan > $kml 2>/dev/null
	echo scan > $kml 2>/dev/null
	cat $kml > "$scratch/kmemleak-$1.txt" 2>/dev/null
	if [ -s "$scratch/kmemleak-$1.txt" ]; then
		echo "# gpupool-vm: kmemleak ($1):"
		sed 's/^/# /' "$scratch/kmemleak-$1.txt"
	fi
	echo clear > $kml 2>/dev/null
}
if [ -w $kml ] && [ "$leak" != off ]; then
	# Forget boot-time objects so reports concern the tests only.
	echo scan > $kml 2>/dev/null
	echo clear > $kml 2>/dev/null
fi

# Centiseconds of uptime, with shell builtins only: under TCG every exec of a
# host binary over 9p costs ~0.1 s.
now_cs() {
	read -r up _ < /proc/uptime
	echo $(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}
module_loaded() {
	while read -r m _; do
		[ "$m" = gpupool ] && return 0
	done < /proc/modules
	return 1
}

i=0
for n in "$@"; do
	i=$((i + 1))
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
done

[ "$leak" = end ] && kmemleak_check end
dmesg > "$scratch/dmesg.txt" 2>/dev/null
kmsg "gpupool-vm: done"
echo "# gpupool-vm: done uptime=$(uptime_s)"
