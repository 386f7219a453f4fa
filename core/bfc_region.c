// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_region.c - regions: the address ranges the allocator carves chunks
 * from, each bracketed by two edge records, in slots with stable indices
 * and an array of slot indices sorted by base; adding one (joining the
 * regions it touches, with BFC_MERGE_ADJACENT_REGIONS), removing a wholly
 * free one, and the binary searches by address.  Regions are rare, large
 * events, on no hot path (docs/bfc.md).
 */
#include "bfc_internal.h"

#define REGIONS_MIN	8u

static int regions_reserve(struct bfc *b)
{
	uint32_t cap = b->region_cap ? b->region_cap * 2 : REGIONS_MIN;
	struct bfc_region *r;
	uint32_t *o;

	if (b->nr_regions < b->region_cap)
		return 0;
	if (b->region_cap >= (1u << 24))
		return -BFC_ENOMEM;
	r = bfc_env_alloc((size_t)cap * sizeof(*r));
	o = bfc_env_alloc((size_t)cap * sizeof(*o));
	if (!r || !o) {
		if (r)
			bfc_env_free(r, (size_t)cap * sizeof(*r));
		if (o)
			bfc_env_free(o, (size_t)cap * sizeof(*o));
		return -BFC_ENOMEM;
	}
	if (b->regions) {
		bfc_memcpy(r, b->regions, (size_t)b->region_cap * sizeof(*r));
		bfc_memcpy(o, b->order, (size_t)b->region_cap * sizeof(*o));
		bfc_env_free(b->regions, (size_t)b->region_cap * sizeof(*r));
		bfc_env_free(b->order, (size_t)b->region_cap * sizeof(*o));
	}
	b->regions = r;
	b->order = o;
	b->region_cap = cap;
	return 0;
}

uint32_t bfc__order_upper(const struct bfc *b, uint64_t base)
{
	uint32_t lo = 0, hi = b->nr_regions;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b->regions[b->order[mid]].base <= base)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void order_insert(struct bfc *b, uint32_t pos, uint32_t slot)
{
	uint32_t i;

	for (i = b->nr_regions; i > pos; i--)
		b->order[i] = b->order[i - 1];
	b->order[pos] = slot;
	b->nr_regions++;
}

static void order_remove(struct bfc *b, uint32_t pos)
{
	uint32_t i;

	b->nr_regions--;
	for (i = pos; i < b->nr_regions; i++)
		b->order[i] = b->order[i + 1];
}

uint32_t bfc__region_of(const struct bfc *b, uint64_t addr)
{
	uint32_t i = bfc__order_upper(b, addr);

	if (i > 0 && bfc__region_end(&b->regions[b->order[i - 1]]) > addr)
		return b->order[i - 1];
	return UINT32_MAX;
}

/* A region id no live region has: counting up from 1, skipping 0 and,
 * once the count has wrapped (2^32 - 1 additions), the ids still in use.
 * O(regions) per addition; regions are few and rarely added.
 */
static uint32_t next_id(struct bfc *b)
{
	uint32_t id, i;

	for (;;) {
		id = b->next_region_id++;
		if (!b->next_region_id)
			b->next_region_id = 1;
		for (i = 0; i < b->nr_regions; i++)
			if (b->regions[b->order[i]].id == id)
				break;
		if (i == b->nr_regions)
			return id;
	}
}

/* Make slot e an edge at addr. */
static void edge_init(struct bfc_chunk *C, uint32_t e, uint64_t addr)
{
	C[e].addr = addr;
	C[e].size = 0;
	C[e].flags = BFC_CF_LIVE | BFC_CF_HELD | BFC_CF_EDGE;
	/* Older than every chunk, for policy AGE (cut_high()). */
	C[e].u.requested = 0;
	C[e].u.alloc_id = 0;
}

