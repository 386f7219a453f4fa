# SPDX-License-Identifier: GPL-2.0
# The module benchmark (bench/kmod_bench.c): figures printed, nothing
# asserted.  It runs inside the test VM, which loads nothing itself: the
# program loads gpupool.ko ($GPUPOOL_KO) with pool_size=$KMOD_BENCH_POOL
# (default 1280M, room for the 1 GiB ALLOC) and unloads it.
#
#   make -f bench/kmod.mk                  build $(O)/bench/kmod/kmod_bench
#   make -f bench/kmod.mk run KVER=<rel>   build, boot the VM (4 GiB) and run it
#   make -f bench/kmod.mk run BOOTS=3      the same in 3 boots, and section 5's
#                                          verdict on the median of their ratios
#   make -f bench/kmod.mk run-dmem         section 5 on the dmem path, on a
#                                          7.2 kernel without debug options
#   make -f bench/kmod.mk run-dmem-debug   the same on the debug kernel
#   make -f bench/kmod.mk run-pmd          section 6 with 2 MiB entries
#   make -f bench/kmod.mk run-reclaim      reclaim_bench alone: ALLOC and
#                                          FREE against the module before
#                                          reclaim, and a request under
#                                          pressure against one from a free pool
#   make -f bench/kmod.mk run-arm64        cross-built for arm64, in an arm64
#                                          VM on Debian's arm64 kernel (4 KiB
#                                          pages); A64_KERNEL=64k on the 64K
#                                          kernel (below)
#
# or by hand:
#   vm/run-vm.sh --kernel <rel> --ko build/kmod/<rel>/gpupool.ko \
#       --tests build/bench/kmod --mem 4G --test-timeout 900 --timeout 1000
# The figures are in the streamed output and in build/vm/<rel>/tests.log.
# Under TCG every figure is slow; compare the ratios, not the times.
#
# `run` runs both programs of $(O)/bench/kmod, kmod_bench and
# reclaim_bench (bench/reclaim_bench.c), and builds the baseline modules
# (KMOD_BASE_REV, KMOD_CG_BASE_REV, KMOD_FORK_BASE_REV and
# KMOD_RECLAIM_BASE_REV, below) from git for the same kernel and hands
# them to the programs as $KMOD_BENCH_BASE_KO, $KMOD_BENCH_CG_BASE_KO,
# $KMOD_BENCH_FORK_BASE_KO and $KMOD_BENCH_RECLAIM_BASE_KO: sections 2b,
# 5, 6 and reclaim_bench's R1 load each in turn with
# this module in the same VM boot; section 5 also gets this module built
# as gpupoolb.ko and its baseline as gpupool.ko ($KMOD_BENCH_CG_SWAP_KO,
# $KMOD_BENCH_CG_SWAP_BASE_KO), to swap their names for half of its
# rounds.  An empty revision skips its comparison; so does a tree without
# git history.  KMOD_BENCH_SECTIONS, KMOD_BENCH_ALLOC_REPS,
# KMOD_BENCH_BASE_ROUNDS, KMOD_BENCH_BASE_REPS, KMOD_BENCH_CG_PARAMS,
# KMOD_BENCH_CG_DEPTH and KMOD_BENCH_FORK_ROUNDS, set here, reach the
# program in the VM (bench/kmod_bench.c says what they do).

TOP ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
include $(TOP)/mk/common.mk

KB_DIR := $(O)/bench/kmod
KVER   ?= $(shell $(TOP)/scripts/default-kver.sh)

# The baseline for "section 2 (ALLOC alone) no more than 5% slower than
# before": the parent of aa1f360, the commit that added kmod/figures.c
# (/proc/gpupool's bins and map from figures kept on the ALLOC/FREE path).
# It is the last module without that bookkeeping; `git log -- kmod/figures.c
# kmod/proc.c` finds it.
KMOD_BASE_REV ?= 784ca9af9e94f37090b4547c0b09367ba0e84db7
# The baseline of section 5 (ALLOC charged to cgroups): the last module
# before chunks were charged to cgroups (`git log -- kmod/cgroup.c`: the
# parent of the commit that added it).
KMOD_CG_BASE_REV ?= d816f5421c7f5a52f48eed3154eae7b15d46545b
# The baseline of section 6 (fork, usable buffers): the module before
# chunk mappings dropped VM_MIXEDMAP (the parent of fd42e1b,
# `git log -- kmod/chunk.c`), whose fork copied every PTE.
KMOD_FORK_BASE_REV ?= f491bea904c3773e7324fbe150b7fe07291232c9
# The baseline of reclaim_bench's R1 (ALLOC + FREE without pressure): the
# module before idle chunks were asked for (`git log -- kmod/reclaim.c`:
# the parent of the commit that added it).
KMOD_RECLAIM_BASE_REV ?= 001f439e570fbe0de994cc9775c9c1841369b8fb

