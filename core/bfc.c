// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc.c - best-fit-with-coalescing allocator core: the operations on
 * chunks.  Finding in-use chunks (the address index), indexing free chunks
 * as they are released (coalescing), allocation, free, the operations that
 * cut chunks (spans taken, a chunk split).  Create, destroy and the chunk
 * slots' growth are bfc_create.c's, regions bfc_region.c's, the read-only
 * walks over chunks bfc_walk.c's, the free-chunk trees bfc_tree.c's,
 * statistics bfc_dump.c's.
 *
 * The design (what it computes, how, and why): docs/bfc.md.
 */
#include "bfc_internal.h"

/* Finding in-use chunks ---------------------------------------------------- */

/* Is h an in-use chunk?  Any h is accepted. */
static inline bool handle_in_use(const struct bfc *b, uint32_t h)
{
	return h < b->nr_slots &&
	       (b->chunks[h].flags & (BFC_CF_HELD | BFC_CF_EDGE)) == BFC_CF_HELD;
}

/* The in-use chunk that starts at addr, or 0; *lp the link (bucket head
 * or chunk.hnext) that holds it, or the chain's last link.
 */
static __always_inline uint32_t hash_find_addr(const struct bfc *b,
					       uint64_t addr, uint32_t **lp)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t *l = &b->hash[bfc__hash_bucket(b, addr)];
	uint32_t h = *l;

	while (unlikely(h && C[h].addr != addr)) {	/* usually the first */
		l = &C[h].hnext;
		h = *l;
	}
	*lp = l;
	return h;
}

/* The link holding in-use chunk h, or NULL. */
static __always_inline uint32_t *hash_find_handle(const struct bfc *b,
						  uint32_t h)
{
	uint32_t *l = &b->hash[bfc__hash_bucket(b, b->chunks[h].addr)];

	while (*l && *l != h)
		l = &b->chunks[*l].hnext;
	return *l ? l : NULL;
}

/* Indexing free chunks -------------------------------------------------------- */

/* bfc__class_rekey() out of line, for the merges below. */
static noinline int rekey_slow(struct bfc *b, uint32_t h, uint32_t k)
{
	bfc__class_rekey(b, b->chunks, h, k);
	return 0;
}

/* Free chunk x's key grew by a merge; k is the class of its new size.
 * Alone in a class it stays in, or moving to an empty one, it is done
 * here (for policies other than TF's without a branch on which); the
 * rest is rekey_slow()'s.
 */
static __always_inline int merged(struct bfc *b, struct bfc_chunk *C,
				  uint32_t x, uint32_t k)
{
	uint32_t o = C[x].cls;

	if (likely(!b->cls[o].root)) {
		if (o == k)
			return 0;
		if (likely(!b->cls[k].min)) {
			if (b->cut)
				bfc__class_shift(b, C, o, k, x);
			else
				bfc__class_move(b, C, o, k, x);
			return 0;
		}
	}
	return rekey_slow(b, x, k);
}

/* The cases of release() with a merge or a tree, each a function of its
 * own, so that release()'s common case saves no registers.
 *
 * h merges into its free next neighbour n (its previous one is not
 * free): n grows down over h and keeps its record.
 */
static noinline int release_into_next(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *C = b->chunks, *c = &C[h];
	uint32_t n = c->next, p = c->prev;
	struct bfc_chunk *x = &C[n];

	x->addr = c->addr;
	x->size += c->size;
	x->prev = p;
	C[p].next = n;
	bfc__slot_put(b, C, h);
	return merged(b, C, n, bfc__class_of(b, x->size));
}

/* h merges into its free previous neighbour p (its next one is not free). */
static noinline int release_into_prev(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *C = b->chunks, *c = &C[h];
	uint32_t n = c->next, p = c->prev;
	struct bfc_chunk *x = &C[p];

	x->size += c->size;
	x->next = n;
	C[n].prev = p;
	bfc__slot_put(b, C, h);
	return merged(b, C, p, bfc__class_of(b, x->size));
}

/* h and its free next neighbour n merge into its free previous neighbour
 * p; n leaves its class.
 */
static noinline int release_into_both(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *C = b->chunks, *c = &C[h];
	uint32_t n = c->next, p = c->prev, nn = C[n].next;
	struct bfc_chunk *x = &C[p];

	bfc__class_remove(b, C, n);
	x->size += c->size + C[n].size;
	x->next = nn;
	C[nn].prev = p;
	bfc__slot_put(b, C, n);
	bfc__slot_put(b, C, h);
	b->st.chunks_free--;
	return merged(b, C, p, bfc__class_of(b, x->size));
}

