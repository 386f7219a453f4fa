#!/bin/sh
# slurm_spank: the gpupool SPANK plugin (slurm/gpupool_spank.c) in a real
# Slurm 22.05 (Debian's munge, slurmctld, slurmd, srun) on one node inside
# the test VM, with gpupool.ko loaded (vm/run-vm.sh --load pool_size=256M):
# the setup of /work/shared/docs/CLUSTERS-IN-THE-VM.md, everything under
# /tmp, plugstack.conf loading the plugin from the build directory.
#
# Installed by tests/slurm/Makefile as $(O)/tests/slurm/slurm_spank, beside
# bin/pool_take; the plugin is $(O)/slurm/gpupool.so and gpupoolctl
# $(O)/tools/gpupoolctl (GPUPOOL_SLURM_PLUGIN, GPUPOOL_CTL override).
# Output: TAP, ending with kselftest's "# Totals:" line.  Needs root and a
# VM: outside one (GPUPOOL_VM unset) every case is skipped.
# shellcheck disable=SC2016 # $SLURM_JOB_ID is the job's, expanded in it
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)
plugin=${GPUPOOL_SLURM_PLUGIN:-$build/slurm/gpupool.so}
ctl=${GPUPOOL_CTL:-$build/tools/gpupoolctl}
take=$here/bin/pool_take
iptake=$here/bin/ip_take
interposer=${GPUPOOL_INTERPOSER:-$build/userlib/libgpupool-interpose.so}
W=/tmp/slurm-test
export SLURM_CONF=$W/slurm.conf

