/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_internal.h - private to core/bfc*.c: the metadata layout and the
 * functions the core's files share.  The design: docs/bfc.md.
 * Cross-file functions are named bfc__*.
 */
#ifndef GPUPOOL_BFC_INTERNAL_H
#define GPUPOOL_BFC_INTERNAL_H

#include "bfc.h"

/* Size classes --------------------------------------------------------- */

/* Tunable: each power of two of sizes (in granules) is split into
 * 2^BFC_SL_BITS classes.  At most 6: a group (one power of two) lies in
 * one 64-bit word of the class bitmap.
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

/* The bitmap of non-empty classes: 64 classes a word (2^(6 - SL_BITS)
 * powers of two of sizes, two with SL_BITS 5, so that a fit in the next
 * one or two is found in the request's own word), and a bit per non-empty
 * word.
 */
#define BFC_NR_WORDS	((BFC_NR_CLASSES + 63) / 64)

_Static_assert(BFC_SL_BITS >= 1 && BFC_SL_BITS <= 6, "a group within a word");
_Static_assert(BFC_NR_WORDS <= 64, "word bitmap is 64 bits");
_Static_assert(BFC_NR_CLASSES <= 65535, "class index is 16 bits");

/* struct bfc.cut: which end of a split chunk a request is cut from. */
#define BFC_CUT_LOW	0	/* always the low end (tf, exact) */
#define BFC_CUT_SMALL	1	/* high below cut_small (seg) */
#define BFC_CUT_REL	2	/* high when smaller than the rest (half) */
#define BFC_CUT_OLDER	3	/* beside the older neighbour (age) */

/* Chunks ---------------------------------------------------------------- */

/* chunk.flags */
#define BFC_CF_LIVE	0x01	/* slot holds a chunk or an edge (else on the
				 * slot free list, flags 0)
				 */
#define BFC_CF_HELD	0x02	/* not free: in use, or an edge */
#define BFC_CF_EDGE	0x04	/* a region's edge (HELD too), not a chunk */
#define BFC_CF_RED	0x08	/* red-black colour, while in a class tree */
#define BFC_CF_TAGGED	0x10	/* in use, and u.tag set since its allocation */

/* One record per chunk, 64 bytes, in an array indexed by handle.
 *
 * Each region is bracketed by two edge records (BFC_CF_EDGE, size 0): the
 * low edge at the region's base, before its first chunk, and the high
 * edge at its end, after its last chunk.  They are HELD, so a chunk's
 * neighbours always exist and a free never needs to ask whether it is at
 * the end of a region: it merges only with free neighbours, and edges are
 * never free.
 *
 * Slot 0 is the red-black trees' nil (always black; its parent link is
 * scratch during deletion), so handle 0 never names a chunk.
 */
struct bfc_chunk {
	uint64_t size;		/* bytes, a multiple of the granularity; edges 0 */
	uint32_t prev;		/* lower neighbour (chunk or low edge); low edge: 0 */
	uint32_t next;		/* higher neighbour (chunk or high edge); high
				 * edge: 0; on the slot free list: next free slot
				 */
	/* Not next to size: gcc's SLP vectorizer pairs the two in userspace
	 * builds, with more instructions than it saves (the kernel has no
	 * vector code, so the core is also measured as the module runs it).
	 */
	uint64_t addr;
	uint16_t cls;		/* class of size: kept in use too (free reuses it) */
	uint8_t flags;		/* BFC_CF_* */
	uint8_t unused;
	uint32_t hnext;		/* in use: next in its address index bucket */
	union {
		/* Free, in a class tree (the class's root is not 0): links.
		 * Not kept while the chunk is alone in its class.
		 */
		struct {
			uint32_t left, right, parent;
		} t;
		struct {		/* in use */
			uint64_t requested;
			uint64_t alloc_id;
			uint64_t tag;	/* valid with BFC_CF_TAGGED */
		} u;
	};
	uint64_t unused2;
};
_Static_assert(sizeof(struct bfc_chunk) == 64, "one cache line per chunk");

/* Per class.  min is the class's smallest chunk by (size, addr), 0 when the
 * class is empty.  root is its red-black tree's root when the class holds
 * two chunks or more; 0 while it holds one (min), whose tree links are then
 * not kept: the common case of a class of one costs one store to set or
 * clear.  both reads and writes the pair at once.
 */
union bfc_class {
	struct {
		uint32_t min;
		uint32_t root;
	};
	uint64_t both;
};