/* h goes into class k, which holds others. */
static noinline int release_into_tree(struct bfc *b, uint32_t h, uint32_t k)
{
	bfc__tree_insert(b, k, h);
	return 0;
}

/* Chunk h has just become free (flags LIVE, in no class, not in the
 * address index; its cls k, the class of its size).  Coalesce it with its
 * free neighbours and index the result.  No free neighbour and an empty
 * class (the common case) make no call; the rest is a tail call.  A
 * neighbour that absorbs h keeps its record, and its place in the index
 * if its class does not change (see bfc__class_rekey).
 */
static __always_inline int release(struct bfc *b, struct bfc_chunk *C,
				   uint32_t h, uint32_t k)
{
	bool n_held = C[C[h].next].flags & BFC_CF_HELD;
	bool p_held = C[C[h].prev].flags & BFC_CF_HELD;

	if (likely(n_held && p_held)) {
		b->st.chunks_free++;
		if (unlikely(b->cls[k].min))
			return release_into_tree(b, h, k);
		bfc__class_put(b, k, h);
		return 0;
	}
	if (p_held)
		return release_into_next(b, h);
	if (n_held)
		return release_into_prev(b, h);
	return release_into_both(b, h);
}

/* release() out of line, for bfc_region.c: adding a region is no hot
 * path.
 */
void bfc__release(struct bfc *b, uint32_t h)
{
	release(b, b->chunks, h, b->chunks[h].cls);
}

/* Allocation ---------------------------------------------------------------- */

/* TF's split rule for a chunk of cs bytes chosen for rounded request r
 * (rest = cs - r): split when cs >= split_ratio * r, or when
 * the rest is at least split_threshold.  The first is rest >=
 * (split_ratio - 1) * r, tested only while that product is exact (r <=
 * ratio_lim; ratio_lim is 0 when there is no ratio test), as rest >
 * ((split_ratio - 1) * r - 1) >> ratio_shift: with ratio_shift 0 that is
 * TF's test; policy AGE's 3 makes it rest >= ceil(r / 8), never 0.
 * split_thr >= 1 and ratio_m1 * r >= 1, so a rest of 0 never splits
 * (max_split_size is the caller's test).
 */
static __always_inline bool want_split(const struct bfc *b, uint64_t rest,
				       uint64_t r)
{
	return rest >= b->split_thr ||
	       (r <= b->ratio_lim &&
		rest > (r * b->ratio_m1 - 1) >> b->ratio_shift);
}

/* Policy AGE: a rest smaller than the request (TF's rule would leave it in
 * the chunk) and below split_thr is not split off when a free chunk other
 * than h already waits in its class kn: the chunk is handed out whole
 * (less than twice the request, as TF's rule allows).  Such slivers
 * are rarely asked for; piled up in one class they only wait for a
 * neighbour to merge them back, and every one made and merged is work
 * the processor cannot predict (bench/README.md).  In the module the
 * threshold is a page, so there it never applies.
 */
static __always_inline bool rest_crowded(const struct bfc *b, uint32_t h,
					 uint64_t rest, uint64_t r, uint32_t kn)
{
	uint32_t m = b->cls[kn].min;

	return b->lone_rest && rest < r && rest < b->split_thr && m &&
	       (m != h || b->cls[kn].root);
}

/* Split free chunk h (indexed in its class) for a request of r bytes:
 * chunk n (a slot the caller took) gets its first r bytes and class kr
 * (r's); h keeps the rest, with its new key, and its place in the index,
 * which the caller updates if it must.
 */
static __always_inline void split_front(struct bfc_chunk *C, uint32_t h,
					uint32_t n, uint64_t r, uint32_t kr)
{
	struct bfc_chunk *c = &C[h], *x = &C[n];
	uint32_t p = c->prev;

	x->addr = c->addr;
	x->size = r;
	x->prev = p;
	x->next = h;
	x->cls = (uint16_t)kr;
	C[p].next = n;
	c->prev = n;
	c->addr += r;
	c->size -= r;
}

