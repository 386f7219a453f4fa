// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_frees.c - free by handle and by address: coalescing with each
 * neighbour, bogus frees (unknown, already free, out of range, mid-chunk)
 * reported and counted without changing anything, lookup, tags, and
 * chunk_info.
 */
#include "bfc_test.h"

/* Four 1 KiB chunks A B C D and a free tail, exact sizes. */
FIXTURE(four) {
	struct bfc *b;
	bfc_handle_t h[4];
	uint64_t a[4];
};

FIXTURE_SETUP(four)
{
	int i;

	self->b = bt_create(256, 0, 256, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 0x40000, 0x10000, NULL));
	for (i = 0; i < 4; i++)
		self->a[i] = ALLOC_OK(self->b, 1000, &self->h[i]);
	EXPECT_EQ(0x40c00, self->a[3]);
}

FIXTURE_TEARDOWN(four)
{
	bfc_destroy(self->b);
}

TEST_F(four, coalesce_next_prev_both)
{
	struct bfc *b = self->b;

	ASSERT_EQ(0, FREE(b, self->h[1]));		/* between two in use */
	EXPECT_EQ(2, bt_stats(b).chunks_free);
	ASSERT_EQ(0, FREE_ADDR(b, self->a[3]));	/* merges into the tail */
	EXPECT_EQ(2, bt_stats(b).chunks_free);
	EXPECT_EQ(0x10000 - 0xc00, bt_stats(b).largest_free);
	ASSERT_EQ(0, FREE(b, self->h[2]));		/* both sides */
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(0x10000 - 0x400, bt_stats(b).largest_free);
	/* h[1] absorbed its neighbours and names the merged chunk. */
	EXPECT_EQ(0x40400, bt_info(b, self->h[1]).addr);
	EXPECT_EQ(0x10000 - 0x400, bt_info(b, self->h[1]).size);
	ASSERT_EQ(0, FREE(b, self->h[0]));		/* merges with next */
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(0x10000, bt_stats(b).largest_free);
	EXPECT_EQ(4, bt_stats(b).nr_frees);
	EXPECT_EQ(0, bt_stats(b).in_use);
	EXPECT_EQ(0, bt_stats(b).requested);
}

TEST_F(four, bad_frees_change_nothing)
{
	struct bfc *b = self->b;
	struct bfc_stats before, after;

	ASSERT_EQ(0, FREE(b, self->h[1]));
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	bfc_get_stats(b, &before);
	EXPECT_EQ(-EINVAL, FREE(b, BFC_NO_CHUNK));
	EXPECT_EQ(-EINVAL, FREE(b, 0xffffffffu));		/* out of range */
	EXPECT_EQ(-EINVAL, FREE(b, 1000));			/* never used */
	EXPECT_EQ(-EINVAL, FREE(b, self->h[1]));		/* already free */
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, self->a[1]));		/* already free */
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, self->a[0] + 256));	/* mid-chunk */
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, self->a[0] + 1));
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, 0));			/* no region */
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, UINT64_MAX));
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, 0x41000));		/* free tail */
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, 0x50000));		/* region end */
	bfc_get_stats(b, &after);
	EXPECT_EQ(before.bad_frees + 11, after.bad_frees);
	after.bad_frees = before.bad_frees;
	EXPECT_EQ(0, memcmp(&before, &after, sizeof(before)));
	/* The live chunks are untouched. */
	EXPECT_EQ(0, FREE(b, self->h[0]));
	EXPECT_EQ(0, FREE(b, self->h[2]));
	EXPECT_EQ(0, FREE_ADDR(b, self->a[3]));
}

