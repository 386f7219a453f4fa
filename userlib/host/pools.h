/* SPDX-License-Identifier: MIT */
/*
 * pools.h - inside the host pools (host.c, segments.c, share.c): their
 * state and the segment calls they share.  The rest of the library sees
 * host.h.
 */
#ifndef GPUPOOL_USERLIB_HOST_POOLS_H
#define GPUPOOL_USERLIB_HOST_POOLS_H

#include "bfc.h"
#include "cuda.h"
#include "internal.h"
#include "list.h"
#include "host/host.h"

struct gp_hpool {
	struct bfc *b;
	struct gp_map regions;	/* region id -> struct gp_seg */
};

/* ctx->host: everything under lock. */
struct gp_host {
	pthread_mutex_t lock;
	/* The unit of host memory (the backend's granularity). */
	uint64_t gran;
	struct gp_hpool hp[GP_NR_HPOOLS];
	struct gp_map own;		/* addr -> own / imported segment */
	struct gp_list segs;		/* every host segment */
	struct gp_list idle;		/* idle pool segments, oldest first */
	uint64_t idle_bytes;
	struct gp_host_stats st;
	/* The runtime refused to initialize CUDA in this process (as it does
	 * in a child of fork() once the parent has used CUDA): host memory
	 * stays pinned but unregistered from then on (gp_seg_register()),
	 * and gp_info's why says so first.
	 */
	bool unregistered;
	/* Told as a segment goes (gp_host_on_seg_gone), or NULL. */
	gp_seg_gone_fn *seg_gone;
	/* Gives back what another room parked (gp_host_on_parked), or NULL. */
	gp_host_parked_fn *parked;
	/* The thread that gives idle segments back (keeper.c), or NULL
	 * until one first goes idle.
	 */
	struct gp_keeper *keeper;
	pid_t pid;		/* the process that opened the context */
};

/* Why host memory is not registered when unregistered is set. */
#define GP_HOST_UNREGISTERED	"CUDA cannot be initialized in this process (a " \
				"child of fork() cannot once its parent has used CUDA)"

/* segments.c, lock held */
/* Map + register a segment and account it; no_ask: the backend's map asks
 * no other process for idle memory (this one has some to give back first).
 */
int gp_seg_create(struct gp_ctx *ctx, uint64_t size, int kind, bool keep_fd,
		  bool no_ask, struct gp_seg **out);
/* The backend's unmap of a segment, counted. */
void gp_seg_unmap(struct gp_ctx *ctx, struct gp_seg *seg);
/* Unregister, unmap, unaccount and free a segment. */
void gp_seg_destroy(struct gp_ctx *ctx, struct gp_seg *seg);
int gp_seg_register(struct gp_ctx *ctx, struct gp_seg *seg);
void gp_seg_unregister(struct gp_ctx *ctx, struct gp_seg *seg);
void gp_seg_link(struct gp_ctx *ctx, struct gp_seg *seg);
/* Room for size more bytes mapped under host_limit, releasing idle
 * segments; -ENOMEM (message set) when even that is not enough.
 */
int gp_host_make_room(struct gp_ctx *ctx, uint64_t size);
/* The LRU of idle pool segments: one joins (at the back; tell: it went
 * idle, say so to the backend and start the keeper, not a new one), one
 * leaves (busy again: said to the backend when it was told idle).
 */
void gp_idle_add(struct gp_ctx *ctx, struct gp_seg *seg, bool tell);
void gp_idle_del(struct gp_ctx *ctx, struct gp_seg *seg);
/* Off the idle list, the backend not told (the segment goes). */
void gp_idle_unlink(struct gp_ctx *ctx, struct gp_seg *seg);
struct gp_seg *gp_idle_oldest(struct gp_ctx *ctx);
/* Give an idle pool segment back to the system. */
void gp_release_idle_seg(struct gp_ctx *ctx, struct gp_seg *seg);
/* Enforce host_cache_max and host_gc_idle_ms. */
void gp_host_gc(struct gp_ctx *ctx);
void gp_release_all_idle(struct gp_ctx *ctx);
/* The system refused a segment: every idle one goes, so that one retry
 * can use what they held; false when there was none.
 */
bool gp_host_release_idle(struct gp_ctx *ctx);
/* Worth that retry (see there). */
bool gp_host_refused(int ret);

/* keeper.c: the thread that gives idle segments back when another process
 * asks for them (kernel backend) and when they have been idle
 * host_gc_idle_ms, and has parked buffers given back (gp_host_on_parked),
 * also while the process calls nothing.  Started (lock
 * held) when a segment first goes idle, in the process that opened the
 * context only; stopped (lock not held) at close.
 */
void gp_keeper_start(struct gp_ctx *ctx);
void gp_keeper_stop(struct gp_ctx *ctx);
/* lock held.  The keeper for parked buffers (gp_host_on_parked): started
 * whatever host_gc_idle_ms says; 0 when it runs, or -errno.
 */
int gp_keeper_run(struct gp_ctx *ctx);
/* lock held.  Wake the keeper now (something was parked). */
void gp_keeper_wake(struct gp_ctx *ctx);
/* How long parked buffers are kept at most, unless host_gc_idle_ms is
 * shorter: long against a program's free and its next request of the
 * same size (microseconds), short against host_gc_idle_ms (10 s).
 */
#define GP_HOST_PARKED_MS	100

#endif /* GPUPOOL_USERLIB_HOST_POOLS_H */