/* As split_front(), but chunk n gets the last r bytes of h. */
static __always_inline void split_back(struct bfc_chunk *C, uint32_t h,
				       uint32_t n, uint64_t r, uint32_t kr)
{
	struct bfc_chunk *c = &C[h], *x = &C[n];
	uint32_t z = c->next;

	c->size -= r;
	x->addr = c->addr + c->size;
	x->size = r;
	x->prev = h;
	x->next = z;
	x->cls = (uint16_t)kr;
	C[z].prev = n;
	c->next = n;
}

/* Whether a policy other than TF's low end cuts request r from the high
 * end of free chunk h.  BFC_CUT_OLDER: the end beside h's older
 * neighbour, the one allocated first (a region's edge has alloc_id 0, so
 * it is older than every chunk; two edges: the low end).  h's neighbours
 * are in use or edges, never free.
 */
static __always_inline bool cut_high(const struct bfc *b,
				     const struct bfc_chunk *C, uint32_t h,
				     uint64_t r)
{
	switch (b->cut) {
	case BFC_CUT_SMALL:
		return r < b->cut_small;
	case BFC_CUT_REL:
		return C[h].size - r > r;
	default:
		return C[C[h].next].u.alloc_id < C[C[h].prev].u.alloc_id;
	}
}

/* Split free chunk h for a request of r bytes (class kr) into chunk n, at
 * the end the placement policy says (see bfc_create()); returns n's
 * address.  The one place where a policy chooses an end; TF's (cut 0)
 * costs one test.
 */
static __always_inline uint64_t split(const struct bfc *b, struct bfc_chunk *C,
				      uint32_t h, uint32_t n, uint64_t r,
				      uint32_t kr)
{
	if (unlikely(b->cut) && cut_high(b, C, h, r))
		split_back(C, h, n, r, kr);
	else
		split_front(C, h, n, r, kr);
	return C[n].addr;
}

/* Chunk h at addr, out of the free index with its final size cs, is
 * handed out for size bytes; the caller has told *hp and *ap.
 */
static __always_inline int alloc_done(struct bfc *b, struct bfc_chunk *C,
				      uint32_t h, uint64_t addr, uint64_t size,
				      uint64_t cs)
{
	struct bfc_chunk *c = &C[h];
	uint32_t *head = &b->hash[bfc__hash_bucket(b, addr)];
	uint64_t in_use = b->st.in_use + cs;

	c->flags = BFC_CF_LIVE | BFC_CF_HELD;	/* and no tag */
	c->u.requested = size;
	c->u.alloc_id = ++b->st.nr_allocs;
	c->hnext = *head;
	*head = h;
	b->st.in_use = in_use;
	if (in_use > b->st.peak_in_use)
		b->st.peak_in_use = in_use;
	b->st.requested += size;
	if (cs > b->st.largest_alloc)
		b->st.largest_alloc = cs;
	return 0;
}

/* Tell the caller the handle, the address and (bfc_alloc_from()) the size
 * of the free chunk it was cut from.
 */
static __always_inline void alloc_tell(bfc_handle_t *hp, uint64_t *ap,
				       uint64_t *fp, uint32_t h, uint64_t addr,
				       uint64_t from)
{
	if (hp)
		*hp = h;
	if (ap)
		*ap = addr;
	if (fp)
		*fp = from;
}

/* Every case of alloc(), including those it leaves to this. */
static noinline int alloc_slow(struct bfc *b, uint64_t size, bfc_handle_t *hp,
			       uint64_t *ap, uint64_t *fp)
{
	struct bfc_chunk *C;
	uint64_t r, cs, from;
	uint32_t h, n;
	bool cut = false;

	if (!size)
		return -BFC_EINVAL;
	if (size > b->size_max)
		goto nomem;
	r = (size + b->gmask) & ~b->gmask;
	h = bfc__find_fit(b, r);
	if (!h)
		goto nomem;
	cs = b->chunks[h].size;
	if (cs > b->split_max) {
		/* max_split_size: never split, and only for requests as big. */
		if (r <= b->split_max)
			goto nomem;
	} else {
		cut = want_split(b, cs - r, r) &&
		      !rest_crowded(b, h, cs - r, r, bfc__class_of(b, cs - r));
	}
	if (cut && bfc__slot_reserve(b, 1))
		goto nomem;
	C = b->chunks;		/* may have moved */
	from = cs;
	if (cut) {
		n = bfc__slot_get(b, C);
		split(b, C, h, n, r, bfc__class_of(b, r));
		bfc__class_rekey(b, C, h, bfc__class_of(b, cs - r));
		h = n;
		cs = r;
	} else {
		bfc__class_remove(b, C, h);
		b->st.chunks_free--;
	}
	alloc_tell(hp, ap, fp, h, C[h].addr, from);
	return alloc_done(b, C, h, C[h].addr, size, cs);
nomem:
	b->st.failed_allocs++;
	return -BFC_ENOMEM;
}

