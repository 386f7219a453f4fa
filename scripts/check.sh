#!/bin/sh
# `make check`: build everything, then run every suite, continuing past
# failures so that one report covers all of them:
#   1. host unit tests (ASan + UBSan), the library's tests, the
#      interposer's (ASan + UBSan and TSan), ThreadSanitizer
#      and libFuzzer runs (bounded, seeded), the tools tests, the BFC
#      benchmark's quick run (it must build and finish; no speed asserted),
#      the Python tests, the YAML in the tree (scripts/yaml-check.py), the
#      CDI spec gpupoolctl writes (scripts/cdi-check.py)
#   2. checkpatch, sparse and coccicheck on the kernel code
#      (scripts/kernel-checks.sh); no function in kmod/ or core/ over 60
#      lines but the listed exceptions (scripts/func-length.sh); no loop
#      among the calls between libgpupool's rooms (scripts/rooms-check.sh)
#   3. the VM suite on each test kernel (Debian 6.1 and 6.12), its NUMA
#      tests again in a two-node VM (and libgpupool's NUMA tests on the
#      user backend there), and libgpupool's tests on the kernel backend;
#      on the newest kernel, a podman container given the device by CDI
#      and Slurm jobs through the SPANK plugin
#   4. the whole VM suite on the debug kernel, in two VMs (Linux 7.2 with KASAN,
#      lockdep, UBSAN, kmemleak, cgroup v2 with dmem; scripts/debug-kernel.sh
#      builds it once per machine into /var/cache/gpupool, shared by every
#      clone, then checks and reuses it; when it must build it, it does so
#      beside the tree's build, and the suites start when it is done)
#   5. the Debian packages: built, lintian, installed here (DKMS builds the
#      module for both kernels), upgraded from an older build, the installed
#      module loaded in a VM per kernel, purged (scripts/deb-check.sh);
#      arm64's too, cross-built, lintian, DKMS for Debian's arm64 kernel
#   6. the library's and the interposer's suites built for arm64, under
#      qemu-aarch64 (scripts/arm64-user.sh)
#   7. arm64, cross-built (into $O/arm64): the VM suite, libgpupool's
#      suites on the kernel backend and the interposer's in arm64 VMs, on
#      Debian's arm64 kernel (4 KiB pages) and on a 64 KiB-page 7.2
#      kernel (scripts/test-kernel.sh arm64-64k, built once per machine
#      after the debug kernel and cached beside it; vm/README.md, "The
#      arm64 VMs")
#   (once everything is built, 1-7 run in two lanes, one per core, in
#   blocks: the host suites, each stock kernel's VM suites, the tenants'
#   suites, the debug kernel's, the packages', the arm64 ones; whichever
#   lane is free takes the next block; GPUPOOL_CHECK_BLOCKS=PATTERNS runs
#   only the blocks it names, e.g. 'arm64*')
#   (the library's tests run on the user backend here and again, on the
#   kernel backend, inside the VM on each kernel)
# The last line printed is the sum over all suites: `N passed, N failed,
# N skipped`; the exit status is non-zero when anything failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=$O/results
export RESULTS_DIR=$results
rm -rf "$results"
mkdir -p "$results"
status=0
t0=$(date +%s)

step() {
	echo
	echo "==== $* ==== [$(( $(date +%s) - t0 )) s]"
}