# A baseline module: its sources (kmod, core, include, Kbuild) from git at
# revision $(1), built with that revision's own scripts/build-module.sh,
# for kernel $(2) (a release, or a build tree's release with $(3) the
# tree).  With $(4), a module name, it is built under that name (its .ko,
# /dev and /proc entries, and its tracepoints' system), so that it loads
# beside gpupool: section 5 compares the two side by side.  The renaming
# edits three lines of the revision's sources and fails, saying which,
# where one of them is not as expected.  A directory per revision: git
# archive gives the files their commit's time, so objects built from
# another revision could look newer than them.  The sources are taken
# afresh each time (a few files); kbuild then rebuilds only what changed.
base_dir = $(O)/bench/kmod-baseline/$(1)$(if $(2),-$(2))
base_ko = $(call base_dir,$(1),$(3))/$(2)/$(or $(3),gpupool).ko
have_rev = $(if $(1),$(shell git -C $(TOP) cat-file -e $(1)^{commit} \
	2>/dev/null && echo 1))
# Section 5's baseline goes by this name.
CG_BASE_NAME := gpupoolb
define rename_base
	cd $(1) && \
	sed -i 's/^obj-m := gpupool\.o$$/obj-m := $(2).o/; s/^gpupool-y /$(2)-y /' Kbuild && \
	sed -i 's/^\(#define GPUPOOL_NAME\t\)"gpupool"$$/\1"$(2)"/' kmod/gpupool.h && \
	sed -i 's/^#define TRACE_SYSTEM gpupool$$/#define TRACE_SYSTEM $(2)/' kmod/gpupool_trace.h && \
	{ grep -q '^obj-m := $(2)\.o$$' Kbuild && ! grep -q '^gpupool-y ' Kbuild || \
		{ echo "kmod bench: cannot rename the baseline: Kbuild's obj-m"; exit 1; }; } && \
	{ grep -q '^#define GPUPOOL_NAME.*"$(2)"$$' kmod/gpupool.h || \
		{ echo "kmod bench: cannot rename the baseline: GPUPOOL_NAME"; exit 1; }; } && \
	{ grep -q '^#define TRACE_SYSTEM $(2)$$' kmod/gpupool_trace.h || \
		{ echo "kmod bench: cannot rename the baseline: TRACE_SYSTEM"; exit 1; }; }
endef
# Build a module from the sources that command $(1) writes to stdout as a
# tar of kmod core include Kbuild VERSION scripts/build-module.sh, into
# directory $(2) for kernel $(3) (build tree $(4)), under name $(5).
define build_mod
	src=$(2)/src && rm -rf $$src && mkdir -p $$src && \
	$(1) | tar -x -C $$src && \
	$(if $(5),( $(call rename_base,$$src,$(5)) ) &&) \
	$$src/scripts/build-module.sh $(3) $(2)/$(3) $(4)
endef
MOD_FILES := kmod core include Kbuild VERSION scripts/build-module.sh
define build_base
	@if [ "$(call have_rev,$(1))" = 1 ]; then \
		$(call build_mod,git -C $(TOP) archive --format=tar $(1) $(MOD_FILES),$(call base_dir,$(1),$(4)),$(2),$(3),$(4)); \
	else \
		echo "kmod bench: no baseline module (revision '$(1)' not in git here): its section is not compared"; \
	fi
endef
# This module as it is in the tree, built under name $(3) for kernel $(1)
# (build tree $(2)): section 5 swaps the two modules' names for half of
# its rounds (bench/kmod_bench.c, struct cg_pair).
renamed_dir = $(O)/bench/kmod-renamed/$(1)
renamed_ko = $(call renamed_dir,$(2))/$(1)/$(2).ko
define build_renamed
	@$(call build_mod,tar -C $(TOP) -c $(MOD_FILES),$(call renamed_dir,$(3)),$(1),$(2),$(3))
