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
 * every growth, and by the keeper thread), when another process asks for
 * it (the keeper, keeper.c), when a new segment would exceed host_limit,
 * and all of them when the system refuses a new segment (then it is tried
 * once more, other processes' idle memory asked for only then).
 *
 * segments.c has the segments and the idle list; this file the pools, the
 * API, set-up and tear-down; their state is struct gp_host (pools.h).
 *
 * One mutex (host_lock) covers all of it; the fast path (a block from a
 * cached segment) makes no system call.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "host/pools.h"

static struct gp_seg *gp_host_seg_at(struct gp_ctx *ctx, uint64_t addr);

/*
 * A new segment of want bytes for pool kind, or of least when want (more)
 * is refused.  No other process is asked for its idle memory (the kernel
 * backend's ALLOC would) for the optional want, nor while this one has
 * idle segments of its own: refused, those go back first and least is
 * asked for once more, others' idle memory with it.
 */
static int gp_host_new_seg(struct gp_ctx *ctx, int kind, uint64_t want,
			   uint64_t least, struct gp_seg **seg)
{
	bool own_idle = !gp_list_empty(&ctx->host->idle);
	int ret;

	ret = gp_seg_create(ctx, want, kind, false, own_idle || want > least,
			    seg);
	if (ret && ret != -EIO && want > least) {
		gp_debug(ctx, "segment of %llu refused; trying %llu",
			 (unsigned long long)want, (unsigned long long)least);
		ret = gp_seg_create(ctx, want = least, kind, false, own_idle,
				    seg);
	}
	if (gp_host_refused(ret) && gp_host_release_idle(ctx))
		ret = gp_seg_create(ctx, want, kind, false, false, seg);
	return ret;
}

/* Add a segment able to hold `size` to pool `kind`. */
static int gp_host_grow(struct gp_ctx *ctx, int kind, uint64_t size)
{
	struct gp_hpool *hp = &ctx->host->hp[kind];
	uint64_t page = ctx->host->gran, want, least;
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
	    ctx->host->st.reserved - ctx->host->idle_bytes + want > ctx->opt.host_limit)
		want = least;
	ret = gp_host_make_room(ctx, want);
	if (ret && want > least)
		ret = gp_host_make_room(ctx, want = least);
	if (ret)
		return ret;
	ret = gp_host_new_seg(ctx, kind, want, least, &seg);
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
	gp_idle_add(ctx, seg, false);	/* new: taken from at once */
	return 0;
}

static int gp_host_alloc_own(struct gp_ctx *ctx, size_t size, void **ptr)
{
	uint64_t rounded = gp_round_up(size, ctx->host->gran);
	struct gp_seg *seg;
	int ret;

	/* Huge pages when the rounding costs under 1/8 of the request. */
	if (!(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES) && rounded >= GP_HUGE_PAGE &&
	    gp_round_up(size, GP_HUGE_PAGE) - size < size / 8)
		rounded = gp_round_up(size, GP_HUGE_PAGE);
	ret = gp_host_make_room(ctx, rounded);
	if (ret)
		return ret;
	/* Others asked only once this process's own idle segments are gone. */
	ret = gp_seg_create(ctx, rounded, GP_SEG_OWN, true,
			    !gp_list_empty(&ctx->host->idle), &seg);
	if (gp_host_refused(ret) && gp_host_release_idle(ctx))
		ret = gp_seg_create(ctx, rounded, GP_SEG_OWN, true, false, &seg);
	if (ret)
		return ret;
	if (gp_map_put(&ctx->host->own, seg->addr, seg)) {
		gp_seg_destroy(ctx, seg);
		return gp_err(ctx, -ENOMEM, "out of memory for buffer metadata");
	}
	seg->requested = size;
	seg->nr_used = 1;
	ctx->host->st.in_use += seg->size;
	ctx->host->st.requested += size;
	*ptr = (void *)(uintptr_t)seg->addr;
	return 0;
}

/* host_lock held.  A block of size from its pool, tagged with tag (0:
 * none) in its chunk.
 */
