// SPDX-License-Identifier: MIT
/*
 * host.c - the host pools: pinned segments from a backend, registered with
 * CUDA once, cut into buffers by the BFC core, and cached when free.
 *
 * Three kinds of buffer:
 *  - small (<= 1 MiB): blocks of 512-byte granularity in 2 MiB segments (one
 *    BFC core), as PyTorch packs small blocks into 2 MiB segments;
 *  - large: blocks of page granularity in a second core, whose segments are
 *    20 MiB for requests up to 10 MiB and otherwise the request rounded up
 *    to 2 MiB (never to a power of two: 129.5 MB holds 130 MB, not 256 MB);
 *    if the backend refuses a 20 MiB segment, the exact size is tried;
 *  - shared (GP_HOST_SHARED) and imported buffers: a segment each, never
 *    cached (another process may still map it after we free it).
 *
 * A freed block goes back to its core and its segment stays mapped and
 * registered.  A segment with no block in use is *idle*; idle segments sit
 * on an LRU list and go back to the system (cudaHostUnregister, then unmap)
 * on gp_host_trim(), when idle bytes exceed host_cache_max (oldest first),
 * when one has been idle for host_gc_idle_ms (checked on every free and on
 * every growth), when a new segment would exceed host_limit, and all of
 * them when the system refuses a new segment (then it is tried once more).
 *
 * One mutex (host_lock) covers all of it; the fast path (a block from a
 * cached segment) makes no system call.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Idle list ------------------------------------------------------------------ */

static void gp_idle_add(struct gp_ctx *ctx, struct gp_seg *seg)
{
	seg->idle_since = gp_now_ms();
	gp_list_add_tail(&ctx->idle, &seg->idle_link);
	ctx->idle_bytes += seg->size;
}

/* The oldest idle segment, or NULL. */
static struct gp_seg *gp_idle_oldest(struct gp_ctx *ctx)
{
	return gp_list_first(&ctx->idle, struct gp_seg, idle_link);
}

static void gp_idle_del(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_list_del(&seg->idle_link);
	ctx->idle_bytes -= seg->size;
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
	const char *what = "CUDA cannot be initialized in this process (a "
			   "child of fork() cannot once its parent has used CUDA)";
	char was[sizeof(ctx->why)];

	if (ctx->opt.flags & GP_OPEN_REQUIRE_CUDA)
		return gp_err(ctx, -EIO, "cudaHostRegister failed: %s: %s; "
			      "open the context in a process started with spawn, "
			      "or before CUDA is used", gp_cuda_errstr(ctx, e), what);
	ctx->host_unregistered = true;
	/* First, so that it survives the truncation of the old text. */
	memcpy(was, ctx->why, sizeof(was));
	if (snprintf(ctx->why, sizeof(ctx->why), "host memory is not "
		     "registered: %s; %s", what, was) >= (int)sizeof(ctx->why))
		gp_debug(ctx, "before: %s", was);
	gp_debug(ctx, "cudaHostRegister: %s: %s; host memory stays "
		 "unregistered", gp_cuda_errstr(ctx, e), what);
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

	if (!ctx->cuda.usable || ctx->host_unregistered)
		return 0;
	if (ctx->opt.flags & GP_OPEN_HOST_MAPPED)
		fl |= cudaHostRegisterMapped;
	ctx->hst.register_calls++;
	e = ctx->cuda.cudaHostRegister((void *)(uintptr_t)seg->addr, seg->size,
				       fl);
	if (e != cudaSuccess) {
		ctx->cuda.cudaGetLastError();
		if (e == cudaErrorInitializationError)
			return host_cuda_refused(ctx, e);
		return gp_err(ctx, -EIO, "cudaHostRegister of %llu bytes failed: %s",
			      (unsigned long long)seg->size,
			      gp_cuda_errstr(ctx, e));
	}
	seg->registered = true;
	ctx->hst.registered++;
	return 0;
}

/* Before the memory leaves the process: unmapping registered memory would
 * leave the driver with a stale registration.
 */
void gp_seg_unregister(struct gp_ctx *ctx, struct gp_seg *seg)
{
	if (!seg->registered)
		return;
	ctx->hst.unregister_calls++;
	if (ctx->cuda.cudaHostUnregister((void *)(uintptr_t)seg->addr) !=
	    cudaSuccess)
		ctx->cuda.cudaGetLastError();
	seg->registered = false;
	ctx->hst.registered--;
}

