// SPDX-License-Identifier: MIT
/*
 * vmm.c - the device pool's virtual mode (see dev.h): one reserved
 * virtual range per stream pool, backed granule by granule with the
 * driver's virtual memory management (cuMemCreate + cuMemMap, then
 * cuMemSetAccess; cuMemUnmap + cuMemRelease to give a granule back).
 *
 * One driver allocation per granule, so that any free granule can go back
 * on its own (cuMemUnmap takes whole mappings).  A trim unmaps the granules
 * lying wholly in free chunks and takes each run of them out of the free
 * space as a hole chunk (bfc_take_free_spans), so that best fit only ever
 * chooses mapped memory.  When nothing mapped holds a request, the pool
 * first unmaps idle granules if the mapping would pass its budget
 * (gp_vmm_before_growth), then maps the fewest granules that make room:
 * part or all of a hole beside free space, or a growth of the region's
 * top (gp_vmm_place, both in vmm_place.c).  So
 * granules are mapped only when the live bytes need them, and unmapped in
 * batches, at most once per new mapping.  Every function runs under the
 * pool lock.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dev.h"

void gp_vmm_probe(struct gp_ctx *ctx, struct gp_dpool *p)
{
	const char *why = gp_cuda_vmm_why_not(ctx);
	size_t g = 0;

	p->vmm = false;
	p->gran = GP_DEV_GRAN;
	if (ctx->opt.flags & GP_OPEN_DEV_SEGMENTS) {
		gp_debug(ctx, "device %d pool: cudaMalloc segments (asked for)",
			 p->device);
		return;
	}
	if (!why && !p->total_mem)
		why = "device memory size unknown";
	else if (!why && gp_cuda_vmm_granularity(ctx, p->device, &g))
		why = "no virtual memory management on the device";
	if (why) {
		gp_debug(ctx, "device %d pool: cudaMalloc segments (%s)",
			 p->device, why);
		return;
	}
	if (!g || (g & (g - 1)) || g % GP_DEV_GRAN) {
		gp_debug(ctx, "device %d pool: cudaMalloc segments (granularity %zu)",
			 p->device, g);
		return;
	}
	p->vmm = true;
	p->gran = g;
	gp_debug(ctx, "device %d pool: virtual, %zu-byte granules", p->device, g);
}

/*
 * Before the first granule of ds is unmapped: wait for ds's stream.  A block
 * freed on its own stream is free in the core at once, while work queued
 * on the stream may still touch it; cudaFree waits for the device, but
 * cuMemUnmap and cuMemRelease do not (PyTorch synchronizes the stream before
 * unmapping for the same reason).  A stream the caller has destroyed cannot
 * be waited for: then the whole device.
 */
static void gp_vmm_quiesce(struct gp_ctx *ctx, struct gp_dstream *ds)
{
	if (gp_cuda_stream_sync(ctx, ds->stream) != cudaSuccess)
		gp_cuda_device_sync(ctx);
}

/* Unmap and release granule i of ds (mapped). */
static void gp_vmm_unmap1(struct gp_ctx *ctx, struct gp_dpool *p,
			  struct gp_dstream *ds, uint64_t i)
{
	gp_cu_result e = gp_cuda_granule_unmap(ctx, ds->vr.base + i * p->gran,
					       p->gran, ds->vr.h[i]);

	if (e != GP_CU_SUCCESS)
		gp_debug(ctx, "device %d: giving back granule %#llx: error %d",
			 p->device, (unsigned long long)(ds->vr.base + i * p->gran), e);
	ds->vr.h[i] = 0;
	p->st.reserved -= p->gran;
	p->st.mapped -= p->gran;
	p->st.unmap_calls++;
}

/* Unmap and release granule i of ds, which held blocks that were freed:
 * ds's stream is waited for before the first such granule (*quiet).
 */
