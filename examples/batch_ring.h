/* SPDX-License-Identifier: MIT */
/*
 * batch_ring.h - a zero-copy batch pipeline over shared gpupool chunks: the
 * consumer owns `slots` GP_HOST_SHARED buffers and passes their fds once to
 * each of `workers` forked processes (SCM_RIGHTS); then a task is 16 bytes
 * (slot, batch index) one way and 24 bytes (slot, index, checksum) back.
 * Workers write each batch straight into pinned pool memory; the consumer
 * reads it in place and gives the slot back.  Used by examples/loader.c and
 * bench/loader_bench.c.  Not thread-safe: one consumer thread.
 */
#ifndef GPUPOOL_EXAMPLES_BATCH_RING_H
#define GPUPOOL_EXAMPLES_BATCH_RING_H

#include <stddef.h>
#include <stdint.h>

#include <gpupool.h>

/* Fill dst (len bytes) with batch `index`; return its checksum.  Runs in a
 * worker process; 0 from br_checksum() never means failure.
 */
typedef uint64_t (*br_produce_fn)(uint64_t index, void *dst, size_t len,
				  void *arg);

struct br_opts {
	int workers;
	int slots;		/* 0: two per worker */
	size_t batch_bytes;
	uint64_t batches;	/* how many the ring produces in all */
	br_produce_fn produce;
	void *arg;		/* for produce, inherited across fork */
};

struct br_batch {
	uint64_t index;
	uint64_t sum;		/* what the worker computed */
	void *data;		/* batch_bytes of pinned pool memory */
	size_t len;
	int slot;
};

struct br_ring;

/* Allocate the slots from ctx, fork the workers.  NULL with a message in
 * err on failure (nothing left behind).
 */
struct br_ring *br_start(struct gp_ctx *ctx, const struct br_opts *o,
			 char *err, size_t errlen);
/* The next finished batch (blocks).  0, 1 when all batches were handed out,
 * -1 when a worker died or failed (message in err).
 */
int br_next(struct br_ring *r, struct br_batch *b, char *err, size_t errlen);
/* Give b's slot back: the ring reuses it for the next batch. */
void br_release(struct br_ring *r, const struct br_batch *b);
/* Stop and reap the workers, free the slots.  0, or -1 if a worker failed. */
int br_stop(struct br_ring *r);

/* In a worker (inside produce): the worker's context, where the slots are
 * imported buffers (for gp_read into them).  NULL in the consumer.
 */
struct gp_ctx *br_worker_ctx(void);

/* A fast 64-bit checksum (not cryptographic) of len bytes. */
uint64_t br_checksum(const void *p, size_t len);

#endif
