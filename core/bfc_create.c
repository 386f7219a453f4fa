// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_create.c - creating and destroying a BFC allocator: its parameters
 * and the placement policies' names, and the metadata it allocates for
 * its chunks: the slot array and the address index's buckets, made at
 * create and doubled together when the slots run out
 * (bfc__slot_reserve()).  The regions' arrays are bfc_region.c's, the
 * operations on chunks bfc.c's.
 *
 * The design (what it computes, how, and why): docs/bfc.md.
 */
#include "bfc_internal.h"

#define CHUNKS_MIN	64u
#define CHUNKS_MAX	(1u << 31)	/* 128 GiB of metadata: never reached */
#define HASH_MAX_BITS	31u

void bfc_params_default(struct bfc_params *p, uint64_t granularity)
{
	p->granularity = granularity;
	p->split_ratio = 2;
	p->flags = 0;
	p->split_threshold = 128ull << 20;
	p->max_split_size = 0;
	p->policy = BFC_POLICY_TF;
	p->unused = 0;
	p->small_size = 1ull << 20;
}

static const char *const policy_names[BFC_NR_POLICIES] = {
	[BFC_POLICY_TF] = "tf",
	[BFC_POLICY_EXACT] = "exact",
	[BFC_POLICY_SEGREGATE] = "seg",
	[BFC_POLICY_HALF] = "half",
	[BFC_POLICY_AGE] = "age",
};

const char *bfc_policy_name(uint32_t policy)
{
	return policy < BFC_NR_POLICIES ? policy_names[policy] : NULL;
}

int bfc_policy_parse(const char *name)
{
	uint32_t i, j;

	for (i = 0; name && i < BFC_NR_POLICIES; i++) {
		for (j = 0; policy_names[i][j] && name[j] == policy_names[i][j]; j++)
			;
		if (!policy_names[i][j] && !name[j])
			return (int)i;
	}
	return -BFC_EINVAL;
}

/* Chunk slots and the address index ---------------------------------------- */

#define FIB64	0x9e3779b97f4a7c15ull

static inline uint32_t hash_bits(const struct bfc *b)
{
	return 64 - b->hash_shift;
}

static inline size_t hash_bytes(uint32_t bits)
{
	return ((size_t)1 << bits) * sizeof(uint32_t);
}

/* Buckets for cap slots: 2 * cap (cap is a power of two), at most
 * 2^HASH_MAX_BITS.
 */
static inline uint32_t hash_bits_for(uint32_t cap)
{
	uint32_t bits = 32u - (uint32_t)__builtin_clz(cap);

	/* coccicheck: no min(): the core is freestanding (bfc_env.h) */
	return bits < HASH_MAX_BITS ? bits : HASH_MAX_BITS;
}

/* Grow the slot array to cap slots, the new ones on the free list, and
 * the hash with it.  Both are allocated before anything changes.
 */
