# Shared settings for every userspace part of the build.  Included by the top
# Makefile and by each sub-make so that flags are defined exactly once.

TOP   ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
O     ?= $(TOP)/build
# A relative O= means relative to where make was started; the sub-makes run
# in other directories, so pass it on as an absolute path.
override O := $(abspath $(O))

# Cross builds, in the kernel's way (ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
# or Debian's and autotools' (CC=aarch64-linux-gnu-gcc alone, as
# debian/rules passes it).  ARCH matters to the module's kbuild only; here
# the compiler decides: CROSS_COMPILE names it unless CC is given, and the
# binutils are the ones that compiler uses (-print-prog-name finds
# aarch64-linux-gnu-ar for a cross gcc, plain ar for the build machine's),
# never the build machine's by default.  AR= and OBJCOPY= still override.
CROSS_COMPILE ?=
ifeq ($(origin CC),default)
CC := $(if $(CROSS_COMPILE),$(CROSS_COMPILE)gcc,cc)
endif
ifeq ($(origin CXX),default)
CXX := $(if $(CROSS_COMPILE),$(CROSS_COMPILE)g++,c++)
endif
# The target's binutils: CROSS_COMPILE's, else the compiler's own.
gp_tool = $(if $(CROSS_COMPILE),$(CROSS_COMPILE)$(1),$(shell $(CC) -print-prog-name=$(1)))
ifeq ($(origin AR),default)
AR := $(call gp_tool,ar)
endif
OBJCOPY ?= $(call gp_tool,objcopy)
# The machine the code is for (aarch64, x86_64): the compiler's first
# triplet part, never `uname -m`, which is the build machine's.
TARGET_ARCH_NAME := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))
BUILD_ARCH_NAME  := $(shell uname -m)

# Our own userspace code: C11 (GNU dialect: kselftest_harness.h needs typeof
# and statement expressions), every warning an error.
WARN      := -Wall -Wextra -Werror
CSTD      := -std=gnu11
OPT       ?= -O2 -g
CPPFLAGS  += -I$(TOP)/include -I$(TOP)/include/uapi
CFLAGS    += $(CSTD) $(WARN) $(OPT) -fno-strict-aliasing
# arm64: pointer authentication and BTI landing pads, Debian's arm64
# hardening (dpkg-buildflags' hardening=+branch from Debian 13 on, which
# debian/rules adds on Debian 12): in every arm64 build, unless CFLAGS
# already chose a -mbranch-protection.
ifeq ($(TARGET_ARCH_NAME),aarch64)
ifeq (,$(filter -mbranch-protection=%,$(CFLAGS)))
CFLAGS    += -mbranch-protection=standard
endif
endif
# Tests run under AddressSanitizer and UndefinedBehaviorSanitizer.
SANFLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The CUDA toolkit's headers, when present: the library never links the
# runtime (it dlopens it), it only checks its own prototypes against them
# (userlib/cuda.h); without them it declares what it calls itself.  A
# native build takes $(CUDA_HOME)/include; a cross build the target's own
# headers from the toolkit's cross layout ($(CUDA_HOME)/targets/sbsa-linux
# for arm64 servers, NVIDIA's cuda-cross-sbsa), else none: never the
# build machine's.  CUDA_INC= overrides.
CUDA_HOME ?= /usr/local/cuda
CUDA_TARGET_aarch64 := sbsa-linux
CUDA_TARGET_x86_64  := x86_64-linux
ifeq ($(TARGET_ARCH_NAME),$(BUILD_ARCH_NAME))
CUDA_INC ?= $(CUDA_HOME)/include
else
CUDA_INC ?= $(CUDA_HOME)/targets/$(CUDA_TARGET_$(TARGET_ARCH_NAME))/include
endif
HAVE_CUDA := $(if $(wildcard $(CUDA_INC)/cuda_runtime.h),1,0)

# Where `make install` puts things (PREFIX, LIBDIR and DESTDIR are
# honoured); the interposer goes in a folder of its own, as a preloaded
# library without a soname should.
PREFIX        ?= /usr/local
LIBDIR        ?= $(PREFIX)/lib
INTERPOSE_DIR ?= $(LIBDIR)/gpupool

# kselftest headers, extracted from Debian's linux-source-6.1 at build time
# (see scripts/ksft-headers.sh); never committed.
KSFT_DIR  := $(O)/ksft
