/* SPDX-License-Identifier: MIT */
/*
 * cudadrv_double.h - the test double of the CUDA driver API, built as
 * libcuda.so.1: the driver's pinned host memory calls (cuMemHostAlloc and
 * its kin, cuMemHostRegister), stream capture, cuInit, and
 * cuGetProcAddress in both of its versions, answering by the caller's
 * cudaVersion as the driver does (the names it was asked for logged).
 * Backed by anonymous memory; every call counted; failures injected.
 *
 * Tests reach the controls with dlsym() on the libcuda.so.1 they loaded.
 */
#ifndef CUDADRV_DOUBLE_H
#define CUDADRV_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

enum cdrv_fn {
	CDRV_INIT, CDRV_GET_PROC_ADDRESS, CDRV_HOST_ALLOC, CDRV_ALLOC_HOST,
	CDRV_FREE_HOST, CDRV_HOST_GET_FLAGS, CDRV_HOST_GET_DEVPTR,
	CDRV_HOST_REGISTER, CDRV_HOST_UNREGISTER, CDRV_CAPTURE_BEGIN,
	CDRV_CAPTURE_END, CDRV_CAPTURE_INFO, CDRV_CAPTURE_MODE,
	CDRV_NR_FNS
};

struct cdrv_counts {
	uint64_t calls[CDRV_NR_FNS];	/* every call, failed or not */
	uint64_t live;			/* host allocations not yet freed */
	uint64_t live_bytes;
	uint64_t bad_frees;		/* cuMemFreeHost of an unknown pointer */
	uint64_t refused;		/* allocations refused (injected) */
	uint64_t capture_refusals;	/* calls refused as unsafe in a capture
					 * (each invalidates it) */
};

/* The offset between a host address and the device address the double
 * reports for it: not the identity, so that a test can tell an answer
 * that came from the driver from one made up by its caller.
 */
#define CDRV_DEVPTR_DELTA	0x100000000000ull

void cdrv_reset(void);			/* counts and injections; allocations stay */
void cdrv_get_counts(struct cdrv_counts *c);
/* Is p the start of a live allocation?  Its size and flags (0 if none). */
size_t cdrv_live_size(const void *p, unsigned int *flags);
/* fn is called at the entry of every counted call; NULL: none. */
void cdrv_set_hook(void (*fn)(void));
/* cuMemFreeHost of the double itself, by a name no interposer wraps. */
int cdrv_free(void *p);
/* Every registration and capture forgotten (the runtime double's
 * cdd_reset).
 */
void cdrv_forget(void);
/* Is a stream capture under way?  Calls refused as unsafe in captures. */
int cdrv_capturing(void);
uint64_t cdrv_capture_refusals(void);
/* How many times cuGetProcAddress was asked for sym. */
unsigned int cdrv_asked(const char *sym);
/* The next n allocations answer CUDA_ERROR_OUT_OF_MEMORY; -1: all. */
void cdrv_fail_alloc(int n);

#endif /* CUDADRV_DOUBLE_H */
