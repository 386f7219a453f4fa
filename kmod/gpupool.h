/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpupool.h - what the parts of gpupool.ko share.
 *
 * Objects and their references:
 *
 *   struct gp_node    one NUMA sub-pool: a struct bfc over an abstract offset
 *                     space [0, nr_blocks * 2 MiB), the 2 MiB blocks of
 *                     pages behind it, and the lists of released chunks.
 *                     Lives from load to unload.
 *   struct gp_chunk   one allocation.  kref held by the owner (its entry in
 *                     the allocating file's xarray), by every vma mapping it
 *                     and by every exported chunk fd.  When the last one
 *                     goes, the chunk goes to its node's dirty list; the
 *                     zeroing worker gives it back to the bfc (or to the
 *                     quarantine while its pages are pinned by others) and
 *                     frees the struct.
 *   struct gp_holder  per process (tgid) accounting: referenced by every
 *                     /dev/gpupool file the process opened and by every
 *                     chunk that counts against it.
 *   struct gp_cg      per cgroup accounting and limit (cgroup.c):
 *                     referenced by every chunk charged to its cgroup and
 *                     by its child cgroups' entries.
 *   struct gp_idle    a chunk its owner marked idle (reclaim.c): on the
 *                     pool's list of idle chunks, oldest first, and its
 *                     file's, until the owner marks it busy or gives it up.
 */
#ifndef GPUPOOL_KMOD_H
#define GPUPOOL_KMOD_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "bfc.h"
#include "compat.h"

#define GPUPOOL_NAME	"gpupool"

/*
 * The pool is made of 2 MiB blocks on every page size, so that its sizes,
 * growth steps and figures are the same bytes everywhere: order 9 of
 * 4 KiB pages, 7 of 16 KiB, 5 of 64 KiB.  One allocation of that order
 * each where the page allocator has one, else smaller orders (struct
 * gp_block).  Chunks are whole pages (the ABI's granularity), so their
 * sizes and offsets in the pool are multiples of PAGE_SIZE.
 */
#define GP_BLOCK_SHIFT	21
#define GP_BLOCK_SIZE	(1ULL << GP_BLOCK_SHIFT)
#define GP_BLOCK_ORDER	(GP_BLOCK_SHIFT - PAGE_SHIFT)
#define GP_BLOCK_PAGES	(1UL << GP_BLOCK_ORDER)

/*
 * With huge_maps, blocks stay whole (folios) and chunks' whole blocks are
 * mapped with the largest entries the kernel has for them (compat.h;
 * kmod/chunk.c, "Large entries"):
 *  - GP_PMD_MAPS: one PMD entry per block, where a block is a PMD: 4 KiB
 *    pages (x86_64, arm64 with 4 KiB pages), 6.15 and later.  With 16 KiB
 *    pages a PMD maps 32 MiB, with 64 KiB 512 MiB: more than a block.
 *  - GP_CONT_MAPS: with 64 KiB and 16 KiB pages, arm64's contiguous
 *    PTEs, which the kernel makes of a folio's PTEs itself: 32 x 64 KiB
 *    or 128 x 16 KiB, one 2 MiB TLB entry per block (6.10 and later).
 *    With 4 KiB pages they are 16 x 4 KiB = 64 KiB, which PMD entries
 *    beat; there the parts of a chunk's blocks mapped by PTEs may still
 *    be folded into them, by the kernel, where the PMD path keeps blocks
 *    whole.
 * GP_HUGE_ENTRY_SHIFT: the largest entry a chunk's whole block gets.
 */
#define GP_PMD_MAPS	(GP_KERNEL_PMD_MAPS && PMD_SHIFT == GP_BLOCK_SHIFT)
#define GP_CONT_MAPS	(GP_KERNEL_CONT_MAPS && PMD_SHIFT != GP_BLOCK_SHIFT)
#define GP_FOLIO_BLOCKS	(GP_PMD_MAPS || GP_CONT_MAPS)
#if GP_PMD_MAPS
#define GP_HUGE_ENTRY_SHIFT	PMD_SHIFT
#elif GP_CONT_MAPS
#define GP_HUGE_ENTRY_SHIFT	CONT_PTE_SHIFT
#else
#define GP_HUGE_ENTRY_SHIFT	PAGE_SHIFT
#endif

/* Node ids that fit the ABI's 64-bit node_mask. */
#define GP_MAX_NID	64

struct seq_file;
struct gpupool_pool_stats;

/*
 * A block's page i is head + i when the block is one allocation of
 * GP_BLOCK_ORDER; when it had to be put together from smaller orders,
 * head is NULL and pages[i] names each (order-0) page.  A whole block is
 * split with split_page(), so that each page has its own refcount, except
 * with gp_folio_blocks(): there it stays one folio, which a mapping can
 * take in larger entries, and its pages share one refcount
 * (gp_block_folio()).  Written once before the block is published (under
 * the node's mutex, with nr_blocks); read without locks afterwards.
 */
struct gp_block {
	struct page *head;
	struct page **pages;
};

/* huge_maps=: blocks are folios, mapped with large entries (main.c). */
extern bool gp_huge_maps;

static inline bool gp_folio_blocks(void)
{
	return GP_FOLIO_BLOCKS && gp_huge_maps;
}

static inline bool gp_pmd_maps(void)
{
	return GP_PMD_MAPS && gp_huge_maps;
}

/* The block's folio, or NULL when its pages are order 0. */
#if GP_FOLIO_BLOCKS
static inline struct folio *gp_block_folio(const struct gp_block *b)
{
	return gp_huge_maps && b->head ? page_folio(b->head) : NULL;
}
#else
/* Always split here (and no page_folio() before 5.16). */
struct folio;
static inline struct folio *gp_block_folio(const struct gp_block *b)
{
	return NULL;
}
#endif

/* Counters of one sub-pool; all under gp_node.stat_lock. */
struct gp_counters {
	u64 live_bytes;		/* in chunks with references */
	u64 live_chunks;
	u64 peak_live_bytes;
	u64 zeroing_bytes;	/* on the dirty list or being zeroed */
	u64 zeroing_chunks;
	u64 quarantined_bytes;	/* on the quarantine list */
	u64 quarantined_chunks;
	u64 allocs;
	u64 frees;
	u64 failed_allocs;
	u64 growths;
};

#define GP_MAP_CELLS	64	/* characters of a NodeNMap line */

/*
 * What /proc/gpupool shows of a sub-pool's bfc, kept as its chunks change
 * (figures.c), under the node's lock: the bin table (bfc_bin_stats_add()
 * of every chunk) and the bytes of bfc's in-use and free chunks by cell of
 * the occupancy map (GP_MAP_CELLS parts of [0, space), cell bytes each,
 * the last one with the remainder too).  bfc's in-use chunks include the
 * released ones it has not had back yet (zeroing, quarantined).
 *
 * An allocation only notes what it changed (notes[]); the notes are added
 * into the figures by gp_fig_settle() (the zeroing worker's next free,
 * any reader, or the allocation that fills the last note), so that ALLOC,
 * whose latency users wait on, does no more than a few stores here.  The
 * figures are sums, so the order in which changes are added does not
 * matter; only a reader must settle first.
 */
#define GP_FIG_NOTES	8	/* a node (with its figures) stays in 4 KiB */

struct gp_fig_note {
	u64 offset;		/* the chunk handed out */
	u64 size;		/* its bytes (the rounded request) */
	u64 requested;
	u64 from;		/* the free chunk it was cut from */
};

struct gp_figures {
	u64 space;
	u64 cell;
	struct bfc_bin_stats bins[BFC_NR_BINS];
	u64 map_used[GP_MAP_CELLS];
	u64 map_free[GP_MAP_CELLS];
	unsigned int nr_notes;
	struct gp_fig_note notes[GP_FIG_NOTES];
};

struct gp_node {
	int nid;

	/* Serialises every call into bfc, and the publication of blocks. */
	struct mutex lock;
	struct bfc *bfc;
	struct gp_figures fig;		/* of bfc, under lock too */
	unsigned long nr_blocks;	/* published blocks */

	/* Held by the one task growing the sub-pool (never under lock). */
	struct mutex grow_lock;
	unsigned long next_grow_blocks;	/* next region size (doubles) */

	struct gp_block *blocks;	/* cap_blocks entries, fixed at load */
	unsigned long cap_blocks;

	/* Lists of released chunks and the counters; never sleep under it. */
	spinlock_t stat_lock;
	struct list_head dirty;		/* released, to be checked and zeroed */
	struct list_head quarantine;	/* released, still pinned by others */
	struct gp_counters c;
	/*
	 * Chunks that have left zeroing (returned to bfc, or quarantined),
	 * ever: an allocation waits until it reaches what it was plus
	 * c.zeroing_chunks when it looked, so each wait has an end however
	 * busy the pool is.
	 */
	u64 zero_done;
	/*
	 * The bytes of c.zeroing_bytes and c.quarantined_bytes by cell of the
	 * /proc occupancy map (GP_MAP_CELLS equal parts of the node's offset
	 * space, cap_blocks blocks): kept with them, so that drawing the map
	 * walks no list under stat_lock.
	 */
	u64 map_zeroing[GP_MAP_CELLS];
	u64 map_quarantined[GP_MAP_CELLS];

	/*
	 * Where blocks are folios (gp_pmd_maps()), one refcount serves the
	 * chunks of a whole block.  Read for as long as a mapping takes its
	 * page references (gp_map_begin()), written while the zeroing worker
	 * reads a folio's counts: see gp_chunk_held_elsewhere().
	 */
	struct rw_semaphore map_lock;

	wait_queue_head_t zero_wait;	/* allocations waiting for zero_done */
	struct work_struct zero_work;
	struct delayed_work quarantine_work;

	/* What load reserved (for the log line and /proc). */
	unsigned long fallback_blocks;	/* blocks made of smaller orders */
	u64 reserve_ns;
};

static inline void gp_node_lock(struct gp_node *n)
{
	mutex_lock(&n->lock);
}

/* Around taking the page references of a mapping (gp_node.map_lock). */
static inline void gp_map_begin(struct gp_node *n)
{
	if (gp_pmd_maps())
		down_read(&n->map_lock);
}

static inline void gp_map_end(struct gp_node *n)
{
	if (gp_pmd_maps())
		up_read(&n->map_lock);
}

struct gp_cg;
struct cgroup;
struct dmem_cgroup_pool_state;

/* A chunk's charge to cgroups (cgroup.c). */
struct gp_charge {
	struct gp_cg *cg;		/* our table's entry; holds a ref */
	struct dmem_cgroup_pool_state *dmem;	/* the dmem charge, or NULL */
	u64 cgroup_id;			/* cg's cgroup, for tracepoints; 0: none */
};

/* Why a file's last refused ALLOC was refused by a cgroup limit. */
struct gp_denial {
	struct cgroup *cgrp;		/* referenced; NULL: none */
	u64 limit;
	u64 usage;
	u64 chunks;
	u64 denials;
	bool dmem;			/* dmem refused: cgrp is the task's */
	/* dmem refused: the state of the cgroup over its dmem.max
	 * (referenced, until gp_cg_count_denial() or gp_denial_clear()).
	 */
	struct dmem_cgroup_pool_state *dmem_limit;
};

/* 96 bytes: every ALLOC kzallocs one (bh beside kref, where padding was). */
struct gp_chunk {
	struct kref kref;
	bfc_handle_t bh;
	struct gp_node *node;
	struct gp_holder *holder;	/* counted against; holds a ref */
	struct gp_charge charge;	/* its cgroups' */
	u64 offset;			/* in the node's offset space */
	u64 size;			/* bytes, page multiple */
	u64 requested;			/* bytes asked for (bfc's requested) */
	struct list_head link;		/* dirty / quarantine list, when released */
	/* Reclaim.c's, under gp_rc_lock: set while its owner has it idle,
	 * and once asked for and given up, until its last reference goes.
	 */
	struct gp_idle *idle;
};

/* A process's part in reclaim: reclaim.c's, under its gp_rc_lock. */
struct gp_holder_rc {
	u64 idle_bytes;			/* in chunks its files marked idle */
	u64 idle_chunks;
	s64 allowance;			/* bytes it may be asked for (reclaim_rate) */
	unsigned long stamp;		/* jiffies when allowance was last topped up */
	bool primed;			/* allowance set (a new holder's is full) */
};

/*
 * A /dev/gpupool file's part in reclaim: reclaim.c's (under gp_rc_lock,
 * wq aside), embedded in dev.c's per-file state.
 */
struct gp_rc_report;
struct gp_rc_file {
	struct list_head idle;		/* its struct gp_idle, oldest first */
	u64 asked;			/* bytes of them asked back */
	wait_queue_head_t wq;		/* poll(): POLLPRI while asked */
	struct gp_holder *holder;	/* the file's (its reference) */
	struct gp_rc_report *report;	/* its last refused ALLOC's, or NULL */
};

struct gp_holder {
	struct kref kref;
	struct list_head link;		/* on gp_holders, under its mutex */
	struct pid *tgid;
	kuid_t uid;			/* euid of the process when it first opened */
	char comm[TASK_COMM_LEN];
	spinlock_t lock;
	u64 bytes;			/* chunks counting against it */
	u64 chunks;
	struct gp_holder_rc rc;
};

/* main.c: module parameters as the rest of the module sees them. */
extern u64 gp_per_process_limit;
extern u32 gp_policy;		/* BFC_POLICY_* of every sub-pool */
extern unsigned int gp_reclaim_wait_ms;	/* 0: never ask holders */
extern u64 gp_reclaim_rate;	/* bytes/s a holder may be asked; 0: no bound */

/* pool.c: the sub-pools. */
extern unsigned int gp_nr_nodes;
extern struct gp_node **gp_nodes;
extern struct workqueue_struct *gp_wq;

int gp_pool_init(const int *nids, unsigned int nr, u64 pool_size,
		 u64 max_size, bool strict);
void gp_pool_exit(void);
u64 gp_pool_size(void);
u64 gp_pool_max_size(void);
u64 gp_pool_reserve_ns(void);
u64 gp_pool_node_mask(void);
u64 gp_pool_peak_in_use(void);
struct gp_node *gp_pool_node(int nid);
/* A sub-pool's core, for the pool and its self-test alike: exact-size
 * chunks (page granularity, always split), adjacent regions merged.
 */
void gp_pool_bfc_params(struct bfc_params *p, u32 policy);
int gp_pool_alloc(u64 size, int nid, bool strict_node, bool final,
		  struct gp_holder *holder, const struct gp_charge *charge,
		  struct gp_chunk **out);
void gp_pool_refused(u64 size, int nid, struct gp_holder *holder,
		     u64 cgroup_id);
void gp_pool_release_chunk(struct gp_chunk *c);
void gp_pool_count_failure(int nid);
u64 gp_pool_shortfall(u64 size, int nid, bool strict_node);
extern bool gp_dying;		/* unloading: no quarantine recheck queued */

/* pool_stats.c: the pool's figures and /proc's bin table and map. */
void gp_pool_node_stats(struct gp_node *n, struct gpupool_pool_stats *s);
/* A node's figures for /proc's bin table and map (gp_pool_stats()). */
struct gp_map {
	struct gp_figures fig;
	u64 zeroing[GP_MAP_CELLS];
	u64 quarantined[GP_MAP_CELLS];
};
void gp_pool_stats(struct gpupool_pool_stats *total,
		   struct gpupool_pool_stats *nodes, struct gp_map *maps);
void gp_pool_count_limit_denial(void);
void gp_pool_show_bins(struct seq_file *m, const struct gp_map *maps);
void gp_pool_show_map(struct seq_file *m, const struct gp_map *maps);

/* figures.c: the figures of a sub-pool's bfc, kept as chunks change. */
void gp_figures_init(struct gp_figures *f, u64 space);
void gp_map_cells(u64 *cells, u64 space, u64 cell, u64 off, u64 size,
		  int sign);
int gp_fig_add_region(struct gp_figures *f, struct bfc *b, u64 base,
		      u64 size);
void gp_fig_settle(struct gp_figures *f);
int gp_fig_free(struct gp_figures *f, struct bfc *b, bfc_handle_t h,
		u64 addr, u64 size, u64 requested);

/*
 * bfc_alloc() for a sub-pool, noting what it changed for the figures (see
 * struct gp_figures).  Inline, as the rest of ALLOC's path is: the kmod
 * bench holds ALLOC to within 5% of the module before the figures
 * (bench/README.md).
 */
static inline int gp_fig_alloc(struct gp_figures *f, struct bfc *b, u64 size,
			       bfc_handle_t *h, u64 *addr)
{
	struct gp_fig_note *n;
	u64 from;
	int ret;

	ret = bfc_alloc_from(b, size, h, addr, &from);
	if (ret)
		return ret;
	n = &f->notes[f->nr_notes++];
	n->offset = *addr;
	n->size = PAGE_ALIGN(size);
	n->requested = size;
	n->from = from;
	if (f->nr_notes == GP_FIG_NOTES)
		gp_fig_settle(f);
	return 0;
}

/*
 * reserve.c: pages for the pool, block by block; it knows the node's block
 * array, not the pool.
 *
 * The pool never takes a node's free + file-cache pages below this floor:
 * the larger of 4x the node's high watermarks and 1/GP_FLOOR_DIV of its
 * memory.  A reservation (at load or growing) stops there, as if the page
 * allocator had refused, so a pool_size beyond the machine leaves it usable
 * rather than pushing it into the OOM killer.
 */
#define GP_FLOOR_DIV	32

/* One node's reservation in flight (gp_reserve_start() to _finish()). */
struct gp_reserve_work;
struct gp_reservation {
	struct gp_node *node;
	unsigned long first;
	unsigned int nr_work;
	struct gp_reserve_work *w;
	ktime_t start;
};
int gp_reserve_start(struct gp_reservation *r, struct workqueue_struct *wq,
		     struct gp_node *n, unsigned long first, unsigned long count);
unsigned long gp_reserve_finish(struct gp_reservation *r, u64 *ns);
unsigned long gp_reserve_blocks(struct workqueue_struct *wq, struct gp_node *n,
				unsigned long first, unsigned long count);
int gp_reserve_nodes(struct gp_reservation *r, unsigned long want,
		     unsigned long *got, bool *partial);
void gp_release_blocks(struct gp_node *n, unsigned long first,
		       unsigned long count);

static inline struct page *gp_node_page(const struct gp_node *n,
					unsigned long pg)
{
	const struct gp_block *b = &n->blocks[pg / GP_BLOCK_PAGES];
	unsigned long i = pg % GP_BLOCK_PAGES;

	return b->head ? b->head + i : b->pages[i];
}

/* zeroing.c: the zeroing worker and the quarantine (gp_node's works). */
void gp_zero_fn(struct work_struct *work);
void gp_quarantine_fn(struct work_struct *work);

/* c enters (sign > 0) or leaves a state whose cells are these; stat_lock. */
static inline void gp_map_note(struct gp_chunk *c, u64 *cells, int sign)
{
	const struct gp_figures *f = &c->node->fig;

	gp_map_cells(cells, f->space, f->cell, c->offset, c->size, sign);
}

/* chunk.c: chunk references, mappings and exported chunk fds. */
void gp_chunk_get(struct gp_chunk *c);
void gp_chunk_put(struct gp_chunk *c);
int gp_chunk_mmap(struct gp_chunk *c, struct vm_area_struct *vma);
unsigned long gp_chunk_get_unmapped_area(struct gp_chunk *c,
					 struct file *file, unsigned long addr,
					 unsigned long len, unsigned long pgoff,
					 unsigned long flags);
struct file *gp_chunk_file(struct gp_chunk *c, int flags);

static inline unsigned long gp_chunk_pages(const struct gp_chunk *c)
{
	return c->size >> PAGE_SHIFT;
}

static inline struct page *gp_chunk_page(const struct gp_chunk *c,
					 unsigned long i)
{
	return gp_node_page(c->node, (c->offset >> PAGE_SHIFT) + i);
}

/* holder.c: per-process accounting. */
struct gp_holder *gp_holder_get_current(void);
void gp_holder_get(struct gp_holder *h);
void gp_holder_put(struct gp_holder *h);
int gp_holder_charge(struct gp_holder *h, u64 bytes);
void gp_holder_uncharge(struct gp_holder *h, u64 bytes);
void gp_holder_show(struct seq_file *m, bool all, kuid_t uid);

/* cgroup.c: chunks charged to cgroups, per-cgroup limits. */
extern bool gp_cg_dmem;
int gp_cg_init(const char *mode, u64 capacity);
void gp_cg_exit(void);
int gp_cg_charge(u64 size, struct gp_charge *ch, struct gp_denial *d);
void gp_cg_uncharge(struct gp_charge *ch, u64 size);
void gp_cg_count_denial(struct gp_denial *d);
bool gp_cg_charged_under(const struct gp_charge *ch,
			 const struct gp_denial *d);
void gp_denial_clear(struct gp_denial *d);

/* cgroup_limits.c: GPUPOOL_IOC_CGROUP and /proc/gpupool's cgroup lines. */
struct gpupool_cgroup;
int gp_cg_ioctl(struct gpupool_cgroup *arg, const struct gp_denial *d);
void gp_cg_show(struct seq_file *m);

/*
 * reclaim.c: idle chunks, and the asks of a refused ALLOC to their
 * holders.  What an ALLOC that was refused looks for:
 */
struct gp_rc_want {
	u64 size;			/* the ALLOC's, page-rounded */
	u64 need;			/* bytes it lacks (about) */
	int refusal;			/* -ENOMEM (the pool) or -ENOSPC */
	int nid;			/* a strict ALLOC's node, or NUMA_NO_NODE */
	const struct gp_denial *limit;	/* -ENOSPC: the limit that refused */
};
void gp_rc_file_init(struct gp_rc_file *rf, struct gp_holder *h);
void gp_rc_file_exit(struct gp_rc_file *rf);
struct gp_idle *gp_rc_idle_alloc(void);
void gp_rc_idle_free(struct gp_idle *r);
struct gp_idle *gp_rc_enter(struct gp_rc_file *rf, struct gp_chunk *c,
			    u64 handle, struct gp_idle *spare);
void gp_rc_leave(struct gp_chunk *c, bool busy);
struct gp_idle *gp_rc_gone(struct gp_chunk *c);
void gp_rc_given(struct gp_idle *r);
bool gp_rc_possible(void);
int gp_rc_ask(struct file *file, struct gp_rc_file *rf,
	      const struct gp_rc_want *w, bool ask);
void gp_rc_result(struct gp_rc_file *rf, int ret);
__poll_t gp_rc_poll(struct file *file, struct gp_rc_file *rf,
		    struct poll_table_struct *pt);
struct gpupool_asked;
struct gpupool_ask_report;
int gp_rc_asked(struct gp_rc_file *rf, struct gpupool_asked *q);
int gp_rc_report(struct gp_rc_file *rf, struct gpupool_ask_report *q);
u64 gp_rc_holder_idle(struct gp_holder *h);
/* The pool's reclaim figures, for /proc/gpupool. */
struct gp_rc_figures {
	u64 idle_bytes;			/* in chunks marked idle, now */
	u64 idle_chunks;
	u64 asks;			/* ALLOCs that asked holders */
	u64 holders_asked;		/* holders asked, over all asks */
	u64 asked_bytes;
	u64 given_bytes;		/* asked chunks freed in time */
	u64 busy_bytes;			/* asked chunks marked busy instead */
	u64 timeouts;			/* waits that ended at reclaim_wait_ms */
	u64 served;			/* retries after a wait that were served */
	u64 throttled;			/* holders not asked: reclaim_rate */
	u64 wait_ns;			/* time ALLOCs waited, all together */
};
void gp_rc_figures(struct gp_rc_figures *f);

/* dev.c: the /dev/gpupool miscdevice. */
int gpupool_dev_init(umode_t mode);
void gpupool_dev_exit(void);

/* proc.c: /proc/gpupool. */
int gpupool_proc_init(void);
void gpupool_proc_exit(void);

/* selftest.c: the BFC core's randomized check, in kernel context. */
int gp_selftest(void);

#endif /* GPUPOOL_KMOD_H */
