/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * churn_floor.h - the memory reads a coalescing free starts with, timed on
 * the core's own chunk records (churn_floor.c).
 */
#ifndef GPUPOOL_BENCH_CHURN_FLOOR_H
#define GPUPOOL_BENCH_CHURN_FLOOR_H

#include "bfc.h"

/* For i = 0..n-1, read the record of chunk h[idx[i]], then the records of
 * its two physical neighbours: serial, each chunk's reads waiting on the
 * previous chunk's; overlapped, independent.  They change nothing and
 * return a value made from what they read.
 */
uint64_t churn_floor_serial(const struct bfc *b, const bfc_handle_t *h,
			    const uint64_t *idx, uint64_t n);
uint64_t churn_floor_overlapped(const struct bfc *b, const bfc_handle_t *h,
				const uint64_t *idx, uint64_t n);

#endif /* GPUPOOL_BENCH_CHURN_FLOOR_H */
