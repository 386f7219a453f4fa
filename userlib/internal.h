/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the files of libgpupool share.  Nothing here is exported:
 * the version script (libgpupool.map) exports gp_* only, and everything is
 * built with -fvisibility=hidden except the functions marked GP_API.
 *
 * Vocabulary.  A *segment* is one piece of memory obtained from the system
 * in one go: a memfd mapping (user backend), a chunk of /dev/gpupool (kernel
 * backend) or a cudaMalloc allocation (device pool).  It is registered with
 * CUDA (host) once, when it is mapped, and unregistered just before it goes
 * back.  Segments are the *regions* of a BFC core (core/bfc.h), which cuts
 * them into the *blocks* handed to callers.
 *
 * Rooms.  Each folder keeps its state in a struct of its own behind a
 * pointer of the context, and the others reach it through one header's
 * functions, never its fields; what a room has to tell (a reason for
 * gp_info's why, a granularity, a figure) it tells through them:
 *   host/     the host pools (struct gp_host; host/host.h): the segments,
 *             their granularity (asked of the backend), and why host
 *             memory is not registered (gp_host_info); share.c decides
 *             how another process's descriptor is imported
 *   dev/      the device pools, segments and virtual mode, and their
 *             tunables (struct gp_devpools; dev/devpools.h)
 *   io/       the file reader and its io_uring (struct gp_reader_pool;
 *             io/io.h)
 *   backend/  where host segments come from: struct gp_backend_ops
 *             (backend/backend.h), each backend's state behind
 *             ctx->backend_data, its reason and granularity told by its
 *             ops; backend.c has what both share, cgroupfs.c what the
 *             kernel backend reads of cgroups.  Neither calls the other.
 * Here: the context, the host tunables, and the small things all of them
 * use (map.c, list.h, bytes.h, log.c, env.c).  cuda.c binds the CUDA
 * runtime: ctx->cuda is its own, the others call its functions (cuda.h),
 * never the table.  ctx.c opens a context in steps (the options, CUDA,
 * the device pools, the backend, the host pools), and undoes those done
 * in the reverse order when one fails and at gp_close().
 *
 * Includes.  This header includes what the context itself needs, no
 * room's header: a file includes the header of each room it calls, so
 * that its includes say what it depends on.  The calls point one way
 * (docs/design.md): the context, the interposer and torch.c above the
 * host pools, the device pools and the file reader; the file reader
 * above the host pools, the host pools above the backends; the backends
 * call none of them (host/seg.h gives them the segment's type alone).
 */
#ifndef GPUPOOL_USERLIB_INTERNAL_H
#define GPUPOOL_USERLIB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpupool.h"
#include "bfc.h"	/* gp_bfc_policy() */
#include "cuda.h"	/* struct gp_cuda, in the context */

struct gp_backend_ops;
struct gp_devpools;
struct gp_host;
struct gp_reader_pool;

#define GP_API __attribute__((visibility("default")))

#define GP_KIB	(1024ull)
#define GP_MIB	(1024ull * 1024)
#define GP_GIB	(1024ull * 1024 * 1024)

/* Host tunables (PyTorch's CachingAllocator figures). */
#define GP_HOST_SMALL_MAX	(1 * GP_MIB)	/* requests up to this: small pool */
#define GP_HOST_SMALL_GRAN	512ull		/* small pool block granularity */
#define GP_HOST_MEDIUM_MAX	(10 * GP_MIB)	/* (1, 10] MiB: a 20 MiB segment */
#define GP_HOST_MEDIUM_SEG	(20 * GP_MIB)
#define GP_HUGE_PAGE		(2 * GP_MIB)	/* large segments round to this */
/* host_gc_idle_ms's default: an idle segment goes back after this long
 * (docs/library.md, "Idle memory circulates", says why this much).
 */
#define GP_HOST_GC_IDLE_MS	10000ull

/* The largest request either pool considers; larger ones fail with -ENOMEM
 * before any rounding (to pages, 2 MiB or a segment size), none of which
 * can then overflow.  No machine has 2^62 bytes to pin.
 */
#define GP_SIZE_MAX		(1ull << 62)

static inline uint64_t gp_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* map.c: uint64 -> pointer, open addressing.  Key 0 is not allowed. */
struct gp_map {
	uint64_t *keys;
	void **vals;
	uint64_t cap;		/* power of two, or 0 */
	uint64_t count;
	uint64_t tombs;
};
int gp_map_put(struct gp_map *m, uint64_t key, void *val);	/* 0 / -ENOMEM */
void *gp_map_get(const struct gp_map *m, uint64_t key);
void *gp_map_del(struct gp_map *m, uint64_t key);
void gp_map_destroy(struct gp_map *m);
/* Visit every entry; fn may not change the map. */
void gp_map_each(const struct gp_map *m, void (*fn)(void *arg, uint64_t key,
						    void *val), void *arg);

/* The context ---------------------------------------------------------------- */

struct gp_ctx {
	struct gp_options opt;		/* after defaults and environment (ctx.c) */
	bool debug;
	int backend;			/* GP_BACKEND_KERNEL / USER */
	const struct gp_backend_ops *ops;
	void *backend_data;		/* the backend's own state (backend/) */
	int numa_node;			/* resolved, -1 = none */
	uint64_t page_size;
	/* Why not the kernel backend, when AUTO went on to the user one
	 * (for gp_info's why).
	 */
	char fallback[128];

	struct gp_cuda cuda;		/* cuda.c's alone */

	struct gp_host *host;		/* host/: the host pools */
	struct gp_devpools *dev;	/* dev/: the device pools (with CUDA) */
	struct gp_reader_pool *io;	/* io/: the file reader, on first use */

	/* The last error. */
	pthread_mutex_t err_lock;
	char err[512];
};

/* ctx.c, a test hook (tests/lib/open_steps.c): gp_open fails with -ENOMEM
 * as if its step number n had (from 1; one past the last: after all of
 * them); 0, as everywhere but in that test: never.  Hidden, as every
 * internal symbol is.
 */
extern unsigned int gp_open_fail_step;
/* ctx.c, a test hook (tests/lib/host_page_size.c): the page size a new
 * context takes instead of the system's (a multiple of it, as 16 and
 * 64 KiB are of 4 KiB), so that a 4 KiB host runs the library as an
 * arm64 kernel with larger pages would; 0, everywhere else: the system's.
 */
extern uint64_t gp_page_size_test;

/* log.c */
void gp_debug(struct gp_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record the message for gp_last_error() and return err (negative). */
int gp_err(struct gp_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t gp_now_ms(void);
/* gp_bytes_fmt(GP_BYTES_PROSE): "1.5 GiB".  A function, not only the
 * inline: tests/fuzz/fuzz_ioctl_reply.c calls it to write what it expects.
 */
const char *gp_fmt_bytes(char *buf, size_t len, uint64_t bytes);

/* The BFC placement policy of every pool of the context. */
_Static_assert(GP_PLACEMENT_TF + BFC_POLICY_HALF == GP_PLACEMENT_HALF &&
	       GP_PLACEMENT_TF + BFC_POLICY_SEGREGATE == GP_PLACEMENT_SEG &&
	       GP_PLACEMENT_TF + BFC_POLICY_EXACT == GP_PLACEMENT_EXACT &&
	       GP_PLACEMENT_TF + BFC_POLICY_AGE == GP_PLACEMENT_AGE,
	       "gp_placement follows BFC_POLICY_*");
static inline uint32_t gp_bfc_policy(const struct gp_ctx *ctx)
{
	return ctx->opt.placement == GP_PLACEMENT_DEFAULT ? BFC_POLICY_DEFAULT :
	       (uint32_t)(ctx->opt.placement - GP_PLACEMENT_TF);
}

#endif /* GPUPOOL_USERLIB_INTERNAL_H */
