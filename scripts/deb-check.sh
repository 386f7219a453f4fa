#!/bin/sh
# The Debian packages as an operator meets them (replaces the bare DKMS
# check: the package's DKMS hooks are what builds the module here):
#   - build them (scripts/deb.sh: this machine's and, cross-built, arm64's),
#     and an older version from the same tree (this machine's);
#   - lintian on both architectures' packages: no error, no warning;
#   - install the older version on this machine (apt-get install ./*.deb),
#     then upgrade to this one: `dkms status` shows gpupool built and
#     installed for every test kernel, the older version gone; DKMS builds
#     the installed sources for Debian's arm64 kernel too;
#   - a VM per test kernel loads the DKMS-built module with modprobe and a
#     modprobe.d file and runs scripts/deb-smoke.sh through the installed
#     gpupoolctl, library and Python package;
#   - purge: no file of the packages' (nor one they made) is left; the file
#     lists of the system directories before and after are compared.
#
# Usage: scripts/deb-check.sh KERNEL-RELEASE...   (as root)
# Writes $RESULTS_DIR/deb.counts.  Skips (says so) when not root, or when
# gpupool packages are already installed here (it never touches those).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
results=${RESULTS_DIR:-$O/results}
mkdir -p "$results"
work=$O/deb-check
pass=0 fail=0 n=0
# shellcheck source=scripts/tap.sh
. "$top/scripts/tap.sh"
ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version 2>/dev/null)
prev="$ver~prev"
pkgs="gpupool-dkms gpupool-tools libgpupool1 libgpupool-dev python3-gpupool slurm-gpupool"

skip() {
	echo "deb: SKIP: $*"
	echo "deb: 0 passed, 0 failed, 1 skipped"
	echo "pass=0 fail=0 skip=1" > "$results/deb.counts"
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip "needs root (apt-get install, dkms)"
[ -n "$ver" ] || skip "dpkg-parsechangelog missing (make deps: dpkg-dev)"
# One check at a time on this machine: it installs system-wide.
exec 8> /run/gpupool-deb-check.lock
flock -w 1800 8 || skip "another deb check held the lock for 30 minutes"
for p in $pkgs; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		skip "$p is installed on this machine already; not touching it"
	fi
done

rm -rf "$work"
mkdir -p "$work"
log=$work/log

# --- build and lintian -------------------------------------------------------
# One version: the packages', the module's (debian/rules writes it into the
# DKMS sources), the library's and the tools' (the VERSION file).
[ "$ver" = "$(cat "$top/VERSION")" ] &&
	grep -q "^PACKAGE_VERSION=\"$ver\"$" "$top/dkms.conf"
ok $? "debian/changelog, VERSION and dkms.conf say the same version ($ver)"
# Kernels before 5.10 are refused by name, by DKMS and by Kbuild, rather
# than failing to compile; every test kernel is admitted.
pat=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$top/dkms.conf")
r=0
for k in "$@" 5.10.0-32-amd64 7.2.13; do
	printf '%s\n' "$k" | grep -Eq "$pat" ||
		{ echo "# dkms.conf excludes $k"; r=1; }
done
for k in 4.19.0-27-amd64 5.9.16 5.4.0-216-generic; do
	printf '%s\n' "$k" | grep -Eq "$pat" &&
		{ echo "# dkms.conf admits $k"; r=1; }
done
[ -n "$pat" ] || r=1
ok $r "dkms.conf admits 5.10 and later (and $*), excludes older"
make -s -f "$top/Kbuild" VERSION=4 PATCHLEVEL=19 KERNELRELEASE=4.19.0-27-amd64 \
	src="$top" srctree=/nonexistent 2>&1 |
	grep -q 'needs Linux 5.10 or later; these headers are 4.19'
ok $? "Kbuild refuses 4.19 headers by name"
O=$O "$top/scripts/deb.sh" > "$work/deb.out" 2>&1
r=$?
[ $r -eq 0 ] || cat "$work/deb.out"
ok $r "make deb: $(grep -c '\.deb$' "$work/deb.out") packages in $O/deb/"
O=$O "$top/scripts/deb.sh" --version "$prev" --out "$work/prev" \
	--arch "$(dpkg --print-architecture)" > "$work/prev.out" 2>&1
r=$?
[ $r -eq 0 ] || cat "$work/prev.out"
ok $r "the previous version ($prev) from the same tree"

lintian --fail-on error,warning --pedantic "$O"/deb/*.changes > "$work/lintian.out" 2>&1
r=$?
grep -v '^running with root' "$work/lintian.out"
ok $r "lintian --pedantic: no error, no warning"

debs() {	# the packages this machine installs (its own, no debug symbols)
	for p in $pkgs; do
		ls "$1/${p}_"*"_$(dpkg --print-architecture).deb" \
			"$1/${p}_"*_all.deb 2>/dev/null
	done
}

# --- install, upgrade --------------------------------------------------------
# System directories where packages put files (and where their scripts or
# DKMS make more); dpkg's own status and apt's logs change by design, and
# DKMS makes its module-signing key (/var/lib/dkms/mok.*) at its first
# build on a machine and keeps it for every module: the dkms package's.
snapshot() {
	find /etc /usr /lib /var/lib /opt /boot -xdev \
		-path /var/lib/apt -prune -o -path /var/lib/dpkg -prune -o \
		-path /var/lib/systemd -prune -o -path /var/lib/ucf -prune -o \
		-name __pycache__ -path '/usr/lib/python3/dist-packages/*' -print -prune -o \
		-path '/usr/lib/python3*/__pycache__' -prune -o \
		-path '/var/lib/dkms/mok.*' -prune -o \
		-print 2>/dev/null | LC_ALL=C sort
}
snapshot > "$work/files.before"

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends --allow-downgrades "$@" >> "$log" 2>&1
}
dkms_has() {	# VERSION KERNEL: gpupool VERSION installed for KERNEL
	dkms status -m gpupool -v "$1" -k "$2" 2>/dev/null | grep -q ': installed'
}