# The debug kernel: when the cache (GPUPOOL_CACHE, default
# /var/cache/gpupool) holds a valid build, the script only checks it and
# prints its path, in a second or two.  Otherwise it builds it (about 700
# s on two idle cores), beside the tree's build and before any suite: the
# suites wait for it (below).  --hold $$: no other clone's check removes
# that build while this one runs.  Its output goes to a file, shown when
# the debug kernel's first part collects it.
# The 64K-page arm64 kernel (scripts/test-kernel.sh arm64-64k, cached
# beside it) the same way, after it: when both must be built, one after
# the other, each with both cores.
dbg_out=$O/debug-kernel.out
dbg_log=$O/debug-kernel.log
mkdir -p "$O"
# setsid: a process group of its own, so that stopping it stops its makes.
# (A session is also a scheduling group of its own under sched_autogroup,
# at the default nice: beside the tree's build it gets half the CPU.)
# Its exit status goes to $O/NAME-kernel.rc when it ends, where
# kernel_built, debug_module and k64_module below look for it: they are
# called while the tree builds, before the lanes and in them, where no
# `wait` would do.  WAIT: a file to wait for first (the other kernel's
# status).
start_kernel() {	# NAME WAIT
	rm -f "$O/$1-kernel.rc"
	setsid sh -c 'rc_file=$1 wait_for=$2; shift 2
		while [ -n "$wait_for" ] && [ ! -e "$wait_for" ]; do sleep 5; done
		"$@"; echo $? > "$rc_file"' \
		"$1-kernel" "$O/$1-kernel.rc" "$2" \
		"$top/scripts/test-kernel.sh" "$1" --hold "$$" \
		> "$O/$1-kernel.out" 2> "$O/$1-kernel.log" &
	echo $! > "$O/$1-kernel.pid"
}
# GPUPOOL_CHECK_BLOCKS=PATTERNS (comma-separated shell patterns on the
# lanes' block names, below: 'arm64-*' runs the arm64 VMs alone) runs
# only the blocks that match one, and builds or waits for no kernel that
# none of them boots.
selected() {
	[ -z "${GPUPOOL_CHECK_BLOCKS:-}" ] && return 0
	(IFS=,; set -f
	 for p in $GPUPOOL_CHECK_BLOCKS; do
		# shellcheck disable=SC2254 # patterns, for case
		case $1 in $p) exit 0 ;; esac
	 done
	 exit 1)
}
kernels="" after=""
dbg_rc_file=$O/debug-kernel.rc
if selected debug-1 || selected debug-2; then
	kernels=debug after=$dbg_rc_file
	start_kernel debug ""
fi
if selected arm64-64k || selected arm64lib-64k; then
	kernels="$kernels arm64-64k"
	start_kernel arm64-64k "$after"
fi
# shellcheck disable=SC2317 # called by the traps
kill_kernels() {
	for k in $kernels; do
		kill -- "-$(cat "$O/$k-kernel.pid")" 2>/dev/null
	done
}
trap kill_kernels EXIT
trap 'kill_kernels; exit 130' INT TERM

# Compile through ccache (which `make deps` installs) with one cache for
# every clone on this machine, next to the debug kernel's: a second check
# compiles little.  Paths below the clone are hashed relative to it
# (BASEDIR) and the working directory not at all, so that a clone at
# another path hits too (its objects' debug information may then name the
# other clone's directory; nothing here reads it).  Set after the debug
# kernel's build has started: that one has a cache of its own.
ccache_dir=${CCACHE_DIR:-${GPUPOOL_CACHE:-/var/cache/gpupool}/ccache}
if [ -x /usr/lib/ccache/cc ] && mkdir -p "$ccache_dir" 2>/dev/null &&
   [ -w "$ccache_dir" ]; then
	export PATH="/usr/lib/ccache:$PATH" CCACHE_DIR="$ccache_dir"
	export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
fi

