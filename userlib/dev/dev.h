/* SPDX-License-Identifier: MIT */
/*
 * dev.h - the device pools, private to userlib/dev/.
 *
 * One pool per device (struct gp_dpool, its own mutex).  Inside it, one BFC
 * core per stream (struct gp_dstream), as PyTorch keeps blocks per stream:
 * a segment (one cudaMalloc) belongs to the stream that first needed it and
 * its blocks are only handed out on that stream, so a block freed on its
 * stream goes straight back into the core and is safe to reuse there at once
 * (later work on the stream is ordered after earlier work).
 *
 * A block also used on other streams (gp_dev_record_stream, or freed on a
 * stream that is not its own) carries a struct gp_uses in its core tag.  When
 * it is freed, an event is recorded on each of those streams and the block
 * stays "in use" in the core, on the pending list, until cudaEventQuery says
 * every event has completed; only then is it freed into the core.  Pending
 * blocks are not reused even on their own stream before that (simple and
 * correct: the other streams may still touch them).  The list is polled on
 * every allocation; before reporting out-of-memory the pool waits for it
 * (cudaEventSynchronize).
 */
#ifndef GPUPOOL_USERLIB_DEV_H
#define GPUPOOL_USERLIB_DEV_H

#include "bfc.h"
#include "cuda.h"
#include "internal.h"
#include "dev/devpools.h"

/* Tunables. */
#define GP_DEV_GRAN		256ull	/* cudaMalloc guarantees 256-byte alignment */
#define GP_DEV_INITIAL_SEG	(2 * GP_MIB)	/* gp_options.dev_initial_segment 0 */
#define GP_DEV_MAX_SEG		(1ull << 46)	/* segments: doubling stops here */
/* The virtual mode's default headroom: mapped bytes at most 1/11 (9.09%)
 * above the most in use.  Less remaps more often (1/16 remapped ~20 times
 * as often on the loader trace); more holds more idle memory.
 */
#define GP_DEV_HEADROOM_PPM	(1000000 / 11)

/* Tag of an in-use block used on streams other than its own. */
struct gp_uses {
	uint32_t n, cap;
	bool pending;		/* freed; waiting for events */
	gp_stream_t *s;
};

/*
 * Virtual mode (vmm.c): a stream's pool owns one reserved virtual
 * range; its core holds one region [base, base + top) that grows upward
 * (adjacent regions merge, so the free chunk at the top coalesces with the
 * growth).  Physical memory is one driver allocation per granule, mapped
 * from base up as far as the region reaches.  Trimming unmaps the granules
 * that lie wholly in free chunks anywhere in the region ("holes") and
 * takes each run of them out of the free space as an in-use chunk of the
 * core tagged GP_VMM_HOLE_TAG (bfc_take_free_spans): best fit then sees
 * only mapped free space, and a request that nothing mapped holds maps the
 * fewest new granules it can, in a hole beside free space or at the top
 * (gp_vmm_place).  Holes are never handed out or freed by a caller.
 */
#define GP_VMM_HOLE_TAG		1ull	/* never a struct gp_uses pointer */
/* Virtual mode: a free remainder of at least this is split off a block
 * (TensorFlow's rule keeps up to half a chunk unsplit: mapped, unusable).
 */
#define GP_VMM_SPLIT_MIN	(1ull << 20)
/* Virtual mode: requests up to this come from a second sub-pool per stream
 * (PyTorch's small pool), so that small blocks do not pin granules among
 * the large blocks' free space.
 */
#define GP_VMM_SMALL		(1ull << 20)

struct gp_vrange {
	uint64_t base, size;	/* the reserved range; size 0: none yet */
	uint64_t top;		/* bytes from base that the core's region spans */
	gp_cu_mem *h;		/* per granule below top: its handle, 0 unmapped */
	uint64_t cap;		/* entries in h */
	uint64_t holes;		/* granules below top not mapped */
	uint64_t held;		/* those in hole chunks (the others, if any,
				 * are in free chunks: mapped on use) */
	bfc_handle_t *hole;	/* the hole chunks */
	uint32_t nhole, caphole;
};

struct gp_dstream {
	gp_stream_t stream;
	struct bfc *b;
	struct gp_map segs;	/* segment base -> (void *)size; virtual mode:
				 * the region, base -> (void *)top */
	struct gp_vrange vr;
	bool small;		/* virtual mode: the stream's small blocks */
	struct gp_dstream *next;
};

struct gp_pending {
	struct gp_dstream *ds;
	bfc_handle_t h;
	uint64_t size;
	uint32_t nr_ev;
	cudaEvent_t *ev;
	struct gp_pending *next;
};

struct gp_dpool {
	pthread_mutex_t lock;
	int device;
	struct gp_dstream *streams;
	struct gp_pending *pending;
	cudaEvent_t *evcache;	/* idle events, created on this device */
	uint32_t nr_evcache, cap_evcache;
	uint64_t limit;		/* 0 = none */
	uint64_t total_mem;	/* cudaMemGetInfo at creation, 0 if unknown */
	bool vmm;		/* virtual mode (else cudaMalloc segments) */
	uint64_t gran;		/* virtual mode: the driver's granularity */
	uint64_t used_hw;	/* virtual mode: the most bytes in use (with
				 * pending ones and a request) since the last
				 * gp_dev_trim */
	struct gp_dev_stats st;
};

