#!/bin/sh
# A real container on /dev/gpupool, run by the VM harness with gpupool.ko
# loaded (vm/run-vm.sh --load ... --tests $O/tests/containers):
# Debian 12's podman 4.3 and crun, the CDI spec `gpupoolctl cdi` writes
# into /run/cdi, and an image imported from assets/rootfs.tar (busybox and
# the static pool_probe, nothing from a registry).
#
# Checks, one TAP line each, then kselftest's "# Totals:" (vm/vmreport.py):
#   the spec for the real node (valid against the carried schema where
#   GPUPOOL_TOP names the tree); the image imports; with --device
#   gpupool.io/pool=default the container has the node with the host's
#   mode and group, and GPUPOOL_BACKEND=kernel; it allocates, writes and
#   reads back a chunk; the host sees that chunk charged to the
#   container's cgroup in /proc/gpupool; a limit on a --cgroup-parent
#   (gpupoolctl limit set) refuses an allocation over it inside the
#   container with ENOSPC, the probe naming the cgroup ("/.." in the
#   container's own cgroup namespace, the path with --cgroupns host), and
#   the host counts the denials; without --device there is no /dev/gpupool; a user other
#   than root opens the node with the group added (--group-add), not
#   without (cdiVersion 0.5.0 has no additionalGids); podman 4.3 refuses a
#   0.7.0 spec (why 0.5.0 is the default).
#
# What podman needs in this VM (../shared/docs/CLUSTERS-IN-THE-VM.md): the
# cgroup2 mount, a writable /etc/containers, /var/tmp and TMPDIR, vfs
# storage under /tmp, cgroupfs, no events, no network.
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
assets=$here/assets
ctl=${GPUPOOL_CTL:-$here/../../tools/gpupoolctl}
node=/dev/gpupool
img=localhost/gpupool-probe:test
work=/tmp/pod
n=0 pass=0 fail=0 skip=0
t_start=$(cut -d' ' -f1 /proc/uptime)

echo "TAP version 13"
ok() {	# RC DESCRIPTION
	r=$1
	shift
	n=$((n + 1))
	if [ "$r" -eq 0 ]; then
		pass=$((pass + 1))
		echo "ok $n $*"
	else
		fail=$((fail + 1))
		echo "not ok $n $*"
	fi
}
skip() {
	n=$((n + 1))
	skip=$((skip + 1))
	echo "ok $n $1 # SKIP $2"
}
done_() {
	t_end=$(cut -d' ' -f1 /proc/uptime)
	echo "# podman_cdi: $(awk "BEGIN { printf \"%.1f\", $t_end - $t_start }") s"
	echo "1..$n"
	echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
	[ "$fail" -eq 0 ]
	exit $?
}
show() {	# FILE: indented, for the log
	sed 's/^/#   /' "$1"
}

if ! command -v podman > /dev/null || ! command -v crun > /dev/null; then
	skip "podman runs a container with the CDI device" "no podman or crun here (make deps)"
	done_
fi
if [ ! -c $node ] || [ ! -x "$ctl" ] || [ ! -f "$assets/rootfs.tar" ]; then
	ok 1 "setup: $node (module loaded), $ctl, $assets/rootfs.tar"
	done_
fi

# --- what podman needs in the VM ---------------------------------------------
mkdir -p $work/etc-containers $work/tmp
grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts ||
	mount -t cgroup2 none /sys/fs/cgroup
[ -d /etc/containers ] && cp -a /etc/containers/. $work/etc-containers/
mount --bind $work/etc-containers /etc/containers
mount -t tmpfs none /var/tmp
# The host's own spec (a gpupool-tools installed there) would be read too
# and win for the same device: only the one this test writes counts.
[ -d /etc/cdi ] && mount -t tmpfs none /etc/cdi
export TMPDIR=/tmp HOME=/tmp
pod() {
	podman --root $work/root --runroot $work/run --storage-driver vfs \
		--cgroup-manager cgroupfs --events-backend none --runtime crun "$@"
}
prun() {
	pod run --rm --network none "$@"
}
echo "# $(podman --version), $(crun --version | head -n 1), kernel $(uname -r)"