static void gp_vmm_unmap_freed(struct gp_ctx *ctx, struct gp_dpool *p,
			       struct gp_dstream *ds, uint64_t i, bool *quiet)
{
	if (!*quiet) {
		gp_vmm_quiesce(ctx, ds);
		*quiet = true;
	}
	gp_vmm_unmap1(ctx, p, ds, i);
}

/* Create and map the granules of [lo, hi) of ds not mapped yet, each
 * marked in fresh (indexed from lo); at the first failure, *what names the
 * driver call and the granules mapped so far stay mapped.
 */
static gp_cu_result gp_vmm_map_new(struct gp_ctx *ctx, struct gp_dpool *p,
				   struct gp_dstream *ds, uint64_t lo,
				   uint64_t hi, bool *fresh, const char **what)
{
	gp_cu_result e;
	gp_cu_mem h;
	uint64_t i;

	for (i = lo; i < hi; i++) {
		if (ds->vr.h[i])
			continue;
		e = gp_cuda_granule_map(ctx, p->device, ds->vr.base + i * p->gran,
					p->gran, &h, what);
		if (e != GP_CU_SUCCESS)
			return e;
		ds->vr.h[i] = h;
		fresh[i - lo] = true;
		p->st.reserved += p->gran;
		p->st.mapped += p->gran;
		p->st.map_calls++;
	}
	return GP_CU_SUCCESS;
}

/* Give the device access to the granules of [lo, hi) marked in fresh: once
 * per run of them.
 */
static gp_cu_result gp_vmm_map_access(struct gp_ctx *ctx, struct gp_dpool *p,
				      struct gp_dstream *ds, uint64_t lo,
				      uint64_t hi, const bool *fresh,
				      const char **what)
{
	gp_cu_result e;
	uint64_t i, j;

	for (i = lo; i < hi; i = j + 1) {
		for (j = i; j < hi && fresh[j - lo]; j++)
			;
		if (j == i)
			continue;
		e = gp_cuda_va_set_access(ctx, p->device, ds->vr.base + i * p->gran,
					  (j - i) * p->gran);
		if (e != GP_CU_SUCCESS) {
			*what = "cuMemSetAccess";
			return e;
		}
	}
	return GP_CU_SUCCESS;
}

/* The driver refused a mapping: -ENOMEM when it is out of memory (the
 * caller trims and retries), else -EIO with the message set.
 */
static int gp_vmm_map_error(struct gp_ctx *ctx, struct gp_dpool *p,
			    gp_cu_result e, const char *what)
{
	if (e == GP_CU_ERROR_OUT_OF_MEMORY) {
		p->st.malloc_refusals++;
		gp_debug(ctx, "device %d: %s refused: out of memory", p->device, what);
		return -ENOMEM;
	}
	return gp_err(ctx, -EIO, "device %d: %s: CUDA driver error %d",
		      p->device, what, e);
}

/* Map granules [lo, hi) of ds, those not mapped yet; on failure none of
 * them stays mapped.  0, -ENOMEM (limit, or the driver is out of memory:
 * the caller trims and retries), -EIO (message set).
 */
int gp_vmm_map(struct gp_ctx *ctx, struct gp_dpool *p,
	       struct gp_dstream *ds, uint64_t lo, uint64_t hi)
{
	const char *what = NULL;
	uint64_t i, n = 0;
	gp_cu_result e;
	bool *fresh;
	int ret, saved;