struct bfc_region {
	uint64_t base;
	uint64_t size;
	uint32_t id;		/* 0: the slot is unused */
	uint32_t lo;		/* low edge: its next is the first chunk */
	uint32_t hi;		/* high edge: its prev is the last chunk */
	uint32_t unused;
};

struct bfc {
	struct bfc_params p;
	uint64_t gmask;		/* granularity - 1 */
	uint64_t size_max;	/* largest request: UINT64_MAX - gmask */
	uint32_t gshift;	/* log2(granularity) */
	uint64_t cls_floor;	/* SL_COUNT granules, or 0 (see bfc__class_of) */

	/* Chunk slots: every slot but 0 (the trees' nil) either holds a
	 * chunk or an edge (BFC_CF_LIVE) or is on the list of free slots,
	 * threaded through .next from free_slot (0 ends it).
	 */
	struct bfc_chunk *chunks;	/* 64-byte aligned inside chunks_mem */
	void *chunks_mem;
	size_t chunks_mem_size;
	uint32_t nr_slots;		/* capacity */
	uint32_t free_slot;

	/* Free chunks: a bit per non-empty class (class k: bit k % 64 of
	 * cls_map[k / 64]), a bit per non-empty word of those.
	 */
	uint64_t word_map;
	uint64_t cls_map[BFC_NR_WORDS];
	union bfc_class cls[BFC_NR_CLASSES];

	/* In-use chunks by start address: bucket heads, chained through
	 * chunk.hnext (0 ends a chain).  Twice as many buckets as chunk
	 * slots (up to 2^HASH_MAX_BITS), so the load stays at most 1/2
	 * without a check on allocation: it grows with the slot array.
	 */
	uint32_t *hash;
	uint64_t hash_mul;		/* Fibonacci multiplier >> gshift */
	uint32_t hash_shift;		/* 64 - log2(buckets) */

	/* Split rule, prepared by bfc_create() (see want_split() in bfc.c). */
	uint64_t split_max;	/* max_split_size - 1: larger never split */
	uint64_t split_thr;	/* max(split_threshold, 1); 1 for TF's split_ratio 1 */
	uint64_t ratio_m1;	/* split_ratio - 1 */
	uint64_t ratio_lim;	/* largest r with r * ratio_m1 exact; 0: no ratio test */
	uint32_t ratio_shift;	/* the ratio test is against (r * ratio_m1) >> this */
	/* AGE: a rest below the request and split_thr (one TF's rule would
	 * leave in the chunk) is split off only into an empty class (see
	 * rest_crowded() in bfc.c).
	 */
	bool lone_rest;
	/* Placement: which end of a split chunk a request is cut from
	 * (BFC_CUT_*; BFC_CUT_LOW, 0, is TF's: always the low end).
	 */
	uint8_t cut;
	/* BFC_CUT_SMALL: rounded requests below this are cut from the high end. */
	uint64_t cut_small;

	/* Regions: slots with stable indices, and their indices by base. */
	struct bfc_region *regions;
	uint32_t *order;
	uint32_t nr_regions;
	uint32_t region_cap;
	uint32_t next_region_id;

	/* Maintained on every operation; chunks_in_use (nr_allocs -
	 * nr_frees), largest_free, free_bytes and fragmentation_ppm are
	 * computed by bfc_get_stats().
	 */
	struct bfc_stats st;
};

static __always_inline uint32_t bfc__class_of(const struct bfc *b,
					      uint64_t size)
{
	/* In granules u = size >> gshift, the class is s * SL_COUNT plus
	 * u >> s, with s = floor(log2 u) - SL_BITS (u >> s has its leading
	 * one at bit SL_BITS: it adds the SL_COUNT of group s + 1), or s = 0
	 * below 2^SL_BITS granules, a class per size.  Computed on bytes with
	 * t = s + gshift: size >> t is u >> s, and (t << SL_BITS) is the
	 * class plus gshift * SL_COUNT, the same for every size, so these are
	 * the same classes, numbered from gshift * SL_COUNT; the largest is
	 * still below BFC_NR_CLASSES.  cls_floor (SL_COUNT granules) gives
	 * the floor of t without a branch.  Above a granularity of 2^58 no
	 * size has SL_COUNT granules: cls_floor is 0, and t = floor(log2
	 * size) - SL_BITS still gives every size a class of its own, in
	 * order.
	 */
	uint32_t t = 63u - (uint32_t)__builtin_clzll(size | b->cls_floor) -
		     BFC_SL_BITS;

	return (t << BFC_SL_BITS) + (uint32_t)(size >> t);
}

