// SPDX-License-Identifier: MIT
/*
 * dev.c - the device pools: the BFC core over cudaMalloc segments (see
 * dev.h for the per-stream layout and stream safety).
 *
 * Two modes (enum gp_dev_mode): the virtual one is in vmm.c, the
 * segments in segments.c; this file has what both share: the pools and
 * their streams, allocation, free, trim, stats and close.  When nothing
 * fits: poll pending frees, release the wholly free memory of every stream
 * and try again, then wait for pending frees (cudaEventSynchronize) and
 * try once more before reporting out-of-memory (with GPUPOOL_DEBUG, the
 * memory map goes to stderr).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "env.h"

static int gp_dstream_create(struct gp_ctx *ctx, struct gp_dpool *p,
			     gp_stream_t stream, bool small,
			     struct gp_dstream **out)
{
	struct gp_dstream *ds = calloc(1, sizeof(*ds));
	struct bfc_params bp;

	if (!ds)
		return gp_err(ctx, -ENOMEM, "out of memory for a stream pool");
	bfc_params_default(&bp, GP_DEV_GRAN);
	bp.policy = gp_bfc_policy(ctx);
	if (p->vmm) {
		/* One region, growing: the top chunk merges.  A remainder
		 * left unsplit is mapped memory nobody can use: split off
		 * whatever is worth a block of its own.
		 */
		bp.flags |= BFC_MERGE_ADJACENT_REGIONS;
		bp.split_threshold = GP_VMM_SPLIT_MIN;
	}
	if (bfc_create(&ds->b, &bp)) {
		free(ds);
		return gp_err(ctx, -ENOMEM, "out of memory for a stream pool");
	}
	ds->stream = stream;
	ds->small = small;
	ds->next = p->streams;
	p->streams = ds;
	p->st.streams++;
	*out = ds;
	return 0;
}

static struct gp_dstream *gp_dstream_find(struct gp_dpool *p, gp_stream_t s,
					  bool small)
{
	struct gp_dstream *ds;

	for (ds = p->streams; ds; ds = ds->next)
		if (ds->stream == s && ds->small == small)
			return ds;
	return NULL;
}

struct gp_dpool *gp_dpool_get(struct gp_ctx *ctx, int device, bool create)
{
	struct gp_dpool *p;
	size_t total = 0;
	int saved;

	if (device < 0 || device >= gp_cuda_device_count(ctx))
		return NULL;
	p = __atomic_load_n(&ctx->dev->pool[device], __ATOMIC_ACQUIRE);
	if (p || !create)
		return p;
	pthread_mutex_lock(&ctx->dev->lock);
	p = ctx->dev->pool[device];
	if (p)
		goto out;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	pthread_mutex_init(&p->lock, NULL);
	p->device = device;
	p->st.next_segment = ctx->dev->initial_segment;
	if (!gp_cuda_enter(ctx, device, &saved)) {
		if (gp_cuda_mem_total(ctx, &total) == cudaSuccess)
			p->total_mem = total;
		gp_vmm_probe(ctx, p);
		gp_cuda_leave(ctx, saved);
	}
	p->st.mode = p->vmm ? GP_DEV_VIRTUAL : GP_DEV_SEGMENTS;
	p->st.granularity = p->vmm ? p->gran : GP_DEV_GRAN;
	p->limit = ctx->opt.dev_limit;
	if (ctx->opt.dev_limit_fraction > 0.0 && p->total_mem) {
		uint64_t f = (uint64_t)(ctx->opt.dev_limit_fraction *
					(double)p->total_mem);

		if (!p->limit || f < p->limit)
			p->limit = f;
	}
	/* Down to the granularity, but a limit stays one: below 256 bytes
	 * it is 256, not 0 (none).
	 */
	if (p->limit)
		p->limit = p->limit < GP_DEV_GRAN ? GP_DEV_GRAN :
			   p->limit & ~(GP_DEV_GRAN - 1);
	p->st.limit = p->limit;
	gp_debug(ctx, "device %d pool: %llu bytes total, limit %llu", device,
		 (unsigned long long)p->total_mem, (unsigned long long)p->limit);
	__atomic_store_n(&ctx->dev->pool[device], p, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&ctx->dev->lock);
	return p;
}

/* Allocation ---------------------------------------------------------------- */

/* 0, -ENOMEM, or -EIO from mapping a hole (virtual mode). */
static int gp_dpool_try(struct gp_ctx *ctx, struct gp_dpool *p,
			struct gp_dstream *ds, uint64_t size, bfc_handle_t *h,
			uint64_t *addr)
{
	struct bfc_chunk_info ci;
	int ret;

	if (bfc_alloc(ds->b, size, h, addr))
		return -ENOMEM;
	if (ds->vr.holes == ds->vr.held)
		return 0;
	/* Unmapped granules left in free chunks (a trim that found no
	 * memory for its list of holes): those under the block, mapped first.
	 */
	bfc_chunk_info(ds->b, *h, &ci);
	ret = gp_vmm_back(ctx, p, ds, ci.addr, ci.size);
	if (ret)
		bfc_free(ds->b, *h);
	return ret;
}

