// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_check_detects.c - bfc_check() itself: each kind of corruption,
 * planted directly in the metadata (this test reads bfc_internal.h), is
 * reported in words.  A checker that always says "0" would pass every
 * other test; this one keeps it honest.
 */
#include "bfc_test.h"
#include "bfc_internal.h"

/* [A used 1K][B free 256][C used 512][D free 2304] in one region, exact
 * sizes; a second region wholly free.  Every class holds one chunk.
 */
FIXTURE(corrupt) {
	struct bfc *b;
	bfc_handle_t a, bf, c, d, r2;
	char rep[8192];
};

FIXTURE_SETUP(corrupt)
{
	self->b = bt_create(256, 0, 256, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 0x10000, 4096, NULL));
	ALLOC_OK(self->b, 1000, &self->a);
	ALLOC_OK(self->b, 256, &self->bf);
	ALLOC_OK(self->b, 500, &self->c);
	ASSERT_EQ(0, FREE(self->b, self->bf));
	self->d = bt_handle_at(self->b, 0x10700);
	ASSERT_NE(0, self->d);
	ASSERT_EQ(0, ADD(self->b, 0x80000, 64 * KiB, NULL));
	self->r2 = bt_handle_at(self->b, 0x80000);
	ASSERT_NE(0, self->r2);
	CHECK(self->b);
}

FIXTURE_TEARDOWN(corrupt)
{
	bfc_destroy(self->b);
}

/* bfc_check must fail and say `what`. */
#define DETECTS(what)							\
	do {								\
		uint32_t _n = bfc_check(self->b, self->rep, sizeof(self->rep)); \
		if (!_n || !strstr(self->rep, what))			\
			TH_LOG("wanted \"%s\"; %u violation(s):\n%s",	\
			       what, _n, self->rep);			\
		EXPECT_LT(0u, _n);					\
		EXPECT_NE(NULL, strstr(self->rep, what));		\
	} while (0)

TEST_F(corrupt, stats)
{
	self->b->st.in_use += 256;
	self->b->st.chunks_free--;
	DETECTS("stats: in_use");
	EXPECT_NE(NULL, strstr(self->rep, "chunks free"));
}

TEST_F(corrupt, tiling_gap_and_overlap)
{
	self->b->chunks[self->c].size -= 256;
	DETECTS("gap");
	self->b->chunks[self->c].size += 512;
	DETECTS("overlap");
}

TEST_F(corrupt, prev_link)
{
	self->b->chunks[self->c].prev = self->a;
	DETECTS("prev is");
}

TEST_F(corrupt, adjacent_free_chunks)
{
	/* Mark C free without coalescing (and without indexing it). */
	self->b->chunks[self->c].flags &= (uint8_t)~BFC_CF_HELD;
	DETECTS("not coalesced");
	EXPECT_NE(NULL, strstr(self->rep, "address index"));
}

TEST_F(corrupt, wrong_class)
{
	self->b->chunks[self->d].cls++;
	DETECTS("belongs in");
}

TEST_F(corrupt, bitmap)
{
	uint32_t c = bfc__class_of(self->b, 256);

	self->b->cls_map[c >> 6] ^= 1ull << (c & 63);
	DETECTS("bitmap");
}

TEST_F(corrupt, word_bitmap)
{
	self->b->word_map |= 1ull << 20;
	DETECTS("class word 20");
}

/* The fixture, and in a third region [0x100000, +16 KiB): a free 4 KiB
 * chunk X at its base, two in use, and the free 4 KiB rest Y: the class of
 * 4 KiB holds X and Y, so it has a tree.
 */
FIXTURE(tree) {
	struct bfc *b;
	bfc_handle_t bf, x, y;
	uint32_t k;
	char rep[8192];
};

FIXTURE_SETUP(tree)
{
	bfc_handle_t h;

	self->b = bt_create(256, 0, 256, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 0x10000, 4096, NULL));
	ALLOC_OK(self->b, 1000, &h);
	ALLOC_OK(self->b, 256, &self->bf);
	ALLOC_OK(self->b, 500, &h);
	ASSERT_EQ(0, FREE(self->b, self->bf));
	ASSERT_EQ(0, ADD(self->b, 0x100000, 16 * KiB, NULL));
	EXPECT_EQ(0x100000, ALLOC_OK(self->b, 4 * KiB, &self->x));
	EXPECT_EQ(0x101000, ALLOC_OK(self->b, 4 * KiB, &h));
	EXPECT_EQ(0x102000, ALLOC_OK(self->b, 4 * KiB, &h));
	ASSERT_EQ(0, FREE(self->b, self->x));
	self->y = bt_handle_at(self->b, 0x103000);
	ASSERT_NE(0, self->y);
	self->k = bfc__class_of(self->b, 4 * KiB);
	ASSERT_NE(0, self->b->cls[self->k].root);
	CHECK(self->b);
}

FIXTURE_TEARDOWN(tree)
{
	bfc_destroy(self->b);
}

