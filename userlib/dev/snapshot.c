// SPDX-License-Identifier: MIT
/*
 * snapshot.c - what the device pools look like: gp_dev_snapshot() (JSON of
 * segments and blocks) and the out-of-memory memory map on stderr.
 *
 * JSON layout (version 1), every number an integer:
 *   {"version":1,"devices":[{"device":0,"limit":0,"reserved":N,"in_use":N,
 *     "peak_in_use":N,"pending_blocks":N,"segments":[{"address":N,"size":N,
 *     "stream":N,"blocks":[{"address":N,"size":N,"requested":N,
 *     "state":"allocated"|"pending_free"|"free"|"unmapped"}]}]}]}
 * ("unmapped": a hole of the virtual mode, free address space whose
 * granules are not mapped; requested 0)
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"

struct gp_sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void gp_sb_printf(struct gp_sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void gp_sb_printf(struct gp_sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL,
			      b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap * 2 : 4096;
			char *s;

			while (cap < b->len + (size_t)n + 1)
				cap *= 2;
			s = realloc(b->s, cap);
			if (!s) {
				b->oom = true;
				return;
			}
			b->s = s;
			b->cap = cap;
		}
	}
}

struct gp_snap_walk {
	struct gp_sbuf *b;
	struct gp_dstream *ds;
	uint32_t region;	/* current segment's region id, 0 = none */
	bool first_seg;
	bool first_block;
};

static int gp_snap_chunk(void *arg, const struct bfc_chunk_info *c)
{
	struct gp_snap_walk *w = arg;
	const char *state = !c->in_use ? "free" :
			    c->tag == GP_VMM_HOLE_TAG ? "unmapped" :
			    gp_block_pending(c) ? "pending_free" : "allocated";

	if (c->region_id != w->region) {
		uint64_t size = (uint64_t)(uintptr_t)gp_map_get(&w->ds->segs, c->addr);

		if (w->region)
			gp_sb_printf(w->b, "]}");
		gp_sb_printf(w->b, "%s{\"address\":%llu,\"size\":%llu,\"stream\":%llu,"
			     "\"blocks\":[", w->first_seg ? "" : ",",
			     (unsigned long long)c->addr, (unsigned long long)size,
			     (unsigned long long)(uintptr_t)w->ds->stream);
		w->region = c->region_id;
		w->first_seg = false;
		w->first_block = true;
	}
	gp_sb_printf(w->b, "%s{\"address\":%llu,\"size\":%llu,\"requested\":%llu,"
		     "\"state\":\"%s\"}", w->first_block ? "" : ",",
		     (unsigned long long)c->addr, (unsigned long long)c->size,
		     (unsigned long long)(c->tag == GP_VMM_HOLE_TAG ? 0 : c->requested),
		     state);
	w->first_block = false;
	return 0;
}

static void gp_snap_pool(struct gp_sbuf *b, struct gp_dpool *p, bool first)
{
	struct gp_snap_walk w = { .b = b, .first_seg = true };
	struct gp_dstream *ds;

	gp_sb_printf(b, "%s{\"device\":%d,\"limit\":%llu,\"reserved\":%llu,"
		     "\"in_use\":%llu,\"peak_in_use\":%llu,\"pending_blocks\":%llu,"
		     "\"segments\":[", first ? "" : ",", p->device,
		     (unsigned long long)p->limit,
		     (unsigned long long)p->st.reserved,
		     (unsigned long long)p->st.in_use,
		     (unsigned long long)p->st.peak_in_use,
		     (unsigned long long)p->st.pending_blocks);
	for (ds = p->streams; ds; ds = ds->next) {
		w.ds = ds;
		w.region = 0;
		bfc_for_each_chunk(ds->b, gp_snap_chunk, &w);
		if (w.region)
			gp_sb_printf(b, "]}");
	}
	gp_sb_printf(b, "]}");
}

GP_API int gp_dev_snapshot(struct gp_ctx *ctx, int device, char **json,
			   size_t *len)
{
	struct gp_sbuf b = { 0 };
	bool first = true;
	int d;

	if (!ctx || !json)
		return -EINVAL;
	if (device >= gp_cuda_device_count(ctx))
		return gp_err(ctx, -ENODEV, "gp_dev_snapshot: no device %d", device);
	gp_sb_printf(&b, "{\"version\":1,\"devices\":[");
	for (d = 0; d < gp_cuda_device_count(ctx); d++) {
		struct gp_dpool *p = gp_dpool_get(ctx, d, false);

		if (!p || (device >= 0 && d != device))
			continue;
		pthread_mutex_lock(&p->lock);
		gp_snap_pool(&b, p, first);
		pthread_mutex_unlock(&p->lock);
		first = false;
	}
	gp_sb_printf(&b, "]}\n");
	if (b.oom) {
		free(b.s);
		return gp_err(ctx, -ENOMEM, "gp_dev_snapshot: out of memory");
	}
	*json = b.s;
	if (len)
		*len = b.len;
	return 0;
}

/* TensorFlow's out-of-memory report, one stream pool after another. */
void gp_dpool_dump(struct gp_ctx *ctx, struct gp_dpool *p, size_t asked)
{
	size_t (*const fns[2])(const struct bfc *, char *, size_t) = {
		bfc_dump_bins, bfc_dump_chunks,
	};
	struct gp_dstream *ds;
	char *buf;
	size_t n;
	int i;

	(void)ctx;
	fprintf(stderr,
		"gpupool: device %d out of memory for %zu bytes: %llu reserved, "
		"%llu in use, %llu pending, limit %llu\n", p->device, asked,
		(unsigned long long)p->st.reserved, (unsigned long long)p->st.in_use,
		(unsigned long long)p->st.pending_bytes,
		(unsigned long long)p->limit);
	for (ds = p->streams; ds; ds = ds->next) {
		char bad[512];
		uint32_t nbad = bfc_check(ds->b, bad, sizeof(bad));

		fprintf(stderr, "gpupool: stream %p:\n", (void *)ds->stream);
		if (nbad)
			fprintf(stderr, "gpupool: %u BFC inconsistencies:\n%s\n",
				nbad, bad);
		for (i = 0; i < 3; i++) {
			n = i < 2 ? fns[i](ds->b, NULL, 0) :
			    bfc_render_occupancy(ds->b, NULL, 0, 100);
			buf = malloc(n + 1);
			if (!buf)
				return;
			if (i < 2)
				fns[i](ds->b, buf, n + 1);
			else
				bfc_render_occupancy(ds->b, buf, n + 1, 100);
			fputs(buf, stderr);
			if (n && buf[n - 1] != '\n')
				fputc('\n', stderr);
			free(buf);
		}
	}
}
