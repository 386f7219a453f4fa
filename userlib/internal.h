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
 */
#ifndef GPUPOOL_USERLIB_INTERNAL_H
#define GPUPOOL_USERLIB_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpupool.h"
#include "bfc.h"
#include "bytes.h"
#include "cuda.h"
#include "list.h"
#include "io/io.h"

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
/* Device tunables. */
#define GP_DEV_GRAN		256ull	/* cudaMalloc guarantees 256-byte alignment */
#define GP_DEV_INITIAL_SEG	(2 * GP_MIB)

/* The largest request either pool considers; larger ones fail with -ENOMEM
 * before any rounding (to pages, 2 MiB or a segment size), none of which
 * can then overflow.  No machine has 2^62 bytes to pin.
 */
#define GP_SIZE_MAX		(1ull << 62)
#define GP_DEV_MAX_SEG		(1ull << 46)	/* device segments: doubling stops here */

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

/* Host ---------------------------------------------------------------------- */

enum gp_hpool_kind { GP_POOL_SMALL, GP_POOL_LARGE, GP_NR_HPOOLS };

struct gp_seg {
	uint64_t addr;
	uint64_t size;
	int fd;			/* memfd / chunk fd, kept for shared segments; else -1 */
	uint32_t region_id;	/* in its pool's BFC (0 for own segments) */
	uint64_t khandle;	/* kernel backend: the chunk's id */
	uint64_t requested;	/* own segments: what was asked for */
	uint64_t idle_since;	/* ms (CLOCK_MONOTONIC_COARSE) when it went idle */
	uint32_t nr_used;	/* blocks in use in it */
	uint8_t kind;		/* enum gp_hpool_kind, or GP_SEG_OWN/GP_SEG_IMPORT */
	bool registered;
	bool huge;
	bool locked;		/* user backend: mlocked */
	uint16_t parts;		/* user backend: memfds mapped side by side (0: one) */
	uint64_t part_size;	/* user backend: each but the last one's size */
	struct gp_list link;		/* all segments of the context */
	struct gp_list idle_link;	/* LRU of idle pool segments */
};
#define GP_SEG_OWN	0x10	/* GP_HOST_SHARED buffer: a segment of its own */
#define GP_SEG_IMPORT	0x11	/* mapped by gp_host_import() */

struct gp_hpool {
	struct bfc *b;
	struct gp_map regions;	/* region id -> struct gp_seg */
};

/* What a host backend does; both fill seg->addr/size/fd/huge/khandle. */
struct gp_backend_ops {
	const char *name;
	int (*open)(struct gp_ctx *ctx);
	void (*close)(struct gp_ctx *ctx);
	/* Map a new segment of exactly size bytes (a multiple of the page);
	 * keep_fd: the segment may be exported, keep a descriptor for it.
	 */
	int (*map)(struct gp_ctx *ctx, struct gp_seg *seg, uint64_t size,
		   bool keep_fd);
	void (*unmap)(struct gp_ctx *ctx, struct gp_seg *seg);
	int (*export_fd)(struct gp_ctx *ctx, struct gp_seg *seg, int *fd);
	int (*import_fd)(struct gp_ctx *ctx, int fd, struct gp_seg *seg);
};
/* GP_OPEN_NUMA_STRICT to a node that cannot serve it: -ENODEV at open,
 * naming the nodes that can (nodes: their list, "0-1,3").
 */
int gp_strict_node_error(struct gp_ctx *ctx, const char *what,
			 const char *nodes);
extern const struct gp_backend_ops gp_backend_user;
extern const struct gp_backend_ops gp_backend_kernel;

/* Device -------------------------------------------------------------------- */

struct gp_dpool;	/* dev/ */

/* The virtual mode's default headroom: mapped bytes at most 1/11 (9.09%)
 * above the most in use.  Less remaps more often (1/16 remapped ~20 times
 * as often on the loader trace); more holds more idle memory.
 */
#define GP_DEV_HEADROOM_PPM	(1000000 / 11)

/* The context ---------------------------------------------------------------- */

