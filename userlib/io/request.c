// SPDX-License-Identifier: MIT
/*
 * request.c - one read request [offset, offset + len) of a file into dst,
 * cut in three:
 *  - the head, from offset up to the file's next O_DIRECT boundary, and the
 *    tail, from the last boundary to the end: each read with O_DIRECT into an
 *    aligned bounce block and copied (at submission, synchronously);
 *  - the body, aligned on both sides: one read, best path first:
 *    (a) io_uring READ_FIXED on an O_DIRECT descriptor, the pool segment
 *        registered once as a fixed buffer of the reader's ring (fixed.c);
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
 * file.c has the file's side: its size and alignment, the O_DIRECT
 * descriptor, and the reads made at once.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/host.h"
#include "host/seg.h"
#include "io/reader.h"

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

/* Finishing ------------------------------------------------------------------ */

static void gp_req_done(struct gp_reader *r, struct gp_read_req *q, ssize_t res)
{
	struct gp_reader_pool *io = r->ctx->io;
	struct gp_req_state *s = req_state(q);

	q->result = res;
	if (res < 0)
		GP_IO_STAT_ADD(io, errors, 1);
	else if ((uint64_t)res < q->len)
		GP_IO_STAT_ADD(io, short_reads, 1);
	if (res > 0)
		GP_IO_STAT_ADD(io, bytes, res);
	gp_dfd_put(r, s->dfd);
	s->dfd = -1;
	r->done[r->ndone++] = q;
}

void gp_req_body_done(struct gp_reader *r, struct gp_read_req *q, ssize_t res)
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
			f.align = f.memalign = gp_dio_align_default();
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

void gp_req_count_cqe(struct gp_reader_pool *io, struct gp_read_req *q, int res)
{
	uint32_t path = req_state(q)->path;

	if (res <= 0)
		return;
	if (path == GP_READ_PATH_FIXED)
		GP_IO_STAT_ADD(io, fixed_bytes, res);
	else if (path == GP_READ_PATH_DIRECT)
		GP_IO_STAT_ADD(io, direct_bytes, res);
	else
		GP_IO_STAT_ADD(io, buffered_bytes, res);
}

/* Starting ------------------------------------------------------------------- */

/* What gp_req_start() learns about a request, step by step.  The file's
 * faults are found before the buffer is looked up (the lookup registers
 * the fixed buffer the body will use while the host pools hold the segment),
 * but reported after the buffer's: a request wrong in both says so about
 * the buffer.
 */
struct gp_req_plan {
	struct gp_file f;
	struct gp_statx st;
	int acc;		/* the caller's descriptor's F_GETFL */
	int err;		/* the file's fault (-errno), with msg */
	char msg[160];
	bool past_end;		/* offset at or past the end: reads 0 */
	uint64_t len, head, body, tail;
	int slot;		/* fixed buffer of the body, or -1 */
};

static int req_check_args(struct gp_ctx *ctx, struct gp_read_req *q)
{
	uint64_t dst = (uint64_t)(uintptr_t)q->dst;

	if (q->flags & ~GP_READ_VALID_FLAGS ||
	    (q->flags & GP_READ_NO_CACHE && q->flags & GP_READ_BUFFERED))
		return gp_err(ctx, -EINVAL, "gp_read: bad flags %#x", q->flags);
	if (!q->len || q->len > GP_SIZE_MAX || dst + q->len < dst ||
	    q->offset > (uint64_t)INT64_MAX - q->len)
		return gp_err(ctx, -EINVAL,
			      "gp_read: length %zu at offset %llu is 0 or overflows",
			      q->len, (unsigned long long)q->offset);
	return 0;
}

#define req_fault(p, e, ...) \
	((p)->err = (e), snprintf((p)->msg, sizeof((p)->msg), __VA_ARGS__))

/* The caller's descriptor: readable, its type and size, the length clamped
 * to it.
 */
