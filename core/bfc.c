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
 *   node's place in the tree (bfc__class_replace) instead of a remove plus
 *   a descending insert.  The new size's class is computed once and used
 *   for the test and for the insert.
 *   On real traces most classes hold zero or one free chunk and most
 *   requests are served by the minimum of their own or the next non-empty
 *   class, so those cases are inline in bfc_internal.h (always: they are
 *   most of the work of every allocation and free) and the tree code is
 *   reached only for classes of two or more.
 *   class_of is branch-free (sizes below 2^SL_BITS granules take the
 *   general formula with fl forced to SL_BITS), as is clearing a group's
 *   bit: those branches were data-dependent and often mispredicted.
 *   An in-use chunk keeps the class of its size, so a free that merges
 *   with no neighbour (about half of them) does not compute it.
 *
 * - A call anywhere in a function makes it save and restore registers on
 *   every path, so the common cases make none but a last (tail) call.  The
 *   common allocation (the fit is a class minimum alone in its class; a
 *   split rest stays in that class or goes to an empty one; the address
 *   index and the slot array have room) is done by bfc_alloc() without a
 *   call; anything else goes, before any change, to alloc_slow(), which
 *   handles every case (the duplicated checks cost the rare slow case a
 *   few dozen instructions).  A free with no free neighbour (about half)
 *   is done inline; merging is free_merge()'s.
 *
 * - In-use chunks by address (free by address, bfc_lookup): a hash of
 *   start address -> handle, chained through the in-use chunks themselves
 *   (chunk.u.hnext: in-use chunks have the room, free ones use it for tree
 *   links), with an array of bucket heads.  The bucket is the top bits of
 *   a Fibonacci hash of the granule number (one multiplication: the
 *   constant is pre-shifted by the granularity).  At most one entry per
 *   two buckets (doubled when full), so a lookup usually reads one head
 *   and the chunk it wanted; insertion is at the head, removal unlinks
 *   (free by handle walks its bucket to find the link, one step usually).
 *   Its memory, 8-16 bytes per in-use chunk, follows the number of chunks,
 *   not region bytes (TF's per-region pointer -> handle vector does).
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

/* A slot (slot_reserve() made sure there is one), marked live; the caller
 * sets the fields it needs.
 */
static __always_inline uint32_t slot_get(struct bfc *b, struct bfc_chunk *C)
{
	uint32_t h = b->free_slot;

	if (h)
		b->free_slot = C[h].next;
	else
		h = b->nr_used++;
	b->nr_live++;
	C[h].flags = BFC_CF_LIVE;
	return h;
}

static __always_inline void slot_put(struct bfc *b, struct bfc_chunk *C,
				     uint32_t h)
{
	struct bfc_chunk *c = &C[h];

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

#define FIB64	0x9e3779b97f4a7c15ull

static inline uint32_t hash_buckets(const struct bfc *b)
{
	return (uint32_t)(1ull << (64 - b->hash_shift));
}

static __always_inline void hash_link(struct bfc *b, struct bfc_chunk *C,
				      uint32_t h)
{
	uint32_t *head = &b->hash[bfc__hash_bucket(b, C[h].addr)];

	C[h].u.hnext = *head;
	*head = h;
}

static int hash_resize(struct bfc *b, uint32_t bits)
{
	uint32_t *t = bfc_env_alloc(((size_t)1 << bits) * sizeof(*t));
	uint32_t *old = b->hash;
	uint32_t old_n = old ? hash_buckets(b) : 0, i, h, next;

	if (!t)
		return -BFC_ENOMEM;
	b->hash = t;
	b->hash_shift = 64 - bits;
	b->hash_limit = 1u << (bits - 1);
	for (i = 0; i < old_n; i++) {
		for (h = old[i]; h; h = next) {
			next = b->chunks[h].u.hnext;
			hash_link(b, b->chunks, h);
		}
	}
	if (old)
		bfc_env_free(old, (size_t)old_n * sizeof(*old));
	return 0;
}

/* Make sure one more entry keeps the load at most 1/2. */
static int hash_reserve(struct bfc *b)
{
	if (b->st.chunks_in_use < b->hash_limit)
		return 0;
	if (b->hash_shift <= 64 - HASH_MAX_BITS)
		return -BFC_ENOMEM;
	return hash_resize(b, 65 - b->hash_shift);
}

/* The link (bucket head or chunk.u.hnext) holding the in-use chunk that
 * starts at addr, or NULL.
 */
static inline uint32_t *hash_find_addr(const struct bfc *b, uint64_t addr)
{
	uint32_t *l = &b->hash[bfc__hash_bucket(b, addr)];

	while (*l && b->chunks[*l].addr != addr)
		l = &b->chunks[*l].u.hnext;
	return *l ? l : NULL;
}

/* The link holding in-use chunk h, or NULL. */
static inline uint32_t *hash_find_handle(const struct bfc *b, uint32_t h)
{
	uint32_t *l = &b->hash[bfc__hash_bucket(b, b->chunks[h].addr)];

	while (*l && *l != h)
		l = &b->chunks[*l].u.hnext;
	return *l ? l : NULL;
}

/* Take chunk h, which link l holds, out of the index. */
static __always_inline void hash_unlink(struct bfc_chunk *C, uint32_t *l,
					uint32_t h)
{
	*l = C[h].u.hnext;
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
	b->size_max = UINT64_MAX - b->gmask;
	b->gshift = (uint32_t)__builtin_ctzll(p->granularity);
	b->nr_used = 1;		/* slot 0: the nil sentinel */
	b->next_region_id = 1;
	b->hash_mul = FIB64 >> b->gshift;
	b->split_max = p->max_split_size - 1;	/* 0: UINT64_MAX */
	b->ratio_max = p->split_ratio ? UINT64_MAX / p->split_ratio : 0;
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
		bfc_env_free(b->hash, (size_t)hash_buckets(b) * sizeof(*b->hash));
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
	slot_put(b, C, n);
	b->st.chunks_free--;
}

/* Merge h's next neighbour into h (both free, neither in a class). */
static inline void merge_next(struct bfc *b, uint32_t h)
{
	b->chunks[h].size += b->chunks[b->chunks[h].next].size;
	drop_next(b, h);
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
	h = slot_get(b, C);
	C[h].addr = base;
	C[h].size = size;
	C[h].prev = 0;
	C[h].next = 0;
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
			bfc__class_remove(b, C, last);
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
			bfc__class_remove(b, C, first);
			merge_next(b, h);
		}
	}
	if (below == UINT32_MAX && above == UINT32_MAX) {
		for (ri = 0; b->regions[ri].id; ri++)
			;
		r = &b->regions[ri];
		r->base = base;
		r->size = size;
		r->id = next_id(b);
		r->first = h;
		r->last = h;
		C[h].region = ri;
		order_insert(b, pos, ri);
	}
	bfc__class_insert(b, C, h);
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
	bfc__class_remove(b, b->chunks, r->first);
	slot_put(b, b->chunks, r->first);
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

/* TF's split rule for a chunk of csize > r chosen for rounded request r
 * (max_split_size is the caller's test): csize >= split_ratio * r, or a
 * rest of at least split_threshold.  ratio_max is the largest r whose
 * product does not overflow (0 when split_ratio is 0: no ratio test).
 */
static __always_inline bool want_split(const struct bfc *b, uint64_t csize,
				       uint64_t r)
{
	if (r <= b->ratio_max && csize >= r * b->p.split_ratio)
		return true;
	return csize - r >= b->p.split_threshold;
}

/* Split chunk h (free, being allocated) into h of r bytes and a new chunk
 * of the rest bytes after it, in no class yet; slot_reserve() has made
 * sure of a slot.  Returns the new chunk.
 */
static __always_inline uint32_t split_off(struct bfc *b, struct bfc_chunk *C,
					  uint32_t h, uint64_t r,
					  uint64_t rest)
{
	struct bfc_region *regions = b->regions;
	struct bfc_chunk *c = &C[h], *cn;
	uint32_t n = slot_get(b, C), nx = c->next;

	cn = &C[n];
	cn->addr = c->addr + r;
	cn->size = rest;
	cn->prev = h;
	cn->region = c->region;
	if (nx)
		C[nx].prev = n;
	else
		regions[c->region].last = n;
	cn->next = nx;
	c->next = n;
	c->size = r;
	return n;
}

/* Chunk h, out of its class with its final size csize (and cls its
 * class), is handed out for size bytes.
 */
static __always_inline int alloc_done(struct bfc *b, struct bfc_chunk *C,
				      uint32_t h, uint64_t size,
				      uint64_t csize, bfc_handle_t *hp,
				      uint64_t *ap)
{
	struct bfc_chunk *c = &C[h];
	uint64_t in_use = b->st.in_use + csize;

	c->flags |= BFC_CF_USED;
	c->u.requested = size;
	c->u.alloc_id = ++b->st.nr_allocs;
	c->u.tag = 0;
	hash_link(b, C, h);
	b->st.in_use = in_use;
	if (in_use > b->st.peak_in_use)
		b->st.peak_in_use = in_use;
	b->st.requested += size;
	if (csize > b->st.largest_alloc)
		b->st.largest_alloc = csize;
	b->st.chunks_in_use++;
	if (hp)
		*hp = h;
	if (ap)
		*ap = c->addr;
	return 0;
}

/* Every case of bfc_alloc(), including those it leaves to this. */
static noinline int alloc_slow(struct bfc *b, uint64_t size, bfc_handle_t *hp,
			       uint64_t *ap)
{
	struct bfc_chunk *C;
	uint64_t r, csize;
	uint32_t h;
	bool split = false;

	if (!size)
		return -BFC_EINVAL;
	if (size > b->size_max)
		goto nomem;
	r = (size + b->gmask) & ~b->gmask;
	h = bfc__find_fit(b, r);
	if (!h)
		goto nomem;
	csize = b->chunks[h].size;
	if (csize > b->split_max) {
		/* max_split_size: never split, and only for requests as big. */
		if (r <= b->split_max)
			goto nomem;
	} else if (csize != r) {
		split = want_split(b, csize, r);
	}
	if (hash_reserve(b) || (split && slot_reserve(b)))
		goto nomem;
	C = b->chunks;		/* may have moved */
	if (split) {
		uint32_t n = split_off(b, C, h, r, csize - r);

		/* The rest usually sorts where the chunk did. */
		bfc__class_replace(b, C, h, n, bfc__class_of(b, csize - r));
		C[h].cls = (uint16_t)bfc__class_of(b, r);
		csize = r;
	} else {
		bfc__class_remove(b, C, h);
		b->st.chunks_free--;
	}
	return alloc_done(b, C, h, size, csize, hp, ap);
nomem:
	b->st.failed_allocs++;
	return -BFC_ENOMEM;
}

/* The common case, with no call (so nothing to save and restore): the fit
 * is the minimum of a class, alone in it; its rest, if split off, belongs
 * to that class or to an empty one; the address index and the slot array
 * have room.  Anything else goes, before any change, to alloc_slow().
 */
int bfc_alloc(struct bfc *b, uint64_t size, bfc_handle_t *hp, uint64_t *ap)
{
	struct bfc_chunk *C = b->chunks;
	uint64_t r = size - 1, csize;
	uint32_t h, k, kc, kn;

	if (r >= b->size_max)		/* 0, or the rounding overflows */
		goto slow;
	r = (r | b->gmask) + 1;
	k = bfc__class_of(b, r);
	h = b->cls[k].min;
	if (!h) {
		h = bfc__next_min(b, k);
		if (!h)
			goto slow;
	} else if (C[h].size < r) {
		goto slow;			/* a search in k's tree */
	}
	csize = C[h].size;
	kc = C[h].cls;
	if (csize > b->split_max || !bfc__alone(b, C, h, kc) ||
	    b->st.chunks_in_use >= b->hash_limit)
		goto slow;
	if (csize != r && want_split(b, csize, r)) {
		uint32_t n;

		kn = bfc__class_of(b, csize - r);
		if ((kn != kc && b->cls[kn].root) ||
		    (!b->free_slot && b->nr_used >= b->nr_slots))
			goto slow;
		n = split_off(b, C, h, r, csize - r);
		C[h].cls = (uint16_t)k;
		if (kn != kc) {
			bfc__class_clear(b, kc);
			bfc__class_set(b, C, kn, n);
		} else {
			bfc__class_take(b, C, kc, n);
		}
		csize = r;
	} else {
		bfc__class_clear(b, kc);
		b->st.chunks_free--;
	}
	return alloc_done(b, C, h, size, csize, hp, ap);
slow:
	return alloc_slow(b, size, hp, ap);
}

/* Free ------------------------------------------------------------------------ */

/* Statistics of freeing in-use chunk h, and its flag. */
static __always_inline void free_account(struct bfc *b, struct bfc_chunk *c)
{
	b->st.in_use -= c->size;
	b->st.requested -= c->u.requested;
	b->st.chunks_in_use--;
	b->st.chunks_free++;
	c->flags &= (uint8_t)~BFC_CF_USED;
}

/* Chunk s, merged with what followed it, now runs up to chunk nx. */
static __always_inline void relink(struct bfc *b, struct bfc_chunk *C,
				   uint32_t s, uint32_t nx)
{
	C[s].next = nx;
	if (nx)
		C[nx].prev = s;
	else
		b->regions[C[s].region].last = s;
}

/* free_chunk() when h has a free neighbour: n (next) or p (prev), 0 if
 * in use or none.  The merged chunk takes the place of a neighbour in the
 * class index if it can (see bfc__class_replace); the chunks merged away
 * release their slots last (the tree code may still read n's links and
 * colour).
 */
static noinline int free_merge(struct bfc *b, struct bfc_chunk *C, uint32_t h,
			       uint32_t n, uint32_t p)
{
	uint64_t size = C[h].size;
	uint32_t nx = C[h].next;

	if (n) {
		size += C[n].size;
		nx = C[n].next;
	}
	if (p) {
		if (n)
			bfc__class_remove(b, C, n);
		size += C[p].size;
		C[p].size = size;
		relink(b, C, p, nx);
		bfc__class_replace(b, C, p, p, bfc__class_of(b, size));
		slot_put(b, C, h);
		b->st.chunks_free--;
	} else {
		C[h].size = size;
		relink(b, C, h, nx);
		bfc__class_replace(b, C, n, h, bfc__class_of(b, size));
	}
	if (n) {
		slot_put(b, C, n);
		b->st.chunks_free--;
	}
	return 0;
}

/* free_chunk() into a class that holds others. */
static noinline int free_insert_tree(struct bfc *b, uint32_t k, uint32_t h)
{
	bfc__tree_insert(b, &b->cls[k], h);
	return 0;
}

/* Free in-use chunk h, already out of the address index.  The case of no
 * free neighbour (half of them) makes no call but the last: no registers
 * to save.
 */
static __always_inline int free_chunk(struct bfc *b, struct bfc_chunk *C,
				      uint32_t h)
{
	uint32_t n = C[h].next, p = C[h].prev, k;

	free_account(b, &C[h]);
	if (n && (C[n].flags & BFC_CF_USED))
		n = 0;
	if (p && (C[p].flags & BFC_CF_USED))
		p = 0;
	if (n || p)
		return free_merge(b, C, h, n, p);
	/* An in-use chunk keeps the class of its size. */
	k = C[h].cls;
	if (b->cls[k].root)
		return free_insert_tree(b, k, h);
	bfc__class_set(b, C, k, h);
	return 0;
}

static noinline int bad_free(struct bfc *b)
{
	b->st.bad_frees++;
	return -BFC_EINVAL;
}

int bfc_free(struct bfc *b, bfc_handle_t h)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t *l;

	/* In use implies live; slot 0's flags are 0. */
	if (h >= b->nr_used || !(C[h].flags & BFC_CF_USED))
		return bad_free(b);
	l = hash_find_handle(b, h);
	BFC_ASSERT(l, "in-use chunk missing from the address index");
	if (!l)
		return bad_free(b);
	hash_unlink(C, l, h);
	return free_chunk(b, C, h);
}

