// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim.c - idle memory that circulates.  A holder that keeps freed
 * chunks mapped for reuse (libgpupool's cached segments) marks the ones
 * that hold nothing in use idle (GPUPOOL_IOC_IDLE); an ALLOC that the
 * pool or a cgroup limit refused asks their files for some back and
 * waits while they give it (poll() POLLPRI, GPUPOOL_IOC_ASKED, unmap and
 * GPUPOOL_IOC_FREE), then tries once more (dev.c).
 *
 * The rules (docs/operations.md, "Idle memory circulates"):
 *  - only chunks marked idle are asked for, never memory in use; a chunk
 *    marked busy again, or given up, leaves its ask at once;
 *  - oldest idle first, over every holder, and only as many bytes as the
 *    ALLOC lacks; nothing at all when everything that could help would
 *    not be enough (nobody gives back for an ALLOC that fails anyway);
 *  - a full pool asks every file but the asking one (its owner gives its
 *    own idle chunks back itself, first: GPUPOOL_ALLOC_NO_RECLAIM), a
 *    strict ALLOC only for chunks on its node; a cgroup limit asks only
 *    for chunks charged inside the limiting cgroup's subtree (with dmem:
 *    those dmem would evict for it, so dmem.min protects), so memory
 *    charged to another tenant is asked for only when the pool is full;
 *  - a process is asked for no more than reclaim_rate bytes per second,
 *    sustained (a token bucket per holder holding up to the pool's size,
 *    full for a new holder): asking again and again cannot make it
 *    unregister and register its memory faster than that;
 *  - the ALLOC waits, killable, until every chunk it asked for is given
 *    up or busy again, or reclaim_wait_ms has passed; then its ask ends:
 *    what was not given back is no longer asked for.
 *
 * Objects: a struct gp_idle per idle chunk, on gp_rc_lru (every idle
 * chunk of every file, oldest first) and on its file's list, made by the
 * IDLE ioctl and freed when the chunk leaves idleness (BUSY, FREE, close:
 * gp_rc_leave()), or, for a chunk asked for and given up, when its last
 * reference goes (gp_rc_gone(), gp_rc_given()): its asker wakes when the
 * memory is back in the pool (being zeroed, which its retry waits for),
 * not before, whatever else still held it (a mapping whose file goes
 * after the owner's, as at exit).  A struct gp_ask per waiting ALLOC,
 * holding the records it asked for.
 *
 * Locking: gp_rc_lock, a spinlock, guards all of it: the records and
 * lists, every file's and holder's reclaim fields, c->idle, the asks and
 * the figures.  It is taken inside a file's chunk table lock (xa_lock)
 * and takes nothing of ours inside it (wait queue locks only).  A waiting
 * ALLOC sleeps outside it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/numa.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/gpupool.h>

#include "gpupool.h"

/* Records an ask looks at, at most: the walk holds gp_rc_lock. */
#define GP_RC_SCAN_MAX	16384
/* Holders an ask keeps figures of; the report shows the first few. */
#define GP_RC_SEEN	32
/* Charges an ask remembers whether they help (a cgroup limit's test). */
#define GP_RC_MEMO	8
/* Handles GPUPOOL_IOC_ASKED returns per call, at most. */
#define GP_RC_ASKED_MAX	512

struct gp_idle {
	struct list_head lru;		/* on gp_rc_lru while idle */
	struct list_head file_link;	/* on its file's idle list, likewise */
	struct list_head ask_link;	/* on its ask's list while asked */
	struct gp_chunk *c;		/* while idle (its owner's ref keeps it) */
	struct gp_rc_file *rf;		/* its file while idle, then NULL */
	struct gp_ask *ask;		/* the ask it is in, or NULL */
	u64 handle;
	u64 size;
	unsigned int slot;		/* its holder's entry in ask->seen */
};

/* What an ask saw of one holder. */
struct gp_rc_seen {
	struct gp_holder *h;		/* identity (its files hold it) */
	u64 take;			/* bytes chosen to ask of it */
	struct gpupool_ask_holder out;
};

struct gp_ask {
	wait_queue_head_t wq;
	struct list_head asked;		/* its struct gp_idle */
	u64 pending;			/* bytes asked, not yet given or busy */
	bool admin;			/* the asking file shows every holder */
	kuid_t euid;			/* else those of this euid */
	unsigned int nr_seen;
	unsigned int more;		/* holders beyond the table: at least */
	struct gp_rc_seen seen[GP_RC_SEEN];
	unsigned int nr_memo;
	struct {
		const struct gp_cg *cg;
		const struct dmem_cgroup_pool_state *dmem;
		bool under;
	} memo[GP_RC_MEMO];
};

/* A file's last refused ALLOC, for GPUPOOL_IOC_ASK_REPORT. */
struct gp_rc_report {
	struct gpupool_ask_report r;
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
};

static DEFINE_SPINLOCK(gp_rc_lock);
static LIST_HEAD(gp_rc_lru);
static struct gp_rc_figures gp_rc_fig;

void gp_rc_file_init(struct gp_rc_file *rf, struct gp_holder *h)
{
	INIT_LIST_HEAD(&rf->idle);
	rf->asked = 0;
	init_waitqueue_head(&rf->wq);
	rf->holder = h;
	rf->report = NULL;
}

/* Every chunk of the file has left idleness (dev.c's release). */
void gp_rc_file_exit(struct gp_rc_file *rf)
{
	kfree(rf->report);
	rf->report = NULL;
}

/* Idle marks ------------------------------------------------------------------ */

/* A record for gp_rc_enter(), made before its locks are taken. */
struct gp_idle *gp_rc_idle_alloc(void)
{
	return kzalloc(sizeof(struct gp_idle), GFP_KERNEL);
}

void gp_rc_idle_free(struct gp_idle *r)
{
	kfree(r);
}

/*
 * c, held by rf's file (the caller checked, under the file's table lock,
 * which it holds), is idle from now: it takes spare and gives back NULL,
 * or gives spare back when c was idle already (it keeps its age).
 */
struct gp_idle *gp_rc_enter(struct gp_rc_file *rf, struct gp_chunk *c,
			    u64 handle, struct gp_idle *spare)
{
	struct gp_holder_rc *hr = &rf->holder->rc;

	spin_lock(&gp_rc_lock);
	if (c->idle) {
		spin_unlock(&gp_rc_lock);
		return spare;
	}
	spare->c = c;
	spare->rf = rf;
	spare->handle = handle;
	spare->size = c->size;
	list_add_tail(&spare->lru, &gp_rc_lru);
	list_add_tail(&spare->file_link, &rf->idle);
	c->idle = spare;
	hr->idle_bytes += c->size;
	hr->idle_chunks++;
	gp_rc_fig.idle_bytes += c->size;
	gp_rc_fig.idle_chunks++;
	spin_unlock(&gp_rc_lock);
	return NULL;
}

/* r leaves idleness: off the lists and its file's and holder's figures. */
static void gp_rc_unlink(struct gp_idle *r)
{
	struct gp_holder_rc *hr = &r->rf->holder->rc;

	lockdep_assert_held(&gp_rc_lock);
	list_del(&r->lru);
	list_del(&r->file_link);
	if (r->ask)
		r->rf->asked -= r->size;
	hr->idle_bytes -= r->size;
	hr->idle_chunks--;
	gp_rc_fig.idle_bytes -= r->size;
	gp_rc_fig.idle_chunks--;
	r->rf = NULL;
	r->c = NULL;
}

/* r's ask (when asked) learns what became of it; r leaves the ask. */
static void gp_rc_credit(struct gp_idle *r, bool given)
{
	struct gpupool_ask_holder *e;
	struct gp_ask *a = r->ask;

	lockdep_assert_held(&gp_rc_lock);
	if (!a)
		return;
	e = &a->seen[r->slot].out;
	if (given) {
		e->given += r->size;
		gp_rc_fig.given_bytes += r->size;
	} else {
		e->busy += r->size;
		gp_rc_fig.busy_bytes += r->size;
	}
	list_del(&r->ask_link);
	r->ask = NULL;
	a->pending -= r->size;
	if (!a->pending)
		wake_up(&a->wq);
}

/*
 * c leaves idleness: marked busy again (busy), or given up by its owner
 * (freed, its file closed), who drops its reference next.  A chunk asked
 * for and given up stays on its ask until its last reference goes
 * (gp_rc_gone(), from the chunk's release), so that the asker wakes when
 * the memory is back in the pool; else its record goes now.  The caller
 * holds c, which no one can mark idle meanwhile (it is out of its file's
 * table, or the caller holds the table's lock), so that the test without
 * gp_rc_lock is right.
 */
void gp_rc_leave(struct gp_chunk *c, bool busy)
{
	struct gp_idle *r;

	if (likely(!READ_ONCE(c->idle)))
		return;
	spin_lock(&gp_rc_lock);
	r = c->idle;
	if (r->rf) {		/* not given up already */
		gp_rc_unlink(r);
		if (busy || !r->ask) {
			gp_rc_credit(r, false);
			c->idle = NULL;
			kfree(r);
		}
	}
	spin_unlock(&gp_rc_lock);
}

/*
 * The last reference to c is going (chunk.c): the record of a chunk that
 * was asked for and given up, if any, for gp_rc_given() once c is in the
 * pool's hands.
 */
struct gp_idle *gp_rc_gone(struct gp_chunk *c)
{
	struct gp_idle *r;

	if (likely(!READ_ONCE(c->idle)))
		return NULL;
	spin_lock(&gp_rc_lock);
	r = c->idle;
	if (r->rf)		/* never given up: every owner's put leaves first */
		gp_rc_unlink(r);
	c->idle = NULL;
	spin_unlock(&gp_rc_lock);
	return r;
}

/* Its ask (if it is still asked for) counts it given.  Frees r. */
void gp_rc_given(struct gp_idle *r)
{
	if (!r)
		return;
	spin_lock(&gp_rc_lock);
	gp_rc_credit(r, true);
	spin_unlock(&gp_rc_lock);
	kfree(r);
}

/* Worth asking at all: asks are on, and some chunk is idle somewhere. */
bool gp_rc_possible(void)
{
	return READ_ONCE(gp_reclaim_wait_ms) &&
	       READ_ONCE(gp_rc_fig.idle_chunks);
}

/* Asks ---------------------------------------------------------------------- */

/*
 * Top up a holder's allowance for the time since the last: reclaim_rate
 * bytes a second, up to the pool's size (all of it after an hour).
 */
static void gp_rc_top_up(struct gp_holder_rc *hr)
{
	u64 rate = READ_ONCE(gp_reclaim_rate), cap = gp_pool_size();
	unsigned long now = jiffies, dt = now - hr->stamp;

	lockdep_assert_held(&gp_rc_lock);
	hr->stamp = now;
	if (!hr->primed || dt >= 3600UL * HZ) {
		hr->allowance = cap;
		hr->primed = true;
		return;
	}
	hr->allowance = min_t(s64, cap, hr->allowance +
			      (s64)mul_u64_u32_div(rate, dt, HZ));
}

/* h's entry in a's table, found or added; NULL when the table is full. */
static struct gp_rc_seen *gp_rc_seen_of(struct gp_ask *a, struct gp_holder *h)
{
	struct gp_rc_seen *e;
	unsigned int i;

	for (i = 0; i < a->nr_seen; i++)
		if (a->seen[i].h == h)
			return &a->seen[i];
	if (a->nr_seen == GP_RC_SEEN) {
		a->more = 1;
		return NULL;
	}
	e = &a->seen[a->nr_seen++];
	e->h = h;
	/* As /proc/gpupool shows holders: another user's, nameless. */
	if (!a->admin && !uid_eq(h->uid, a->euid)) {
		e->out.flags |= GPUPOOL_ASK_HIDDEN;
	} else {
		e->out.pid = pid_has_task(h->tgid, PIDTYPE_TGID) ?
			     pid_vnr(h->tgid) : 0;
		BUILD_BUG_ON(sizeof(e->out.comm) != sizeof(h->comm));
		memcpy(e->out.comm, h->comm, sizeof(e->out.comm));
	}
	gp_rc_top_up(&h->rc);
	return e;
}

/* Would giving r back help the ALLOC that wants w? */
static bool gp_rc_helps(struct gp_ask *a, const struct gp_idle *r,
			const struct gp_rc_want *w)
{
	const struct gp_charge *ch = &r->c->charge;
	unsigned int i;
	bool under;

	if (w->nid != NUMA_NO_NODE && r->c->node->nid != w->nid)
		return false;
	if (w->refusal != -ENOSPC)
		return true;
	/* A cgroup limit: the test walks cgroups; a holder's chunks mostly
	 * share one charge, so its answer is remembered.
	 */
	for (i = 0; i < a->nr_memo; i++)
		if (a->memo[i].cg == ch->cg && a->memo[i].dmem == ch->dmem)
			return a->memo[i].under;
	under = gp_cg_charged_under(ch, w->limit);
	if (a->nr_memo < GP_RC_MEMO) {
		a->memo[a->nr_memo].cg = ch->cg;
		a->memo[a->nr_memo].dmem = ch->dmem;
		a->memo[a->nr_memo++].under = under;
	}
	return under;
}

/*
 * Choose what a asks for, oldest idle first, and note what it sees of
 * each holder: other files' idle chunks that help w, within each holder's
 * allowance, until need is covered.  The bytes chosen, or 0 when they
 * would not cover it (then nothing is asked; U64_MAX: only look).  *idle:
 * the bytes idle in other files.
 */
static u64 gp_rc_choose(struct gp_rc_file *rf, const struct gp_rc_want *w,
			u64 need, struct gp_ask *a, u64 *idle)
{
	unsigned int scanned = 0;
	struct gp_rc_seen *e;
	struct gp_idle *r;
	u64 chosen = 0;

	lockdep_assert_held(&gp_rc_lock);
	list_for_each_entry(r, &gp_rc_lru, lru) {
		if (++scanned > GP_RC_SCAN_MAX)
			break;
		if (r->rf == rf)
			continue;	/* the asker's own: its owner's to give */
		*idle += r->size;
		e = gp_rc_seen_of(a, r->rf->holder);
		if (!e)
			continue;
		e->out.idle += r->size;
		if (chosen >= need)
			continue;
		if (r->ask || !gp_rc_helps(a, r, w)) {
			e->out.flags |= GPUPOOL_ASK_ELSEWHERE;
			continue;
		}
		if (READ_ONCE(gp_reclaim_rate) &&
		    e->h->rc.allowance <= (s64)e->take) {
			if (!(e->out.flags & GPUPOOL_ASK_THROTTLED))
				gp_rc_fig.throttled++;
			e->out.flags |= GPUPOOL_ASK_THROTTLED;
			continue;
		}
		r->slot = e - a->seen;
		r->ask = a;
		list_add_tail(&r->ask_link, &a->asked);
		e->take += r->size;
		chosen += r->size;
	}
	if (chosen < need) {
		while ((r = list_first_entry_or_null(&a->asked, struct gp_idle,
						     ask_link))) {
			list_del(&r->ask_link);
			r->ask = NULL;
		}
		return 0;
	}
	return chosen;
}

/* Ask what gp_rc_choose() chose: count it, wake the files asked. */
static void gp_rc_send(struct gp_ask *a, u64 chosen)
{
	struct gp_rc_seen *e;
	struct gp_idle *r;
	unsigned int i;
	bool first;

	lockdep_assert_held(&gp_rc_lock);
	for (i = 0; i < a->nr_seen; i++) {
		e = &a->seen[i];
		if (!e->take)
			continue;
		e->h->rc.allowance -= e->take;
		e->out.asked = e->take;
		e->out.flags |= GPUPOOL_ASK_ASKED;
		gp_rc_fig.holders_asked++;
	}
	/* The count first, then the wakeup: a poll woken re-reads it
	 * (gp_rc_poll(), without gp_rc_lock), and one that found it 0 after
	 * the wakeup would sleep through the ask.
	 */
	list_for_each_entry(r, &a->asked, ask_link) {
		first = !r->rf->asked;
		r->rf->asked += r->size;
		if (first)
			wake_up_poll(&r->rf->wq, EPOLLPRI);
	}
	a->pending = chosen;
	gp_rc_fig.asks++;
	gp_rc_fig.asked_bytes += chosen;
}

/* The wait is over: what a asked for and was not given is asked no more. */
static void gp_rc_withdraw(struct gp_ask *a)
{
	struct gp_idle *r;

	lockdep_assert_held(&gp_rc_lock);
	while ((r = list_first_entry_or_null(&a->asked, struct gp_idle,
					     ask_link))) {
		list_del(&r->ask_link);
		r->ask = NULL;
		if (r->rf)
			r->rf->asked -= r->size;
	}
}

/* Asked holders first, then by idle bytes, most first. */
static int gp_rc_seen_cmp(const void *x, const void *y)
{
	const struct gpupool_ask_holder *a = &((const struct gp_rc_seen *)x)->out;
	const struct gpupool_ask_holder *b = &((const struct gp_rc_seen *)y)->out;

	if (!!a->asked != !!b->asked)
		return a->asked ? -1 : 1;
	return a->idle < b->idle ? 1 : a->idle > b->idle ? -1 : 0;
}

/*
 * What a found, asked and was given, as rep (the file's report).  After
 * gp_rc_withdraw(): no record refers to a's table any more, which is
 * sorted in place.
 */
static void gp_rc_fill_report(struct gp_rc_report *rep, struct gp_ask *a,
			      const struct gp_rc_want *w, u64 idle, u64 asked,
			      u64 ns)
{
	unsigned int i, n = a->nr_seen;

	memset(rep, 0, sizeof(*rep));
	sort(a->seen, n, sizeof(a->seen[0]), gp_rc_seen_cmp, NULL);
	for (i = 0; i < n; i++) {
		rep->r.given += a->seen[i].out.given;
		if (i < GPUPOOL_ASK_MAX_HOLDERS)
			rep->h[i] = a->seen[i].out;
	}
	rep->r.nr = min_t(unsigned int, n, GPUPOOL_ASK_MAX_HOLDERS);
	rep->r.more = n - rep->r.nr + a->more;
	rep->r.size = w->size;
	rep->r.need = w->need;
	rep->r.asked = asked;
	rep->r.idle = idle;
	rep->r.wait_ns = ns;
	rep->r.refusal = w->refusal;
	rep->r.result = w->refusal;
	rep->r.timed_out = asked && a->pending;
}

/*
 * An ALLOC of file was refused (w says why): with ask, ask other files'
 * idle chunks back and wait (killable) until given or reclaim_wait_ms.  0
 * when it asked and waited (the caller tries once more), -ENOENT when
 * nothing was asked, -EINTR when killed; what it found is rf's report
 * either way (without ask, only that: a refusal that stands).
 */
int gp_rc_ask(struct file *file, struct gp_rc_file *rf,
	      const struct gp_rc_want *w, bool ask)
{
	struct gp_rc_report *rep, *old;
	u64 idle = 0, asked, t0;
	long left = 1;
	struct gp_ask *a;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!a || !rep) {
		kfree(a);
		kfree(rep);
		return -ENOENT;
	}
	init_waitqueue_head(&a->wq);
	INIT_LIST_HEAD(&a->asked);
	a->admin = file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN);
	a->euid = file->f_cred->euid;

	t0 = ktime_get_ns();
	spin_lock(&gp_rc_lock);
	asked = gp_rc_choose(rf, w, ask ? w->need : U64_MAX, a, &idle);
	if (asked)
		gp_rc_send(a, asked);
	spin_unlock(&gp_rc_lock);

	if (asked)
		left = wait_event_killable_timeout(a->wq, !READ_ONCE(a->pending),
				msecs_to_jiffies(READ_ONCE(gp_reclaim_wait_ms)));

	spin_lock(&gp_rc_lock);
	gp_rc_withdraw(a);
	if (asked) {
		gp_rc_fig.wait_ns += ktime_get_ns() - t0;
		gp_rc_fig.timeouts += a->pending && left >= 0;
	}
	gp_rc_fill_report(rep, a, w, idle, asked, asked ?
			  ktime_get_ns() - t0 : 0);
	old = rf->report;
	rf->report = rep;
	spin_unlock(&gp_rc_lock);

	kfree(old);
	kfree(a);
	if (left < 0)
		return -EINTR;
	return asked ? 0 : -ENOENT;
}

