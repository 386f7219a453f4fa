// SPDX-License-Identifier: GPL-2.0
/*
 * pool.c - the reserved pool: NUMA sub-pools, their 2 MiB blocks of pages,
 * reservation at load and growth, allocation, and the release that hands
 * chunks to the zeroing worker and quarantine (zeroing.c), which take
 * them back.  What the pool's figures add up to and how /proc shows them
 * is pool_stats.c's.
 *
 * Each sub-pool (struct gp_node) runs one struct bfc over an abstract
 * offset space: offset o lives in block o >> 21, so finding the page behind
 * any offset is one array index (gp_node_page()).  The blocks come from
 * reserve.c, which knows nothing of this file: the pool asks it for pages
 * and makes them regions of its nodes' bfcs.
 *
 * Every page of the pool holds exactly one reference of ours while it is
 * in the pool (every folio, where blocks are folios).  Mappings add their
 * own (vm_insert_pages(), the fault handlers), GUP pins add theirs.  A
 * released chunk whose pages carry anything beyond our one reference and
 * the mappings of other chunks is still in someone's hands: it is
 * quarantined, not reused.
 *
 * Locks, outermost first:
 *   gp_node.grow_lock   one grower per sub-pool (sleeps in the allocator);
 *   gp_node.lock        every bfc call, and publishing new blocks;
 *   gp_node.map_lock    rwsem, where blocks are folios: mappings taking
 *                       page references (read), a folio's counts read
 *                       together (write); taken under mmap_lock;
 *   gp_node.stat_lock   spinlock: counters, dirty and quarantine lists.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/gpupool.h>

#include "gpupool.h"

#define CREATE_TRACE_POINTS
#include "gpupool_trace.h"

unsigned int gp_nr_nodes;
struct gp_node **gp_nodes;

struct workqueue_struct *gp_wq;
static u64 gp_reserve_ns;
static u64 gp_max_size;
static atomic64_t gp_live_bytes = ATOMIC64_INIT(0);
static atomic64_t gp_peak_live_bytes = ATOMIC64_INIT(0);
bool gp_dying;

/* Make [nr_blocks, nr_blocks + count) part of the node's bfc. */
static int gp_publish_blocks(struct gp_node *n, unsigned long count)
{
	int ret;

	gp_node_lock(n);
	ret = gp_fig_add_region(&n->fig, n->bfc,
				(u64)n->nr_blocks << GP_BLOCK_SHIFT,
				(u64)count << GP_BLOCK_SHIFT);
	if (!ret)
		n->nr_blocks += count;
	mutex_unlock(&n->lock);
	return ret;
}

/* Growth (TensorFlow's allow_growth) ----------------------------------------- */

/*
 * Add a region big enough for `size` bytes, sized next_grow_blocks (which
 * doubles) but no more than the limit; when the kernel refuses, try again at
 * 90% until that is below what the request needs.  The new region goes
 * right above the node's memory and merges with a free chunk ending there,
 * so the request needs only what that chunk lacks.  Returns 0 when the node
 * has grown (by this caller or a concurrent one since `seen_blocks`).
 */
static int gp_node_grow(struct gp_node *n, u64 size, unsigned long seen_blocks)
{
	unsigned long need, have, want, got;
	u64 top;
	int ret = -ENOMEM;

	mutex_lock(&n->grow_lock);
	have = READ_ONCE(n->nr_blocks);
	if (have != seen_blocks) {
		ret = 0;		/* someone else grew it: retry */
		goto out_unlock;
	}
	gp_node_lock(n);
	top = bfc_free_at_top(n->bfc);
	mutex_unlock(&n->lock);
	size = PAGE_ALIGN(size);
	/* Blocks for what the free top lacks; no DIV_ROUND_UP: size may be
	 * within a block of U64_MAX, and n + GP_BLOCK_SIZE - 1 would wrap.
	 */
	need = (size - min(top, size - 1) - 1) / GP_BLOCK_SIZE + 1;
	if (need > n->cap_blocks - have)
		goto out_unlock;
	want = clamp(n->next_grow_blocks, need, n->cap_blocks - have);

	for (;;) {
		got = gp_reserve_blocks(gp_wq, n, have, want);
		if (got >= need)
			break;
		gp_release_blocks(n, have, got);
		if (want == need)
			goto out_unlock;
		want = max(need, want * 9 / 10);
	}
	ret = gp_publish_blocks(n, got);
	if (ret) {
		gp_release_blocks(n, have, got);
		goto out_unlock;
	}
	n->next_grow_blocks = min(2 * got, n->cap_blocks);
	spin_lock(&n->stat_lock);
	n->c.growths++;
	spin_unlock(&n->stat_lock);
	trace_gpupool_grow((u64)got << GP_BLOCK_SHIFT,
			   (u64)(have + got) << GP_BLOCK_SHIFT, n->nid,
			   task_tgid_nr(current));
	pr_info("node %d: grew by %lu MiB to %lu MiB\n", n->nid,
		got << (GP_BLOCK_SHIFT - 20),
		(have + got) << (GP_BLOCK_SHIFT - 20));
out_unlock:
	mutex_unlock(&n->grow_lock);
	return ret;
}

