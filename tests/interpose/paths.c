/* SPDX-License-Identifier: MIT */
/* paths.c - the build tree's paths (paths.h); the Makefile defines them. */
#include "paths.h"

const char tests_interposer[] = IP_INTERPOSER;
const char tests_driver_dir[] = IP_DRIVER_DIR;
const char tests_cudart[] = IP_CUDART;
const char tests_libdeep[] = IP_LIBDEEP;
const char tests_libdeep_static[] = IP_LIBDEEP_STATIC;
const char tests_real_cudart[] = IP_REAL_CUDART;
const char tests_gpupoolctl[] = IP_GPUPOOLCTL;
const char tests_unwind_probe[] = IP_UNWIND_PROBE;
const char tests_entry_hardened[] = IP_ENTRY_HARDENED;
