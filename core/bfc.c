// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc.c - best-fit-with-coalescing allocator core: regions, chunks,
 * allocation and free, the address index, statistics.
 *
 * Design
 * ------
 * What it computes is TensorFlow's BFC, exactly: requests are rounded up to
 * the granularity; the chunk chosen is the smallest free chunk whose size is
 * >= the rounded request, ties broken by the lowest address; it is split
 * (front part returned) by TF's rule, plus PyTorch's max_split_size; a freed
 * chunk coalesces with free physical neighbours in its region.  How it
 * computes it differs, so that no operation slows down with the number of
 * chunks (TF walks a std::set per bin from its smallest element):
 *
 * - Chunk metadata: an array of 64-byte, cache-line aligned records indexed
 *   by uint32 handles (slot 0 is never a chunk: it is the trees' nil).  The
 *   array doubles when full (handles are indices, so they stay valid); freed
 *   slots go on a free list threaded through .next.  A free chunk needs tree
 *   links and an in-use chunk needs requested/alloc_id/tag, never both, so
 *   they share a union.  Every field the tree descent reads (size, addr,
 *   links) is in the record's first 48 bytes: one cache miss per node.
 *
 * - Free chunks: segregated size classes as in TLSF (bfc_internal.h): sizes
 *   below 32 granules have a class each, and every power of two above is cut
 *   into 32 classes, so a class spans sizes within 1/32 of each other.  A
 *   64-bit bitmap of non-empty groups and a 32-bit bitmap per group find the
 *   first non-empty class above a given one with two ctz instructions.
 *   Within a class the free chunks are a red-black tree keyed by (size,
 *   addr) with uint32 links and a cached minimum.  Best fit for a rounded
 *   size R of class c: if c is non-empty, its minimum when that is >= R
 *   (O(1)), else lower_bound(R) in its tree (O(log n_c)); otherwise the
 *   minimum of the next non-empty class (O(1)).  Because classes partition
 *   sizes in increasing order, this is exactly TF's "smallest size >= R,
 *   then lowest address".  TLSF proper takes any chunk of the next class
 *   (good fit); the trees are what make it best fit.  A red-black tree
 *   (not a treap or AVL) bounds rotations per update to 3, and with parent
 *   links a chunk is removed without searching for it.
 *   When a split leaves a rest, or a freed chunk merges into a free
 *   neighbour, the new chunk usually sorts exactly where the old one did
 *   (same class, between its in-order neighbours): it then takes the old
 *   node's place in the tree (bfc__class_rekey) instead of a remove plus a
 *   descending insert.
 *   On real traces most classes hold zero or one free chunk and most
 *   requests are served by the minimum of their own or the next non-empty
 *   class, so those cases are inline in bfc_internal.h (class insert and
 *   remove of a lone chunk, rekey of a lone chunk, the minimum or next-class
 *   fit) and the tree code is reached only for classes of two or more.
 *   class_of is branch-free (sizes below 2^SL_BITS granules take the
 *   general formula with fl forced to SL_BITS), as is clearing a group's
 *   bit: those branches were data-dependent and often mispredicted.
 *
 * - In-use chunks by address (free by address, bfc_lookup): an open
 *   addressing hash of start address -> handle, linear probing, load <=
 *   3/8 (a precomputed entry limit), doubled when full, backward-shift
 *   deletion (no tombstones).  A slot is 8 bytes: the handle and a 32-bit
 *   fingerprint (Fibonacci hash of addr / granularity) whose top bits are
 *   the home slot; a lookup by address confirms a matching fingerprint
 *   against the chunk, which the caller touches next anyway.  It holds
 *   exactly the in-use chunks, so its memory (21-43 bytes per in-use chunk)
 *   follows the number of chunks, not region bytes (TF's per-region
 *   pointer -> handle vector does).
 *
 * - Regions: slots with stable indices (chunks record theirs) and an array of
 *   slot indices sorted by base (overlap checks by binary search, address
 *   order for the walks).  Each region records its first and last chunk
 *   (a split keeps the front handle, a merge the lower one, so the first
 *   changes only when a merged region grows downwards); "wholly free" is
 *   "first chunk free and as large as the region": O(1).
 *   Region operations are O(number of regions); with
 *   BFC_MERGE_ADJACENT_REGIONS, joining two existing regions relabels the
 *   upper one's chunks.  Regions are rare, large events (cudaMalloc, a pool
 *   extension), so these are not on any hot path.
 *
 * - Every allocation of metadata (a chunk slot, hash growth, region arrays)
 *   is made before anything changes, so a failure leaves the allocator as it
 *   was.  bfc_free never allocates.
 *
 * - Statistics are kept as running sums; the largest free chunk is the
 *   maximum of the highest non-empty class's tree, found on demand in
 *   bfc_get_stats() (O(log n)).
 *
 * Costs: alloc O(log n_c) (plus the amortized array/hash growth), free
 * O(log n_c); n_c is the population of one size class.  bfc_check and the
 * dumps are O(everything).
 *
 * Freestanding: no floating point, no VLAs, no recursion, no 128-bit
 * division.  Not thread-safe (see bfc.h).
 */
