#!/bin/bash
# Boot a kernel under qemu (TCG), run the in-VM test programs, judge them.
#
# Usage: vm/run-vm.sh --kernel RELEASE|IMAGE [options]
#
#   --kernel REL        a Debian kernel: /boot/vmlinuz-REL, /lib/modules/REL;
#                       an arm64 one (REL ending in -arm64) from
#                       scripts/arm64-kernel.sh's cache when /boot does not
#                       have it
#   --kernel IMAGE      a kernel image we built (x86's bzImage, arm64's
#                       Image); add --kbuild DIR (its build tree) when
#                       virtio/9p are modules there
#   --arch ARCH         x86_64 or arm64: what the kernel is built for, which
#                       is the default (read from the image); arm64 boots
#                       qemu-system-aarch64's virt machine with the arm64
#                       root laid over the host's (vm/README.md)
#   --cpu MODEL         qemu's -cpu (default: x86_64 max,-erms; arm64
#                       max,pauth-impdef=on)
#   --arm64-root DIR    the arm64 guest's userland (default: vm/arm64-root.sh's)
#   --kbuild DIR        kernel build tree (modules.order/modules.builtin/.config)
#   --name NAME         suite name (results file, build dir); default: the
#                       release (for a bzImage: DIR's kernel.release or the
#                       version in the image)
#   --ko FILE           gpupool.ko to test (tests get it as $GPUPOOL_KO)
#   --tests DIR         directory of test programs (default: $O/tests/vm)
#   --filter PATS       comma-separated shell patterns on test names
#   --exclude PATS      the same, for tests not to run (after --filter)
#   --timeout S         bound for the whole VM run (default 600)
#   --test-timeout S    bound for one test program (default 300)
#   --mem SIZE          guest memory (default 1G; 2G with --numa)
#   --smp N             guest CPUs (default 2)
#   --numa              two NUMA nodes, memory and CPUs split between them
#   --kmemleak MODE     end (default) | each (scan after every test) | off
#   --cmdline-extra S   appended to the kernel command line
#   --build-dir DIR     build tree (default: $O, else <repo>/build)
#   --shell             interactive shell instead of the tests (vm/shell.sh)
#   --load PARAMS       insmod the --ko with PARAMS first: with --shell once;
#                       for tests before every test program (each gets a
#                       freshly loaded module; the runner unloads it after)
#   --env VAR=VALUE     export VAR to the tests (repeatable)
#   --run COMMAND       instead of test programs, run COMMAND (sh -c) once as
#                       the single "test" named run: it passes when COMMAND
#                       exits 0 and the kernel log stays clean (make demo)
#   --then              --tests, --filter, --exclude, --load and --env before
#                       it make one group of tests; those after it another,
#                       run next in the same VM (one boot, one kmemleak scan
#                       at the end), each group with its own options only
#   --no-pvh            boot the bzImage through the firmware (slow) instead
#                       of the extracted vmlinux through PVH
#   --quiet             don't stream the test output while it runs
#
# Exit status: 0 all passed; 1 a test failed, a splat was seen, or the VM
# did not finish (timeout, panic); 2 usage or setup error.
#
# Writes $O/vm/NAME/{console.log,tests.log,scratch/} (kernel log, test
# output, dmesg and kmemleak reports) and $RESULTS_DIR/vm-NAME.counts
# ("pass=N fail=N skip=N"; RESULTS_DIR defaults to $O/results).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

