// SPDX-License-Identifier: MIT
/*
 * reader.c - reading files straight into pool memory, the API: a reader
 * (gp_reader_*) with its ring, and gp_read() on a pooled one.  How a
 * request is read: request.c.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "reader.h"

/* Reap what the ring has; wait for at least min bodies first. */
static int gp_reap(struct gp_reader *r, unsigned int min)
{
	struct gp_ring *ring = &r->ring;
	struct io_uring_cqe *cqe;
	int ret;

	if (!r->has_ring)
		return 0;
	if (min > r->in_ring)
		min = r->in_ring;
	if (gp_ring_sq_ready(ring) || min) {
		ret = gp_ring_submit_and_wait(ring, min);
		if (ret)
			return ret;
	}
	while ((cqe = gp_ring_peek_cqe(ring))) {
		struct gp_read_req *q = (void *)(uintptr_t)cqe->user_data;
		int res = cqe->res;

		gp_ring_cqe_seen(ring);
		r->in_ring--;
		gp_req_count_cqe(r->ctx->io, q, res);
		gp_req_body_done(r, q, res);
	}
	return 0;
}

GP_API int gp_reader_open(struct gp_ctx *ctx, unsigned int depth,
			  struct gp_reader **out)
{
	struct gp_reader_pool *pool;

	if (!ctx || !out)
		return -EINVAL;
	if (!depth)
		depth = GP_IO_DEFAULT_DEPTH;
	if (depth > GP_IO_MAX_DEPTH)
		return gp_err(ctx, -EINVAL, "gp_reader_open: depth %u over %u", depth,
			      GP_IO_MAX_DEPTH);
	pool = gp_io_get(ctx);
	if (!pool)
		return gp_err(ctx, -ENOMEM, "gp_reader_open: out of memory");
	if (gp_reader_new(ctx, pool, depth, false, out))
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
	/* Off the list under the readers' lock first: a segment going
	 * (gp_io_seg_gone) must not see the reader half gone.
	 */
	gp_reader_unlink(ctx->io, r);
	gp_reader_free(r);
}

GP_API int gp_reader_submit(struct gp_reader *r, struct gp_read_req *reqs,
			    unsigned int n)
{
	struct gp_fdmap map = { 0 };
	unsigned int i;
	int ret = 0;

	if (!r || (!reqs && n))
		return -EINVAL;
	if (n > r->depth - r->pending)
		return gp_err(r->ctx, -EBUSY,
			      "gp_reader_submit: %u requests with %u of %u pending",
			      n, r->pending, r->depth);
	map.fd = calloc(n + 1, sizeof(int));
	map.idx = calloc(n + 1, sizeof(int));
	if (!map.fd || !map.idx) {
		free(map.fd);
		free(map.idx);
		return gp_err(r->ctx, -ENOMEM, "gp_reader_submit: out of memory");
	}
	for (i = 0; i < n; i++) {
		r->pending++;
		gp_req_start(r, &reqs[i], &map);
	}
	/* The submission's references: descriptors whose requests all
	 * finished already are closed now.
	 */
	for (i = 0; i < map.n; i++)
		gp_dfd_put(r, map.idx[i]);
	free(map.fd);
	free(map.idx);
	if (r->has_ring && gp_ring_sq_ready(&r->ring))
		ret = gp_ring_submit(&r->ring);
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
	struct gp_reader_pool *pool;
	struct gp_reader *r;
	unsigned int k;
	int ret;

	if (!ctx)
		return -EINVAL;
	pool = gp_io_get(ctx);
	if (!pool)
		return gp_err(ctx, -ENOMEM, "gp_read: out of memory");
	r = gp_reader_pool_take(pool);
	if (!r && gp_reader_new(ctx, pool, GP_IO_POOLED_DEPTH, true, &r))
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
	if (!gp_reader_pool_put(pool, r))
		gp_reader_close(r);
	if (q.result < 0)
		return (int)q.result;
	if (done)
		*done = (size_t)q.result;
	return 0;
}
