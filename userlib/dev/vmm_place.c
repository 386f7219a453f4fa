// SPDX-License-Identifier: MIT
/*
 * vmm_place.c - where the virtual mode maps for a request that nothing
 * mapped holds (see vmm.c and dev.h): the fewest granules, in a hole beside
 * free space or at the region's top, after unmapping idle granules when
 * the mapping would pass the pool's budget.  Every function runs under the
 * pool lock.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "dev.h"

struct gp_vmm_sizes {
	uint64_t *v;
	size_t n, cap;
	bool short_of_memory;
};

static void gp_vmm_size_add(void *arg, uint64_t base, uint64_t size)
{
	struct gp_vmm_sizes *z = arg;

	(void)base;
	if (z->n == z->cap) {
		size_t cap = z->cap ? 2 * z->cap : 64;
		uint64_t *v = realloc(z->v, cap * sizeof(*v));

		if (!v) {
			z->short_of_memory = true;
			return;
		}
		z->v = v;
		z->cap = cap;
	}
	z->v[z->n++] = size;
}

static int gp_vmm_size_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;	/* largest first */
}

/*
 * Before mapping `need` bytes for a request of r: when the pool's mapped
 * bytes would exceed its budget (the most in use since the last
 * gp_dev_trim, pending bytes and the request counted, plus the headroom:
 * GPUPOOL_DEV_HEADROOM, default 1/11 of that, at least a granule),
 * unmap the largest free spans of every stream that cover the excess,
 * except those of keep in [keep_lo, keep_hi) (the free space the request
 * is about to use).  True when it unmapped something.
 */
static bool gp_vmm_before_growth(struct gp_ctx *ctx, struct gp_dpool *p,
				 uint64_t r, uint64_t need,
				 struct gp_dstream *keep, uint64_t keep_lo,
				 uint64_t keep_hi)
{
	uint64_t used = p->st.in_use + p->st.pending_bytes + r, budget, room;
	struct gp_vmm_sizes z = { NULL, 0, 0, false };
	uint64_t n = 0, excess, sum = 0, min = 0, left;
	struct gp_dstream *ds;
	size_t i;
	int pass;

	if (used > p->used_hw)
		p->used_hw = used;
	if (!need || ctx->dev->headroom_ppm == UINT64_MAX)
		return false;
	/* used_hw * ppm / 10^6 without overflow (ppm <= 10^7) */
	room = p->used_hw / 1000000 * ctx->dev->headroom_ppm +
	       p->used_hw % 1000000 * ctx->dev->headroom_ppm / 1000000;
	budget = p->used_hw + (room > p->gran ? room : p->gran);
	if (p->st.mapped + need <= budget)
		return false;
	/* The largest free spans first, as few as cover the excess; then,
	 * if the spans kept made them fall short, any.
	 */
	excess = p->st.mapped + need - budget;
	for (ds = p->streams; ds; ds = ds->next)
		bfc_free_spans(ds->b, p->gran, gp_vmm_size_add, &z);
	if (z.n && !z.short_of_memory) {
		qsort(z.v, z.n, sizeof(*z.v), gp_vmm_size_cmp);
		for (i = 0; i < z.n && sum < excess; i++) {
			sum += z.v[i];
			min = z.v[i];
		}
	}
	free(z.v);
	left = excess;
	for (pass = 0; pass < 2 && left; pass++, min = 0)
		for (ds = p->streams; ds && left; ds = ds->next)
			n += gp_vmm_trim_some(ctx, p, ds, min,
					      ds == keep ? keep_lo : 0,
					      ds == keep ? keep_hi : 0, &left);
	p->st.growth_trims++;
	gp_debug(ctx, "device %d: %llu bytes mapped, %llu in use at most, before mapping %llu: %llu unmapped",
		 p->device, (unsigned long long)p->st.mapped,
		 (unsigned long long)p->used_hw, (unsigned long long)need,
		 (unsigned long long)n);
	return n != 0;
}

/* Where gp_vmm_place maps: granules [lo, hi) of hole i (i == nhole: at
 * the top), `cost` of them new, and whether the region grows after.
 */
struct gp_vmm_spot {
	uint32_t i;
	uint64_t lo, hi, cost;
	bool grow;
	uint64_t keep_lo, keep_hi;	/* the free space it joins, and it */
};