#include "bfc_internal.h"

#define CHUNKS_MIN	64u
#define CHUNKS_MAX	(1u << 31)	/* 128 GiB of metadata: never reached */
#define HASH_MIN_BITS	6u
#define HASH_MAX_BITS	31u
#define REGIONS_MIN	8u

void bfc_params_default(struct bfc_params *p, uint64_t granularity)
{
	p->granularity = granularity;
	p->split_ratio = 2;
	p->flags = 0;
	p->split_threshold = 128ull << 20;
	p->max_split_size = 0;
}

/* Chunk slots ------------------------------------------------------------ */

static int chunks_resize(struct bfc *b, uint32_t cap)
{
	size_t size = (size_t)cap * sizeof(struct bfc_chunk) + 64;
	void *mem = bfc_env_alloc(size);
	struct bfc_chunk *c;

	if (!mem)
		return -BFC_ENOMEM;
	c = (struct bfc_chunk *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
	if (b->chunks) {
		bfc_memcpy(c, b->chunks,
			   (size_t)b->nr_used * sizeof(struct bfc_chunk));
		bfc_env_free(b->chunks_mem, b->chunks_mem_size);
	}
	b->chunks = c;
	b->chunks_mem = mem;
	b->chunks_mem_size = size;
	b->nr_slots = cap;
	return 0;
}

/* Make sure slot_get() can succeed once. */
static int slot_reserve(struct bfc *b)
{
	if (b->free_slot || b->nr_used < b->nr_slots)
		return 0;
	if (b->nr_slots >= CHUNKS_MAX)
		return -BFC_ENOMEM;
	return chunks_resize(b, b->nr_slots * 2);
}

static inline uint32_t slot_get(struct bfc *b)
{
	uint32_t h = b->free_slot;

	if (h)
		b->free_slot = b->chunks[h].next;
	else
		h = b->nr_used++;
	/* The caller sets addr, size and region; classes set the rest. */
	b->chunks[h].flags = BFC_CF_LIVE;
	b->chunks[h].prev = 0;
	b->chunks[h].next = 0;
	b->nr_live++;
	return h;
}

static inline void slot_put(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *c = &b->chunks[h];

	c->flags = 0;
	c->size = 0;
	c->next = b->free_slot;
	b->free_slot = h;
	b->nr_live--;
}

static inline bool handle_live(const struct bfc *b, uint32_t h)
{
	return h && h < b->nr_used && (b->chunks[h].flags & BFC_CF_LIVE);
}

/* Address index ---------------------------------------------------------- */

/* 32 bits of Fibonacci hashing of addr / granularity.  A slot's home is
 * the top bits of its fingerprint, so moving entries (growth, backward-
 * shift deletion) never needs their chunk's address.
 */
static inline uint32_t hash_fp(const struct bfc *b, uint64_t addr)
{
	return (uint32_t)(((addr >> b->gshift) * 0x9e3779b97f4a7c15ull) >> 32);
}

static inline uint32_t hash_home(const struct bfc *b, uint32_t fp)
{
	return fp >> b->hash_shift;
}

static void hash_put(struct bfc_hslot *t, uint32_t mask, uint32_t i,
		     uint32_t fp, uint32_t h)
{
	while (t[i].h)
		i = (i + 1) & mask;
	t[i].fp = fp;
	t[i].h = h;
}

static int hash_resize(struct bfc *b, uint32_t bits)
{
	uint32_t cap = 1u << bits, i;
	struct bfc_hslot *t = bfc_env_alloc((size_t)cap * sizeof(*t));
	struct bfc_hslot *old = b->hash;
	uint32_t old_cap = old ? b->hash_mask + 1 : 0;

	if (!t)
		return -BFC_ENOMEM;
	b->hash = t;
	b->hash_mask = cap - 1;
	b->hash_shift = 32 - bits;
	b->hash_limit = cap / 8 * 3;
	for (i = 0; i < old_cap; i++)
		if (old[i].h)
			hash_put(t, b->hash_mask, hash_home(b, old[i].fp),
				 old[i].fp, old[i].h);
	if (old)
		bfc_env_free(old, (size_t)old_cap * sizeof(*old));
	return 0;
}

/* Make sure one more entry keeps the load at most 3/8. */
static int hash_reserve(struct bfc *b)
{
	if (b->hash_count < b->hash_limit)
		return 0;
	if (b->hash_shift <= 32 - HASH_MAX_BITS)
		return -BFC_ENOMEM;
	return hash_resize(b, 33 - b->hash_shift);
}

/* The slot of the in-use chunk starting at addr, or -1. */
static int64_t hash_find_addr(const struct bfc *b, uint64_t addr)
{
	uint32_t fp = hash_fp(b, addr), i = hash_home(b, fp);

	for (; b->hash[i].h; i = (i + 1) & b->hash_mask)
		if (b->hash[i].fp == fp && b->chunks[b->hash[i].h].addr == addr)
			return i;
	return -1;
}

/* The slot of in-use chunk h, or -1. */
static int64_t hash_find_handle(const struct bfc *b, uint32_t h)
{
	uint32_t i = hash_home(b, hash_fp(b, b->chunks[h].addr));

	for (; b->hash[i].h; i = (i + 1) & b->hash_mask)
		if (b->hash[i].h == h)
			return i;
	return -1;
}

static inline void hash_delete_at(struct bfc *b, uint32_t i)
{
	struct bfc_hslot *t = b->hash;
	uint32_t mask = b->hash_mask, j = i, k;

	for (;;) {
		j = (j + 1) & mask;
		if (!t[j].h)
			break;
		k = hash_home(b, t[j].fp);
		/* Move t[j] into the hole unless its home lies cyclically in
		 * (i, j], where it is still reachable.
		 */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t[i] = t[j];
		i = j;
	}
	t[i].h = 0;
	t[i].fp = 0;
	b->hash_count--;
}

bool bfc__hash_has(const struct bfc *b, uint64_t addr, uint32_t h)
{
	int64_t i = hash_find_addr(b, addr);

	return i >= 0 && b->hash[i].h == h;
}

bool bfc__hash_slot_ok(const struct bfc *b, uint32_t i)
{
	const struct bfc_hslot *e = &b->hash[i];

	return e->h < b->nr_used && (b->chunks[e->h].flags & BFC_CF_USED) &&
	       (b->chunks[e->h].flags & BFC_CF_LIVE) &&
	       e->fp == hash_fp(b, b->chunks[e->h].addr);
}

/* Create / destroy --------------------------------------------------------- */

int bfc_create(struct bfc **out, const struct bfc_params *p)
{
	struct bfc *b;

	if (!out)
		return -BFC_EINVAL;
	*out = NULL;
	if (!p || !p->granularity || (p->granularity & (p->granularity - 1)) ||
	    (p->flags & ~BFC_PARAMS_VALID_FLAGS))
		return -BFC_EINVAL;
	b = bfc_env_alloc(sizeof(*b));
	if (!b)
		return -BFC_ENOMEM;
	b->p = *p;
	b->gmask = p->granularity - 1;
	b->gshift = (uint32_t)__builtin_ctzll(p->granularity);
	b->nr_used = 1;		/* slot 0: the nil sentinel */
	b->next_region_id = 1;
	b->next_alloc_id = 1;
	if (chunks_resize(b, CHUNKS_MIN) || hash_resize(b, HASH_MIN_BITS)) {
		bfc_destroy(b);
		return -BFC_ENOMEM;
	}
	*out = b;
	return 0;
}

void bfc_destroy(struct bfc *b)
{
	if (!b)
		return;
	if (b->chunks_mem)
		bfc_env_free(b->chunks_mem, b->chunks_mem_size);
	if (b->hash)
		bfc_env_free(b->hash, ((size_t)b->hash_mask + 1) * sizeof(*b->hash));
	if (b->regions)
		bfc_env_free(b->regions, (size_t)b->region_cap * sizeof(*b->regions));
	if (b->order)
		bfc_env_free(b->order, (size_t)b->region_cap * sizeof(*b->order));
	bfc_env_free(b, sizeof(*b));
}

/* Regions ------------------------------------------------------------------ */

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

/* Index in b->order of the first region whose base is > base. */
static uint32_t order_upper(const struct bfc *b, uint64_t base)
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

static inline uint64_t region_end(const struct bfc_region *r)
{
	return r->base + r->size;
}

/* Unlink h's next neighbour (already accounted into h's size, in no class)
 * and release its slot.
 */
static inline void drop_next(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t n = C[h].next, nn = C[n].next;

	C[h].next = nn;
	if (nn)
		C[nn].prev = h;
	else
		b->regions[C[h].region].last = h;
	slot_put(b, n);
	b->st.chunks_free--;
}

/* Merge h's next neighbour into h (both free, neither in a class). */
static inline void merge_next(struct bfc *b, uint32_t h)
{
	b->chunks[h].size += b->chunks[b->chunks[h].next].size;
	drop_next(b, h);
}

int bfc_add_region(struct bfc *b, uint64_t base, uint64_t size,
		   uint32_t *region_id)
{
	struct bfc_chunk *C;
	struct bfc_region *r = NULL;
	uint32_t pos, h, ri = 0, below = UINT32_MAX, above = UINT32_MAX;
	uint64_t end;

	if (!size || (base & b->gmask) || (size & b->gmask) ||
	    size > UINT64_MAX - base)
		return -BFC_EINVAL;
	end = base + size;
	pos = order_upper(b, base);
	if (pos > 0) {
		r = &b->regions[b->order[pos - 1]];
		if (region_end(r) > base)
			return -BFC_EINVAL;
		if (region_end(r) == base)
			below = b->order[pos - 1];
	}
	if (pos < b->nr_regions) {
		r = &b->regions[b->order[pos]];
		if (r->base < end)
			return -BFC_EINVAL;
		if (r->base == end)
			above = b->order[pos];
	}
	if (!(b->p.flags & BFC_MERGE_ADJACENT_REGIONS)) {
		below = UINT32_MAX;
		above = UINT32_MAX;
	}
	if (slot_reserve(b) || regions_reserve(b))
		return -BFC_ENOMEM;

	C = b->chunks;
	h = slot_get(b);
	C[h].addr = base;
	C[h].size = size;
	b->st.chunks_free++;
	b->st.reserved += size;
	if (b->st.reserved > b->st.peak_reserved)
		b->st.peak_reserved = b->st.reserved;

	if (below != UINT32_MAX) {
		/* Append to the region below; coalesce with its last chunk. */
		uint32_t last = b->regions[below].last;

		ri = below;
		r = &b->regions[ri];
		r->size += size;
		C[h].region = ri;
		C[h].prev = last;
		C[last].next = h;
		r->last = h;
		if (!(C[last].flags & BFC_CF_USED)) {
			bfc__class_remove(b, last);
			merge_next(b, last);
			h = last;
		}
	}
	if (above != UINT32_MAX) {
		/* Prepend to the region above, or join it to the region below
		 * (relabelling its chunks); coalesce with its first chunk.
		 */
		struct bfc_region *a = &b->regions[above];
		uint32_t first = a->first, x;

		if (below != UINT32_MAX) {
			for (x = first; x; x = C[x].next)
				C[x].region = ri;
			r->size += a->size;
			r->last = a->last;
			a->id = 0;
			order_remove(b, pos);
		} else {
			ri = above;
			r = a;
			r->base = base;
			r->size += size;
			r->first = h;
			C[h].region = ri;
		}
		C[h].next = first;
		C[first].prev = h;
		if (!(C[first].flags & BFC_CF_USED)) {
			bfc__class_remove(b, first);
			merge_next(b, h);
		}
	}
	if (below == UINT32_MAX && above == UINT32_MAX) {
		for (ri = 0; b->regions[ri].id; ri++)
			;
		r = &b->regions[ri];
		r->base = base;
		r->size = size;
		r->id = b->next_region_id++;
		if (!b->next_region_id)
			b->next_region_id = 1;
		r->first = h;
		r->last = h;
		C[h].region = ri;
		order_insert(b, pos, ri);
	}
	bfc__class_insert(b, h);
	b->st.regions = b->nr_regions;
	if (region_id)
		*region_id = b->regions[ri].id;
	return 0;
}

/* Remove the region at order[pos] if it is wholly free. */
static int remove_at(struct bfc *b, uint32_t pos, uint64_t *base,
		     uint64_t *size)
{
	uint32_t ri = b->order[pos];
	struct bfc_region *r = &b->regions[ri];
	struct bfc_chunk *c = &b->chunks[r->first];

	if ((c->flags & BFC_CF_USED) || c->size != r->size)
		return -BFC_EBUSY;
	if (base)
		*base = r->base;
	if (size)
		*size = r->size;
	bfc__class_remove(b, r->first);
	slot_put(b, r->first);
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
				 void (*release)(void *ctx, uint64_t base,
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
		if (release)
			release(ctx, base, size);
	}
	return total;
}

/* Allocation ---------------------------------------------------------------- */

static bool want_split(const struct bfc *b, uint64_t csize, uint64_t r)
{
	uint64_t t;

	if (csize == r)
		return false;
	if (b->p.max_split_size && csize >= b->p.max_split_size)
		return false;
	if (b->p.split_ratio &&
	    !__builtin_mul_overflow(r, (uint64_t)b->p.split_ratio, &t) &&
	    csize >= t)
		return true;
	return csize - r >= b->p.split_threshold;
}

int bfc_alloc(struct bfc *b, uint64_t size, bfc_handle_t *hp, uint64_t *ap)
{
	struct bfc_chunk *C, *c;
	uint64_t r;
	uint32_t h, fp;
	bool split;

	if (!size)
		return -BFC_EINVAL;
	if (size > UINT64_MAX - b->gmask)
		goto nomem;
	r = (size + b->gmask) & ~b->gmask;
	h = bfc__find_fit(b, r);
	if (!h)
		goto nomem;
	c = &b->chunks[h];
	if (b->p.max_split_size && r < b->p.max_split_size &&
	    c->size >= b->p.max_split_size)
		goto nomem;
	split = want_split(b, c->size, r);
	if (hash_reserve(b) || (split && slot_reserve(b)))
		goto nomem;

	C = b->chunks;		/* may have moved */
	if (split) {
		uint32_t n = slot_get(b), nx = C[h].next;

		C[n].addr = C[h].addr + r;
		C[n].size = C[h].size - r;
		C[n].region = C[h].region;
		C[n].prev = h;
		C[n].next = nx;
		if (nx)
			C[nx].prev = n;
		else
			b->regions[C[h].region].last = n;
		C[h].next = n;
		/* The rest usually sorts where the chunk did. */
		if (!bfc__class_rekey(b, h, n)) {
			bfc__class_remove(b, h);
			bfc__class_insert(b, n);
		}
		C[h].size = r;
	} else {
		bfc__class_remove(b, h);
		b->st.chunks_free--;
	}
	c = &C[h];
	c->flags |= BFC_CF_USED;
	c->u.requested = size;
	c->u.alloc_id = b->next_alloc_id++;
	c->u.tag = 0;
	fp = hash_fp(b, c->addr);
	hash_put(b->hash, b->hash_mask, hash_home(b, fp), fp, h);
	b->hash_count++;

	b->st.in_use += c->size;
	if (b->st.in_use > b->st.peak_in_use)
		b->st.peak_in_use = b->st.in_use;
	b->st.requested += size;
	if (c->size > b->st.largest_alloc)
		b->st.largest_alloc = c->size;
	b->st.nr_allocs++;
	b->st.chunks_in_use++;
	if (hp)
		*hp = h;
	if (ap)
		*ap = c->addr;
	return 0;
nomem:
	b->st.failed_allocs++;
	return -BFC_ENOMEM;
}

/* h is in use and already out of the address index. */
static inline void free_chunk(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t n, p;

	b->st.in_use -= C[h].size;
	b->st.requested -= C[h].u.requested;
	b->st.chunks_in_use--;
	b->st.nr_frees++;
	b->st.chunks_free++;
	C[h].flags &= (uint8_t)~BFC_CF_USED;

	n = C[h].next;
	if (n && (C[n].flags & BFC_CF_USED))
		n = 0;
	p = C[h].prev;
	if (p && (C[p].flags & BFC_CF_USED))
		p = 0;
	/* Where a free neighbour's class tree already has it, the merged
	 * chunk usually takes its place (see bfc__class_rekey).
	 */
	if (p) {
		if (n) {
			bfc__class_remove(b, n);
			merge_next(b, h);
		}
		merge_next(b, p);
		if (!bfc__class_rekey(b, p, p)) {
			bfc__class_remove(b, p);
			bfc__class_insert(b, p);
		}
	} else if (n) {
		C[h].size += C[n].size;
		if (!bfc__class_rekey(b, n, h)) {
			bfc__class_remove(b, n);
			bfc__class_insert(b, h);
		}
		drop_next(b, h);
	} else {
		bfc__class_insert(b, h);
	}
}

int bfc_free(struct bfc *b, bfc_handle_t h)
{
	int64_t i;

	if (!handle_live(b, h) || !(b->chunks[h].flags & BFC_CF_USED)) {
		b->st.bad_frees++;
		return -BFC_EINVAL;
	}
	i = hash_find_handle(b, h);
	BFC_ASSERT(i >= 0, "in-use chunk missing from the address index");
	if (i < 0) {
		b->st.bad_frees++;
		return -BFC_EINVAL;
	}
	hash_delete_at(b, (uint32_t)i);
	free_chunk(b, h);
	return 0;
}

int bfc_free_addr(struct bfc *b, uint64_t addr)
{
	int64_t i = hash_find_addr(b, addr);
	uint32_t h;

	if (i < 0) {
		b->st.bad_frees++;
		return -BFC_EINVAL;
	}
	h = b->hash[i].h;
	hash_delete_at(b, (uint32_t)i);
	free_chunk(b, h);
	return 0;
}

int bfc_lookup(const struct bfc *b, uint64_t addr, bfc_handle_t *h)
{
	int64_t i = hash_find_addr(b, addr);

	if (i < 0)
		return -BFC_ENOENT;
	if (h)
		*h = b->hash[i].h;
	return 0;
}

/* Chunks --------------------------------------------------------------------- */

static void fill_info(const struct bfc *b, uint32_t h,
		      struct bfc_chunk_info *info)
{
	const struct bfc_chunk *c = &b->chunks[h];
	bool used = c->flags & BFC_CF_USED;

	info->addr = c->addr;
	info->size = c->size;
	info->requested = used ? c->u.requested : 0;
	info->alloc_id = used ? c->u.alloc_id : 0;
	info->tag = used ? c->u.tag : 0;
	info->region_id = b->regions[c->region].id;
	info->bin = bfc_bin_of(b, c->size);
	info->in_use = used;
}

int bfc_chunk_info(const struct bfc *b, bfc_handle_t h,
		   struct bfc_chunk_info *info)
{
	if (!handle_live(b, h) || !info)
		return -BFC_EINVAL;
	fill_info(b, h, info);
	return 0;
}

int bfc_set_tag(struct bfc *b, bfc_handle_t h, uint64_t tag)
{
	if (!handle_live(b, h) || !(b->chunks[h].flags & BFC_CF_USED))
		return -BFC_EINVAL;
	b->chunks[h].u.tag = tag;
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
		for (h = b->regions[b->order[pos]].first; h;
		     h = b->chunks[h].next) {
			fill_info(b, h, &info);
			ret = fn(ctx, &info);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Statistics ------------------------------------------------------------------ */

void bfc_get_stats(const struct bfc *b, struct bfc_stats *s)
{
	uint32_t h = bfc__largest_free(b);
	uint64_t num, den;

	*s = b->st;
	s->largest_free = h ? b->chunks[h].size : 0;
	s->free_bytes = s->reserved - s->in_use;
	s->fragmentation_ppm = 0;
	if (s->free_bytes) {
		num = s->free_bytes - s->largest_free;
		den = s->free_bytes;
		/* Exact while num * 10^6 fits: free_bytes < 2^44 (16 TiB);
		 * beyond that both are scaled down first.
		 */
		while (den >= (1ull << 44)) {
			num >>= 1;
			den >>= 1;
		}
		s->fragmentation_ppm = (uint32_t)(num * 1000000u / den);
	}
}

void bfc_reset_peaks(struct bfc *b)
{
	b->st.peak_in_use = b->st.in_use;
	b->st.peak_reserved = b->st.reserved;
}

uint32_t bfc_bin_of(const struct bfc *b, uint64_t size)
{
	uint64_t u = size >> b->gshift;
	uint32_t bin;

	if (!u)
		return 0;
	bin = 63u - (uint32_t)__builtin_clzll(u);
	return bin < BFC_NR_BINS ? bin : BFC_NR_BINS - 1;
}
