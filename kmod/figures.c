// SPDX-License-Identifier: GPL-2.0
/*
 * figures.c - the bin table and the occupancy map of a sub-pool, kept as
 * its chunks change, so that /proc/gpupool reads them in O(bins + cells)
 * whatever the number of chunks, and exactly.
 *
 * What bfc reports by walking every chunk (bfc_bin_stats_add(), a chunk's
 * bytes by map cell) is kept here by the three calls that change chunks:
 *  - an allocation cuts the new chunk out of one free chunk, whose size
 *    bfc_alloc_from() tells; what is left of it stays free (the module's
 *    pools always split: the chunk is the rounded request).  It is noted,
 *    and added in by gp_fig_settle() later (struct gp_figures says when);
 *  - a free merges the chunk with the free chunks beside it (asked before
 *    the free, bfc_free_neighbours());
 *  - a region added on top merges with the free chunk ending the top
 *    region, if any (bfc_free_at_top() before and after).
 * An allocation reads no chunk record beyond its own and does no sums: in
 * the kmod bench (under TCG) asking bfc for the neighbours made an ALLOC
 * 6-9% slower, the sums 3-5% (bench/README.md).  The rest costs a few
 * additions; the map's cells need a division.  Callers hold the node's
 * lock (the bfc's own), which also guards these figures.
 *
 * The selftest (selftest.c) checks the figures against a full walk after
 * random operations.
 */
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "gpupool.h"

void gp_figures_init(struct gp_figures *f, u64 space)
{
	memset(f, 0, sizeof(*f));
	f->space = space;
	f->cell = div64_u64(space, GP_MAP_CELLS);
}

/* bfc_bin_of() for page granularity (every pool bfc's). */
static inline unsigned int gp_bin_of(u64 size)
{
	unsigned int bin = fls64(size >> PAGE_SHIFT) - 1;

	return min_t(unsigned int, bin, BFC_NR_BINS - 1);
}

static inline void gp_fig_free_add(struct gp_figures *f, u64 size)
{
	struct bfc_bin_stats *s = &f->bins[gp_bin_of(size)];

	s->free_chunks++;
	s->free_bytes += size;
}

static inline void gp_fig_free_sub(struct gp_figures *f, u64 size)
{
	struct bfc_bin_stats *s = &f->bins[gp_bin_of(size)];

	s->free_chunks--;
	s->free_bytes -= size;
}

/*
 * Add (sign > 0) or take (sign < 0) the bytes of [off, off + size) to or
 * from cells, the GP_MAP_CELLS parts of [0, space): cell bytes each, the
 * last one with the remainder too.
 */
void gp_map_cells(u64 *cells, u64 space, u64 cell, u64 off, u64 size,
		  int sign)
{
	u64 end = min(off + size, space);
	unsigned int i;

	if (!cell || off >= end)
		return;
	i = min_t(u64, div64_u64(off, cell), GP_MAP_CELLS - 1);
	for (; i < GP_MAP_CELLS && off < end; i++) {
		u64 lim = i == GP_MAP_CELLS - 1 ? space : (u64)(i + 1) * cell;
		u64 part = min(end, lim) - off;

		if (sign > 0)
			cells[i] += part;
		else
			cells[i] -= min(part, cells[i]);
		off += part;
	}
}

/*
 * [off, off + size) goes from free to in use (sign > 0) or back: one
 * division, and usually one cell.
 */
static void gp_fig_map_use(struct gp_figures *f, u64 off, u64 size, int sign)
{
	u64 end = min(off + size, f->space);
	unsigned int i;

	if (!f->cell || off >= end)
		return;
	i = min_t(u64, div64_u64(off, f->cell), GP_MAP_CELLS - 1);
	for (; i < GP_MAP_CELLS && off < end; i++) {
		u64 lim = i == GP_MAP_CELLS - 1 ? f->space :
			  (u64)(i + 1) * f->cell;
		u64 part = min(end, lim) - off;

		if (sign > 0) {
			f->map_used[i] += part;
			f->map_free[i] -= part;
		} else {
			f->map_used[i] -= part;
			f->map_free[i] += part;
		}
		off += part;
	}
}

int gp_fig_add_region(struct gp_figures *f, struct bfc *b, u64 base, u64 size)
{
	u64 top = bfc_free_at_top(b), now;
	int ret;

	ret = bfc_add_region(b, base, size, NULL);
	if (ret)
		return ret;
	/* Merged with a free top chunk: that one is gone into the new one.
	 * Otherwise (apart, or the top ended in use) now is size.
	 */
	now = bfc_free_at_top(b);
	if (now != size)
		gp_fig_free_sub(f, top);
	gp_fig_free_add(f, now);
	gp_map_cells(f->map_free, f->space, f->cell, base, size, 1);
	return 0;
}

/* Add the allocations noted since the last call into the figures. */
void gp_fig_settle(struct gp_figures *f)
{
	unsigned int i;

	for (i = 0; i < f->nr_notes; i++) {
		const struct gp_fig_note *n = &f->notes[i];
		struct bfc_bin_stats *s = &f->bins[gp_bin_of(n->size)];

		gp_fig_free_sub(f, n->from);
		if (n->from > n->size)
			gp_fig_free_add(f, n->from - n->size);
		s->in_use_chunks++;
		s->in_use_bytes += n->size;
		s->requested_bytes += n->requested;
		gp_fig_map_use(f, n->offset, n->size, 1);
	}
	f->nr_notes = 0;
}

int gp_fig_free(struct gp_figures *f, struct bfc *b, bfc_handle_t h,
		u64 addr, u64 size, u64 requested)
{
	struct bfc_bin_stats *s;
	u64 prev, next;
	int ret;

	gp_fig_settle(f);	/* off ALLOC's path: the zeroing worker's */
	ret = bfc_free_neighbours(b, h, &prev, &next);
	if (!ret)
		ret = bfc_free(b, h);
	if (ret)
		return ret;
	if (prev)
		gp_fig_free_sub(f, prev);
	if (next)
		gp_fig_free_sub(f, next);
	gp_fig_free_add(f, prev + size + next);
	s = &f->bins[gp_bin_of(size)];
	s->in_use_chunks--;
	s->in_use_bytes -= size;
	s->requested_bytes -= requested;
	gp_fig_map_use(f, addr, size, -1);
	return 0;
}