endef
base_env = $(if $(call have_rev,$(2)),--env $(1)=$(call base_ko,$(2),$(3),$(4)))
# Section 5's modules under each other's names, for kernel $(1).
swap_env = $(if $(call have_rev,$(KMOD_CG_BASE_REV)),\
	--env KMOD_BENCH_CG_SWAP_KO=$(call renamed_ko,$(1),$(CG_BASE_NAME)) \
	--env KMOD_BENCH_CG_SWAP_BASE_KO=$(call base_ko,$(KMOD_CG_BASE_REV),$(1)))

.PHONY: all run run-arm64 arm64-base run-reclaim run-dmem run-dmem-debug run-pmd debug-base debug-renamed \
	baseline
BENCHES := $(KB_DIR)/kmod_bench $(KB_DIR)/reclaim_bench
all: $(BENCHES)

$(KB_DIR)/%: $(TOP)/bench/%.c $(TOP)/bench/kmod_util.h \
		$(TOP)/include/uapi/linux/gpupool.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g $< -o $@

baseline:
	$(call build_base,$(KMOD_BASE_REV),$(KVER))
	$(call build_base,$(KMOD_CG_BASE_REV),$(KVER),,$(CG_BASE_NAME))
	$(call build_base,$(KMOD_CG_BASE_REV),$(KVER))
	$(call build_renamed,$(KVER),,$(CG_BASE_NAME))
	$(call build_base,$(KMOD_FORK_BASE_REV),$(KVER))
	$(call build_base,$(KMOD_RECLAIM_BASE_REV),$(KVER))

BENCH_VARS := KMOD_BENCH_SECTIONS KMOD_BENCH_ALLOC_REPS \
	KMOD_BENCH_BASE_ROUNDS KMOD_BENCH_BASE_REPS KMOD_BENCH_CG_PARAMS \
	KMOD_BENCH_CG_DEPTH \
	KMOD_BENCH_FORK_ROUNDS KMOD_BENCH_RECLAIM_ROUNDS
bench_env = $(foreach v,$(1),$(if $($(v)),--env $(v)=$($(v))))
BENCH_ENV = $(call bench_env,$(BENCH_VARS))

# BOOTS=N: N boots, one after another (build/vm/kmod-bench-<rel>-boot<i>/),
# and section 5's verdict on the median of their ratios
# (bench/section5-boots.sh).
BOOTS ?= 1
run: $(BENCHES) baseline
	$(MAKE) -C $(TOP) --no-print-directory module KVER=$(KVER)
	@[ "$(BOOTS)" -ge 1 ] 2>/dev/null || { echo "kmod bench: BOOTS=$(BOOTS): a number of boots, 1 or more"; exit 1; }
	@logs=""; for b in $$(seq 1 $(BOOTS)); do \
		name=kmod-bench-$(KVER)$$([ $(BOOTS) -eq 1 ] || echo -boot$$b); \
		$(TOP)/vm/run-vm.sh --kernel $(KVER) --name $$name \
		--build-dir $(O) \
		--ko $(O)/kmod/$(KVER)/gpupool.ko --tests $(KB_DIR) \
		$(call base_env,KMOD_BENCH_BASE_KO,$(KMOD_BASE_REV),$(KVER)) \
		$(call base_env,KMOD_BENCH_CG_BASE_KO,$(KMOD_CG_BASE_REV),$(KVER),$(CG_BASE_NAME)) \
		$(call swap_env,$(KVER)) \
		$(call base_env,KMOD_BENCH_FORK_BASE_KO,$(KMOD_FORK_BASE_REV),$(KVER)) \
		$(call base_env,KMOD_BENCH_RECLAIM_BASE_KO,$(KMOD_RECLAIM_BASE_REV),$(KVER)) \
		$(BENCH_ENV) --mem 4G --test-timeout 1800 --timeout 2000 || exit 1; \
		logs="$$logs $(O)/vm/$$name/tests.log"; \
	done; \
	if [ $(BOOTS) -gt 1 ]; then $(TOP)/bench/section5-boots.sh $$logs; fi