# Has kernel NAME's build ended (its status written, or the process gone
# or a zombie without writing one: then it failed)?
kernel_built() {
	[ -e "$O/$1-kernel.rc" ] && return 0
	st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' \
		"/proc/$(cat "$O/$1-kernel.pid")/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}

# The module for the debug kernel, once that kernel has built: whoever
# comes first builds it (the lock), the others find it up to date.  Sets
# dbg (the kernel's tree) and drel (its release).
debug_module() {
	[ "$(cat "$dbg_rc_file" 2>/dev/null)" = 0 ] &&
		dbg=$(cat "$dbg_out") &&
		drel=$(cat "$dbg/include/config/kernel.release") &&
		mkdir -p "$O/kmod" &&
		flock "$O/kmod/debug.lock" "$top/scripts/build-module.sh" \
			"$drel" "$O/kmod/debug" "$dbg" >/dev/null
}

# The module for the 64K arm64 kernel, the same way.  Sets k64 (the
# kernel's tree).
k64_module() {
	[ "$(cat "$O/arm64-64k-kernel.rc" 2>/dev/null)" = 0 ] &&
		k64=$(cat "$O/arm64-64k-kernel.out") &&
		mkdir -p "$O/arm64/kmod" &&
		ARCH=arm64 CROSS_COMPILE=$a64_cross flock "$O/arm64/kmod/64k.lock" \
			"$top/scripts/build-module.sh" \
			"$(cat "$k64/include/config/kernel.release")" \
			"$O/arm64/kmod/64k" "$k64" >/dev/null
}

# The arm64 build, into $O/arm64 (docs/development.md, "Cross builds"):
# the library, the tools, the suites that the arm64 VMs run (tests/vm,
# tests/lib, tests/interpose) and the doubles, and gpupool.ko for
# the newest of Debian's arm64 kernels that make deps unpacked
# (scripts/arm64-kernel.sh), which its VMs boot.  Its failure fails the
# arm64 blocks, not the others.  Sets a64rel (that kernel's release) and
# a64root (the guest's userland, vm/arm64-root.sh, held while this check
# runs).
a64_cross=aarch64-linux-gnu-
a64_build() {
	a64root=$("$top/vm/arm64-root.sh" --hold "$$") &&
		a64rel=$("$top/scripts/arm64-kernel.sh" list | tail -n 1) &&
		[ -n "$a64rel" ] &&
		make -C "$top" --no-print-directory -j"$(nproc)" O="$O/arm64" \
			ARCH=arm64 CROSS_COMPILE="$a64_cross" KVER="$a64rel" \
			lib tools tests-vm tests-lib tests-interpose module
}

# A build failure is one failed "test" of its own, and stops the suites
# that need what failed to build.
built=1
step "build"
kvers=$("$top/vm/kernels.sh") || kvers=""
if [ -z "$kvers" ]; then
	echo "check: no test kernels found (vm/kernels.sh); run: make deps"
	built=0
else
	# When the debug kernel is ready while the tree builds (a cached
	# build is checked in a second or two), its module is built beside
	# the tree's: built by the first debug part instead, it kept the
	# other lane waiting for the lock, a core idle (25 s).  A failure
	# here is the debug part's to report, which builds it again.
	make -C "$top" --no-print-directory -j"$(nproc)" O="$O" \
		modules-all tools tests &
	make_pid=$!
	while kill -0 "$make_pid" 2>/dev/null; do
		case " $kernels " in *" debug "*) ;; *) break ;; esac
		if kernel_built debug; then
			debug_module || :
			break
		fi
		sleep 1
	done
	wait "$make_pid" || built=0
fi
a64_built=0
if [ "$built" = 1 ] && { selected arm64-deb || selected arm64-64k ||
	selected arm64lib-deb || selected arm64lib-64k; }; then
	step "build for arm64"
	a64_build && a64_built=1
fi
if [ "$built" -eq 0 ]; then
	echo "pass=0 fail=1 skip=0" > "$results/build.counts"
	"$top/scripts/summarize.sh" "$results"
	exit 1
fi

