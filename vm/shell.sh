#!/bin/sh
# Boot a kernel with the host's root filesystem and get a root shell in the
# guest, for debugging the module by hand:
#   vm/shell.sh --kernel 6.1.0-56-amd64 --ko build/kmod/6.1.0-56-amd64/gpupool.ko
#   vm/shell.sh --kernel 6.12.117+deb12-amd64 --ko ... --load "pool_size=64M" --numa
# Takes vm/run-vm.sh's options (--kernel, --kbuild, --ko, --mem, --smp,
# --numa, --cmdline-extra ...), plus --load PARAMS to insmod the module
# before the shell starts.  The console (kernel messages and the shell) is
# this terminal; `exit` or Ctrl-D powers the VM off, Ctrl-A x kills qemu.
# The scratch directory (writable, shared with the host) is
# build/vm/<name>/scratch; the rest of the host's filesystem is read-only.
exec "$(dirname "$0")/run-vm.sh" --shell "$@"
