#!/bin/sh
# Inside the VM (bench/io.mk's io-vm): an ext4 on a brd ramdisk, then
# io_bench on it.  $1: the io_bench binary; $2: MiB (default 256).
set -e
modprobe brd rd_nr=1 rd_size=1200000
mkfs.ext4 -q -F /dev/ram0 >/dev/null 2>&1
modprobe ext4 2>/dev/null || true
mkdir -p /run/io-bench
mount -t ext4 /dev/ram0 /run/io-bench
"$1" "${2:-256}" /run/io-bench