# Interrupted after installing: purge, so that the next run is not skipped
# for finding gpupool installed.
# shellcheck disable=SC2086
trap 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $pkgs >> "$log" 2>&1; exit 130' INT TERM
# shellcheck disable=SC2046
apt_install $(debs "$work/prev")
r=$?
[ $r -eq 0 ] || tail -n 40 "$log"
ok $r "apt-get install the $prev packages"
r=0
for k in "$@"; do dkms_has "$prev" "$k" || r=1; done
ok $r "dkms status: gpupool/$prev installed for $*"

# shellcheck disable=SC2046
apt_install $(debs "$O/deb")
r=$?
[ $r -eq 0 ] || tail -n 40 "$log"
ok $r "apt-get install the $ver packages: an upgrade from $prev"
dkms status -m gpupool | sed 's/^/# /'
r=0
for k in "$@"; do
	dkms_has "$ver" "$k" || r=1
	[ -e "/lib/modules/$k/updates/dkms/gpupool.ko" ] ||
		[ -e "/lib/modules/$k/updates/dkms/gpupool.ko.xz" ] || r=1
done
dkms status -m gpupool -v "$prev" 2>/dev/null | grep -q . && r=1
[ -e "/usr/src/gpupool-$prev" ] && r=1
ok $r "dkms status: gpupool/$ver built and installed for $*; $prev gone"
# The installed sources, built by DKMS for Debian's arm64 kernel with
# dkms.conf's own MAKE line (what an arm64 machine runs natively): the
# arm64 headers (unpacked by make deps, scripts/arm64-kernel.sh) name
# their architecture and compiler themselves (aarch64-linux-gnu-gcc-12).
# DKMS's strip of the module is this machine's, which warns and leaves it
# whole.  Removed again before the purge below.
a64=$("$top/scripts/arm64-kernel.sh" list | tail -n 1)
a64dir=$([ -z "$a64" ] || "$top/scripts/arm64-kernel.sh" kdir "$a64")
r=1
if [ -n "$a64dir" ]; then
	dkms build -m gpupool -v "$ver" -k "$a64" -a aarch64 \
		--kernelsourcedir "$a64dir" >> "$log" 2>&1
	r=$?
	ko=/var/lib/dkms/gpupool/$ver/$a64/aarch64/module/gpupool.ko
	[ $r -eq 0 ] && modinfo -F vermagic "$ko" 2>/dev/null |
		grep -q "^$a64 .* aarch64" || r=1
	dkms remove -m gpupool -v "$ver" -k "$a64/aarch64" >> "$log" 2>&1