/* A mapped (and registered) segment joins the context's list and figures. */
void gp_seg_link(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_list_add(&ctx->segs, &seg->link);
	ctx->hst.reserved += seg->size;
	if (ctx->hst.reserved > ctx->hst.peak_reserved)
		ctx->hst.peak_reserved = ctx->hst.reserved;
	ctx->hst.segments++;
	if (seg->huge)
		ctx->hst.segments_huge++;
}

int gp_seg_create(struct gp_ctx *ctx, uint64_t size, int kind, bool keep_fd,
		  struct gp_seg **out)
{
	struct gp_seg *seg = calloc(1, sizeof(*seg));
	int ret;

	if (!seg)
		return gp_err(ctx, -ENOMEM, "out of memory for segment metadata");
	seg->fd = -1;
	seg->kind = (uint8_t)kind;
	ret = ctx->ops->map(ctx, seg, size, keep_fd);
	if (ret)
		goto out_free;
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
	ctx->ops->unmap(ctx, seg);
out_free:
	free(seg);
	return ret;
}

void gp_seg_destroy(struct gp_ctx *ctx, struct gp_seg *seg)
{
	gp_io_seg_gone(ctx, seg);
	gp_seg_unregister(ctx, seg);
	ctx->ops->unmap(ctx, seg);
	gp_list_del(&seg->link);
	ctx->hst.reserved -= seg->size;
	ctx->hst.segments--;
	if (seg->huge)
		ctx->hst.segments_huge--;
	free(seg);
}

/* Give an idle pool segment back to the system. */
static void gp_release_idle_seg(struct gp_ctx *ctx, struct gp_seg *seg)
{
	struct gp_hpool *hp = &ctx->hp[seg->kind];
	int ret;

	gp_idle_del(ctx, seg);
	ret = bfc_remove_region(hp->b, seg->region_id, NULL, NULL);
	BFC_ASSERT(ret == 0, "an idle segment is not wholly free in its core");
	(void)ret;
	gp_map_del(&hp->regions, seg->region_id);
	ctx->hst.trimmed += seg->size;
	gp_seg_destroy(ctx, seg);
}

/* Enforce host_cache_max and host_gc_idle_ms. */
static void gp_host_gc(struct gp_ctx *ctx)
{
	uint64_t cap = ctx->opt.host_cache_max;
	uint64_t idle_ms = ctx->opt.host_gc_idle_ms;

	struct gp_seg *seg;

	while (cap && ctx->idle_bytes > cap)
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
	if (idle_ms) {
		uint64_t now = gp_now_ms();

		while ((seg = gp_idle_oldest(ctx)) && now - seg->idle_since >= idle_ms)
			gp_release_idle_seg(ctx, seg);
	}
}

static uint64_t gp_host_page(struct gp_ctx *ctx)
{
	return ctx->kgran > ctx->page_size ? ctx->kgran : ctx->page_size;
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
	while (ctx->hst.reserved + size > limit && !gp_list_empty(&ctx->idle))
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
	if (ctx->hst.reserved + size <= limit)
		return 0;
	return gp_err(ctx, -ENOMEM,
		      "host_limit reached: %s more would exceed %s (%s mapped, all "
		      "in use); raise gp_options.host_limit or GPUPOOL_HOST_LIMIT",
		      gp_fmt_bytes(a, sizeof(a), size),
		      gp_fmt_bytes(b, sizeof(b), limit),
		      gp_fmt_bytes(c, sizeof(c), ctx->hst.reserved));
}

static void gp_release_all_idle(struct gp_ctx *ctx)
{
	while (!gp_list_empty(&ctx->idle))
		gp_release_idle_seg(ctx, gp_idle_oldest(ctx));
}

/*
 * The system refused a segment (RLIMIT_MEMLOCK, the module's
 * per_process_limit, a full module pool): give back every idle segment, so
 * that one retry can use what they held.  False when there was none.
 */
