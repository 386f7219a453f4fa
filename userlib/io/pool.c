// SPDX-License-Identifier: MIT
/*
 * pool.c - the context's readers: created and listed here, gp_read()'s idle
 * ones kept for the next call, the counters (gp_read_stats), and every
 * ring told when a segment of the host pools goes away.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/host.h"
#include "io/reader.h"

/* The host pools' hook (host.h), under their lock: a segment goes, and no
 * ring may keep its pages.  Nothing before the context's readers exist.
 */
static void gp_io_seg_gone(struct gp_ctx *ctx, uint64_t addr, uint64_t size)
{
	struct gp_reader_pool *pool = __atomic_load_n(&ctx->io, __ATOMIC_ACQUIRE);
	struct gp_list *pos;

	(void)size;
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	gp_list_each(pos, &pool->readers)
		pool->st.fixed_registered -=
			gp_fixed_drop(gp_list_entry(pos, struct gp_reader, link), addr);
	pthread_mutex_unlock(&pool->lock);
}

/*
 * The context's readers, made once by whichever thread asks first: the
 * others see the one it published (an atomic exchange, no lock of any
 * other room).  The host pools' hook is set before the pool is published,
 * so that no reader can hold a fixed buffer of a segment going unseen.
 */
struct gp_reader_pool *gp_io_get(struct gp_ctx *ctx)
{
	struct gp_reader_pool *pool = __atomic_load_n(&ctx->io, __ATOMIC_ACQUIRE);
	struct gp_reader_pool *first = NULL;

	if (pool)
		return pool;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pthread_mutex_init(&pool->lock, NULL);
	gp_list_init(&pool->readers);
	gp_host_on_seg_gone(ctx, gp_io_seg_gone);
	if (__atomic_compare_exchange_n(&ctx->io, &first, pool, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return pool;
	pthread_mutex_destroy(&pool->lock);	/* another thread's came first */
	free(pool);
	return first;
}

void gp_reader_free(struct gp_reader *r)
{
	unsigned int i;

	if (r->has_ring)
		gp_ring_exit(&r->ring);
	for (i = 0; i < r->depth; i++)
		if (r->dfds[i].fd >= 0)
			close(r->dfds[i].fd);
	free(r->dfds);
	free(r->done);
	free(r);
}

int gp_reader_new(struct gp_ctx *ctx, struct gp_reader_pool *pool,
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
	ret = gp_ring_init(&r->ring, depth);
	if (!ret) {
		r->has_ring = true;
		gp_fixed_table_init(r, pool);
	} else {
		gp_debug(ctx, "io_uring_setup: %s; reads use pread", strerror(-ret));
		__atomic_store_n(&pool->fixed_state, GP_IO_FIXED_NO_RING,
				 __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&pool->lock);
	gp_list_add(&pool->readers, &r->link);
	pool->st.readers++;
	pthread_mutex_unlock(&pool->lock);
	*out = r;
	return 0;
}

void gp_reader_unlink(struct gp_reader_pool *pool, struct gp_reader *r)
{
	pthread_mutex_lock(&pool->lock);
	pool->st.fixed_registered -= gp_fixed_count(r);
	gp_list_del(&r->link);
	pool->st.readers--;
	pthread_mutex_unlock(&pool->lock);
}

struct gp_reader *gp_reader_pool_take(struct gp_reader_pool *pool)
{
	struct gp_reader *r;

	pthread_mutex_lock(&pool->lock);
	r = pool->free;
	if (r) {
		pool->free = r->free_next;
		pool->nfree--;
	}
	pthread_mutex_unlock(&pool->lock);
	return r;
}

bool gp_reader_pool_put(struct gp_reader_pool *pool, struct gp_reader *r)
{
	bool kept = false;

	pthread_mutex_lock(&pool->lock);
	if (pool->nfree < GP_IO_POOLED_MAX) {
		r->free_next = pool->free;
		pool->free = r;
		pool->nfree++;
		kept = true;
	}
	pthread_mutex_unlock(&pool->lock);
	return kept;
}

void gp_io_fini(struct gp_ctx *ctx)
{
	struct gp_reader_pool *pool = ctx->io;
	struct gp_reader *r;

	if (!pool)
		return;
	while ((r = gp_list_first(&pool->readers, struct gp_reader, link))) {
		gp_list_del(&r->link);
		gp_reader_free(r);
	}
	pthread_mutex_destroy(&pool->lock);
	free(pool);
	ctx->io = NULL;
}

GP_API int gp_read_stats(struct gp_ctx *ctx, struct gp_read_stats *st)
{
	struct gp_reader_pool *pool;
	const uint64_t *src;
	uint64_t *dst;
	size_t i;

	if (!ctx || !st)
		return -EINVAL;
	pool = gp_io_get(ctx);
	if (!pool)
		return -ENOMEM;
	pthread_mutex_lock(&pool->lock);
	/* The counters are added to atomically outside the locks. */
	src = (const uint64_t *)&pool->st;
	dst = (uint64_t *)st;
	for (i = 0; i < offsetof(struct gp_read_stats, fixed_state) / 8; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	st->fixed_state = (uint32_t)__atomic_load_n(&pool->fixed_state,
						    __ATOMIC_RELAXED);
	st->pad = 0;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

/* No probe: a registration of pool memory here would pin it behind the
 * caller's back.
 */
uint32_t gp_io_fixed_state(struct gp_ctx *ctx)
{
	struct gp_reader_pool *pool = gp_io_get(ctx);

	return pool ? (uint32_t)__atomic_load_n(&pool->fixed_state, __ATOMIC_RELAXED) :
		      GP_IO_FIXED_UNKNOWN;
}
