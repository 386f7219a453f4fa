/* SPDX-License-Identifier: MIT */
/*
 * reader.h - inside the file reader (gp_read, gp_reader_*): what its files
 * share.  Nothing outside userlib/io/ includes it; the rest of the library
 * sees io.h.
 *
 *   ring.c      the io_uring (ring.h)
 *   pool.c      the context's readers: the list, gp_read()'s idle ones,
 *               the counters, a segment going away
 *   fixed.c     each reader's fixed-buffer slots
 *   request.c   one request: planned, its unaligned ends read at once, its
 *               body queued (or read at once), finished
 *   file.c      its file: size, O_DIRECT alignment and descriptor, and the
 *               reads made at once
 *   reader.c    the API: gp_reader_*, gp_read
 *
 * Locks: pool->lock is the file reader's own (the list of readers, the
 * pooled ones, every reader's fixed-buffer slots).  The host pools'
 * lock may be held when it is taken (a segment going calls the hook
 * gp_io_get() sets, a request's segment found calls gp_fixed_slot()),
 * never the other way round.
 */
#ifndef GPUPOOL_USERLIB_IO_READER_H
#define GPUPOOL_USERLIB_IO_READER_H

#include <sys/types.h>

#include "internal.h"
#include "list.h"
#include "io/io.h"
#include "io/ring.h"

#define GP_IO_FIXED_SLOTS	64		/* fixed buffers per ring */
#define GP_IO_FIXED_MAX		(1ull << 30)	/* the kernel's cap per buffer */
#define GP_IO_BOUNCE		(1ull << 20)	/* bounce block for unaligned bodies */
#define GP_IO_DEFAULT_DEPTH	64
#define GP_IO_MAX_DEPTH		4096
#define GP_IO_POOLED_MAX	16		/* idle readers kept for gp_read() */
#define GP_IO_POOLED_DEPTH	4		/* and their depth */

enum { GP_READ_PATH_FIXED = 1, GP_READ_PATH_DIRECT, GP_READ_PATH_BUFFERED };

struct gp_fixed_slot {
	uint64_t addr, size;	/* 0 size: free; UINT64_MAX: refused */
};

struct gp_dfd {
	int fd;			/* O_DIRECT descriptor, -1 when free */
	unsigned int refs;	/* requests in flight using it */
};

struct gp_reader {
	struct gp_ctx *ctx;
	struct gp_ring ring;
	bool has_ring;
	bool fixed_table;		/* sparse buffer table registered */
	bool pooled;			/* owned by gp_read()'s pool */
	unsigned int depth;
	unsigned int in_ring;		/* bodies in flight */
	unsigned int pending;		/* requests not yet reported by wait */
	struct gp_fixed_slot fixed[GP_IO_FIXED_SLOTS];	/* under pool->lock */
	struct gp_dfd *dfds;		/* depth entries */
	struct gp_read_req **done;	/* completed, not yet reported */
	unsigned int ndone;
	struct gp_list link;		/* the context's readers (pool->lock) */
	struct gp_reader *free_next;	/* pooled and idle */
};

/* The context's readers (ctx->io). */
struct gp_reader_pool {
	pthread_mutex_t lock;
	struct gp_list readers;
	struct gp_reader *free;
	unsigned int nfree;
	int fixed_state;		/* GP_IO_FIXED_* (atomic) */
	int fixed_err;
	struct gp_read_stats st;	/* counters: atomic adds */
};

#define GP_IO_STAT_ADD(pool, field, n) \
	__atomic_fetch_add(&(pool)->st.field, (uint64_t)(n), __ATOMIC_RELAXED)

/* pool.c */
/* The context's pool, created once, on first use; NULL when out of
 * memory.
 */
struct gp_reader_pool *gp_io_get(struct gp_ctx *ctx);
int gp_reader_new(struct gp_ctx *ctx, struct gp_reader_pool *pool,
		  unsigned int depth, bool pooled, struct gp_reader **out);
/* Off the context's list; gp_reader_free() frees it. */
void gp_reader_unlink(struct gp_reader_pool *pool, struct gp_reader *r);
void gp_reader_free(struct gp_reader *r);
/* gp_read()'s idle readers: one (or NULL), and one back (false: the pool
 * is full, close it).
 */
struct gp_reader *gp_reader_pool_take(struct gp_reader_pool *pool);
bool gp_reader_pool_put(struct gp_reader_pool *pool, struct gp_reader *r);

/* fixed.c */
/* The sparse table of r's ring; records why not in the pool's state. */
void gp_fixed_table_init(struct gp_reader *r, struct gp_reader_pool *pool);
/* The slot of r holding [addr, addr + size), registering it first if need
 * be; -1 when it cannot be (refused, full, too large).  Called from
 * gp_host_seg_of()'s fn, so that the segment cannot go (and its hook run)
 * before the slot is recorded.
 */
int gp_fixed_slot(struct gp_reader *r, struct gp_reader_pool *pool,
		  uint64_t addr, uint64_t size);
/* pool->lock held: r's slot of the segment at addr is emptied; the
 * registrations dropped (0 or 1).
 */
unsigned int gp_fixed_drop(struct gp_reader *r, uint64_t addr);
/* Registrations r holds. */
unsigned int gp_fixed_count(const struct gp_reader *r);

/* file.c */
/* How a request reads its file. */
struct gp_file {
	int fd;			/* the caller's */
	int dfd;		/* O_DIRECT, or -1 */
	uint32_t align;		/* file offset / length alignment for dfd */
	uint32_t memalign;	/* memory alignment for dfd */
	bool buffered_ok;
};
/* What statx (or the block device) says of it. */
struct gp_statx {
	uint32_t mode;
	uint64_t size;
	uint32_t align, memalign;	/* 0: no O_DIRECT */
	bool direct_known;
};
int gp_file_stat(int fd, struct gp_statx *s);
/* The O_DIRECT alignment assumed where nothing says: the page size. */
uint32_t gp_dio_align_default(void);
/* An O_DIRECT descriptor of fd's file in r's table (index), or -1. */
int gp_open_direct(struct gp_reader *r, int fd, int accmode);
/* Drop a reference on r's O_DIRECT descriptor idx (-1: none). */
void gp_dfd_put(struct gp_reader *r, int idx);
/* Read [off, off + len) into dst without the ring: O_DIRECT straight into
 * dst where aligned, through a bounce block where not, buffered only when
 * there is no O_DIRECT descriptor (f->dfd becomes -1 when O_DIRECT turns
 * out stricter than the file system said).  Bytes read (short only at the
 * end of the file) or -errno.
 */
ssize_t gp_io_sync(struct gp_ctx *ctx, struct gp_reader_pool *io,
		   struct gp_file *f, uint64_t off, char *dst, size_t len);

/* request.c */
/* The O_DIRECT descriptors one submission opened, by caller's fd. */
struct gp_fdmap {
	int *fd, *idx;
	unsigned int n;
};
/* Plan and start one request: its ends now, its body in the ring (or now,
 * without one).  Completes it (r->done) unless the body is in flight.
 */
void gp_req_start(struct gp_reader *r, struct gp_read_req *q,
		  struct gp_fdmap *map);
/* The body came back with res (bytes or -errno): finish the request. */
void gp_req_body_done(struct gp_reader *r, struct gp_read_req *q, ssize_t res);
/* A completion's bytes, counted on its path. */
void gp_req_count_cqe(struct gp_reader_pool *pool, struct gp_read_req *q,
		      int res);
#endif /* GPUPOOL_USERLIB_IO_READER_H */
