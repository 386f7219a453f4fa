// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup_limits.c - the per-cgroup limits as users see and set them:
 * GPUPOOL_IOC_CGROUP (a cgroup's figures, setting and clearing its limit
 * in the module's table, a file's last refusal) and /proc/gpupool's
 * cgroup lines.  The table, the charges and the locking are cgroup.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/hashtable.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/gpupool.h>

#include "gpupool.h"
#include "cgroup_internal.h"

/* GPUPOOL_IOC_CGROUP ------------------------------------------------------ */

/* cgrp's path as the calling task's cgroup namespace sees it. */
static int gp_cg_path(struct cgroup *cgrp, char *buf, size_t len)
{
	int ret = cgroup_path_ns(cgrp, buf, len, current->nsproxy->cgroup_ns);

	if (ret < 0)
		return ret;
	return ret >= len ? -ENAMETOOLONG : 0;
}

static int gp_cg_copy_path(struct cgroup *cgrp, struct gpupool_cgroup *arg)
{
	char *buf;
	int ret;

	if (!arg->path_ptr)
		return 0;
	if (!arg->path_len)
		return -ENAMETOOLONG;
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = gp_cg_path(cgrp, buf, PATH_MAX);
	if (!ret && strlen(buf) >= arg->path_len)
		ret = -ENAMETOOLONG;
	if (!ret && copy_to_user(u64_to_user_ptr(arg->path_ptr), buf,
				 strlen(buf) + 1))
		ret = -EFAULT;
	kfree(buf);
	return ret;
}

static void gp_cg_fill(struct gp_cg *e, struct gpupool_cgroup *arg)
{
	lockdep_assert_held(&gp_cg_lock);
	arg->limit = e->limit;
	arg->usage = e->bytes;
	arg->chunks = e->chunks;
	arg->denials = e->denials;
}

