/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_internal.h - private to core/bfc*.c: the metadata layout and the
 * functions the core's files share.  See the comment at the top of bfc.c
 * for the design.  Cross-file functions are named bfc__*.
 */
#ifndef GPUPOOL_BFC_INTERNAL_H
#define GPUPOOL_BFC_INTERNAL_H

#include "bfc.h"

/* Size classes --------------------------------------------------------- */

/* Tunable: each power of two of sizes (in granules) is split into
 * 2^BFC_SL_BITS classes.  At most 5: a group's bitmap is a uint32_t.
 */
#define BFC_SL_BITS	5

/* Fixed, derived.  A size of u granules (u >= 1) is in class u when
 * u < 2^SL_BITS (one size per class), else in group fl - SL_BITS + 1 (fl =
 * floor(log2 u)), sub-class "the SL_BITS bits after the leading one".  u <
 * 2^64 gives fl <= 63, so 65 - SL_BITS groups.
 */
#define BFC_SL_COUNT	(1u << BFC_SL_BITS)
#define BFC_FL_COUNT	(65u - BFC_SL_BITS)
#define BFC_NR_CLASSES	(BFC_FL_COUNT * BFC_SL_COUNT)
#define BFC_NO_CLASS	BFC_NR_CLASSES

_Static_assert(BFC_SL_BITS >= 1 && BFC_SL_BITS <= 5, "sl bitmap is 32 bits");
_Static_assert(BFC_FL_COUNT <= 64, "fl bitmap is 64 bits");
_Static_assert(BFC_NR_CLASSES <= 65535, "class index is 16 bits");

/* Chunks ---------------------------------------------------------------- */

/* chunk.flags */
#define BFC_CF_LIVE	0x01	/* slot holds a chunk (else on the slot free list) */
#define BFC_CF_USED	0x02	/* in use (else free, and in its class tree) */
#define BFC_CF_RED	0x04	/* red-black colour while free; 0 = black */

/* One per chunk, 64 bytes, in an array indexed by handle.  Slot 0 is the
 * red-black trees' nil sentinel (always black; its parent link is scratch
 * during deletion), so handle 0 never names a chunk.
 */
struct bfc_chunk {
	/* Hot: the tree descent reads size, addr and the links only. */
	uint64_t size;		/* bytes, a multiple of the granularity */
	uint64_t addr;
	uint32_t prev;		/* physical neighbours in the same region, 0 = none; */
	uint32_t next;		/* on the slot free list: next free slot */
	uint32_t region;	/* index into bfc.regions (not the region id) */
	uint16_t cls;		/* class of size (in use too: free reuses it) */
	uint8_t flags;		/* BFC_CF_* */
	uint8_t unused;
	union {
		struct {		/* while free: links in the class tree */
			uint32_t left, right, parent;
		} t;
		struct {		/* while in use */
			uint64_t requested;
			uint64_t alloc_id;
			uint64_t tag;
			uint32_t hnext;	/* next in its address index bucket */
		} u;
	};
};
_Static_assert(sizeof(struct bfc_chunk) == 64, "one cache line per chunk");

/* Per class: the tree root and its cached minimum (0 when empty). */
struct bfc_class {
	uint32_t root;
	uint32_t min;
};

struct bfc_region {
	uint64_t base;
	uint64_t size;
	uint32_t id;		/* 0: the slot is unused */
	uint32_t first;		/* chunk at base (its handle never changes) */
	uint32_t last;		/* chunk ending at base + size */
	uint32_t unused;
};

struct bfc {
	struct bfc_params p;
	uint64_t gmask;		/* granularity - 1 */
	uint64_t size_max;	/* largest request: UINT64_MAX - gmask */
	uint32_t gshift;	/* log2(granularity) */

	/* Chunk slots: chunks[0 .. nr_used) have been handed out; those not
	 * BFC_CF_LIVE form a list through .next from free_slot.
	 */
	struct bfc_chunk *chunks;	/* 64-byte aligned inside chunks_mem */
	void *chunks_mem;
	size_t chunks_mem_size;
	uint32_t nr_slots;		/* capacity */
	uint32_t nr_used;
	uint32_t free_slot;
	uint32_t nr_live;

	/* Free chunks: a bit per non-empty class, a bit per non-empty group. */
	uint64_t fl_map;
	uint32_t sl_map[BFC_FL_COUNT];
	struct bfc_class cls[BFC_NR_CLASSES];

