// SPDX-License-Identifier: MIT
/*
 * io.c - reading files straight into pool memory: gp_read() and the batched
 * reader (gp_reader_*).
 *
 * A request [offset, offset + len) of a file into dst is cut in three:
 *  - the head, from offset up to the file's next O_DIRECT boundary, and the
 *    tail, from the last boundary to the end: each read with O_DIRECT into an
 *    aligned bounce block and copied (at submission, synchronously);
 *  - the body, aligned on both sides: one read, best path first:
 *    (a) io_uring READ_FIXED on an O_DIRECT descriptor, the pool segment
 *        registered once as a fixed buffer of the reader's ring (refused by
 *        6.1 (not 6.12) for file-backed mappings that are not shmem,
 *        i.e. gpupool.ko's chunks: detected once per context, then (b));
 *    (b) io_uring READ (or pread without a ring) on the O_DIRECT descriptor;
 *    (c) buffered, when O_DIRECT is not possible (the file system refuses
 *        it, the descriptor is no regular file or block device) or asked
 *        for with GP_READ_BUFFERED.  GP_READ_NO_CACHE makes (c) an error.
 *  A body whose memory and file offsets are not aligned alike goes through
 *  the bounce block as well (O_DIRECT, one copy, still no page cache).
 *
 * The O_DIRECT descriptor is a second open of the caller's file through
 * /proc/self/fd (the caller's descriptor and its flags stay untouched); it
 * is opened once per distinct descriptor per submission and closed when the
 * last request using it completes, so that no file is kept open behind the
 * caller's back.
 *
 * Lengths are clamped to the file's size as seen at submission; a file
 * truncated under the read gives a short count (what the kernel returned),
 * never bytes that are not the file's.
 *
 * Locks: host_lock (the segment and allocation of dst, fixed-buffer slots)
 * is taken before io->lock (the list of readers, the pooled readers).
 * gp_seg_destroy() calls gp_io_seg_gone() under host_lock.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* <linux/stat.h> (for statx's O_DIRECT alignment, which glibc 2.36's struct
 * lacks) defines the mode bits but not the tests.
 */
#ifndef S_ISREG
#define S_ISREG(m)	(((m) & S_IFMT) == S_IFREG)
#define S_ISDIR(m)	(((m) & S_IFMT) == S_IFDIR)
#define S_ISBLK(m)	(((m) & S_IFMT) == S_IFBLK)
#endif

#define GP_IO_FIXED_SLOTS	64		/* fixed buffers per ring */
#define GP_IO_FIXED_MAX		(1ull << 30)	/* the kernel's cap per buffer */
#define GP_IO_BOUNCE		(1ull << 20)	/* bounce block for unaligned bodies */
#define GP_IO_DEFAULT_DEPTH	64
#define GP_IO_MAX_DEPTH		4096
#define GP_IO_POOLED_MAX	16		/* idle readers kept for gp_read() */

#define GP_FIXED_UNKNOWN	GP_IO_FIXED_UNKNOWN
#define GP_FIXED_OK		GP_IO_FIXED_OK
#define GP_FIXED_REFUSED	GP_IO_FIXED_REFUSED
#define GP_FIXED_NO_RING	GP_IO_FIXED_NO_RING
#define GP_FIXED_NO_TABLE	GP_IO_FIXED_NO_TABLE
enum { GP_READ_PATH_FIXED = 1, GP_READ_PATH_DIRECT, GP_READ_PATH_BUFFERED };

struct gp_ring {
	int fd;
	unsigned int entries;
	void *map;
	size_t map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	unsigned int unsubmitted;
};

struct gp_fixed_slot {
	uint64_t addr, size;	/* 0 size: free */
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
	struct gp_fixed_slot fixed[GP_IO_FIXED_SLOTS];	/* under host_lock */
	struct gp_dfd *dfds;		/* depth entries */
	struct gp_read_req **done;	/* completed, not yet reported */
	unsigned int ndone;
	struct gp_reader *next, *prev;	/* the context's readers (io->lock) */
	struct gp_reader *free_next;	/* pooled and idle */
};

struct gp_io {
	pthread_mutex_t lock;
	struct gp_reader *readers;
	struct gp_reader *free;
	unsigned int nfree;
	int fixed_state;		/* GP_FIXED_* (atomic) */
	int fixed_err;
	struct gp_read_stats st;	/* counters: atomic adds */
};

/* What a request carries between submission and completion (in its
 * internal[] words).
 */
struct gp_req_state {
	uint64_t head;		/* bytes of head, read before the body */
	uint64_t body_off;	/* file offset of the body */
	uint64_t body_len;
	uint32_t tail_len, tail_got;
	int32_t dfd;		/* index in the reader's dfds, or -1 */
	uint32_t flags;
	uint64_t total;		/* the clamped length */
	uint32_t path;		/* the body's: GP_READ_PATH_* */
};
_Static_assert(sizeof(struct gp_req_state) <= sizeof(((struct gp_read_req *)0)->internal),
	       "gp_read_req.internal too small");

static inline struct gp_req_state *req_state(struct gp_read_req *r)
{
	return (struct gp_req_state *)(void *)r->internal;
}

