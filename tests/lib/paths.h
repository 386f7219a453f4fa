/* SPDX-License-Identifier: MIT */
/*
 * paths.h - where the build put what the library tests load.
 *
 * They are defined in one small object, compiled from paths.c with the
 * build tree's paths, and not in each test's object: the test objects are
 * then the same in every clone, so that a compiler cache (ccache, which
 * `make check` uses) reuses them from one clone to another.
 */
#ifndef GPUPOOL_TESTS_LIB_PATHS_H
#define GPUPOOL_TESTS_LIB_PATHS_H

extern const char tests_cudart_double[];	/* the CUDA runtime test double */
extern const char tests_libgpupool_so[];	/* $(O)/userlib/libgpupool.so.1 */
extern const char tests_loader_bin[];		/* $(O)/examples/loader */

#endif
