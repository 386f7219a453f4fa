// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_check.c - bfc_check(): verify every invariant of the core's metadata
 * and report each violation in words.  O(chunks + classes + hash buckets);
 * every walk is bounded, so a corrupted link reports instead of looping.
 */
#include "bfc_internal.h"

struct ck {
	const struct bfc *b;
	struct bfc_out o;
	uint32_t bad;
	uint32_t live;		/* live slots (chunks and edges) */
	uint64_t indexed;	/* free chunks found in the classes */
};

#define FAIL(ck, fmt, ...)						\
	do {								\
		(ck)->bad++;						\
		BFC_PUT(&(ck)->o, fmt "\n", ##__VA_ARGS__);		\
	} while (0)

#define BFC_ULL(x)	((unsigned long long)(x))

/* Deeper than any red-black tree over 2^32 nodes can be. */
#define MAX_DEPTH	66

/* A live chunk or edge slot. */
static bool slot_ok(const struct bfc *b, uint32_t h)
{
	return h && h < b->nr_slots && (b->chunks[h].flags & BFC_CF_LIVE);
}

/* A live chunk (not an edge). */
static bool chunk_ok(const struct bfc *b, uint32_t h)
{
	return bfc__is_chunk(b, h);
}

static void check_slots(struct ck *ck)
{
	const struct bfc *b = ck->b;
	uint32_t h, n = 0;

	if (b->chunks[0].flags)
		FAIL(ck, "slot 0 (tree nil) has flags 0x%x", b->chunks[0].flags);
	for (h = b->free_slot; h && n <= b->nr_slots; h = b->chunks[h].next, n++) {
		if (h >= b->nr_slots) {
			FAIL(ck, "slot free list: slot %u out of range", h);
			break;
		}
		if (b->chunks[h].flags & BFC_CF_LIVE)
			FAIL(ck, "slot free list: slot %u holds a chunk", h);
	}
	if (n > b->nr_slots)
		FAIL(ck, "slot free list: cycle");
	for (h = 1; h < b->nr_slots; h++)
		ck->live += !!(b->chunks[h].flags & BFC_CF_LIVE);
	if (n <= b->nr_slots && ck->live + n != b->nr_slots - 1)
		FAIL(ck, "slots: %u live + %u on the free list != %u", ck->live, n,
		     b->nr_slots - 1);
}

/* Slot e is an edge at addr. */
static bool edge_ok(const struct bfc *b, uint32_t e, uint64_t addr)
{
	const struct bfc_chunk *c = &b->chunks[e];

	return slot_ok(b, e) && c->flags == (BFC_CF_LIVE | BFC_CF_HELD | BFC_CF_EDGE) &&
	       c->addr == addr && !c->size;
}

/* Region order[i]: a region slot in use, well formed, its id unique,
 * between its two edges, above order[i - 1] and, when adjacent regions
 * merge, apart from it.  Returns its size, for the stats' sum (0 when
 * order[i] names no region).
 */
static uint64_t check_region(struct ck *ck, uint32_t i)
{
	const struct bfc *b = ck->b;
	uint32_t ri = b->order[i], j;
	const struct bfc_region *r, *q;

	if (ri >= b->region_cap || !b->regions[ri].id) {
		FAIL(ck, "region order[%u] = slot %u: not a region", i, ri);
		return 0;
	}
	r = &b->regions[ri];
	for (j = 0; j < i; j++)
		if (b->regions[b->order[j]].id == r->id)
			FAIL(ck, "regions at 0x%llx and 0x%llx share id %u",
			     BFC_ULL(b->regions[b->order[j]].base),
			     BFC_ULL(r->base), r->id);
	if (!r->size || (r->base & b->gmask) || (r->size & b->gmask) ||
	    r->size > UINT64_MAX - r->base)
		FAIL(ck, "region %u [0x%llx, +0x%llx): bad base/size", r->id,
		     BFC_ULL(r->base), BFC_ULL(r->size));
	if (!edge_ok(b, r->lo, r->base) || b->chunks[r->lo].prev)
		FAIL(ck, "region %u: low edge %u is not an edge at 0x%llx",
		     r->id, r->lo, BFC_ULL(r->base));
	if (!edge_ok(b, r->hi, r->base + r->size) || b->chunks[r->hi].next)
		FAIL(ck, "region %u: high edge %u is not an edge at 0x%llx",
		     r->id, r->hi, BFC_ULL(r->base + r->size));
	if (i == 0)
		return r->size;
	q = &b->regions[b->order[i - 1]];
	if (q->base + q->size > r->base)
		FAIL(ck, "region %u at 0x%llx overlaps or precedes region %u at 0x%llx",
		     r->id, BFC_ULL(r->base), q->id, BFC_ULL(q->base));
	else if (q->base + q->size == r->base &&
		 (b->p.flags & BFC_MERGE_ADJACENT_REGIONS))
		FAIL(ck, "regions %u and %u are adjacent but not merged",
		     q->id, r->id);
	return r->size;
}

/* The region slots and the address order agree, each region is sound
 * (check_region()), and the stats add up to them.
 */
static void check_regions(struct ck *ck)
{
	const struct bfc *b = ck->b;
	uint64_t reserved = 0;
	uint32_t i, ids = 0;

	if (b->nr_regions > b->region_cap) {
		FAIL(ck, "regions: %u of capacity %u", b->nr_regions, b->region_cap);
		return;
	}
	for (i = 0; i < b->region_cap; i++)
		ids += !!b->regions[i].id;
	if (ids != b->nr_regions)
		FAIL(ck, "regions: %u slots in use, %u in order", ids, b->nr_regions);
	for (i = 0; i < b->nr_regions; i++)
		reserved += check_region(ck, i);
	if (reserved != b->st.reserved)
		FAIL(ck, "stats: reserved %llu, regions sum to %llu",
		     BFC_ULL(b->st.reserved), BFC_ULL(reserved));
	if (b->st.regions != b->nr_regions)
		FAIL(ck, "stats: %llu regions, %u exist", BFC_ULL(b->st.regions),
		     b->nr_regions);
	if (b->st.peak_reserved < b->st.reserved)
		FAIL(ck, "stats: peak_reserved %llu < reserved %llu",
		     BFC_ULL(b->st.peak_reserved), BFC_ULL(b->st.reserved));
}

/* Chunk h is on its address's bucket chain (bounded: chains may be
 * corrupt, and a free chunk's hnext is stale).
 */
static bool indexed(const struct bfc *b, uint32_t h)
{
	uint32_t x = b->hash[bfc__hash_bucket(b, b->chunks[h].addr)], n = 0;

	for (; x && x < b->nr_slots && n <= b->nr_slots; x = b->chunks[x].hnext, n++)
		if (x == h)
			return true;
	return false;
}

struct sums {
	uint64_t in_use, requested, used, free, chunks, edges;
};

static void check_chunk(struct ck *ck, uint32_t h, struct sums *s)
{
	const struct bfc *b = ck->b;
	const struct bfc_chunk *c = &b->chunks[h];

	if (!c->size || (c->size & b->gmask))
		FAIL(ck, "chunk %u at 0x%llx: bad size %llu", h, BFC_ULL(c->addr),
		     BFC_ULL(c->size));
	if (c->cls != bfc__class_of(b, c->size))
		FAIL(ck, "chunk %u at 0x%llx size %llu: in class %u, belongs in %u",
		     h, BFC_ULL(c->addr), BFC_ULL(c->size), c->cls,
		     bfc__class_of(b, c->size));
	if (c->flags & BFC_CF_HELD) {
		s->used++;
		s->in_use += c->size;
		s->requested += c->u.requested;
		if (!c->u.requested || c->u.requested > c->size)
			FAIL(ck, "chunk %u at 0x%llx: requested %llu, size %llu",
			     h, BFC_ULL(c->addr), BFC_ULL(c->u.requested), BFC_ULL(c->size));
		if (!c->u.alloc_id || c->u.alloc_id > b->st.nr_allocs)
			FAIL(ck, "chunk %u at 0x%llx: alloc id %llu (last %llu)",
			     h, BFC_ULL(c->addr), BFC_ULL(c->u.alloc_id),
			     BFC_ULL(b->st.nr_allocs));
		if (c->size > b->st.largest_alloc)
			FAIL(ck, "chunk %u at 0x%llx: size %llu > largest_alloc %llu",
			     h, BFC_ULL(c->addr), BFC_ULL(c->size), BFC_ULL(b->st.largest_alloc));
		if (!indexed(b, h))
			FAIL(ck, "chunk %u at 0x%llx: in use but not in the address index",
			     h, BFC_ULL(c->addr));
	} else {
		s->free++;
		if (indexed(b, h))
			FAIL(ck, "free chunk %u at 0x%llx is in the address index",
			     h, BFC_ULL(c->addr));
	}
}

/* The chunks of region r, from its low edge to its high: each linked back
 * to the one before, starting where that one ends (no gap, no overlap),
 * no two free ones side by side, and each sound in itself
 * (check_chunk()); the last one ends the region and is its high edge's.
 * Stops at the first broken link, so a corrupt list reports, not loops.
 */
static void check_region_chunks(struct ck *ck, const struct bfc_region *r,
				struct sums *s)
{
	const struct bfc *b = ck->b;
	uint32_t h, prev = r->lo, steps = 0;
	uint64_t at = r->base;

	for (h = b->chunks[r->lo].next; h != r->hi;
	     prev = h, h = b->chunks[h].next) {
		const struct bfc_chunk *c;

		if (!chunk_ok(b, h)) {
			FAIL(ck, "region %u: chunk link to bad handle %u after %u",
			     r->id, h, prev);
			return;
		}
		if (++steps > b->nr_slots) {
			FAIL(ck, "region %u: chunk list cycle", r->id);
			return;
		}
		c = &b->chunks[h];
		s->chunks++;
		if (c->prev != prev)
			FAIL(ck, "chunk %u at 0x%llx: prev is %u, should be %u",
			     h, BFC_ULL(c->addr), c->prev, prev);
		if (c->addr != at)
			FAIL(ck, "region %u: chunk %u at 0x%llx, expected 0x%llx (%s)",
			     r->id, h, BFC_ULL(c->addr), BFC_ULL(at),
			     c->addr > at ? "gap" : "overlap");
		if (!(c->flags & BFC_CF_HELD) &&
		    !(b->chunks[prev].flags & BFC_CF_HELD))
			FAIL(ck, "free chunks %u and %u at 0x%llx are adjacent (not coalesced)",
			     prev, h, BFC_ULL(c->addr));
		check_chunk(ck, h, s);
		at = c->addr + c->size;
		if (c->size > r->base + r->size - c->addr) {
			FAIL(ck, "region %u: chunk %u at 0x%llx runs past its end",
			     r->id, h, BFC_ULL(c->addr));
			return;
		}
	}
	if (prev == r->lo)
		FAIL(ck, "region %u: no chunk between its edges", r->id);
	if (at != r->base + r->size)
		FAIL(ck, "region %u: chunks end at 0x%llx, region at 0x%llx",
		     r->id, BFC_ULL(at), BFC_ULL(r->base + r->size));
	if (b->chunks[r->hi].prev != prev)
		FAIL(ck, "region %u: last chunk is %u, high edge says %u",
		     r->id, prev, b->chunks[r->hi].prev);
}

/* Every region is tiled by its chunks (check_region_chunks()), and the
 * chunks and edges found so are every live slot: none is lost.
 */
static void check_tiling(struct ck *ck, struct sums *s)
{
	const struct bfc *b = ck->b;
	uint32_t i;

	if (b->nr_regions > b->region_cap)
		return;		/* check_regions() said so; order[] is short */
	for (i = 0; i < b->nr_regions; i++) {
		uint32_t ri = b->order[i];
		const struct bfc_region *r;

		if (ri >= b->region_cap || !b->regions[ri].id)
			continue;
		r = &b->regions[ri];
		if (!slot_ok(b, r->lo) || !slot_ok(b, r->hi))
			continue;	/* check_regions() said so */
		s->edges += 2;
		check_region_chunks(ck, r, s);
	}
	if (s->chunks + s->edges != ck->live)
		FAIL(ck, "chunks: %llu in regions and %llu edges, %u live slots (leak)",
		     BFC_ULL(s->chunks), BFC_ULL(s->edges), ck->live);
}

/* Chunk x (a live chunk) is indexed in class c: it must be free and of a
 * size of that class.
 */
static void check_member(struct ck *ck, uint32_t c, uint32_t x)
{
	const struct bfc *b = ck->b;
	const struct bfc_chunk *n = &b->chunks[x];

	ck->indexed++;
	if (n->flags & BFC_CF_HELD)
		FAIL(ck, "class %u: in-use chunk %u at 0x%llx is in it", c, x,
		     BFC_ULL(n->addr));
	if (n->cls != c)
		FAIL(ck, "class %u: chunk %u (size %llu) records class %u", c, x,
		     BFC_ULL(n->size), n->cls);
	if (bfc__class_of(b, n->size) != c)
		FAIL(ck, "class %u: chunk %u of size %llu belongs in class %u", c,
		     x, BFC_ULL(n->size), bfc__class_of(b, n->size));
}

/* Check node x of class c's tree (reached from `parent`); false: do not
 * descend into it.
 */
static bool check_node(struct ck *ck, uint32_t c, uint32_t x, uint32_t parent,
		       int depth)
{
	const struct bfc *b = ck->b;
	const struct bfc_chunk *n;

	if (!chunk_ok(b, x)) {
		FAIL(ck, "class %u: tree link from %u to bad handle %u", c, parent, x);
		return false;
	}
	n = &b->chunks[x];
	if (n->t.parent != parent) {
		FAIL(ck, "class %u: chunk %u has parent %u, linked from %u", c, x,
		     n->t.parent, parent);
		return false;
	}
	if (depth > MAX_DEPTH) {
		FAIL(ck, "class %u: tree deeper than %d at chunk %u", c, MAX_DEPTH, x);
		return false;
	}
	check_member(ck, c, x);
	if (n->t.left >= b->nr_slots || n->t.right >= b->nr_slots) {
		FAIL(ck, "class %u: chunk %u links to %u/%u, beyond %u slots", c,
		     x, n->t.left, n->t.right, b->nr_slots);
		return false;
	}
	if ((n->flags & BFC_CF_RED) &&
	    ((b->chunks[n->t.left].flags & BFC_CF_RED) ||
	     (b->chunks[n->t.right].flags & BFC_CF_RED)))
		FAIL(ck, "class %u: red chunk %u has a red child", c, x);
	return true;
}

/* Walk class c's tree without recursion (kernel stacks are small): down
 * only along links whose child points back (checked first), so climbing by
 * parent links retraces the path and every node is seen once.  Checks the
 * in-order sequence is strictly increasing in (size, addr) and every path
 * has the same number of black nodes.
 */
static void check_tree(struct ck *ck, uint32_t c, uint32_t root)
{
	const struct bfc_chunk *C = ck->b->chunks;
	uint32_t x = root, prev = 0, next;
	int from = 0, depth = 0, blacks, bh = -1;

	if (!check_node(ck, c, root, 0, 0))
		return;
	blacks = !(C[root].flags & BFC_CF_RED);
	for (;;) {
		/* from: 0 entered x from above, 1 back from its left, 2 back
		 * from its right.
		 */
		next = from == 0 ? C[x].t.left : from == 1 ? C[x].t.right : 0;
		if (from == 1) {	/* in order: x comes after prev */
			if (prev && !bfc__key_less(&C[prev], &C[x]))
				FAIL(ck, "class %u: chunk %u (size %llu at 0x%llx) out of (size, addr) order",
				     c, x, BFC_ULL(C[x].size), BFC_ULL(C[x].addr));
			prev = x;
			if (next && next == C[x].t.left) {
				FAIL(ck, "class %u: chunk %u has the same left and right child",
				     c, x);
				next = 0;
				from = 2;
				continue;
			}
		}
		if (from < 2) {
			if (!next) {
				if (bh < 0)
					bh = blacks;
				else if (bh != blacks)
					FAIL(ck, "class %u: %d black chunks above a leaf of chunk %u, %d elsewhere",
					     c, blacks, x, bh);
			} else if (check_node(ck, c, next, x, depth + 1)) {
				x = next;
				depth++;
				blacks += !(C[x].flags & BFC_CF_RED);
				from = 0;
				continue;
			}
			from++;
			continue;
		}
		/* Both subtrees done: climb. */
		if (x == root)
			break;
		blacks -= !(C[x].flags & BFC_CF_RED);
		depth--;
		next = C[x].t.parent;
		from = C[next].t.left == x ? 1 : 2;
		x = next;
	}
}

/* Class c holds one chunk, m, and no tree. */
static void check_alone(struct ck *ck, uint32_t c, uint32_t m)
{
	if (!chunk_ok(ck->b, m))
		FAIL(ck, "class %u: its chunk is bad handle %u", c, m);
	else
		check_member(ck, c, m);
}

static void check_classes(struct ck *ck, const struct sums *s)
{
	const struct bfc *b = ck->b;
	const struct bfc_chunk *C = b->chunks;
	uint32_t c, w;

	for (c = 0; c < BFC_NR_CLASSES; c++) {
		const union bfc_class *k = &b->cls[c];
		bool bit = b->cls_map[c >> 6] >> (c & 63) & 1;
		uint32_t x, d;

		if (bit != !!k->min)
			FAIL(ck, "class %u: bitmap says %s, class is %s", c,
			     bit ? "non-empty" : "empty", k->min ? "non-empty" : "empty");
		if (!k->min) {
			if (k->root)
				FAIL(ck, "class %u: empty but has a tree at %u", c, k->root);
			continue;
		}
		if (!k->root) {
			check_alone(ck, c, k->min);
			continue;
		}
		check_tree(ck, c, k->root);
		if (!chunk_ok(b, k->root))
			continue;
		if (C[k->root].flags & BFC_CF_RED)
			FAIL(ck, "class %u: root %u is red", c, k->root);
		if (!C[k->root].t.left && !C[k->root].t.right)
			FAIL(ck, "class %u: a tree of one chunk (%u)", c, k->root);
		for (x = k->root, d = 0; chunk_ok(b, C[x].t.left) && d < MAX_DEPTH; d++)
			x = C[x].t.left;
		if (k->min != x)
			FAIL(ck, "class %u: cached minimum %u, leftmost is %u", c,
			     k->min, x);
	}
	for (w = 0; w < 64; w++) {
		bool bit = b->word_map >> w & 1;
		bool any = w < BFC_NR_WORDS && b->cls_map[w];

		if (bit != any)
			FAIL(ck, "class word %u: bitmap says %s, its classes are %s",
			     w, bit ? "non-empty" : "empty", any ? "non-empty" : "empty");
	}
	if (ck->indexed != s->free)
		FAIL(ck, "classes: %llu chunks indexed, %llu free chunks in regions",
		     BFC_ULL(ck->indexed), BFC_ULL(s->free));
}

static void check_hash(struct ck *ck, const struct sums *s)
{
	const struct bfc *b = ck->b;
	uint64_t n = 0, nb = 1ull << (64 - b->hash_shift);
	uint32_t i, x;

	for (i = 0; i < nb; i++) {
		for (x = b->hash[i]; x; x = b->chunks[x].hnext) {
			if (!chunk_ok(b, x) || !(b->chunks[x].flags & BFC_CF_HELD) ||
			    bfc__hash_bucket(b, b->chunks[x].addr) != i) {
				FAIL(ck, "address index: bucket %u holds %u, not an in-use chunk with that address hash",
				     i, x);
				break;
			}
			if (++n > b->nr_slots) {
				FAIL(ck, "address index: chain cycle at bucket %u", i);
				return;
			}
		}
	}
	if (n != s->used)
		FAIL(ck, "address index: %llu entries, %llu chunks in use", BFC_ULL(n),
		     BFC_ULL(s->used));
	if (nb < (b->nr_slots < (1u << 30) ? 2ull * b->nr_slots : 1ull << 31))
		FAIL(ck, "address index: %llu buckets for %u slots",
		     BFC_ULL(nb), b->nr_slots);
}

static void check_stats(struct ck *ck, const struct sums *s)
{
	const struct bfc_stats *st = &ck->b->st;

	if (st->in_use != s->in_use)
		FAIL(ck, "stats: in_use %llu, chunks sum to %llu", BFC_ULL(st->in_use),
		     BFC_ULL(s->in_use));
	if (st->requested != s->requested)
		FAIL(ck, "stats: requested %llu, chunks sum to %llu",
		     BFC_ULL(st->requested), BFC_ULL(s->requested));
	if (st->nr_allocs - st->nr_frees != s->used)
		FAIL(ck, "stats: %llu allocations - %llu frees, %llu chunks in use",
		     BFC_ULL(st->nr_allocs), BFC_ULL(st->nr_frees), BFC_ULL(s->used));
	if (st->chunks_free != s->free)
		FAIL(ck, "stats: %llu chunks free, counted %llu",
		     BFC_ULL(st->chunks_free), BFC_ULL(s->free));
	if (st->peak_in_use < st->in_use)
		FAIL(ck, "stats: peak_in_use %llu < in_use %llu",
		     BFC_ULL(st->peak_in_use), BFC_ULL(st->in_use));
}

uint32_t bfc_check(const struct bfc *b, char *buf, size_t len)
{
	struct ck ck = { .b = b };
	struct sums s = { 0 };

	bfc__out_init(&ck.o, buf, len);
	check_slots(&ck);
	check_regions(&ck);
	check_tiling(&ck, &s);
	check_classes(&ck, &s);
	check_hash(&ck, &s);
	check_stats(&ck, &s);
	return ck.bad;
}