TEST_F(tree, colour_and_order)
{
	struct bfc_chunk *C = self->b->chunks;
	uint32_t root = self->b->cls[self->k].root;

	C[root].flags |= BFC_CF_RED;
	DETECTS("is red");
	C[root].flags &= (uint8_t)~BFC_CF_RED;
	/* Hang B, with a smaller key, as the right child of X. */
	C[self->bf].size = 4 * KiB;
	C[self->bf].addr = 0x90000;
	C[self->bf].cls = (uint16_t)self->k;
	C[self->bf].t.left = 0;
	C[self->bf].t.right = 0;
	C[self->x].t.right = self->bf;
	C[self->bf].t.parent = self->x;
	C[self->bf].flags |= BFC_CF_RED;
	DETECTS("order");
}

TEST_F(tree, cached_minimum)
{
	self->b->cls[self->k].min = self->y;
	DETECTS("cached minimum");
}

/* A tree link past the slots is reported, not followed (ASan would
 * catch the read).
 */
TEST_F(tree, link_out_of_range)
{
	struct bfc *b = self->b;

	b->chunks[b->cls[self->k].root].t.right = b->nr_slots + 5;
	DETECTS("beyond");
}

TEST_F(tree, cycle_is_bounded)
{
	struct bfc *b = self->b;
	uint32_t root = b->cls[self->k].root;

	b->chunks[root].t.left = root;
	DETECTS("class");
}

/* A class of one chunk keeps no tree: a root there is reported. */
TEST_F(corrupt, tree_of_one)
{
	struct bfc_chunk *C = self->b->chunks;
	uint32_t k = C[self->d].cls;

	C[self->d].t.left = 0;
	C[self->d].t.right = 0;
	C[self->d].t.parent = 0;
	self->b->cls[k].root = self->d;
	DETECTS("a tree of one chunk");
}

/* A class of one chunk whose chunk is in use. */
TEST_F(corrupt, alone_in_use)
{
	uint32_t k = self->b->chunks[self->d].cls;

	self->b->cls[k].min = self->a;
	DETECTS("in-use chunk");
}

TEST_F(corrupt, edges)
{
	struct bfc *b = self->b;
	struct bfc_region *r = &b->regions[b->order[0]];

	b->chunks[r->lo].addr += 256;
	DETECTS("low edge");
	b->chunks[r->lo].addr -= 256;
	b->chunks[r->hi].flags &= (uint8_t)~BFC_CF_HELD;
	DETECTS("high edge");
}

TEST_F(corrupt, address_index)
{
	struct bfc *b = self->b;
	uint32_t *l = &b->hash[bfc__hash_bucket(b, b->chunks[self->c].addr)];

	/* The link to C (a bucket head or a chain link) names A instead. */
	while (*l != self->c)
		l = &b->chunks[*l].hnext;
	*l = self->a;
	DETECTS("not an in-use chunk with that address");
	EXPECT_NE(NULL, strstr(self->rep, "not in the address index"));
}

TEST_F(corrupt, regions)
{
	self->b->regions[self->b->order[1]].base = 0x10800;
	DETECTS("overlaps");
}

TEST_F(corrupt, region_ids_shared)
{
	struct bfc *b = self->b;

	b->regions[b->order[1]].id = b->regions[b->order[0]].id;
	DETECTS("share id");
}

/* Ids stay unique when the count wraps: it skips the ids in use. */
TEST_F(corrupt, region_ids_after_wrap)
{
	struct bfc *b = self->b;
	uint32_t id3, id4;

	b->next_region_id = UINT32_MAX;
	ASSERT_EQ(0, ADD(b, 0x100000, 4096, &id3));
	ASSERT_EQ(0, ADD(b, 0x200000, 4096, &id4));
	EXPECT_EQ(UINT32_MAX, id3);
	EXPECT_EQ(3u, id4);		/* 0 is never an id; 1 and 2 are live */
	CHECK(b);
}

TEST_F(corrupt, leaked_slot)
{
	struct bfc *b = self->b;
	uint32_t h = b->free_slot;

	/* A live slot no region reaches, taken off the free list. */
	b->free_slot = b->chunks[h].next;
	b->chunks[h].flags = BFC_CF_LIVE;
	DETECTS("slots");
	EXPECT_NE(NULL, strstr(self->rep, "leak"));
}

TEST_F(corrupt, cycle_is_bounded)
{
	self->b->chunks[self->d].next = self->a;
	DETECTS("region 1");
}

/* A short buffer still counts everything and stays NUL-terminated. */
TEST_F(corrupt, report_truncated)
{
	char small[16];
	uint32_t n;

	self->b->st.in_use += 256;
	self->b->st.requested += 1;
	n = bfc_check(self->b, small, sizeof(small));
	EXPECT_EQ(2, n);
	EXPECT_EQ(15, strlen(small));
	EXPECT_EQ(2, bfc_check(self->b, NULL, 0));
}

TEST_HARNESS_MAIN