# The suites that need no VM, one after another (a block of the lanes
# below, beside a VM); status 1 when any failed.
host_block() {
	st=0
	step "host unit tests: the allocator core"
	"$top/scripts/run-tests.sh" unit "$O/tests/unit" || st=1

	step "host tests: libgpupool on the user backend, CUDA through the test double"
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" lib "$O/tests/lib" || st=1

	# On a GPU the device pool runs in its virtual mode where the GPU has virtual
	# memory management (dev_vmm's runtime-independent tests, threads, torch) and
	# in the segment mode where a test asks for it (dev_alloc, dev_oom).
	step "host tests: libgpupool against the real CUDA runtime (only where a GPU is present)"
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
		GPUPOOL_BACKEND=user GPUPOOL_TEST_CUDART=real \
			"$top/scripts/run-tests.sh" lib-real-gpu "$O/tests/lib" || st=1
	else
		echo "lib-real-gpu: no GPU here (nvidia-smi lists none): skipped; the CUDA path ran against the test double above"
		echo "pass=0 fail=0 skip=1" > "$results/lib-real-gpu.counts"
	fi

	step "host tests: libgpupool under ThreadSanitizer, many threads on the user backend"
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" tsan "$O/tests/tsan" || st=1

	step "host tests: the interposer, CUDA's pinned allocations from the pool (ASan + UBSan in both modes, TSan, and RTLD_DEEPBIND unsanitized)"
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" interpose "$O/tests/interpose/asan" || st=1
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" interpose-strict "$O/tests/interpose/strict" || st=1
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" interpose-tsan "$O/tests/interpose/tsan" || st=1
	GPUPOOL_BACKEND=user "$top/scripts/run-tests.sh" interpose-plain "$O/tests/interpose/plain" || st=1

	step "libFuzzer: the allocator core, the /proc/gpupool parser, the library's ioctl handling"
	"$top/scripts/run-fuzz.sh" fuzz "$O/tests/fuzz" || st=1

	step "host tests: gpupoolctl and its /proc/gpupool parser (a fixture pool)"
	"$top/scripts/run-tests.sh" tools "$O/tests/tools" || st=1

	step "the BFC benchmark: builds, and its quick run completes (no speed asserted)"
	"$top/scripts/bench-smoke.sh" || st=1

	step "Python package on the user backend (Debian's python3 and numpy)"
	GPUPOOL_BACKEND=user GPUPOOL_LIBRARY="$O/userlib/libgpupool.so.1" \
		GPUPOOL_CTL="$O/tools/gpupoolctl" \
		"$top/scripts/run-tests.sh" python "$top/python/tests" || st=1

	step "make install into a staging root; a program built against it with pkg-config"
	"$top/scripts/install-check.sh" || st=1

	step "the YAML in the tree (Kubernetes manifests): parsed and checked"
	/usr/bin/python3 "$top/scripts/yaml-check.py" --counts "$results/yaml.counts" || st=1

	step "the CDI spec gpupoolctl writes (fixture nodes): the CDI schema and what it leaves open"
	/usr/bin/python3 "$top/scripts/cdi-check.py" --ctl "$O/tools/gpupoolctl" \
		--counts "$results/cdi.counts" || st=1

	step "the VM harness's own judge (synthetic logs, no VM)"
	python3 "$top/vm/selftest-vmreport.py" --counts "$results/vmreport-selftest.counts" || st=1

	step "checkpatch"
	"$top/scripts/checkpatch.sh" || st=1

	step "functions in kmod/ and core/: none over 60 lines but the listed exceptions"
	"$top/scripts/func-length.sh" || st=1

	step "libgpupool's rooms: no loop among their calls (nm over the objects)"
	"$top/scripts/rooms-check.sh" || st=1

	step "the kernel's checkers on the module: sparse (C=2) and coccicheck, on the 6.12 headers"
	"$top/scripts/kernel-checks.sh" || st=1
	return $st
}

# One VM run, named NAME.  A run that ends before its report (a setup
# failure in run-vm.sh, say) writes no counts: then it counts as one failed
# test, so that the summary line never says "0 failed" for it.
vm() {
	vname=$1
	shift
	rm -f "$results/vm-$vname.counts"
	"$top/vm/run-vm.sh" --name "$vname" "$@" && return 0
	if [ ! -e "$results/vm-$vname.counts" ]; then
		echo "check: VM run $vname ended before reporting: counted as one failure"
		echo "pass=0 fail=1 skip=0" > "$results/vm-$vname.counts"
	fi
	return 1
}

torch_k=$(echo "$kvers" | tail -n 1)

