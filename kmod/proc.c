// SPDX-License-Identifier: GPL-2.0
/*
 * proc.c - /proc/gpupool: the pool's state for anyone to read, in the style
 * of /proc/meminfo (`Key: value`, sizes in kB).  Every field is described
 * in docs/proc-gpupool.md.  Field names are ABI: add, never rename.
 *
 * Holder lines name other users' processes (pid and command, as
 * /proc/<pid>/stat does); a reader whose file was opened without
 * CAP_SYS_ADMIN sees only the holders running under its own euid.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/gpupool.h>

#include "gpupool.h"

static void gp_show_kb(struct seq_file *m, const char *prefix,
		       const char *key, u64 bytes)
{
	seq_printf(m, "%s%s:", prefix, key);
	seq_printf(m, "%*llu kB\n", (int)(24 - strlen(prefix) - strlen(key)),
		   bytes >> 10);
}

static void gp_show_num(struct seq_file *m, const char *prefix,
			const char *key, u64 val)
{
	seq_printf(m, "%s%s:", prefix, key);
	seq_printf(m, "%*llu\n", (int)(24 - strlen(prefix) - strlen(key)), val);
}

/* The figures of one sub-pool or of the whole pool (prefix "" or "NodeN"). */
static void gp_show_pool(struct seq_file *m, const char *prefix,
			 const struct gpupool_pool_stats *s)
{
	gp_show_kb(m, prefix, "PoolTotal", s->total);
	gp_show_kb(m, prefix, "PoolFree", s->free);
	gp_show_kb(m, prefix, "InUse", s->in_use);
	gp_show_kb(m, prefix, "PeakInUse", s->peak_in_use);
	gp_show_kb(m, prefix, "Zeroing", s->zeroing);
	gp_show_kb(m, prefix, "Quarantined", s->quarantined);
	gp_show_kb(m, prefix, "LargestFree", s->largest_free);
	seq_printf(m, "%sFragmentation:%*u ppm\n", prefix,
		   (int)(24 - strlen(prefix) - strlen("Fragmentation")),
		   s->fragmentation_ppm);
	gp_show_num(m, prefix, "ChunksInUse", s->chunks_in_use);
	gp_show_num(m, prefix, "ChunksFree", s->chunks_free);
	gp_show_num(m, prefix, "ChunksZeroing", s->chunks_zeroing);
	gp_show_num(m, prefix, "ChunksQuarantined", s->chunks_quarantined);
	gp_show_num(m, prefix, "Allocs", s->allocs);
	gp_show_num(m, prefix, "Frees", s->frees);
	gp_show_num(m, prefix, "FailedAllocs", s->failed_allocs);
	gp_show_num(m, prefix, "Growths", s->growths);
}

/* Idle chunks and the asks for them (reclaim.c's figures, ABI 1.2). */
static void gp_show_reclaim(struct seq_file *m)
{
	struct gp_rc_figures f;

	gp_rc_figures(&f);
	gp_show_kb(m, "", "Idle", f.idle_bytes);
	gp_show_num(m, "", "ChunksIdle", f.idle_chunks);
	gp_show_num(m, "", "ReclaimAsks", f.asks);
	gp_show_num(m, "", "ReclaimHoldersAsked", f.holders_asked);
	gp_show_kb(m, "", "ReclaimAsked", f.asked_bytes);
	gp_show_kb(m, "", "ReclaimGiven", f.given_bytes);
	gp_show_kb(m, "", "ReclaimBusy", f.busy_bytes);
	gp_show_num(m, "", "ReclaimTimeouts", f.timeouts);
	gp_show_num(m, "", "ReclaimServed", f.served);
	gp_show_num(m, "", "ReclaimThrottled", f.throttled);
	seq_printf(m, "ReclaimWaitTime:%*llu ms\n", 9,
		   div_u64(f.wait_ns, NSEC_PER_MSEC));
	seq_printf(m, "ReclaimWait:%*u ms\n", 13,
		   READ_ONCE(gp_reclaim_wait_ms));
	gp_show_kb(m, "", "ReclaimRate", gp_reclaim_rate);
}

static int gpupool_proc_show(struct seq_file *m, void *v)
{
	struct gpupool_pool_stats total, *nodes;
	const struct cred *cred = m->file->f_cred;
	struct gp_map *maps;
	char prefix[16];
	unsigned int i;

	nodes = kcalloc(gp_nr_nodes, sizeof(*nodes), GFP_KERNEL);
	maps = kvmalloc_array(gp_nr_nodes, sizeof(*maps), GFP_KERNEL);
	if (!nodes || !maps) {
		kfree(nodes);
		kvfree(maps);
		return -ENOMEM;
	}
	/* Counters, bins and map of a node: one hold of its lock. */
	gp_pool_stats(&total, nodes, maps);

	seq_printf(m, "AbiVersion:%*u.%u\n", 13, GPUPOOL_ABI_MAJOR,
		   GPUPOOL_ABI_MINOR);
	gp_show_pool(m, "", &total);
	gp_show_num(m, "", "LimitDenials", total.limit_denials);
	gp_show_kb(m, "", "PoolLimit", gp_pool_max_size());
	gp_show_kb(m, "", "PerProcessLimit", READ_ONCE(gp_per_process_limit));
	seq_printf(m, "ReserveTime:%*llu ms\n", 13,
		   div_u64(gp_pool_reserve_ns(), NSEC_PER_MSEC));
	gp_show_num(m, "", "Nodes", gp_nr_nodes);
	gp_show_num(m, "", "HugeMaps", gp_folio_blocks());
	gp_show_kb(m, "", "PageSize", PAGE_SIZE);
	gp_show_kb(m, "", "HugeMapSize",
		   gp_folio_blocks() ? 1ULL << GP_HUGE_ENTRY_SHIFT : PAGE_SIZE);
	gp_show_reclaim(m);

	for (i = 0; i < gp_nr_nodes; i++) {
		snprintf(prefix, sizeof(prefix), "Node%u", nodes[i].node);
		gp_show_pool(m, prefix, &nodes[i]);
		seq_printf(m, "%sReserveTime:%*llu ms\n", prefix,
			   (int)(24 - strlen(prefix) - strlen("ReserveTime")),
			   div_u64(gp_nodes[i]->reserve_ns, NSEC_PER_MSEC));
	}
	kfree(nodes);

	gp_holder_show(m, file_ns_capable(m->file, &init_user_ns,
					  CAP_SYS_ADMIN), cred->euid);
	gp_cg_show(m);
	gp_pool_show_bins(m, maps);
	gp_pool_show_map(m, maps);
	kvfree(maps);
	return 0;
}

/*
 * seq_file runs show() again, from the start, whenever the text outgrows
 * its buffer: start with room for the figures, the bins and map of every
 * node and a thousand holder lines, not proc_create_single()'s one page.
 * No part of show() looks at chunks: the bins and the map are figures the
 * pool keeps as it goes (figures.c).
 */
#define GP_PROC_BUF	SZ_64K

static int gpupool_proc_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, gpupool_proc_show, NULL, GP_PROC_BUF);
}

static const struct proc_ops gpupool_proc_ops = {
	.proc_open	= gpupool_proc_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

int gpupool_proc_init(void)
{
	if (!proc_create(GPUPOOL_NAME, 0444, NULL, &gpupool_proc_ops))
		return -ENOMEM;
	return 0;
}

void gpupool_proc_exit(void)
{
	remove_proc_entry(GPUPOOL_NAME, NULL);
}
