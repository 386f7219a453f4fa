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
	uint16_t cls;		/* size class, valid while free */
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
		} u;
	};
	uint64_t pad;		/* to a whole cache line */
};
_Static_assert(sizeof(struct bfc_chunk) == 64, "one cache line per chunk");

/* Per class: the tree root and its cached minimum (0 when empty). */
struct bfc_class {
	uint32_t root;
	uint32_t min;
};

/* Address index: open addressing, linear probing, slot empty when h == 0. */
struct bfc_hslot {
	uint32_t fp;		/* fingerprint of the chunk's address */
	uint32_t h;
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

	/* In-use chunks by start address. */
	struct bfc_hslot *hash;
	uint32_t hash_mask;		/* capacity - 1 (a power of two) */
	uint32_t hash_shift;		/* 32 - log2(capacity) */
	uint32_t hash_count;
	uint32_t hash_limit;		/* most entries at load 3/8 */

	/* Regions: slots with stable indices, and their indices by base. */
	struct bfc_region *regions;
	uint32_t *order;
	uint32_t nr_regions;
	uint32_t region_cap;
	uint32_t next_region_id;

	uint64_t next_alloc_id;
	/* Maintained on every operation; largest_free, free_bytes and
	 * fragmentation_ppm are computed by bfc_get_stats().
	 */
	struct bfc_stats st;
};

static inline uint32_t bfc__class_of(const struct bfc *b, uint64_t size)
{
	uint64_t u = size >> b->gshift;
	/* Without a branch: below 2^SL_BITS, taking fl = SL_BITS gives
	 * (1 << SL_BITS) + u - SL_COUNT = u, the class of its own.
	 */
	uint32_t fl = 63u - (uint32_t)__builtin_clzll(u | BFC_SL_COUNT);

	return ((fl - BFC_SL_BITS + 1) << BFC_SL_BITS) +
	       (uint32_t)((u >> (fl - BFC_SL_BITS)) - BFC_SL_COUNT);
}

static inline bool bfc__key_less(const struct bfc_chunk *a,
				 const struct bfc_chunk *b)
{
	return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/* bfc_tree.c: the free-chunk index.  The common cases (a class holding
 * one chunk; the best fit being a class's cached minimum) are inline below;
 * the tree work is out of line.
 */
void bfc__tree_insert(struct bfc *b, struct bfc_class *k, uint32_t h);
void bfc__tree_remove(struct bfc *b, struct bfc_class *k, uint32_t h);
bool bfc__tree_rekey(struct bfc *b, uint32_t o, uint32_t n);
uint32_t bfc__find_fit_slow(const struct bfc *b, uint32_t c, uint64_t size);

static inline void bfc__class_insert(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *x = &b->chunks[h];
	uint32_t c = bfc__class_of(b, x->size);
	struct bfc_class *k = &b->cls[c];

	x->cls = (uint16_t)c;
	if (k->root) {
		bfc__tree_insert(b, k, h);
		return;
	}
	/* The first chunk of its class: the common case. */
	x->t.parent = 0;
	x->t.left = 0;
	x->t.right = 0;
	x->flags &= (uint8_t)~BFC_CF_RED;
	k->root = h;
	k->min = h;
	b->sl_map[c >> BFC_SL_BITS] |= 1u << (c & (BFC_SL_COUNT - 1));
	b->fl_map |= 1ull << (c >> BFC_SL_BITS);
}

static inline void bfc__class_remove(struct bfc *b, uint32_t h)
{
	struct bfc_chunk *x = &b->chunks[h];
	uint32_t c = x->cls, fl = c >> BFC_SL_BITS;
	struct bfc_class *k = &b->cls[c];

	BFC_ASSERT(!(x->flags & BFC_CF_USED), "removing an in-use chunk from a class");
	if (k->root != h || x->t.left || x->t.right) {
		bfc__tree_remove(b, k, h);	/* others remain */
		return;
	}
	/* The only chunk of its class: the common case. */
	k->root = 0;
	k->min = 0;
	b->sl_map[fl] &= ~(1u << (c & (BFC_SL_COUNT - 1)));
	b->fl_map &= ~((uint64_t)!b->sl_map[fl] << fl);	/* no branch */
}

/* Chunk n takes the place of chunk o (in its class tree) when n's key (set
 * by the caller; n may be o, or a chunk in no class) belongs to the same
 * class and sorts between o's neighbours: no search, no rebalancing.
 * Returns false, changing nothing, otherwise; the caller then removes o
 * and inserts n (class_remove does not look at o's key).
 */
static inline bool bfc__class_rekey(struct bfc *b, uint32_t o, uint32_t n)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t c = C[o].cls;
	struct bfc_class *k = &b->cls[c];

	if (k->root != o || C[o].t.left || C[o].t.right)
		return bfc__tree_rekey(b, o, n);
	/* o is alone in its class: n takes its place if in the same class. */
	if (bfc__class_of(b, C[n].size) != c)
		return false;
	if (n != o) {
		C[n].cls = (uint16_t)c;
		C[n].t.parent = 0;
		C[n].t.left = 0;
		C[n].t.right = 0;
		C[n].flags &= (uint8_t)~BFC_CF_RED;
		k->root = n;
		k->min = n;
	}
	return true;
}

/* The chunk best fitting a request of size bytes (a multiple of the
 * granularity), or 0.  The slow path searches class c's tree.
 */
static inline uint32_t bfc__find_fit(const struct bfc *b, uint64_t size)
{
	uint32_t c = bfc__class_of(b, size);
	uint32_t m = b->cls[c].min;

	uint32_t fl, bits;
	uint64_t fbits;

	if (m) {
		if (b->chunks[m].size >= size)
			return m;
		return bfc__find_fit_slow(b, c, size);
	}
	/* Class c is empty: the minimum of the next non-empty class. */
	fl = c >> BFC_SL_BITS;
	bits = b->sl_map[fl] & (uint32_t)(~0ull << ((c & (BFC_SL_COUNT - 1)) + 1));
	if (!bits) {
		fbits = b->fl_map & (~0ull << (fl + 1));
		if (!fbits)
			return 0;
		fl = (uint32_t)__builtin_ctzll(fbits);
		bits = b->sl_map[fl];
	}
	return b->cls[(fl << BFC_SL_BITS) + (uint32_t)__builtin_ctz(bits)].min;
}

uint32_t bfc__largest_free(const struct bfc *b);

/* bfc.c: the address index (for bfc_check).  hash_has: addr -> h is
 * there; hash_slot_ok: occupied slot i names an in-use chunk whose address
 * has its fingerprint.
 */
bool bfc__hash_has(const struct bfc *b, uint64_t addr, uint32_t h);
bool bfc__hash_slot_ok(const struct bfc *b, uint32_t i);

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