/* Allocation -------------------------------------------------------------------- */

static void gp_note_live(struct gp_node *n, u64 bytes)
{
	u64 live, peak;

	n->c.live_bytes += bytes;
	n->c.live_chunks++;
	n->c.allocs++;
	n->c.peak_live_bytes = max(n->c.peak_live_bytes, n->c.live_bytes);

	live = atomic64_add_return(bytes, &gp_live_bytes);
	peak = atomic64_read(&gp_peak_live_bytes);
	while (live > peak) {
		u64 old = atomic64_cmpxchg(&gp_peak_live_bytes, peak, live);

		if (old == peak)
			break;
		peak = old;
	}
}

/*
 * One try on one node.  On -ENOMEM, *wait_for says whether waiting for the
 * zeroing worker could help (chunks being zeroed, and free + zeroing bytes
 * would cover the request): then it is the zero_done count to wait for (every
 * chunk in zeroing now has left it), else 0.
 */
static int gp_node_try_alloc(struct gp_node *n, u64 size, struct gp_chunk *c,
			     u64 *wait_for, unsigned long *seen_blocks)
{
	struct bfc_stats st;
	u64 addr;
	int ret;

	*wait_for = 0;
	gp_node_lock(n);
	*seen_blocks = n->nr_blocks;
	ret = gp_fig_alloc(&n->fig, n->bfc, size, &c->bh, &addr);
	if (!ret) {
		c->node = n;
		c->offset = addr;
		c->size = PAGE_ALIGN(size);
		c->requested = size;
		spin_lock(&n->stat_lock);
		gp_note_live(n, c->size);
		spin_unlock(&n->stat_lock);
	} else {
		bfc_get_stats(n->bfc, &st);
		spin_lock(&n->stat_lock);
		if (n->c.zeroing_bytes &&
		    st.free_bytes + n->c.zeroing_bytes >= PAGE_ALIGN(size))
			*wait_for = n->zero_done + n->c.zeroing_chunks;
		spin_unlock(&n->stat_lock);
	}
	mutex_unlock(&n->lock);
	return ret;
}

static bool gp_node_zeroed_past(struct gp_node *n, u64 count)
{
	return (s64)(READ_ONCE(n->zero_done) - count) >= 0;
}

/*
 * What an allocation waits for.  Nothing, when the sub-pool has a free chunk
 * that fits: that is a bfc lookup under the node mutex.  Otherwise:
 *  - when chunks released on this node are being zeroed and would (with the
 *    free bytes) cover the request, it sleeps, killable, until every chunk
 *    that was in zeroing when it looked has been zeroed (or quarantined),
 *    and tries again.  Once: chunks released after it looked are not
 *    waited for, or a busy pool (others freeing all the time) could keep it
 *    waiting for ever;
 *  - else, when growth is allowed (max_size) and the node is below its
 *    limit, it grows the node itself: allocating and zeroing new blocks in
 *    the page allocator (work items on the node's CPUs), which sleeps but
 *    never retries hard or invokes the OOM killer;
 *  - else it fails with -ENOMEM.
 * Quarantined (still pinned) chunks are never waited for.
 */
static int gp_node_alloc(struct gp_node *n, u64 size, struct gp_chunk *c)
{
	unsigned long seen_blocks;
	bool waited = false;
	u64 wait_for;
	int ret;

	for (;;) {
		ret = gp_node_try_alloc(n, size, c, &wait_for, &seen_blocks);
		if (ret != -ENOMEM)
			return ret;
		if (wait_for && !waited) {
			if (wait_event_killable(n->zero_wait,
						gp_node_zeroed_past(n, wait_for)))
				return -EINTR;
			waited = true;
			continue;
		}
		if (gp_node_grow(n, size, seen_blocks))
			return -ENOMEM;
	}
}

struct gp_node *gp_pool_node(int nid)
{
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++)
		if (gp_nodes[i]->nid == nid)
			return gp_nodes[i];
	return NULL;
}