/* A cgroup's figures, or a change of its limit (arg->flags). */
static int gp_cg_limit(struct gpupool_cgroup *arg)
{
	u32 op = arg->flags & (GPUPOOL_CGROUP_SET_LIMIT |
			       GPUPOOL_CGROUP_CLEAR_LIMIT);
	struct cgroup *cgrp;
	struct gp_cg *e;
	int ret;

	if (op == (GPUPOOL_CGROUP_SET_LIMIT | GPUPOOL_CGROUP_CLEAR_LIMIT))
		return -EINVAL;
	if (op == GPUPOOL_CGROUP_SET_LIMIT &&
	    (!arg->limit || arg->limit == GPUPOOL_NO_LIMIT))
		return -EINVAL;
	if (op != GPUPOOL_CGROUP_SET_LIMIT && arg->limit)
		return -EINVAL;
	if (op && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (op && gp_cg_dmem)
		return -EOPNOTSUPP;

	cgrp = cgroup_get_from_fd(arg->cgroup_fd);
	if (IS_ERR(cgrp))
		return PTR_ERR(cgrp);
	/* What can fail comes first: a failed call changes nothing. */
	arg->cgroup_id = cgroup_id(cgrp);
	ret = gp_cg_copy_path(cgrp, arg);
	e = ret ? NULL : gp_cg_get(cgrp);
	if (!e) {
		cgroup_put(cgrp);
		return ret ?: -ENOMEM;
	}
	spin_lock(&gp_cg_lock);
	if (op == GPUPOOL_CGROUP_SET_LIMIT) {
		if (e->limit == GPUPOOL_NO_LIMIT)
			e->refs++;
		e->limit = arg->limit;
	} else if (op == GPUPOOL_CGROUP_CLEAR_LIMIT &&
		   e->limit != GPUPOOL_NO_LIMIT) {
		e->limit = GPUPOOL_NO_LIMIT;
		e->refs--;	/* gp_cg_get()'s is still held */
	}
	gp_cg_fill(e, arg);
	spin_unlock(&gp_cg_lock);
	gp_cg_put(e);
	cgroup_put(cgrp);
	if (op == GPUPOOL_CGROUP_SET_LIMIT)
		pr_info("cgroup %llu: limit set to %llu kB by pid %d\n",
			arg->cgroup_id, arg->limit >> 10,
			task_tgid_vnr(current));
	else if (op)
		pr_info("cgroup %llu: limit cleared by pid %d\n",
			arg->cgroup_id, task_tgid_vnr(current));
	return ret;
}

/* The refusal this file remembers. */
static int gp_cg_last_denial(const struct gp_denial *d,
			     struct gpupool_cgroup *arg)
{
	if (arg->cgroup_fd != -1 || arg->limit)
		return -EINVAL;
	if (!d->cgrp)
		return -ENOENT;
	arg->limit = d->limit;
	arg->usage = d->usage;
	arg->chunks = d->chunks;
	arg->denials = d->denials;
	arg->cgroup_id = cgroup_id(d->cgrp);
	return gp_cg_copy_path(d->cgrp, arg);
}

/* d: a copy of the file's last refusal (with a cgroup reference). */
int gp_cg_ioctl(struct gpupool_cgroup *arg, const struct gp_denial *d)
{
	int ret;

	if (arg->flags & GPUPOOL_CGROUP_LAST_DENIAL) {
		if (arg->flags != GPUPOOL_CGROUP_LAST_DENIAL)
			return -EINVAL;
		ret = gp_cg_last_denial(d, arg);
		if (d->dmem)
			arg->flags |= GPUPOOL_CGROUP_DMEM;
		return ret;
	}
	gp_cg_prune();
	ret = gp_cg_limit(arg);
	if (gp_cg_dmem) {
		arg->flags |= GPUPOOL_CGROUP_DMEM;
		arg->limit = GPUPOOL_NO_LIMIT;
	}
	return ret;
}

/* /proc/gpupool ----------------------------------------------------------- */

struct gp_cg_row {
	struct gp_cg *e;		/* referenced */
	u64 bytes, chunks, limit, denials;
	char *path;
};

static int gp_cg_row_cmp(const void *a, const void *b)
{
	const struct gp_cg_row *x = a, *y = b;

	return strcmp(x->path ?: "", y->path ?: "");
}

/* The rows to show: cgroups with chunks charged or a limit, referenced. */
static struct gp_cg_row *gp_cg_rows(unsigned int *nr)
{
	struct gp_cg_row *rows;
	unsigned int n = 0, cap;
	unsigned int bkt;
	struct gp_cg *e;

	spin_lock(&gp_cg_lock);
	cap = gp_cg_nr;
	spin_unlock(&gp_cg_lock);
	rows = kvcalloc(cap + 1, sizeof(*rows), GFP_KERNEL);
	if (!rows)
		return NULL;
	spin_lock(&gp_cg_lock);
	hash_for_each(gp_cg_hash, bkt, e, hnode) {
		if (n > cap)
			break;		/* grown meanwhile: a later read sees it */
		if (!e->chunks && e->limit == GPUPOOL_NO_LIMIT)
			continue;
		e->refs++;
		rows[n].e = e;
		rows[n].bytes = e->bytes;
		rows[n].chunks = e->chunks;
		rows[n].limit = e->limit;
		rows[n].denials = e->denials;
		n++;
	}
	spin_unlock(&gp_cg_lock);
	*nr = n;
	return rows;
}

/*
 * The cgroup lines of /proc/gpupool:
 *	CgroupLimits: module|dmem
 *	CgroupDenials: N
 *	Cgroup: <kB> <chunks> <limit kB or -> <denials> <path>
 * one per cgroup with chunks charged or a limit, sorted by path, paths as
 * the reader's cgroup namespace sees them (as /proc/<pid>/cgroup shows
 * them), escaped as Holder lines' commands are.  Figures are a cgroup's
 * own and its descendants'.
 */
void gp_cg_show(struct seq_file *m)
{
	struct gp_cg_row *rows;
	unsigned int i, nr = 0;
	u64 denials;
	char *buf;

	gp_cg_prune();
	spin_lock(&gp_cg_lock);
	denials = gp_cg_denials;
	spin_unlock(&gp_cg_lock);
	seq_printf(m, "CgroupLimits:%*s\n", 12, gp_cg_dmem ? "dmem" : "module");
	seq_printf(m, "CgroupDenials:%*llu\n", 11, denials);

	rows = gp_cg_rows(&nr);
	buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!rows || !buf)
		goto out;
	for (i = 0; i < nr; i++)
		if (!gp_cg_path(rows[i].e->cgrp, buf, PATH_MAX))
			rows[i].path = kstrdup(buf, GFP_KERNEL);
	sort(rows, nr, sizeof(*rows), gp_cg_row_cmp, NULL);
	for (i = 0; i < nr; i++) {
		if (!rows[i].path)
			continue;	/* out of memory, or outside the ns */
		seq_printf(m, "Cgroup: %llu %llu ", rows[i].bytes >> 10,
			   rows[i].chunks);
		if (rows[i].limit == GPUPOOL_NO_LIMIT)
			seq_puts(m, "- ");
		else
			seq_printf(m, "%llu ", rows[i].limit >> 10);
		seq_printf(m, "%llu ", rows[i].denials);
		seq_escape(m, rows[i].path, "\n\\");
		seq_putc(m, '\n');
	}
out:
	kfree(buf);
	if (rows) {
		spin_lock(&gp_cg_lock);
		for (i = 0; i < nr; i++)
			gp_cg_put_locked(rows[i].e);
		spin_unlock(&gp_cg_lock);
		for (i = 0; i < nr; i++)
			kfree(rows[i].path);
		kvfree(rows);
	}
}