static int gp_host_take(struct gp_ctx *ctx, size_t size, uint64_t tag,
			void **ptr)
{
	int kind = size <= GP_HOST_SMALL_MAX ? GP_POOL_SMALL : GP_POOL_LARGE;
	struct gp_hpool *hp = &ctx->host->hp[kind];
	struct bfc_chunk_info ci;
	struct gp_seg *seg;
	bool grown = false;
	uint64_t addr;
	bfc_handle_t h;
	int ret;

	while ((ret = bfc_alloc(hp->b, size, &h, &addr)) == -BFC_ENOMEM && !grown) {
		ret = gp_host_grow(ctx, kind, size);
		if (ret)
			return ret;
		grown = true;
	}
	if (ret)
		return gp_err(ctx, ret == -BFC_EINVAL ? -EINVAL : -ENOMEM,
			      "gp_host_alloc: %llu bytes do not fit (%d)",
			      (unsigned long long)size, ret);
	if (tag)
		bfc_set_tag(hp->b, h, tag);
	bfc_chunk_info(hp->b, h, &ci);
	seg = gp_map_get(&hp->regions, ci.region_id);
	BFC_ASSERT(seg, "a block in a region the library does not know");
	if (seg->nr_used++ == 0)
		gp_idle_del(ctx, seg);
	ctx->host->st.in_use += ci.size;
	ctx->host->st.requested += size;
	if (!grown)
		ctx->host->st.cache_hits++;
	*ptr = (void *)(uintptr_t)addr;
	return 0;
}

