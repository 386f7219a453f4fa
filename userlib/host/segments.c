// SPDX-License-Identifier: MIT
/*
 * segments.c - the host pools' segments (see host.c): mapped by the
 * backend, registered with CUDA once, on the LRU list of idle ones while no
 * block of theirs is in use, and given back to the system, oldest first,
 * under host_cache_max, host_gc_idle_ms and host_limit, and when another
 * process asks (keeper.c).  A segment that goes idle (not a new one) is
 * said to be so to the backend (ops->mark: the kernel backend tells
 * gpupool.ko, which may ask for it back), and busy again when a block of
 * it is taken: only those transitions cost a system call.  host_lock held
 * throughout.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "host/pools.h"

/* Idle list ------------------------------------------------------------------ */

void gp_idle_add(struct gp_ctx *ctx, struct gp_seg *seg, bool tell)
{
	seg->idle_since = gp_now_ms();
	gp_list_add_tail(&ctx->host->idle, &seg->idle_link);
	ctx->host->idle_bytes += seg->size;
	/* A child of fork() tells nothing: see keeper.c. */
	if (!tell || ctx->host->pid != getpid())
		return;
	if (ctx->ops->mark) {
		ctx->ops->mark(ctx, seg, true);
		seg->marked = true;
	}
	gp_keeper_start(ctx);
}

/* The oldest idle segment, or NULL. */
struct gp_seg *gp_idle_oldest(struct gp_ctx *ctx)
{
	return gp_list_first(&ctx->host->idle, struct gp_seg, idle_link);
}

void gp_idle_unlink(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_list_del(&seg->idle_link);
	ctx->host->idle_bytes -= seg->size;
}

void gp_idle_del(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_idle_unlink(ctx, seg);
	if (seg->marked) {
		ctx->ops->mark(ctx, seg, false);
		seg->marked = false;
	}
}

/* Segments ------------------------------------------------------------------- */

/*
 * CUDA cannot be used in this process at all: the runtime answers every
 * call that needs the driver with an initialization error, which is what
 * a child of fork() gets once its parent has used CUDA (a data loader's
 * fork-started workers, say).  Such a process cannot copy to a GPU, so
 * registering is pointless there: its memory stays pinned (the backend
 * did that) and unregistered, and gp_info() says so.  With
 * GP_OPEN_REQUIRE_CUDA the caller asked for registered memory or nothing:
 * -EIO, saying why.
 */
static int host_cuda_refused(struct gp_ctx *ctx, cudaError_t e)
{
	if (ctx->opt.flags & GP_OPEN_REQUIRE_CUDA)
		return gp_err(ctx, -EIO, "cudaHostRegister failed: %s: %s; "
			      "open the context in a process started with spawn, "
			      "or before CUDA is used", gp_cuda_errstr(ctx, e),
			      GP_HOST_UNREGISTERED);
	ctx->host->unregistered = true;
	gp_debug(ctx, "cudaHostRegister: %s: %s; host memory stays "
		 "unregistered", gp_cuda_errstr(ctx, e), GP_HOST_UNREGISTERED);
	return 0;
}

/*
 * Register a freshly mapped segment with CUDA (once, for its whole life),
 * when CUDA is usable.  -EIO, with the runtime's words, when the driver
 * refuses.
 */
int gp_seg_register(struct gp_ctx *ctx, struct gp_seg *seg)
{
	unsigned int fl = cudaHostRegisterPortable;
	cudaError_t e;

	if (!gp_cuda_usable(ctx) || ctx->host->unregistered)
		return 0;
	if (ctx->opt.flags & GP_OPEN_HOST_MAPPED)
		fl |= cudaHostRegisterMapped;
	ctx->host->st.register_calls++;
	e = gp_cuda_host_register(ctx, (void *)(uintptr_t)seg->addr,
				  seg->size, fl);
	if (e != cudaSuccess) {
		if (e == cudaErrorInitializationError)
			return host_cuda_refused(ctx, e);
		return gp_err(ctx, -EIO, "cudaHostRegister of %llu bytes failed: %s",
			      (unsigned long long)seg->size,
			      gp_cuda_errstr(ctx, e));
	}
	seg->registered = true;
	ctx->host->st.registered++;
	return 0;
}

/* Before the memory leaves the process: unmapping registered memory would
 * leave the driver with a stale registration.
 */
void gp_seg_unregister(struct gp_ctx *ctx, struct gp_seg *seg)
{
	if (!seg->registered)
		return;
	ctx->host->st.unregister_calls++;
	gp_cuda_host_unregister(ctx, (void *)(uintptr_t)seg->addr);
	seg->registered = false;
	ctx->host->st.registered--;
}

/* A mapped (and registered) segment joins the context's list and figures. */
void gp_seg_link(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_list_add(&ctx->host->segs, &seg->link);
	ctx->host->st.reserved += seg->size;
	if (ctx->host->st.reserved > ctx->host->st.peak_reserved)
		ctx->host->st.peak_reserved = ctx->host->st.reserved;
	ctx->host->st.segments++;
	if (seg->huge)
		ctx->host->st.segments_huge++;
}