/* An ALLOC refused with -ENOMEM: counted on nid's sub-pool (or the first). */
void gp_pool_count_failure(int nid)
{
	struct gp_node *n = gp_pool_node(nid) ?: gp_nodes[0];

	spin_lock(&n->stat_lock);
	n->c.failed_allocs++;
	spin_unlock(&n->stat_lock);
}

/*
 * An ALLOC of size for nid refused with -ENOMEM: counted, and traced with
 * its time (wait_ns, from t0; 0 when not timed).
 */
static void gp_pool_refused_at(u64 size, int nid, struct gp_holder *holder,
			       u64 cgroup_id, u64 t0)
{
	struct gp_node *n = gp_pool_node(nid) ?: gp_nodes[0];

	gp_pool_count_failure(n->nid);
	trace_gpupool_alloc(size, 0, n->nid, pid_nr(holder->tgid), cgroup_id,
			    t0 ? ktime_get_ns() - t0 : 0, -ENOMEM);
}

/* The same for an ALLOC whose refusal is said after its last try. */
void gp_pool_refused(u64 size, int nid, struct gp_holder *holder,
		     u64 cgroup_id)
{
	gp_pool_refused_at(size, nid, holder, cgroup_id, 0);
}

/*
 * c from first when it has room, else from another node with room; then
 * the same with waits and growth (gp_node_alloc()), starting with first.
 */
static int gp_pool_alloc_any(struct gp_node *first, u64 size,
			     struct gp_chunk *c)
{
	unsigned long seen;
	unsigned int i;
	u64 wait_for;
	int ret;

	ret = gp_node_try_alloc(first, size, c, &wait_for, &seen);
	for (i = 0; ret == -ENOMEM && i < gp_nr_nodes; i++)
		if (gp_nodes[i] != first)
			ret = gp_node_try_alloc(gp_nodes[i], size, c, &wait_for,
						&seen);
	if (ret == -ENOMEM)
		ret = gp_node_alloc(first, size, c);
	for (i = 0; ret == -ENOMEM && i < gp_nr_nodes; i++)
		if (gp_nodes[i] != first)
			ret = gp_node_alloc(gp_nodes[i], size, c);
	return ret;
}

/*
 * A chunk of `size` bytes with one reference (the caller's), counted against
 * holder (which the chunk references; the caller has charged it) and
 * charged to charge's cgroups (the chunk takes over the charge on success).
 * strict_node: only from nid.  Else nid first (when it has a sub-pool),
 * then the others; every node first without waiting or growing, then with.
 * A refusal (-ENOMEM) is counted and traced only when final: else the
 * caller asks holders of idle chunks and tries again.
 */
int gp_pool_alloc(u64 size, int nid, bool strict_node, bool final,
		  struct gp_holder *holder, const struct gp_charge *charge,
		  struct gp_chunk **out)
{
	/* The clock only for a tracer: two reads an ALLOC cost more than
	 * the ALLOC's own bookkeeping (microseconds under TCG).
	 */
	u64 t0 = trace_gpupool_alloc_enabled() ? ktime_get_ns() : 0;
	struct gp_node *first;
	struct gp_chunk *c;
	int ret;

	if (!size)
		return -EINVAL;
	first = gp_pool_node(nid);
	if (strict_node && !first)
		return -ENODEV;
	if (!first)
		first = gp_nodes[0];

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	kref_init(&c->kref);
	INIT_LIST_HEAD(&c->link);

	ret = strict_node ? gp_node_alloc(first, size, c) :
			    gp_pool_alloc_any(first, size, c);
	if (ret == -ENOMEM) {
		if (final)
			gp_pool_refused_at(size, first->nid, holder,
					   charge->cgroup_id, t0);
	} else if (trace_gpupool_alloc_enabled()) {
		trace_gpupool_alloc(size, ret ? 0 : c->size,
				    ret ? first->nid : c->node->nid,
				    pid_nr(holder->tgid), charge->cgroup_id,
				    t0 ? ktime_get_ns() - t0 : 0, ret);
	}
	if (ret) {
		kfree(c);
		return ret;
	}
	gp_holder_get(holder);
	c->holder = holder;
	c->charge = *charge;
	*out = c;
	return 0;
}

/* Release ------------------------------------------------------------------ */

/*
 * The last reference to c is gone.  May run under mmap_lock (vma close):
 * no sleeping, just hand it to the zeroing worker.
 */
