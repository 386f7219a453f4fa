// SPDX-License-Identifier: GPL-2.0
/*
 * reserve.c - getting pages for the pool: 2 MiB blocks (GP_BLOCK_ORDER:
 * split, or one folio with huge_maps; smaller orders, split, where that
 * order cannot be had), several work items per node
 * on the unbound workqueue (queue_work_node(), so the pages are zeroed by
 * the node's own CPUs), a floor the pool never takes a node below, and
 * giving blocks back.  What the blocks become (the node's bfc regions) is
 * pool.c's: nothing here calls it.
 *
 * Pages are taken with GFP_KERNEL | __GFP_THISNODE and never
 * __GFP_MOVABLE: they come neither from ZONE_MOVABLE nor from CMA, so GUP
 * may pin them long-term (cudaHostRegister, io_uring fixed buffers).
 */
#include <linux/gfp.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/vmstat.h>
#include <linux/workqueue.h>

#include "gpupool.h"

/* Page allocator flags for the pool: node-local, no hard retries, no OOM
 * killer, no warnings (a failure is reported once, in words), zeroed.
 */
#define GP_GFP	(GFP_KERNEL | __GFP_THISNODE | __GFP_NOWARN | \
		 __GFP_NORETRY | __GFP_ZERO)

/* Work items per node for a reservation, at most. */
#define GP_RESERVE_MAX_WORKERS	16

/* Blocks ---------------------------------------------------------------- */

static void gp_block_free(struct gp_block *b)
{
	unsigned long i;

	/*
	 * put_page(), not __free_page(): a page someone still pins (a chunk
	 * quarantined at unload) is freed when they unpin it.  A folio has
	 * one reference of ours for all its pages, its head's.
	 */
	if (gp_block_folio(b))
		put_page(b->head);
	else
		for (i = 0; i < GP_BLOCK_PAGES; i++)
			put_page(b->head ? b->head + i : b->pages[i]);
	kvfree(b->pages);
	b->head = NULL;
	b->pages = NULL;
}

/* Where GP_BLOCK_ORDER cannot be had: a block's pages from smaller orders,
 * largest first.
 */
static int gp_block_alloc_fallback(struct gp_block *b, int nid)
{
	unsigned int order = GP_BLOCK_ORDER - 1;
	unsigned long i = 0, j;
	struct page *page;

	b->pages = kvmalloc_node(GP_BLOCK_PAGES * sizeof(*b->pages),
				 GFP_KERNEL, nid);
	if (!b->pages)
		return -ENOMEM;

	while (i < GP_BLOCK_PAGES) {
		page = alloc_pages_node(nid, GP_GFP, order);
		if (!page) {
			if (!order)
				goto out_free_pages;
			order--;
			continue;
		}
		if (order)
			split_page(page, order);
		for (j = 0; j < (1UL << order); j++)
			b->pages[i++] = page + j;
	}
	return 0;

out_free_pages:
	while (i)
		put_page(b->pages[--i]);
	kvfree(b->pages);
	b->pages = NULL;
	return -ENOMEM;
}

static int gp_block_alloc(struct gp_block *b, int nid, bool *fallback)
{
	struct page *page;

	*fallback = false;
	if (gp_folio_blocks()) {
		page = alloc_pages_node(nid, GP_GFP | __GFP_COMP,
					GP_BLOCK_ORDER);
	} else {
		page = alloc_pages_node(nid, GP_GFP, GP_BLOCK_ORDER);
		if (page)
			split_page(page, GP_BLOCK_ORDER);
	}
	if (page) {
		b->head = page;
		return 0;
	}
	*fallback = true;
	return gp_block_alloc_fallback(b, nid);
}

/* Pages the pool may still take from node nid before reaching the floor. */
static unsigned long gp_node_headroom(int nid)
{
	struct pglist_data *pgdat = NODE_DATA(nid);
	unsigned long free = 0, managed = 0, wmark = 0, floor, zfree, cma;
	long file;
	int z;

	/* Only the zones GP_GFP can take from (not ZONE_MOVABLE, nor free
	 * CMA pages): counting those made the floor look met while the
	 * kernel's own zones ran down to their watermarks.
	 */
	for (z = 0; z <= ZONE_NORMAL; z++) {
		struct zone *zone = &pgdat->node_zones[z];

		if (!populated_zone(zone))
			continue;
		/* Both counters are approximate (per-CPU deltas): never let
		 * the difference wrap.
		 */
		zfree = zone_page_state(zone, NR_FREE_PAGES);
		cma = zone_page_state(zone, NR_FREE_CMA_PAGES);
		free += zfree > cma ? zfree - cma : 0;
		managed += zone_managed_pages(zone);
		wmark += high_wmark_pages(zone);
	}
	file = atomic_long_read(&pgdat->vm_stat[NR_ACTIVE_FILE]) +
	       atomic_long_read(&pgdat->vm_stat[NR_INACTIVE_FILE]);
	if (file > 0)
		free += file;
	floor = max(4 * wmark, managed / GP_FLOOR_DIV);
	return free > floor ? free - floor : 0;
}

