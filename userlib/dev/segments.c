// SPDX-License-Identifier: MIT
/*
 * segments.c - the device pools' segment mode (see dev.h): the BFC core
 * of a stream over cudaMalloc segments.  Growth is TensorFlow's Extend:
 * the first segment is dev_initial_segment (2 MiB); the size doubles until
 * it holds the request, and doubles again after each growth that did not
 * need that; a segment is clipped to what the limit leaves; when
 * cudaMalloc refuses, the size backs off to 90% at a time down to the
 * request itself.  Wholly free segments go back (cudaFree) when the pool
 * is trimmed or nothing fits.  Every function runs under the pool lock.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dev.h"

#define GP_DEV_SEG_CAP_DIV	8	/* and at 1/8 of the device (or limit) */

struct gp_release_arg {
	struct gp_ctx *ctx;
	struct gp_dpool *p;
	struct gp_dstream *ds;
};

static void gp_dseg_release(void *arg, uint64_t base, uint64_t size)
{
	struct gp_release_arg *a = arg;

	gp_map_del(&a->ds->segs, base);
	gp_cuda_free(a->ctx, (void *)(uintptr_t)base);
	a->p->st.cuda_frees++;
	a->p->st.reserved -= size;
	a->p->st.segments--;
	gp_debug(a->ctx, "device %d: segment %#llx + %llu released", a->p->device,
		 (unsigned long long)base, (unsigned long long)size);
}

uint64_t gp_dpool_release_free(struct gp_ctx *ctx, struct gp_dpool *p,
			       struct gp_dstream *keep)
{
	struct gp_release_arg a = { ctx, p, NULL };
	struct gp_dstream **pp = &p->streams, *ds;
	uint64_t n = 0;
	int saved;

	if (gp_cuda_enter(ctx, p->device, &saved))
		return 0;
	while ((ds = *pp)) {
		a.ds = ds;
		if (p->vmm)
			n += gp_vmm_trim(ctx, p, ds);
		else
			n += bfc_remove_free_regions(ds->b, gp_dseg_release, &a);
		if (ds->segs.count == 0 && ds != keep) {
			/* A stream with nothing left: forget it. */
			*pp = ds->next;
			if (p->vmm)
				gp_vmm_fini(ctx, p, ds);
			bfc_destroy(ds->b);
			gp_map_destroy(&ds->segs);
			free(ds);
			p->st.streams--;
			continue;
		}
		pp = &ds->next;
	}
	gp_cuda_leave(ctx, saved);
	return n;
}

/*
 * How far the growth size doubles: the largest dev_initial_segment * 2^k
 * within 1/GP_DEV_SEG_CAP_DIV of the limit (or of the device's memory when
 * there is no limit).  TensorFlow's Extend serves every allocation from one
 * core, so a huge region is shared; here a segment serves one stream only,
 * and segments the size of the device would strand it: a few streams each
 * holding a mostly empty 512 MiB segment with one live block leave nothing
 * for a third (the threads test saw out-of-memory with 145 MiB in use on a
 * 1 GiB device).  A request larger than the cap still gets a segment that
 * holds it; the sizes after it start from the cap again.
 */
static uint64_t gp_dpool_seg_cap(const struct gp_ctx *ctx,
				 const struct gp_dpool *p)
{
	uint64_t m = p->limit ? p->limit : p->total_mem;
	uint64_t cap = ctx->dev->initial_segment;

	if (!m)
		return GP_DEV_MAX_SEG;
	while (cap * 2 <= m / GP_DEV_SEG_CAP_DIV && cap * 2 <= GP_DEV_MAX_SEG)
		cap *= 2;
	return cap;
}

/*
 * The size of the next segment for a request of `rounded` bytes: the
 * doubling size, at least the request, clipped to what the limit leaves;
 * -ENOMEM when the limit leaves less than the request.  *grew: the size
 * had to double to hold it.
 */
static int gp_dseg_size(const struct gp_ctx *ctx, struct gp_dpool *p,
			uint64_t rounded, uint64_t *bytes, bool *grew)
{
	uint64_t cap = gp_dpool_seg_cap(ctx, p), avail = 0;

	if (p->limit) {
		avail = p->limit > p->st.reserved ? p->limit - p->st.reserved : 0;
		if (avail < rounded)
			return -ENOMEM;
	}
	*grew = false;
	*bytes = p->st.next_segment;
	while (*bytes < rounded && *bytes < GP_DEV_MAX_SEG) {
		*bytes *= 2;
		*grew = true;
	}
	p->st.next_segment = *bytes < cap ? *bytes : cap;
	if (*bytes < rounded)
		*bytes = rounded;
	if (p->limit && *bytes > avail)
		*bytes = avail & ~(GP_DEV_GRAN - 1);
	return 0;
}

