/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * tf_bfc.h - C interface to the TensorFlow-structured BFC baseline
 * (tf_bfc.cc), driven by the benchmark exactly like the core: regions are
 * added by the caller, alloc returns a handle and an address, free takes the
 * address (TensorFlow frees by pointer only).
 */
#ifndef BENCH_TF_BFC_H
#define BENCH_TF_BFC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tf_bfc;

/* granularity: power of two >= 1 (TensorFlow: 256).  NULL on bad input. */
struct tf_bfc *tf_bfc_create(uint64_t granularity);
void tf_bfc_destroy(struct tf_bfc *t);
/* Add [base, base + size) as a new region (TF's Extend after the
 * SubAllocator returned memory).  base and size must be multiples of the
 * granularity; 0, -22 (EINVAL), or -12 (ENOMEM) when this machine's
 * memory cannot hold the region's handles (one per granule, as TF's).
 */
int tf_bfc_add_region(struct tf_bfc *t, uint64_t base, uint64_t size);
/* TF's AllocateRaw without Extend: 0, or -12 (ENOMEM) when no free chunk
 * fits (the caller may add a region and retry), -22 for size 0.
 */
int tf_bfc_alloc(struct tf_bfc *t, uint64_t size, uint64_t *handle,
		 uint64_t *addr);
/* TF's DeallocateRaw.  addr must be the start of a chunk in use (TF CHECKs
 * this; here a bad address returns -22 and changes nothing).
 */
int tf_bfc_free(struct tf_bfc *t, uint64_t addr);
/* Walk all structures and return the number of inconsistencies (for the
 * benchmark's own sanity checking, never timed).
 */
uint64_t tf_bfc_check(struct tf_bfc *t);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_TF_BFC_H */
