#!/bin/sh
# The kernel release to build gpupool.ko for when KVER is not given: the
# running kernel when its headers are installed, else the newest installed
# kernel headers (Debian's /lib/modules/<release>/build).
set -eu
running=$(uname -r)
if [ -e "/lib/modules/$running/build/Makefile" ]; then
	echo "$running"
	exit 0
fi
newest=$(ls -d /lib/modules/*/build 2>/dev/null | while read -r d; do
	[ -e "$d/Makefile" ] && basename "$(dirname "$d")"
done | sort -V | tail -n 1)
if [ -z "$newest" ]; then
	echo "default-kver: no kernel headers installed (/lib/modules/*/build);" \
	     "run: make deps" >&2
	exit 1
fi
echo "$newest"