/* A freed handle is recycled only once its chunk has disappeared. */
TEST_F(four, handle_recycling)
{
	struct bfc *b = self->b;
	bfc_handle_t h;

	ASSERT_EQ(0, FREE(b, self->h[0]));
	ASSERT_EQ(0, FREE(b, self->h[1]));	/* merges into h[0]: slot freed */
	EXPECT_EQ(-EINVAL, bfc_chunk_info(b, self->h[1], &(struct bfc_chunk_info){ 0 }));
	EXPECT_EQ(-EINVAL, bfc_set_tag(b, self->h[1], 1));
	EXPECT_EQ(0x800, bt_info(b, self->h[0]).size);
	/* A split hands the front out in a new slot, h[1]'s, and h[0]
	 * keeps the rest.
	 */
	EXPECT_EQ(0x40000, ALLOC_OK(b, 256, &h));
	EXPECT_EQ(self->h[1], h);
	EXPECT_EQ(0x40100, bt_info(b, self->h[0]).addr);
	EXPECT_EQ(0x40100, ALLOC_OK(b, 0x700, &h));	/* the rest, whole */
	EXPECT_EQ(self->h[0], h);
}

TEST_F(four, lookup_and_tags)
{
	struct bfc *b = self->b;
	struct bfc_chunk_info i;
	bfc_handle_t h = 0;
	int k;

	for (k = 0; k < 4; k++) {
		ASSERT_EQ(0, bfc_lookup(b, self->a[k], &h));
		EXPECT_EQ(self->h[k], h);
	}
	EXPECT_EQ(0, bfc_lookup(b, self->a[0], NULL));
	EXPECT_EQ(-ENOENT, bfc_lookup(b, self->a[0] + 256, &h));
	EXPECT_EQ(-ENOENT, bfc_lookup(b, 0x41000, &h));	/* free chunk */

	EXPECT_EQ(0, bfc_set_tag(b, self->h[2], 0xfeedull << 40));
	i = bt_info(b, self->h[2]);
	EXPECT_EQ(0xfeedull << 40, i.tag);
	EXPECT_EQ(0x40800, i.addr);
	EXPECT_EQ(1024, i.size);
	EXPECT_EQ(1000, i.requested);
	EXPECT_EQ(3, i.alloc_id);
	EXPECT_EQ(1, i.region_id);
	EXPECT_EQ(2, i.bin);
	EXPECT_TRUE(i.in_use);
	ASSERT_EQ(0, FREE(b, self->h[2]));
	EXPECT_EQ(-EINVAL, bfc_set_tag(b, self->h[2], 1));
	EXPECT_EQ(-EINVAL, bfc_set_tag(b, 0, 1));
	/* A free chunk reports no request, id or tag. */
	i = bt_info(b, self->h[2]);
	EXPECT_FALSE(i.in_use);
	EXPECT_EQ(0, i.requested);
	EXPECT_EQ(0, i.alloc_id);
	EXPECT_EQ(0, i.tag);
	/* Tags are cleared on allocation. */
	ASSERT_EQ(0x40800, ALLOC_OK(b, 1024, &h));
	EXPECT_EQ(0, bt_info(b, h).tag);
	EXPECT_EQ(5, bt_info(b, h).alloc_id);
	EXPECT_EQ(-EINVAL, bfc_chunk_info(b, 0, &i));
	EXPECT_EQ(-EINVAL, bfc_chunk_info(b, 0xffffffffu, &i));
	EXPECT_EQ(-EINVAL, bfc_chunk_info(b, h, NULL));
}

/* Free by address at scale: the index grows, survives deletions (backward
 * shift), and finds every live chunk.
 */
TEST(address_index_at_scale)
{
	struct bfc *b = bt_create(4096, 0, 4096, 0, 0);
	const int n = 20000;
	int i;

	ASSERT_EQ(0, ADD(b, 1ull << 40, (uint64_t)n * 4096, NULL));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, bfc_alloc(b, 4096, NULL, NULL));
	CHECK(b);
	/* Free in a scrambled order, checking lookups along the way. */
	for (i = 0; i < n; i++) {
		uint64_t k = ((uint64_t)i * 7919) % n;
		bfc_handle_t h;

		ASSERT_EQ(0, bfc_lookup(b, (1ull << 40) + k * 4096, &h));
		ASSERT_EQ(0, bfc_free_addr(b, (1ull << 40) + k * 4096));
		ASSERT_EQ(-ENOENT, bfc_lookup(b, (1ull << 40) + k * 4096, &h));
		if (i % 4000 == 0)
			CHECK(b);
	}
	CHECK(b);
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(0, bt_stats(b).bad_frees);
	bfc_destroy(b);
}

TEST_HARNESS_MAIN
