/* SPDX-License-Identifier: MIT */
/*
 * paths.h - where the build put what the interposer's tests load, defined
 * in paths.c alone (tests/lib/paths.h says why).
 */
#ifndef GPUPOOL_TESTS_INTERPOSE_PATHS_H
#define GPUPOOL_TESTS_INTERPOSE_PATHS_H

extern const char tests_interposer[];	/* libgpupool-interpose, sanitized
					 * as the test is */
extern const char tests_driver_dir[];	/* the libcuda.so.1 double's folder */
extern const char tests_cudart[];	/* the runtime double */
extern const char tests_libdeep[];	/* deep.c: a library that calls the
					 * runtime, for RTLD_DEEPBIND */
extern const char tests_libdeep_static[];	/* deep.c with the runtime
						 * double linked in, hidden */
extern const char tests_real_cudart[];	/* the toolkit's libcudart.so.13 */
extern const char tests_gpupoolctl[];	/* <O>/tools/gpupoolctl */
extern const char tests_unwind_probe[];	/* unwind_probe.c: an IFUNC whose
					 * resolver takes a backtrace */
extern const char tests_entry_hardened[];	/* the dlsym entry, built with
					 * branch protection (empty: none) */

#endif