/* A new segment for the stream, then the allocation from it. */
static int gp_dpool_grow_try(struct gp_ctx *ctx, struct gp_dpool *p,
			     struct gp_dstream *ds, uint64_t size,
			     bfc_handle_t *h, uint64_t *addr)
{
	int ret = p->vmm ? gp_vmm_place(ctx, p, ds, size) :
		  gp_dstream_extend(ctx, p, ds, size);

	return ret ? ret : gp_dpool_try(ctx, p, ds, size, h, addr);
}

/* 0; -ENOMEM when nothing frees enough; -EIO when CUDA failed otherwise
 * (gp_dstream_extend has set the message).
 */
static int gp_dpool_alloc(struct gp_ctx *ctx, struct gp_dpool *p,
			  struct gp_dstream *ds, uint64_t size, bfc_handle_t *h,
			  uint64_t *addr)
{
	int ret;

	if (p->pending)
		gp_pending_poll(ctx, p, false);
	ret = gp_dpool_try(ctx, p, ds, size, h, addr);
	if (ret != -ENOMEM)
		return ret;
	ret = gp_dpool_grow_try(ctx, p, ds, size, h, addr);
	if (ret != -ENOMEM)
		return ret;
	/* Nothing fits and no growth: give cached segments back, retry. */
	if (gp_dpool_release_free(ctx, p, ds))
		gp_debug(ctx, "device %d: released free segments to fit %llu",
			 p->device, (unsigned long long)size);
	ret = gp_dpool_grow_try(ctx, p, ds, size, h, addr);
	if (ret != -ENOMEM || !p->pending)
		return ret;
	/* Last resort: wait for blocks freed behind events. */
	gp_pending_poll(ctx, p, true);
	ret = gp_dpool_try(ctx, p, ds, size, h, addr);
	if (ret != -ENOMEM)
		return ret;
	gp_dpool_release_free(ctx, p, ds);
	return gp_dpool_grow_try(ctx, p, ds, size, h, addr);
}

/* Nothing freed enough for size bytes: -ENOMEM, saying how the pool
 * stands (and with GPUPOOL_DEBUG, its memory map on stderr).
 */
static int gp_dpool_oom(struct gp_ctx *ctx, struct gp_dpool *p, uint64_t size)
{
	char a[32], b[32], c[32], d[32];
	int ret;

	p->st.ooms++;
	ret = gp_err(ctx, -ENOMEM,
		     "out of memory on device %d: %s asked, %s reserved, %s in "
		     "use, limit %s%s", p->device,
		     gp_fmt_bytes(a, sizeof(a), size),
		     gp_fmt_bytes(b, sizeof(b), p->st.reserved),
		     gp_fmt_bytes(c, sizeof(c), p->st.in_use),
		     p->limit ? gp_fmt_bytes(d, sizeof(d), p->limit) : "none",
		     ctx->debug ? "" : " (GPUPOOL_DEBUG=1 prints the memory map)");
	if (ctx->debug)
		gp_dpool_dump(ctx, p, size);
	return ret;
}