/*
 * cudaMalloc of *bytes on the pool's device, backing off to 90% at a time
 * down to `rounded` while the device is short of memory; *bytes is what
 * was had.  0, -ENOMEM, or -EIO (message set) for any other error.
 */
static int gp_dseg_malloc(struct gp_ctx *ctx, struct gp_dpool *p,
			  uint64_t rounded, uint64_t *bytes, void **base)
{
	cudaError_t e;
	int ret, saved;

	ret = gp_cuda_enter(ctx, p->device, &saved);
	if (ret)
		return ret;
	while ((e = gp_cuda_malloc(ctx, base, *bytes)) == cudaErrorMemoryAllocation) {
		p->st.malloc_refusals++;
		gp_debug(ctx, "device %d: cudaMalloc(%llu) refused: %s", p->device,
			 (unsigned long long)*bytes, gp_cuda_errstr(ctx, e));
		if (*bytes == rounded)
			break;
		p->st.backpedals++;
		*bytes = (*bytes / 10 * 9) & ~(GP_DEV_GRAN - 1);
		if (*bytes < rounded)
			*bytes = rounded;
	}
	gp_cuda_leave(ctx, saved);
	if (e == cudaSuccess) {
		p->st.cuda_mallocs++;
		return 0;
	}
	if (e == cudaErrorMemoryAllocation)
		return -ENOMEM;
	/* Not a shortage (a broken context, say): trying smaller or
	 * dropping the cache would not help, and ENOMEM would say the wrong
	 * thing.
	 */
	return gp_err(ctx, -EIO, "device %d: cudaMalloc(%llu): %s", p->device,
		      (unsigned long long)*bytes, gp_cuda_errstr(ctx, e));
}

/* A new segment becomes a region of ds's core.  Only host memory for the
 * metadata can fail: the segment goes back at once, and only it (the
 * pool's other free segments stay cached).
 */
static int gp_dseg_add(struct gp_ctx *ctx, struct gp_dpool *p,
		       struct gp_dstream *ds, void *base, uint64_t bytes)
{
	uint32_t rid;
	int ret;

	ret = bfc_add_region(ds->b, (uint64_t)(uintptr_t)base, bytes, &rid);
	if (!ret) {
		ret = gp_map_put(&ds->segs, (uint64_t)(uintptr_t)base,
				 (void *)(uintptr_t)bytes);
		if (ret)
			bfc_remove_region(ds->b, rid, NULL, NULL);
	}
	if (ret) {
		gp_cuda_free(ctx, base);
		p->st.cuda_frees++;
		return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
	}
	p->st.reserved += bytes;
	if (p->st.reserved > p->st.peak_reserved)
		p->st.peak_reserved = p->st.reserved;
	p->st.segments++;
	return 0;
}

int gp_dstream_extend(struct gp_ctx *ctx, struct gp_dpool *p,
		      struct gp_dstream *ds, uint64_t size)
{
	uint64_t rounded = gp_round_up(size, GP_DEV_GRAN), bytes;
	void *base = NULL;
	bool grew;
	int ret;

	if (size > GP_SIZE_MAX)
		return -ENOMEM;		/* rounded would have wrapped */
	ret = gp_dseg_size(ctx, p, rounded, &bytes, &grew);
	if (!ret)
		ret = gp_dseg_malloc(ctx, p, rounded, &bytes, &base);
	if (!ret)
		ret = gp_dseg_add(ctx, p, ds, base, bytes);
	if (ret)
		return ret;
	/* TensorFlow: a growth that did not have to grow the size to fit
	 * doubles it for the next one.
	 */
	if (!grew && p->st.next_segment * 2 <= gp_dpool_seg_cap(ctx, p))
		p->st.next_segment *= 2;
	gp_debug(ctx, "device %d: segment %p + %llu for stream %p", p->device,
		 base, (unsigned long long)bytes, (void *)ds->stream);
	return 0;
}