static void req_plan_file(struct gp_read_req *q, struct gp_req_plan *p)
{
	int ret;

	p->acc = fcntl(q->fd, F_GETFL);
	if (p->acc < 0 || (p->acc & O_ACCMODE) == O_WRONLY || (p->acc & O_PATH)) {
		req_fault(p, -EBADF, "gp_read: fd %d is not open for reading", q->fd);
		return;
	}
	ret = gp_file_stat(q->fd, &p->st);
	if (ret) {
		req_fault(p, ret, "gp_read: statx of fd %d: %s", q->fd, strerror(-ret));
		return;
	}
	if (S_ISDIR(p->st.mode)) {
		req_fault(p, -EISDIR, "gp_read: fd %d is a directory", q->fd);
		return;
	}
	p->len = q->len;
	if (S_ISREG(p->st.mode) || S_ISBLK(p->st.mode)) {
		if (q->offset >= p->st.size) {
			p->past_end = true;
			return;
		}
		if (p->len > p->st.size - q->offset)
			p->len = p->st.size - q->offset;
	}
	p->f.align = p->st.align;
	p->f.memalign = p->st.memalign;
	p->f.buffered_ok = !(q->flags & GP_READ_NO_CACHE);
}

/* The O_DIRECT descriptor, once per fd per submission. */
static void req_plan_direct(struct gp_reader *r, struct gp_read_req *q,
			    struct gp_req_plan *p, struct gp_fdmap *map)
{
	struct gp_req_state *s = req_state(q);
	unsigned int i;

	if (!(q->flags & GP_READ_BUFFERED) &&
	    (S_ISREG(p->st.mode) || S_ISBLK(p->st.mode)) &&
	    !(p->st.direct_known && !p->st.align)) {
		for (i = 0; i < map->n; i++)
			if (map->fd[i] == q->fd)
				break;
		if (i == map->n) {
			map->fd[i] = q->fd;
			map->idx[i] = gp_open_direct(r, q->fd, p->acc);
			map->n++;
		}
		s->dfd = map->idx[i];
		if (s->dfd >= 0) {
			r->dfds[s->dfd].refs++;
			p->f.dfd = r->dfds[s->dfd].fd;
		}
	}
	if (p->f.dfd < 0 && !p->f.buffered_ok)
		req_fault(p, -EINVAL, "gp_read: fd %d cannot be read with O_DIRECT "
			  "(file system or file type) and GP_READ_NO_CACHE forbids "
			  "the page cache", q->fd);
}

/* Cut: head | body | tail. */
static void req_plan_cut(struct gp_read_req *q, struct gp_req_plan *p)
{
	uint64_t dst = (uint64_t)(uintptr_t)q->dst, len = p->len;
	uint32_t align = p->f.align;

	if (p->f.dfd < 0) {
		p->body = len;
		return;
	}
	p->head = (align - q->offset % align) % align;
	if (p->head > len)
		p->head = len;
	p->body = (len - p->head) - (len - p->head) % align;
	p->tail = len - p->head - p->body;
	if ((dst + p->head) % p->f.memalign) {
		/* Memory and file alignment disagree: all through the
		 * bounce block.
		 */
		p->head = len;
		p->body = p->tail = 0;
	}
}

struct req_found {
	struct gp_reader *r;
	struct gp_req_plan *p;
};

/* dst's segment, found (the host pools hold it): the body's fixed buffer. */
static int req_seg_found(void *arg, const struct gp_seg *seg)
{
	struct req_found *rf = arg;
	struct gp_req_plan *p = rf->p;

	if (!p->err && !p->past_end && p->body && rf->r->has_ring && p->f.dfd >= 0)
		p->slot = gp_fixed_slot(rf->r, rf->r->ctx->io, seg->addr, seg->size);
	return 0;
}

/* Everything up to the first byte read; false when the request ends here,
 * with *res its result.
 */
static bool req_plan(struct gp_reader *r, struct gp_read_req *q,
		     struct gp_req_plan *p, struct gp_fdmap *map, ssize_t *res)
{
	struct gp_req_state *s = req_state(q);
	struct req_found rf = { .r = r, .p = p };
	int ret;

