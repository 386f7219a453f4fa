#!/bin/sh
# `make demo`: build what it runs (the module for the kernel it loads it
# into, the library, gpupoolctl, the examples; not the tests), load
# gpupool.ko and run the data-loader examples against it (C:
# examples/loader, Python: python/examples/loader.py): worker processes
# write batches straight into pinned pool chunks, the consumer verifies
# each in place; then `gpupoolctl stat` and `map`.  Then the same loaders
# on the user backend (no module), so the output shows both, and the C
# loader once more reading its batches from a file of records with
# gp_read (O_DIRECT into the pinned chunks, io_uring fixed buffers where
# the kernel takes them; DEMO_FILE_MIB, default 256).
#
# The module goes into the running kernel when that kernel has headers and
# lets us load modules (root, modules not disabled); otherwise (a container,
# a sandbox, CI) into Debian's kernel booted in qemu by vm/run-vm.sh.
#
# Environment: DEMO_POOL_SIZE (default 256M), DEMO_ARGS (loader arguments,
# default --workers 2 --batches 64 --batch-size 16M).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
pool=${DEMO_POOL_SIZE:-256M}
args=${DEMO_ARGS:---workers 2 --batches 64 --batch-size 16M}
running=$(uname -r)

banner() { printf '\n==== %s ====\n' "$*"; }

# The module for kernel $1, the library, the tools and the examples.
build() {
	make -C "$top" --no-print-directory -j"$(nproc)" O="$O" KVER="$1" module tools
}

can_load_here() {
	[ "$(id -u)" -eq 0 ] || return 1
	[ -e "/lib/modules/$running/build/Makefile" ] || return 1
	[ "$(cat /proc/sys/kernel/modules_disabled 2>/dev/null || echo 1)" = 0 ] || return 1
	[ ! -e /proc/gpupool ] || return 1	# one is loaded already: leave it
	return 0
}

py="env GPUPOOL_LIBRARY=$O/userlib/libgpupool.so.1 GPUPOOL_CTL=$O/tools/gpupoolctl /usr/bin/python3 $top/python/examples/loader.py"
# In the VM the console is a serial line logged to a file: no progress line.
vmargs="$args --quiet"
workload="echo '\$ examples/loader $vmargs' && GPUPOOL_CTL=$O/tools/gpupoolctl $O/examples/loader $vmargs && echo && echo '\$ python/examples/loader.py $vmargs' && $py $vmargs && echo && echo '\$ gpupoolctl map' && $O/tools/gpupoolctl map"

if can_load_here; then
	banner "building for the running kernel $running"
	build "$running"
	banner "loading gpupool.ko pool_size=$pool into $running"
	insmod "$O/kmod/$running/gpupool.ko" pool_size="$pool"
	dmesg | grep 'gpupool' | tail -n 3
	banner "kernel backend"
	status=0
	GPUPOOL_BACKEND=kernel sh -c "$workload" || status=$?
	rmmod gpupool
else
	# The first is Debian 12's own 6.1; the demo needs no other (the
	# 6.12 kernel that make check also tests may be missing: no message).
	kver=$("$top/vm/kernels.sh" 2>/dev/null | head -n 1)
	[ -n "$kver" ] || { echo "demo: no kernel to boot in the VM; run: make deps-demo" >&2; exit 1; }
	banner "this kernel ($running) cannot load modules here: booting Debian's $kver in qemu"
	build "$kver"
	banner "kernel backend, in the VM (gpupool.ko pool_size=$pool)"
	status=0
	"$top/vm/run-vm.sh" --kernel "$kver" --name demo --build-dir "$O" \
		--ko "$O/kmod/$kver/gpupool.ko" --load "pool_size=$pool" \
		--env GPUPOOL_BACKEND=kernel \
		--run "dmesg | grep 'gpupool:' ; echo; $workload" || status=$?
fi

banner "user backend, on this machine (no module: memfd + mlock in the process)"
echo "\$ examples/loader $args"
GPUPOOL_BACKEND=user "$O/examples/loader" $args || status=1
echo
echo "\$ python/examples/loader.py $args"
# shellcheck disable=SC2086
GPUPOOL_BACKEND=user $py $args || status=1

echo
records=$O/demo-records.dat
mib=${DEMO_FILE_MIB:-256}
if [ "$(stat -c %s "$records" 2>/dev/null || echo 0)" != $((mib << 20)) ]; then
	head -c "$((mib << 20))" /dev/urandom > "$records"
fi
echo "\$ examples/loader $args --file $records   # $mib MiB of records, read with gp_read"
# shellcheck disable=SC2086
GPUPOOL_BACKEND=user "$O/examples/loader" $args --file "$records" 2>&1 || status=1

echo
if [ "$status" -eq 0 ]; then
	echo "demo: done"
else
	echo "demo: FAILED (status $status)"
fi
exit "$status"