void gp_pool_release_chunk(struct gp_chunk *c)
{
	struct gp_node *n = c->node;

	trace_gpupool_free(c->size, n->nid, pid_nr(c->holder->tgid),
			 c->charge.cgroup_id);
	atomic64_sub(c->size, &gp_live_bytes);
	spin_lock(&n->stat_lock);
	n->c.live_bytes -= c->size;
	n->c.live_chunks--;
	n->c.frees++;
	n->c.zeroing_bytes += c->size;
	n->c.zeroing_chunks++;
	gp_map_note(c, n->map_zeroing, 1);
	list_add_tail(&c->link, &n->dirty);
	spin_unlock(&n->stat_lock);
	queue_work_node(n->nid, gp_wq, &n->zero_work);
}

/* The pool's size and shape ---------------------------------------------- */

u64 gp_pool_size(void)
{
	u64 total = 0;
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++)
		total += (u64)READ_ONCE(gp_nodes[i]->nr_blocks) << GP_BLOCK_SHIFT;
	return total;
}

u64 gp_pool_max_size(void)
{
	return gp_max_size;
}

u64 gp_pool_reserve_ns(void)
{
	return gp_reserve_ns;
}

u64 gp_pool_node_mask(void)
{
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++)
		mask |= 1ULL << gp_nodes[i]->nid;
	return mask;
}

/* The highest sum of live bytes over all nodes since load. */
u64 gp_pool_peak_in_use(void)
{
	return atomic64_read(&gp_peak_live_bytes);
}

/* Load and unload ------------------------------------------------------------ */

/* Hand each node its reserved blocks, with one log line per node. */
static int gp_pool_publish_nodes(const unsigned long *got, unsigned long want)
{
	unsigned int i;
	int ret;

	for (i = 0; i < gp_nr_nodes; i++) {
		struct gp_node *n = gp_nodes[i];

		if (got[i]) {
			ret = gp_publish_blocks(n, got[i]);
			if (ret)
				return ret;
		}
		pr_info("node %d: reserved %lu MiB in %llu ms (%lu of %lu blocks; %lu made of smaller orders)\n",
			n->nid, got[i] << (GP_BLOCK_SHIFT - 20),
			div_u64(n->reserve_ns, NSEC_PER_MSEC), got[i], want,
			n->fallback_blocks);
	}
	return 0;
}

/*
 * Give back the blocks of the nodes not yet published (published ones are
 * released by gp_node_destroy()); with strict_short, name each node that
 * got less than asked, the reason the load fails.
 */
static void gp_pool_unreserve_nodes(const unsigned long *got,
				    unsigned long want, bool strict_short)
{
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++) {
		struct gp_node *n = gp_nodes[i];

		if (!n->nr_blocks)
			gp_release_blocks(n, 0, got[i]);
		if (strict_short && got[i] < want)
			pr_err("node %d: only %lu of %lu MiB could be reserved; strict=1: not loading\n",
			       n->nid, got[i] << (GP_BLOCK_SHIFT - 20),
			       want << (GP_BLOCK_SHIFT - 20));
	}
}

/*
 * Reserve every node's blocks at load, all nodes at once (reserve.c), and
 * publish them; one log line per node.  With strict, anything short of the
 * whole request undoes everything.
 */
static int gp_pool_reserve(u64 per_node, bool strict, u64 *ns)
{
	unsigned long want = per_node >> GP_BLOCK_SHIFT;
	struct gp_reservation *r;
	unsigned long *got;
	ktime_t t0 = ktime_get();
	bool partial = false;
	int ret;

	r = kcalloc(gp_nr_nodes, sizeof(*r), GFP_KERNEL);
	got = kcalloc(gp_nr_nodes, sizeof(*got), GFP_KERNEL);
	if (!r || !got) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = gp_reserve_nodes(r, want, got, &partial);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	if (ret || (partial && strict))
		goto out_release;
	ret = gp_pool_publish_nodes(got, want);
	if (ret)
		goto out_release;
	if (partial)
		pr_warn("reserved %llu MiB of the %llu MiB asked for: the kernel had no more to give (or only below the floor of 1/%d of each node's memory)\n",
			gp_pool_size() >> 20, (per_node * gp_nr_nodes) >> 20,
			GP_FLOOR_DIV);
	goto out_free;

out_release:
	gp_pool_unreserve_nodes(got, want, partial && strict);
	if (!ret)
		ret = -ENOMEM;
out_free:
	kfree(got);
	kfree(r);
	return ret;
}