kernel='' kbuild='' name='' ko='' tests='' filter='' exclude='' timeout=600 test_timeout=300
pvh=1 load=0 run_cmd='' envs=() load_params='' mem='' smp=2 numa=0 kmemleak=end cmdline_extra='' builddir=${O:-} shell=0 quiet=0
arch='' cpu='' arm64_root=

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
die() { echo "run-vm: $*" >&2; exit 2; }
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# The groups of tests (--then): each group's options, one array entry a
# group; its --env variables as the export lines of its configuration.
g_tests=() g_filter=() g_exclude=() g_load=() g_load_params=() g_envs=()
end_group() {
	g_tests+=("$tests") g_filter+=("$filter") g_exclude+=("$exclude")
	g_load+=("$load") g_load_params+=("$load_params")
	g_envs+=("$(for e in ${envs[@]+"${envs[@]}"}; do
		echo "export ${e%%=*}=$(q "${e#*=}")"
	done)")
	tests='' filter='' exclude='' load=0 load_params='' envs=()
}

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift 2 ;;
	--kbuild) kbuild=$2; shift 2 ;;
	--arch) arch=$2; shift 2 ;;
	--cpu) cpu=$2; shift 2 ;;
	--arm64-root) arm64_root=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--tests) tests=$2; shift 2 ;;
	--filter) filter=$2; shift 2 ;;
	--exclude) exclude=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--numa) numa=1; shift ;;
	--kmemleak) kmemleak=$2; shift 2 ;;
	--cmdline-extra) cmdline_extra="$cmdline_extra $2"; shift 2 ;;
	--build-dir) builddir=$2; shift 2 ;;
	--shell) shell=1; shift ;;
	--load) load=1; load_params=$2; shift 2 ;;
	--env) [[ $2 == [A-Za-z_]*=* ]] || die "--env: VAR=VALUE"; envs+=("$2"); shift 2 ;;
	--run) run_cmd=$2; shift 2 ;;
	--then) end_group; shift ;;
	--no-pvh) pvh=0; shift ;;
	--quiet) quiet=1; shift ;;
	-h|--help) usage 0 ;;
	*) echo "run-vm: unknown argument: $1" >&2; usage ;;
	esac
done

end_group
[ -n "$kernel" ] || { echo "run-vm: --kernel is required" >&2; usage; }
if [ ${#g_tests[@]} -gt 1 ] && { [ $shell = 1 ] || [ -n "$run_cmd" ]; }; then
	die "--then: groups of tests, not with --shell or --run"
fi
case $kmemleak in end|each|off) ;; *) die "--kmemleak: end, each or off" ;; esac
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout: seconds"
[[ $test_timeout =~ ^[0-9]+$ ]] || die "--test-timeout: seconds"
[[ $smp =~ ^[0-9]+$ ]] || die "--smp: a number"
case $arch in ''|x86_64|arm64) ;; *) die "--arch: x86_64 or arm64" ;; esac
command -v python3 >/dev/null || die "python3 missing"

builddir=${builddir:-$repo/build}
mkdir -p "$builddir"
builddir=$(cd "$builddir" && pwd)

# --- the kernel -------------------------------------------------------------
# The architecture a kernel image is for, from its header (arm64's Image:
# "ARM\x64" at 0x38; x86's bzImage: "HdrS" at 0x202), and, for a
# bzImage, the version string it carries (setup header, offset 0x20e):
# "ARCH [RELEASE]".
image_info() {
	python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read(65536)
if d[0x38:0x3c] == b'ARM\x64':
    print('arm64')
elif d[0x202:0x206] == b'HdrS':
    try:
        off = struct.unpack_from('<H', d, 0x20e)[0] + 0x200
        print('x86_64', d[off:off + 128].split(b'\0')[0].split()[0].decode())
    except Exception:
        print('x86_64')
else:
    print('unknown')
EOF
}
# The arm64 guest's userland (vm/arm64-root.sh).
find_arm64_root() {
	[ -n "$arm64_root" ] || arm64_root=$("$here/arm64-root.sh") ||
		die "no arm64 root (vm/arm64-root.sh); run make deps"
	[ -d "$arm64_root" ] || die "--arm64-root $arm64_root: no such directory"
	arm64_root=$(cd "$arm64_root" && pwd)
}
karch='' rel='' guest_moddir=''
if [ -f "$kernel" ]; then
	vmlinuz=$(realpath "$kernel")
	read -r karch rel < <(image_info "$vmlinuz") || true
	if [ -n "$kbuild" ]; then
		[ -d "$kbuild" ] || die "--kbuild $kbuild: no such directory"
		kbuild=$(cd "$kbuild" && pwd)
		rel=$(cat "$kbuild/include/config/kernel.release" 2>/dev/null || true)
	fi
	initargs=(--kbuild "${kbuild:-}")
	[ -n "$kbuild" ] || initargs=(--none)
	name=${name:-${rel:-$(basename "$vmlinuz")}}
