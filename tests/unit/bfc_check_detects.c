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
 * sizes; a second region wholly free; handles per bfc_diag.c's layout.
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
	self->d = self->c + 1;
	ASSERT_EQ(0x10700, bt_info(self->b, self->d).addr);
	ASSERT_EQ(0, ADD(self->b, 0x80000, 64 * KiB, NULL));
	self->r2 = self->d + 1;
	ASSERT_EQ(0x80000, bt_info(self->b, self->r2).addr);
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
	self->b->chunks[self->c].flags &= (uint8_t)~BFC_CF_USED;
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

	self->b->sl_map[c >> BFC_SL_BITS] ^= 1u << (c & (BFC_SL_COUNT - 1));
	DETECTS("bitmap");
}

TEST_F(corrupt, group_bitmap)
{
	self->b->fl_map |= 1ull << 40;
	DETECTS("class group 40");
}

TEST_F(corrupt, tree_colour_and_order)
{
	struct bfc_chunk *C = self->b->chunks;
	uint32_t k = C[self->r2].cls;

	C[self->b->cls[k].root].flags |= BFC_CF_RED;
	DETECTS("is red");
	C[self->b->cls[k].root].flags &= (uint8_t)~BFC_CF_RED;
	/* Hang B, with a smaller key, as the right child of that root. */
	C[self->bf].size = 64 * KiB;
	C[self->bf].cls = (uint16_t)k;
	C[self->r2].t.right = self->bf;
	C[self->bf].t.parent = self->r2;
	C[self->bf].flags |= BFC_CF_RED;
	DETECTS("order");
}

TEST_F(corrupt, cached_minimum)
{
	uint32_t k = self->b->chunks[self->r2].cls;

	self->b->cls[k].min = self->d;
	DETECTS("cached minimum");
}

TEST_F(corrupt, address_index)
{
	struct bfc *b = self->b;
	uint32_t *l = &b->hash[bfc__hash_bucket(b, b->chunks[self->c].addr)];

	/* The link to C (a bucket head or a chain link) names A instead. */
	while (*l != self->c)
		l = &b->chunks[*l].u.hnext;
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

/* A tree link past the slots is reported, not followed (ASan would
 * catch the read).
 */
TEST_F(corrupt, tree_link_out_of_range)
{
	struct bfc *b = self->b;

	b->chunks[b->cls[b->chunks[self->r2].cls].root].t.right = b->nr_used + 5;
	DETECTS("beyond");
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

	/* A live slot no region reaches. */
	b->chunks[b->nr_used++].flags = BFC_CF_LIVE;
	b->nr_live++;
	DETECTS("slots");
	EXPECT_NE(NULL, strstr(self->rep, "leak"));
}

TEST_F(corrupt, cycle_is_bounded)
{
	self->b->chunks[self->d].next = self->a;
	DETECTS("region 1");
	self->b->chunks[self->d].next = 0;
	self->b->chunks[self->b->cls[self->b->chunks[self->r2].cls].root].t.left =
		self->b->cls[self->b->chunks[self->r2].cls].root;
	DETECTS("class");
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