struct gp_ctx {
	struct gp_options opt;		/* after defaults and environment */
	bool debug;
	bool require_cuda;
	/* Virtual-mode device pools: idle mapped bytes allowed above the
	 * most in use, in millionths of it (GPUPOOL_DEV_HEADROOM);
	 * UINT64_MAX: never unmap before a new mapping.
	 */
	uint64_t dev_headroom_ppm;
	int backend;			/* GP_BACKEND_KERNEL / USER */
	const struct gp_backend_ops *ops;
	int numa_node;			/* resolved, -1 = none */
	uint64_t page_size;
	bool hugetlb_ok;		/* MFD_HUGETLB worked or not tried yet */
	unsigned int populate_threads;	/* user backend: faulting in a segment */
	bool shmem_thp;			/* user backend: shmem THP allowed */
	bool populate_threads_set;	/* GPUPOOL_POPULATE_THREADS given */
	char why[192];			/* for gp_info */

	/* Kernel backend. */
	int kfd;
	uint32_t kmod_major, kmod_minor;
	uint64_t kgran;
	uint64_t knode_mask;		/* the module's sub-pools, by node */

	struct gp_cuda cuda;

	/* Host pools: everything below under host_lock. */
	pthread_mutex_t host_lock;
	struct gp_hpool hp[GP_NR_HPOOLS];
	struct gp_map own;		/* addr -> own / imported segment */
	struct gp_list segs;		/* every host segment */
	struct gp_list idle;		/* idle pool segments, oldest first */
	uint64_t idle_bytes;
	struct gp_host_stats hst;
	/* The runtime refused to initialize CUDA in this process (as it does
	 * in a child of fork() once the parent has used CUDA): host memory
	 * stays pinned but unregistered from then on (gp_seg_register()).
	 */
	bool host_unregistered;

	/* Device pools, created on first use under dev_lock. */
	pthread_mutex_t dev_lock;
	struct gp_dpool **dev;		/* cuda.device_count entries */

	struct gp_reader_pool *io;	/* io/, created on first use */

	/* The last error. */
	pthread_mutex_t err_lock;
	char err[512];
};

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

/* host/ */
int gp_host_init(struct gp_ctx *ctx);
void gp_host_fini(struct gp_ctx *ctx);
/* Map + register a segment and account it (host_lock held). */
int gp_seg_create(struct gp_ctx *ctx, uint64_t size, int kind, bool keep_fd,
		  struct gp_seg **out);
/* Unregister, unmap, unaccount and free a segment (host_lock held). */
void gp_seg_destroy(struct gp_ctx *ctx, struct gp_seg *seg);
int gp_seg_register(struct gp_ctx *ctx, struct gp_seg *seg);
void gp_seg_unregister(struct gp_ctx *ctx, struct gp_seg *seg);
void gp_seg_link(struct gp_ctx *ctx, struct gp_seg *seg);
/* Room for size more bytes mapped under host_limit, releasing idle
 * segments; -ENOMEM (message set) when even that is not enough.
 */
int gp_host_make_room(struct gp_ctx *ctx, uint64_t size);
/* The segment of [addr, addr + len) when that lies inside one buffer in use
 * (a pool block, a shared or an imported buffer): fn(arg, seg) runs on it
 * under host_lock, the same hold as the lookup, and its value is returned;
 * -ENOENT (fn not called) when there is none.
 */
int gp_host_seg_of(struct gp_ctx *ctx, uint64_t addr, uint64_t len,
		   int (*fn)(void *arg, const struct gp_seg *seg), void *arg);


/* dev/ */
void gp_dev_fini(struct gp_ctx *ctx);
/* The mode of device's pool (created if need be), enum gp_dev_mode. */
int gp_dev_mode(struct gp_ctx *ctx, int device);
/* gp_dev_free() with the device known (-1: search every device). */
int gp_dev_free_on(struct gp_ctx *ctx, int device, void *ptr, gp_stream_t stream);

/* backend/kernel.c: probe /dev/gpupool for AUTO; 0 when usable. */
int gp_kernel_probe(struct gp_ctx *ctx, bool forced);
/* Map a chunk descriptor from GPUPOOL_IOC_EXPORT; -ENOTTY if fd is not one. */
int gp_kernel_import_chunk(struct gp_ctx *ctx, int fd, struct gp_seg *seg);

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