#define STAT_ADD(io, field, n) \
	__atomic_fetch_add(&(io)->st.field, (uint64_t)(n), __ATOMIC_RELAXED)

/* The ring, raw system calls ---------------------------------------------- */

static int ring_init(struct gp_ring *r, unsigned int entries)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *m;

	memset(&p, 0, sizeof(p));
	memset(r, 0, sizeof(*r));
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		close(r->fd);
		return -EOPNOTSUPP;
	}
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->map_len = sq_len > cq_len ? sq_len : cq_len;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->map == MAP_FAILED)
		goto fail;
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		munmap(r->map, r->map_len);
		goto fail;
	}
	m = r->map;
	r->entries = p.sq_entries;
	r->sq_head = (unsigned int *)(m + p.sq_off.head);
	r->sq_tail = (unsigned int *)(m + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(m + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(m + p.sq_off.array);
	r->cq_head = (unsigned int *)(m + p.cq_off.head);
	r->cq_tail = (unsigned int *)(m + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(m + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);
	return 0;
fail:
	{
		int e = errno;

		close(r->fd);
		return -e;
	}
}

static void ring_exit(struct gp_ring *r)
{
	munmap(r->sqes, r->sqes_len);
	munmap(r->map, r->map_len);
	close(r->fd);
}

static struct io_uring_sqe *ring_sqe(struct gp_ring *r)
{
	unsigned int tail = *r->sq_tail;
	unsigned int head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	struct io_uring_sqe *sqe;
	unsigned int idx;

	if (tail - head >= r->entries)
		return NULL;
	idx = tail & *r->sq_mask;
	sqe = &r->sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	r->sq_array[idx] = idx;
	return sqe;
}

static void ring_push(struct gp_ring *r)
{
	__atomic_store_n(r->sq_tail, *r->sq_tail + 1, __ATOMIC_RELEASE);
	r->unsubmitted++;
}

/* Submit what is queued and wait for min_complete completions; EINTR is
 * retried.  0 or -errno.
 */
static int ring_enter(struct gp_ring *r, unsigned int min_complete)
{
	unsigned int flags = min_complete ? IORING_ENTER_GETEVENTS : 0;
	long ret;

	for (;;) {
		ret = syscall(__NR_io_uring_enter, r->fd, r->unsubmitted,
			      min_complete, flags, NULL, 0);
		if (ret >= 0) {
			r->unsubmitted -= (unsigned int)ret;
			if (!r->unsubmitted || min_complete)
				return 0;
			continue;
		}
		if (errno == EINTR) {
			/* The wait was interrupted: submitted nothing more
			 * (or everything); look at the completions again.
			 */
			if (min_complete && !r->unsubmitted)
				return 0;
			continue;
		}
		if (errno == EAGAIN || errno == EBUSY) {
			/* Completions must be reaped first. */
			return r->unsubmitted ? 0 : -errno;
		}
		return -errno;
	}
}

static int ring_register(struct gp_ring *r, unsigned int op, void *arg,
			 unsigned int nr)
{
	return syscall(__NR_io_uring_register, r->fd, op, arg, nr) < 0 ?
	       -errno : 0;
}

/* Put iov (len 0: empty) into fixed-buffer slot idx. */
static int ring_fixed_update(struct gp_ring *r, unsigned int idx,
			     void *base, size_t len)
{
	struct iovec iov = { .iov_base = base, .iov_len = len };
	struct io_uring_rsrc_update2 up;

	memset(&up, 0, sizeof(up));
	up.offset = idx;
	up.data = (uint64_t)(uintptr_t)&iov;
	up.nr = 1;
	return ring_register(r, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
}

static int ring_fixed_table(struct gp_ring *r)
{
	struct io_uring_rsrc_register rr;

	memset(&rr, 0, sizeof(rr));
	rr.nr = GP_IO_FIXED_SLOTS;
	rr.flags = IORING_RSRC_REGISTER_SPARSE;
	return ring_register(r, IORING_REGISTER_BUFFERS2, &rr, sizeof(rr));
}

/* The context's state -------------------------------------------------------- */

static struct gp_io *gp_io_get(struct gp_ctx *ctx)
{
	struct gp_io *io;

	pthread_mutex_lock(&ctx->host_lock);
	io = ctx->io;
	if (!io) {
		io = calloc(1, sizeof(*io));
		if (io) {
			pthread_mutex_init(&io->lock, NULL);
			ctx->io = io;
		}
	}
	pthread_mutex_unlock(&ctx->host_lock);
	return io;
}

/* Where dst lies: one in-use allocation of the context holding
 * [dst, dst + len), and the segment around it.
 */
struct gp_find {
	uint64_t addr, len;
	int found;		/* 1 inside one allocation, -1 not */
};

static int gp_find_chunk(void *arg, const struct bfc_chunk_info *c)
{
	struct gp_find *f = arg;

	if (c->addr + c->size <= f->addr)
		return 0;
	f->found = c->in_use && c->addr <= f->addr &&
		   f->addr + f->len <= c->addr + c->size ? 1 : -1;
	return -1;
}

/* host_lock held.  The segment holding the allocation, or NULL. */
static struct gp_seg *gp_io_find_seg(struct gp_ctx *ctx, uint64_t addr,
				     uint64_t len)
{
	struct gp_seg *seg;
	struct gp_find f = { .addr = addr, .len = len };
	struct bfc_cursor cur;

	for (seg = ctx->segs; seg; seg = seg->next)
		if (addr >= seg->addr && addr - seg->addr < seg->size)
			break;
	if (!seg || len > seg->size - (addr - seg->addr))
		return NULL;
	if (seg->kind == GP_SEG_OWN || seg->kind == GP_SEG_IMPORT)
		return seg;
	if (seg->kind >= GP_NR_HPOOLS)
		return NULL;
	memset(&cur, 0, sizeof(cur));
	cur.pos = seg->addr;
	while (bfc_walk_chunks(ctx->hp[seg->kind].b, &cur, 0, gp_find_chunk,
			       &f) == BFC_WALK_MORE)
		;
	return f.found == 1 ? seg : NULL;
}

/* Readers ------------------------------------------------------------------- */

static void gp_reader_free(struct gp_reader *r)
{
	unsigned int i;

	if (r->has_ring)
		ring_exit(&r->ring);
	for (i = 0; i < r->depth; i++)
		if (r->dfds[i].fd >= 0)
			close(r->dfds[i].fd);
	free(r->dfds);
	free(r->done);
	free(r);
}

static int gp_reader_new(struct gp_ctx *ctx, struct gp_io *io,
			 unsigned int depth, bool pooled, struct gp_reader **out)
{
	struct gp_reader *r;
	unsigned int i;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ctx = ctx;
	r->depth = depth;
	r->pooled = pooled;
	r->dfds = calloc(depth, sizeof(*r->dfds));
	r->done = calloc(depth, sizeof(*r->done));
	if (!r->dfds || !r->done) {
		free(r->dfds);
		free(r->done);
		free(r);
		return -ENOMEM;
	}
	for (i = 0; i < depth; i++)
		r->dfds[i].fd = -1;
	ret = ring_init(&r->ring, depth);
	if (!ret) {
		int unknown = GP_FIXED_UNKNOWN;

		r->has_ring = true;
		ret = ring_fixed_table(&r->ring);
		r->fixed_table = !ret;
		/* A sparse table (IORING_RSRC_REGISTER_SPARSE) is 5.19's:
		 * older kernels say EINVAL, and reads use plain READ.
		 */
		if (ret) {
			gp_debug(ctx, "io_uring buffer table: %s; no fixed buffers",
				 strerror(-ret));
			__atomic_compare_exchange_n(&io->fixed_state, &unknown,
						    GP_FIXED_NO_TABLE, false,
						    __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
		}
	} else {
		gp_debug(ctx, "io_uring_setup: %s; reads use pread", strerror(-ret));
		__atomic_store_n(&io->fixed_state, GP_FIXED_NO_RING, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&io->lock);
	r->next = io->readers;
	if (io->readers)
		io->readers->prev = r;
	io->readers = r;
	io->st.readers++;
	pthread_mutex_unlock(&io->lock);
	*out = r;
	return 0;
}

static void gp_reader_unlink(struct gp_io *io, struct gp_reader *r)
{
	unsigned int i;

	pthread_mutex_lock(&io->lock);
	for (i = 0; i < GP_IO_FIXED_SLOTS; i++)
		if (r->fixed[i].size && r->fixed[i].size != UINT64_MAX)
			io->st.fixed_registered--;
	if (r->prev)
		r->prev->next = r->next;
	else
		io->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	io->st.readers--;
	pthread_mutex_unlock(&io->lock);
}

/* host_lock held: a segment goes away; no ring may keep its pages. */
void gp_io_seg_gone(struct gp_ctx *ctx, struct gp_seg *seg)
{
	struct gp_io *io = ctx->io;
	struct gp_reader *r;
	unsigned int i;

	if (!io)
		return;
	pthread_mutex_lock(&io->lock);
	for (r = io->readers; r; r = r->next)
		for (i = 0; i < GP_IO_FIXED_SLOTS; i++) {
			if (!r->fixed[i].size || r->fixed[i].addr != seg->addr)
				continue;
			if (r->fixed[i].size != UINT64_MAX) {
				ring_fixed_update(&r->ring, i, NULL, 0);
				io->st.fixed_registered--;
			}
			r->fixed[i].addr = 0;
			r->fixed[i].size = 0;
		}
	pthread_mutex_unlock(&io->lock);
}

void gp_io_fini(struct gp_ctx *ctx)
{
	struct gp_io *io = ctx->io;

	if (!io)
		return;
	while (io->readers) {
		struct gp_reader *r = io->readers;

		io->readers = r->next;
		gp_reader_free(r);
	}
	pthread_mutex_destroy(&io->lock);
	free(io);
	ctx->io = NULL;
}

/* host_lock held.  The fixed-buffer slot of r holding seg, registering it
 * first if need be; -1 when it cannot be (refused, full, too large).
 */
static int gp_io_fixed_slot(struct gp_ctx *ctx, struct gp_io *io,
			    struct gp_reader *r, struct gp_seg *seg)
{
	int i, free_slot = -1, ret;

	if (!r->has_ring || !r->fixed_table ||
	    __atomic_load_n(&io->fixed_state, __ATOMIC_RELAXED) == GP_FIXED_REFUSED ||
	    seg->size > GP_IO_FIXED_MAX)
		return -1;
	for (i = 0; i < GP_IO_FIXED_SLOTS; i++) {
		if (r->fixed[i].size && r->fixed[i].addr == seg->addr)
			return r->fixed[i].size == UINT64_MAX ? -1 : i;
		if (!r->fixed[i].size && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -1;
	ret = ring_fixed_update(&r->ring, (unsigned int)free_slot,
				(void *)(uintptr_t)seg->addr, seg->size);
	pthread_mutex_lock(&io->lock);
	r->fixed[free_slot].addr = seg->addr;
	if (ret) {
		/* Remember the failure for this segment: no retry per read. */
		r->fixed[free_slot].size = UINT64_MAX;
		io->st.fixed_refusals++;
		if (ret == -EOPNOTSUPP || ret == -EFAULT) {
			__atomic_store_n(&io->fixed_state, GP_FIXED_REFUSED, __ATOMIC_RELAXED);
			io->fixed_err = -ret;
		}
		gp_debug(ctx, "io_uring fixed buffer %#llx + %llu: %s",
			 (unsigned long long)seg->addr,
			 (unsigned long long)seg->size, strerror(-ret));
		pthread_mutex_unlock(&io->lock);
		return -1;
	}
	r->fixed[free_slot].size = seg->size;
	io->st.fixed_registered++;
	if (__atomic_load_n(&io->fixed_state, __ATOMIC_RELAXED) != GP_FIXED_REFUSED)
		__atomic_store_n(&io->fixed_state, GP_FIXED_OK, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&io->lock);
	return free_slot;
}

/* Synchronous pieces ------------------------------------------------------- */

struct gp_file {
	int fd;			/* the caller's */
	int dfd;		/* O_DIRECT, or -1 */
	uint32_t align;		/* file offset / length alignment for dfd */
	uint32_t memalign;	/* memory alignment for dfd */
	bool buffered_ok;
};

static ssize_t gp_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Read [off, off + len) into dst without the ring: O_DIRECT straight into
 * dst where aligned, through a bounce block where not, buffered only when
 * there is no O_DIRECT descriptor.  Bytes read (short only at the end of
 * the file) or -errno.
 */
static ssize_t gp_io_sync(struct gp_ctx *ctx, struct gp_io *io,
			  struct gp_file *f, uint64_t off, char *dst, size_t len)
{
	void *bounce = NULL;
	size_t got = 0;
	ssize_t n = 0;

	while (got < len) {
		uint64_t o = off + got;
		char *d = dst + got;
		size_t want = len - got;

		if (f->dfd >= 0 && !(o % f->align) && !((uintptr_t)d % f->memalign) &&
		    want >= f->align) {
			want -= want % f->align;
			if (want > (1u << 30))
				want = 1u << 30;
			n = gp_pread_full(f->dfd, d, want, o);
			if (n > 0) {
				STAT_ADD(io, direct, 1);
				STAT_ADD(io, direct_bytes, n);
			}
		} else if (f->dfd >= 0) {
			uint64_t bo = o - o % f->align;
			size_t blen = gp_round_up(o - bo + want, f->align);
			size_t skip = o - bo;

			if (blen > GP_IO_BOUNCE)
				blen = GP_IO_BOUNCE;
			if (!bounce && posix_memalign(&bounce, f->align > f->memalign ?
						      f->align : f->memalign,
						      GP_IO_BOUNCE)) {
				bounce = NULL;
				n = -ENOMEM;
				break;
			}
			n = gp_pread_full(f->dfd, bounce, blen, bo);
			if (n > 0) {
				n = (size_t)n > skip ? n - (ssize_t)skip : 0;
				if ((size_t)n > want)
					n = (ssize_t)want;
				memcpy(d, (char *)bounce + skip, (size_t)n);
				STAT_ADD(io, bounce, 1);
				STAT_ADD(io, bounce_bytes, n);
			}
		} else if (f->buffered_ok) {
			n = gp_pread_full(f->fd, d, want, o);
			if (n > 0) {
				STAT_ADD(io, buffered, 1);
				STAT_ADD(io, buffered_bytes, n);
			}
		} else {
			n = gp_err(ctx, -EINVAL, "gp_read: the file cannot be read "
				   "with O_DIRECT and GP_READ_NO_CACHE forbids the page cache");
		}
		if (n == -EINVAL && f->dfd >= 0) {
			/* Stricter alignment than the file system said: no
			 * O_DIRECT for the rest of this request.
			 */
			f->dfd = -1;
			continue;
		}
		if (n < 0) {
			free(bounce);
			return n;
		}
		if (n == 0)
			break;		/* end of file */
		got += (size_t)n;
	}
	free(bounce);
	return n < 0 ? n : (ssize_t)got;
}

/* Planning a request ---------------------------------------------------------- */

struct gp_statx {
	uint32_t mode;
	uint64_t size;
	uint32_t align, memalign;	/* 0: no O_DIRECT */
	bool direct_known;
};

static int gp_file_stat(int fd, struct gp_statx *s)
{
	struct statx stx;
	uint64_t bsize;
	int lbs;

	memset(&stx, 0, sizeof(stx));
	memset(s, 0, sizeof(*s));
	if (syscall(__NR_statx, fd, "", AT_EMPTY_PATH,
		    STATX_TYPE | STATX_SIZE | STATX_DIOALIGN, &stx) < 0)
		return -errno;
	s->mode = stx.stx_mode;
	s->size = stx.stx_size;
	if (S_ISBLK(stx.stx_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &bsize) == 0)
			s->size = bsize;
		if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
			s->align = s->memalign = (uint32_t)lbs;
			s->direct_known = true;
		}
	} else if (S_ISREG(stx.stx_mode) && (stx.stx_mask & STATX_DIOALIGN)) {
		s->align = stx.stx_dio_offset_align;
		s->memalign = stx.stx_dio_mem_align;
		s->direct_known = true;
	}
	if (!s->direct_known) {
		/* The file system does not say: the page, which every
		 * logical block size up to it divides.
		 */
		s->align = s->memalign = 4096;
	}
	return 0;
}

/* An O_DIRECT descriptor of fd's file in r's table (index), or -1. */
static int gp_open_direct(struct gp_reader *r, int fd, int accmode)
{
	char path[64];
	unsigned int i;
	int dfd;

	if (accmode & O_DIRECT) {
		dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	} else {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOATIME);
		if (dfd < 0 && errno == EPERM)
			dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	}
	if (dfd < 0)
		return -1;
	for (i = 0; i < r->depth; i++)
		if (r->dfds[i].fd < 0) {
			r->dfds[i].fd = dfd;
			r->dfds[i].refs = 1;	/* the submission's, until it ends */
			return (int)i;
		}
	close(dfd);
	return -1;
}

static void gp_dfd_put(struct gp_reader *r, int idx)
{
	if (idx < 0)
		return;
	if (--r->dfds[idx].refs == 0) {
		close(r->dfds[idx].fd);
		r->dfds[idx].fd = -1;
	}
}

static void gp_req_done(struct gp_reader *r, struct gp_read_req *q, ssize_t res)
{
	struct gp_io *io = r->ctx->io;
	struct gp_req_state *s = req_state(q);

	q->result = res;
	if (res < 0)
		STAT_ADD(io, errors, 1);
	else if ((uint64_t)res < q->len)
		STAT_ADD(io, short_reads, 1);
	if (res > 0)
		STAT_ADD(io, bytes, res);
	gp_dfd_put(r, s->dfd);
	s->dfd = -1;
	r->done[r->ndone++] = q;
}

/* The body came back with res (bytes or -errno): finish the request. */
static void gp_body_done(struct gp_reader *r, struct gp_read_req *q, ssize_t res)
{
	struct gp_ctx *ctx = r->ctx;
	struct gp_req_state *s = req_state(q);
	struct gp_file f = {
		.fd = q->fd,
		.dfd = s->dfd >= 0 ? r->dfds[s->dfd].fd : -1,
		.buffered_ok = !(s->flags & GP_READ_NO_CACHE),
	};
	struct gp_statx st;
	uint64_t body = 0;
	ssize_t more;

	if (res == -EINTR || res == -EAGAIN || (res == -EINVAL && f.dfd >= 0)) {
		/* Interrupted, or O_DIRECT refused this piece: go on below
		 * synchronously (gp_io_sync drops O_DIRECT on -EINVAL).
		 */
		res = 0;
	}
	if (res < 0) {
		gp_req_done(r, q, gp_err(ctx, (int)res, "gp_read: reading fd %d at %llu: %s",
					 q->fd, (unsigned long long)s->body_off,
					 strerror((int)-res)));
		return;
	}
	body = (uint64_t)res;
	if (body < s->body_len) {
		/* Short: at the end of the file, or the kernel stopped early. */
		if (s->flags & GP_READ_BUFFERED)
			f.dfd = -1;
		if (gp_file_stat(q->fd, &st) == 0 && f.dfd >= 0) {
			f.align = st.align;
			f.memalign = st.memalign;
		} else {
			f.align = f.memalign = 4096;
		}
		more = gp_io_sync(ctx, ctx->io, &f, s->body_off + body,
				  (char *)q->dst + s->head + body, s->body_len - body);
		if (more < 0) {
			gp_req_done(r, q, more);
			return;
		}
		body += (uint64_t)more;
	}
	if (body < s->body_len)
		gp_req_done(r, q, (ssize_t)(s->head + body));
	else
		gp_req_done(r, q, (ssize_t)(s->head + s->body_len + s->tail_got));
}

/* Plan and start one request: head and tail now, the body in the ring (or
 * now, without one).  Completes it (r->done) unless the body is in flight.
 */
static void gp_req_start(struct gp_reader *r, struct gp_read_req *q,
			 int *fdmap_fd, int *fdmap_idx, unsigned int *nmap)
{
	struct gp_ctx *ctx = r->ctx;
	struct gp_io *io = ctx->io;
	struct gp_req_state *s = req_state(q);
	uint64_t dst = (uint64_t)(uintptr_t)q->dst;
	struct gp_file f = { .fd = q->fd, .dfd = -1 };
	struct gp_statx st;
	struct gp_seg *seg;
	struct io_uring_sqe *sqe;
	uint64_t len, head, body, tail;
	int acc, slot = -1, ret;
	unsigned int i;
	ssize_t n;

	memset(s, 0, sizeof(*s));
	s->dfd = -1;
	s->flags = q->flags;
	q->result = 0;
	STAT_ADD(io, requests, 1);
	if (q->flags & ~GP_READ_VALID_FLAGS ||
	    (q->flags & GP_READ_NO_CACHE && q->flags & GP_READ_BUFFERED)) {
		gp_req_done(r, q, gp_err(ctx, -EINVAL, "gp_read: bad flags %#x", q->flags));
		return;
	}
	if (!q->len || q->len > GP_SIZE_MAX || dst + q->len < dst ||
	    q->offset > (uint64_t)INT64_MAX - q->len) {
		gp_req_done(r, q, gp_err(ctx, -EINVAL,
					 "gp_read: length %zu at offset %llu is 0 or overflows",
					 q->len, (unsigned long long)q->offset));
		return;
	}
	pthread_mutex_lock(&ctx->host_lock);
	seg = gp_io_find_seg(ctx, dst, q->len);
	pthread_mutex_unlock(&ctx->host_lock);
	if (!seg) {
		gp_req_done(r, q, gp_err(ctx, -EINVAL,
					 "gp_read: %p + %zu is not inside one buffer of this context",
					 q->dst, q->len));
		return;
	}
	acc = fcntl(q->fd, F_GETFL);
	if (acc < 0 || (acc & O_ACCMODE) == O_WRONLY || (acc & O_PATH)) {
		gp_req_done(r, q, gp_err(ctx, -EBADF, "gp_read: fd %d is not open for reading",
					 q->fd));
		return;
	}
	ret = gp_file_stat(q->fd, &st);
	if (ret) {
		gp_req_done(r, q, gp_err(ctx, ret, "gp_read: statx of fd %d: %s", q->fd,
					 strerror(-ret)));
		return;
	}
	if (S_ISDIR(st.mode)) {
		gp_req_done(r, q, gp_err(ctx, -EISDIR, "gp_read: fd %d is a directory", q->fd));
		return;
	}
	len = q->len;
	if (S_ISREG(st.mode) || S_ISBLK(st.mode)) {
		if (q->offset >= st.size) {
			gp_req_done(r, q, 0);		/* at or past the end */
			return;
		}
		if (len > st.size - q->offset)
			len = st.size - q->offset;
	}
	s->total = len;
	f.align = st.align;
	f.memalign = st.memalign;
	f.buffered_ok = !(q->flags & GP_READ_NO_CACHE);

	/* The O_DIRECT descriptor, once per fd per submission. */
	if (!(q->flags & GP_READ_BUFFERED) && (S_ISREG(st.mode) || S_ISBLK(st.mode)) &&
	    !(st.direct_known && !st.align)) {
		for (i = 0; i < *nmap; i++)
			if (fdmap_fd[i] == q->fd)
				break;
		if (i == *nmap) {
			fdmap_fd[i] = q->fd;
			fdmap_idx[i] = gp_open_direct(r, q->fd, acc);
			(*nmap)++;
		}
		s->dfd = fdmap_idx[i];
		if (s->dfd >= 0) {
			r->dfds[s->dfd].refs++;
			f.dfd = r->dfds[s->dfd].fd;
		}
	}
	if (f.dfd < 0 && !f.buffered_ok) {
		gp_req_done(r, q, gp_err(ctx, -EINVAL,
					 "gp_read: fd %d cannot be read with O_DIRECT (file "
					 "system or file type) and GP_READ_NO_CACHE forbids "
					 "the page cache", q->fd));
		return;
	}

	/* Cut: head | body | tail. */
	if (f.dfd >= 0) {
		head = (f.align - q->offset % f.align) % f.align;
		if (head > len)
			head = len;
		body = (len - head) - (len - head) % f.align;
		tail = len - head - body;
		if ((dst + head) % f.memalign) {
			/* Memory and file alignment disagree: all through
			 * the bounce block.
			 */
			head = len;
			body = tail = 0;
		}
	} else {
		head = tail = 0;
		body = len;
	}
	s->head = head;
	s->body_off = q->offset + head;
	s->body_len = body;
	s->tail_len = (uint32_t)tail;
	if (head) {
		n = gp_io_sync(ctx, io, &f, q->offset, q->dst, head);
		if (n < 0 || (uint64_t)n < head) {
			gp_req_done(r, q, n);
			return;
		}
	}
	if (tail) {
		n = gp_io_sync(ctx, io, &f, s->body_off + body,
			       (char *)q->dst + head + body, tail);
		if (n < 0) {
			gp_req_done(r, q, n);
			return;
		}
		s->tail_got = (uint32_t)n;
	}
	if (!body) {
		gp_req_done(r, q, (ssize_t)(head + s->tail_got));
		return;
	}
	if (r->has_ring) {
		if (f.dfd >= 0) {
			pthread_mutex_lock(&ctx->host_lock);
			seg = gp_io_find_seg(ctx, dst, q->len);
			if (seg)
				slot = gp_io_fixed_slot(ctx, io, r, seg);
			pthread_mutex_unlock(&ctx->host_lock);
		}
		sqe = ring_sqe(&r->ring);
		if (sqe) {
			sqe->opcode = slot >= 0 ? IORING_OP_READ_FIXED : IORING_OP_READ;
			sqe->fd = f.dfd >= 0 ? f.dfd : q->fd;
			sqe->off = s->body_off;
			sqe->addr = dst + head;
			sqe->len = (uint32_t)(body > (1u << 30) ? (1u << 30) : body);
			sqe->buf_index = slot >= 0 ? (uint16_t)slot : 0;
			sqe->user_data = (uint64_t)(uintptr_t)q;
			ring_push(&r->ring);
			r->in_ring++;
			if (slot >= 0) {
				s->path = GP_READ_PATH_FIXED;
				STAT_ADD(io, fixed, 1);
			} else if (f.dfd >= 0) {
				s->path = GP_READ_PATH_DIRECT;
				STAT_ADD(io, direct, 1);
			} else {
				s->path = GP_READ_PATH_BUFFERED;
				STAT_ADD(io, buffered, 1);
			}
			return;
		}
	}
	n = gp_io_sync(ctx, io, &f, s->body_off, (char *)q->dst + head, body);
	gp_body_done(r, q, n);
}

/* Count the bytes of a ring completion on its path. */
static void gp_count_cqe(struct gp_io *io, struct gp_read_req *q, int res)
{
	uint32_t path = req_state(q)->path;

	if (res <= 0)
		return;
	if (path == GP_READ_PATH_FIXED)
		STAT_ADD(io, fixed_bytes, res);
	else if (path == GP_READ_PATH_DIRECT)
		STAT_ADD(io, direct_bytes, res);
	else
		STAT_ADD(io, buffered_bytes, res);
}

/* Reap what the ring has; wait for at least min bodies first. */
static int gp_reap(struct gp_reader *r, unsigned int min)
{
	struct gp_ring *ring = &r->ring;
	unsigned int head, tail;
	int ret;

	if (!r->has_ring)
		return 0;
	if (min > r->in_ring)
		min = r->in_ring;
	if (ring->unsubmitted || min) {
		ret = ring_enter(ring, min);
		if (ret)
			return ret;
	}
	head = *ring->cq_head;
	tail = __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE);
	while (head != tail) {
		struct io_uring_cqe *cqe = &ring->cqes[head & *ring->cq_mask];
		struct gp_read_req *q = (void *)(uintptr_t)cqe->user_data;
		int res = cqe->res;

		head++;
		__atomic_store_n(ring->cq_head, head, __ATOMIC_RELEASE);
		r->in_ring--;
		gp_count_cqe(r->ctx->io, q, res);
		gp_body_done(r, q, res);
	}
	return 0;
}

/* The API ---------------------------------------------------------------------- */

GP_API int gp_reader_open(struct gp_ctx *ctx, unsigned int depth,
			  struct gp_reader **out)
{
	struct gp_io *io;

	if (!ctx || !out)
		return -EINVAL;
	if (!depth)
		depth = GP_IO_DEFAULT_DEPTH;
	if (depth > GP_IO_MAX_DEPTH)
		return gp_err(ctx, -EINVAL, "gp_reader_open: depth %u over %u", depth,
			      GP_IO_MAX_DEPTH);
	io = gp_io_get(ctx);
	if (!io)
		return gp_err(ctx, -ENOMEM, "gp_reader_open: out of memory");
	if (gp_reader_new(ctx, io, depth, false, out))
		return gp_err(ctx, -ENOMEM, "gp_reader_open: out of memory");
	return 0;
}

GP_API void gp_reader_close(struct gp_reader *r)
{
	struct gp_ctx *ctx;

	if (!r)
		return;
	ctx = r->ctx;
	/* Nothing may land in pool memory after this returns. */
	while (r->in_ring && !gp_reap(r, r->in_ring))
		;
	/* host_lock: gp_io_seg_gone must not see the reader half gone. */
	pthread_mutex_lock(&ctx->host_lock);
	gp_reader_unlink(ctx->io, r);
	pthread_mutex_unlock(&ctx->host_lock);
	gp_reader_free(r);
}

GP_API int gp_reader_submit(struct gp_reader *r, struct gp_read_req *reqs,
			    unsigned int n)
{
	int *fdmap_fd, *fdmap_idx;
	unsigned int i, nmap = 0;
	int ret = 0;

	if (!r || (!reqs && n))
		return -EINVAL;
	if (n > r->depth - r->pending)
		return gp_err(r->ctx, -EBUSY,
			      "gp_reader_submit: %u requests with %u of %u pending",
			      n, r->pending, r->depth);
	fdmap_fd = calloc(n + 1, sizeof(int));
	fdmap_idx = calloc(n + 1, sizeof(int));
	if (!fdmap_fd || !fdmap_idx) {
		free(fdmap_fd);
		free(fdmap_idx);
		return gp_err(r->ctx, -ENOMEM, "gp_reader_submit: out of memory");
	}
	for (i = 0; i < n; i++) {
		r->pending++;
		gp_req_start(r, &reqs[i], fdmap_fd, fdmap_idx, &nmap);
	}
	/* The submission's references: descriptors whose requests all
	 * finished already are closed now.
	 */
	for (i = 0; i < nmap; i++)
		gp_dfd_put(r, fdmap_idx[i]);
	free(fdmap_fd);
	free(fdmap_idx);
	if (r->has_ring && r->ring.unsubmitted)
		ret = ring_enter(&r->ring, 0);
	return ret;
}

GP_API int gp_reader_wait(struct gp_reader *r, unsigned int min,
			  struct gp_read_req **done, unsigned int max,
			  unsigned int *ndone)
{
	unsigned int k;
	int ret;

	if (!r || (!done && max))
		return -EINVAL;
	if (min > r->pending)
		min = r->pending;
	if (min > max)
		min = max;
	ret = gp_reap(r, r->ndone >= min ? 0 : min - r->ndone);
	while (!ret && r->ndone < min)
		ret = gp_reap(r, min - r->ndone);
	if (ret)
		return gp_err(r->ctx, ret, "gp_reader_wait: io_uring_enter: %s",
			      strerror(-ret));
	k = r->ndone < max ? r->ndone : max;
	if (k)
		memcpy(done, r->done, k * sizeof(*done));
	memmove(r->done, r->done + k, (r->ndone - k) * sizeof(*done));
	r->ndone -= k;
	r->pending -= k;
	if (ndone)
		*ndone = k;
	return 0;
}

GP_API unsigned int gp_reader_pending(struct gp_reader *r)
{
	return r ? r->pending : 0;
}

GP_API int gp_read(struct gp_ctx *ctx, int fd, uint64_t offset, void *dst,
		   size_t len, unsigned int flags, size_t *done)
{
	struct gp_read_req q, *qp;
	struct gp_reader *r = NULL;
	struct gp_io *io;
	unsigned int k;
	int ret;

	if (!ctx)
		return -EINVAL;
	io = gp_io_get(ctx);
	if (!io)
		return gp_err(ctx, -ENOMEM, "gp_read: out of memory");
	pthread_mutex_lock(&io->lock);
	if (io->free) {
		r = io->free;
		io->free = r->free_next;
		io->nfree--;
	}
	pthread_mutex_unlock(&io->lock);
	if (!r && gp_reader_new(ctx, io, 4, true, &r))
		return gp_err(ctx, -ENOMEM, "gp_read: out of memory");
	memset(&q, 0, sizeof(q));
	q.fd = fd;
	q.offset = offset;
	q.dst = dst;
	q.len = len;
	q.flags = flags;
	ret = gp_reader_submit(r, &q, 1);
	if (!ret)
		ret = gp_reader_wait(r, 1, &qp, 1, &k);
	if (ret) {
		/* The ring failed under us: drain and drop this reader. */
		gp_reader_close(r);
		return ret;
	}
	pthread_mutex_lock(&io->lock);
	if (io->nfree < GP_IO_POOLED_MAX) {
		r->free_next = io->free;
		io->free = r;
		io->nfree++;
		r = NULL;
	}
	pthread_mutex_unlock(&io->lock);
	if (r)
		gp_reader_close(r);
	if (q.result < 0)
		return (int)q.result;
	if (done)
		*done = (size_t)q.result;
	return 0;
}

GP_API int gp_read_stats(struct gp_ctx *ctx, struct gp_read_stats *st)
{
	const uint64_t *src;
	struct gp_io *io;
	uint64_t *dst;
	size_t i;

	if (!ctx || !st)
		return -EINVAL;
	io = gp_io_get(ctx);
	if (!io)
		return -ENOMEM;
	pthread_mutex_lock(&ctx->host_lock);
	pthread_mutex_lock(&io->lock);
	/* The counters are added to atomically outside the locks. */
	src = (const uint64_t *)&io->st;
	dst = (uint64_t *)st;
	for (i = 0; i < offsetof(struct gp_read_stats, fixed_state) / 8; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	st->fixed_state = (uint32_t)__atomic_load_n(&io->fixed_state, __ATOMIC_RELAXED);
	st->pad = 0;
	pthread_mutex_unlock(&io->lock);
	pthread_mutex_unlock(&ctx->host_lock);
	return 0;
}

/* For gp_info: what reads found so far (no probe: a registration of pool
 * memory here would pin it behind the caller's back).
 */
uint32_t gp_io_fixed_state(struct gp_ctx *ctx)
{
	struct gp_io *io = gp_io_get(ctx);

	return io ? (uint32_t)__atomic_load_n(&io->fixed_state, __ATOMIC_RELAXED) :
		    GP_FIXED_UNKNOWN;
}
