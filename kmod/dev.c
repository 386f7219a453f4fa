// SPDX-License-Identifier: GPL-2.0
/*
 * dev.c - the /dev/gpupool miscdevice: per-file state, ioctls, mmap.
 *
 * Each open file has its own table of chunks (an xarray: handle id ->
 * chunk, holding the owner's reference).  A handle is id << PAGE_SHIFT, the
 * mmap offset of the chunk; ids are per file and allocated cyclically, so a
 * handle names nothing in another file and a freed handle is not soon
 * reused.  release() drops every owner reference (also when the process
 * dies).
 *
 * Each command has one short handler: copy the argument into a zeroed
 * struct, validate (unknown flag bits and non-zero reserved fields give
 * -EINVAL), act, copy back.  Unknown commands give -ENOTTY.
 *
 * Races: a lookup takes its chunk reference under the xarray lock, and FREE
 * erases under the same lock before dropping the owner's reference, so a
 * concurrent mmap or EXPORT of the same handle either gets its own
 * reference first (the mapping/fd keeps the chunk) or finds nothing.
 * IDLE marks a chunk under the same lock, with the chunk still in the
 * table, and whatever takes a chunk out of the table takes it out of
 * idleness before dropping the owner's reference (gp_file_drop()), so
 * a chunk freed while being marked idle is never left marked.
 *
 * An ALLOC refused by the pool or a cgroup limit asks other files for
 * their idle chunks, waits, and tries once more (reclaim.c has the rules;
 * gp_alloc_refused() the steps), off the path of an ALLOC served at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/numa.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/topology.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <linux/gpupool.h>

#include "compat.h"
#include "gpupool.h"

/* Handle ids: 1..GP_MAX_ID, so that handles (id << PAGE_SHIFT) stay
 * positive as off_t.
 */
#define GP_MAX_ID	INT_MAX

struct gp_file {
	struct xarray chunks;		/* id -> struct gp_chunk (owner ref) */
	u32 next_id;			/* the next handle id to try */
	struct gp_holder *holder;
	spinlock_t denial_lock;
	struct gp_denial denial;	/* the last ALLOC a cgroup refused */
	struct gp_rc_file rc;		/* its idle chunks and asks (reclaim.c) */
};