/* The ALLOC's retry after its ask (or its refusal) came to ret. */
void gp_rc_result(struct gp_rc_file *rf, int ret)
{
	spin_lock(&gp_rc_lock);
	if (rf->report) {
		rf->report->r.result = ret;
		if (!ret)
			gp_rc_fig.served++;
	}
	spin_unlock(&gp_rc_lock);
}

/* What holders see ------------------------------------------------------------ */

__poll_t gp_rc_poll(struct file *file, struct gp_rc_file *rf,
		    struct poll_table_struct *pt)
{
	poll_wait(file, &rf->wq, pt);
	return READ_ONCE(rf->asked) ? EPOLLPRI : 0;
}

/* GPUPOOL_IOC_ASKED, q copied in and checked (dev.c). */
int gp_rc_asked(struct gp_rc_file *rf, struct gpupool_asked *q)
{
	u32 room = min_t(u32, q->nr, GP_RC_ASKED_MAX), n = 0;
	u64 *handles = NULL, bytes = 0;
	struct gp_idle *r;
	int ret = 0;

	if (room) {
		handles = kmalloc_array(room, sizeof(*handles), GFP_KERNEL);
		if (!handles)
			return -ENOMEM;
	}
	spin_lock(&gp_rc_lock);
	list_for_each_entry(r, &rf->idle, file_link) {
		if (!r->ask)
			continue;
		if (n < room)
			handles[n] = r->handle;
		n++;
		bytes += r->size;
	}
	spin_unlock(&gp_rc_lock);
	if (room && copy_to_user(u64_to_user_ptr(q->handles_ptr), handles,
				 min(n, room) * sizeof(*handles)))
		ret = -EFAULT;
	kfree(handles);
	q->nr = n;
	q->bytes = bytes;
	return ret;
}