	for (i = lo; i < hi; i++)
		n += !ds->vr.h[i];
	if (!n)
		return 0;
	if (p->limit && p->st.reserved + n * p->gran > p->limit)
		return -ENOMEM;
	fresh = calloc(hi - lo, sizeof(*fresh));
	if (!fresh)
		return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
	ret = gp_cuda_enter(ctx, p->device, &saved);
	if (ret) {
		free(fresh);
		return ret;
	}
	e = gp_vmm_map_new(ctx, p, ds, lo, hi, fresh, &what);
	if (e == GP_CU_SUCCESS)
		e = gp_vmm_map_access(ctx, p, ds, lo, hi, fresh, &what);
	for (i = lo; i < hi; i++) {
		if (!fresh[i - lo])
			continue;
		if (e != GP_CU_SUCCESS)
			gp_vmm_unmap1(ctx, p, ds, i);	/* none stays */
		else if (i * p->gran < ds->vr.top)
			ds->vr.holes--;
	}
	gp_cuda_leave(ctx, saved);
	free(fresh);
	if (e != GP_CU_SUCCESS)
		return gp_vmm_map_error(ctx, p, e, what);
	if (p->st.reserved > p->st.peak_reserved)
		p->st.peak_reserved = p->st.reserved;
	if (p->st.mapped > p->st.peak_mapped)
		p->st.peak_mapped = p->st.mapped;
	return 0;
}

/* The reserved range and room for the handles of granules below `top`. */
static int gp_vmm_room(struct gp_ctx *ctx, struct gp_dpool *p,
		       struct gp_dstream *ds, uint64_t top)
{
	uint64_t need = top / p->gran, cap;
	gp_cu_mem *h;

	if (!ds->vr.size) {
		/* Twice the device: trimmed holes may leave the region's
		 * top above the bytes mapped.  Address space costs nothing.
		 */
		uint64_t size = gp_round_up(2 * p->total_mem, p->gran);
		gp_cu_ptr base = 0;
		gp_cu_result e;
		int ret, saved;

		ret = gp_cuda_enter(ctx, p->device, &saved);
		if (ret)
			return ret;
		e = gp_cuda_va_reserve(ctx, &base, size, p->gran);
		gp_cuda_leave(ctx, saved);
		if (e != GP_CU_SUCCESS)
			return gp_err(ctx, e == GP_CU_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO,
				      "device %d: cuMemAddressReserve(%llu): CUDA driver error %d",
				      p->device, (unsigned long long)size, e);
		ds->vr.base = base;
		ds->vr.size = size;
		p->st.va_reserved += size;
	}
	if (top > ds->vr.size)
		return -ENOMEM;
	if (need <= ds->vr.cap)
		return 0;
	cap = ds->vr.cap ? ds->vr.cap : 64;
	while (cap < need)
		cap *= 2;
	h = realloc(ds->vr.h, cap * sizeof(*h));
	if (!h)
		return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
	memset(h + ds->vr.cap, 0, (cap - ds->vr.cap) * sizeof(*h));
	ds->vr.h = h;
	ds->vr.cap = cap;
	return 0;
}

int gp_vmm_extend(struct gp_ctx *ctx, struct gp_dpool *p,
		  struct gp_dstream *ds, uint64_t size)
{
	uint64_t rounded = gp_round_up(size, GP_DEV_GRAN), have, grow, top;
	uint32_t rid;
	int ret;

	if (size > GP_SIZE_MAX)
		return -ENOMEM;
	have = ds->vr.top ? bfc_free_at_top(ds->b) : 0;
	grow = gp_round_up(rounded - (have < rounded ? have : rounded), p->gran);
	if (!grow)
		grow = p->gran;	/* a fit the split rule refused: more room */
	top = ds->vr.top + grow;
	if (top < grow)
		return -ENOMEM;
	ret = gp_vmm_room(ctx, p, ds, top);
	if (ret)
		return ret;
	ret = gp_vmm_map(ctx, p, ds, ds->vr.top / p->gran, top / p->gran);
	if (ret)
		return ret;
	/* The snapshot's entry first: replacing it later cannot fail. */
	ret = gp_map_put(&ds->segs, ds->vr.base, (void *)(uintptr_t)top);
	if (!ret) {
		ret = bfc_add_region(ds->b, ds->vr.base + ds->vr.top, grow, &rid);
		if (ret && ds->vr.top)
			gp_map_put(&ds->segs, ds->vr.base,
				   (void *)(uintptr_t)ds->vr.top);
		else if (ret)
			gp_map_del(&ds->segs, ds->vr.base);
	}
	if (ret) {
		uint64_t i;

		for (i = ds->vr.top / p->gran; i < top / p->gran; i++)
			gp_vmm_unmap1(ctx, p, ds, i);
		return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
	}
	if (!ds->vr.top)
		p->st.segments++;
	ds->vr.top = top;
	gp_debug(ctx, "device %d: stream %p region %#llx grown to %llu", p->device,
		 (void *)ds->stream, (unsigned long long)ds->vr.base,
		 (unsigned long long)top);
	return 0;
}