	/* In-use chunks by start address: bucket heads, chained through
	 * chunk.u.hnext (0 ends a chain).
	 */
	uint32_t *hash;
	uint64_t hash_mul;		/* Fibonacci multiplier >> gshift */
	uint32_t hash_shift;		/* 64 - log2(buckets) */
	uint32_t hash_limit;		/* most entries (st.chunks_in_use) */
	/* max_split_size - 1: chunks larger never split (UINT64_MAX: none). */
	uint64_t split_max;
	uint64_t ratio_max;	/* UINT64_MAX / split_ratio (0: none) */

	/* Regions: slots with stable indices, and their indices by base. */
	struct bfc_region *regions;
	uint32_t *order;
	uint32_t nr_regions;
	uint32_t region_cap;
	uint32_t next_region_id;

	/* Maintained on every operation; nr_frees (nr_allocs -
	 * chunks_in_use), largest_free, free_bytes and fragmentation_ppm are
	 * computed by bfc_get_stats().
	 */
	struct bfc_stats st;
};

static __always_inline uint32_t bfc__class_of(const struct bfc *b,
					      uint64_t size)
{
	uint64_t u = size >> b->gshift;
	/* With s = fl - SL_BITS, the class is s * SL_COUNT plus u >> s (whose
	 * leading one is bit SL_BITS: it adds the SL_COUNT of group s + 1).
	 * Without a branch: below 2^SL_BITS, taking fl = SL_BITS gives s = 0
	 * and class u, the class of its own.
	 */
	uint32_t s = 63u - (uint32_t)__builtin_clzll(u | BFC_SL_COUNT) -
		     BFC_SL_BITS;

	return (s << BFC_SL_BITS) + (uint32_t)(u >> s);
}