int bfc_free_addr(struct bfc *b, uint64_t addr)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t *l = hash_find_addr(b, addr);
	uint32_t h;

	if (!l)
		return bad_free(b);
	h = *l;
	hash_unlink(C, l, h);
	return free_chunk(b, C, h);
}

int bfc_lookup(const struct bfc *b, uint64_t addr, bfc_handle_t *h)
{
	const uint32_t *l = hash_find_addr(b, addr);

	if (!l)
		return -BFC_ENOENT;
	if (h)
		*h = *l;
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

/* The chunk to go on from at cursor position pos: hint if it is a chunk
 * at or below pos in the region holding pos, else the first chunk of that
 * region, else that of the first region above pos; 0 when there is none.
 * The caller steps over chunks starting below pos.
 */
static uint32_t walk_start(const struct bfc *b, uint64_t pos, uint32_t hint)
{
	const struct bfc_region *r;
	uint32_t i;

	if (handle_live(b, hint) && b->chunks[hint].addr <= pos &&
	    region_end(&b->regions[b->chunks[hint].region]) > pos)
		return hint;
	i = order_upper(b, pos);
	if (i > 0) {
		r = &b->regions[b->order[i - 1]];
		if (region_end(r) > pos)
			return r->first;
	}
	return i < b->nr_regions ? b->regions[b->order[i]].first : 0;
}

int bfc_walk_chunks(const struct bfc *b, struct bfc_cursor *cur,
		    uint32_t max,
		    int (*fn)(void *ctx, const struct bfc_chunk_info *c),
		    void *ctx)
{
	const struct bfc_chunk *C = b->chunks;
	struct bfc_chunk_info info;
	uint32_t h = walk_start(b, cur->pos, cur->hint), seen = 0;
	int ret;

	while (h) {
		if (max && seen++ >= max) {
			cur->hint = h;
			return BFC_WALK_MORE;
		}
		if (C[h].addr >= cur->pos) {
			fill_info(b, h, &info);
			cur->pos = info.addr + info.size;
			cur->hint = C[h].next;
			ret = fn(ctx, &info);
			if (ret)
				return ret;
		}
		if (C[h].next) {
			h = C[h].next;
		} else {
			/* The region ends here; all of it has been looked at
			 * (its last chunk may have started below pos).
			 */
			cur->pos = C[h].addr + C[h].size;
			h = walk_start(b, cur->pos, 0);
		}
	}
	cur->hint = 0;
	return 0;
}

uint64_t bfc_free_at_top(const struct bfc *b)
{
	const struct bfc_chunk *c;

	if (!b->nr_regions)
		return 0;
	c = &b->chunks[b->regions[b->order[b->nr_regions - 1]].last];
	return c->flags & BFC_CF_USED ? 0 : c->size;
}

/* Statistics ------------------------------------------------------------------ */

void bfc_get_stats(const struct bfc *b, struct bfc_stats *s)
{
	uint32_t h = bfc__largest_free(b);
	uint64_t num, den;

	*s = b->st;
	s->nr_frees = s->nr_allocs - s->chunks_in_use;
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
