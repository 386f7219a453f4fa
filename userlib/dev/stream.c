// SPDX-License-Identifier: MIT
/*
 * stream.c - stream-ordered safety of device blocks: the uses of a
 * block on other streams, the events recorded when it is freed, and the
 * pending list (see dev.h).  Every function runs under the pool lock.
 */
#include <stdlib.h>

#include "dev.h"

bool gp_block_pending(const struct bfc_chunk_info *ci)
{
	const struct gp_uses *u = (const struct gp_uses *)(uintptr_t)ci->tag;

	return u && ci->tag != GP_VMM_HOLE_TAG && u->pending;
}

int gp_dstream_add_use(struct gp_dpool *p, struct gp_dstream *ds,
		       bfc_handle_t h, gp_stream_t stream)
{
	struct bfc_chunk_info ci;
	struct gp_uses *u;
	uint32_t i;

	(void)p;
	if (stream == ds->stream)
		return 0;
	bfc_chunk_info(ds->b, h, &ci);
	u = (struct gp_uses *)(uintptr_t)ci.tag;
	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		bfc_set_tag(ds->b, h, (uint64_t)(uintptr_t)u);
	}
	for (i = 0; i < u->n; i++)
		if (u->s[i] == stream)
			return 0;
	if (u->n == u->cap) {
		uint32_t cap = u->cap ? u->cap * 2 : 4;
		gp_stream_t *s = realloc(u->s, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		u->s = s;
		u->cap = cap;
	}
	u->s[u->n++] = stream;
	return 0;
}

static void gp_uses_free(struct gp_uses *u)
{
	if (u) {
		free(u->s);
		free(u);
	}
}

/* An event created on the pool's device (current already). */
static int gp_event_get(struct gp_ctx *ctx, struct gp_dpool *p, cudaEvent_t *ev)
{
	cudaError_t e;

	if (p->nr_evcache) {
		*ev = p->evcache[--p->nr_evcache];
		return 0;
	}
	e = gp_cuda_event_create(ctx, ev);
	if (e != cudaSuccess)
		return gp_err(ctx, -ENOMEM, "cudaEventCreateWithFlags: %s",
			      gp_cuda_errstr(ctx, e));
	return 0;
}

static void gp_event_put(struct gp_ctx *ctx, struct gp_dpool *p, cudaEvent_t ev)
{
	if (p->nr_evcache == p->cap_evcache) {
		uint32_t cap = p->cap_evcache ? p->cap_evcache * 2 : 16;
		cudaEvent_t *a = realloc(p->evcache, cap * sizeof(*a));

		if (!a) {
			gp_cuda_event_destroy(ctx, ev);
			return;
		}
		p->evcache = a;
		p->cap_evcache = cap;
	}
	p->evcache[p->nr_evcache++] = ev;
}

void gp_events_destroy(struct gp_ctx *ctx, struct gp_dpool *p)
{
	while (p->nr_evcache)
		gp_cuda_event_destroy(ctx, p->evcache[--p->nr_evcache]);
	free(p->evcache);
	p->evcache = NULL;
	p->cap_evcache = 0;
}

static void gp_block_release(struct gp_dpool *p, struct gp_dstream *ds,
			     bfc_handle_t h, struct gp_uses *u)
{
	bfc_set_tag(ds->b, h, 0);
	gp_uses_free(u);
	bfc_free(ds->b, h);
	(void)p;
}

/* An event recorded on each stream of u, into pd (current device). */
static int gp_pending_record(struct gp_ctx *ctx, struct gp_dpool *p,
			     struct gp_pending *pd, const struct gp_uses *u)
{
	cudaError_t e;
	uint32_t i;

	for (i = 0; i < u->n; i++) {
		if (gp_event_get(ctx, p, &pd->ev[pd->nr_ev]))
			return -ENOMEM;
		e = gp_cuda_event_record(ctx, pd->ev[pd->nr_ev], u->s[i]);
		if (e != cudaSuccess) {
			gp_event_put(ctx, p, pd->ev[pd->nr_ev]);
			return gp_err(ctx, -EIO, "cudaEventRecord: %s",
				      gp_cuda_errstr(ctx, e));
		}
		pd->nr_ev++;
	}
	return 0;
}