# --- the spec ----------------------------------------------------------------
out=$work/out
"$ctl" cdi --output /run/cdi/gpupool.json > $out 2>&1
r=$?
show $out
show /run/cdi/gpupool.json
ok $r "gpupoolctl cdi --output /run/cdi/gpupool.json"
if [ -n "${GPUPOOL_TOP:-}" ] && /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
	/usr/bin/python3 "$GPUPOOL_TOP/scripts/cdi-check.py" \
		--file /run/cdi/gpupool.json --dev $node > $out 2>&1
	r=$?
	show $out
	ok $r "the spec for the loaded module's node is valid (CDI schema) and matches the node's stat"
else
	skip "the spec for the loaded module's node is valid (CDI schema)" \
		"GPUPOOL_TOP unset or no python3-jsonschema"
fi

# --- the image ---------------------------------------------------------------
pod import "$assets/rootfs.tar" $img > $out 2>&1
r=$?
show $out
ok $r "podman import rootfs.tar (busybox-static and the static pool_probe)"
if [ "$r" -ne 0 ]; then
	done_
fi

# --- the device through CDI --------------------------------------------------
host_mode=$(stat -c %a $node)
host_gid=$(stat -c %g $node)
host_uid=$(stat -c %u $node)
# shellcheck disable=SC2016 # expanded in the container
prun --device gpupool.io/pool=default $img \
	/bin/sh -c 'pool_probe stat; echo "probe: env GPUPOOL_BACKEND=$GPUPOOL_BACKEND"
		[ -r /proc/gpupool ] && echo "probe: /proc/gpupool readable"' > $out 2>&1
r=$?
show $out
grep -q "^probe: ok stat $node type=c mode=0*$host_mode uid=$host_uid gid=$host_gid\$" $out || r=1
ok $r "--device gpupool.io/pool=default: the container has $node, mode $host_mode, uid $host_uid, gid $host_gid as on the host"
grep -q '^probe: env GPUPOOL_BACKEND=kernel$' $out
ok $? "--device gpupool.io/pool=default: GPUPOOL_BACKEND=kernel in the container"
grep -q '^probe: /proc/gpupool readable$' $out
ok $? "the container's /proc has the host's /proc/gpupool"

prun --device gpupool.io/pool=default $img pool_probe alloc 1M > $out 2>&1
r=$?
show $out
grep -q '^probe: ok alloc' $out || r=1
ok $r "in the container: ALLOC 1 MiB, mmap, a pattern written and read back, FREE"

# The host's view: the chunk charged to the container's cgroup.
prun --name holder --device gpupool.io/pool=default $img \
	pool_probe hold 4M > $work/holder.out 2>&1 &
bg=$!
i=0
while [ $i -lt 600 ] && ! grep -q '^probe: held' $work/holder.out; do
	kill -0 $bg 2>/dev/null || break
	sleep 0.2
	i=$((i + 1))
done
pid=$(pod inspect --format '{{.State.Pid}}' holder 2>/dev/null)
cg=
[ -n "$pid" ] && [ "$pid" != 0 ] && cg=$(sed -n 's/^0:://p' /proc/"$pid"/cgroup)
echo "# holder: pid $pid, cgroup $cg"
grep '^Cgroup:' /proc/gpupool | sed 's/^/#   /'
line=$(grep "^Cgroup: .* $cg\$" /proc/gpupool)
# shellcheck disable=SC2086 # its fields
set -- $line
r=1
# Cgroup: <kB> <chunks> <limit kB or -> <denials> <path>
[ -n "$cg" ] && [ "$cg" != / ] && [ "${2:-0}" -ge 4096 ] && [ "${3:-0}" -ge 1 ] && r=0
ok $r "the host's /proc/gpupool charges the held 4 MiB to the container's cgroup ($cg: ${2:-?} kB, ${3:-?} chunks)"
[ -n "$pid" ] && [ "$pid" != 0 ] && kill -TERM "$pid"
wait $bg
r=$?
show $work/holder.out
grep -q '^probe: ok alloc' $work/holder.out || r=1
ok $r "the holder freed its chunk on SIGTERM and the container exited 0"

