// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_walk.c - reading chunks without changing them: one chunk's
 * information, every chunk in address order (at once, or a bounded step
 * at a time from a cursor), the free space at the top and the aligned
 * free spans, a chunk's free neighbours.  Each is O(what it reads).
 */
#include "bfc_internal.h"

static void fill_info(const struct bfc *b, uint32_t h, uint32_t region_id,
		      struct bfc_chunk_info *info)
{
	const struct bfc_chunk *c = &b->chunks[h];
	bool used = c->flags & BFC_CF_HELD;

	info->addr = c->addr;
	info->size = c->size;
	info->requested = used ? c->u.requested : 0;
	info->alloc_id = used ? c->u.alloc_id : 0;
	info->tag = c->flags & BFC_CF_TAGGED ? c->u.tag : 0;
	info->region_id = region_id;
	info->bin = bfc_bin_of(b, c->size);
	info->in_use = used;
}

int bfc_chunk_info(const struct bfc *b, bfc_handle_t h,
		   struct bfc_chunk_info *info)
{
	uint32_t ri;

	if (!bfc__is_chunk(b, h) || !info)
		return -BFC_EINVAL;
	ri = bfc__region_of(b, b->chunks[h].addr);
	BFC_ASSERT(ri != UINT32_MAX, "a chunk outside every region");
	fill_info(b, h, ri != UINT32_MAX ? b->regions[ri].id : 0, info);
	return 0;
}

/* The name in parentheses: checkpatch takes "for_each...(" for a loop
 * macro and wants the function's brace on this line.
 */
int (bfc_for_each_chunk)(const struct bfc *b,
			 int (*fn)(void *ctx, const struct bfc_chunk_info *c),
			 void *ctx)
{
	struct bfc_chunk_info info;
	uint32_t pos, h;
	int ret;

	for (pos = 0; pos < b->nr_regions; pos++) {
		const struct bfc_region *r = &b->regions[b->order[pos]];

		for (h = b->chunks[r->lo].next; h != r->hi;
		     h = b->chunks[h].next) {
			fill_info(b, h, r->id, &info);
			ret = fn(ctx, &info);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int bfc_walk_chunks(const struct bfc *b, struct bfc_cursor *cur,
		    uint32_t max,
		    int (*fn)(void *ctx, const struct bfc_chunk_info *c),
		    void *ctx)
{
	const struct bfc_chunk *C = b->chunks;
	struct bfc_chunk_info info;
	uint32_t i = bfc__order_upper(b, cur->pos), seen = 0, h;
	int ret;

	/* Go on in the region holding pos, if any: from the hint if it is a
	 * chunk of that region at or below pos, else from its start.
	 */
	if (i > 0 && bfc__region_end(&b->regions[b->order[i - 1]]) > cur->pos)
		i--;
	for (; i < b->nr_regions; i++) {
		const struct bfc_region *r = &b->regions[b->order[i]];

		h = C[r->lo].next;
		if (bfc__is_chunk(b, cur->hint) && C[cur->hint].addr <= cur->pos &&
		    C[cur->hint].addr >= r->base)
			h = cur->hint;
		for (; h != r->hi; h = C[h].next) {
			if (max && seen++ >= max) {
				cur->hint = h;
				return BFC_WALK_MORE;
			}
			if (C[h].addr >= cur->pos) {
				fill_info(b, h, r->id, &info);
				cur->pos = info.addr + info.size;
				cur->hint = C[h].next;
				ret = fn(ctx, &info);
				if (ret)
					return ret;
			}
		}
		/* The region ends here; all of it has been looked at. */
		cur->pos = bfc__region_end(r);
		cur->hint = 0;
	}
	cur->hint = 0;
	return 0;
}

uint64_t bfc_free_at_top(const struct bfc *b)
{
	const struct bfc_chunk *c;

	if (!b->nr_regions)
		return 0;
	c = &b->chunks[b->chunks[b->regions[b->order[b->nr_regions - 1]].hi].prev];
	return c->flags & BFC_CF_HELD ? 0 : c->size;
}

static uint64_t bfc_span_flush(uint64_t start, uint64_t end, uint64_t align,
			       void (*fn)(void *ctx, uint64_t base,
					  uint64_t size),
			       void *ctx)
{
	uint64_t lo = ((start - 1) | (align - 1)) + 1, hi = end & ~(align - 1);

	if (end == start || start + align - 1 < start || hi <= lo)
		return 0;	/* empty, wraps, or no whole block */
	if (fn)
		fn(ctx, lo, hi - lo);
	return hi - lo;
}

uint64_t bfc_free_spans(const struct bfc *b, uint64_t align,
			void (*fn)(void *ctx, uint64_t base, uint64_t size),
			void *ctx)
{
	uint64_t start = 0, end = 0, n = 0;
	uint32_t pos, h;

	if (!align || (align & (align - 1)))
		return 0;
	/* A run of free chunks goes on while the next free chunk starts
	 * where it ends: in the same region, or in the next one.
	 */
	for (pos = 0; pos < b->nr_regions; pos++) {
		const struct bfc_region *r = &b->regions[b->order[pos]];

		for (h = b->chunks[r->lo].next; h != r->hi;
		     h = b->chunks[h].next) {
			const struct bfc_chunk *c = &b->chunks[h];

			if (c->flags & BFC_CF_HELD) {
				n += bfc_span_flush(start, end, align, fn, ctx);
				start = end = 0;
			} else if (end != start && c->addr == end) {
				end += c->size;
			} else {
				n += bfc_span_flush(start, end, align, fn, ctx);
				start = c->addr;
				end = c->addr + c->size;
			}
		}
	}
	return n + bfc_span_flush(start, end, align, fn, ctx);
}

int bfc_free_neighbours(const struct bfc *b, bfc_handle_t h, uint64_t *prev,
			uint64_t *next)
{
	const struct bfc_chunk *C = b->chunks, *p, *n;

	if (!bfc__is_chunk(b, h))
		return -BFC_EINVAL;
	/* Edges are HELD: a chunk's neighbours always exist. */
	p = &C[C[h].prev];
	n = &C[C[h].next];
	*prev = p->flags & BFC_CF_HELD ? 0 : p->size;
	*next = n->flags & BFC_CF_HELD ? 0 : n->size;
	return 0;
}
