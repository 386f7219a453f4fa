// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup.c - chunks charged to cgroups (v2), and held to per-cgroup
 * limits: the table of cgroups, charging and uncharging.  Where users set
 * and read the limits (GPUPOOL_IOC_CGROUP, /proc/gpupool's cgroup lines)
 * is cgroup_limits.c.
 *
 * Every chunk is charged, at ALLOC, to the cgroup of the default hierarchy
 * the allocating task is in, and to each of its ancestors; the charge stays
 * with those cgroups until the chunk's last reference is gone, as memcg's
 * and dmem's do: the task moving, the chunk exported or imported in
 * another container, the allocator exiting move nothing.
 *
 * Two ways to limit, chosen at load (cgroup_limits=):
 *
 *  - dmem (Linux 6.14+ with CONFIG_CGROUP_DMEM): the pool is one dmem
 *    region, "gpupool", and each ALLOC is charged through
 *    dmem_cgroup_try_charge(): dmem.max in cgroupfs is the limit, and
 *    nothing of ours sets one.  One region for the whole pool, not one per
 *    NUMA node: a tenant's share is of the pool, and an ALLOC that falls
 *    back to another node would otherwise be charged to a region its
 *    tenant never asked for.  Nothing in the pool can be evicted, so a
 *    charge dmem refuses is a refused ALLOC.
 *  - module (every kernel): our own table, below, holds a limit per
 *    cgroup, set with GPUPOOL_IOC_CGROUP (gpupoolctl limit).
 *
 * The table is kept on both ways: /proc/gpupool shows each cgroup's use
 * from it.  One struct gp_cg per cgroup that has been charged or limited,
 * in a hash by struct cgroup, each holding a reference on its cgroup and
 * on its parent's entry, so that a chunk's charge reaches every ancestor
 * by following ->parent.  An entry is kept while its cgroup lives, so that
 * a cgroup that frees its last chunk and allocates again costs no
 * allocation; the prune (below) lets go of the entries of removed cgroups:
 * an entry goes when its cgroup is removed and no chunk is charged to it.
 *
 * Locking: gp_cg_lock (a spinlock: chunks are uncharged when their last
 * reference goes, under mmap_lock or in a file's release) guards the table
 * and every entry's fields.  It is taken inside nothing of ours and takes
 * nothing of ours inside it.  cgroup_path_ns() sleeps (cgroup_mutex):
 * paths are computed outside it, on entries pinned by a reference.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/gpupool.h>

#if IS_ENABLED(CONFIG_CGROUP_DMEM)
#include <linux/cgroup_dmem.h>
#endif

#include "compat.h"
#include "gpupool.h"
#include "cgroup_internal.h"

DEFINE_SPINLOCK(gp_cg_lock);
DEFINE_HASHTABLE(gp_cg_hash, GP_CG_HASH_BITS);
/*
 * Entries come from a cache of their own, not kmalloc's: an ALLOC walks
 * its cgroup's entry and every ancestor's, and entries kept together
 * (not among the cgroup core's own objects of the same size) are fewer
 * pages and cache lines to walk.  Not merged with another cache where
 * the kernel lets us say so (SLAB_NO_MERGE, 6.5+).  It also shows in
 * /proc/slabinfo.
 */
#ifdef SLAB_NO_MERGE
#define GP_CG_CACHE_FLAGS	SLAB_NO_MERGE
#else
#define GP_CG_CACHE_FLAGS	0
#endif
static struct kmem_cache *gp_cg_cache;
unsigned long gp_cg_nr;		/* entries in gp_cg_hash */
u64 gp_cg_denials;		/* every refusal, for /proc */

/* The removed cgroups' entries go within this long when nothing asks. */
#define GP_CG_PRUNE_INTERVAL	(10 * HZ)
static void gp_cg_prune_work(struct work_struct *work);
static DECLARE_DELAYED_WORK(gp_cg_prune_dwork, gp_cg_prune_work);

bool gp_cg_dmem;			/* limits are dmem's (cgroup_limits=) */
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
static struct dmem_cgroup_region *gp_dmem_region;
static u64 gp_dmem_capacity;		/* the region's size */
#endif

static struct gp_cg *gp_cg_find(struct cgroup *cgrp)
{
	struct gp_cg *e;

	lockdep_assert_held(&gp_cg_lock);
	hash_for_each_possible(gp_cg_hash, e, hnode, (unsigned long)cgrp)
		if (e->cgrp == cgrp)
			return e;
	return NULL;
}

/*
 * Drop a reference; an entry left with none leaves the table and drops its
 * own reference on its parent's.  Never sleeps (cgroup_put() does not).
 */
void gp_cg_put_locked(struct gp_cg *e)
{
	struct gp_cg *parent;

	lockdep_assert_held(&gp_cg_lock);
	while (e && !--e->refs) {
		parent = e->parent;
		hash_del(&e->hnode);
		gp_cg_nr--;
		cgroup_put(e->cgrp);
		kmem_cache_free(gp_cg_cache, e);
		e = parent;
	}
}

void gp_cg_put(struct gp_cg *e)
{
	spin_lock(&gp_cg_lock);
	gp_cg_put_locked(e);
	spin_unlock(&gp_cg_lock);
}

/*
 * The entry of cgrp (which the caller holds a reference on), with a new
 * reference, made with those of its ancestors that have none yet; NULL
 * when out of memory.  May sleep.  The missing entries are made outside
 * the lock and published all at once, linked, so that no one charges an
 * entry whose ancestors are not there yet.
 */
struct gp_cg *gp_cg_get(struct cgroup *cgrp)
{
	struct gp_cg *e, *first = NULL, *child = NULL;
	HLIST_HEAD(spare);
	struct hlist_node *tmp;
	unsigned int need, have = 0;
	struct cgroup *c;

	for (;;) {
		need = 0;
		spin_lock(&gp_cg_lock);
		for (c = cgrp; c && !gp_cg_find(c); c = cgroup_parent(c))
			need++;
		if (need <= have)
			break;		/* with the lock held */
		spin_unlock(&gp_cg_lock);
		for (; have < need; have++) {
			e = kmem_cache_zalloc(gp_cg_cache, GFP_KERNEL);
			if (!e)
				goto out_free;
			hlist_add_head(&e->hnode, &spare);
		}
	}

	for (c = cgrp; c; c = cgroup_parent(c)) {
		bool made = false;

		e = gp_cg_find(c);
		if (!e) {
			e = hlist_entry(spare.first, struct gp_cg, hnode);
			hlist_del(&e->hnode);
			cgroup_get(c);
			e->cgrp = c;
			e->id = cgroup_id(c);
			e->limit = GPUPOOL_NO_LIMIT;
			e->refs = 1;	/* kept */
			e->kept = true;
			hash_add(gp_cg_hash, &e->hnode, (unsigned long)c);
			gp_cg_nr++;
			made = true;
		}
		e->refs++;	/* the caller's, or the child's */
		if (child)
			child->parent = e;
		else
			first = e;
		if (!made)
			break;	/* there before: linked to its parent already */
		child = e;
	}
	spin_unlock(&gp_cg_lock);
	queue_delayed_work(system_dfl_wq, &gp_cg_prune_dwork, GP_CG_PRUNE_INTERVAL);
out_free:
	hlist_for_each_entry_safe(e, tmp, &spare, hnode)
		kmem_cache_free(gp_cg_cache, e);
	return first;
}

/*
 * Has cgrp been removed (rmdir)?  What the kernel's cgroup_is_dead() asks,
 * which modules cannot call: cgroup_destroy_locked() takes CSS_ONLINE off
 * a cgroup's self.  Not css_is_dying(): in newer kernels (6.12's) it
 * tests CSS_DYING, which only controllers' states get, never a cgroup's
 * self, so a removed cgroup's entry would never go.
 */
static bool gp_cgroup_removed(struct cgroup *cgrp)
{
	return !(READ_ONCE(cgrp->self.flags) & CSS_ONLINE);
}

/*
 * Let go of the entries of removed cgroups: each loses its kept reference
 * and its limit (no task can be in a removed cgroup, so no ALLOC can meet
 * that limit again); an entry that still has chunks charged stays until
 * they go.  Entries whose last reference goes are set aside first and
 * freed after the walk, which may free their ancestors.
 */
void gp_cg_prune(void)
{
	struct gp_cg *e, *parent;
	struct hlist_node *tmp;
	HLIST_HEAD(doomed);
	unsigned int bkt;

	spin_lock(&gp_cg_lock);
	hash_for_each_safe(gp_cg_hash, bkt, tmp, e, hnode) {
		if (!e->kept || !gp_cgroup_removed(e->cgrp))
			continue;
		e->kept = false;
		e->refs--;
		if (e->limit != GPUPOOL_NO_LIMIT) {
			e->limit = GPUPOOL_NO_LIMIT;
			e->refs--;
		}
		if (!e->refs) {
			hash_del(&e->hnode);
			hlist_add_head(&e->hnode, &doomed);
		}
	}
	hlist_for_each_entry_safe(e, tmp, &doomed, hnode) {
		parent = e->parent;
		gp_cg_nr--;
		cgroup_put(e->cgrp);
		kmem_cache_free(gp_cg_cache, e);
		gp_cg_put_locked(parent);
	}
	spin_unlock(&gp_cg_lock);
}

static void gp_cg_prune_work(struct work_struct *work)
{
	gp_cg_prune();
	spin_lock(&gp_cg_lock);
	if (gp_cg_nr)
		queue_delayed_work(system_dfl_wq, &gp_cg_prune_dwork,
				   GP_CG_PRUNE_INTERVAL);
	spin_unlock(&gp_cg_lock);
}

/*
 * Refused by e's limit: what the refused ALLOC knows of it (counted as a
 * denial only if its retry, after asking for idle chunks, is refused
 * too: gp_cg_count_denial()).
 */
static void gp_cg_note_denial(struct gp_cg *e, struct gp_denial *d)
{
	cgroup_get(e->cgrp);
	d->cgrp = e->cgrp;
	d->limit = e->limit;
	d->usage = e->bytes;
	d->chunks = e->chunks;
	d->denials = e->denials;
	d->dmem = false;
	d->dmem_limit = NULL;
}

/* Take back a charge from e up to (not including) stop. */
static void gp_cg_undo_locked(struct gp_cg *e, struct gp_cg *stop, u64 size)
{
	for (; e != stop; e = e->parent) {
		e->bytes -= size;
		e->chunks--;
	}
}

/*
 * Charge e and its ancestors, unless a limit on the way refuses (-ENOSPC,
 * whatever else is wrong with the size) or the size cannot be counted
 * (-ENOMEM: more than any pool holds).  One walk, ALLOC's latency being
 * what users wait on; a refusal undoes what it had charged.  Figures are
 * hierarchical, so where one level's would pass 2^64, every level above's
 * would too: nothing is charged from there on.
 */
static int gp_cg_charge_locked(struct gp_cg *e, u64 size, struct gp_denial *d)
{
	struct gp_cg *p, *too_big = NULL;

	lockdep_assert_held(&gp_cg_lock);
	for (p = e; p; p = p->parent) {
		if (unlikely(p->limit != GPUPOOL_NO_LIMIT &&
			     (size > p->limit || p->bytes > p->limit - size))) {
			gp_cg_undo_locked(e, too_big ?: p, size);
			gp_cg_note_denial(p, d);
			return -ENOSPC;
		}
		if (unlikely(too_big || size > U64_MAX - p->bytes)) {
			too_big = too_big ?: p;
			continue;
		}
		p->bytes += size;
		p->chunks++;
	}
	if (unlikely(too_big)) {
		gp_cg_undo_locked(e, too_big, size);
		return -ENOMEM;
	}
	e->refs++;
	return 0;
}

/*
 * Our table's share of gp_cg_charge(): into ch->cg.  The task's cgroup is
 * read under gp_cg_lock alone: a spinlock is an RCU read-side section (it
 * disables preemption, or takes rcu_read_lock() on PREEMPT_RT), which is
 * what keeps a css_set and its cgroup from being freed (both go after a
 * grace period) and what task_css_set_check() accepts.  So the path of
 * every ALLOC but a cgroup's first is one lock, one lookup and one walk,
 * with no call but the lock's.
 */
static int gp_cg_charge_table(u64 size, struct gp_charge *ch,
			      struct gp_denial *d)
{
	struct cgroup *cgrp;
	struct gp_cg *e;
	bool held;
	int ret;

	for (;;) {
		spin_lock(&gp_cg_lock);
		cgrp = task_dfl_cgroup(current);
		e = gp_cg_find(cgrp);
		if (likely(e))
			break;
		/* Fails only while the task moves out of a removed cgroup. */
		held = css_tryget(&cgrp->self);
		spin_unlock(&gp_cg_lock);
		if (!held) {
			cond_resched();
			continue;
		}
		/*
		 * The first ALLOC of this cgroup: make its entries, kept until
		 * the cgroup is removed, and look again (the task may have
		 * moved meanwhile: it is charged where it is then).
		 */
		e = gp_cg_get(cgrp);
		cgroup_put(cgrp);
		if (!e)
			return -ENOMEM;
		gp_cg_put(e);
	}
	ret = gp_cg_charge_locked(e, size, d);
	spin_unlock(&gp_cg_lock);
	if (!ret) {
		ch->cg = e;
		ch->cgroup_id = e->id;
	}
	return ret;
}

#if IS_ENABLED(CONFIG_CGROUP_DMEM)
static int gp_cg_charge_dmem(u64 size, struct gp_charge *ch,
			     struct gp_denial *d)
{
	struct dmem_cgroup_pool_state *limit_pool = NULL;
	int ret;

	/*
	 * More than the pool can ever hold: no limit's business (the pool
	 * refuses it, and says so in its tracepoint), and dmem's
	 * page_counter takes the size as a long (past 2^63 it would lower
	 * the count instead of refusing).  Not charged to dmem at all.
	 */
	if (size > gp_dmem_capacity)
		return 0;
	ret = dmem_cgroup_try_charge(gp_dmem_region, size, &ch->dmem,
				     &limit_pool);
	if (ret != -EAGAIN)
		return ret;
	/*
	 * Over a dmem.max on the task's path.  dmem does not say whose; the
	 * task's own cgroup is noted, and the library walks dmem.max up from
	 * there (GPUPOOL_CGROUP_DMEM).  The state dmem gives is kept for the
	 * ask for idle chunks (gp_cg_charged_under()).
	 */
	d->dmem_limit = limit_pool;
	rcu_read_lock();
	d->cgrp = task_dfl_cgroup(current);
	if (!css_tryget(&d->cgrp->self))
		d->cgrp = NULL;
	rcu_read_unlock();
	d->limit = GPUPOOL_NO_LIMIT;
	d->usage = 0;
	d->chunks = 0;
	d->denials = 0;
	d->dmem = true;
	return -ENOSPC;
}
#endif

/*
 * Charge an ALLOC of size bytes to the calling task's cgroup: 0, -ENOSPC
 * (a limit refused it: d says which, with a cgroup reference for the
 * caller to drop with gp_denial_clear()) or -ENOMEM.  May sleep.
 */
int gp_cg_charge(u64 size, struct gp_charge *ch, struct gp_denial *d)
{
	int ret;

	memset(ch, 0, sizeof(*ch));
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (gp_cg_dmem) {
		ret = gp_cg_charge_dmem(size, ch, d);
		if (ret)
			return ret;
	}
#endif
	ret = gp_cg_charge_table(size, ch, d);
	if (ret)
		gp_cg_uncharge(ch, size);
	return ret;
}

/* The chunk's last reference is gone (or its ALLOC failed).  No sleeping. */
void gp_cg_uncharge(struct gp_charge *ch, u64 size)
{
	struct gp_cg *p;

#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (ch->dmem)
		dmem_cgroup_uncharge(ch->dmem, size);
#endif
	ch->dmem = NULL;
	if (!ch->cg)
		return;
	spin_lock(&gp_cg_lock);
	for (p = ch->cg; p; p = p->parent) {
		p->bytes -= size;
		p->chunks--;
	}
	gp_cg_put_locked(ch->cg);
	spin_unlock(&gp_cg_lock);
	ch->cg = NULL;
}

/*
 * The refusal d stands: counted (/proc's CgroupDenials, the limit's
 * denials, which d then shows).  What only an ask needed of it goes.
 */
void gp_cg_count_denial(struct gp_denial *d)
{
	struct gp_cg *e;

	spin_lock(&gp_cg_lock);
	gp_cg_denials++;
	e = d->dmem || !d->cgrp ? NULL : gp_cg_find(d->cgrp);
	if (e)
		d->denials = ++e->denials;
	spin_unlock(&gp_cg_lock);
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (d->dmem_limit)
		dmem_cgroup_pool_state_put(d->dmem_limit);
#endif
	d->dmem_limit = NULL;
}

/*
 * Is a chunk charged as ch inside the subtree of the cgroup whose limit
 * refused (d)?  For dmem, where dmem named the cgroup over its dmem.max:
 * would dmem evict it for that one (in its subtree, above its dmem.min);
 * else (the module's limits, or dmem that named none) is it charged in
 * d's cgroup or below.  Never sleeps: the entries' parents and cgroups
 * are fixed once made, and ch's reference keeps them.
 */
bool gp_cg_charged_under(const struct gp_charge *ch, const struct gp_denial *d)
{
	const struct gp_cg *e;

#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (d->dmem && d->dmem_limit) {
		bool low = false;

		return ch->dmem &&
		       dmem_cgroup_state_evict_valuable(d->dmem_limit, ch->dmem,
							true, &low);
	}
#endif
	if (!d->cgrp)
		return false;
	for (e = ch->cg; e; e = e->parent)
		if (e->cgrp == d->cgrp)
			return true;
	return false;
}

void gp_denial_clear(struct gp_denial *d)
{
	if (d->cgrp)
		cgroup_put(d->cgrp);
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (d->dmem_limit)
		dmem_cgroup_pool_state_put(d->dmem_limit);
#endif
	memset(d, 0, sizeof(*d));
}

/* Load and unload --------------------------------------------------------- */

/*
 * mode: "auto" (dmem where the kernel has it, else our table), "dmem"
 * (fail without it) or "module" (our table even where dmem exists).
 * capacity: the bytes the pool may reach (dmem.capacity).
 */
int gp_cg_init(const char *mode, u64 capacity)
{
	bool want_dmem = !strcmp(mode, "dmem");
	int ret;

	if (!want_dmem && strcmp(mode, "auto") && strcmp(mode, "module")) {
		pr_err("cgroup_limits=%s: expected auto, dmem or module\n",
		       mode);
		return -EINVAL;
	}
	gp_cg_cache = KMEM_CACHE(gp_cg, GP_CG_CACHE_FLAGS);
	if (!gp_cg_cache)
		return -ENOMEM;
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (strcmp(mode, "module")) {
		gp_dmem_region = dmem_cgroup_register_region(capacity,
							     GPUPOOL_NAME);
		if (IS_ERR(gp_dmem_region)) {
			pr_err("cannot register the dmem region: %ld\n",
			       PTR_ERR(gp_dmem_region));
			ret = PTR_ERR(gp_dmem_region);
			gp_dmem_region = NULL;
			goto out_cache;
		}
		gp_cg_dmem = gp_dmem_region;
		gp_dmem_capacity = capacity;
	}
#endif
	if (want_dmem && !gp_cg_dmem) {
		pr_err("cgroup_limits=dmem: this kernel has no dmem cgroup controller (CONFIG_CGROUP_DMEM, Linux 6.14+)\n");
		ret = -EOPNOTSUPP;
		goto out_cache;
	}
	return 0;

out_cache:
	kmem_cache_destroy(gp_cg_cache);
	gp_cg_cache = NULL;
	return ret;
}

/* Every chunk is gone (files, mappings and chunk fds pin the module). */
void gp_cg_exit(void)
{
	struct hlist_node *tmp;
	unsigned int bkt;
	struct gp_cg *e;
	bool progress;

	cancel_delayed_work_sync(&gp_cg_prune_dwork);
	/*
	 * Only kept and limit references are left, and those of children:
	 * let go of leaves until none is left.  Each put may free ancestors,
	 * so the walk starts again after each.
	 */
	spin_lock(&gp_cg_lock);
	do {
		progress = false;
		hash_for_each_safe(gp_cg_hash, bkt, tmp, e, hnode) {
			if (e->refs != (unsigned int)e->kept +
			    (e->limit != GPUPOOL_NO_LIMIT))
				continue;
			WARN_ON_ONCE(e->chunks);
			e->refs = 1;
			gp_cg_put_locked(e);
			progress = true;
			break;
		}
	} while (progress);
	WARN_ON_ONCE(gp_cg_nr);
	spin_unlock(&gp_cg_lock);
#if IS_ENABLED(CONFIG_CGROUP_DMEM)
	if (gp_dmem_region)
		dmem_cgroup_unregister_region(gp_dmem_region);
	gp_dmem_region = NULL;
#endif
	gp_cg_dmem = false;
	kmem_cache_destroy(gp_cg_cache);
	gp_cg_cache = NULL;
}