# A limit on a cgroup parent, set from the host, refuses inside.
parent=/gpupool-ctr
mkdir -p /sys/fs/cgroup$parent
"$ctl" limit set $parent 2M > $out 2>&1
r=$?
show $out
ok $r "gpupoolctl limit set $parent 2M"
prun --cgroup-parent $parent --device gpupool.io/pool=default $img \
	pool_probe alloc 1M > $out 2>&1
r=$?
show $out
ok $r "under --cgroup-parent $parent (limit 2 MiB): 1 MiB is allowed"
prun --cgroup-parent $parent --device gpupool.io/pool=default $img \
	pool_probe alloc 4M > $out 2>&1
r=$?
show $out
grep '^Cgroup:' /proc/gpupool | sed 's/^/#   /'
[ $r -ne 0 ] && grep -q '^probe: errno=ENOSPC gpupool.ko refused 4.0 MiB: cgroup .* would exceed its limit of 2.0 MiB' $out
ok $? "under --cgroup-parent $parent: 4 MiB fails with ENOSPC, the probe names the cgroup and its limit"
# In its own cgroup namespace (the default) the container sees the
# parent as "/.." (outside its namespace); with the host's, by its path.
prun --cgroupns host --cgroup-parent $parent --device gpupool.io/pool=default \
	$img pool_probe alloc 4M > $out 2>&1
r=$?
show $out
[ $r -ne 0 ] && grep -q "^probe: errno=ENOSPC gpupool.ko refused 4.0 MiB: cgroup $parent would exceed" $out
ok $? "with --cgroupns host the refusal names $parent itself"
line=$(grep "^Cgroup: .* $parent\$" /proc/gpupool)
# shellcheck disable=SC2086 # its fields
set -- $line
[ "${4:-}" = 2048 ] && [ "${5:-0}" -ge 2 ]
ok $? "the host's /proc/gpupool: $parent limit ${4:-?} kB, ${5:-?} denials"
"$ctl" limit clear $parent > /dev/null 2>&1

# No --device: no node.
prun $img pool_probe open > $out 2>&1
r=$?
show $out
[ $r -ne 0 ] && grep -q '^probe: errno=ENOENT open' $out
ok $? "without --device the container has no $node (ENOENT)"

# A user other than root: the node's group, given with --group-add
# (cdiVersion 0.5.0 has no additionalGids), is what opens it.
chgrp 4242 $node && chmod 0660 $node &&
	"$ctl" cdi --output /run/cdi/gpupool.json > $out 2>&1
ok $? "gpupoolctl cdi again with the node root:4242 0660"
prun --user 1000:1000 --group-add 4242 --device gpupool.io/pool=default $img \
	pool_probe open > $out 2>&1
r=$?
show $out
ok $r "user 1000 with --group-add 4242 opens the node (0660, group 4242 in the spec)"
prun --user 1000:1000 --device gpupool.io/pool=default $img \
	pool_probe open > $out 2>&1
r=$?
show $out
[ $r -ne 0 ] && grep -q '^probe: errno=EACCES' $out
ok $? "user 1000 without the group cannot open it (EACCES)"

# podman 4.3's CDI library knows versions up to 0.5.0 only.
"$ctl" cdi --cdi-version 0.7.0 --output /run/cdi/gpupool.json > /dev/null 2>&1
prun --device gpupool.io/pool=default $img pool_probe open > $out 2>&1
r=$?
show $out
[ $r -ne 0 ]
ok $? "podman $(podman --version | sed 's/.* //') refuses a cdiVersion 0.7.0 spec (so 0.5.0 is the default)"
"$ctl" cdi --output /run/cdi/gpupool.json > /dev/null 2>&1

pod rm -af > /dev/null 2>&1
rmdir /sys/fs/cgroup$parent 2>/dev/null
done_