static inline bool bfc__key_less(const struct bfc_chunk *a,
				 const struct bfc_chunk *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/* Is h a chunk (live, not an edge)?  Any h is accepted. */
static inline bool bfc__is_chunk(const struct bfc *b, uint32_t h)
{
	return h < b->nr_slots &&
	       (b->chunks[h].flags & (BFC_CF_LIVE | BFC_CF_EDGE)) == BFC_CF_LIVE;
}

/* bfc_tree.c: classes of two chunks or more.  The class of one chunk is
 * handled inline below; the tree work is out of line.
 */
void bfc__tree_insert(struct bfc *b, uint32_t k, uint32_t h);
void bfc__tree_remove(struct bfc *b, uint32_t k, uint32_t h);
bool bfc__tree_in_order(const struct bfc *b, uint32_t h);
uint32_t bfc__find_fit_slow(const struct bfc *b, uint32_t k, uint64_t size);
uint32_t bfc__largest_free(const struct bfc *b);

/* The helpers below take the chunk array C (b->chunks) from their
 * callers: the core is built with -fno-strict-aliasing (as the kernel
 * is), so after any store through C the compiler would load b->chunks
 * again, and recompute every chunk address from it.
 */

/* Chunk h, free, in no class and with cls k already, becomes the only
 * chunk of empty class k.  The word map is written only when the word's
 * bit changes (here and in bfc__class_clear()).
 */
static __always_inline void bfc__class_put(struct bfc *b, uint32_t k,
					   uint32_t h)
{
	uint64_t w = 1ull << (k >> 6);

	b->cls[k].both = h;		/* min h, root 0: alone */
	b->cls_map[k >> 6] |= 1ull << (k & 63);
	if (!(b->word_map & w))
		b->word_map |= w;
}

/* Chunk h, free and in no class, becomes the only chunk of empty class k. */
static __always_inline void bfc__class_set(struct bfc *b, struct bfc_chunk *C,
					   uint32_t k, uint32_t h)
{
	C[h].cls = (uint16_t)k;
	bfc__class_put(b, k, h);
}

/* Empty class k, whose only chunk the caller has taken out. */
static __always_inline void bfc__class_clear(struct bfc *b, uint32_t k)
{
	uint32_t w = k >> 6;
	uint64_t m = b->cls_map[w] & ~(1ull << (k & 63));

	b->cls[k].both = 0;
	b->cls_map[w] = m;
	if (!m)
		b->word_map &= ~(1ull << w);
}

/* Index free chunk h (in no class) in class k, which its size belongs to. */
static __always_inline void bfc__class_insert(struct bfc *b,
					      struct bfc_chunk *C,
					      uint32_t h, uint32_t k)
{
	if (b->cls[k].min) {
		C[h].cls = (uint16_t)k;
		bfc__tree_insert(b, k, h);
	} else {
		bfc__class_set(b, C, k, h);	/* the first of its class: common */
	}
}

/* Alone chunk h leaves class k (which it empties) for empty class kn. */
static __always_inline void bfc__class_move(struct bfc *b, struct bfc_chunk *C,
					    uint32_t k, uint32_t kn, uint32_t h)
{
	if ((k ^ kn) >> 6) {
		bfc__class_clear(b, k);
		bfc__class_set(b, C, kn, h);
		return;
	}
	/* Within one word: k's bit goes, kn's comes, the word stays. */
	b->cls[k].both = 0;
	b->cls[kn].both = h;
	C[h].cls = (uint16_t)kn;
	b->cls_map[k >> 6] ^= (1ull << (k & 63)) | (1ull << (kn & 63));
}

/* As bfc__class_move(), but kn may also be k, and without a branch: the
 * placement policies other than TF's move chunks between classes in an
 * order the processor does not learn, where a mispredicted test costs
 * more than the stores it would save (bench/README.md).  k's bit goes
 * first, so kn == k leaves it set.
 */
static __always_inline void bfc__class_shift(struct bfc *b,
					     struct bfc_chunk *C, uint32_t k,
					     uint32_t kn, uint32_t h)
{
	uint64_t m = b->cls_map[k >> 6] & ~(1ull << (k & 63));

	b->cls[k].both = 0;
	b->cls[kn].both = h;
	C[h].cls = (uint16_t)kn;
	b->cls_map[k >> 6] = m;
	b->word_map &= ~((uint64_t)(m == 0) << (k >> 6));
	b->cls_map[kn >> 6] |= 1ull << (kn & 63);
	b->word_map |= 1ull << (kn >> 6);
}

/* Take free chunk h out of its class; h's key is not looked at (it may
 * have changed).
 */
static __always_inline void bfc__class_remove(struct bfc *b,
					      struct bfc_chunk *C, uint32_t h)
{
	uint32_t k = C[h].cls;

	BFC_ASSERT(!(C[h].flags & BFC_CF_HELD),
		   "removing a chunk that is not free from a class");
	if (!b->cls[k].root)
		bfc__class_clear(b, k);		/* alone: common */
	else
		bfc__tree_remove(b, k, h);
}

/* Free chunk h, indexed in its class, has a new key (size and address),
 * whose class is k.  Alone in its class and staying there, nothing
 * changes; in a tree and still between its in-order neighbours, nothing
 * changes either; otherwise it moves.
 */
static __always_inline void bfc__class_rekey(struct bfc *b,
					     struct bfc_chunk *C, uint32_t h,
					     uint32_t k)
{
	uint32_t o = C[h].cls;

	if (!b->cls[o].root) {
		if (o == k)
			return;
		bfc__class_clear(b, o);
	} else {
		if (o == k && bfc__tree_in_order(b, h))
			return;
		bfc__tree_remove(b, o, h);
	}
	bfc__class_insert(b, C, h, k);
}

/* The first non-empty class at or after k, or BFC_NO_CLASS. */
static __always_inline uint32_t bfc__next_class(const struct bfc *b,
						uint32_t k)
{
	uint32_t w = k >> 6;
	uint64_t bits = b->cls_map[w] & (~0ull << (k & 63)), wbits;

	if (!bits) {
		wbits = b->word_map & (~1ull << w);
		if (!wbits)
			return BFC_NO_CLASS;
		w = (uint32_t)__builtin_ctzll(wbits);
		bits = b->cls_map[w];
	}
	return (w << 6) + (uint32_t)__builtin_ctzll(bits);
}

/* The chunk best fitting a request of size bytes (a multiple of the
 * granularity), or 0.
 */
static __always_inline uint32_t bfc__find_fit(const struct bfc *b,
					      uint64_t size)
{
	uint32_t k = bfc__class_of(b, size);
	uint32_t m = b->cls[k].min;

	if (m && b->chunks[m].size >= size)
		return m;
	if (m)
		return bfc__find_fit_slow(b, k, size);
	k = bfc__next_class(b, k);
	return k == BFC_NO_CLASS ? 0 : b->cls[k].min;
}

/* The address index bucket of a start address: the top bits of a
 * Fibonacci hash of the granule number.  hash_mul is the 64-bit constant
 * shifted right by gshift, so for an aligned address addr * hash_mul =
 * (addr >> gshift) * (the constant with its low gshift bits cleared): no
 * shift by gshift needed.
 */
static inline uint64_t bfc__hash_bucket(const struct bfc *b, uint64_t addr)
{
	return (addr * b->hash_mul) >> b->hash_shift;
}

/* Put in-use chunk h at the head of its address index bucket. */
static __always_inline void bfc__hash_link(struct bfc *b, struct bfc_chunk *C,
					   uint32_t h)
{
	uint32_t *head = &b->hash[bfc__hash_bucket(b, C[h].addr)];

	C[h].hnext = *head;
	*head = h;
}

/* bfc_create.c: chunk slots; bfc.c: release(), for bfc_region.c. */

/* A slot (slot_reserve() made sure there is one); the caller sets its
 * flags and the fields it needs.
 */
static __always_inline uint32_t bfc__slot_get(struct bfc *b,
					      struct bfc_chunk *C)
{
	uint32_t h = b->free_slot;

	b->free_slot = C[h].next;
	return h;
}

static __always_inline void bfc__slot_put(struct bfc *b, struct bfc_chunk *C,
					  uint32_t h)
{
	C[h].flags = 0;
	C[h].next = b->free_slot;
	b->free_slot = h;
}

/* Make sure bfc__slot_get() can succeed n times (n <= 64). */
int bfc__slot_reserve(struct bfc *b, uint32_t n);
/* Chunk h has just become free, its cls the class of its size: coalesce
 * and index it (bfc.c's release()).
 */
void bfc__release(struct bfc *b, uint32_t h);

/* bfc_region.c: regions, sorted by base in b->order. */

static inline uint64_t bfc__region_end(const struct bfc_region *r)
{
	return r->base + r->size;
}

/* Index in b->order of the first region whose base is > base. */
uint32_t bfc__order_upper(const struct bfc *b, uint64_t base);
/* The region slot whose range holds addr, or UINT32_MAX.  O(log regions). */
uint32_t bfc__region_of(const struct bfc *b, uint64_t addr);

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