	*res = ret = req_check_args(r->ctx, q);
	if (ret)
		return false;
	req_plan_file(q, p);
	if (!p->err && !p->past_end) {
		s->total = p->len;
		req_plan_direct(r, q, p, map);
	}
	if (!p->err && !p->past_end)
		req_plan_cut(q, p);
	if (gp_host_seg_of(r->ctx, (uint64_t)(uintptr_t)q->dst, q->len,
			   req_seg_found, &rf)) {
		*res = gp_err(r->ctx, -EINVAL,
			      "gp_read: %p + %zu is not inside one buffer of this context",
			      q->dst, q->len);
		return false;
	}
	if (p->err) {
		*res = gp_err(r->ctx, p->err, "%s", p->msg);
		return false;
	}
	if (p->past_end)
		return false;		/* *res is 0 */
	s->head = p->head;
	s->body_off = q->offset + p->head;
	s->body_len = p->body;
	s->tail_len = (uint32_t)p->tail;
	return true;
}

/* The head and the tail, at once; false when the request ends here (no
 * body, or a failure), with *res its result.
 */
static bool req_read_ends(struct gp_reader *r, struct gp_read_req *q,
			  struct gp_req_plan *p, ssize_t *res)
{
	struct gp_req_state *s = req_state(q);
	ssize_t n;

	if (p->head) {
		*res = n = gp_io_sync(r->ctx, r->ctx->io, &p->f, q->offset, q->dst,
				      p->head);
		if (n < 0 || (uint64_t)n < p->head)
			return false;
	}
	if (p->tail) {
		*res = n = gp_io_sync(r->ctx, r->ctx->io, &p->f, s->body_off + p->body,
				      (char *)q->dst + p->head + p->body, p->tail);
		if (n < 0)
			return false;
		s->tail_got = (uint32_t)n;
	}
	*res = (ssize_t)(p->head + s->tail_got);
	return p->body != 0;
}

/* The body into the ring; false when it is full (or there is none). */
static bool req_queue_body(struct gp_reader *r, struct gp_read_req *q,
			   struct gp_req_plan *p)
{
	struct gp_reader_pool *io = r->ctx->io;
	struct gp_req_state *s = req_state(q);
	char *buf = (char *)q->dst + p->head;
	struct io_uring_sqe *sqe;
	unsigned int len;

	if (!r->has_ring || !(sqe = gp_ring_get_sqe(&r->ring)))
		return false;
	len = (uint32_t)(p->body > (1u << 30) ? (1u << 30) : p->body);
	if (p->f.dfd < 0)	/* a head read gave O_DIRECT up */
		p->slot = -1;
	if (p->slot >= 0)
		gp_ring_prep_read_fixed(sqe, p->f.dfd, buf, len, s->body_off,
					p->slot, q);
	else
		gp_ring_prep_read(sqe, p->f.dfd >= 0 ? p->f.dfd : q->fd, buf, len,
				  s->body_off, q);
	r->in_ring++;
	if (p->slot >= 0) {
		s->path = GP_READ_PATH_FIXED;
		GP_IO_STAT_ADD(io, fixed, 1);
	} else if (p->f.dfd >= 0) {
		s->path = GP_READ_PATH_DIRECT;
		GP_IO_STAT_ADD(io, direct, 1);
	} else {
		s->path = GP_READ_PATH_BUFFERED;
		GP_IO_STAT_ADD(io, buffered, 1);
	}
	return true;
}

void gp_req_start(struct gp_reader *r, struct gp_read_req *q,
		  struct gp_fdmap *map)
{
	struct gp_req_state *s = req_state(q);
	struct gp_req_plan p = { .f = { .fd = q->fd, .dfd = -1 }, .slot = -1 };
	ssize_t n = 0;

	memset(s, 0, sizeof(*s));
	s->dfd = -1;
	s->flags = q->flags;
	q->result = 0;
	GP_IO_STAT_ADD(r->ctx->io, requests, 1);
	if (!req_plan(r, q, &p, map, &n) || !req_read_ends(r, q, &p, &n)) {
		gp_req_done(r, q, n);
		return;
	}
	if (req_queue_body(r, q, &p))
		return;
	n = gp_io_sync(r->ctx, r->ctx->io, &p.f, s->body_off,
		       (char *)q->dst + p.head, p.body);
	gp_req_body_done(r, q, n);
}