/* Link chunk h between a and z (neighbours until now). */
static void link_between(struct bfc_chunk *C, uint32_t a, uint32_t h,
			 uint32_t z)
{
	C[a].next = h;
	C[h].prev = a;
	C[h].next = z;
	C[z].prev = h;
}

/* Where [base, base + size) goes: *pos, its place in the address order,
 * and the regions it touches, *below and *above (UINT32_MAX: none, or
 * BFC_MERGE_ADJACENT_REGIONS is off and it stays apart from them).
 * -BFC_EINVAL, and nothing changed, when the range is empty, not granule
 * aligned, wraps, or overlaps a region.
 */
static int region_place(const struct bfc *b, uint64_t base, uint64_t size,
			uint32_t *pos, uint32_t *below, uint32_t *above)
{
	const struct bfc_region *r;
	uint64_t end;
	uint32_t p;

	if (!size || (base & b->gmask) || (size & b->gmask) ||
	    size > UINT64_MAX - base)
		return -BFC_EINVAL;
	end = base + size;
	p = bfc__order_upper(b, base);
	*below = UINT32_MAX;
	*above = UINT32_MAX;
	if (p > 0) {
		r = &b->regions[b->order[p - 1]];
		if (bfc__region_end(r) > base)
			return -BFC_EINVAL;
		if (bfc__region_end(r) == base)
			*below = b->order[p - 1];
	}
	if (p < b->nr_regions) {
		r = &b->regions[b->order[p]];
		if (r->base < end)
			return -BFC_EINVAL;
		if (r->base == end)
			*above = b->order[p];
	}
	if (!(b->p.flags & BFC_MERGE_ADJACENT_REGIONS)) {
		*below = UINT32_MAX;
		*above = UINT32_MAX;
	}
	*pos = p;
	return 0;
}

/* The new space as one chunk, not yet in any list, counted as reserved.
 * Its slot was reserved beforehand: this cannot fail.
 */
static uint32_t region_space(struct bfc *b, struct bfc_chunk *C,
			     uint64_t base, uint64_t size)
{
	uint32_t h = bfc__slot_get(b, C);

	C[h].addr = base;
	C[h].size = size;
	C[h].flags = BFC_CF_LIVE;
	b->st.reserved += size;
	if (b->st.reserved > b->st.peak_reserved)
		b->st.peak_reserved = b->st.reserved;
	return h;
}

/* Chunk h fills the gap between regions below and above: one region
 * (below's slot) from then on; the two edges in the gap go, and the
 * region above with them (at order[pos]).
 */
static uint32_t region_join(struct bfc *b, struct bfc_chunk *C,
			    uint32_t below, uint32_t above, uint32_t h,
			    uint32_t pos)
{
	struct bfc_region *r = &b->regions[below];
	struct bfc_region *a = &b->regions[above];

	link_between(C, C[r->hi].prev, h, C[a->lo].next);
	bfc__slot_put(b, C, r->hi);
	bfc__slot_put(b, C, a->lo);
	r->hi = a->hi;
	r->size += C[h].size + a->size;
	a->id = 0;
	order_remove(b, pos);
	return below;
}

/* Chunk h appended to region ri, just below it: its high edge moves up. */
static uint32_t region_grow_up(struct bfc *b, struct bfc_chunk *C,
			       uint32_t ri, uint32_t h)
{
	struct bfc_region *r = &b->regions[ri];

	link_between(C, C[r->hi].prev, h, r->hi);
	C[r->hi].addr = C[h].addr + C[h].size;
	r->size += C[h].size;
	return ri;
}

/* Chunk h prepended to region ri, just above it: its low edge moves down. */
static uint32_t region_grow_down(struct bfc *b, struct bfc_chunk *C,
				 uint32_t ri, uint32_t h)
{
	struct bfc_region *r = &b->regions[ri];

	link_between(C, r->lo, h, C[r->lo].next);
	C[r->lo].addr = C[h].addr;
	r->base = C[h].addr;
	r->size += C[h].size;
	return ri;
}