/* GPUPOOL_IOC_ASK_REPORT, q copied in and checked (dev.c). */
int gp_rc_report(struct gp_rc_file *rf, struct gpupool_ask_report *q)
{
	struct gp_rc_report *rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	u32 room = q->nr;
	u64 ptr = q->holders_ptr;
	int ret = 0;

	if (!rep)
		return -ENOMEM;
	spin_lock(&gp_rc_lock);
	if (rf->report)
		*rep = *rf->report;
	else
		ret = -ENOENT;
	spin_unlock(&gp_rc_lock);
	if (!ret) {
		*q = rep->r;		/* nr: the entries there are */
		q->holders_ptr = ptr;
		room = min(room, q->nr);
		if (room && copy_to_user(u64_to_user_ptr(ptr), rep->h,
					 room * sizeof(rep->h[0])))
			ret = -EFAULT;
	}
	kfree(rep);
	return ret;
}

/* Bytes h's files have marked idle (/proc/gpupool's holder lines). */
u64 gp_rc_holder_idle(struct gp_holder *h)
{
	u64 bytes;

	spin_lock(&gp_rc_lock);
	bytes = h->rc.idle_bytes;
	spin_unlock(&gp_rc_lock);
	return bytes;
}

void gp_rc_figures(struct gp_rc_figures *f)
{
	spin_lock(&gp_rc_lock);
	*f = gp_rc_fig;
	spin_unlock(&gp_rc_lock);
}