/*
 * Block h of ds, of size bytes, was used on the streams of u: it waits on
 * the pending list for an event recorded on each.  When the events cannot
 * be set up, the streams are waited for instead and the block is free at
 * once: it is never handed out while they may use it.
 */
static void gp_dstream_pend(struct gp_ctx *ctx, struct gp_dpool *p,
			    struct gp_dstream *ds, bfc_handle_t h,
			    struct gp_uses *u, uint64_t size)
{
	struct gp_pending *pd = calloc(1, sizeof(*pd));
	bool entered;
	int ret, saved;
	uint32_t i;

	if (pd)
		pd->ev = calloc(u->n, sizeof(*pd->ev));
	entered = !gp_cuda_enter(ctx, p->device, &saved);
	ret = pd && pd->ev && entered ? gp_pending_record(ctx, p, pd, u) : -ENOMEM;
	for (i = 0; ret && i < u->n; i++)
		gp_cuda_stream_sync(ctx, u->s[i]);
	if (entered)
		gp_cuda_leave(ctx, saved);
	if (ret) {
		for (i = 0; pd && i < pd->nr_ev; i++)
			gp_event_put(ctx, p, pd->ev[i]);
		if (pd)
			free(pd->ev);
		free(pd);
		gp_block_release(p, ds, h, u);
		return;
	}
	u->pending = true;
	pd->ds = ds;
	pd->h = h;
	pd->size = size;
	pd->next = p->pending;
	p->pending = pd;
	p->st.pending_blocks++;
	p->st.pending_bytes += size;
}

int gp_dstream_free(struct gp_ctx *ctx, struct gp_dpool *p,
		    struct gp_dstream *ds, bfc_handle_t h, gp_stream_t stream)
{
	struct bfc_chunk_info ci;
	struct gp_uses *u;
	int ret;

	bfc_chunk_info(ds->b, h, &ci);
	u = (struct gp_uses *)(uintptr_t)ci.tag;
	if (u && u->pending)
		return gp_err(ctx, -EINVAL, "gp_dev_free: %#llx freed twice",
			      (unsigned long long)ci.addr);
	if (stream != ds->stream) {
		ret = gp_dstream_add_use(p, ds, h, stream);
		if (ret)
			return gp_err(ctx, ret, "out of memory for stream uses");
		bfc_chunk_info(ds->b, h, &ci);
		u = (struct gp_uses *)(uintptr_t)ci.tag;
	}
	p->st.in_use -= ci.size;
	p->st.requested -= ci.requested;
	if (!u || !u->n)
		/* Only its own stream used it: reusable there at once. */
		gp_block_release(p, ds, h, u);
	else
		gp_dstream_pend(ctx, p, ds, h, u, ci.size);
	return 0;
}

void gp_pending_poll(struct gp_ctx *ctx, struct gp_dpool *p, bool sync)
{
	struct gp_pending **pp = &p->pending, *pd;
	uint32_t i;

	while ((pd = *pp)) {
		bool done = true;

		for (i = 0; i < pd->nr_ev && done; i++) {
			cudaError_t e = gp_cuda_event_done(ctx, pd->ev[i], sync);

			if (sync)
				p->st.event_syncs++;
			if (e == cudaErrorNotReady) {
				/* Not an error; the runtime may still have
				 * made it the thread's last error, which the
				 * application's next cudaGetLastError() would
				 * report: cleared (gp_cuda_event_done), as
				 * PyTorch does.
				 */
				done = false;
			} else if (e != cudaSuccess) {
				/* A broken context: the stream will run no
				 * more work; keeping the block forever helps
				 * no one.
				 */
				gp_debug(ctx, "event of block %#llx: %s",
					 (unsigned long long)pd->h,
					 gp_cuda_errstr(ctx, e));
			}
		}
		if (!done) {
			pp = &pd->next;
			continue;
		}
		*pp = pd->next;
		for (i = 0; i < pd->nr_ev; i++)
			gp_event_put(ctx, p, pd->ev[i]);
		{
			struct bfc_chunk_info ci;

			bfc_chunk_info(pd->ds->b, pd->h, &ci);
			gp_block_release(p, pd->ds, pd->h,
					 (struct gp_uses *)(uintptr_t)ci.tag);
		}
		p->st.pending_blocks--;
		p->st.pending_bytes -= pd->size;
		free(pd->ev);
		free(pd);
	}
}