static bool gp_host_release_idle(struct gp_ctx *ctx)
{
	if (gp_list_empty(&ctx->idle))
		return false;
	gp_debug(ctx, "segment refused: releasing %llu idle bytes and retrying",
		 (unsigned long long)ctx->idle_bytes);
	gp_release_all_idle(ctx);
	return true;
}

/* Worth retrying after gp_host_release_idle(): not CUDA's refusal (-EIO)
 * nor a bad argument.
 */
static bool gp_host_refused(int ret)
{
	return ret && ret != -EIO && ret != -EINVAL;
}

/* Add a segment able to hold `size` to pool `kind`. */
static int gp_host_grow(struct gp_ctx *ctx, int kind, uint64_t size)
{
	struct gp_hpool *hp = &ctx->hp[kind];
	uint64_t page = gp_host_page(ctx), want, least;
	struct gp_seg *seg;
	int ret;

	gp_host_gc(ctx);
	if (kind == GP_POOL_SMALL) {
		want = least = gp_round_up(ctx->opt.host_small_segment, page);
	} else {
		least = gp_round_up(size, page);
		want = least <= GP_HOST_MEDIUM_MAX ? GP_HOST_MEDIUM_SEG :
		       gp_round_up(size, GP_HUGE_PAGE);
	}
	/* A segment of `want` that host_limit could not hold even with every
	 * idle segment released: go for `least` at once, before any release
	 * (it may fit as things are).
	 */
	if (want > least && ctx->opt.host_limit &&
	    ctx->hst.reserved - ctx->idle_bytes + want > ctx->opt.host_limit)
		want = least;
	ret = gp_host_make_room(ctx, want);
	if (ret && want > least)
		ret = gp_host_make_room(ctx, want = least);
	if (ret)
		return ret;
	ret = gp_seg_create(ctx, want, kind, false, &seg);
	if (ret && ret != -EIO && want > least) {
		gp_debug(ctx, "segment of %llu refused; trying %llu",
			 (unsigned long long)want, (unsigned long long)least);
		ret = gp_seg_create(ctx, want = least, kind, false, &seg);
	}
	if (gp_host_refused(ret) && gp_host_release_idle(ctx))
		ret = gp_seg_create(ctx, want, kind, false, &seg);
	if (ret)
		return ret;
	ret = bfc_add_region(hp->b, seg->addr, seg->size, &seg->region_id);
	if (!ret)
		ret = gp_map_put(&hp->regions, seg->region_id, seg);
	if (ret) {
		if (seg->region_id)
			bfc_remove_region(hp->b, seg->region_id, NULL, NULL);
		gp_seg_destroy(ctx, seg);
		return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
	}
	gp_idle_add(ctx, seg);
	return 0;
}

static int gp_host_alloc_own(struct gp_ctx *ctx, size_t size, void **ptr)
{
	uint64_t rounded = gp_round_up(size, gp_host_page(ctx));
	struct gp_seg *seg;
	int ret;

	/* Huge pages when the rounding costs under 1/8 of the request. */
	if (!(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES) && rounded >= GP_HUGE_PAGE &&
	    gp_round_up(size, GP_HUGE_PAGE) - size < size / 8)
		rounded = gp_round_up(size, GP_HUGE_PAGE);
	ret = gp_host_make_room(ctx, rounded);
	if (ret)
		return ret;
	ret = gp_seg_create(ctx, rounded, GP_SEG_OWN, true, &seg);
	if (gp_host_refused(ret) && gp_host_release_idle(ctx))
		ret = gp_seg_create(ctx, rounded, GP_SEG_OWN, true, &seg);
	if (ret)
		return ret;
	if (gp_map_put(&ctx->own, seg->addr, seg)) {
		gp_seg_destroy(ctx, seg);
		return gp_err(ctx, -ENOMEM, "out of memory for buffer metadata");
	}
	seg->requested = size;
	seg->nr_used = 1;
	ctx->hst.in_use += seg->size;
	ctx->hst.requested += size;
	*ptr = (void *)(uintptr_t)seg->addr;
	return 0;
}

