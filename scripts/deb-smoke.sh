#!/bin/sh
# Inside the test VM (vm/run-vm.sh --run), after scripts/deb-check.sh has
# installed the packages on the host whose root the VM mounts: the module
# DKMS built and installed, loaded by modprobe with options from a
# modprobe.d file, used through the installed gpupoolctl, the installed
# libgpupool (a program built with the installed pkg-config file) and the
# installed Python package.  Exit status 0 when every line said ok.
#
# Usage: scripts/deb-smoke.sh HELLO VERSION
#   HELLO    examples/hello_pool.c built against the installed library
#   VERSION  the version the packages (and so the module) carry
set -u
hello=$1 ver=$2
rel=$(uname -r)
fails=0 n=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fails=$((fails + 1)); fi
}
cd /

# /etc is the host's and read-only here; modprobe also reads /run/modprobe.d
# (under another name than the package's example, which would shadow it).
mkdir -p /run/modprobe.d
echo "options gpupool pool_size=64M per_process_limit=16M" > /run/modprobe.d/gpupool-smoke.conf
path=$(modinfo -n gpupool 2>&1)
echo "# modinfo -n gpupool: $path"
case $path in /lib/modules/"$rel"/updates/dkms/gpupool.ko*) r=0 ;; *) r=1 ;; esac
ok $r "modprobe finds the module DKMS installed for $rel"
modprobe gpupool
ok $? "modprobe gpupool"
r=1
[ "$(cat /sys/module/gpupool/parameters/pool_size 2>/dev/null)" = 64M ] &&
	[ "$(cat /sys/module/gpupool/parameters/per_process_limit 2>/dev/null)" = 16M ] && r=0
ok $r "the options of the modprobe.d file took effect (pool_size=64M per_process_limit=16M)"
[ "$(cat /sys/module/gpupool/version 2>/dev/null)" = "$ver" ]
ok $? "the loaded module is version $ver"

/usr/sbin/gpupoolctl stat -m
ok $? "gpupoolctl stat"
/usr/sbin/gpupoolctl info
ok $? "gpupoolctl info"
/usr/sbin/gpupoolctl prometheus > /tmp/metrics.prom
r=$?
grep -q "^gpupool_build_info{version=\"$ver\"," /tmp/metrics.prom || r=1
grep -q '^gpupool_total_bytes{node="0"} 67108864$' /tmp/metrics.prom || r=1
ok $r "gpupoolctl prometheus: build_info $ver, 64 MiB on node 0"
if command -v promtool >/dev/null; then
	promtool check metrics < /tmp/metrics.prom
	ok $? "promtool check metrics"
fi

ldd "$hello" | grep -Eq "libgpupool.so.1 => (/usr)?/lib/[^ ]*/libgpupool.so.1 "
ok $? "hello_pool uses the installed libgpupool.so.1"
GPUPOOL_BACKEND=kernel "$hello" 4K 1M 3M
ok $? "hello_pool on the kernel backend"

/usr/bin/python3 - <<'PY'
import errno, sys
import gpupool
assert gpupool.__file__.startswith("/usr/lib/python3/dist-packages/"), gpupool.__file__
with gpupool.Pool(backend="kernel") as pool:
    a = pool.empty((1 << 20,), "uint8")
    a[:] = 7
    assert int(a.sum()) == 7 << 20
    # The module says EDQUOT; the library reports it as ENOMEM, naming
    # the limit.
    try:
        pool.buffer(32 << 20)
    except OSError as e:
        assert e.errno in (errno.EDQUOT, errno.ENOMEM), e
        assert "per_process_limit" in str(e), e
    else:
        sys.exit("a 32 MiB buffer got past per_process_limit=16M")
    print("python3-gpupool:", pool.info()["backend"], "backend; refused beyond per_process_limit")
PY
ok $? "python3-gpupool on the kernel backend, per_process_limit enforced"

modprobe -r gpupool
ok $? "modprobe -r gpupool"
echo "deb-smoke: $n tests, $fails failed"
[ $fails -eq 0 ]