int gp_seg_create(struct gp_ctx *ctx, uint64_t size, int kind, bool keep_fd,
		  bool no_ask, struct gp_seg **out)
{
	struct gp_seg *seg = calloc(1, sizeof(*seg));
	int ret;

	if (!seg)
		return gp_err(ctx, -ENOMEM, "out of memory for segment metadata");
	seg->fd = -1;
	seg->kind = (uint8_t)kind;
	seg->no_ask = no_ask;
	ret = ctx->ops->map(ctx, seg, size, keep_fd);
	if (ret)
		goto out_free;
	ctx->host->st.map_calls++;
	ret = gp_seg_register(ctx, seg);
	if (ret)
		goto out_unmap;
	gp_seg_link(ctx, seg);
	gp_debug(ctx, "segment %#llx + %llu mapped (%s%s)",
		 (unsigned long long)seg->addr, (unsigned long long)seg->size,
		 seg->huge ? "huge pages, " : "",
		 seg->registered ? "registered" : "not registered");
	*out = seg;
	return 0;

out_unmap:
	gp_seg_unmap(ctx, seg);
out_free:
	free(seg);
	return ret;
}

/* The backend unmaps a segment, counted (gp_host_stats' unmap_calls). */
void gp_seg_unmap(struct gp_ctx *ctx, struct gp_seg *seg)
{
	ctx->ops->unmap(ctx, seg);
	ctx->host->st.unmap_calls++;
}

void gp_seg_destroy(struct gp_ctx *ctx, struct gp_seg *seg)
{
	if (ctx->host->seg_gone)
		ctx->host->seg_gone(ctx, seg->addr, seg->size);
	gp_seg_unregister(ctx, seg);
	gp_seg_unmap(ctx, seg);
	gp_list_del(&seg->link);
	ctx->host->st.reserved -= seg->size;
	ctx->host->st.segments--;
	if (seg->huge)
		ctx->host->st.segments_huge--;
	free(seg);
}

/* Give an idle pool segment back to the system. */
void gp_release_idle_seg(struct gp_ctx *ctx, struct gp_seg *seg)
{
	struct gp_hpool *hp = &ctx->host->hp[seg->kind];
	int ret;

	gp_idle_unlink(ctx, seg);
	ret = bfc_remove_region(hp->b, seg->region_id, NULL, NULL);
	BFC_ASSERT(ret == 0, "an idle segment is not wholly free in its core");
	(void)ret;
	gp_map_del(&hp->regions, seg->region_id);
	ctx->host->st.trimmed += seg->size;
	gp_seg_destroy(ctx, seg);
}

void gp_host_gc(struct gp_ctx *ctx)
{
	uint64_t cap = ctx->opt.host_cache_max;
	uint64_t idle_ms = ctx->opt.host_gc_idle_ms;

	struct gp_seg *seg;

	while (cap && ctx->host->idle_bytes > cap)
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
	if (idle_ms) {
		uint64_t now = gp_now_ms();

		while ((seg = gp_idle_oldest(ctx)) && now - seg->idle_since >= idle_ms)
			gp_release_idle_seg(ctx, seg);
	}
}

/* Make room for `size` more bytes under host_limit, releasing idle
 * segments, oldest first.
 */
int gp_host_make_room(struct gp_ctx *ctx, uint64_t size)
{
	uint64_t limit = ctx->opt.host_limit;
	char a[32], b[32], c[32];

	if (!limit)
		return 0;
	while (ctx->host->st.reserved + size > limit && !gp_list_empty(&ctx->host->idle))
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
	if (ctx->host->st.reserved + size <= limit)
		return 0;
	return gp_err(ctx, -ENOMEM,
		      "host_limit reached: %s more would exceed %s (%s mapped, all "
		      "in use); raise gp_options.host_limit or GPUPOOL_HOST_LIMIT",
		      gp_fmt_bytes(a, sizeof(a), size),
		      gp_fmt_bytes(b, sizeof(b), limit),
		      gp_fmt_bytes(c, sizeof(c), ctx->host->st.reserved));
}

void gp_release_all_idle(struct gp_ctx *ctx)
{
	while (!gp_list_empty(&ctx->host->idle))
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
}

/*
 * The system refused a segment (RLIMIT_MEMLOCK, the module's
 * per_process_limit, a full module pool): give back every idle segment, so
 * that one retry can use what they held.  False when there was none.
 */
bool gp_host_release_idle(struct gp_ctx *ctx)
{
	if (gp_list_empty(&ctx->host->idle))
		return false;
	gp_debug(ctx, "segment refused: releasing %llu idle bytes and retrying",
		 (unsigned long long)ctx->host->idle_bytes);
	gp_release_all_idle(ctx);
	return true;
}

/* Worth retrying after gp_host_release_idle(): not CUDA's refusal (-EIO)
 * nor a bad argument.
 */
bool gp_host_refused(int ret)
{
	return ret && ret != -EIO && ret != -EINVAL;
}
