// SPDX-License-Identifier: GPL-2.0
/*
 * selftest.c - the BFC core's randomized check, run in kernel context at
 * load with selftest=1 (the load fails when it does).
 *
 * Random allocations and frees against the pool's own parameters (page
 * granularity, always split, adjacent regions merged), checking after every
 * operation: bfc_check() finds nothing; every chunk is exactly the rounded
 * size and lies inside a region without overlapping another; in_use is the
 * sum of the live chunks; bad frees are refused and change nothing.  At the
 * end everything is freed and each region must be one free chunk again.
 *
 * The operations go through figures.c, as the pool's do, and every few
 * operations its running figures (bin table, map cells) must equal those
 * of a full walk of the chunks.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": selftest: " fmt

#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "gpupool.h"

#define GP_ST_OPS	20000
#define GP_ST_SLOTS	128
#define GP_ST_MSG	512

struct gp_st_live {
	bfc_handle_t h;
	u64 addr;
	u64 size;
	u64 requested;
};

#define GP_ST_SPACE	(272ULL << 20)	/* the map covers every region */
#define GP_ST_FIG_EVERY	8		/* operations between walks */

struct gp_st {
	struct bfc *b;
	struct gp_figures fig;
	struct gp_figures walk;		/* the same, by a full walk */
	struct gp_st_live live[GP_ST_SLOTS];
	unsigned int nr;
	u64 in_use;
	u64 rng;
	char msg[GP_ST_MSG];
};

/* Regions: two adjacent (they merge) and one apart. */
static const u64 gp_st_regions[][2] = {
	{ 0, 64ULL << 20 },
	{ 64ULL << 20, 32ULL << 20 },
	{ 256ULL << 20, 16ULL << 20 },
};

static u64 gp_st_rand(struct gp_st *t)
{
	/* xorshift64*: deterministic, so a failure can be replayed. */
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545f4914f6cdd1dULL;
}

/* Inside [0, 96 MiB) (the merged pair) or [256, 272 MiB). */
static bool gp_st_in_region(u64 addr, u64 size)
{
	return addr + size <= (96ULL << 20) ||
	       (addr >= (256ULL << 20) && addr + size <= (272ULL << 20));
}

static int gp_st_alloc(struct gp_st *t)
{
	/* Two statements: the order of two calls in one expression is
	 * unspecified, and a seed must replay the same sizes everywhere.
	 */
	unsigned int bits = gp_st_rand(t) % 24;
	u64 size = (gp_st_rand(t) % (1ULL << bits)) + 1;
	struct bfc_chunk_info ci;
	struct gp_st_live *l;
	bfc_handle_t h;
	unsigned int i;
	u64 addr;
	int ret;

	ret = gp_fig_alloc(&t->fig, t->b, size, &h, &addr);
	if (ret == -BFC_ENOMEM)
		return 0;		/* full: fine */
	if (ret) {
		pr_err("bfc_alloc(%llu) = %d\n", size, ret);
		return -EINVAL;
	}
	if (bfc_chunk_info(t->b, h, &ci) || ci.addr != addr ||
	    ci.size != PAGE_ALIGN(size) || !ci.in_use ||
	    ci.requested != size || !gp_st_in_region(addr, ci.size)) {
		pr_err("bfc_alloc(%llu): chunk %u at %llx is wrong: at %llx, %llu bytes, %llu requested, in use %d\n",
		       size, h, addr, ci.addr, ci.size, ci.requested,
		       ci.in_use);
		return -EINVAL;
	}
	for (i = 0; i < t->nr; i++) {
		l = &t->live[i];
		if (addr < l->addr + l->size && l->addr < addr + ci.size) {
			pr_err("chunk at %llx+%llu overlaps %llx+%llu\n",
			       addr, ci.size, l->addr, l->size);
			return -EINVAL;
		}
	}
	l = &t->live[t->nr++];
	l->h = h;
	l->addr = addr;
	l->size = ci.size;
	l->requested = size;
	t->in_use += ci.size;
	return 0;
}

static int gp_st_free(struct gp_st *t, unsigned int i)
{
	struct gp_st_live *l = &t->live[i];
	struct bfc_stats before, after;
	bfc_handle_t h;
	int ret;

	/* An address inside a chunk is not a chunk: refused, nothing changes. */
	if (l->size > PAGE_SIZE) {
		bfc_get_stats(t->b, &before);
		ret = bfc_free_addr(t->b, l->addr + PAGE_SIZE);
		bfc_get_stats(t->b, &after);
		if (ret != -BFC_EINVAL || after.in_use != before.in_use ||
		    after.bad_frees != before.bad_frees + 1) {
			pr_err("bad free inside chunk %u: %d\n", l->h, ret);
			return -EINVAL;
		}
	}
	/* By handle, or by the handle the address index gives. */
	h = l->h;
	ret = (gp_st_rand(t) & 1) ? 0 : bfc_lookup(t->b, l->addr, &h);
	if (!ret && h != l->h)
		ret = -EINVAL;
	if (!ret)
		ret = gp_fig_free(&t->fig, t->b, h, l->addr, l->size,
				  l->requested);
	if (ret) {
		pr_err("free of chunk %u at %llx: %d\n", l->h, l->addr, ret);
		return -EINVAL;
	}
	t->in_use -= l->size;
	*l = t->live[--t->nr];
	return 0;
}

