/* SPDX-License-Identifier: MIT */
/*
 * paths.c - the fixtures' and the built gpupoolctl's paths (ctl_lib.h),
 * from the Makefile's FIXTURE_DIR and CTL_BIN_PATH: here alone, so that the
 * test objects are the same in every clone and a compiler cache reuses
 * them.
 */
#include "ctl_lib.h"

const char fixture_2node[] = FIXTURE_DIR "/fixture-2node.txt";
const char fixture_cgroups[] = FIXTURE_DIR "/fixture-cgroups.txt";
const char fixture_dmem[] = FIXTURE_DIR "/fixture-dmem.txt";
const char ctl_bin[] = CTL_BIN_PATH;