int gp_vmm_back(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds,
		uint64_t addr, uint64_t size)
{
	uint64_t off = addr - ds->vr.base;

	return gp_vmm_map(ctx, p, ds, off / p->gran,
			  (off + size + p->gran - 1) / p->gran);
}

/* Room in ds's hole list for n more. */
int gp_vmm_hole_room(struct gp_dstream *ds, uint64_t n)
{
	uint64_t cap = ds->vr.caphole ? ds->vr.caphole : 16;
	bfc_handle_t *a;

	if (ds->vr.nhole + n <= ds->vr.caphole)
		return 0;
	while (cap < ds->vr.nhole + n)
		cap *= 2;
	if (cap > UINT32_MAX)
		return -ENOMEM;
	a = realloc(ds->vr.hole, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	ds->vr.hole = a;
	ds->vr.caphole = (uint32_t)cap;
	return 0;
}

bool gp_vmm_is_hole(const struct gp_dstream *ds, bfc_handle_t h)
{
	struct bfc_chunk_info ci;

	return ds->vr.nhole && !bfc_chunk_info(ds->b, h, &ci) && ci.in_use &&
	       ci.tag == GP_VMM_HOLE_TAG;
}

/* Hole i of ds is mapped again: it goes back to the free space. */
void gp_vmm_unhole(struct gp_dpool *p, struct gp_dstream *ds, uint32_t i)
{
	struct bfc_chunk_info ci;

	bfc_chunk_info(ds->b, ds->vr.hole[i], &ci);
	ds->vr.held -= ci.size / p->gran;
	bfc_free(ds->b, ds->vr.hole[i]);
	ds->vr.hole[i] = ds->vr.hole[--ds->vr.nhole];
}

struct gp_vmm_walk {
	struct gp_ctx *ctx;
	struct gp_dpool *p;
	struct gp_dstream *ds;
	uint64_t n;
	bool quiet;		/* ds's stream waited for */
	/* bfc_take_free_spans: spans of at least min bytes outside
	 * [keep_lo, keep_hi) while left > 0; their bases, nbase of them.
	 */
	uint64_t min, keep_lo, keep_hi, left;
	uint64_t *base;
	uint32_t nbase;
};

/* A free span (whole granules): unmap what is mapped in it. */
static void gp_vmm_span(void *arg, uint64_t base, uint64_t size)
{
	struct gp_vmm_walk *w = arg;
	uint64_t i = (base - w->ds->vr.base) / w->p->gran;
	uint64_t end = i + size / w->p->gran;

	for (; i < end; i++)
		if (w->ds->vr.h[i]) {
			gp_vmm_unmap_freed(w->ctx, w->p, w->ds, i, &w->quiet);
			w->ds->vr.holes++;
			w->n += w->p->gran;
		}
}

/* A free span offered by bfc_take_free_spans: taken (unmapped; a hole
 * from now on) when the walk still wants it.
 */
static bool gp_vmm_take(void *arg, uint64_t base, uint64_t size)
{
	struct gp_vmm_walk *w = arg;

	if (!w->left || size < w->min ||
	    (base < w->keep_hi && base + size > w->keep_lo))
		return false;
	gp_vmm_span(arg, base, size);
	w->base[w->nbase++] = base;	/* room made before the walk */
	w->ds->vr.held += size / w->p->gran;
	w->left = w->left > size ? w->left - size : 0;
	return true;
}

/* The whole region is free: it leaves the core, every granule goes. */
static void gp_vmm_region_gone(void *arg, uint64_t base, uint64_t size)
{
	struct gp_vmm_walk *w = arg;

	gp_vmm_span(arg, base, size);
	gp_map_del(&w->ds->segs, w->ds->vr.base);
	w->ds->vr.top = 0;
	w->ds->vr.holes = 0;
	w->p->st.segments--;
}

/* Unmap free spans of ds, each of at least min bytes and outside
 * [keep_lo, keep_hi), until *left bytes are unmapped (*left is lowered);
 * min 0 and *left UINT64_MAX: every free granule, holes rejoined first so
 * that the region can go when nothing is in use.  Bytes unmapped.
 */
uint64_t gp_vmm_trim_some(struct gp_ctx *ctx, struct gp_dpool *p,
			  struct gp_dstream *ds, uint64_t min,
			  uint64_t keep_lo, uint64_t keep_hi, uint64_t *left)
{
	struct gp_vmm_walk w = { ctx, p, ds, 0, false, min, keep_lo, keep_hi,
				 *left, NULL, 0 };
	struct bfc_stats bs;
	bfc_handle_t h;
	uint32_t i;
	int saved;

	if (!ds->vr.top)
		return 0;
	if (gp_cuda_enter(ctx, p->device, &saved))
		return 0;
	if (!min && *left == UINT64_MAX) {
		/* The holes rejoin the free space (their granules stay
		 * unmapped), so that the region can go when nothing is in
		 * use, and a hole beside newly free granules becomes one
		 * with them.
		 */
		while (ds->vr.nhole)
			gp_vmm_unhole(p, ds, ds->vr.nhole - 1);
		bfc_remove_free_regions(ds->b, gp_vmm_region_gone, &w);
	}
	if (ds->vr.top) {
		/* At most one span per free chunk.  Without memory for the
		 * lists, a partial trim does nothing; a full one unmaps the
		 * granules in their free chunks, and gp_vmm_back maps them
		 * when a block lands on them.
		 */
		bfc_get_stats(ds->b, &bs);
		w.base = malloc((bs.chunks_free + 1) * sizeof(*w.base));
		if (w.base && !gp_vmm_hole_room(ds, bs.chunks_free))
			bfc_take_free_spans(ds->b, p->gran, gp_vmm_take, &w);
		else if (!min && *left == UINT64_MAX)
			bfc_free_spans(ds->b, p->gran, gp_vmm_span, &w);
		for (i = 0; i < w.nbase; i++) {
			if (bfc_lookup(ds->b, w.base[i], &h))
				continue;	/* cannot be: taken */
			bfc_set_tag(ds->b, h, GP_VMM_HOLE_TAG);
			ds->vr.hole[ds->vr.nhole++] = h;
		}
		free(w.base);
	}
	gp_cuda_leave(ctx, saved);
	*left = w.left;
	return w.n;
}

uint64_t gp_vmm_trim(struct gp_ctx *ctx, struct gp_dpool *p,
		     struct gp_dstream *ds)
{
	uint64_t left = UINT64_MAX;

	return gp_vmm_trim_some(ctx, p, ds, 0, 0, 0, &left);
}

void gp_vmm_fini(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds)
{
	bool quiet = false;
	uint64_t i;

	for (i = 0; i < ds->vr.top / p->gran; i++)
		if (ds->vr.h[i])
			gp_vmm_unmap_freed(ctx, p, ds, i, &quiet);
	if (ds->vr.size) {
		if (gp_cuda_va_free(ctx, ds->vr.base, ds->vr.size) != GP_CU_SUCCESS)
			gp_debug(ctx, "device %d: cuMemAddressFree failed", p->device);
		p->st.va_reserved -= ds->vr.size;
	}
	free(ds->vr.h);
	free(ds->vr.hole);
	memset(&ds->vr, 0, sizeof(ds->vr));
}