static void gp_node_destroy(struct gp_node *n)
{
	struct gp_chunk *c, *tmp;
	LIST_HEAD(left);

	flush_work(&n->zero_work);
	cancel_delayed_work_sync(&n->quarantine_work);

	/* No file, mapping or chunk fd is left (they pin the module): what is
	 * here is quarantined.  Our references go; pinned pages are freed by
	 * whoever pins them when they unpin.
	 */
	spin_lock(&n->stat_lock);
	list_splice_init(&n->dirty, &left);
	list_splice_init(&n->quarantine, &left);
	spin_unlock(&n->stat_lock);
	list_for_each_entry_safe(c, tmp, &left, link) {
		pr_warn("node %d: chunk of %llu kB still pinned at unload; its pages are freed when unpinned\n",
			n->nid, c->size >> 10);
		list_del(&c->link);
		gp_holder_put(c->holder);
		kfree(c);
	}

	gp_release_blocks(n, 0, n->nr_blocks);
	kvfree(n->blocks);
	if (n->bfc)
		bfc_destroy(n->bfc);
	mutex_destroy(&n->grow_lock);
	mutex_destroy(&n->lock);
	kfree(n);
}

void gp_pool_bfc_params(struct bfc_params *p, u32 policy)
{
	bfc_params_default(p, PAGE_SIZE);
	p->split_ratio = 0;
	p->split_threshold = PAGE_SIZE;
	p->flags = BFC_MERGE_ADJACENT_REGIONS;
	p->policy = policy;
}

static struct gp_node *gp_node_create(int nid, u64 size, u64 limit)
{
	struct bfc_params p;
	struct gp_node *n;

	n = kzalloc_node(sizeof(*n), GFP_KERNEL, nid);
	if (!n)
		return NULL;
	n->nid = nid;
	mutex_init(&n->lock);
	mutex_init(&n->grow_lock);
	init_rwsem(&n->map_lock);
	spin_lock_init(&n->stat_lock);
	INIT_LIST_HEAD(&n->dirty);
	INIT_LIST_HEAD(&n->quarantine);
	init_waitqueue_head(&n->zero_wait);
	INIT_WORK(&n->zero_work, gp_zero_fn);
	INIT_DELAYED_WORK(&n->quarantine_work, gp_quarantine_fn);

	n->cap_blocks = max(size, limit) >> GP_BLOCK_SHIFT;
	n->next_grow_blocks = max(1UL, (unsigned long)(size >> GP_BLOCK_SHIFT));
	n->blocks = kvcalloc(max(1UL, n->cap_blocks), sizeof(*n->blocks),
			     GFP_KERNEL);
	if (!n->blocks)
		goto out_free_node;
	gp_figures_init(&n->fig, (u64)n->cap_blocks * GP_BLOCK_SIZE);

	gp_pool_bfc_params(&p, gp_policy);
	if (bfc_create(&n->bfc, &p))
		goto out_free_blocks;
	return n;

out_free_blocks:
	kvfree(n->blocks);
out_free_node:
	kfree(n);
	return NULL;
}

int gp_pool_init(const int *nids, unsigned int nr, u64 pool_size,
		 u64 max_size, bool strict)
{
	u64 per_node, limit = 0;
	unsigned int i;
	int ret;

	per_node = round_up(DIV_ROUND_UP_ULL(pool_size, nr), GP_BLOCK_SIZE);
	if (max_size)
		limit = round_up(DIV_ROUND_UP_ULL(max_size, nr), GP_BLOCK_SIZE);
	gp_max_size = max_size;
	gp_dying = false;

	gp_wq = alloc_workqueue("gpupool", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!gp_wq)
		return -ENOMEM;

	gp_nodes = kcalloc(nr, sizeof(*gp_nodes), GFP_KERNEL);
	if (!gp_nodes) {
		ret = -ENOMEM;
		goto out_destroy_wq;
	}
	for (gp_nr_nodes = 0; gp_nr_nodes < nr; gp_nr_nodes++) {
		gp_nodes[gp_nr_nodes] = gp_node_create(nids[gp_nr_nodes],
						       per_node, limit);
		if (!gp_nodes[gp_nr_nodes]) {
			ret = -ENOMEM;
			goto out_destroy_nodes;
		}
	}

	ret = gp_pool_reserve(per_node, strict, &gp_reserve_ns);
	if (ret)
		goto out_destroy_nodes;
	return 0;

out_destroy_nodes:
	for (i = 0; i < gp_nr_nodes; i++)
		gp_node_destroy(gp_nodes[i]);
	kfree(gp_nodes);
	gp_nodes = NULL;
	gp_nr_nodes = 0;
out_destroy_wq:
	destroy_workqueue(gp_wq);
	return ret;
}

void gp_pool_exit(void)
{
	unsigned int i;

	WRITE_ONCE(gp_dying, true);
	for (i = 0; i < gp_nr_nodes; i++)
		gp_node_destroy(gp_nodes[i]);
	destroy_workqueue(gp_wq);
	kfree(gp_nodes);
	gp_nodes = NULL;
	gp_nr_nodes = 0;
}