static inline bool bfc__key_less(const struct bfc_chunk *a,
				 const struct bfc_chunk *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/* bfc_tree.c: the free-chunk index.  The common cases (a class holding
 * one chunk; the best fit being a class's cached minimum) are inline below
 * (always: they are most of every allocation and free); the tree work is
 * out of line.
 */
void bfc__tree_insert(struct bfc *b, struct bfc_class *k, uint32_t h);
void bfc__tree_remove(struct bfc *b, struct bfc_class *k, uint32_t h);
bool bfc__tree_rekey(struct bfc *b, uint32_t o, uint32_t n);
uint32_t bfc__find_fit_slow(const struct bfc *b, uint32_t c, uint64_t size);

/* The helpers below take the chunk array C (b->chunks) from their
 * callers: the core is built with -fno-strict-aliasing (as the kernel
 * is), so after any store through C the compiler would load b->chunks
 * again, and recompute every chunk address from it.
 */

/* Chunk h is alone in its class k: the root, without children. */
static __always_inline bool bfc__alone(const struct bfc *b,
				       const struct bfc_chunk *C, uint32_t h,
				       uint32_t k)
{
	return b->cls[k].root == h && !C[h].t.left && !C[h].t.right;
}

/* Chunk h, of class k, takes the place of the only chunk of class k (or
 * becomes the first: the caller sets the bitmaps then).
 */
static __always_inline void bfc__class_take(struct bfc *b,
					    struct bfc_chunk *C, uint32_t k,
					    uint32_t h)
{
	struct bfc_chunk *x = &C[h];

	x->cls = (uint16_t)k;
	x->t.parent = 0;
	x->t.left = 0;
	x->t.right = 0;
	x->flags &= (uint8_t)~BFC_CF_RED;
	b->cls[k].root = h;
	b->cls[k].min = h;
}

/* Chunk h, of class k, becomes the only chunk of empty class k. */
static __always_inline void bfc__class_set(struct bfc *b, struct bfc_chunk *C,
					   uint32_t k, uint32_t h)
{
	bfc__class_take(b, C, k, h);
	b->sl_map[k >> BFC_SL_BITS] |= 1u << (k & (BFC_SL_COUNT - 1));
	b->fl_map |= 1ull << (k >> BFC_SL_BITS);
}

/* Empty class k, whose only chunk the caller has taken out. */
static __always_inline void bfc__class_clear(struct bfc *b, uint32_t k)
{
	uint32_t fl = k >> BFC_SL_BITS;

	b->cls[k].root = 0;
	b->cls[k].min = 0;
	b->sl_map[fl] &= ~(1u << (k & (BFC_SL_COUNT - 1)));
	b->fl_map &= ~((uint64_t)!b->sl_map[fl] << fl);	/* no branch */
}

/* Insert free chunk h into class k, which its size belongs to. */
static __always_inline void bfc__class_insert_c(struct bfc *b,
						struct bfc_chunk *C,
						uint32_t h, uint32_t k)
{
	if (b->cls[k].root) {
		C[h].cls = (uint16_t)k;
		bfc__tree_insert(b, &b->cls[k], h);
		return;
	}
	bfc__class_set(b, C, k, h);	/* the first of its class: common */
}

static __always_inline void bfc__class_insert(struct bfc *b,
					      struct bfc_chunk *C, uint32_t h)
{
	bfc__class_insert_c(b, C, h, bfc__class_of(b, C[h].size));
}

/* Remove h from its class; h's key is not looked at (it may have changed). */
static __always_inline void bfc__class_remove(struct bfc *b,
					      struct bfc_chunk *C, uint32_t h)
{
	uint32_t k = C[h].cls;

	BFC_ASSERT(!(C[h].flags & BFC_CF_USED),
		   "removing an in-use chunk from a class");
	if (bfc__alone(b, C, h, k))
		bfc__class_clear(b, k);		/* common */
	else
		bfc__tree_remove(b, &b->cls[k], h);
}

/* Free chunk n, whose key the caller has set and whose size belongs to
 * class k, takes the place of free chunk o in the class index.  n may be o
 * (its size changed), or a chunk in no class.  When k is o's class and n
 * sorts between o's in-order neighbours (always, if o is alone there), n
 * takes o's node: no search, no rebalancing.  Otherwise o is removed and
 * n inserted.
 */
static __always_inline void bfc__class_replace(struct bfc *b,
					       struct bfc_chunk *C, uint32_t o,
					       uint32_t n, uint32_t k)
{
	if (k == C[o].cls) {
		if (bfc__alone(b, C, o, k)) {
			if (n != o)
				bfc__class_take(b, C, k, n);
			return;
		}
		if (bfc__tree_rekey(b, o, n))
			return;
	}
	bfc__class_remove(b, C, o);
	bfc__class_insert_c(b, C, n, k);
}

/* The minimum of the first non-empty class after k, or 0. */
static __always_inline uint32_t bfc__next_min(const struct bfc *b, uint32_t k)
{
	uint32_t fl = k >> BFC_SL_BITS;
	uint32_t bits = b->sl_map[fl] & (~1u << (k & (BFC_SL_COUNT - 1)));
	uint64_t fbits;

	if (!bits) {
		fbits = b->fl_map & (~1ull << fl);
		if (!fbits)
			return 0;
		fl = (uint32_t)__builtin_ctzll(fbits);
		bits = b->sl_map[fl];
	}
	return b->cls[(fl << BFC_SL_BITS) + (uint32_t)__builtin_ctz(bits)].min;
}

/* The chunk best fitting a request of size bytes (a multiple of the
 * granularity), or 0.  The slow path searches the tree of size's class.
 */
static __always_inline uint32_t bfc__find_fit(const struct bfc *b,
					      uint64_t size)
{
	uint32_t k = bfc__class_of(b, size);
	uint32_t m = b->cls[k].min;

	if (!m)
		return bfc__next_min(b, k);
	if (b->chunks[m].size >= size)
		return m;
	return bfc__find_fit_slow(b, k, size);
}

uint32_t bfc__largest_free(const struct bfc *b);

/* The address index bucket of a start address: the top bits of a
 * Fibonacci hash of the granule number.  hash_mul is the 64-bit constant
 * shifted right by gshift, so for an aligned address addr * hash_mul =
 * (addr >> gshift) * (the constant with its low gshift bits cleared): no
 * shift by gshift needed.
 */
static inline uint32_t bfc__hash_bucket(const struct bfc *b, uint64_t addr)
{
	return (uint32_t)((addr * b->hash_mul) >> b->hash_shift);
}

/* Text output into a caller's buffer, snprintf-style. */
struct bfc_out {
	char *buf;
	size_t len;
	size_t pos;	/* length of the full text so far */
};

static inline void bfc__out_init(struct bfc_out *o, char *buf, size_t len)
{
	o->buf = buf;
	o->len = buf ? len : 0;
	o->pos = 0;
	if (o->len)
		o->buf[0] = '\0';
}

static inline char *bfc__out_ptr(const struct bfc_out *o)
{
	return o->pos < o->len ? o->buf + o->pos : NULL;
}

static inline size_t bfc__out_room(const struct bfc_out *o)
{
	return o->pos < o->len ? o->len - o->pos : 0;
}

static inline void bfc__out_done(struct bfc_out *o, int n)
{
	if (n > 0)
		o->pos += (size_t)n;
}

#define BFC_PUT(o, ...)							\
	bfc__out_done((o), bfc_snprintf(bfc__out_ptr(o), bfc__out_room(o), \
					__VA_ARGS__))

static inline void bfc__out_putc(struct bfc_out *o, char ch)
{
	if (o->pos + 1 < o->len) {
		o->buf[o->pos] = ch;
		o->buf[o->pos + 1] = '\0';
	}
	o->pos++;
}

#endif /* GPUPOOL_BFC_INTERNAL_H */
