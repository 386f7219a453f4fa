/* SPDX-License-Identifier: MIT */
/*
 * host.h - the host pools (userlib/host/) as the rest of the library sees
 * them: the segment (host/seg.h), which the file reader reads into, and
 * the calls into the pools.  Their state (struct gp_host) is
 * host/pools.h's, private to host/.
 */
#ifndef GPUPOOL_USERLIB_HOST_HOST_H
#define GPUPOOL_USERLIB_HOST_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "host/seg.h"

struct gp_ctx;
struct gp_info;

/* ctx->host and the pools' cores, once the backend is open (its
 * granularity is theirs); on failure nothing is left.  -ENOMEM.
 */
int gp_host_init(struct gp_ctx *ctx);
/* Every segment back to the backend, and ctx->host freed. */
void gp_host_fini(struct gp_ctx *ctx);

/* host_lock: the pools, their segments and figures (the interposer holds
 * it across fork()).
 */
void gp_host_lock(struct gp_ctx *ctx);
void gp_host_unlock(struct gp_ctx *ctx);

/*
 * What another room keeps per segment (the file reader's fixed buffers)
 * goes with the segment: fn(ctx, addr, size) runs under host_lock just
 * before a segment is unmapped, and must not call into the host pools.
 * One hook, set by the room that needs it before it keeps anything per
 * segment (setting it again replaces it).  The host pools name no room
 * they tell: the rooms point one way (docs/design.md).
 */
typedef void gp_seg_gone_fn(struct gp_ctx *ctx, uint64_t addr, uint64_t size);
void gp_host_on_seg_gone(struct gp_ctx *ctx, gp_seg_gone_fn *fn);

/* The segment of [addr, addr + len) when that lies inside one buffer in use
 * (a pool block, a shared or an imported buffer): fn(arg, seg) runs on it
 * under host_lock, the same hold as the lookup, and its value is returned;
 * -ENOENT (fn not called) when there is none.
 */
int gp_host_seg_of(struct gp_ctx *ctx, uint64_t addr, uint64_t len,
		   int (*fn)(void *arg, const struct gp_seg *seg), void *arg);

/* Where addr lies: 0 inside a buffer in use, which starts at *base and
 * carries *tag (gp_host_alloc_tagged's, else 0); -EINVAL inside a segment
 * of the context but in no buffer in use (a freed one, say); -ENOENT
 * outside every segment.  Takes host_lock.
 */
int gp_host_lookup(struct gp_ctx *ctx, uint64_t addr, uint64_t *base,
		   uint64_t *tag);

/*
 * The interposer's: gp_host_alloc (no flags) with a word of the caller's
 * kept in the buffer's chunk (not 0), and gp_host_free giving that word
 * and the size asked back: one hold of host_lock each, no table beside
 * the pools.  gp_host_free_tagged, when ptr is no buffer of the context
 * (and no message): -EINVAL when it lies inside one of its segments (a
 * buffer freed already, an inner pointer), -ENOENT when it lies in none
 * (not the context's memory at all).
 */
int gp_host_alloc_tagged(struct gp_ctx *ctx, size_t size, uint64_t tag,
			 void **ptr);
int gp_host_free_tagged(struct gp_ctx *ctx, void *ptr, uint64_t *tag,
			uint64_t *requested);
/*
 * Buffers another room keeps for its own reuse after the program freed
 * them (the interposer's threads' caches): in use for the pools, so their
 * segments are idle for nobody until the room gives them back.  fn(ctx,
 * all, bound_ms) runs on the keeper thread (keeper.c), host_lock not held:
 * it gives back, with gp_host_free_parked, what it has kept about
 * bound_ms (everything when all: before the keeper answers another
 * process's ask), and returns in how many ms it must run again, or -1
 * when it keeps nothing (gp_host_parked_wake() then, when it keeps
 * something again).  Setting fn starts the keeper if it is not running
 * (whatever host_gc_idle_ms says): 0 when it runs, -errno when it cannot
 * (a child of fork(), no thread), and then the room must keep nothing.
 * One hook, set by the room that parks before it parks anything; the host
 * pools name no room they call: the rooms point one way (docs/design.md).
 */
typedef int gp_host_parked_fn(struct gp_ctx *ctx, bool all, int bound_ms);
int gp_host_on_parked(struct gp_ctx *ctx, gp_host_parked_fn *fn);
/* The room keeps something again after fn returned -1: fn runs soon. */
void gp_host_parked_wake(struct gp_ctx *ctx);
/* A parked buffer back to its pool: forget(arg) runs first under the same
 * hold of host_lock (so that no one allocates the buffer again before the
 * room has forgotten it, nor frees it twice unseen), then the buffer is
 * freed as by gp_host_free_tagged (whose values it returns).
 */
int gp_host_free_parked(struct gp_ctx *ctx, void *ptr,
			void (*forget)(void *arg), void *arg);

/* host_lock held: fn on every segment's range. */
void gp_host_each_segment(struct gp_ctx *ctx,
			  void (*fn)(void *arg, uint64_t addr, uint64_t size),
			  void *arg);

/* The host's part of gp_info: the granularity, huge pages, the CUDA state,
 * and its reason first in info->why (empty before) when host memory is not
 * registered.
 */
void gp_host_info(struct gp_ctx *ctx, struct gp_info *info);

#endif /* GPUPOOL_USERLIB_HOST_HOST_H */
