// SPDX-License-Identifier: MIT
/*
 * keeper.c - the host pools' keeper: one thread per context that gives
 * idle segments back (1) when another process asks for them, through the
 * backend (ops->asked: on the kernel backend, gpupool.ko asks when it
 * cannot serve someone else; kmod/reclaim.c has its rules), and (2) when
 * they have been idle host_gc_idle_ms, also while the process calls the
 * library no more (a trainer between epochs, a program that freed its
 * pinned buffers and went on).
 *
 * It also has the buffers another room parked (gp_host_on_parked: the
 * interposer's threads' caches) given back once they have been parked
 * about GP_HOST_PARKED_MS (or host_gc_idle_ms when shorter), and all of
 * them before it answers an ask: their segments then go idle and the
 * rules above apply to them.
 *
 * It is started when a segment first goes idle or a room first parks, so
 * a process that never frees a whole segment has no thread; it sleeps in
 * poll() until asked, until the oldest idle segment or parked buffer is
 * due, until woken (a room parks again after it had nothing parked) or
 * until stopped (an eventfd written at close, with stop set).  It gives back under host_lock, as every other path
 * does: a segment an allocation takes again before the keeper holds the
 * lock is busy by then (and said so to the backend, which takes it out of
 * the ask), and is kept.
 *
 * A child of fork() inherits the context but not the thread: it starts
 * none, and tells the backend nothing (its segments, and its parent's that
 * it maps too, are the parent's to give back).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backend/backend.h"
#include "host/pools.h"

/* Handles taken from one ask, at most (the rest come with the next). */
#define GP_KEEPER_BATCH	64
/*
 * Its stack: what giving back calls (CUDA's unregister, munmap, an ioctl)
 * needs, with room for sanitizers; not the process's default of 8 MiB
 * of address space for every context.  A multiple of every page size.
 */
#define GP_KEEPER_STACK	(256 * 1024)

struct gp_keeper {
	pthread_t thread;
	int stop_fd;		/* eventfd: written to stop or wake it */
	int stop;		/* set before stop_fd is written at close */
	pid_t pid;		/* the process it runs in */
};

/* host_lock held.  How long the keeper may sleep: until the oldest idle
 * segment is due (host_gc_idle_ms), or that long when none is idle; -1
 * when idle segments never go back by age.
 */
static int gp_keeper_timeout(struct gp_ctx *ctx)
{
	uint64_t idle_ms = ctx->opt.host_gc_idle_ms, now, due;
	struct gp_seg *seg = gp_idle_oldest(ctx);

	if (!idle_ms || idle_ms > INT32_MAX)
		return -1;
	if (!seg)
		return (int)idle_ms;
	now = gp_now_ms();
	due = seg->idle_since + idle_ms;
	return due <= now ? 0 : (int)(due - now > idle_ms ? idle_ms : due - now);
}

/* host_lock held.  Give back the idle segments of the asked chunks; one
 * that is busy again by now was said so already, and stays.
 */
static void gp_keeper_give(struct gp_ctx *ctx, const uint64_t *handles,
			   uint32_t nr)
{
	struct gp_seg *found;
	struct gp_list *pos;
	uint32_t i;

	for (i = 0; i < nr; i++) {
		found = NULL;
		gp_list_each(pos, &ctx->host->idle) {
			struct gp_seg *s = gp_list_entry(pos, struct gp_seg,
							 idle_link);

			if (s->khandle == handles[i]) {
				found = s;
				break;
			}
		}
		if (!found)
			continue;
		gp_debug(ctx, "asked: giving back segment %#llx + %llu",
			 (unsigned long long)found->addr,
			 (unsigned long long)found->size);
		gp_release_idle_seg(ctx, found);
	}
}

/* Sleep on stop_fd alone (a backend nobody asks through). */
static int gp_keeper_sleep(int stop_fd, int timeout_ms)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	return n > 0 ? -ECANCELED : -ETIMEDOUT;
}

/* The parked buffers given back (all, or those parked long enough): in
 * how many ms they must be looked at again, -1 when none is parked.
 */
static int gp_keeper_parked(struct gp_ctx *ctx, bool all)
{
	uint64_t idle_ms = ctx->opt.host_gc_idle_ms;
	int bound = idle_ms && idle_ms < GP_HOST_PARKED_MS ? (int)idle_ms :
		    GP_HOST_PARKED_MS;
	gp_host_parked_fn *fn;

	pthread_mutex_lock(&ctx->host->lock);
	fn = ctx->host->parked;
	pthread_mutex_unlock(&ctx->host->lock);
	return fn ? fn(ctx, all, bound) : -1;
}

