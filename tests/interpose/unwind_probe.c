// SPDX-License-Identifier: MIT
/*
 * unwind_probe.c - libunwind_probe.so, for drv_entry: unwind_probe is an
 * IFUNC, whose resolver dlsym() and dlvsym() run while they look it up;
 * the resolver takes a backtrace there, that the test reads.
 */
#include <execinfo.h>

static void *frames[64];
static int nr_frames;

static int unwind_probe_impl(void)
{
	return 42;
}

static int (*unwind_probe_resolve(void))(void)
{
	nr_frames = backtrace(frames, 64);
	return unwind_probe_impl;
}

int unwind_probe(void) __attribute__((ifunc("unwind_probe_resolve")));

/* The last backtrace taken, *n frames. */
void *const *unwind_probe_frames(int *n)
{
	*n = nr_frames;
	return frames;
}
