#!/bin/sh
# `make install` as a user of the library meets it: install into a staging
# DESTDIR under a non-default PREFIX, then build examples/hello_pool.c
# against what was installed (pkg-config, shared and static), run both on
# the user backend, and check the shared library's interface (soname,
# exported symbols, no undefined ones of its own).
#
# Usage: scripts/install-check.sh   (O= the build directory, default build/)
# Writes $RESULTS_DIR/install.counts; exit status non-zero on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
prefix=/opt/gpupool
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$results"
pass=0 fail=0 n=0

# shellcheck source=scripts/tap.sh
. "$top/scripts/tap.sh"

make -C "$top" --no-print-directory O="$O" install PREFIX="$prefix" \
	DESTDIR="$stage" > "$stage/install.log" 2>&1
rc=$?
[ $rc -eq 0 ] || cat "$stage/install.log"
ok $rc "make install PREFIX=$prefix DESTDIR=<stage>"

root=$stage$prefix
missing=""
for f in lib/libgpupool.so.1 lib/libgpupool.so lib/libgpupool.a \
	 lib/pkgconfig/gpupool.pc include/gpupool.h; do
	[ -e "$root/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] || echo "# missing after install:$missing"
ok "$([ -z "$missing" ]; echo $?)" "installed files: library, soname link, archive, pkg-config file, header"

# pkg-config as a user's build would call it, pointed at the staging root.
export PKG_CONFIG_LIBDIR="$root/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$stage"
cflags=$(pkg-config --cflags gpupool) && libs=$(pkg-config --libs gpupool)
rc=$?
echo "# pkg-config: $cflags $libs"
[ $rc -eq 0 ] && echo "$libs" | grep -q -- "-L$root/lib"
ok $? "pkg-config names the installed prefix"

# shellcheck disable=SC2086
cc $cflags -o "$stage/hello_shared" "$top/examples/hello_pool.c" $libs \
	-Wl,-rpath,"$root/lib" &&
	GPUPOOL_BACKEND=user "$stage/hello_shared" 4K 1M > "$stage/run.log" 2>&1
rc=$?
[ $rc -eq 0 ] || cat "$stage/run.log"
ok $rc "hello_pool built with pkg-config against the shared library runs"

ldd "$stage/hello_shared" | grep -q "libgpupool.so.1 => $root/lib/"
ok $? "it loads the installed libgpupool.so.1"

# shellcheck disable=SC2086
cc $cflags -o "$stage/hello_static" "$top/examples/hello_pool.c" \
	$(pkg-config --static --libs-only-L gpupool) -Wl,-Bstatic -lgpupool \
	-Wl,-Bdynamic $(pkg-config --static --libs-only-l gpupool | sed 's/-lgpupool//') &&
	! ldd "$stage/hello_static" | grep -q libgpupool &&
	GPUPOOL_BACKEND=user "$stage/hello_static" 4K > "$stage/run.log" 2>&1
rc=$?
[ $rc -eq 0 ] || cat "$stage/run.log"
ok $rc "hello_pool linked statically (pkg-config --static) runs"

readelf -d "$root/lib/libgpupool.so.1" | grep -q 'SONAME.*\[libgpupool\.so\.1\]'
ok $? "soname is libgpupool.so.1"

# The version script keeps everything but the gp_* API local.
others=$(nm -D --defined-only "$root/lib/libgpupool.so.1" |
	awk '$2 ~ /[TDBRVW]/ && $3 !~ /^gp_/ && $3 !~ /^GPUPOOL_/ {print $3}')
[ -z "$others" ] || echo "# exported beyond gp_*: $others"
ok "$([ -z "$others" ]; echo $?)" "exports only gp_* symbols"

# Same for the static archive: no bfc_* or internal symbol leaks into a
# program that links it.
others=$(nm -g --defined-only "$root/lib/libgpupool.a" 2>/dev/null |
	awk 'NF == 3 && $3 !~ /^gp_/ {print $3}')
[ -z "$others" ] || echo "# global in the archive beyond gp_*: $others"
ok "$([ -z "$others" ]; echo $?)" "the static archive defines only gp_* globals"

tap_done install