# One kernel's module suites in VMs, one after another; status 1 when any
# failed.
kernel_block() {
	k=$1
	st=0
	step "VM suite on $k"
	vm "$k" --kernel "$k" --ko "$O/kmod/$k/gpupool.ko" \
		--tests "$O/tests/vm" --build-dir "$O" --quiet || st=1
	step "NUMA: the node tests in a VM with two nodes, on $k"
	vm "numa-$k" --kernel "$k" --numa \
		--ko "$O/kmod/$k/gpupool.ko" --tests "$O/tests/vm" --filter 'numa*' \
		--build-dir "$O" --quiet || st=1
	step "libgpupool's NUMA placement on the user backend, in the two-node VM on $k"
	vm "libnuma-$k" --kernel "$k" --numa \
		--ko "$O/kmod/$k/gpupool.ko" --env GPUPOOL_BACKEND=user \
		--tests "$O/tests/lib" --filter 'numa' \
		--build-dir "$O" --quiet || st=1
	# threads=2: the huge-page test's 64 MiB segment is two memfds side
	# by side, which must start at a huge page's boundary.  A VM of its
	# own: run in the VM suite's, before it, its huge pages made the
	# suite's reservation of most of the memory take 39 s instead of 0.4;
	# after it, it took 49 s instead of 9 (compaction).
	step "libgpupool's user backend with shmem_enabled=advise (huge pages), in the VM on $k"
	vm "libthp-$k" --kernel "$k" --env GPUPOOL_BACKEND=user \
		--env GPUPOOL_TEST_SHMEM_THP=advise \
		--env GPUPOOL_POPULATE_THREADS=2 \
		--tests "$O/tests/lib" --filter 'host_fork' \
		--build-dir "$O" --quiet || st=1
	step "reservation and growth across 6 CPUs, half the memory ZONE_MOVABLE, on $k"
	vm "smp6-$k" --kernel "$k" --smp 6 \
		--cmdline-extra "movablecore=50%" \
		--ko "$O/kmod/$k/gpupool.ko" --tests "$O/tests/vm" \
		--filter 'reserve,growth' --build-dir "$O" --quiet || st=1
	return $st
}

# One kernel's library suites on the kernel backend, each a block of its
# own (apart from the module's suites, and small, so that the lanes end
# close together): libgpupool and the Python package in one VM (two
# groups: a boot fewer), PyTorch's DataLoader in another (its own module
# parameters, and the Python suite's runner too).
lib_block() {
	k=$1
	# All but the device pool's tests (dev_*): the device pool runs over
	# the CUDA runtime (here its test double) and never reaches a backend,
	# so in a VM they would repeat the host's run (above) at TCG's pace:
	# 38 s of each kernel's run.  Nor host_page_size: a host test (a
	# larger page put on the user backend through a test hook, on a 4
	# KiB kernel), run by the host block; in these VMs its user-backend
	# allocations fail (ENOMEM, a shared buffer of size 0), as in the
	# arm64 guest (below), for a reason not yet found.
	# Then the interposer's suite (ASan) on the kernel backend, in both
	# modes (tests/interpose/strict: the same programs but rt_threads,
	# whose requests are all served whatever the mode).
	step "libgpupool, the Python package and the interposer on the kernel backend, in the VM on $k"
	vm "lib-$k" --kernel "$k" \
		--ko "$O/kmod/$k/gpupool.ko" --load "pool_size=256M" \
		--env GPUPOOL_BACKEND=kernel --tests "$O/tests/lib" \
		--exclude 'dev_*,host_page_size' --then \
		--load "pool_size=256M" --env GPUPOOL_BACKEND=kernel \
		--env GPUPOOL_LIBRARY="$O/userlib/libgpupool.so.1" \
		--env GPUPOOL_CTL="$O/tools/gpupoolctl" \
		--tests "$top/python/tests" --then \
		--load "pool_size=256M" --env GPUPOOL_BACKEND=kernel \
		--tests "$O/tests/interpose/asan" --then \
		--load "pool_size=256M" --env GPUPOOL_BACKEND=kernel \
		--tests "$O/tests/interpose/strict" --build-dir "$O" --quiet \
		--timeout 1500 --test-timeout 600
}

