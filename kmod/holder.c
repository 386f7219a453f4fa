// SPDX-License-Identifier: GPL-2.0
/*
 * holder.c - per-process accounting and the per_process_limit.
 *
 * One struct gp_holder per process (thread group) that opened /dev/gpupool,
 * shared by all the files it opens, found by its struct pid (we hold a
 * reference, so the pid cannot be reused under us).  Referenced by those
 * files and by every chunk that counts against it: a chunk counts against
 * the process whose file allocated it until the chunk's last reference is
 * gone, even after that process exited (other processes may hold exported
 * fds or inherited mappings).
 *
 * The limit (per_process_limit, bytes; 0 = none) is checked at ALLOC:
 * -EDQUOT when the process's chunks plus the new one would exceed it.
 * (-EDQUOT, not -ENOMEM or -ENOSPC: the pool may well have room; it is this
 * process's quota that is used up.)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "gpupool.h"

static LIST_HEAD(gp_holders);
static DEFINE_MUTEX(gp_holders_lock);

/* The calling process's holder, with a new reference; NULL if out of memory. */
struct gp_holder *gp_holder_get_current(void)
{
	struct pid *tgid = task_tgid(current);
	struct gp_holder *h;

	mutex_lock(&gp_holders_lock);
	list_for_each_entry(h, &gp_holders, link) {
		if (h->tgid == tgid) {
			kref_get(&h->kref);
			goto out_unlock;
		}
	}
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		goto out_unlock;
	kref_init(&h->kref);
	spin_lock_init(&h->lock);
	h->tgid = get_pid(tgid);
	h->uid = current_euid();
	get_task_comm(h->comm, current->group_leader);
	list_add_tail(&h->link, &gp_holders);
out_unlock:
	mutex_unlock(&gp_holders_lock);
	return h;
}

void gp_holder_get(struct gp_holder *h)
{
	kref_get(&h->kref);
}

/*
 * kref_put_mutex()'s release: called with gp_holders_lock held (taken by
 * refcount_dec_and_mutex_lock() as the count reached 0), it drops it.
 * sparse tracks no mutex, so __release() tells it the lock the
 * __releases() above promises is dropped here.
 */
static void gp_holder_release(struct kref *kref)
	__releases(&gp_holders_lock)
{
	struct gp_holder *h = container_of(kref, struct gp_holder, kref);

	list_del(&h->link);
	mutex_unlock(&gp_holders_lock);
	__release(&gp_holders_lock);
	WARN_ON_ONCE(h->bytes || h->chunks);
	put_pid(h->tgid);
	kfree(h);
}

/* May sleep. */
void gp_holder_put(struct gp_holder *h)
{
	if (h)
		kref_put_mutex(&h->kref, gp_holder_release, &gp_holders_lock);
}

int gp_holder_charge(struct gp_holder *h, u64 bytes)
{
	u64 limit = READ_ONCE(gp_per_process_limit);
	int ret = 0;

	spin_lock(&h->lock);
	if (bytes > U64_MAX - h->bytes) {
		ret = -ENOMEM;		/* no pool holds that much */
	} else if (limit && (bytes > limit || h->bytes > limit - bytes)) {
		ret = -EDQUOT;
	} else {
		h->bytes += bytes;
		h->chunks++;
	}
	spin_unlock(&h->lock);

	if (ret == -EDQUOT) {
		gp_pool_count_limit_denial();
		pr_info_ratelimited("pid %d (%s): allocation of %llu kB refused: it would exceed per_process_limit=%llu kB (holds %llu kB)\n",
				    pid_nr(h->tgid), h->comm, bytes >> 10,
				    limit >> 10, h->bytes >> 10);
	}
	return ret;
}

/* Never sleeps: called when a chunk's last reference goes. */
void gp_holder_uncharge(struct gp_holder *h, u64 bytes)
{
	spin_lock(&h->lock);
	h->bytes -= bytes;
	h->chunks--;
	spin_unlock(&h->lock);
}

/*
 * /proc/gpupool holder lines: `Holder: <pid> <kB> <chunks> <idle kB>
 * <comm>` (comm last: it may contain spaces; idle kB since ABI 1.2, what
 * its files have marked idle: reclaim.c).  all: every holder; else only
 * those whose uid is uid.
 */
void gp_holder_show(struct seq_file *m, bool all, kuid_t uid)
{
	struct gp_holder *h;
	u64 bytes, chunks;

	mutex_lock(&gp_holders_lock);
	list_for_each_entry(h, &gp_holders, link) {
		if (!all && !uid_eq(h->uid, uid))
			continue;
		spin_lock(&h->lock);
		bytes = h->bytes;
		chunks = h->chunks;
		spin_unlock(&h->lock);
		/* 0 once the process is gone: its number may be another's. */
		seq_printf(m, "Holder: %d %llu %llu %llu ",
			   pid_has_task(h->tgid, PIDTYPE_TGID) ?
			   pid_vnr(h->tgid) : 0, bytes >> 10, chunks,
			   gp_rc_holder_idle(h) >> 10);
		/* A command name is the process's to choose: a newline in it
		 * would start a line of its making.  Octal escapes, as
		 * /proc/mounts has for paths.
		 */
		seq_escape(m, h->comm, "\n\\");
		seq_putc(m, '\n');
	}
	mutex_unlock(&gp_holders_lock);
}