GP_API int gp_host_alloc(struct gp_ctx *ctx, size_t size, unsigned int flags,
			 void **ptr)
{
	struct bfc_chunk_info ci;
	struct gp_hpool *hp;
	struct gp_seg *seg;
	bool grown = false;
	uint64_t addr;
	bfc_handle_t h;
	int kind, ret;

	if (!ctx || !ptr)
		return -EINVAL;
	if (!size || (flags & ~GP_HOST_VALID_FLAGS))
		return gp_err(ctx, -EINVAL, "gp_host_alloc: %s",
			      size ? "unknown flags" : "size 0");
	pthread_mutex_lock(&ctx->host_lock);
	if (size > GP_SIZE_MAX) {
		ret = gp_err(ctx, -ENOMEM, "gp_host_alloc: %zu bytes is more than any pool can hold",
			     size);
		goto out;
	}
	if (flags & GP_HOST_SHARED) {
		ret = gp_host_alloc_own(ctx, size, ptr);
		goto out;
	}
	kind = size <= GP_HOST_SMALL_MAX ? GP_POOL_SMALL : GP_POOL_LARGE;
	hp = &ctx->hp[kind];
	while ((ret = bfc_alloc(hp->b, size, &h, &addr)) == -BFC_ENOMEM && !grown) {
		ret = gp_host_grow(ctx, kind, size);
		if (ret)
			goto out;
		grown = true;
	}
	if (ret) {
		ret = gp_err(ctx, ret == -BFC_EINVAL ? -EINVAL : -ENOMEM,
			     "gp_host_alloc: %llu bytes do not fit (%d)",
			     (unsigned long long)size, ret);
		goto out;
	}
	bfc_chunk_info(hp->b, h, &ci);
	seg = gp_map_get(&hp->regions, ci.region_id);
	BFC_ASSERT(seg, "a block in a region the library does not know");
	if (seg->nr_used++ == 0)
		gp_idle_del(ctx, seg);
	ctx->hst.in_use += ci.size;
	ctx->hst.requested += size;
	if (!grown)
		ctx->hst.cache_hits++;
	*ptr = (void *)(uintptr_t)addr;
out:
	if (ret)
		ctx->hst.failed++;
	else
		ctx->hst.allocs++;
	pthread_mutex_unlock(&ctx->host_lock);
	return ret;
}

GP_API int gp_host_free(struct gp_ctx *ctx, void *ptr)
{
	uint64_t addr = (uint64_t)(uintptr_t)ptr;
	struct bfc_chunk_info ci;
	struct gp_seg *seg;
	bfc_handle_t h;
	int kind, ret = 0;

	if (!ctx)
		return -EINVAL;
	if (!ptr)
		return 0;
	pthread_mutex_lock(&ctx->host_lock);
	for (kind = 0; kind < GP_NR_HPOOLS; kind++) {
		struct gp_hpool *hp = &ctx->hp[kind];

		if (bfc_lookup(hp->b, addr, &h))
			continue;
		bfc_chunk_info(hp->b, h, &ci);
		seg = gp_map_get(&hp->regions, ci.region_id);
		bfc_free(hp->b, h);
		ctx->hst.in_use -= ci.size;
		ctx->hst.requested -= ci.requested;
		if (--seg->nr_used == 0)
			gp_idle_add(ctx, seg);
		goto out;
	}
	seg = gp_map_del(&ctx->own, addr);
	if (!seg) {
		ret = gp_err(ctx, -EINVAL,
			     "gp_host_free: %p is not a buffer of this context", ptr);
		pthread_mutex_unlock(&ctx->host_lock);
		return ret;
	}
	ctx->hst.in_use -= seg->size;
	ctx->hst.requested -= seg->requested;
	gp_seg_destroy(ctx, seg);
out:
	ctx->hst.frees++;
	/* host_cache_max and host_gc_idle_ms, checked on every free that could
	 * matter: with something idle (O(1) unless something is due).
	 */
	if (!gp_list_empty(&ctx->idle))
		gp_host_gc(ctx);
	pthread_mutex_unlock(&ctx->host_lock);
	return ret;
}

GP_API int gp_host_trim(struct gp_ctx *ctx, uint64_t *released)
{
	uint64_t before;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->host_lock);
	before = ctx->hst.trimmed;
	gp_release_all_idle(ctx);
	if (released)
		*released = ctx->hst.trimmed - before;
	pthread_mutex_unlock(&ctx->host_lock);
	return 0;
}