# PyTorch's DataLoader on the kernel backend: only what that backend
# changes (test_torch.py skips the rest in a VM).  Importing torch under
# TCG is most of its time (about a minute on an idle machine, up to 4 on
# a loaded one); TORCH_VM_KERNELS=newest runs it on the newest kernel
# only.
torch_block() {
	k=$1
	[ "${TORCH_VM_KERNELS:-all}" = all ] || [ "$k" = "$torch_k" ] ||
		return 0
	step "PyTorch's DataLoader on the kernel backend, in the VM on $k"
	vm "pytorch-$k" --kernel "$k" \
		--ko "$O/kmod/$k/gpupool.ko" \
		--load "pool_size=256M per_process_limit=128M" \
		--env GPUPOOL_BACKEND=kernel \
		--env GPUPOOL_PY_TESTS=test_torch.py \
		--env GPUPOOL_LIBRARY="$O/userlib/libgpupool.so.1" \
		--test-timeout 840 --timeout 900 \
		--tests "$top/python/tests" --build-dir "$O" --quiet
}

# The tenants' suites on the newest kernel, a block each: a podman
# container and Slurm jobs.
podman_block() {
	k=$torch_k
	# A real container (podman 4.3, crun) given the device through the
	# CDI spec gpupoolctl writes (about 1 minute under TCG).
	step "a podman container with gpupool.io/pool=default (CDI), in the VM on $k"
	vm "containers-$k" --kernel "$k" --mem 2G \
		--ko "$O/kmod/$k/gpupool.ko" --load "pool_size=64M" \
		--env GPUPOOL_TOP="$top" \
		--tests "$O/tests/containers" --build-dir "$O" --quiet \
		--test-timeout 840 --timeout 900
}

# The SPANK plugin (slurm/) in a real Slurm 22.05 on one node (munge,
# slurmctld, slurmd; tests/slurm; about 1 minute under TCG).
slurm_block() {
	k=$torch_k
	step "Slurm jobs' shares through the SPANK plugin (--gpupool), in the VM on $k"
	vm "slurm-$k" --kernel "$k" --mem 2G \
		--ko "$O/kmod/$k/gpupool.ko" --load "pool_size=256M" \
		--tests "$O/tests/slurm" --build-dir "$O" --quiet \
		--timeout 900
}

# The debug kernel's suite, once its build (started above) has ended, in
# two VMs that the two lanes can run side by side (each about 5 minutes):
# part 1 the tests that take longest there, part 2 all the others (a new
# test lands in part 2 without anyone naming it).  Part 1 then runs, in
# the same VM (run-vm.sh --then: a boot and a kmemleak scan fewer than a
# VM of their own), the library's suites that reach the pages on the
# kernel backend there, where chunks are mapped with 2 MiB entries
# (huge_maps): registration through the CUDA double, O_DIRECT and
# io_uring fixed buffers, sharing (the whole library suite runs on the
# stock kernels' lib blocks; fork on 2 MiB entries is the VM suite's
# huge_maps).  The split keeps the parts within a minute of each other.
debug_heavy="fault_inject,load_many,bfc_selftest,ctl_output,attacks,circulate_pingpong"
debug_lib="host_alloc,read_file,share_fork"
debug_block() {
	part=$1
	step "the debug kernel, part $part: KASAN, lockdep, DEBUG_VM, kmemleak, UBSAN, fault injection, dmem"
	# Built once per machine from Debian's linux-source-7.2 (cached in
	# /var/cache/gpupool/debug-kernel, for every clone, while the
	# fragment, the script, the sources and the compiler are unchanged;
	# started in the background above); the whole VM suite runs on it and
	# any splat or kmemleak report fails the test it happened in.  It
	# boots through the firmware (--no-pvh): this kernel's PVH entry dies
	# before the console under KASAN.  no5lvl: 4-level paging, which 7.2
	# no longer lets the configuration choose (vm/debug-kernel.config,
	# CONFIG_X86_5LEVEL).
	[ "$part" = 1 ] && cat "$dbg_log"
	case $part in
	1) which="--tests $O/tests/vm --filter $debug_heavy --then
		--tests $O/tests/lib --filter $debug_lib
		--load pool_size=256M --env GPUPOOL_BACKEND=kernel" ;;
	2) which="--tests $O/tests/vm --exclude $debug_heavy" ;;
	esac
	# The module for it: built beside the tree when the kernel was ready
	# then, otherwise by whichever part comes first.
	if debug_module; then
		step "VM suite on the debug kernel $drel, part $part"
		# shellcheck disable=SC2086 # $which: options and their words
		vm "debug-$part" --kernel "$dbg/arch/x86/boot/bzImage" \
			--kbuild "$dbg" --no-pvh --cmdline-extra no5lvl \
			--ko "$O/kmod/debug/gpupool.ko" \
			$which --build-dir "$O" --quiet --timeout 1700 \
			--test-timeout 600
	else
		echo "check: the debug kernel or the module for it did not build"
		echo "pass=0 fail=1 skip=0" > "$results/debug-kernel.counts"
		return 1
	fi
}

