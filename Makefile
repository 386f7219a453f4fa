# gpupool - top-level build.  `make help` lists the targets.
#
# Userspace parts build into $(O) (default build/); the module builds in
# $(O)/kmod/<release>/ for each kernel so that several kernels never share
# object files.

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
include $(TOP)/mk/common.mk

# Looked up once (not on every use), quietly: with no headers installed it is
# empty, and the targets that need a kernel say what to do (need_kernel).
# For another machine's kernel, kbuild's way: ARCH=arm64
# CROSS_COMPILE=aarch64-linux-gnu- builds against the newest of Debian's
# arm64 headers that make deps unpacks (scripts/arm64-kernel.sh), or
# against KDIR=<any arm64 tree>, KVER then that tree's release.
ifeq ($(origin KVER),undefined)
ifneq ($(origin KDIR),undefined)
KVER := $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)
else
KVER := $(shell $(TOP)/scripts/default-kver.sh $(ARCH) 2>/dev/null)
endif
endif
ifeq ($(origin KDIR),undefined)
KDIR := $(if $(KVER),$(shell $(TOP)/scripts/default-kver.sh --kdir $(KVER)))
endif
define need_kernel
	@if [ -z "$(KVER)" ]; then \
		echo 'gpupool: no kernel headers are installed (nothing in /lib/modules/*/build),'; \
		echo 'so gpupool.ko cannot be built.  Either:'; \
		echo '  make deps                      install the headers and everything else the'; \
		echo '                                 build and the tests need (apt-get, as root)'; \
		echo '  make module KVER=<release>     build against /lib/modules/<release>/build'; \
		echo '  make module KDIR=<tree>        build against that kernel tree (ARCH=,'; \
		echo '                                 CROSS_COMPILE= for another architecture)'; \
		echo '  make lib tools                 build only the library and the tools'; \
		echo '(make check runs make deps itself, make demo make deps-demo.)'; \
		exit 1; \
	fi >&2
endef
# The kernels every `make check` tests: Debian's 6.1 and 6.12.  Quietly:
# make expands it on every run, and scripts/check.sh names a missing one.
TEST_KVERS = $(shell $(TOP)/vm/kernels.sh 2>/dev/null)

SUBMAKE = $(MAKE) --no-print-directory O=$(O) TOP=$(TOP)
# The test directories (tests/<dir>), each built by its own target.
TEST_DIRS = unit tools cudart_double cudadrv_double lib interpose vm tsan fuzz \
	containers slurm
# A cross build (another machine's compiler: CROSS_COMPILE=, CC=) leaves
# out the fuzzers, which are the build machine's clang's libFuzzer runs,
# and the container test, whose rootfs takes this machine's busybox.
CROSS_LEFT_OUT := fuzz containers
ifneq ($(TARGET_ARCH_NAME),$(BUILD_ARCH_NAME))
TEST_DIRS := $(filter-out $(CROSS_LEFT_OUT),$(TEST_DIRS))
endif

.PHONY: all module modules-all ksft lib tools slurm tests demo check bench deps deps-demo \
	$(addprefix tests-,$(TEST_DIRS)) \
	checkpatch install vm-test vm-shell deb clean help

PREFIX  ?= /usr/local
DESTDIR ?=

all: module lib tools tests

help:
	@echo 'make               build gpupool.ko (for KVER), the library, tools and tests'
	@echo 'make demo          install the demo'"'"'s deps, build, load the module (here or in a VM), run the demo'
	@echo 'make check         install deps, build, run every test suite; last line: N passed, N failed'
	@echo 'make bench         run the benchmarks (figures printed, nothing asserted)'
	@echo 'make module KVER=<release>   build gpupool.ko against that kernel'"'"'s headers'
	@echo 'make modules-all   build gpupool.ko for every kernel the tests use'
	@echo 'make checkpatch    run the kernel'"'"'s checkpatch.pl on kmod/ and core/; check they build as C89 (5.10)'
	@echo 'make deps          install build/test dependencies (apt-get as root)'
	@echo 'make deps-demo     install only what make demo needs (a subset of make deps)'
	@echo 'make deb           the Debian packages, into $(O)/deb/'

deps:
	@$(TOP)/scripts/deps.sh

deps-demo:
	@$(TOP)/scripts/deps.sh demo

module:
	$(need_kernel)
	@ARCH=$(ARCH) CROSS_COMPILE=$(CROSS_COMPILE) \
		$(TOP)/scripts/build-module.sh $(KVER) $(O)/kmod/$(KVER) $(KDIR)

# One target per kernel: `make -j` builds them side by side.
modules-all: $(addprefix module-for-,$(TEST_KVERS))
module-for-%:
	@$(TOP)/scripts/build-module.sh $* $(O)/kmod/$*

ksft:
	@$(TOP)/scripts/ksft-headers.sh $(KSFT_DIR)

lib:
	@$(SUBMAKE) -C userlib

install: lib
	@$(SUBMAKE) -C userlib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

tools: lib
	@$(SUBMAKE) -C tools
	@$(SUBMAKE) -C examples

# The SPANK plugin (slurm/; nothing without libslurm-dev's spank.h).
slurm:
	@$(SUBMAKE) -C slurm

# Each test directory is a target of its own, so that `make -j` builds
# them side by side; the library's tests and the fuzzers load the CUDA
# runtime double, which tests/lib's make also builds: it goes first, and
# the driver double before the interposer's tests.
tests: $(addprefix tests-,$(TEST_DIRS))
$(addprefix tests-,$(TEST_DIRS)): ksft lib tools slurm
	@$(SUBMAKE) -C tests/$(@:tests-%=%)
tests-lib tests-fuzz tests-interpose: tests-cudart_double
tests-interpose tests-vm: tests-cudadrv_double
# The runtime double reaches the driver double (its make builds it too:
# never both at once).
tests-cudart_double tests-tsan: tests-cudadrv_double
tests-vm: tests-cudart_double

# Run the VM suite (or a --filter of it, through VMFLAGS) on one kernel.
vm-test: module tests
	@$(TOP)/vm/run-vm.sh --kernel $(KVER) --ko $(O)/kmod/$(KVER)/gpupool.ko \
		--tests $(O)/tests/vm --build-dir $(O) $(VMFLAGS)

# A shell in the VM with the module at hand, for debugging.
vm-shell: module
	@$(TOP)/vm/shell.sh --kernel $(KVER) --ko $(O)/kmod/$(KVER)/gpupool.ko \
		--build-dir $(O) $(VMFLAGS)

check: deps
	@$(TOP)/scripts/check.sh

# The demo installs and builds only what it runs (scripts/demo.sh: the
# module for the kernel it uses, the library, the tools, the examples).
demo: deps-demo
	@$(TOP)/scripts/demo.sh

bench:
	@$(SUBMAKE) -C bench bfc
	@$(SUBMAKE) -C bench lib
	@$(SUBMAKE) -C bench loader
	@$(SUBMAKE) -C bench kmod

# The Debian packages (dpkg-buildpackage on a copy of the tree) in $(O)/deb/.
deb:
	@O=$(O) $(TOP)/scripts/deb.sh

checkpatch: ksft
	@$(TOP)/scripts/checkpatch.sh

clean:
	rm -rf $(O)
