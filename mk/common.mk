# Shared settings for every userspace part of the build.  Included by the top
# Makefile and by each sub-make so that flags are defined exactly once.

TOP   ?= $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
O     ?= $(TOP)/build
# A relative O= means relative to where make was started; the sub-makes run
# in other directories, so pass it on as an absolute path.
override O := $(abspath $(O))
CC    ?= cc
CXX   ?= c++

# Our own userspace code: C11 (GNU dialect: kselftest_harness.h needs typeof
# and statement expressions), every warning an error.
WARN      := -Wall -Wextra -Werror
CSTD      := -std=gnu11
OPT       ?= -O2 -g
CPPFLAGS  += -I$(TOP)/include -I$(TOP)/include/uapi
CFLAGS    += $(CSTD) $(WARN) $(OPT) -fno-strict-aliasing
# Tests run under AddressSanitizer and UndefinedBehaviorSanitizer.
SANFLAGS  := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The CUDA toolkit, when present.  Without it the library builds host-only.
CUDA_HOME ?= /usr/local/cuda
HAVE_CUDA := $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),1,0)

# Where `make install` puts things (PREFIX, LIBDIR and DESTDIR are
# honoured); the interposer goes in a folder of its own, as a preloaded
# library without a soname should.
PREFIX        ?= /usr/local
LIBDIR        ?= $(PREFIX)/lib
INTERPOSE_DIR ?= $(LIBDIR)/gpupool

# kselftest headers, extracted from Debian's linux-source-6.1 at build time
# (see scripts/ksft-headers.sh); never committed.
KSFT_DIR  := $(O)/ksft
