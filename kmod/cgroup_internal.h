/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup_internal.h - private to cgroup.c and cgroup_limits.c: the table
 * of cgroups that have been charged or limited (cgroup.c's), and what the
 * limit interface (cgroup_limits.c) reads and changes of it.  The table's
 * design and its locking: cgroup.c.
 */
#ifndef GPUPOOL_KMOD_CGROUP_INTERNAL_H
#define GPUPOOL_KMOD_CGROUP_INTERNAL_H

#include <linux/hashtable.h>
#include <linux/spinlock.h>
#include <linux/types.h>

struct cgroup;

/* A cgroup's entry in the table. */
struct gp_cg {
	/* In gp_cg_hash by cgrp; or on a list of entries made or freed. */
	struct hlist_node hnode;
	struct cgroup *cgrp;		/* referenced */
	u64 id;				/* cgroup_id(cgrp), for tracepoints */
	struct gp_cg *parent;		/* referenced (counted in its refs) */
	u64 bytes;			/* charged here and below */
	u64 chunks;
	u64 limit;			/* GPUPOOL_NO_LIMIT: none */
	u64 denials;			/* ALLOCs this limit refused */
	/*
	 * Chunks charged here directly, child entries, 1 while kept (until
	 * the prune sees the cgroup removed), 1 while limited, and the
	 * transient holds of an ALLOC, an ioctl or a /proc reader.
	 */
	unsigned int refs;
	bool kept;
};

#define GP_CG_HASH_BITS	10

/* Guards the table and every entry's fields; never sleep under it. */
extern spinlock_t gp_cg_lock;
extern struct hlist_head gp_cg_hash[1 << GP_CG_HASH_BITS];
extern unsigned long gp_cg_nr;		/* entries in gp_cg_hash */
extern u64 gp_cg_denials;		/* every refusal, for /proc */

struct gp_cg *gp_cg_get(struct cgroup *cgrp);
void gp_cg_put(struct gp_cg *e);
void gp_cg_put_locked(struct gp_cg *e);
void gp_cg_prune(void);

#endif /* GPUPOOL_KMOD_CGROUP_INTERNAL_H */