else
	case $kernel in */*) die "--kernel $kernel: no such file" ;; esac
	rel=$kernel
	kroot=''
	if [ ! -f "/boot/vmlinuz-$rel" ] && [[ $rel == *-arm64* ]]; then
		# Debian's arm64 kernel, unpacked; the guest's modprobe finds
		# its modules where vm/init puts them (VM_MODDIR).
		kroot=$("$repo/scripts/arm64-kernel.sh" tree "$rel") ||
			die "$rel: no such arm64 kernel unpacked; run make deps"
		guest_moddir=$kroot/lib/modules/$rel
	fi
	vmlinuz=$kroot/boot/vmlinuz-$rel
	[ -f "$vmlinuz" ] || die "$vmlinuz not found (installed: $(cd /boot && echo vmlinuz-*))"
	[ -r "$vmlinuz" ] || die "$vmlinuz not readable"
	[ -d "$kroot/lib/modules/$rel" ] || die "$kroot/lib/modules/$rel not found"
	initargs=(--moddir "$kroot/lib/modules/$rel")
	name=${name:-$rel}
	read -r karch _ < <(image_info "$vmlinuz") || true
fi
[ -z "$arch" ] || [ "$arch" = "$karch" ] || die "--arch $arch: $vmlinuz is a kernel for $karch"
arch=$karch
case $arch in
x86_64)
	command -v qemu-system-x86_64 >/dev/null ||
		die "qemu-system-x86_64 missing: apt-get install qemu-system-x86" ;;
arm64)
	command -v qemu-system-aarch64 >/dev/null ||
		die "qemu-system-aarch64 missing: apt-get install qemu-system-arm"
	[ $numa = 0 ] || die "--numa: x86_64 only"
	# The guest's userland, and its busybox in the initramfs; overlayfs
	# lays the one over the host's root (a module in Debian's kernels).
	find_arm64_root
	export BUSYBOX=$arm64_root/bin/busybox
	initargs+=(--with overlay)
	pvh=0 ;;
*) die "$vmlinuz: neither an x86 bzImage nor an arm64 Image" ;;
esac
[[ $name =~ ^[A-Za-z0-9._+-]+$ ]] || die "suite name '$name' has odd characters; use --name"

vmdir=$builddir/vm/$name
results=${RESULTS_DIR:-$builddir/results}
mkdir -p "$vmdir" "$results"
exec 9> "$vmdir/.lock"
flock -n 9 || die "another run-vm.sh is using $vmdir"

# One initramfs per kernel, shared by every run on it (mkinitramfs.sh
# rebuilds it only when an input changes); the lock keeps two runs started
# side by side from building it at once.
irdir=$builddir/vm/initramfs
mkdir -p "$irdir"
irname=$(printf '%s' "${initargs[*]} ${BUSYBOX:-}" | cksum | cut -d' ' -f1)
initramfs=$(flock "$irdir/$irname.lock" \
	"$here/mkinitramfs.sh" --out "$irdir/$irname.cpio" "${initargs[@]}")

# Boot the uncompressed vmlinux through qemu's PVH entry when the kernel has
# one: under TCG, SeaBIOS loading a bzImage plus its self-decompression cost
# 5-14 s before the first kernel message; PVH starts the kernel in ~1 s.
# Cached per kernel image (size, mtime, path), for every run on it.
boot=$vmlinuz
if [ $pvh = 1 ]; then
	vkey="$(stat -L -c '%n %s %Y' "$vmlinuz") $(cksum < "$here/extract-vmlinux.py")"
	vdir=$builddir/vm/vmlinux
	mkdir -p "$vdir"
	vm_linux=$vdir/$(printf '%s' "$vmlinuz" | cksum | cut -d' ' -f1)
	exec 7> "$vm_linux.lock"
	flock 7
	if [ -f "$vm_linux" ] && [ "$(cat "$vm_linux.key" 2>/dev/null)" = "$vkey" ]; then
		boot=$vm_linux
	else
		rm -f "$vm_linux" "$vm_linux.key"
		if python3 "$here/extract-vmlinux.py" "$vmlinuz" "$vm_linux.tmp" &&
		   mv "$vm_linux.tmp" "$vm_linux"; then
			echo "$vkey" > "$vm_linux.key"
			boot=$vm_linux
		else
			echo "run-vm: booting the bzImage (slower) instead" >&2
		fi
	fi
	exec 7>&-
fi

# --- what the guest runs ------------------------------------------------------
for k in "${!g_tests[@]}"; do
	t=${g_tests[k]:-$builddir/tests/vm}
	if [ -d "$t" ]; then t=$(cd "$t" && pwd)
	elif [ $shell = 0 ] && [ -z "$run_cmd" ]; then	# --run needs none (make demo)
		die "tests directory $t not found (build it: make -C tests/vm O=...)"
	fi
	g_tests[k]=$t
done
if [ -n "$ko" ]; then
	[ -f "$ko" ] || die "--ko $ko: no such file"
	ko=$(realpath "$ko")
fi

scratch=$vmdir/scratch
rm -rf "$scratch"
mkdir -p "$scratch"
{
	echo "export VM_MODE=$([ $shell = 1 ] && echo shell || echo test)"
	echo "export VM_REPO=$(q "$repo")"
	echo "export VM_RUNNER=$(q "$here/guest-run.sh")"
	echo "export VM_SCRATCH=$(q "$scratch")"
	echo "export VM_TEST_TIMEOUT=$(q "$test_timeout")"
	echo "export VM_KMEMLEAK=$(q "$kmemleak")"
	echo "export GPUPOOL_KO=$(q "$ko")"
	echo "export VM_RUN=$(q "$run_cmd")"
	echo "export VM_GROUPS=${#g_tests[@]}"
	# arm64: the arm64 userland over the host's root, and the modules
	# of a Debian kernel at /lib/modules/RELEASE (vm/init)
	echo "export VM_USERLAND=$([ "$arch" = arm64 ] && echo 1 || echo 0)"
	echo "export VM_MODDIR=$(q "$guest_moddir")"
	# --shell: one group, for vm/init (--load) and the shell (--env)
	if [ $shell = 1 ]; then
		echo "export VM_LOAD_PARAMS=$(q "${g_load_params[0]}")"
		echo "${g_envs[0]}"
	fi
	# Host paths the guest must still see once /tmp and /run are tmpfs:
	# the build tree too, which may lie outside the repository (O=), and
	# where tests find the tools (<build>/tools/gpupoolctl).
	echo "VM_KEEP=$(q "$here ${g_tests[*]} ${ko:+$(dirname "$ko")} $repo $builddir")"
} > "$scratch/run.conf"
for k in "${!g_tests[@]}"; do
	{
		echo "export GPUPOOL_TESTS_DIR=$(q "${g_tests[k]}")"
		echo "export VM_FILTER=$(q "${g_filter[k]}")"
		echo "export VM_EXCLUDE=$(q "${g_exclude[k]}")"
		echo "export VM_LOAD=${g_load[k]}"
		echo "export VM_LOAD_PARAMS=$(q "${g_load_params[k]}")"
		echo "${g_envs[k]}"
	} > "$scratch/group-$((k + 1)).conf"
done

# --- qemu ----------------------------------------------------------------------
if [ $numa = 1 ]; then
	mem=${mem:-2G}
	[ "$smp" -ge 2 ] || smp=2
	[ $((smp % 2)) = 0 ] || die "--numa needs an even --smp (one socket per node)"
fi
mem=${mem:-1G}
mem_mb=$(numfmt --from=iec "${mem%B}" 2>/dev/null) || die "--mem $mem: e.g. 1G, 512M"
mem_mb=$((mem_mb / 1048576))

# Each vCPU is a socket of its own: SeaBIOS's MP table lists the first CPU
# of each socket only, and a kernel without ACPI (the debug kernel,
# vm/debug-kernel.config) finds its CPUs there.  With --numa each node is
# a socket instead: CPUs of one socket (one LLC) on two nodes make the
# kernel WARN in topology_sane() at boot (such a kernel has ACPI: the
# nodes come from its SRAT).
smp_arg="$smp,sockets=$smp,cores=1,threads=1"
[ $numa = 1 ] && smp_arg="$smp,sockets=2,cores=$((smp / 2)),threads=1"
# thread=single: all vCPUs take turns on one host thread.  With a thread
# per vCPU (QEMU's default), a vCPU can run a stale translation of kernel
# text that another vCPU has just live-patched (a static key flipped), and
# the guest dies of "Oops: int3" (vm/README.md: how it was reproduced).
# A VM then uses one core; scripts/check.sh runs two side by side.
# -erms: without ERMS the kernel clears pages with rep stosq, not rep
# stosb, and glibc's large memset and memcpy use vector loops.  TCG runs a
# rep string instruction one element at a time, so byte-wide ones cost 8x:
# 6.12 reserved 616 MiB in 146 ms without ERMS and 618 MiB in 1645 ms
# with it; the 6.12 module suite took 123 s against 134 s.
# shellcheck disable=SC2054 # qemu's options take commas
case $arch in
x86_64)
	qemu=(qemu-system-x86_64 -machine q35 -accel tcg,thread=single
		-cpu "${cpu:-max,-erms}" -smp "$smp_arg" -vga none) ;;
arm64)
	# qemu's virt machine (a device tree, PSCI, a PL011 UART, PCIe),
	# single-threaded TCG as on x86.  The CPU: "max" has every feature
	# qemu emulates, BTI and pointer authentication in user space among
	# them (the interposer's dlsym entry has both), and every page size;
	# pauth-impdef: qemu's own hash for pointer authentication instead
	# of the architected QARMA5, which TCG computes many times slower
	# (vm/README.md has the figures).
	qemu=(qemu-system-aarch64 -machine virt,gic-version=3 -accel tcg,thread=single
		-cpu "${cpu:-max,pauth-impdef=on}" -smp "$smp")
	# The arm64 userland, laid over the host's root in the guest (vm/init).
	qemu+=(-virtfs "local,path=$arm64_root,mount_tag=userland,security_model=none,readonly=on,multidevs=remap") ;;
esac
qemu+=(-m "${mem_mb}M" -nodefaults -no-user-config -display none
	-no-reboot -kernel "$boot" -initrd "$initramfs"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$scratch,mount_tag=scratch,security_model=none,multidevs=remap")
# The guest's RAM is allocated and touched on the host before the guest
# runs (prealloc=on).  On a host that is itself a VM with free page
# reporting (virtio-balloon, as here), the first touch of host memory
# faults to the outer hypervisor: 8 GiB took 29 s here on a first touch,
# 2.3 s on the next, and far longer when the outer host is busy.  Taken
# while the guest ran, that time stopped its one TCG thread inside
# whatever the guest was doing: the reserve test's worker, zeroing the
# pages it took, was blamed for soft lockups of 26 s and of 67 s.  Before
# boot, the guest's clock does not see it.  It costs about 2 s a GiB at
# boot here, much of which the guest would pay later anyway.
ram="memory-backend-ram,prealloc=on,prealloc-threads=2"
if [ $numa = 1 ]; then
	half=$((mem_mb / 2))
	c0=$((smp / 2))
	qemu+=(-object "$ram,id=mem0,size=${half}M"
		-object "$ram,id=mem1,size=$((mem_mb - half))M"
		-numa "node,nodeid=0,cpus=0-$((c0 - 1)),memdev=mem0"
		-numa "node,nodeid=1,cpus=$c0-$((smp - 1)),memdev=mem1")
else
	qemu+=(-object "$ram,id=mem0,size=${mem_mb}M" -machine memory-backend=mem0)
fi

# printk.devkmsg=on: never rate-limit our /dev/kmsg markers.
# panic=-1 + -no-reboot: a panic ends qemu at once.
# Boot-time trims under TCG: no crypto self-tests (6.1: 0.5 s), no
# jitter-entropy self-test (6.12: 0.3 s; the VM needs no entropy).
cmdline="panic=-1 printk.devkmsg=on log_buf_len=8M cryptomgr.notests"
cmdline+=" initcall_blacklist=jent_mod_init"
if [ "$arch" = arm64 ]; then
	# The kernel's console on the virt machine's one UART, the test
	# output on a virtio console (vm/init reads gpupool_vm.out).
	cmdline="console=ttyAMA0 gpupool_vm.out=hvc0 $cmdline"
else
	cmdline="console=ttyS0 $cmdline"
	# No PS/2 probing.
	cmdline+=" no_timer_check i8042.noaux i8042.nokbd i8042.nopnp"
	# No clocksource watchdog on the TSC: on a loaded host a TCG vCPU stalls for
	# milliseconds, the watchdog then marks the TSC unstable, and flipping the
	# sched_clock static key patches kernel text under the other vCPU, which
	# TCG does not always survive (seen once on 6.12: an int3 oops in
	# sched_clock_cpu from __sched_clock_work while fuzz_device ran).
	cmdline+=" tsc=reliable"
	# The TSC's rate, from the host: under TCG the guest reads the host's TSC,
	# and on a loaded host the guest's own calibration against the PIT can be
	# off many times over (seen: 99.9 MHz for 2596, so that the guest's clock
	# ran 26 times too fast and a 37 s test "timed out" after 840 s).  Taken
	# from the host kernel's calibration where the host's TSC is constant.
	if grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
		tsc_khz=$(dmesg 2>/dev/null | sed -n \
			-e 's/.*tsc: Refined TSC clocksource calibration: \([0-9]*\)\.\([0-9]\{3\}\).*/\1\2/p' \
			-e 's/.*tsc: Detected \([0-9]*\)\.\([0-9]\{3\}\) MHz processor.*/\1\2/p' | tail -n 1)
		[ -n "$tsc_khz" ] && cmdline+=" tsc_early_khz=$tsc_khz"
	fi