/* The common case, with no call (so nothing to save and restore): the fit
 * is alone in its class; its rest, if split off, stays in that class or
 * goes to an empty one; a slot is at hand.  Anything else goes, before any
 * change, to alloc_slow().  bfc_alloc() and bfc_alloc_from() are this,
 * with fp NULL or not.
 * Longer than the house's 60 lines, and kept whole (scripts/func-length.sh):
 * it is the hot path, its every way out to alloc_slow() is a goto to one
 * label taken before anything changes, and the class search, the fit
 * test and the split read in the order they run; split into helpers, each
 * exit would become a result tested twice.
 */
static __always_inline int alloc(struct bfc *b, uint64_t size,
				 bfc_handle_t *hp, uint64_t *ap, uint64_t *fp)
{
	struct bfc_chunk *C = b->chunks, *c;
	uint64_t r = size - 1, cs, rest, bits, wbits, addr;
	uint32_t kr, k, kn, h, n, w;
	union bfc_class e;

	if (unlikely(r >= b->size_max))	/* 0, or the rounding overflows */
		goto slow;
	r = (r | b->gmask) + 1;
	kr = bfc__class_of(b, r);
	/* The first non-empty class from r's own (bfc__next_class(), which
	 * would test for "none" once more).
	 */
	w = kr >> 6;
	bits = b->cls_map[w] & (~0ull << (kr & 63));
	if (!bits) {
		wbits = b->word_map & (~1ull << w);
		if (unlikely(!wbits))
			goto slow;
		w = (uint32_t)__builtin_ctzll(wbits);
		bits = b->cls_map[w];
	}
	k = (w << 6) + (uint32_t)__builtin_ctzll(bits);
	e = b->cls[k];
	h = e.min;
	c = &C[h];
	cs = c->size;
	/* Every chunk of a class after r's fits; in r's own class the
	 * minimum may not (then its tree is searched).
	 */
	if (unlikely(cs < r || e.root || cs > b->split_max))
		goto slow;
	rest = cs - r;
	addr = c->addr;
	if (want_split(b, rest, r)) {
		n = b->free_slot;
		kn = bfc__class_of(b, rest);
		if (unlikely(!n || (kn != k && b->cls[kn].min))) {
			/* h is alone in class k: kn's chunks are others */
			if (kn != k && rest_crowded(b, h, rest, r, kn))
				goto whole;
			goto slow;
		}
		/* Nothing fails from here. */
		b->free_slot = C[n].next;
		addr = split(b, C, h, n, r, kr);
		alloc_tell(hp, ap, fp, n, addr, cs);
		if (kn != k) {
			if (b->cut)
				bfc__class_shift(b, C, k, kn, h);
			else
				bfc__class_move(b, C, k, kn, h);
		}
		return alloc_done(b, C, n, addr, size, r);
	}
whole:
	alloc_tell(hp, ap, fp, h, addr, cs);
	bfc__class_clear(b, k);
	b->st.chunks_free--;
	return alloc_done(b, C, h, addr, size, cs);
slow:
	return alloc_slow(b, size, hp, ap, fp);
}

int bfc_alloc(struct bfc *b, uint64_t size, bfc_handle_t *hp, uint64_t *ap)
{
	return alloc(b, size, hp, ap, NULL);
}

int bfc_alloc_from(struct bfc *b, uint64_t size, bfc_handle_t *hp,
		   uint64_t *ap, uint64_t *fp)
{
	return alloc(b, size, hp, ap, fp);
}

/* Free ------------------------------------------------------------------------ */

/* Free in-use chunk h, already out of the address index. */
static __always_inline int free_chunk(struct bfc *b, struct bfc_chunk *C,
				      uint32_t h)
{
	struct bfc_chunk *c = &C[h];

	b->st.in_use -= c->size;
	b->st.requested -= c->u.requested;
	b->st.nr_frees++;
	c->flags = BFC_CF_LIVE;
	/* An in-use chunk keeps the class of its size. */
	return release(b, C, h, c->cls);
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

	if (unlikely(!handle_in_use(b, h)))
		return bad_free(b);
	l = hash_find_handle(b, h);
	BFC_ASSERT(l, "in-use chunk missing from the address index");
	if (unlikely(!l))
		return bad_free(b);
	*l = C[h].hnext;
	return free_chunk(b, C, h);
}