# The arm64 VMs (vm/README.md, "The arm64 VMs"), on Debian's arm64
# kernel (deb: 4 KiB pages) and on the 64K kernel (64k: 64 KiB pages,
# built once per machine beside the debug kernel): the module's VM suite
# in one block, the library's suites on the kernel backend and the
# interposer's in another.  Sets a64k (run-vm.sh's kernel options) and
# a64ko (the module); fails, counting one failure, when they did not
# build.
a64_kernel() {
	case $1 in
	deb) [ "$a64_built" = 1 ] &&
		a64k="--kernel $a64rel" a64ko=$O/arm64/kmod/$a64rel/gpupool.ko ;;
	64k) [ "$a64_built" = 1 ] && k64_module &&
		a64k="--kernel $k64/arch/arm64/boot/Image --kbuild $k64" \
		a64ko=$O/arm64/kmod/64k/gpupool.ko ;;
	esac && return 0
	echo "check: the arm64 build, the 64K kernel or the module for it did not build"
	echo "pass=0 fail=1 skip=0" > "$results/arm64-$1-build.counts"
	return 1
}
arm64_block() {
	step "VM suite on arm64 ($1: $([ "$1" = deb ] && echo "Debian's $a64rel, 4 KiB pages" || echo "Linux 7.2, 64 KiB pages"))"
	a64_kernel "$1" || return 1
	# shellcheck disable=SC2086 # $a64k: options and their words
	vm "arm64-$1" $a64k --arm64-root "$a64root" --ko "$a64ko" \
		--tests "$O/arm64/tests/vm" --build-dir "$O" --quiet --timeout 1500
}
# The library's suites, all but the device pool's as on x86, and the
# interposer's (tests/interpose: ASan's and the unsanitized ones), with
# the arm64 doubles, each a group of one VM.  Without LeakSanitizer:
# its scan at a process's exit takes 5-9 s there (aarch64's ASan
# allocator walks every possible region), against 0.2 s on x86, which
# put the programs that start many processes past their harness's 30 s;
# leaks are the host suites' to find.  rt_threads (8 threads x 10^5
# allocations under ASan) ran 28 s of those 30, and is the host's
# (ASan, TSan) too.  host_page_size is the host's as well: it puts a
# larger page on the user backend through a test hook, on a 4 KiB
# kernel (in the arm64 guest on Debian's 6.12 its allocations failed,
# ENOMEM); here the page is the kernel's own, on the kernel backend.
arm64lib_block() {
	step "libgpupool and the interposer on the kernel backend, in the arm64 VM ($1)"
	a64_kernel "$1" || return 1
	a=$O/arm64 which=$1
	set -- --load pool_size=256M --env GPUPOOL_BACKEND=kernel \
		--env ASAN_OPTIONS=detect_leaks=0
	# shellcheck disable=SC2086
	vm "arm64lib-$which" $a64k --arm64-root "$a64root" --ko "$a64ko" \
		"$@" --tests "$a/tests/lib" --exclude 'dev_*,host_page_size' --then \
		"$@" --tests "$a/tests/interpose/asan" --exclude rt_threads --then \
		"$@" --tests "$a/tests/interpose/plain" \
		--build-dir "$O" --quiet --timeout 1500 --test-timeout 600
}

deb_block() {
	step "Debian packages: lintian, install, DKMS, upgrade, a VM loading the installed module, purge"
	# shellcheck disable=SC2086
	"$top/scripts/deb-check.sh" $kvers
}