static int chunks_resize(struct bfc *b, uint32_t cap)
{
	size_t size = (size_t)cap * sizeof(struct bfc_chunk) + 64;
	uint32_t bits = hash_bits_for(cap), old_bits = 0, i, h, next;
	uint32_t *hash = NULL, *old = b->hash;
	void *mem = bfc_env_alloc(size);
	struct bfc_chunk *c;

	if (!mem)
		return -BFC_ENOMEM;
	if (old)
		old_bits = hash_bits(b);
	if (bits != old_bits) {
		hash = bfc_env_alloc(hash_bytes(bits));
		if (!hash) {
			bfc_env_free(mem, size);
			return -BFC_ENOMEM;
		}
	}
	c = (struct bfc_chunk *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
	if (b->chunks) {
		bfc_memcpy(c, b->chunks,
			   (size_t)b->nr_slots * sizeof(struct bfc_chunk));
		bfc_env_free(b->chunks_mem, b->chunks_mem_size);
	}
	/* The new slots go on the free list, lowest first. */
	for (i = cap; i-- > b->nr_slots; ) {
		c[i].next = b->free_slot;
		b->free_slot = i;
	}
	b->chunks = c;
	b->chunks_mem = mem;
	b->chunks_mem_size = size;
	b->nr_slots = cap;
	if (!hash)
		return 0;
	b->hash = hash;
	b->hash_shift = 64 - bits;
	for (i = 0; old && i < (1u << old_bits); i++) {
		for (h = old[i]; h; h = next) {
			next = c[h].hnext;
			bfc__hash_link(b, c, h);
		}
	}
	if (old)
		bfc_env_free(old, hash_bytes(old_bits));
	return 0;
}

/* Make sure bfc__slot_get() can succeed n times (n <= CHUNKS_MIN). */
int bfc__slot_reserve(struct bfc *b, uint32_t n)
{
	uint32_t have = 0, h;

	for (h = b->free_slot; have < n && h; h = b->chunks[h].next)
		have++;
	if (have >= n)
		return 0;
	if (b->nr_slots >= CHUNKS_MAX)
		return -BFC_ENOMEM;
	return chunks_resize(b, b->nr_slots * 2);
}

/* Create / destroy --------------------------------------------------------- */

/* The split rule and the placement policy, turned into the numbers
 * want_split() and split() read, so that the allocation path tests
 * numbers, never the policy.
 */
static void policy_init(struct bfc *b, const struct bfc_params *p)
{
	/* The split rule as want_split() reads it.  A rest is never empty:
	 * the threshold is at least 1.
	 */
	b->split_max = p->max_split_size - 1;	/* 0: UINT64_MAX */
	b->split_thr = p->split_threshold ? p->split_threshold : 1;
	/* The placement policy: the only place it is read.  TF reads
	 * split_ratio; EXACT, SEGREGATE and HALF split whenever there is a
	 * rest; AGE when the rest is at least 1/8 of the request (ratio test
	 * (r * 1) >> 3, threshold split_threshold as TF's), but a rest TF's
	 * rule would not split off only into an empty class.  split() reads
	 * the end.
	 */
	switch (p->policy) {
	case BFC_POLICY_TF:
		if (p->split_ratio == 1) {
			b->split_thr = 1;	/* "split whenever there is a rest" */
		} else if (p->split_ratio > 1) {
			b->ratio_m1 = p->split_ratio - 1;
			b->ratio_lim = UINT64_MAX / b->ratio_m1;
		}
		break;
	case BFC_POLICY_EXACT:
	case BFC_POLICY_SEGREGATE:
	case BFC_POLICY_HALF:
		b->split_thr = 1;
		b->ratio_lim = 0;
		break;
	case BFC_POLICY_AGE:
		b->ratio_m1 = 1;
		b->ratio_lim = UINT64_MAX;
		b->ratio_shift = 3;
		b->lone_rest = true;
		break;
	}
	b->cut = p->policy == BFC_POLICY_SEGREGATE ? BFC_CUT_SMALL :
		 p->policy == BFC_POLICY_HALF ? BFC_CUT_REL :
		 p->policy == BFC_POLICY_AGE ? BFC_CUT_OLDER : BFC_CUT_LOW;
	b->cut_small = p->small_size;
}

int bfc_create(struct bfc **out, const struct bfc_params *p)
{
	struct bfc *b;

	if (!out)
		return -BFC_EINVAL;
	*out = NULL;
	if (!p || !p->granularity || (p->granularity & (p->granularity - 1)) ||
	    (p->flags & ~BFC_PARAMS_VALID_FLAGS) || p->policy >= BFC_NR_POLICIES)
		return -BFC_EINVAL;
	b = bfc_env_alloc(sizeof(*b));
	if (!b)
		return -BFC_ENOMEM;
	b->p = *p;
	b->gmask = p->granularity - 1;
	b->size_max = UINT64_MAX - b->gmask;
	b->gshift = (uint32_t)__builtin_ctzll(p->granularity);
	b->cls_floor = b->gshift <= 58 ? (uint64_t)BFC_SL_COUNT << b->gshift : 0;
	b->next_region_id = 1;
	b->hash_mul = FIB64 >> b->gshift;
	policy_init(b, p);
	/* Slot 0, the nil sentinel, is never on the free list. */
	b->nr_slots = 1;
	if (chunks_resize(b, CHUNKS_MIN)) {
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
		bfc_env_free(b->hash, hash_bytes(hash_bits(b)));
	if (b->regions)
		bfc_env_free(b->regions, (size_t)b->region_cap * sizeof(*b->regions));
	if (b->order)
		bfc_env_free(b->order, (size_t)b->region_cap * sizeof(*b->order));
	bfc_env_free(b, sizeof(*b));
}