/* The sooner of two timeouts (-1: none). */
static int gp_keeper_sooner(int a, int b)
{
	return a < 0 ? b : b < 0 || a < b ? a : b;
}

/* stop_fd was written: true to stop, else it was a wake (read back). */
static bool gp_keeper_stopped(struct gp_keeper *k)
{
	uint64_t n;

	if (__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE))
		return true;
	if (read(k->stop_fd, &n, sizeof(n)) != sizeof(n))
		n = 0;	/* read already by an earlier wake's turn */
	return false;
}

static void *gp_keeper_main(void *arg)
{
	struct gp_ctx *ctx = arg;
	struct gp_keeper *k = ctx->host->keeper;
	uint64_t handles[GP_KEEPER_BATCH];
	uint32_t nr = 0;
	int timeout, parked, ret;

	for (;;) {
		parked = gp_keeper_parked(ctx, false);
		pthread_mutex_lock(&ctx->host->lock);
		timeout = gp_keeper_sooner(gp_keeper_timeout(ctx), parked);
		pthread_mutex_unlock(&ctx->host->lock);
		ret = ctx->ops->asked ?
		      ctx->ops->asked(ctx, k->stop_fd, timeout, handles,
				      GP_KEEPER_BATCH, &nr) :
		      gp_keeper_sleep(k->stop_fd, timeout);
		if (ret == -ECANCELED && gp_keeper_stopped(k))
			break;
		if (ret == -ECANCELED)
			continue;
		if (!ret)	/* asked: everything parked first */
			gp_keeper_parked(ctx, true);
		pthread_mutex_lock(&ctx->host->lock);
		if (!ret)
			gp_keeper_give(ctx, handles, nr);
		gp_host_gc(ctx);
		pthread_mutex_unlock(&ctx->host->lock);
		if (ret && ret != -ETIMEDOUT) {
			/* The device failed us: not in a loop. */
			gp_debug(ctx, "keeper: %s", gp_strerror(ret));
			gp_keeper_sleep(k->stop_fd, 1000);
		}
	}
	return NULL;
}

/* The thread, on a stack of GP_KEEPER_STACK: 0 or an errno value. */
static int gp_keeper_spawn(struct gp_keeper *k, struct gp_ctx *ctx)
{
	pthread_attr_t attr;
	int ret = pthread_attr_init(&attr);

	if (ret)
		return ret;
	ret = pthread_attr_setstacksize(&attr, GP_KEEPER_STACK);
	if (!ret)
		ret = pthread_create(&k->thread, &attr, gp_keeper_main, ctx);
	pthread_attr_destroy(&attr);
	return ret;
}

int gp_keeper_run(struct gp_ctx *ctx)
{
	struct gp_keeper *k;
	int ret = -ENOMEM;

	if (ctx->host->keeper)
		return 0;
	if (ctx->host->pid != getpid())
		return -ECHILD;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto out_fail;
	k->pid = getpid();
	k->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = -errno;
	if (k->stop_fd < 0)
		goto out_free;
	ctx->host->keeper = k;
	ret = -gp_keeper_spawn(k, ctx);
	if (!ret)
		return 0;
	ctx->host->keeper = NULL;
	close(k->stop_fd);
out_free:
	free(k);
out_fail:
	/* Nothing is lost but the giving back: said, and tried again on the
	 * next segment that goes idle.
	 */
	gp_debug(ctx, "cannot start the keeper thread: idle segments go back "
		 "only on the library's calls");
	return ret;
}

void gp_keeper_start(struct gp_ctx *ctx)
{
	if (ctx->ops->asked || ctx->opt.host_gc_idle_ms)
		gp_keeper_run(ctx);
}

void gp_keeper_wake(struct gp_ctx *ctx)
{
	struct gp_keeper *k = ctx->host->keeper;
	uint64_t one = 1;

	if (k && k->pid == getpid() &&
	    write(k->stop_fd, &one, sizeof(one)) != sizeof(one))
		gp_debug(ctx, "keeper: cannot wake it");
}

void gp_keeper_stop(struct gp_ctx *ctx)
{
	struct gp_keeper *k = ctx->host->keeper;
	uint64_t one = 1;

	if (!k)
		return;
	/* In a child of fork() the thread is not there: its copy goes.
	 * (An eventfd's write fails only past 2^64 - 2.)
	 */
	if (k->pid == getpid()) {
		__atomic_store_n(&k->stop, 1, __ATOMIC_RELEASE);
		if (write(k->stop_fd, &one, sizeof(one)) != sizeof(one))
			gp_debug(ctx, "keeper: cannot say stop");
		pthread_join(k->thread, NULL);
	}
	close(k->stop_fd);
	free(k);
	ctx->host->keeper = NULL;
}