GP_API int gp_host_stats(struct gp_ctx *ctx, struct gp_host_stats *st)
{
	if (!ctx || !st)
		return -EINVAL;
	pthread_mutex_lock(&ctx->host_lock);
	*st = ctx->hst;
	st->cached = st->reserved - st->in_use;
	st->idle = ctx->idle_bytes;
	st->limit = ctx->opt.host_limit;
	pthread_mutex_unlock(&ctx->host_lock);
	return 0;
}

/* What the file reader asks ------------------------------------------------- */

struct gp_find {
	uint64_t addr, len;
	int found;		/* 1 inside one allocation, -1 not */
};

static int gp_find_chunk(void *arg, const struct bfc_chunk_info *c)
{
	struct gp_find *f = arg;

	if (c->addr + c->size <= f->addr)
		return 0;
	f->found = c->in_use && c->addr <= f->addr &&
		   f->addr + f->len <= c->addr + c->size ? 1 : -1;
	return -1;
}

/* host_lock held.  The segment of the buffer holding [addr, addr + len),
 * or NULL.
 */
static struct gp_seg *gp_host_find(struct gp_ctx *ctx, uint64_t addr,
				   uint64_t len)
{
	struct gp_find f = { .addr = addr, .len = len };
	struct gp_seg *seg = NULL;
	struct bfc_cursor cur;
	struct gp_list *pos;

	gp_list_each(pos, &ctx->segs) {
		struct gp_seg *s = gp_list_entry(pos, struct gp_seg, link);

		if (addr >= s->addr && addr - s->addr < s->size) {
			seg = s;
			break;
		}
	}
	if (!seg || len > seg->size - (addr - seg->addr))
		return NULL;
	if (seg->kind == GP_SEG_OWN || seg->kind == GP_SEG_IMPORT)
		return seg;
	if (seg->kind >= GP_NR_HPOOLS)
		return NULL;
	memset(&cur, 0, sizeof(cur));
	cur.pos = seg->addr;
	while (bfc_walk_chunks(ctx->hp[seg->kind].b, &cur, 0, gp_find_chunk,
			       &f) == BFC_WALK_MORE)
		;
	return f.found == 1 ? seg : NULL;
}

int gp_host_seg_of(struct gp_ctx *ctx, uint64_t addr, uint64_t len,
		   int (*fn)(void *arg, const struct gp_seg *seg), void *arg)
{
	struct gp_seg *seg;
	int ret = -ENOENT;

	pthread_mutex_lock(&ctx->host_lock);
	seg = gp_host_find(ctx, addr, len);
	if (seg)
		ret = fn ? fn(arg, seg) : 0;
	pthread_mutex_unlock(&ctx->host_lock);
	return ret;
}

/* Set up / tear down --------------------------------------------------------- */

int gp_host_init(struct gp_ctx *ctx)
{
	struct bfc_params p;
	int ret;

	gp_list_init(&ctx->segs);
	gp_list_init(&ctx->idle);
	bfc_params_default(&p, GP_HOST_SMALL_GRAN);
	p.policy = gp_bfc_policy(ctx);
	ret = bfc_create(&ctx->hp[GP_POOL_SMALL].b, &p);
	if (ret)
		return gp_err(ctx, -ENOMEM, "cannot create the small host pool");
	bfc_params_default(&p, gp_host_page(ctx));
	p.policy = gp_bfc_policy(ctx);
	ret = bfc_create(&ctx->hp[GP_POOL_LARGE].b, &p);
	if (ret)
		return gp_err(ctx, -ENOMEM, "cannot create the large host pool");
	return 0;
}

void gp_host_fini(struct gp_ctx *ctx)
{
	int kind;

	while (!gp_list_empty(&ctx->segs)) {
		struct gp_seg *seg = gp_list_first(&ctx->segs, struct gp_seg, link);

		if (gp_list_linked(&seg->idle_link))
			gp_idle_del(ctx, seg);
		gp_seg_destroy(ctx, seg);
	}
	for (kind = 0; kind < GP_NR_HPOOLS; kind++) {
		if (ctx->hp[kind].b)
			bfc_destroy(ctx->hp[kind].b);
		gp_map_destroy(&ctx->hp[kind].regions);
	}
	gp_map_destroy(&ctx->own);
}