fi
# A task stuck in the kernel for 60 s is reported (a splat) well before
# --timeout kills the VM.
cmdline+=" sysctl.kernel.hung_task_timeout_secs=60"
# The soft-lockup detector at 60 s instead of 20 (twice watchdog_thresh):
# a VM's vCPUs share one host thread (thread=single), and whatever stops
# that thread (a busy host; the host's own faults, see prealloc above)
# stops the guest's code while its clock runs on; the detector then blames
# whatever kernel code the vCPU was in.  A real lockup, code that never
# reschedules, is still reported.
cmdline+=" watchdog_thresh=30"
# RCU's stall warning at 60 s instead of 21, for the same reason: on a
# busy host an arm64 guest's reserve test was reported stalled in
# clear_page with its vCPU given 66 ticks of the 5924 that had passed.
cmdline+=" rcupdate.rcu_cpu_stall_timeout=60"
# Last, so that an extra "quiet" cannot hide splats or our markers from the
# console log the verdict is drawn from.
cmdline+="$cmdline_extra loglevel=7"

console=$vmdir/console.log
testlog=$vmdir/tests.log

if [ $shell = 1 ]; then
	echo "run-vm: booting $name with a shell (Ctrl-A x quits qemu)" >&2
	exec "${qemu[@]}" -append "$cmdline" -serial mon:stdio