static int gp_st_walk_chunk(void *ctx, const struct bfc_chunk_info *c)
{
	struct gp_figures *w = ctx;

	bfc_bin_stats_add(w->bins, c);
	gp_map_cells(c->in_use ? w->map_used : w->map_free, w->space, w->cell,
		     c->addr, c->size, 1);
	return 0;
}

/* The running figures equal a full walk's. */
static int gp_st_check_figures(struct gp_st *t, unsigned int op)
{
	struct gp_figures *w = &t->walk;
	unsigned int i;

	gp_fig_settle(&t->fig);		/* as any reader does */
	gp_figures_init(w, GP_ST_SPACE);
	bfc_for_each_chunk(t->b, gp_st_walk_chunk, w);
	for (i = 0; i < BFC_NR_BINS; i++) {
		const struct bfc_bin_stats *a = &t->fig.bins[i];
		const struct bfc_bin_stats *e = &w->bins[i];

		if (memcmp(a, e, sizeof(*a))) {
			pr_err("after op %u: bin %u kept as %llu/%llu free, %llu/%llu/%llu in use; a walk finds %llu/%llu, %llu/%llu/%llu\n",
			       op, i, a->free_chunks, a->free_bytes,
			       a->in_use_chunks, a->in_use_bytes,
			       a->requested_bytes, e->free_chunks,
			       e->free_bytes, e->in_use_chunks,
			       e->in_use_bytes, e->requested_bytes);
			return -EINVAL;
		}
	}
	for (i = 0; i < GP_MAP_CELLS; i++) {
		if (t->fig.map_used[i] != w->map_used[i] ||
		    t->fig.map_free[i] != w->map_free[i]) {
			pr_err("after op %u: map cell %u kept as %llu used, %llu free; a walk finds %llu, %llu\n",
			       op, i, t->fig.map_used[i], t->fig.map_free[i],
			       w->map_used[i], w->map_free[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static int gp_st_check(struct gp_st *t, unsigned int op)
{
	struct bfc_stats st;
	u32 bad;

	bad = bfc_check(t->b, t->msg, sizeof(t->msg));
	bfc_get_stats(t->b, &st);
	if (bad || st.in_use != t->in_use || st.chunks_in_use != t->nr) {
		pr_err("after op %u: %u violations, in_use %llu (expected %llu), chunks %llu (expected %u): %s\n",
		       op, bad, st.in_use, t->in_use, st.chunks_in_use, t->nr,
		       t->msg);
		return -EINVAL;
	}
	return 0;
}

static int gp_st_run(struct gp_st *t, u32 policy)
{
	struct bfc_params p;
	struct bfc_stats st;
	unsigned int op, i;
	int ret;

	gp_pool_bfc_params(&p, policy);	/* the sub-pools' own */
	if (bfc_create(&t->b, &p))
		return -ENOMEM;
	gp_figures_init(&t->fig, GP_ST_SPACE);
	/* In increasing order, as the pool grows (figures.c needs that). */
	for (i = 0; i < ARRAY_SIZE(gp_st_regions); i++) {
		ret = gp_fig_add_region(&t->fig, t->b, gp_st_regions[i][0],
					gp_st_regions[i][1]);
		if (ret) {
			pr_err("bfc_add_region #%u: %d\n", i, ret);
			return -EINVAL;
		}
	}

	for (op = 0; op < GP_ST_OPS; op++) {
		bool alloc = t->nr < GP_ST_SLOTS &&
			     (!t->nr || gp_st_rand(t) % 100 < 55);

		ret = alloc ? gp_st_alloc(t) :
			      gp_st_free(t, gp_st_rand(t) % t->nr);
		if (!ret)
			ret = gp_st_check(t, op);
		if (!ret && !(op % GP_ST_FIG_EVERY))
			ret = gp_st_check_figures(t, op);
		if (ret)
			return ret;
		if (!(op % 256))
			cond_resched();
	}

	while (t->nr) {
		ret = gp_st_free(t, t->nr - 1);
		if (ret)
			return ret;
	}
	ret = gp_st_check(t, op) ?: gp_st_check_figures(t, op);
	if (ret)
		return ret;
	bfc_get_stats(t->b, &st);
	/* The two adjacent regions merged: two free chunks in all. */
	if (st.chunks_free != 2 || st.free_bytes != st.reserved ||
	    st.largest_free != 96ULL << 20) {
		pr_err("at the end: %llu free chunks, %llu of %llu bytes free, largest %llu\n",
		       st.chunks_free, st.free_bytes, st.reserved,
		       st.largest_free);
		return -EINVAL;
	}
	return 0;
}

/* The check with the pool's placement policy (policy=). */
int gp_selftest(void)
{
	struct gp_st *t;
	int ret;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->rng = 0x9e3779b97f4a7c15ULL;
	ret = gp_st_run(t, gp_policy);
	if (t->b)
		bfc_destroy(t->b);
	kfree(t);
	if (ret)
		pr_err("FAILED (policy %s)\n", bfc_policy_name(gp_policy));
	else
		pr_info("passed (%u random operations, policy %s)\n", GP_ST_OPS,
			bfc_policy_name(gp_policy));
	return ret;
}
