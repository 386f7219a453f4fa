#!/bin/sh
# The library's and the interposer's suites built for arm64 and run on this
# (x86_64) machine under qemu-user (qemu-aarch64), on the user backend with
# the CUDA doubles built for arm64: what an arm64 build of the library does
# without a kernel of that architecture (the module's suites need the arm64
# VMs).
#
# UBSan alone: AddressSanitizer does not work under qemu-user here (a
# program that does nothing takes 20 s to start, mapping its shadow, and
# LeakSanitizer stops with "LeakSanitizer has encountered a fatal error",
# its thread suspension being ptrace's), and ThreadSanitizer's memory
# layout is not qemu's.  So the arm64 copy of the suites is built with
# SANFLAGS=-fsanitize=undefined into its own tree, and the interposer's
# ThreadSanitizer variant is not built.  A program the tests exec (the
# loader, gpupoolctl, a test re-run under LD_PRELOAD) is arm64 too: run by
# qemu through binfmt_misc (Debian's qemu-user-binfmt, registered by make
# deps).
#
# Usage: scripts/arm64-user.sh
#   builds into $O/arm64-user (O defaults to build/), runs
#   tests/lib and tests/interpose (asan/: UBSan-built here, and plain/)
#   through scripts/run-tests.sh with TEST_RUNNER=qemu-aarch64, and writes
#   the suites' counts (arm64-user-lib, -interpose, -interpose-plain) to
#   $RESULTS_DIR, with one test of the branch protection
#   (arm64-user-hardening); a build that fails is one failed test
#   (arm64-user-build).
# Needs gcc-aarch64-linux-gnu, libc6-dev:arm64, libubsan1:arm64,
# qemu-user and qemu-user-binfmt (make deps).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
export RESULTS_DIR="$results"
mkdir -p "$results"
b=$O/arm64-user
cross=aarch64-linux-gnu-
ubsan='-fsanitize=undefined -fno-omit-frame-pointer -fno-sanitize-recover=all'

for t in "${cross}gcc" qemu-aarch64 /lib/ld-linux-aarch64.so.1 \
	/usr/lib/aarch64-linux-gnu/libubsan.so.1; do
	command -v "$t" >/dev/null || {
		echo "arm64-user: $t missing: make deps (gcc-aarch64-linux-gnu, qemu-user, libc6-dev:arm64, libubsan1:arm64)"
		echo "pass=0 fail=1 skip=0" > "$results/arm64-user-build.counts"
		exit 1
	}
done

# The programs the tests exec (themselves again, the loader example,
# gpupoolctl) go to qemu-aarch64 through the kernel's binfmt_misc entry.
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || {
	echo "arm64-user: no binfmt_misc entry for qemu-aarch64: make deps (qemu-user-binfmt)"
	echo "pass=0 fail=1 skip=0" > "$results/arm64-user-build.counts"
	exit 1
}

# The doubles and the tests' objects under ccache like the rest (PATH).
if ! make -C "$top" --no-print-directory -j"$(nproc)" O="$b" \
	CROSS_COMPILE="$cross" SANFLAGS="$ubsan" VARIANTS=asan \
	lib tools tests-lib tests-interpose > "$results/arm64-user-build.log" 2>&1; then
	tail -n 30 "$results/arm64-user-build.log"
	echo "arm64-user: the arm64 build failed (log: $results/arm64-user-build.log)"
	echo "pass=0 fail=1 skip=0" > "$results/arm64-user-build.counts"
	exit 1
fi
rm -f "$results/arm64-user-build.counts"

# Branch protection (mk/common.mk, docs/development.md "Cross builds"):
# every object of the library and the interposer marked BTI and PAC, and
# the shared objects too wherever the toolchain's start files are (not
# Debian 12's: then the linker may not mark them, and must not).
feat() { "${cross}readelf" -n "$1" 2>/dev/null | sed -n 's/.*AArch64 feature: //p'; }
r=0
for o in "$b"/userlib/obj/*/*.o "$b"/userlib/obj/*/*/*.o "$b"/userlib/obj/*/*/*/*.o; do
	[ -f "$o" ] || continue
	[ "$(feat "$o")" = "BTI, PAC" ] || { echo "arm64-user: $o: not BTI, PAC"; r=1; }
done
crt=$(feat "$("${cross}gcc" -print-file-name=crti.o)")
for so in "$b"/userlib/libgpupool.so.1.* "$b"/userlib/libgpupool-interpose.so; do
	[ "$(feat "$so")" = "$crt" ] ||
		{ echo "arm64-user: $so: '$(feat "$so")', start files '$crt'"; r=1; }
done
echo "arm64-user: objects BTI, PAC; shared objects '${crt:-unmarked}' as the start files"
echo "pass=$((1 - r)) fail=$r skip=0" > "$results/arm64-user-hardening.counts"

# The programs load from the multiarch root (libc6:arm64 and
# libubsan1:arm64 in /usr/lib/aarch64-linux-gnu, through /etc/ld.so.cache,
# and their loader /lib/ld-linux-aarch64.so.1): no QEMU_LD_PREFIX.  With
# QEMU_LD_PREFIX=/usr/aarch64-linux-gnu the cross toolchain's loader took
# libc from that cache all the same, another build of glibc than its own,
# and every fork() spun forever in the child.
unset QEMU_LD_PREFIX
export TEST_RUNNER=qemu-aarch64
# No gdb for them: this machine's would debug qemu, not the arm64 program
# (tests/interpose/drv_entry's gdb test then skips, "no gdb").
mkdir -p "$b/no-gdb"
printf '#!/bin/sh\necho "gdb: none for arm64 programs under qemu-user" >&2\nexit 127\n' \
	> "$b/no-gdb/gdb"
chmod +x "$b/no-gdb/gdb"
export PATH="$b/no-gdb:$PATH"
export GPUPOOL_BACKEND=user
st=0
# read_file: qemu-user 7.2 has no io_uring and gives statx's
# STATX_DIOALIGN mask without its fields (zero: "no O_DIRECT"), so the
# O_DIRECT and fixed-buffer paths it tests cannot be reached here; the
# arm64 VMs run it.
TEST_SKIP=read_file \
TEST_SKIP_WHY="qemu-user: no io_uring, no STATX_DIOALIGN fields" \
	"$top/scripts/run-tests.sh" arm64-user-lib "$b/tests/lib" 600 || st=1
# rt_threads: 8 threads x 10^5 pairs, past its harness's 30 s under TCG
# (it runs on this machine's own build, with ASan and with TSan).
TEST_SKIP=rt_threads TEST_SKIP_WHY="qemu-user: too slow for 8 x 10^5 pairs" \
	"$top/scripts/run-tests.sh" arm64-user-interpose "$b/tests/interpose/asan" 600 || st=1
"$top/scripts/run-tests.sh" arm64-user-interpose-plain "$b/tests/interpose/plain" 600 || st=1
[ "$r" -eq 0 ] || st=1
exit $st