static void gp_vmm_consider(struct gp_vmm_spot *best, uint32_t i, uint64_t lo,
			    uint64_t hi, uint64_t cost, bool grow,
			    uint64_t keep_lo, uint64_t keep_hi)
{
	if (cost < best->cost ||
	    (cost == best->cost && best->i == UINT32_MAX)) {
		best->i = i;
		best->lo = lo;
		best->hi = hi;
		best->cost = cost;
		best->grow = grow;
		best->keep_lo = keep_lo;
		best->keep_hi = keep_hi;
	}
}

/* The spot that maps the fewest granules for r bytes in ds. */
static void gp_vmm_choose(struct gp_dpool *p, struct gp_dstream *ds,
			  uint64_t r, struct gp_vmm_spot *best)
{
	uint64_t have, below, above, n, s, e, lo, hi, g = p->gran;
	struct bfc_chunk_info ci;
	uint32_t i;

	/* At the top: what the top free chunk lacks (the least a growth
	 * maps; a hole at the top is considered below, with the growth).
	 */
	have = ds->vr.top ? bfc_free_at_top(ds->b) : 0;
	best->i = UINT32_MAX;
	best->cost = gp_round_up(r - (have < r ? have : r), g) / g;
	best->keep_lo = ds->vr.base + ds->vr.top - have;
	best->keep_hi = ds->vr.base + ds->vr.top;
	/* In a hole: from its low end up (joining the free chunk below),
	 * from its high end down (joining the one above), or all of it.
	 */
	for (i = 0; i < ds->vr.nhole; i++) {
		if (bfc_chunk_info(ds->b, ds->vr.hole[i], &ci) ||
		    bfc_free_neighbours(ds->b, ds->vr.hole[i], &below, &above))
			continue;
		s = (ci.addr - ds->vr.base) / g;
		e = s + ci.size / g;
		lo = ci.addr - below;
		hi = ci.addr + ci.size + above;
		if (below < r) {
			n = gp_round_up(r - below, g) / g;
			if (n <= e - s)
				gp_vmm_consider(best, i, s, s + n, n, false, lo, hi);
			else if (e * g == ds->vr.top)
				gp_vmm_consider(best, i, s, e, n, true, lo, hi);
		}
		if (above < r) {
			n = gp_round_up(r - above, g) / g;
			if (n <= e - s)
				gp_vmm_consider(best, i, e - n, e, n, false, lo, hi);
		}
		if (below + ci.size + above >= r)
			gp_vmm_consider(best, i, s, e, e - s, false, lo, hi);
	}
}

int gp_vmm_place(struct gp_ctx *ctx, struct gp_dpool *p, struct gp_dstream *ds,
		 uint64_t size)
{
	uint64_t r = gp_round_up(size, GP_DEV_GRAN), g = p->gran, s, e;
	struct gp_vmm_spot best;
	struct bfc_chunk_info ci;
	bfc_handle_t mid, rest;
	int ret;

	if (size > GP_SIZE_MAX)
		return -ENOMEM;
	gp_vmm_choose(p, ds, r, &best);
	/* Over the budget with what this maps: unmap idle granules first,
	 * then look again (the trim may have taken the free space chosen).
	 */
	if (gp_vmm_before_growth(ctx, p, r, best.cost * g, ds, best.keep_lo,
				 best.keep_hi))
		gp_vmm_choose(p, ds, r, &best);
	if (best.i == UINT32_MAX)
		return gp_vmm_extend(ctx, p, ds, size);
	/* The granules to map become a hole of their own, then free. */
	ret = gp_vmm_hole_room(ds, 2);
	if (ret)
		return ret;
	mid = ds->vr.hole[best.i];
	bfc_chunk_info(ds->b, mid, &ci);
	s = (ci.addr - ds->vr.base) / g;
	e = s + ci.size / g;
	if (best.lo > s) {
		if (bfc_split(ds->b, mid, (best.lo - s) * g, &rest))
			return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
		mid = rest;
		best.i = ds->vr.nhole;
		ds->vr.hole[ds->vr.nhole++] = mid;
	}
	if (best.hi < e) {
		if (bfc_split(ds->b, mid, (best.hi - best.lo) * g, &rest))
			return gp_err(ctx, -ENOMEM, "out of memory for pool metadata");
		ds->vr.hole[ds->vr.nhole++] = rest;
	}
	ret = gp_vmm_map(ctx, p, ds, best.lo, best.hi);
	if (ret)
		return ret;
	gp_vmm_unhole(p, ds, best.i);
	return best.grow ? gp_vmm_extend(ctx, p, ds, size) : 0;
}