static bool gp_zeroed(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* The chunk with this id in this file, with a new reference; or NULL. */
static struct gp_chunk *gp_file_lookup(struct gp_file *f, unsigned long id)
{
	struct gp_chunk *c;

	if (!id || id > GP_MAX_ID)
		return NULL;
	xa_lock(&f->chunks);
	c = xa_load(&f->chunks, id);
	if (c)
		gp_chunk_get(c);
	xa_unlock(&f->chunks);
	return c;
}

/* A handle's id, or 0 when it cannot be one. */
static unsigned long gp_handle_id(u64 handle)
{
	if (handle & ~PAGE_MASK || (handle >> PAGE_SHIFT) > GP_MAX_ID)
		return 0;
	return handle >> PAGE_SHIFT;
}

/*
 * The owner's reference to c goes, c out of the file's table already: out
 * of idleness first (an asked chunk counts as given back when its last
 * reference goes), then the put.
 */
static void gp_file_drop(struct gp_chunk *c)
{
	gp_rc_leave(c, false);
	gp_chunk_put(c);
}

static long gp_ioctl_version(void __user *uarg)
{
	struct gpupool_version v;

	if (copy_from_user(&v, uarg, sizeof(v)))
		return -EFAULT;
	if (v.flags & ~GPUPOOL_VERSION_VALID_FLAGS)
		return -EINVAL;
	if (v.pad || v.features || !gp_zeroed(v.reserved, sizeof(v.reserved)))
		return -EINVAL;

	memset(&v, 0, sizeof(v));
	v.abi_major = GPUPOOL_ABI_MAJOR;
	v.abi_minor = GPUPOOL_ABI_MINOR;
	v.min_lib_major = GPUPOOL_ABI_MAJOR;
	v.pool_size = gp_pool_size();
	v.granularity = PAGE_SIZE;
	v.nr_nodes = gp_nr_nodes;
	v.node_mask = gp_pool_node_mask();
	v.features = GPUPOOL_FEATURE_CGROUP | GPUPOOL_FEATURE_RECLAIM |
		     (gp_cg_dmem ? GPUPOOL_FEATURE_DMEM : 0);

	if (copy_to_user(uarg, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

/* Remember a cgroup's refusal for GPUPOOL_CGROUP_LAST_DENIAL. */
static void gp_file_note_denial(struct gp_file *f, struct gp_denial *d)
{
	struct gp_denial old;

	spin_lock(&f->denial_lock);
	old = f->denial;
	f->denial = *d;
	spin_unlock(&f->denial_lock);
	gp_denial_clear(&old);
}

/* A cgroup limit refused an ALLOC: counted, said in the log and kept for
 * the file (which takes d's references).
 */
static void gp_alloc_denied(struct gp_file *f, u64 size, struct gp_denial *d)
{
	gp_cg_count_denial(d);
	if (d->dmem)
		pr_info_ratelimited("pid %d (%s): allocation of %llu kB refused by a dmem.max on its cgroup's path\n",
				    task_tgid_vnr(current), current->comm,
				    size >> 10);
	else
		pr_info_ratelimited("pid %d (%s): allocation of %llu kB refused by a cgroup limit (%llu kB, %llu kB in use)\n",
				    task_tgid_vnr(current), current->comm,
				    size >> 10, d->limit >> 10, d->usage >> 10);
	gp_file_note_denial(f, d);
}

/*
 * Charge an ALLOC: the process's allowance (-EDQUOT), then its cgroups'
 * limits (-ENOSPC, d filled: the caller's to count or clear); undone by
 * gp_alloc_uncharge().
 */
static __always_inline int gp_alloc_charge(struct gp_file *f, u64 size,
					    struct gp_charge *ch,
					    struct gp_denial *d)
{
	int ret;

	ret = gp_holder_charge(f->holder, size);
	if (ret)
		return ret;
	ret = gp_cg_charge(size, ch, d);
	if (unlikely(ret))
		gp_holder_uncharge(f->holder, size);
	return ret;
}

static void gp_alloc_uncharge(struct gp_file *f, u64 size,
			      struct gp_charge *ch)
{
	gp_cg_uncharge(ch, size);
	gp_holder_uncharge(f->holder, size);
}

/* One ALLOC as dev.c runs it: the request, and what its tries found. */
struct gp_alloc_req {
	struct gpupool_alloc a;
	bool strict;
	bool final;		/* a refusal is the answer: no ask follows */
	bool by_pool;		/* the pool refused (not a charge) */
	struct gp_denial d;	/* a cgroup limit refused: which */
};

/*
 * One try: charge, then a chunk from the pool (a refusal there counted
 * and traced only when final).  -ENOSPC leaves the refusal in r->d.
 */
static __always_inline int gp_alloc_try(struct gp_file *f,
					struct gp_alloc_req *r,
					struct gp_chunk **c)
{
	u64 size = PAGE_ALIGN(r->a.size);
	struct gp_charge ch;
	int ret;

	ret = gp_alloc_charge(f, size, &ch, &r->d);
	if (unlikely(ret)) {
		if (ret == -ENOMEM)	/* more than anyone can hold */
			gp_pool_count_failure(r->strict ? r->a.node :
					      numa_node_id());
		return ret;
	}
	ret = gp_pool_alloc(r->a.size, r->strict ? r->a.node : numa_node_id(),
			    r->strict, r->final, f->holder, &ch, c);
	if (unlikely(ret)) {
		gp_alloc_uncharge(f, size, &ch);
		r->by_pool = ret == -ENOMEM;
	}
	return ret;
}

/* What an ALLOC refused (ret) looks for among other files' idle chunks. */
static void gp_alloc_want(const struct gp_alloc_req *r, int ret,
			  struct gp_rc_want *w)
{
	u64 size = PAGE_ALIGN(r->a.size);

	w->size = size;
	w->refusal = ret;
	w->nid = r->strict ? (int)r->a.node : NUMA_NO_NODE;
	w->limit = &r->d;
	if (ret == -ENOMEM)
		w->need = gp_pool_shortfall(size, w->nid, r->strict);
	else if (r->d.dmem)	/* dmem does not say by how much */
		w->need = size;
	else if (r->d.limit >= size)
		w->need = r->d.usage + size - r->d.limit;
	else			/* the limit never holds it: ask nothing */
		w->need = U64_MAX;
}

/*
 * The ALLOC's first try was refused (ret).  Unless that is the answer
 * (not the pool's or a cgroup limit's refusal, GPUPOOL_ALLOC_NO_RECLAIM,
 * nothing idle anywhere: r->final), ask other files for idle chunks,
 * wait, and try once more.  What was found and asked is the file's
 * report either way.  0 with the chunk, or the refusal that stands
 * (counted and said, as for any ALLOC).
 */
static noinline int gp_alloc_refused(struct file *file, struct gp_file *f,
				     struct gp_alloc_req *r, int ret,
				     struct gp_chunk **c)
{
	struct gp_rc_want w;
	int asked;

	if (ret == -ENOSPC || (ret == -ENOMEM && r->by_pool)) {
		gp_alloc_want(r, ret, &w);
		asked = gp_rc_ask(file, &f->rc, &w, !r->final);
		if (asked == -ENOENT) {
			/* Nothing asked: the first refusal stands (the
			 * pool's counted already when it was final).
			 */
			if (r->by_pool && !r->final)
				gp_pool_refused(r->a.size, r->strict ?
						r->a.node : numa_node_id(),
						f->holder, 0);
		} else {
			if (ret == -ENOSPC)
				gp_denial_clear(&r->d);
			ret = asked;	/* -EINTR: killed while waiting */
			if (!ret) {
				/* One more try, whose refusal stands. */
				r->final = true;
				r->by_pool = false;
				ret = gp_alloc_try(f, r, c);
			}
		}
		gp_rc_result(&f->rc, ret);
	}
	if (ret == -ENOSPC)
		gp_alloc_denied(f, PAGE_ALIGN(r->a.size), &r->d);
	return ret;
}

/*
 * Store c under the file's next handle id, into *id.  Ids count up from 1
 * and wrap after GP_MAX_ID, stepping over those still held, so that a
 * freed handle is not soon given again: what xa_alloc_cyclic() does, but
 * with xa_insert() at a known index instead of its search for a free slot
 * (and without the free-slot marks every store of an allocating xarray
 * keeps up), the longest step of an ALLOC.  Fewer ids are held than
 * exist, so the loop ends.
 */
static __always_inline int gp_file_insert(struct gp_file *f,
					  struct gp_chunk *c, u32 *id)
{
	int ret;

	xa_lock(&f->chunks);
	do {
		*id = f->next_id;
		f->next_id = *id >= GP_MAX_ID ? 1 : *id + 1;
		ret = __xa_insert(&f->chunks, *id, c, GFP_KERNEL);
	} while (ret == -EBUSY);
	xa_unlock(&f->chunks);
	return ret;
}

/* An ALLOC's arguments checked, r->strict set; 0 or its refusal. */
static __always_inline int gp_alloc_check(struct gp_alloc_req *r)
{
	if (r->a.flags & ~GPUPOOL_ALLOC_VALID_FLAGS)
		return -EINVAL;
	if (r->a.pad || !gp_zeroed(r->a.reserved, sizeof(r->a.reserved)))
		return -EINVAL;
	r->strict = r->a.flags & GPUPOOL_ALLOC_NODE;
	if (!r->strict && r->a.node)
		return -EINVAL;
	if (r->strict && r->a.node >= GP_MAX_NID)
		return -ENODEV;
	if (!r->a.size)
		return -EINVAL;
	if (r->a.size > U64_MAX - PAGE_SIZE) {
		/* Rounding would overflow: no pool holds it. */
		gp_pool_count_failure(r->strict ? r->a.node : numa_node_id());
		return -ENOMEM;
	}
	return 0;
}

/*
 * Inlined into gp_ioctl() with its charge, whatever the compiler's
 * stack-frame heuristics would choose: ALLOC is the ioctl users wait on,
 * and inlined, its path makes no call that the module made before chunks
 * were charged to cgroups but gp_cg_charge() and its lock (section 5 of
 * the module benchmark, bench/README.md, measures what they add).
 */
static __always_inline long gp_ioctl_alloc(struct file *file,
					   struct gp_file *f,
					   void __user *uarg)
{
	struct gp_alloc_req r;
	struct gp_chunk *c;
	u32 id;
	int ret;

	if (copy_from_user(&r.a, uarg, sizeof(r.a)))
		return -EFAULT;
	ret = gp_alloc_check(&r);
	if (ret)
		return ret;
	r.final = (r.a.flags & GPUPOOL_ALLOC_NO_RECLAIM) || !gp_rc_possible();
	r.by_pool = false;
	ret = gp_alloc_try(f, &r, &c);
	if (unlikely(ret)) {
		ret = gp_alloc_refused(file, f, &r, ret, &c);
		if (ret)
			return ret;
	}

	/* Read c before it is in the table: from then on a FREE of a guessed
	 * handle, on another thread, may drop the only reference.
	 */
	r.a.chunk_size = c->size;
	r.a.chunk_node = c->node->nid;
	ret = gp_file_insert(f, c, &id);
	if (ret)
		goto out_put_chunk;

	r.a.handle = (u64)id << PAGE_SHIFT;
	if (copy_to_user(uarg, &r.a, sizeof(r.a))) {
		ret = -EFAULT;
		goto out_erase;
	}
	return 0;

out_erase:
	/* Gone only if still ours: a guessed FREE may have raced us (and a
	 * guessed IDLE marked it: gp_file_drop() undoes that).
	 */
	if (xa_cmpxchg(&f->chunks, id, c, NULL, GFP_KERNEL) == c)
		gp_file_drop(c);
	return ret;
out_put_chunk:
	gp_chunk_put(c);
	return ret;
}

static long gp_ioctl_free(struct gp_file *f, void __user *uarg)
{
	struct gpupool_free fr;
	struct gp_chunk *c;
	unsigned long id;

	if (copy_from_user(&fr, uarg, sizeof(fr)))
		return -EFAULT;
	if (fr.flags & ~GPUPOOL_FREE_VALID_FLAGS)
		return -EINVAL;
	if (fr.pad || !gp_zeroed(fr.reserved, sizeof(fr.reserved)))
		return -EINVAL;
	id = gp_handle_id(fr.handle);
	if (!id)
		return -EINVAL;

	c = xa_erase(&f->chunks, id);
	if (!c)
		return -EINVAL;
	gp_file_drop(c);
	return 0;
}

/* Mark a chunk of the file idle, or busy again (GPUPOOL_IOC_IDLE). */
static long gp_ioctl_idle(struct gp_file *f, void __user *uarg)
{
	struct gp_idle *r = NULL;
	struct gpupool_idle in;
	struct gp_chunk *c;
	unsigned long id;
	bool busy;

	if (copy_from_user(&in, uarg, sizeof(in)))
		return -EFAULT;
	if (in.flags & ~GPUPOOL_IDLE_VALID_FLAGS)
		return -EINVAL;
	if (in.pad || !gp_zeroed(in.reserved, sizeof(in.reserved)))
		return -EINVAL;
	id = gp_handle_id(in.handle);
	if (!id)
		return -EINVAL;
	busy = in.flags & GPUPOOL_IDLE_BUSY;
	if (!busy) {
		r = gp_rc_idle_alloc();
		if (!r)
			return -ENOMEM;
	}

	/* Under the table's lock: the chunk stays the file's meanwhile. */
	xa_lock(&f->chunks);
	c = xa_load(&f->chunks, id);
	if (c && busy)
		gp_rc_leave(c, true);
	else if (c)
		r = gp_rc_enter(&f->rc, c, in.handle, r);
	xa_unlock(&f->chunks);

	gp_rc_idle_free(r);	/* unused: c absent or idle already */
	return c ? 0 : -EINVAL;
}

/* What the module asks this file to give back (GPUPOOL_IOC_ASKED). */
static long gp_ioctl_asked(struct gp_file *f, void __user *uarg)
{
	struct gpupool_asked q;
	int ret;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (q.flags & ~GPUPOOL_ASKED_VALID_FLAGS)
		return -EINVAL;
	if (!gp_zeroed(q.reserved, sizeof(q.reserved)))
		return -EINVAL;
	if (q.nr && !q.handles_ptr)
		return -EINVAL;
	ret = gp_rc_asked(&f->rc, &q);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

/* What the last refused ALLOC asked of others (GPUPOOL_IOC_ASK_REPORT). */
static long gp_ioctl_ask_report(struct gp_file *f, void __user *uarg)
{
	struct gpupool_ask_report q;
	int ret;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (q.flags & ~GPUPOOL_ASK_REPORT_VALID_FLAGS)
		return -EINVAL;
	if (!gp_zeroed(q.reserved, sizeof(q.reserved)))
		return -EINVAL;
	if (q.nr && !q.holders_ptr)
		return -EINVAL;
	ret = gp_rc_report(&f->rc, &q);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

static long gp_ioctl_stats(void __user *uarg)
{
	struct gpupool_pool_stats *nodes;
	struct gpupool_stats st;
	long ret = 0;
	u32 nr;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return -EFAULT;
	if (st.flags & ~GPUPOOL_STATS_VALID_FLAGS)
		return -EINVAL;
	if (!gp_zeroed(st.reserved, sizeof(st.reserved)))
		return -EINVAL;
	if (st.nr_nodes && !st.nodes_ptr)
		return -EINVAL;

	nodes = kcalloc(gp_nr_nodes, sizeof(*nodes), GFP_KERNEL);
	if (!nodes)
		return -ENOMEM;
	gp_pool_stats(&st.total, nodes, NULL);
	nr = min(st.nr_nodes, gp_nr_nodes);
	if (nr && copy_to_user(u64_to_user_ptr(st.nodes_ptr), nodes,
			       nr * sizeof(*nodes))) {
		ret = -EFAULT;
		goto out_free;
	}
	st.nr_nodes = gp_nr_nodes;
	st.reserve_time_ns = gp_pool_reserve_ns();
	st.max_size = gp_pool_max_size();
	if (copy_to_user(uarg, &st, sizeof(st)))
		ret = -EFAULT;
out_free:
	kfree(nodes);
	return ret;
}

static long gp_ioctl_export(struct file *file, struct gp_file *f,
			    void __user *uarg)
{
	struct gpupool_export e;
	struct gp_chunk *c;
	struct file *cf;
	int fd, flags;
	long ret;

	if (copy_from_user(&e, uarg, sizeof(e)))
		return -EFAULT;
	if (e.flags & ~GPUPOOL_EXPORT_VALID_FLAGS)
		return -EINVAL;
	if (!gp_zeroed(e.reserved, sizeof(e.reserved)))
		return -EINVAL;

	c = gp_file_lookup(f, gp_handle_id(e.handle));
	if (!c)
		return -EINVAL;

	flags = (file->f_flags & O_ACCMODE) |
		(e.flags & GPUPOOL_EXPORT_CLOEXEC ? O_CLOEXEC : 0);
	fd = get_unused_fd_flags(flags);
	if (fd < 0) {
		ret = fd;
		goto out_put_chunk;
	}
	cf = gp_chunk_file(c, flags);
	if (IS_ERR(cf)) {
		ret = PTR_ERR(cf);
		goto out_put_fd;
	}
	/* From here the file owns the chunk reference. */
	e.fd = fd;
	if (copy_to_user(uarg, &e, sizeof(e))) {
		fput(cf);
		put_unused_fd(fd);
		return -EFAULT;
	}
	fd_install(fd, cf);
	return 0;

out_put_fd:
	put_unused_fd(fd);
out_put_chunk:
	gp_chunk_put(c);
	return ret;
}

static long gp_ioctl_cgroup(struct gp_file *f, void __user *uarg)
{
	struct gpupool_cgroup cg;
	struct gp_denial d;
	long ret;

	if (copy_from_user(&cg, uarg, sizeof(cg)))
		return -EFAULT;
	if (cg.flags & ~GPUPOOL_CGROUP_VALID_FLAGS)
		return -EINVAL;
	if (cg.pad || !gp_zeroed(cg.reserved, sizeof(cg.reserved)))
		return -EINVAL;
	/* Out only: what a caller left there from an earlier answer. */
	cg.usage = 0;
	cg.chunks = 0;
	cg.cgroup_id = 0;
	cg.denials = 0;

	/* A copy with its own cgroup reference: no lock held while used. */
	spin_lock(&f->denial_lock);
	d = f->denial;
	if (d.cgrp)
		cgroup_get(d.cgrp);
	d.dmem_limit = NULL;	/* a kept refusal has none (counted) */
	spin_unlock(&f->denial_lock);
	ret = gp_cg_ioctl(&cg, &d);
	gp_denial_clear(&d);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &cg, sizeof(cg)))
		return -EFAULT;
	return 0;
}

static long gp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gp_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case GPUPOOL_IOC_VERSION:
		return gp_ioctl_version(uarg);
	case GPUPOOL_IOC_ALLOC:
		return gp_ioctl_alloc(file, f, uarg);
	case GPUPOOL_IOC_FREE:
		return gp_ioctl_free(f, uarg);
	case GPUPOOL_IOC_STATS:
		return gp_ioctl_stats(uarg);
	case GPUPOOL_IOC_EXPORT:
		return gp_ioctl_export(file, f, uarg);
	case GPUPOOL_IOC_CGROUP:
		return gp_ioctl_cgroup(f, uarg);
	case GPUPOOL_IOC_IDLE:
		return gp_ioctl_idle(f, uarg);
	case GPUPOOL_IOC_ASKED:
		return gp_ioctl_asked(f, uarg);
	case GPUPOOL_IOC_ASK_REPORT:
		return gp_ioctl_ask_report(f, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * The mapping does not keep /dev/gpupool's file: its vm_file becomes a
 * chunk file of its own (as an exported fd would be), so that close()
 * releases the file's other chunks at once, the file's handles die with
 * it, and GUP sees an anonymous inode with no writeback (long-term pins
 * are allowed wherever /dev lives).
 */
static int gp_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct gp_chunk *c;
	struct file *cf;
	int ret;

	c = gp_file_lookup(file->private_data, vma->vm_pgoff);
	if (!c)
		return -EINVAL;
	cf = gp_chunk_file(c, file->f_flags & O_ACCMODE);
	if (IS_ERR(cf)) {
		gp_chunk_put(c);
		return PTR_ERR(cf);
	}
	/* cf owns the lookup's reference; the vma gets one of its own. */
	gp_chunk_get(c);
	ret = gp_chunk_mmap(c, vma);
	if (ret) {
		gp_chunk_put(c);
		fput(cf);
		return ret;
	}
	vma_set_file(vma, cf);
	fput(cf);
	return 0;
}

#if GP_FOLIO_BLOCKS
/* A chunk's mapping goes where its 2 MiB folios can be mapped whole. */
static unsigned long gp_get_unmapped_area(struct file *file,
					  unsigned long addr, unsigned long len,
					  unsigned long pgoff, unsigned long flags)
{
	struct gp_chunk *c = gp_file_lookup(file->private_data, pgoff);
	unsigned long ret;

	if (!c)
		return -EINVAL;
	ret = gp_chunk_get_unmapped_area(c, file, addr, len, 0, flags);
	gp_chunk_put(c);
	return ret;
}
#endif

/* POLLPRI while other files' ALLOCs ask this one for idle chunks. */
static __poll_t gp_poll(struct file *file, struct poll_table_struct *pt)
{
	struct gp_file *f = file->private_data;

	return gp_rc_poll(file, &f->rc, pt);
}

static int gp_open(struct inode *inode, struct file *file)
{
	struct gp_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->holder = gp_holder_get_current();
	if (!f->holder) {
		kfree(f);
		return -ENOMEM;
	}
	xa_init(&f->chunks);
	f->next_id = 1;
	spin_lock_init(&f->denial_lock);
	gp_rc_file_init(&f->rc, f->holder);
	file->private_data = f;
	return 0;
}

static int gp_release(struct inode *inode, struct file *file)
{
	struct gp_file *f = file->private_data;
	struct gp_chunk *c;
	unsigned long id;

	xa_for_each(&f->chunks, id, c) {
		xa_erase(&f->chunks, id);
		gp_file_drop(c);
	}
	xa_destroy(&f->chunks);
	gp_rc_file_exit(&f->rc);
	gp_denial_clear(&f->denial);
	gp_holder_put(f->holder);
	kfree(f);
	return 0;
}

static const struct file_operations gp_fops = {
	.owner		= THIS_MODULE,
	.open		= gp_open,
	.release	= gp_release,
	.unlocked_ioctl	= gp_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= gp_mmap,
	.poll		= gp_poll,
#if GP_FOLIO_BLOCKS
	.get_unmapped_area = gp_get_unmapped_area,
#endif
	.llseek		= noop_llseek,
};

static struct miscdevice gp_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= GPUPOOL_NAME,
	.fops	= &gp_fops,
};

int gpupool_dev_init(umode_t mode)
{
	gp_misc.mode = mode;
	return misc_register(&gp_misc);
}

void gpupool_dev_exit(void)
{
	misc_deregister(&gp_misc);
}
