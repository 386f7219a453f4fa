# SPDX-License-Identifier: GPL-2.0
# The module benchmark (bench/kmod_bench.c): figures printed, nothing
# asserted.  It runs inside the test VM, which loads nothing itself: the
# program loads gpupool.ko ($GPUPOOL_KO) with pool_size=$KMOD_BENCH_POOL
# (default 1280M, room for the 1 GiB ALLOC) and unloads it.
#
#   make -f bench/kmod.mk                  build $(O)/bench/kmod/kmod_bench
#   make -f bench/kmod.mk run KVER=<rel>   build, boot the VM (3 GiB) and run it
#
# or by hand:
#   vm/run-vm.sh --kernel <rel> --ko build/kmod/<rel>/gpupool.ko \
#       --tests build/bench/kmod --mem 3G --test-timeout 900 --timeout 1000
# The figures are in the streamed output and in build/vm/<rel>/tests.log.
# Under TCG every figure is slow; compare the ratios, not the times.

TOP ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
include $(TOP)/mk/common.mk

KB_DIR := $(O)/bench/kmod
KVER   ?= $(shell $(TOP)/scripts/default-kver.sh)

.PHONY: all run
all: $(KB_DIR)/kmod_bench

$(KB_DIR)/kmod_bench: $(TOP)/bench/kmod_bench.c $(TOP)/include/uapi/linux/gpupool.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g $< -o $@

run: $(KB_DIR)/kmod_bench
	$(MAKE) -C $(TOP) --no-print-directory module KVER=$(KVER)
	$(TOP)/vm/run-vm.sh --kernel $(KVER) --name kmod-bench-$(KVER) \
		--ko $(O)/kmod/$(KVER)/gpupool.ko --tests $(KB_DIR) \
		--mem 3G --test-timeout 900 --timeout 1000