n=0 pass=0 fail=0 skip=0 xfail=0
ok()   { n=$((n + 1)); pass=$((pass + 1)); echo "ok $n $*"; }
nok()  { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $*"; }
skp()  { n=$((n + 1)); skip=$((skip + 1)); echo "ok $n # SKIP $*"; }
check() {	# check NAME COMMAND...: ok when COMMAND succeeds
	name=$1; shift
	if "$@"; then ok "$name"; else nok "$name"; fi
}
totals() {
	echo "# Totals: pass:$pass fail:$fail xfail:$xfail xpass:0 skip:$skip error:0"
	[ "$fail" -eq 0 ]
	exit $?
}
show() { sed 's/^/# /' "$@"; }
NCASES=17

echo "TAP version 13"
echo "1..$NCASES"
why=
if [ -z "${GPUPOOL_VM:-}" ]; then why="not in the test VM (it mounts cgroup2 and starts daemons)"
elif [ "$(id -u)" != 0 ]; then why="not root"
elif [ ! -e /dev/gpupool ]; then why="gpupool.ko not loaded (run-vm.sh --load pool_size=256M)"
elif [ ! -x /usr/sbin/slurmd ] || [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/munged ]; then
	why="slurmd, slurmctld or munge not installed (make deps)"
elif [ ! -f "$plugin" ]; then why="$plugin not built (libslurm-dev missing?)"
elif [ ! -x "$take" ] || [ ! -x "$ctl" ] || [ ! -x "$iptake" ]; then why="$take, $iptake or $ctl not built"
fi
if [ -n "$why" ]; then
	i=0
	while [ $i -lt $NCASES ]; do skp "$why"; i=$((i + 1)); done
	totals
fi

# --- the node: cgroup2, loopback, munge, slurmctld, slurmd ------------------
t0=$(date +%s)
mkdir -p $W/state $W/spool /run/munge $W/munge
grep -q '^cgroup2 /sys/fs/cgroup ' /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/system.slice
for c in +cpuset +cpu +memory +pids; do
	echo $c > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	echo $c > /sys/fs/cgroup/system.slice/cgroup.subtree_control 2>/dev/null
done
ip link set lo up
ip addr add 127.0.0.2/8 dev lo 2>/dev/null
hostname localhost

dd if=/dev/urandom of=$W/munge/munge.key bs=1024 count=1 2>/dev/null
chmod 0400 $W/munge/munge.key
munged --force --socket=/run/munge/munge.socket.2 \
	--key-file=$W/munge/munge.key --pid-file=$W/munge/munged.pid \
	--seed-file=$W/munge/seed --log-file=$W/munge/munged.log

cat > $W/slurm.conf <<EOF
ClusterName=gptest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
SlurmdDebug=verbose
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
PlugStackConfig=$W/plugstack.conf
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
cat > $W/cgroup.conf <<EOF
CgroupPlugin=cgroup/v2
IgnoreSystemd=yes
CgroupAutomount=yes
EOF
echo "required $plugin gpupoolctl=$ctl interposer=$interposer" > $W/plugstack.conf
# ip_take's jobs find the CUDA driver double (srun passes the environment).
export LD_LIBRARY_PATH=$build/tests/cudadrv_double

slurmctld -i
slurmd
up=0
for _ in $(seq 60); do
	if sinfo -h -o %T 2>/dev/null | grep -q idle; then up=1; break; fi
	sleep 1
done
echo "# daemons up after $(( $(date +%s) - t0 )) s"
if [ $up = 0 ]; then
	echo "# the node never became idle:"
	sinfo 2>&1 | show
	tail -n 30 $W/slurmctld.log $W/slurmd.log 2>&1 | show
	i=0
	while [ $i -lt $NCASES ]; do nok "slurm node up"; i=$((i + 1)); done
	totals
fi

jobs_known() { scontrol -o show jobs 2>/dev/null | grep -c '^JobId='; }
# the Cgroup line of /proc/gpupool for a cgroup path ending in $1
cg_line() { grep "^Cgroup: .*/$1\$" /proc/gpupool; }

# --- 1. within its share ------------------------------------------------------
srun -N1 -n2 --gpupool=64M sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 32M' \
	> $W/o1 2>&1
rc=$?
show $W/o1
check "a job of two tasks within its share (--gpupool=64M, 32M each) allocates" \
	[ "$(grep -c "^pool_take: ok 33554432 in /system.slice/.*_slurmstepd.scope/job_[0-9]*/" $W/o1)" = 2 ]
[ $rc -eq 0 ] || echo "# srun: exit status $rc"

# --- 2. above its share: ENOSPC naming the job's cgroup ------------------------
srun -N1 -n1 --gpupool=64M sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 96M' \
	> $W/o2 2>&1
rc=$?
show $W/o2
j=$(sed -n 's/^JOB=//p' $W/o2)
check "a job above its share (--gpupool=64M, 96M) gets ENOSPC naming its job_$j cgroup, limit 64M" \
	grep -Eq "^pool_take: ENOSPC after [0-9]+: limit 67108864 use [0-9]+ of /system\.slice/[a-z]*_?slurmstepd\.scope/job_${j:-X}\$" $W/o2
check "  and srun exits non-zero (status $rc)" [ $rc -ne 0 ]

# --- 3. two jobs at once, 64M each of the 256M pool ---------------------------
srun -N1 -n1 --gpupool=64M sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 64M 20' \
	> $W/o3a 2>&1 &
pid_a=$!
srun -N1 -n1 --gpupool=64M sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 64M 20' \
	> $W/o3b 2>&1 &
pid_b=$!
both=0
for _ in $(seq 60); do
	if grep -q '^pool_take: ok' $W/o3a 2>/dev/null && grep -q '^pool_take: ok' $W/o3b 2>/dev/null; then
		both=1; break
	fi
	sleep 1
done
ja=$(sed -n 's/^JOB=//p' $W/o3a) jb=$(sed -n 's/^JOB=//p' $W/o3b)
grep Cgroup /proc/gpupool > $W/cg3
show $W/cg3
check "two jobs of 64M each allocate at once (jobs $ja and $jb)" [ $both = 1 ]
check "  /proc/gpupool shows both job cgroups, each 65536 kB with limit 65536 kB" \
	sh -c "grep -Eq '^Cgroup: 65536 [0-9]+ 65536 0 /.*/job_${ja:-X}\$' $W/cg3 &&
	       grep -Eq '^Cgroup: 65536 [0-9]+ 65536 0 /.*/job_${jb:-X}\$' $W/cg3"
wait "$pid_a"; rca=$?
wait "$pid_b"; rcb=$?
show $W/o3a $W/o3b
check "  both jobs end well (srun $rca, $rcb)" [ $((rca + rcb)) -eq 0 ]

# --- 4. a cancelled job: its limit and charges go ------------------------------
srun -N1 -n1 --gpupool=64M sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 32M 600' \
	> $W/o4 2>&1 &
pid4=$!
for _ in $(seq 60); do
	grep -q '^pool_take: ok' $W/o4 2>/dev/null && break
	sleep 1
done
j=$(sed -n 's/^JOB=//p' $W/o4)
before=$(cg_line "job_${j:-X}")
echo "# before scancel: ${before:-no Cgroup line}"
scancel "${j:-0}"
wait $pid4
gone=0 after=
for _ in $(seq 30); do
	after=$(cg_line "job_${j:-X}")
	if [ -z "$after" ]; then gone=1; break; fi
	case $after in "Cgroup: 0 0 "*) ;; *) sleep 1; continue ;; esac
	ls -d /sys/fs/cgroup/system.slice/*slurmstepd.scope/job_"${j:-X}" \
		> /dev/null 2>&1 || break
	sleep 1
done
grep Cgroup /proc/gpupool | show
dirs=$(find /sys/fs/cgroup/system.slice -maxdepth 2 -name 'job_*' 2>/dev/null)
echo "# job cgroups now: $(echo "$dirs" | tr '\n' ' ')"
check "a cancelled job (job $j) held 32M under its 64M limit" \
	sh -c "echo '$before' | grep -Eq '^Cgroup: 32768 [0-9]+ 65536 0 '"
check "  after scancel its charges are gone and Slurm removed job_$j" \
	sh -c "{ [ $gone = 1 ] || echo '$after' | grep -q '^Cgroup: 0 0 '; } &&
	       ! echo '$dirs' | grep -q '/job_$j\$'"
# The limit goes with the cgroup (the module prunes removed cgroups' limits).
if [ $gone = 1 ]; then
	ok "  after scancel no Cgroup line names job_$j (limit and charges gone)"
else
	nok "  after scancel no Cgroup line names job_$j ($after)"
fi

# --- 5. bad values: refused at submission, no job ------------------------------
before=$(jobs_known)
bad_ok=1
for v in '' -1 1Z 0 99999T; do
	srun -N1 -n1 --gpupool="$v" true > $W/o5 2>&1
	rc=$?
	show $W/o5
	if [ $rc -eq 0 ] || ! grep -q 'gpupool' $W/o5; then
		echo "# --gpupool=$v: srun exit $rc, or no message naming gpupool"
		bad_ok=0
	fi
done
after=$(jobs_known)
check "--gpupool= '' -1 1Z 0 99999T: srun refuses each with a message" [ $bad_ok = 1 ]
check "  and no job was made ($before jobs known before, $after after)" [ "$before" = "$after" ]

# --- 6. sbatch: the batch step gets the share too ----------------------------
sj=$(sbatch --parsable --gpupool=64M -o $W/o8 \
	--wrap "echo JOB=\$SLURM_JOB_ID; $take 96M" 2>&1)
echo "# sbatch: $sj"
for _ in $(seq 60); do
	grep -q '^pool_take:' $W/o8 2>/dev/null && break
	sleep 1
done
show $W/o8 2>/dev/null
check "sbatch --gpupool=64M: the batch job (job $sj) gets ENOSPC at 64M in job_$sj" \
	grep -Eq "^pool_take: ENOSPC after [0-9]+: limit 67108864 use [0-9]+ of /system\.slice/.*slurmstepd\.scope/job_$sj\$" $W/o8

# --- 7. --gpupool-interpose: a framework's cudaHostAlloc within the share ------
srun -N1 -n1 --gpupool=8M --gpupool-interpose sh -c \
	'echo "PRELOAD=$LD_PRELOAD"; exec '"$iptake" > $W/o9 2>&1
rc=$?
show $W/o9
check "--gpupool=8M --gpupool-interpose: the job's cudaHostAlloc is served by the pool and the request past 8M fails (strict, the default)" \
	grep -Eq '^ip_take: mode strict served [12] last 2 fell_back 0 refused 1$' $W/o9
check "  the task's LD_PRELOAD names the interposer" \
	grep -q "^PRELOAD=.*libgpupool-interpose.so" $W/o9
srun -N1 -n1 --gpupool=8M --gpupool-interpose=fallback "$iptake" > $W/o10 2>&1
show $W/o10
check "--gpupool-interpose=fallback: past the share, CUDA serves it" \
	grep -Eq '^ip_take: mode fallback served [12] last 0 fell_back 1 refused 0$' $W/o10
srun -N1 -n1 --gpupool=8M "$iptake" > $W/o11 2>&1
srun -N1 -n1 --gpupool-interpose=stict true > $W/o12 2>&1
rc=$?
show $W/o11 $W/o12
check "without --gpupool-interpose the job's CUDA is untouched; a bad mode is refused" \
	sh -c "grep -q '^ip_take: no interposer, 10 requests served by CUDA' $W/o11 &&
	       [ $rc -ne 0 ] && grep -q 'gpupool-interpose=stict' $W/o12"

# --- 8. plugstack.conf: default= and max= ---------------------------------------
echo "required $plugin gpupoolctl=$ctl default=16M max=128M" > $W/plugstack.conf
srun -N1 -n1 sh -c 'echo JOB=$SLURM_JOB_ID; exec '"$take"' 32M' > $W/o6 2>&1
show $W/o6
srun -N1 -n1 --gpupool=129M true > $W/o7 2>&1
rc=$?
show $W/o7
check "default=16M applies without --gpupool, max=128M refuses --gpupool=129M" \
	sh -c "grep -Eq '^pool_take: ENOSPC after [0-9]+: limit 16777216 ' $W/o6 &&
	       [ $rc -ne 0 ] && grep -q 'max=128M' $W/o7"

echo "# slurmd's log, the plugin's lines:"
grep -i gpupool $W/slurmd.log | tail -n 20 | show
echo "# job cgroups at the end: $(find /sys/fs/cgroup/system.slice -maxdepth 2 -name 'job_*' | tr '\n' ' ')"
grep Cgroup /proc/gpupool | show
grep -iE 'epilog|spank|error' $W/slurmd.log | tail -n 30 | show
# the logs, for whoever reads the run (build/vm/<name>/scratch/slurm/)
if [ -n "${VM_SCRATCH:-}" ]; then
	mkdir -p "$VM_SCRATCH/slurm"
	cp $W/*.log $W/o* $W/*.conf "$VM_SCRATCH/slurm/" 2>/dev/null
fi
kill "$(cat $W/slurmd.pid)" "$(cat $W/slurmctld.pid)" "$(cat $W/munge/munged.pid)" 2>/dev/null
sleep 1
totals