# arm64 (vm/README.md, "The arm64 VMs"): kmod_bench cross-built
# ($(A64_CROSS)) into $(O)/arm64/bench/kmod and the module into
# $(O)/arm64/kmod/<release>, as scripts/check.sh's arm64 build does, run
# in an arm64 VM (qemu-system-aarch64, TCG) on A64_KERNEL: deb, Debian's
# arm64 kernel (4 KiB pages: the newest that scripts/arm64-kernel.sh
# unpacked, or A64_KVER=<release>), or 64k, the 64K kernel
# (scripts/test-kernel.sh arm64-64k, built once per machine and cached).
# Sections 1, 2 and 6 by default (KMOD_BENCH_SECTIONS chooses others):
# each takes its ratios within its own run (a usable buffer against an
# anonymous locked one, a 1 GiB ALLOC against a 4 KiB one, a fill against
# 2 MiB hugetlbfs pages and anonymous THP beside it), and section 2b:
# KMOD_BASE_REV's module built from git for the same kernel (that
# revision's build-module.sh passes ARCH and CROSS_COMPILE on through the
# environment; its blocks are 2 MiB of any page size).  The other
# baselines are not built for arm64: sections 5 and 6's comparisons and
# R1 are run on x86 only (KMOD_RECLAIM_BASE_REV's module holds
# BUILD_BUG_ON(GP_BLOCK_ORDER != PMD_ORDER), false on 64 KiB pages).
A64_CROSS   ?= aarch64-linux-gnu-
A64_KERNEL  ?= deb
A64_SECTIONS := 126
A64_O       := $(O)/arm64
ifneq ($(filter run-arm64 arm64-base,$(MAKECMDGOALS)),)
ifeq ($(A64_KERNEL),64k)
A64_KDIR := $(shell $(TOP)/scripts/test-kernel.sh arm64-64k)
A64_KVER := $(shell cat $(A64_KDIR)/include/config/kernel.release 2>/dev/null)
A64_BOOT := --kernel $(A64_KDIR)/arch/arm64/boot/Image --kbuild $(A64_KDIR)
else ifeq ($(A64_KERNEL),deb)
A64_KVER ?= $(shell $(TOP)/scripts/default-kver.sh arm64)
A64_KDIR := $(shell $(TOP)/scripts/default-kver.sh --kdir $(A64_KVER))
A64_BOOT := --kernel $(A64_KVER)
else
$(error kmod bench: A64_KERNEL=$(A64_KERNEL): deb or 64k)
endif
A64_BASE := $(call base_env,KMOD_BENCH_BASE_KO,$(KMOD_BASE_REV),$(A64_KVER))
endif
run-arm64: $(if $(A64_BASE),arm64-base)
	@[ -n "$(A64_KVER)" ] || { echo "kmod bench: no arm64 kernel (A64_KERNEL=$(A64_KERNEL))"; exit 1; }
	$(MAKE) --no-print-directory -f $(TOP)/bench/kmod.mk TOP=$(TOP) \
		O=$(A64_O) CROSS_COMPILE=$(A64_CROSS) $(A64_O)/bench/kmod/kmod_bench
	$(MAKE) -C $(TOP) --no-print-directory module ARCH=arm64 \
		CROSS_COMPILE=$(A64_CROSS) O=$(A64_O) KVER=$(A64_KVER) \
		KDIR=$(A64_KDIR)
	$(TOP)/vm/run-vm.sh $(A64_BOOT) --name kmod-bench-arm64-$(A64_KERNEL) \
		--build-dir $(O) --ko $(A64_O)/kmod/$(A64_KVER)/gpupool.ko \
		--tests $(A64_O)/bench/kmod --filter kmod_bench $(A64_BASE) \
		--env KMOD_BENCH_SECTIONS=$(or $(KMOD_BENCH_SECTIONS),$(A64_SECTIONS)) \
		$(call bench_env,$(filter-out KMOD_BENCH_SECTIONS,$(BENCH_VARS))) \
		--mem 4G --test-timeout 1800 --timeout 2000

arm64-base: export ARCH := arm64
arm64-base: export CROSS_COMPILE := $(A64_CROSS)
arm64-base:
	$(call build_base,$(KMOD_BASE_REV),$(A64_KVER),$(A64_KDIR))

# reclaim_bench alone (the `r` section: R1 against the module before
# reclaim, R2 under pressure), in a VM of its own.
run-reclaim: $(KB_DIR)/reclaim_bench
	$(call build_base,$(KMOD_RECLAIM_BASE_REV),$(KVER))
	$(MAKE) -C $(TOP) --no-print-directory module KVER=$(KVER)
	$(TOP)/vm/run-vm.sh --kernel $(KVER) --name kmod-reclaim-$(KVER) \
		--build-dir $(O) --ko $(O)/kmod/$(KVER)/gpupool.ko \
		--tests $(KB_DIR) --filter reclaim_bench \
		$(call base_env,KMOD_BENCH_RECLAIM_BASE_KO,$(KMOD_RECLAIM_BASE_REV),$(KVER)) \
		$(BENCH_ENV) --mem 4G --test-timeout 1800 --timeout 2000

