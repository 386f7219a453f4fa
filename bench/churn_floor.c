// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * churn_floor.c - what the churn benchmark's frees cost in memory reads
 * alone.
 *
 * Whatever else a best-fit-with-coalescing free does, it reads its chunk's
 * record and then both physical neighbours' (to know whether to merge).
 * Timing just those reads on the core's records, in the benchmark's own
 * state, brackets the memory part of a free at each number of live chunks:
 *
 * - serial: each chunk's reads wait on the previous chunk's, as they do
 *   when every free waits on its own data before the next one starts;
 * - overlapped: the chunks' reads are independent, so the CPU keeps many
 *   in flight at once; a free only gets near this if the next free's first
 *   read starts while this one's are still in flight.
 *
 * This is the one file of the benchmark that looks inside the core
 * (bfc_internal.h): the public API has no call that reads a chunk's
 * neighbours and nothing more.
 */
#include "bfc_internal.h"
#include "churn_floor.h"

uint64_t churn_floor_serial(const struct bfc *b, const bfc_handle_t *h,
			    const uint64_t *idx, uint64_t n)
{
	const struct bfc_chunk *C = b->chunks;
	uint64_t acc = 0, i;

	for (i = 0; i < n; i++) {
		uint64_t z = acc;
		uint32_t x;

		/* z >> 63 is 0 (acc stays far below 2^63), but the compiler
		 * cannot know it after the empty asm: the next chunk's
		 * handle depends on this chunk's reads.
		 */
		__asm__("" : "+r"(z));
		x = h[idx[i] + (z >> 63)];
		acc += C[C[x].prev].flags + C[C[x].next].flags;
	}
	return acc;
}

uint64_t churn_floor_overlapped(const struct bfc *b, const bfc_handle_t *h,
				const uint64_t *idx, uint64_t n)
{
	const struct bfc_chunk *C = b->chunks;
	uint64_t acc = 0, i;

	for (i = 0; i < n; i++) {
		uint32_t x = h[idx[i]];

		acc += C[C[x].prev].flags + C[C[x].next].flags;
	}
	return acc;
}
