// SPDX-License-Identifier: GPL-2.0
/*
 * zeroing.c - what becomes of a chunk whose last reference is gone
 * (gp_pool_release_chunk() puts it on its node's dirty list): the zeroing
 * worker zeroes its pages and gives it back to the node's bfc, unless
 * someone else still holds one of them (a GUP pin, a stray get_page()):
 * then it is quarantined, and checked again every GP_QUARANTINE_RECHECK
 * until it can be zeroed.  The page references this relies on and the
 * locks: pool.c.
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "gpupool.h"
#include "gpupool_trace.h"

/* How often quarantined chunks are checked again. */
#define GP_QUARANTINE_RECHECK	(HZ / 10)

/*
 * Does anyone hold a page of a folio block beyond the pool's reference and
 * the mappings' (one per PTE, one per PMD entry, each counted once in the
 * folio's mapcount)?  The folio's pages (a block's) share one refcount
 * and one pin count, whichever chunks they belong to, so a pin on any of
 * them holds back every chunk released in the block: quarantine works in
 * 2 MiB units here.  A pin is never missed:
 *  - every mapping takes its references under map_lock for read (all are
 *    made by chunk.c's mmap and fault handlers: fork copies no entry of a
 *    chunk vma, and userfaultfd, whose write-protect would make it copy
 *    them, refuses a VM_SPECIAL vma), so none is taken while we hold it
 *    for write;
 *  - the references are read before the mapcount: a mapping made before
 *    we took the lock is in the references already, in the mapcount or
 *    not yet (then held, for now); one that goes in between drops its
 *    mapcount first and its reference later, at the TLB flush (held, for
 *    now).
 * "Held, for now" costs a recheck in GP_QUARANTINE_RECHECK.
 */
#if GP_FOLIO_BLOCKS
static bool gp_folio_held_elsewhere(struct gp_node *n, struct folio *folio)
{
	int refs, maps;

	down_write(&n->map_lock);
	refs = folio_ref_count(folio);
	/* The references before the mapcount (above); pairs with the
	 * ordering of folio_remove_rmap_*() before the TLB flush's put.
	 */
	smp_rmb();
	maps = folio_mapcount(folio);
	up_write(&n->map_lock);
	return refs != 1 + maps;
}
#else
/* No folio blocks here (gp_block_folio()): never called. */
static bool gp_folio_held_elsewhere(struct gp_node *n, struct folio *folio)
{
	return true;
}
#endif

/*
 * Does anyone but the pool hold a page of c (a GUP pin, a stray get_page)?
 * c is mapped nowhere any more: each order-0 page must hold our reference
 * alone.
 */
static bool gp_chunk_held_elsewhere(struct gp_chunk *c)
{
	struct gp_node *n = c->node;
	unsigned long pg = c->offset >> PAGE_SHIFT;
	unsigned long end = pg + gp_chunk_pages(c);

	while (pg < end) {
		const struct gp_block *b = &n->blocks[pg / GP_BLOCK_PAGES];
		unsigned long next = min(end, round_down(pg, GP_BLOCK_PAGES) +
					 GP_BLOCK_PAGES);
		struct folio *folio = gp_block_folio(b);

		if (folio) {
			if (gp_folio_held_elsewhere(n, folio))
				return true;
		} else {
			for (; pg < next; pg++)
				if (page_ref_count(gp_node_page(n, pg)) != 1)
					return true;
		}
		pg = next;
		cond_resched();
	}
	return false;
}

static void gp_chunk_clear(struct gp_chunk *c)
{
	unsigned long i, nr = gp_chunk_pages(c);

	for (i = 0; i < nr; i++) {
		clear_highpage(gp_chunk_page(c, i));
		if (!(i % 32))
			cond_resched();
	}
}