# Sections on a 7.2 kernel built here, this module against a baseline
# built from git for it, in one boot:
#  - run-dmem: section 5 with cgroup_limits=auto (the dmem path) against
#    the module before cgroup accounting, on the bench's dmem kernel
#    (bench/dmem-kernel.sh: the check's debug kernel without its debugging
#    options, built once, 706 s on two cores here).  run-dmem-debug: the
#    same on the debug kernel itself, where KASAN and lockdep weigh on
#    dmem's charge far more than on the rest of an ALLOC.
#  - run-pmd: section 6 with huge_maps (2 MiB entries, Linux 6.15 and
#    later) against the module before fork stopped copying, on the debug
#    kernel of `make check` (CONFIG_CGROUP_DMEM and transparent huge
#    pages; scripts/debug-kernel.sh builds it or finds it in its cache),
#    whose debug options slow both modules alike.
# Compare the ratios only.
DEBUG_KBUILD = $(shell $(TOP)/scripts/debug-kernel.sh 2>/dev/null)
# (its progress on stderr: the first build takes a while)
DMEM_KBUILD = $(shell $(TOP)/bench/dmem-kernel.sh)
# $(1): the run's name, $(2): the section, $(3): the variable naming the
# baseline module to the program, $(4): the baseline's revision, $(5): the
# name it is built under (none: gpupool); with $(6) (section 5), also the
# two modules under each other's names; $(7): the kernel's build tree,
# $(8) the script that gave it.
define debug_run
	@kb='$(7)'; [ -n "$$kb" ] || { \
		echo "kmod bench: no kernel to run on ($(8) failed)"; exit 1; }; \
	rel=$$(cat $$kb/include/config/kernel.release) && \
	$(TOP)/scripts/build-module.sh $$rel $(O)/kmod/dmem-$$rel $$kb >/dev/null && \
	$(MAKE) --no-print-directory -f $(TOP)/bench/kmod.mk O=$(O) TOP=$(TOP) \
		debug-base BASE_REV=$(4) BASE_NAME=$(5) KVER=$$rel DMEM_KB=$$kb && \
	$(if $(6),$(MAKE) --no-print-directory -f $(TOP)/bench/kmod.mk O=$(O) \
		TOP=$(TOP) debug-base BASE_REV=$(4) BASE_NAME= KVER=$$rel \
		DMEM_KB=$$kb && \
	$(MAKE) --no-print-directory -f $(TOP)/bench/kmod.mk O=$(O) \
		TOP=$(TOP) debug-renamed KVER=$$rel DMEM_KB=$$kb &&) \
	$(TOP)/vm/run-vm.sh --kernel $$kb/arch/x86/boot/bzImage --kbuild $$kb \
		--no-pvh --name kmod-bench-$(1) --ko $(O)/kmod/dmem-$$rel/gpupool.ko \
		--tests $(KB_DIR) --env KMOD_BENCH_SECTIONS=$(2) \
		--env $(3)=$(call base_ko,$(4),$$rel,$(5)) \
		$(if $(6),--env KMOD_BENCH_CG_SWAP_KO=$(call renamed_ko,$$rel,$(CG_BASE_NAME)) \
		--env KMOD_BENCH_CG_SWAP_BASE_KO=$(call base_ko,$(4),$$rel)) \
		$(BENCH_ENV) --mem 4G --test-timeout 1800 --timeout 2000
endef

run-dmem: $(KB_DIR)/kmod_bench
	$(call debug_run,dmem,5,KMOD_BENCH_CG_BASE_KO,$(KMOD_CG_BASE_REV),$(CG_BASE_NAME),swap,$(DMEM_KBUILD),bench/dmem-kernel.sh)

run-dmem-debug: $(KB_DIR)/kmod_bench
	$(call debug_run,dmem-debug,5,KMOD_BENCH_CG_BASE_KO,$(KMOD_CG_BASE_REV),$(CG_BASE_NAME),swap,$(DEBUG_KBUILD),scripts/debug-kernel.sh)

run-pmd: $(KB_DIR)/kmod_bench
	$(call debug_run,pmd,6,KMOD_BENCH_FORK_BASE_KO,$(KMOD_FORK_BASE_REV),,,$(DEBUG_KBUILD),scripts/debug-kernel.sh)

debug-base:
	$(call build_base,$(BASE_REV),$(KVER),$(DMEM_KB),$(BASE_NAME))

debug-renamed:
	$(call build_renamed,$(KVER),$(DMEM_KB),$(CG_BASE_NAME))