# The library's and the interposer's suites built for arm64, run here
# under qemu-aarch64, UBSan alone (scripts/arm64-user.sh).
arm64_user_block() {
	step "arm64: libgpupool and the interposer under qemu-user (UBSan), and their branch protection"
	"$top/scripts/arm64-user.sh"
}

# From here two lanes, one per core (a VM is one host thread at a time:
# single-threaded TCG, see vm/run-vm.sh), take the blocks in turn: each
# stock kernel's module suites (the host suites beside the first), the
# Debian packages' check, the tenants' suites, each kernel's library
# suites, and the debug kernel's two parts, which the lanes take first.
# Whichever lane is free takes the next block, so that neither core idles
# while the other has two blocks still to run.  A block is claimed by
# creating its directory (atomic); its output goes to a log of its own,
# printed whole at the end in a fixed order; a failed block leaves a mark.
lanes=$O/lanes
rm -rf "$lanes"
mkdir -p "$lanes"
claim() {
	mkdir "$lanes/$1" 2>/dev/null
}
run_block() {
	case $1 in
	host) host_block ;;
	debug-*) debug_block "${1#debug-}" ;;
	podman) podman_block ;;
	slurm) slurm_block ;;
	deb) deb_block ;;
	arm64-user) arm64_user_block ;;
	vm-*) kernel_block "${1#vm-}" ;;
	lib-*) lib_block "${1#lib-}" ;;
	torch-*) torch_block "${1#torch-}" ;;
	arm64-*) arm64_block "${1#arm64-}" ;;
	arm64lib-*) arm64lib_block "${1#arm64lib-}" ;;
	esac > "$O/check-$1.log" 2>&1 || : > "$lanes/$1/failed"
}
# The order packs the blocks' times (a second run on this 2-core
# machine, docs/development.md) so that the two lanes end close
# together: the long blocks first (the debug kernel's two parts, each
# stock kernel's module suites, the host suites, the packages), the
# packages not last, then the small ones (the tenants', 70-90 s, and
# each kernel's library and Python suites, about 90 s, and PyTorch's,
# about 75 s).
blocks=""
for k in $kvers; do
	blocks="$blocks vm-$k"
	[ "$blocks" = " vm-$k" ] && blocks="$blocks host"
done
blocks="$blocks arm64-deb arm64-64k deb podman slurm arm64lib-deb arm64lib-64k"
blocks="$blocks arm64-user"
for suite in lib torch; do
	for k in $kvers; do
		blocks="$blocks $suite-$k"
	done
done
debug_parts="debug-1 debug-2"
lane() {
	for b in $debug_parts $blocks; do
		if selected "$b" && claim "$b"; then
			run_block "$b"
		fi
	done
}
# A first run on this machine builds the debug kernel: the lanes start
# when it is done, so that it has both cores and its parts, the longest
# blocks, start as early as they can.  Built at the lowest priority
# beside the lanes instead, it got what they left until the other blocks
# were done, those took more CPU time beside it, and its parts came last
# (docs/development.md has first runs in both orders).
# The 64K arm64 kernel, built after it, likewise.
for k in $kernels; do
	kernel_built "$k" && continue
	echo
	echo "check: the $k kernel is not ready yet (being built, here or by another check on this machine); the suites start when it is"
	while ! kernel_built "$k"; do
		sleep 5
	done
	echo "check: the $k kernel's build ended after $(( $(date +%s) - t0 )) s"
	[ "$k" = debug ] && { debug_module || :; }
done
lane &
lane_pid=$!
lane
wait "$lane_pid"
for b in $blocks $debug_parts; do
	[ -e "$lanes/$b/failed" ] && status=1
done
for b in $blocks $debug_parts; do
	[ -d "$lanes/$b" ] && [ -e "$O/check-$b.log" ] && cat "$O/check-$b.log"
done

echo
echo "check: $(( $(date +%s) - t0 )) s in all"
"$top/scripts/summarize.sh" "$results" || status=1
exit $status