int bfc_free_addr(struct bfc *b, uint64_t addr)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t *l, h = hash_find_addr(b, addr, &l);

	if (unlikely(!h))
		return bad_free(b);
	*l = C[h].hnext;
	return free_chunk(b, C, h);
}

int bfc_lookup(const struct bfc *b, uint64_t addr, bfc_handle_t *h)
{
	uint32_t *l, x = hash_find_addr(b, addr, &l);

	if (!x)
		return -BFC_ENOENT;
	if (h)
		*h = x;
	return 0;
}

/* Changing chunks: tags, spans taken, splits ------------------------------- */

int bfc_set_tag(struct bfc *b, bfc_handle_t h, uint64_t tag)
{
	if (!handle_in_use(b, h))
		return -BFC_EINVAL;
	b->chunks[h].u.tag = tag;
	b->chunks[h].flags |= BFC_CF_TAGGED;
	return 0;
}

/* A free piece of a chunk being taken apart (flags LIVE, in no class):
 * indexed by its size.
 */
static void take_piece_free(struct bfc *b, struct bfc_chunk *C, uint32_t h)
{
	C[h].flags = BFC_CF_LIVE;
	bfc__class_insert(b, C, h, bfc__class_of(b, C[h].size));
	b->st.chunks_free++;
}

uint64_t bfc_take_free_spans(struct bfc *b, uint64_t align,
			     bool (*take)(void *ctx, uint64_t base,
					  uint64_t size),
			     void *ctx)
{
	uint64_t n = 0, lo, hi, end;
	struct bfc_chunk *C;
	uint32_t pos, h, x;

	if (!align || (align & (align - 1)) || align < b->p.granularity)
		return 0;
	for (pos = 0; pos < b->nr_regions; pos++) {
		const struct bfc_region *r = &b->regions[b->order[pos]];

		for (h = b->chunks[r->lo].next; h != r->hi; h = b->chunks[h].next) {
			C = b->chunks;
			if (C[h].flags & BFC_CF_HELD)
				continue;
			end = C[h].addr + C[h].size;
			lo = ((C[h].addr - 1) | (align - 1)) + 1;
			hi = end & ~(align - 1);
			if (C[h].addr + align - 1 < C[h].addr || hi <= lo)
				continue;
			if (bfc__slot_reserve(b, 2))
				return n;
			if (take && !take(ctx, lo, hi - lo))
				continue;
			C = b->chunks;		/* may have moved */
			bfc__class_remove(b, C, h);
			b->st.chunks_free--;
			if (lo > C[h].addr) {
				x = bfc__slot_get(b, C);
				split_front(C, h, x, lo - C[h].addr, 0);
				take_piece_free(b, C, x);
			}
			if (hi < end) {
				x = bfc__slot_get(b, C);
				split_back(C, h, x, end - hi, 0);
				take_piece_free(b, C, x);
			}
			C[h].cls = (uint16_t)bfc__class_of(b, hi - lo);
			alloc_done(b, C, h, lo, hi - lo, hi - lo);
			n += hi - lo;
		}
	}
	return n;
}

int bfc_split(struct bfc *b, bfc_handle_t h, uint64_t size, bfc_handle_t *rest)
{
	struct bfc_chunk *C, *c, *x;
	uint64_t xs;
	uint32_t n;

	if (!handle_in_use(b, h) || !size || (size & b->gmask) ||
	    size >= b->chunks[h].size)
		return -BFC_EINVAL;
	if (bfc__slot_reserve(b, 1))
		return -BFC_ENOMEM;
	C = b->chunks;
	n = bfc__slot_get(b, C);
	xs = C[h].size - size;
	split_back(C, h, n, xs, bfc__class_of(b, xs));
	c = &C[h];
	x = &C[n];
	c->cls = (uint16_t)bfc__class_of(b, size);
	x->flags = c->flags;	/* LIVE | HELD, and TAGGED with h's tag */
	x->u.tag = c->u.tag;
	x->u.alloc_id = ++b->st.nr_allocs;
	b->st.requested -= c->u.requested;
	if (c->u.requested > size)
		c->u.requested = size;
	x->u.requested = x->size;
	b->st.requested += c->u.requested + x->size;
	bfc__hash_link(b, C, n);
	if (rest)
		*rest = n;
	return 0;
}