fi
[ $r -eq 0 ] || tail -n 30 "$log"
ok $r "dkms build for Debian's arm64 ${a64:-(no arm64 headers: make deps)}: an aarch64 gpupool.ko"
getent group gpupool > /dev/null
ok $? "the gpupool group exists"
/usr/bin/python3 "$top/scripts/cdi-check.py" --file /etc/cdi/gpupool.json --packaged
ok $? "postinst wrote /etc/cdi/gpupool.json: valid (CDI schema), root:gpupool 0660"
grep -q '^#options gpupool pool_size' /etc/modprobe.d/gpupool.conf
ok $? "/etc/modprobe.d/gpupool.conf installed"

# A C program built the way a user builds one: the installed pkg-config
# file, header and shared library.
# shellcheck disable=SC2046
cc -o "$work/hello" "$top/examples/hello_pool.c" $(pkg-config --cflags --libs gpupool) \
	>> "$log" 2>&1 && GPUPOOL_BACKEND=user "$work/hello" 4K >> "$log" 2>&1
r=$?
[ $r -eq 0 ] || tail -n 20 "$log"
ok $r "hello_pool built with the installed pkg-config file runs (user backend)"
# Byte-compiles, as an import by root does: purge must remove that too.
env -u PYTHONDONTWRITEBYTECODE /usr/bin/python3 -c 'import gpupool; print(gpupool.__file__)' >> "$log" 2>&1
ok $? "python3 imports the installed gpupool"
# The SPANK plugin where Debian's Slurm finds it (PluginDir), loaded by
# sbatch from a plugstack.conf naming it as the example does (by name):
# --gpupool in its help, a share above max= refused at submission.
sp=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/gpupool.so
mkdir -p "$work/slurm"
printf '%s\n' "ClusterName=debcheck" "SlurmctldHost=localhost" \
	"PlugStackConfig=$work/slurm/plugstack.conf" "NodeName=localhost CPUs=1" \
	"PartitionName=p Nodes=localhost Default=YES" > "$work/slurm/slurm.conf"
sed -n 's/^#\(optional gpupool\.so\).*/required gpupool.so max=1G/p' \
	/etc/slurm/plugstack.conf.d/gpupool.conf > "$work/slurm/plugstack.conf"
r=0
[ -f "$sp" ] && grep -q . "$work/slurm/plugstack.conf" || r=1
SLURM_CONF=$work/slurm/slurm.conf sbatch --help 2>&1 | grep -q -- '--gpupool=SIZE' || r=1
SLURM_CONF=$work/slurm/slurm.conf sbatch --gpupool=2G --wrap true > "$work/slurm/out" 2>&1 && r=1
grep -q 'max=1G' "$work/slurm/out" || r=1
[ $r -eq 0 ] || sed 's/^/# /' "$work/slurm/plugstack.conf" "$work/slurm/out"
ok $r "slurm-gpupool: $sp loads in sbatch (--gpupool, max= refuses 2G)"

# --- the VMs -----------------------------------------------------------------
for k in "$@"; do
	rm -f "$results/vm-deb-$k.counts"
	"$top/vm/run-vm.sh" --name "deb-$k" --kernel "$k" --build-dir "$O" \
		--tests "$work" --quiet \
		--run "sh $top/scripts/deb-smoke.sh $work/hello $ver" \
		> "$work/vm-$k.out" 2>&1
	r=$?
	# Counted here, as one test per kernel.
	rm -f "$results/vm-deb-$k.counts"
	[ $r -eq 0 ] || { cat "$work/vm-$k.out"; cat "$O/vm/deb-$k/tests.log"; }
	ok $r "VM on $k: modprobe with the modprobe.d options, gpupoolctl, libgpupool, python3-gpupool (log: $O/vm/deb-$k/tests.log)"
done

# --- purge -------------------------------------------------------------------
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $pkgs >> "$log" 2>&1
r=$?
[ $r -eq 0 ] || tail -n 40 "$log"
ok $r "apt-get purge"
trap - INT TERM
snapshot > "$work/files.after"
diff "$work/files.before" "$work/files.after" > "$work/files.diff"
r=$?
sed 's/^/# /' "$work/files.diff" | head -n 40
ok $r "purge leaves no file behind (the file lists before install and after purge are the same)"
dkms status -m gpupool 2>/dev/null | grep -q . && r=1 || r=0
ok $r "dkms status: no gpupool"
tap_done deb