/* dev.c */
/* ctx->dev: a pool per device, each created on first use under lock. */
struct gp_devpools {
	pthread_mutex_t lock;
	struct gp_dpool **pool;		/* gp_cuda_device_count() entries */
	uint64_t initial_segment;	/* the first segment of a pool */
	/* Virtual mode: idle mapped bytes allowed above the most in use,
	 * in millionths of it (GPUPOOL_DEV_HEADROOM); UINT64_MAX: never
	 * unmap before a new mapping.
	 */
	uint64_t headroom_ppm;
};

struct gp_dpool *gp_dpool_get(struct gp_ctx *ctx, int device, bool create);

/* stream.c (pool lock held) */
/* Free the block h of ds: straight back, or pending behind events. */
int gp_dstream_free(struct gp_ctx *ctx, struct gp_dpool *p,
		    struct gp_dstream *ds, bfc_handle_t h, gp_stream_t stream);
int gp_dstream_add_use(struct gp_dpool *p, struct gp_dstream *ds,
		       bfc_handle_t h, gp_stream_t stream);
/* Return completed pending blocks to their cores; wait for all with sync. */
void gp_pending_poll(struct gp_ctx *ctx, struct gp_dpool *p, bool sync);
/* Give back the pool's cached events (at close). */
void gp_events_destroy(struct gp_ctx *ctx, struct gp_dpool *p);
/* Is block h of ds waiting for events? */
bool gp_block_pending(const struct bfc_chunk_info *ci);

/* segments.c (pool lock held) */
/* Add a segment that holds `size` bytes to ds (TensorFlow's Extend). */
int gp_dstream_extend(struct gp_ctx *ctx, struct gp_dpool *p,
		      struct gp_dstream *ds, uint64_t size);
/* Give back the wholly free memory of every stream of the pool (cudaFree,
 * or unmapped granules in the virtual mode); bytes released.  Stream pools
 * left empty are forgotten, except `keep` (the caller's).
 */
uint64_t gp_dpool_release_free(struct gp_ctx *ctx, struct gp_dpool *p,
			       struct gp_dstream *keep);

/* vmm.c, vmm_place.c (pool lock held) */
/* Pick the mode of a new pool (its device current). */
void gp_vmm_probe(struct gp_ctx *ctx, struct gp_dpool *p);
/* Grow ds's region so that its top free chunk holds size bytes. */
int gp_vmm_extend(struct gp_ctx *ctx, struct gp_dpool *p,
		  struct gp_dstream *ds, uint64_t size);
/* Nothing mapped in ds holds `size` bytes: map the fewest granules that
 * make room for it, in a hole beside mapped free space or at the region's
 * top (growing it).  When the pool's mapped bytes would then exceed its
 * budget (the most bytes in use since the last gp_dev_trim, pending ones
 * and the request counted, plus the headroom, default 1/11 of that, at
 * least a granule), the
 * largest free spans of every stream that cover the excess are unmapped
 * first, so that what stays mapped follows what is in use rather than the
 * most the pool ever held.  0, -ENOMEM, -EIO.
 */
int gp_vmm_place(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds,
		 uint64_t size);
/* Is in-use chunk h of ds a hole? */
bool gp_vmm_is_hole(const struct gp_dstream *ds, bfc_handle_t h);
/* Map the holes under [addr, addr + size) of ds (a block being handed out
 * over granules left unmapped in free chunks: only after a trim could not
 * take them out of the free space for want of metadata).
 */
int gp_vmm_back(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds,
		uint64_t addr, uint64_t size);
/* Unmap every granule lying wholly in free chunks of ds (the whole region
 * when nothing is in use), after waiting for ds's stream when there is any;
 * bytes unmapped.
 */
uint64_t gp_vmm_trim(struct gp_ctx *ctx, struct gp_dpool *p,
		     struct gp_dstream *ds);
/* Unmap and release everything of ds, and its reserved range. */
void gp_vmm_fini(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds);
/* vmm.c for vmm_place.c: map granules [lo, hi) of ds; room in ds's hole
 * list for n more; hole i is mapped again; unmap free granules (see there).
 */
int gp_vmm_map(struct gp_ctx *ctx, struct gp_dpool *p,
	       struct gp_dstream *ds, uint64_t lo, uint64_t hi);
int gp_vmm_hole_room(struct gp_dstream *ds, uint64_t n);
void gp_vmm_unhole(struct gp_dpool *p, struct gp_dstream *ds, uint32_t i);
uint64_t gp_vmm_trim_some(struct gp_ctx *ctx, struct gp_dpool *p,
			  struct gp_dstream *ds, uint64_t min,
			  uint64_t keep_lo, uint64_t keep_hi, uint64_t *left);

/* snapshot.c */
void gp_dpool_dump(struct gp_ctx *ctx, struct gp_dpool *p, size_t asked);

#endif /* GPUPOOL_USERLIB_DEV_H */
