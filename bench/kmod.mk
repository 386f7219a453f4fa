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
#
# `run` also builds the baseline module (KMOD_BASE_REV, below) from git for
# the same kernel and hands it to the program as $KMOD_BENCH_BASE_KO: the
# section 2 comparison loads the two in turn in the same VM boot.
# KMOD_BASE_REV= (empty) skips it; so does a tree without git history.
# KMOD_BENCH_SECTIONS, KMOD_BENCH_ALLOC_REPS, KMOD_BENCH_BASE_ROUNDS and
# KMOD_BENCH_BASE_REPS, set here, reach the program in the VM
# (bench/kmod_bench.c says what they do).

TOP ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
include $(TOP)/mk/common.mk

KB_DIR := $(O)/bench/kmod
KVER   ?= $(shell $(TOP)/scripts/default-kver.sh)

# The baseline for "section 2 (ALLOC alone) no more than 5% slower than
# before": the parent of aa1f360, the commit that added kmod/figures.c
# (/proc/gpupool's bins and map from figures kept on the ALLOC/FREE path).
# It is the last module without that bookkeeping; `git log -- kmod/figures.c
# kmod/proc.c` finds it.  Its sources (kmod, core, include, Kbuild) come
# from git and build with its own scripts/build-module.sh.
KMOD_BASE_REV ?= 784ca9af9e94f37090b4547c0b09367ba0e84db7
# A directory per revision: git archive gives the files their commit's
# time, so objects built from another revision could look newer than them.
KB_BASE := $(O)/bench/kmod-baseline/$(KMOD_BASE_REV)
BASE_KO := $(KB_BASE)/$(KVER)/gpupool.ko
HAVE_BASE := $(if $(KMOD_BASE_REV),$(shell git -C $(TOP) cat-file -e \
	$(KMOD_BASE_REV)^{commit} 2>/dev/null && echo 1))

.PHONY: all run baseline
all: $(KB_DIR)/kmod_bench

$(KB_DIR)/kmod_bench: $(TOP)/bench/kmod_bench.c $(TOP)/include/uapi/linux/gpupool.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g $< -o $@

# The baseline's sources are taken afresh from git each time (a few files);
# kbuild then rebuilds only what changed.
baseline:
ifeq ($(HAVE_BASE),1)
	@rm -rf $(KB_BASE)/src && mkdir -p $(KB_BASE)/src
	git -C $(TOP) archive --format=tar $(KMOD_BASE_REV) kmod core include \
		Kbuild VERSION scripts/build-module.sh | tar -x -C $(KB_BASE)/src
	$(KB_BASE)/src/scripts/build-module.sh $(KVER) $(KB_BASE)/$(KVER)
else
	@echo "kmod bench: no baseline module (KMOD_BASE_REV '$(KMOD_BASE_REV)' not in git here): section 2 is not compared"
endif

run: $(KB_DIR)/kmod_bench baseline
	$(MAKE) -C $(TOP) --no-print-directory module KVER=$(KVER)
	$(TOP)/vm/run-vm.sh --kernel $(KVER) --name kmod-bench-$(KVER) \
		--ko $(O)/kmod/$(KVER)/gpupool.ko --tests $(KB_DIR) \
		$(if $(filter 1,$(HAVE_BASE)),--env KMOD_BENCH_BASE_KO=$(BASE_KO)) \
		$(foreach v,KMOD_BENCH_SECTIONS KMOD_BENCH_ALLOC_REPS KMOD_BENCH_BASE_ROUNDS KMOD_BENCH_BASE_REPS,$(if $($(v)),--env $(v)=$($(v)))) \
		--mem 3G --test-timeout 1800 --timeout 2000