fi

qemu+=(-append "$cmdline"
	-chardev "file,id=con,path=$console" -serial chardev:con
	-chardev "file,id=tst,path=$testlog" -monitor none)
# shellcheck disable=SC2054
case $arch in
x86_64) qemu+=(-serial chardev:tst) ;;
arm64) qemu+=(-device virtio-serial-pci -device virtconsole,chardev=tst) ;;
esac

# A kernel that crashes while booting, before it runs /init, has run none
# of our code (the module loads from /init): it is retried once, saying so;
# any other failure stands.  (Seen with a thread per vCPU: "Oops: int3" in
# 6.12's code being live-patched on the other vCPU.)
for attempt in 1 2; do
	: > "$console"; : > "$testlog"
	echo "run-vm: $name: booting $boot (smp=$smp mem=${mem_mb}M$([ $numa = 1 ] && echo ' numa=2 nodes'))" >&2
	t_start=$(date +%s.%N)
	timeout -k 5 "$timeout" "${qemu[@]}" > "$vmdir/qemu.out" 2>&1 &
	qpid=$!
	trap 'kill $qpid 2>/dev/null; exit 130' INT TERM

	# Stream the test output while it runs (a program's own output indented as
	# nested TAP); note when the first test starts.
	rm -f "$vmdir/.first-test"
	intest=0
	tail -n +1 -s 0.2 -f --pid=$qpid "$testlog" 2>/dev/null | while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		"# gpupool-test: begin "*)
			[ -f "$vmdir/.first-test" ] || date +%s.%N > "$vmdir/.first-test"
			intest=1 ;;
		"# gpupool-test: end "*) intest=0 ;;
		*) [ $intest = 1 ] && line="    $line" ;;
		esac
		[ $quiet = 1 ] || printf '%s\n' "$line"
	done
	set +e
	wait $qpid
	qrc=$?
	set -e
	t_end=$(date +%s.%N)
	trap - INT TERM

	timing=$(awk -v s="$t_start" -v e="$t_end" -v f="$(cat "$vmdir/.first-test" 2>/dev/null)" \
		'BEGIN { printf "total %.1fs", e - s; if (f != "") printf ", boot to first test %.1fs", f - s }')
	if [ $qrc -ne 0 ] && [ $qrc -ne 124 ] && [ $qrc -ne 137 ]; then
		echo "run-vm: qemu exited with status $qrc:" >&2
		sed 's/^/run-vm:   /' "$vmdir/qemu.out" >&2
	fi
	if [ "$attempt" = 1 ] && ! grep -q 'Run /init as init process' "$console" &&
	   grep -Eq 'Oops|Kernel panic|BUG:|general protection' "$console"; then
		cp "$console" "$vmdir/console.boot-crash.log"
		echo "run-vm: $name: the kernel crashed while booting, before /init (none of our code had run; console kept in $vmdir/console.boot-crash.log); booting once more" >&2
		continue
	fi
	break
done

python3 "$here/vmreport.py" --name "$name" --console "$console" \
	--tests-log "$testlog" --scratch "$scratch" --qemu-rc "$qrc" \
	--timeout "$timeout" --counts "$results/vm-$name.counts" \
	--timing "$timing"