static int gp_host_alloc_as(struct gp_ctx *ctx, size_t size, unsigned int flags,
			    uint64_t tag, void **ptr)
{
	int ret;

	if (!ctx || !ptr)
		return -EINVAL;
	if (!size || (flags & ~GP_HOST_VALID_FLAGS))
		return gp_err(ctx, -EINVAL, "gp_host_alloc: %s",
			      size ? "unknown flags" : "size 0");
	pthread_mutex_lock(&ctx->host->lock);
	if (size > GP_SIZE_MAX)
		ret = gp_err(ctx, -ENOMEM, "gp_host_alloc: %zu bytes is more than any pool can hold",
			     size);
	else if (flags & GP_HOST_SHARED)
		ret = gp_host_alloc_own(ctx, size, ptr);
	else
		ret = gp_host_take(ctx, size, tag, ptr);
	if (ret)
		ctx->host->st.failed++;
	else
		ctx->host->st.allocs++;
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

GP_API int gp_host_alloc(struct gp_ctx *ctx, size_t size, unsigned int flags,
			 void **ptr)
{
	return gp_host_alloc_as(ctx, size, flags, 0, ptr);
}

int gp_host_alloc_tagged(struct gp_ctx *ctx, size_t size, uint64_t tag,
			 void **ptr)
{
	return gp_host_alloc_as(ctx, size, 0, tag, ptr);
}

/* host_lock held.  Give back the buffer at addr: 0 with its tag and the
 * size it was asked with; -EINVAL when there is none but addr lies in a
 * segment of the context, -ENOENT when it lies in none.
 */
static int gp_host_give(struct gp_ctx *ctx, uint64_t addr, uint64_t *tag,
			uint64_t *requested)
{
	struct bfc_chunk_info ci;
	struct gp_seg *seg;
	bfc_handle_t h;
	int kind;

	for (kind = 0; kind < GP_NR_HPOOLS; kind++) {
		struct gp_hpool *hp = &ctx->host->hp[kind];

		if (bfc_lookup(hp->b, addr, &h))
			continue;
		bfc_chunk_info(hp->b, h, &ci);
		seg = gp_map_get(&hp->regions, ci.region_id);
		bfc_free(hp->b, h);
		ctx->host->st.in_use -= ci.size;
		ctx->host->st.requested -= ci.requested;
		if (--seg->nr_used == 0)
			gp_idle_add(ctx, seg, true);
		*tag = ci.tag;
		*requested = ci.requested;
		return 0;
	}
	seg = gp_map_del(&ctx->host->own, addr);
	if (!seg)	/* inside a segment of ours, or not ours at all */
		return gp_host_seg_at(ctx, addr) ? -EINVAL : -ENOENT;
	ctx->host->st.in_use -= seg->size;
	ctx->host->st.requested -= seg->requested;
	*tag = 0;
	*requested = seg->requested;
	gp_seg_destroy(ctx, seg);
	return 0;
}

/* host_lock held.  gp_host_give, counted, and the cache's limits. */
static int gp_host_give_counted(struct gp_ctx *ctx, void *ptr, uint64_t *tag,
				uint64_t *requested)
{
	int ret = gp_host_give(ctx, (uint64_t)(uintptr_t)ptr, tag, requested);

	if (!ret) {
		ctx->host->st.frees++;
		/* host_cache_max and host_gc_idle_ms, checked on every free
		 * that could matter: with something idle (O(1) unless
		 * something is due).
		 */
		if (!gp_list_empty(&ctx->host->idle))
			gp_host_gc(ctx);
	}
	return ret;
}

int gp_host_free_tagged(struct gp_ctx *ctx, void *ptr, uint64_t *tag,
			uint64_t *requested)
{
	int ret;

	pthread_mutex_lock(&ctx->host->lock);
	ret = gp_host_give_counted(ctx, ptr, tag, requested);
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

int gp_host_free_parked(struct gp_ctx *ctx, void *ptr,
			void (*forget)(void *arg), void *arg)
{
	uint64_t tag, requested;
	int ret;

	pthread_mutex_lock(&ctx->host->lock);
	forget(arg);
	ret = gp_host_give_counted(ctx, ptr, &tag, &requested);
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

GP_API int gp_host_free(struct gp_ctx *ctx, void *ptr)
{
	uint64_t tag, requested;

	if (!ctx)
		return -EINVAL;
	if (!ptr)
		return 0;
	if (gp_host_free_tagged(ctx, ptr, &tag, &requested))
		return gp_err(ctx, -EINVAL,
			      "gp_host_free: %p is not a buffer of this context", ptr);
	return 0;
}

GP_API int gp_host_trim(struct gp_ctx *ctx, uint64_t *released)
{
	uint64_t before;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->host->lock);
	before = ctx->host->st.trimmed;
	gp_release_all_idle(ctx);
	if (released)
		*released = ctx->host->st.trimmed - before;
	pthread_mutex_unlock(&ctx->host->lock);
	return 0;
}

GP_API int gp_host_stats(struct gp_ctx *ctx, struct gp_host_stats *st)
{
	if (!ctx || !st)
		return -EINVAL;
	pthread_mutex_lock(&ctx->host->lock);
	*st = ctx->host->st;
	st->cached = st->reserved - st->in_use;
	st->idle = ctx->host->idle_bytes;
	st->limit = ctx->opt.host_limit;
	pthread_mutex_unlock(&ctx->host->lock);
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

/* host_lock held.  The segment holding addr, or NULL. */
static struct gp_seg *gp_host_seg_at(struct gp_ctx *ctx, uint64_t addr)
{
	struct gp_list *pos;

	gp_list_each(pos, &ctx->host->segs) {
		struct gp_seg *s = gp_list_entry(pos, struct gp_seg, link);

		if (addr >= s->addr && addr - s->addr < s->size)
			return s;
	}
	return NULL;
}

/* host_lock held.  fn on the chunks of a pool segment from its start. */
static void gp_seg_walk(struct gp_ctx *ctx, struct gp_seg *seg,
			int (*fn)(void *arg, const struct bfc_chunk_info *c),
			void *arg)
{
	struct bfc_cursor cur;

	memset(&cur, 0, sizeof(cur));
	cur.pos = seg->addr;
	while (bfc_walk_chunks(ctx->host->hp[seg->kind].b, &cur, 0, fn, arg) ==
	       BFC_WALK_MORE)
		;
}

/* host_lock held.  The segment of the buffer holding [addr, addr + len),
 * or NULL.
 */
static struct gp_seg *gp_host_find(struct gp_ctx *ctx, uint64_t addr,
				   uint64_t len)
{
	struct gp_find f = { .addr = addr, .len = len };
	struct gp_seg *seg = gp_host_seg_at(ctx, addr);

	if (!seg || len > seg->size - (addr - seg->addr))
		return NULL;
	if (seg->kind == GP_SEG_OWN || seg->kind == GP_SEG_IMPORT)
		return seg;
	if (seg->kind >= GP_NR_HPOOLS)
		return NULL;
	gp_seg_walk(ctx, seg, gp_find_chunk, &f);
	return f.found == 1 ? seg : NULL;
}

struct gp_block_find {
	uint64_t addr, base, tag;
	int found;		/* 1 inside a block in use, -1 not */
};

static int gp_find_block(void *arg, const struct bfc_chunk_info *c)
{
	struct gp_block_find *f = arg;

	if (c->addr + c->size <= f->addr)
		return 0;
	f->found = c->in_use && c->addr <= f->addr ? 1 : -1;
	f->base = c->addr;
	f->tag = c->tag;
	return -1;
}

int gp_host_lookup(struct gp_ctx *ctx, uint64_t addr, uint64_t *base,
		   uint64_t *tag)
{
	struct gp_block_find f = { .addr = addr };
	struct gp_seg *seg;

	pthread_mutex_lock(&ctx->host->lock);
	seg = gp_host_seg_at(ctx, addr);
	if (seg && seg->kind < GP_NR_HPOOLS) {
		gp_seg_walk(ctx, seg, gp_find_block, &f);
	} else if (seg) {	/* a buffer of its own, in use while mapped */
		f.found = 1;
		f.base = seg->addr;
	}
	pthread_mutex_unlock(&ctx->host->lock);
	if (!seg)
		return -ENOENT;
	if (f.found != 1)
		return -EINVAL;
	*base = f.base;
	*tag = f.tag;
	return 0;
}

int gp_host_seg_of(struct gp_ctx *ctx, uint64_t addr, uint64_t len,
		   int (*fn)(void *arg, const struct gp_seg *seg), void *arg)
{
	struct gp_seg *seg;
	int ret = -ENOENT;

	pthread_mutex_lock(&ctx->host->lock);
	seg = gp_host_find(ctx, addr, len);
	if (seg)
		ret = fn ? fn(arg, seg) : 0;
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

void gp_host_each_segment(struct gp_ctx *ctx,
			  void (*fn)(void *arg, uint64_t addr, uint64_t size),
			  void *arg)
{
	struct gp_list *pos;

	gp_list_each(pos, &ctx->host->segs) {
		struct gp_seg *s = gp_list_entry(pos, struct gp_seg, link);

		fn(arg, s->addr, s->size);
	}
}

/* Set up / tear down --------------------------------------------------------- */

int gp_host_init(struct gp_ctx *ctx)
{
	struct gp_host *h = calloc(1, sizeof(*h));
	struct bfc_params p;
	int kind;

	if (!h)
		return gp_err(ctx, -ENOMEM, "gp_open: out of memory");
	pthread_mutex_init(&h->lock, NULL);
	gp_list_init(&h->segs);
	gp_list_init(&h->idle);
	h->pid = getpid();
	h->gran = ctx->ops->granularity(ctx);
	if (ctx->ops->memlock_limit)
		h->st.memlock_limit = ctx->ops->memlock_limit(ctx);
	ctx->host = h;
	for (kind = 0; kind < GP_NR_HPOOLS; kind++) {
		bfc_params_default(&p, kind == GP_POOL_SMALL ? GP_HOST_SMALL_GRAN :
				   h->gran);
		p.policy = gp_bfc_policy(ctx);
		if (bfc_create(&h->hp[kind].b, &p)) {
			gp_host_fini(ctx);
			return gp_err(ctx, -ENOMEM, "cannot create the %s host pool",
				      kind == GP_POOL_SMALL ? "small" : "large");
		}
	}
	return 0;
}

void gp_host_fini(struct gp_ctx *ctx)
{
	struct gp_host *h = ctx->host;
	struct gp_seg *seg;
	int kind;

	if (!h)
		return;
	gp_keeper_stop(ctx);
	while ((seg = gp_list_first(&h->segs, struct gp_seg, link))) {
		if (gp_list_linked(&seg->idle_link))
			gp_idle_unlink(ctx, seg);
		gp_seg_destroy(ctx, seg);
	}
	for (kind = 0; kind < GP_NR_HPOOLS; kind++) {
		if (h->hp[kind].b)
			bfc_destroy(h->hp[kind].b);
		gp_map_destroy(&h->hp[kind].regions);
	}
	gp_map_destroy(&h->own);
	pthread_mutex_destroy(&h->lock);
	free(h);
	ctx->host = NULL;
}

/* What the rest of the library asks ------------------------------------------ */

void gp_host_lock(struct gp_ctx *ctx)
{
	pthread_mutex_lock(&ctx->host->lock);
}

void gp_host_unlock(struct gp_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->host->lock);
}

/* The room that keeps something per segment is told when one goes. */
void gp_host_on_seg_gone(struct gp_ctx *ctx, gp_seg_gone_fn *fn)
{
	pthread_mutex_lock(&ctx->host->lock);
	ctx->host->seg_gone = fn;
	pthread_mutex_unlock(&ctx->host->lock);
}

int gp_host_on_parked(struct gp_ctx *ctx, gp_host_parked_fn *fn)
{
	int ret;

	pthread_mutex_lock(&ctx->host->lock);
	ctx->host->parked = fn;
	ret = gp_keeper_run(ctx);
	pthread_mutex_unlock(&ctx->host->lock);
	return ret;
}

void gp_host_parked_wake(struct gp_ctx *ctx)
{
	pthread_mutex_lock(&ctx->host->lock);
	gp_keeper_wake(ctx);
	pthread_mutex_unlock(&ctx->host->lock);
}

void gp_host_info(struct gp_ctx *ctx, struct gp_info *info)
{
	pthread_mutex_lock(&ctx->host->lock);
	info->host_granularity = ctx->host->gran;
	info->hugepages = ctx->host->st.segments_huge > 0;
	info->cuda_state = gp_cuda_usable(ctx) && !ctx->host->unregistered ?
			   GP_CUDA_REGISTERED : GP_CUDA_OFF;
	/* First: it must survive the truncation of what follows. */
	if (ctx->host->unregistered)
		snprintf(info->why, sizeof(info->why),
			 "host memory is not registered: %s", GP_HOST_UNREGISTERED);
	pthread_mutex_unlock(&ctx->host->lock);
}
