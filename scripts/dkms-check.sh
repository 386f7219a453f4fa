#!/bin/bash
# The DKMS check: package the module source exactly as an operator would
# install it, then `dkms add`, `dkms build` for every kernel we test, and
# `dkms remove`.  (Installing into this machine's own kernel is not possible
# here; the build is the part that breaks in the field.)
#
# Usage: scripts/dkms-check.sh KERNEL-RELEASE...
# Uses dkms's real locations (/usr/src/gpupool-<ver>, /var/lib/dkms) as root.
# If a gpupool of the same version that this script did not put there is
# already registered, it leaves it alone and uses private trees under
# build/dkms instead.  Writes build/results/dkms.counts (one test for the
# add/remove cycle and one per kernel build).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
results=${RESULTS_DIR:-$top/build/results}
mkdir -p "$results"
counts="$results/dkms.counts"
ver=$(cat "$top/VERSION")
pass=0 fail=0 skip=0

finish() {
	echo "pass=$pass fail=$fail skip=$skip" > "$counts"
	echo "dkms: $pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
	exit
}

conf_ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
if [ "$conf_ver" != "$ver" ]; then
	echo "dkms: dkms.conf PACKAGE_VERSION=$conf_ver but VERSION says $ver"
	fail=$((fail + 1))
	finish
fi
if ! command -v dkms >/dev/null || [ "$(id -u)" -ne 0 ]; then
	echo "dkms: SKIP: needs root and the dkms package (apt-get install dkms)"
	skip=1
	finish
fi

src_tree=/usr/src dkms_tree=/var/lib/dkms
marker=.gpupool-dkms-check
if [ -e "$src_tree/gpupool-$ver" ] && [ ! -e "$src_tree/gpupool-$ver/$marker" ]; then
	echo "dkms: gpupool-$ver is installed on this machine; checking in private trees"
	src_tree=$top/build/dkms/src dkms_tree=$top/build/dkms/tree
	mkdir -p "$src_tree" "$dkms_tree"
fi
opts=(--sourcetree "$src_tree" --dkmstree "$dkms_tree")
pkg="$src_tree/gpupool-$ver"

cleanup() {
	dkms remove "${opts[@]}" -m gpupool -v "$ver" --all >/dev/null 2>&1
	rm -rf "$pkg"
}
cleanup

# What the package holds: exactly what Kbuild needs, nothing from build/.
mkdir -p "$pkg/include"
cp -a "$top/dkms.conf" "$top/Kbuild" "$top/VERSION" "$top/kmod" "$top/core" "$pkg/"
cp -a "$top/include/uapi" "$pkg/include/"
touch "$pkg/$marker"

log="$results/dkms.log"
: > "$log"
if dkms add "${opts[@]}" -m gpupool -v "$ver" >> "$log" 2>&1; then
	for k in "$@"; do
		if dkms build "${opts[@]}" -m gpupool -v "$ver" -k "$k" >> "$log" 2>&1 &&
		   [ -e "$dkms_tree/gpupool/$ver/$k/x86_64/module/gpupool.ko" -o \
		     -e "$dkms_tree/gpupool/$ver/$k/x86_64/module/gpupool.ko.xz" ]; then
			echo "ok dkms build $k"
			pass=$((pass + 1))
		else
			echo "not ok dkms build $k (log: $log)"
			tail -n 30 "$log"
			find "$dkms_tree/gpupool/$ver/build" -name make.log -exec tail -n 30 {} \; 2>/dev/null
			fail=$((fail + 1))
		fi
	done
	if dkms remove "${opts[@]}" -m gpupool -v "$ver" --all >> "$log" 2>&1 &&
	   ! dkms status "${opts[@]}" -m gpupool -v "$ver" 2>/dev/null | grep -q gpupool; then
		echo "ok dkms add/remove"
		pass=$((pass + 1))
	else
		echo "not ok dkms remove (log: $log)"
		fail=$((fail + 1))
	fi
else
	echo "not ok dkms add (log: $log)"
	cat "$log"
	fail=$((fail + 1))
fi
cleanup
finish