/* Reservation: several work items per node on the unbound workqueue ------ */

struct gp_reserve_work {
	struct work_struct work;
	struct gp_node *node;
	unsigned long first;		/* blocks [first, first + count) */
	unsigned long count;
	unsigned long got;		/* blocks [first, first + got) filled */
	unsigned long fallback;
	ktime_t done;			/* when it finished */
};

static void gp_reserve_fn(struct work_struct *work)
{
	struct gp_reserve_work *w = container_of(work, struct gp_reserve_work,
						 work);
	struct gp_node *n = w->node;
	bool fallback;

	/* Stop at the first failure: the node has no more to give. */
	while (w->got < w->count) {
		if (gp_node_headroom(n->nid) < GP_BLOCK_PAGES)
			break;
		if (gp_block_alloc(&n->blocks[w->first + w->got], n->nid,
				   &fallback))
			break;
		w->fallback += fallback;
		w->got++;
		cond_resched();
	}
	w->done = ktime_get();
}

/*
 * Start filling blocks [first, first + count) of r->node: several work items,
 * each a contiguous range, queued on wq on the node's CPUs.  Nothing is
 * published: gp_reserve_finish() waits and the caller adds the region.
 */
int gp_reserve_start(struct gp_reservation *r, struct workqueue_struct *wq,
		     struct gp_node *n, unsigned long first, unsigned long count)
{
	unsigned long per, extra, at;
	unsigned int i;

	r->node = n;
	r->first = first;
	r->start = ktime_get();
	r->nr_work = 0;
	r->w = NULL;
	if (!count)
		return 0;
	r->nr_work = clamp_t(unsigned int,
			     cpumask_weight(cpumask_of_node(n->nid)),
			     2, GP_RESERVE_MAX_WORKERS);
	r->nr_work = min_t(unsigned long, r->nr_work, count);
	r->w = kcalloc(r->nr_work, sizeof(*r->w), GFP_KERNEL);
	if (!r->w) {
		r->nr_work = 0;
		return -ENOMEM;
	}

	/* count / nr_work each, one more for the first count % nr_work: every
	 * worker's range lies inside [first, first + count).  (Rounding the
	 * share up instead let the last workers start past the end: 128
	 * blocks on 14 CPUs filled blocks[130..139] of an array of 128.)
	 */
	per = count / r->nr_work;
	extra = count % r->nr_work;
	for (i = 0, at = first; i < r->nr_work; i++) {
		struct gp_reserve_work *w = &r->w[i];

		w->node = n;
		w->first = at;
		w->count = per + (i < extra);
		at += w->count;
		INIT_WORK(&w->work, gp_reserve_fn);
		queue_work_node(n->nid, wq, &w->work);
	}
	return 0;
}

/*
 * Wait for r, then move the blocks obtained together so that they are
 * [first, first + returned value).  *ns: how long the node took.
 */
unsigned long gp_reserve_finish(struct gp_reservation *r, u64 *ns)
{
	struct gp_node *n = r->node;
	ktime_t end = r->start;
	unsigned long dst = r->first;
	unsigned int i;

	for (i = 0; i < r->nr_work; i++) {
		struct gp_reserve_work *w = &r->w[i];
		unsigned long k;

		flush_work(&w->work);
		for (k = 0; k < w->got; k++, dst++) {
			if (dst == w->first + k)
				continue;
			n->blocks[dst] = n->blocks[w->first + k];
			n->blocks[w->first + k] = (struct gp_block){ };
		}
		n->fallback_blocks += w->fallback;
		if (ktime_after(w->done, end))
			end = w->done;
	}
	kfree(r->w);
	r->w = NULL;
	if (ns)
		*ns = ktime_to_ns(ktime_sub(end, r->start));
	return dst - r->first;
}

unsigned long gp_reserve_blocks(struct workqueue_struct *wq, struct gp_node *n,
				unsigned long first, unsigned long count)
{
	struct gp_reservation r;

	if (gp_reserve_start(&r, wq, n, first, count))
		return 0;
	return gp_reserve_finish(&r, NULL);
}

/*
 * Reserve want blocks on every node, side by side: each node's reservation
 * starts before any is waited for.  got[i] is what gp_nodes[i] got, and
 * *partial says that one got fewer than want.  -ENOMEM when one could not
 * start; the others are still waited for, so their blocks can be released.
 */
int gp_reserve_nodes(struct gp_reservation *r, unsigned long want,
		     unsigned long *got, bool *partial)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < gp_nr_nodes; i++)
		if (gp_reserve_start(&r[i], gp_wq, gp_nodes[i], 0, want))
			ret = -ENOMEM;
	*partial = false;
	for (i = 0; i < gp_nr_nodes; i++) {
		got[i] = gp_reserve_finish(&r[i], &gp_nodes[i]->reserve_ns);
		*partial |= got[i] < want;
	}
	return ret;
}

void gp_release_blocks(struct gp_node *n, unsigned long first,
		       unsigned long count)
{
	unsigned long i;

	for (i = first; i < first + count; i++) {
		gp_block_free(&n->blocks[i]);
		cond_resched();
	}
}