GP_API int gp_dev_alloc(struct gp_ctx *ctx, int device, size_t size,
			gp_stream_t stream, void **ptr)
{
	struct bfc_chunk_info ci;
	struct gp_dstream *ds;
	struct gp_dpool *p;
	uint64_t addr;
	bfc_handle_t h;
	bool small;
	int ret;

	if (!ctx || !ptr)
		return -EINVAL;
	if (!size)
		return gp_err(ctx, -EINVAL, "gp_dev_alloc: size 0");
	p = gp_dpool_get(ctx, device, true);
	if (!p)
		return gp_err(ctx, -ENODEV, "gp_dev_alloc: %s",
			      gp_cuda_usable(ctx) ? "no such device (or out of memory)" :
			      "CUDA is not usable (see gp_info)");
	pthread_mutex_lock(&p->lock);
	/* Virtual mode: small blocks apart, so that they do not keep
	 * granules mapped among the large blocks' free space.
	 */
	small = p->vmm && size <= GP_VMM_SMALL;
	ds = gp_dstream_find(p, stream, small);
	if (!ds) {
		ret = gp_dstream_create(ctx, p, stream, small, &ds);
		if (ret)
			goto out;
	}
	ret = gp_dpool_alloc(ctx, p, ds, size, &h, &addr);
	if (ret == -ENOMEM)
		ret = gp_dpool_oom(ctx, p, size);
	if (ret)
		goto out;
	bfc_chunk_info(ds->b, h, &ci);
	p->st.in_use += ci.size;
	p->st.requested += size;
	if (p->st.in_use > p->st.peak_in_use)
		p->st.peak_in_use = p->st.in_use;
	p->st.allocs++;
	*ptr = (void *)(uintptr_t)addr;
out:
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/* The stream pool holding the in-use block at addr (hint first). */
static struct gp_dstream *gp_dblock_find(struct gp_dpool *p, uint64_t addr,
					 gp_stream_t hint, bfc_handle_t *h)
{
	struct gp_dstream *ds;
	int pass;

	/* The hint's sub-pools first (two in the virtual mode). */
	for (pass = 0; pass < 2; pass++)
		for (ds = p->streams; ds; ds = ds->next)
			if ((ds->stream == hint) == !pass &&
			    !bfc_lookup(ds->b, addr, h) &&
			    !gp_vmm_is_hole(ds, *h))
				return ds;
	return NULL;
}

/* Find the pool and stream of ptr and lock the pool; device -1: search. */
static struct gp_dpool *gp_dpool_of(struct gp_ctx *ctx, int device, void *ptr,
				    gp_stream_t hint, struct gp_dstream **ds,
				    bfc_handle_t *h)
{
	int d, lo = 0, hi = gp_cuda_device_count(ctx);

	if (device >= 0 && device < hi)
		lo = device, hi = device + 1;
	for (d = lo; d < hi; d++) {
		struct gp_dpool *p = gp_dpool_get(ctx, d, false);

		if (!p)
			continue;
		pthread_mutex_lock(&p->lock);
		*ds = gp_dblock_find(p, (uint64_t)(uintptr_t)ptr, hint, h);
		if (*ds)
			return p;
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

int gp_dev_free_on(struct gp_ctx *ctx, int device, void *ptr, gp_stream_t stream)
{
	struct gp_dstream *ds;
	struct gp_dpool *p;
	bfc_handle_t h;
	int ret;

	if (!ctx)
		return -EINVAL;
	if (!ptr)
		return 0;
	p = gp_dpool_of(ctx, device, ptr, stream, &ds, &h);
	if (!p)
		return gp_err(ctx, -EINVAL,
			      "gp_dev_free: %p is not a device block of this context", ptr);
	ret = gp_dstream_free(ctx, p, ds, h, stream);
	if (!ret)
		p->st.frees++;
	pthread_mutex_unlock(&p->lock);
	return ret;
}

GP_API int gp_dev_free(struct gp_ctx *ctx, void *ptr, gp_stream_t stream)
{
	return gp_dev_free_on(ctx, -1, ptr, stream);
}

GP_API int gp_dev_record_stream(struct gp_ctx *ctx, void *ptr, gp_stream_t stream)
{
	struct bfc_chunk_info ci;
	struct gp_dstream *ds;
	struct gp_dpool *p;
	bfc_handle_t h;
	int ret;

	if (!ctx || !ptr)
		return -EINVAL;
	p = gp_dpool_of(ctx, -1, ptr, stream, &ds, &h);
	if (!p)
		return gp_err(ctx, -EINVAL,
			      "gp_dev_record_stream: %p is not a device block of this context",
			      ptr);
	bfc_chunk_info(ds->b, h, &ci);
	if (gp_block_pending(&ci)) {
		pthread_mutex_unlock(&p->lock);
		return gp_err(ctx, -EINVAL, "gp_dev_record_stream: %p was freed",
			      ptr);
	}
	ret = gp_dstream_add_use(p, ds, h, stream);
	pthread_mutex_unlock(&p->lock);
	return ret ? gp_err(ctx, ret, "out of memory for stream uses") : 0;
}

GP_API int gp_dev_trim(struct gp_ctx *ctx, int device, uint64_t *released)
{
	uint64_t n = 0;
	int d;

	if (!ctx)
		return -EINVAL;
	if (device >= gp_cuda_device_count(ctx))
		return gp_err(ctx, -ENODEV, "gp_dev_trim: no device %d", device);
	for (d = 0; d < gp_cuda_device_count(ctx); d++) {
		struct gp_dpool *p = gp_dpool_get(ctx, d, false);

		if (!p || (device >= 0 && d != device))
			continue;
		pthread_mutex_lock(&p->lock);
		if (p->pending)
			gp_pending_poll(ctx, p, false);
		n += gp_dpool_release_free(ctx, p, NULL);
		p->used_hw = p->st.in_use + p->st.pending_bytes;
		pthread_mutex_unlock(&p->lock);
	}
	if (released)
		*released = n;
	return 0;
}

GP_API int gp_dev_stats(struct gp_ctx *ctx, int device, struct gp_dev_stats *st)
{
	struct gp_dpool *p;

	if (!ctx || !st)
		return -EINVAL;
	if (device < 0 || device >= gp_cuda_device_count(ctx))
		return gp_err(ctx, -ENODEV, "gp_dev_stats: no device %d", device);
	p = gp_dpool_get(ctx, device, false);
	if (!p) {
		memset(st, 0, sizeof(*st));
		st->next_segment = ctx->dev->initial_segment;
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

int gp_dev_mode(struct gp_ctx *ctx, int device)
{
	struct gp_dpool *p = gp_dpool_get(ctx, device, true);

	return p && p->vmm ? GP_DEV_VIRTUAL : GP_DEV_SEGMENTS;
}

/* Close --------------------------------------------------------------------- */

static int gp_fini_chunk(void *arg, const struct bfc_chunk_info *c)
{
	(void)arg;
	if (c->in_use && c->tag && c->tag != GP_VMM_HOLE_TAG) {
		struct gp_uses *u = (struct gp_uses *)(uintptr_t)c->tag;

		free(u->s);
		free(u);
	}
	return 0;
}

static void gp_fini_seg(void *arg, uint64_t base, void *size)
{
	struct gp_ctx *ctx = arg;

	(void)size;
	gp_cuda_free(ctx, (void *)(uintptr_t)base);
}

void gp_dev_fini(struct gp_ctx *ctx)
{
	int d, saved;

	if (!ctx->dev)
		return;
	for (d = 0; d < gp_cuda_device_count(ctx); d++) {
		struct gp_dpool *p = ctx->dev->pool[d];

		if (!p)
			continue;
		gp_cuda_enter(ctx, d, &saved);
		gp_pending_poll(ctx, p, true);
		while (p->streams) {
			struct gp_dstream *ds = p->streams;

			p->streams = ds->next;
			bfc_for_each_chunk(ds->b, gp_fini_chunk, NULL);
			if (p->vmm)
				gp_vmm_fini(ctx, p, ds);
			else
				gp_map_each(&ds->segs, gp_fini_seg, ctx);
			gp_map_destroy(&ds->segs);
			bfc_destroy(ds->b);
			free(ds);
		}
		gp_events_destroy(ctx, p);
		gp_cuda_leave(ctx, saved);
		pthread_mutex_destroy(&p->lock);
		free(p);
	}
	pthread_mutex_destroy(&ctx->dev->lock);
	free(ctx->dev->pool);
	free(ctx->dev);
	ctx->dev = NULL;
}

/* Open ---------------------------------------------------------------------- */

/* GPUPOOL_DEV_HEADROOM: a percentage (decimals allowed) or "none". */
static int gp_dev_env_headroom(struct gp_ctx *ctx, uint64_t *ppm)
{
	*ppm = GP_DEV_HEADROOM_PPM;
	return gp_env_percent(ctx, "GPUPOOL_DEV_HEADROOM", 1000, ppm) < 0 ?
	       -EINVAL : 0;
}

/* gp_options' dev_* fields (after the environment's). */
static int gp_dev_check_options(struct gp_ctx *ctx)
{
	const struct gp_options *o = &ctx->opt;

	if (!(o->dev_limit_fraction >= 0.0 && o->dev_limit_fraction <= 1.0))
		return gp_err(ctx, -EINVAL,
			      "gp_open: dev_limit_fraction %g is not in (0, 1]",
			      o->dev_limit_fraction);
	if ((o->dev_initial_segment & (GP_DEV_GRAN - 1)) ||
	    o->dev_initial_segment > GP_DEV_MAX_SEG)
		return gp_err(ctx, -EINVAL,
			      "gp_open: dev_initial_segment must be a multiple of 256, at most 64 TiB");
	return 0;
}

int gp_dev_init(struct gp_ctx *ctx)
{
	struct gp_devpools *d;
	uint64_t headroom;
	int ret;

	ret = gp_dev_check_options(ctx);
	if (!ret)
		ret = gp_dev_env_headroom(ctx, &headroom);
	if (ret || !gp_cuda_usable(ctx))
		return ret;
	d = calloc(1, sizeof(*d));
	if (d)
		d->pool = calloc((size_t)gp_cuda_device_count(ctx), sizeof(*d->pool));
	if (!d || !d->pool) {
		free(d);
		return gp_err(ctx, -ENOMEM, "gp_open: out of memory");
	}
	pthread_mutex_init(&d->lock, NULL);
	d->initial_segment = ctx->opt.dev_initial_segment ?
			     ctx->opt.dev_initial_segment : GP_DEV_INITIAL_SEG;
	d->headroom_ppm = headroom;
	ctx->dev = d;
	return 0;
}