/* Chunk h as a region of its own, in the first free region slot, between
 * two new edges (their slots reserved beforehand), at order[pos].
 */
static uint32_t region_new(struct bfc *b, struct bfc_chunk *C, uint32_t h,
			   uint32_t pos)
{
	struct bfc_region *r;
	uint32_t ri;

	for (ri = 0; b->regions[ri].id; ri++)
		;
	r = &b->regions[ri];
	r->base = C[h].addr;
	r->size = C[h].size;
	r->id = next_id(b);
	r->lo = bfc__slot_get(b, C);
	r->hi = bfc__slot_get(b, C);
	edge_init(C, r->lo, r->base);
	edge_init(C, r->hi, r->base + r->size);
	C[r->lo].prev = 0;
	C[r->hi].next = 0;
	link_between(C, r->lo, h, r->hi);
	order_insert(b, pos, ri);
	return ri;
}

/* Check the range, reserve every slot it may take (three chunks, one
 * region) so that nothing fails after the first change, then join the
 * space to the regions it touches, or make it a region, and free it.
 */
int bfc_add_region(struct bfc *b, uint64_t base, uint64_t size,
		   uint32_t *region_id)
{
	struct bfc_chunk *C;
	uint32_t pos, h, ri, below, above;
	int err;

	err = region_place(b, base, size, &pos, &below, &above);
	if (err)
		return err;
	if (bfc__slot_reserve(b, 3) || regions_reserve(b))
		return -BFC_ENOMEM;
	C = b->chunks;		/* may have moved */
	h = region_space(b, C, base, size);
	if (below != UINT32_MAX && above != UINT32_MAX)
		ri = region_join(b, C, below, above, h, pos);
	else if (below != UINT32_MAX)
		ri = region_grow_up(b, C, below, h);
	else if (above != UINT32_MAX)
		ri = region_grow_down(b, C, above, h);
	else
		ri = region_new(b, C, h, pos);
	C[h].cls = (uint16_t)bfc__class_of(b, size);
	bfc__release(b, h);
	b->st.regions = b->nr_regions;
	if (region_id)
		*region_id = b->regions[ri].id;
	return 0;
}

/* Remove the region at order[pos] if it is wholly free. */
static int remove_at(struct bfc *b, uint32_t pos, uint64_t *base,
		     uint64_t *size)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t ri = b->order[pos];
	struct bfc_region *r = &b->regions[ri];
	uint32_t h = C[r->lo].next;

	if ((C[h].flags & BFC_CF_HELD) || C[h].next != r->hi)
		return -BFC_EBUSY;
	if (base)
		*base = r->base;
	if (size)
		*size = r->size;
	bfc__class_remove(b, C, h);
	bfc__slot_put(b, C, h);
	bfc__slot_put(b, C, r->lo);
	bfc__slot_put(b, C, r->hi);
	b->st.chunks_free--;
	b->st.reserved -= r->size;
	r->id = 0;
	order_remove(b, pos);
	b->st.regions = b->nr_regions;
	return 0;
}

int bfc_remove_region(struct bfc *b, uint32_t region_id, uint64_t *base,
		      uint64_t *size)
{
	uint32_t pos;

	if (!region_id)
		return -BFC_ENOENT;
	for (pos = 0; pos < b->nr_regions; pos++)
		if (b->regions[b->order[pos]].id == region_id)
			return remove_at(b, pos, base, size);
	return -BFC_ENOENT;
}

uint64_t bfc_remove_free_regions(struct bfc *b,
				 void (*release_fn)(void *ctx, uint64_t base,
						    uint64_t size),
				 void *ctx)
{
	uint64_t total = 0, base, size;
	uint32_t pos = 0;

	while (pos < b->nr_regions) {
		if (remove_at(b, pos, &base, &size)) {
			pos++;
			continue;
		}
		total += size;
		if (release_fn)
			release_fn(ctx, base, size);
	}
	return total;
}
