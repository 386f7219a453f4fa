/* SPDX-License-Identifier: MIT */
/* paths.c - the build tree's paths (paths.h); the Makefile defines them. */
#include "paths.h"

const char tests_cudart_double[] = CDD_PATH;
const char tests_libgpupool_so[] = GPLIB_SO;
const char tests_loader_bin[] = LOADER_BIN;