/* Zeroed: give c back to its node's bfc and free the struct. */
static void gp_chunk_return(struct gp_chunk *c)
{
	struct gp_node *n = c->node;
	int ret;

	gp_node_lock(n);
	ret = gp_fig_free(&n->fig, n->bfc, c->bh, c->offset, c->size,
			  c->requested);
	WARN_ONCE(ret, "bfc_free(%u) of a live chunk failed: %d\n", c->bh, ret);
	spin_lock(&n->stat_lock);
	n->c.zeroing_bytes -= c->size;
	n->c.zeroing_chunks--;
	gp_map_note(c, n->map_zeroing, -1);
	n->zero_done++;
	spin_unlock(&n->stat_lock);
	mutex_unlock(&n->lock);
	wake_up_all(&n->zero_wait);

	trace_gpupool_zeroed(c->size, n->nid, pid_nr(c->holder->tgid),
			 c->charge.cgroup_id);
	gp_holder_put(c->holder);
	kfree(c);
}

static void gp_quarantine(struct gp_node *n, struct gp_chunk *c)
{
	trace_gpupool_quarantine(c->size, n->nid, pid_nr(c->holder->tgid),
			 c->charge.cgroup_id);
	spin_lock(&n->stat_lock);
	n->c.zeroing_bytes -= c->size;
	n->c.zeroing_chunks--;
	gp_map_note(c, n->map_zeroing, -1);
	n->zero_done++;
	n->c.quarantined_bytes += c->size;
	n->c.quarantined_chunks++;
	gp_map_note(c, n->map_quarantined, 1);
	list_add_tail(&c->link, &n->quarantine);
	spin_unlock(&n->stat_lock);
	wake_up_all(&n->zero_wait);
	/* Not mod_delayed_work: that would push a pending recheck back, and
	 * a chunk quarantined every GP_QUARANTINE_RECHECK would keep every
	 * other quarantined chunk out of the pool for as long as it lasted.
	 */
	if (!READ_ONCE(gp_dying))
		queue_delayed_work(gp_wq, &n->quarantine_work,
				   GP_QUARANTINE_RECHECK);
}

void gp_zero_fn(struct work_struct *work)
{
	struct gp_node *n = container_of(work, struct gp_node, zero_work);
	struct gp_chunk *c;

	for (;;) {
		spin_lock(&n->stat_lock);
		c = list_first_entry_or_null(&n->dirty, struct gp_chunk, link);
		if (c)
			list_del_init(&c->link);
		spin_unlock(&n->stat_lock);
		if (!c)
			break;

		if (gp_chunk_held_elsewhere(c)) {
			gp_quarantine(n, c);
			continue;
		}
		gp_chunk_clear(c);
		gp_chunk_return(c);
	}
}

void gp_quarantine_fn(struct work_struct *work)
{
	struct gp_node *n = container_of(to_delayed_work(work), struct gp_node,
					 quarantine_work);
	struct gp_chunk *c, *tmp;
	LIST_HEAD(check);
	LIST_HEAD(clear);
	bool again;

	spin_lock(&n->stat_lock);
	list_splice_init(&n->quarantine, &check);
	spin_unlock(&n->stat_lock);

	list_for_each_entry_safe(c, tmp, &check, link)
		if (!gp_chunk_held_elsewhere(c))
			list_move_tail(&c->link, &clear);

	spin_lock(&n->stat_lock);
	list_splice(&check, &n->quarantine);
	list_for_each_entry(c, &clear, link) {
		n->c.quarantined_bytes -= c->size;
		n->c.quarantined_chunks--;
		gp_map_note(c, n->map_quarantined, -1);
		n->c.zeroing_bytes += c->size;
		n->c.zeroing_chunks++;
		gp_map_note(c, n->map_zeroing, 1);
	}
	again = !list_empty(&n->quarantine);
	spin_unlock(&n->stat_lock);

	list_for_each_entry_safe(c, tmp, &clear, link) {
		list_del_init(&c->link);
		gp_chunk_clear(c);
		gp_chunk_return(c);
	}
	if (again && !READ_ONCE(gp_dying))
		queue_delayed_work(gp_wq, &n->quarantine_work,
				   GP_QUARANTINE_RECHECK);
}
