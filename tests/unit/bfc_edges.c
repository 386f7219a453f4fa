// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_edges.c - allocation edge cases: parameters, size 0 and 1, exact
 * fits, TensorFlow's split rule at its boundaries, the open-ended last bin,
 * sizes near UINT64_MAX, max_split_size, the placement policies.
 */
#include "bfc_test.h"

TEST(params)
{
	struct bfc_params p;
	struct bfc *b = (struct bfc *)1;

	bfc_params_default(&p, 256);
	EXPECT_EQ(256, p.granularity);
	EXPECT_EQ(2, p.split_ratio);
	EXPECT_EQ(128 * MiB, p.split_threshold);
	EXPECT_EQ(0, p.max_split_size);
	EXPECT_EQ(0, p.flags);

	p.granularity = 0;
	EXPECT_EQ(-EINVAL, bfc_create(&b, &p));
	EXPECT_EQ(NULL, b);
	p.granularity = 384;
	EXPECT_EQ(-EINVAL, bfc_create(&b, &p));
	p.granularity = 256;
	p.flags = 0x80;
	EXPECT_EQ(-EINVAL, bfc_create(&b, &p));
	EXPECT_EQ(-EINVAL, bfc_create(&b, NULL));
	EXPECT_EQ(-EINVAL, bfc_create(NULL, &p));
	p.flags = BFC_MERGE_ADJACENT_REGIONS;
	p.granularity = 1;
	ASSERT_EQ(0, bfc_create(&b, &p));
	CHECK(b);
	bfc_destroy(b);
	bfc_destroy(NULL);
}

/* Policies: names both ways, an unknown one refused. */
TEST(policy_names)
{
	static const char *const names[] = { "tf", "exact", "seg", "half", "age" };
	struct bfc_params p;
	struct bfc *b = (struct bfc *)1;
	uint32_t i;

	bfc_params_default(&p, 256);
	EXPECT_EQ(BFC_POLICY_TF, p.policy);
	EXPECT_EQ(1 * MiB, p.small_size);
	ASSERT_EQ(5, BFC_NR_POLICIES);
	for (i = 0; i < BFC_NR_POLICIES; i++) {
		EXPECT_STREQ(names[i], bfc_policy_name(i));
		EXPECT_EQ((int)i, bfc_policy_parse(names[i]));
	}
	EXPECT_EQ(NULL, bfc_policy_name(BFC_NR_POLICIES));
	EXPECT_EQ(-EINVAL, bfc_policy_parse("TF"));
	EXPECT_EQ(-EINVAL, bfc_policy_parse("tf "));
	EXPECT_EQ(-EINVAL, bfc_policy_parse("hal"));
	EXPECT_EQ(-EINVAL, bfc_policy_parse("halfs"));
	EXPECT_EQ(-EINVAL, bfc_policy_parse(""));
	EXPECT_EQ(-EINVAL, bfc_policy_parse(NULL));
	EXPECT_NE(NULL, bfc_policy_name(BFC_POLICY_DEFAULT));
	p.policy = BFC_NR_POLICIES;
	EXPECT_EQ(-EINVAL, bfc_create(&b, &p));
	EXPECT_EQ(NULL, b);
}

/* Where each policy puts a request in one free region of 64 KiB at 0,
 * granularity 256 and TF's split rule (ratio 2, threshold 128 MiB).
 */
static uint64_t place(struct __test_metadata *_metadata, uint32_t policy,
		      uint64_t small, const uint64_t *sizes, int n,
		      uint64_t *addrs)
{
	struct bfc_params p;
	struct bfc_stats st;
	struct bfc *b;
	int i;

	bfc_params_default(&p, 256);
	p.policy = policy;
	if (small)
		p.small_size = small;
	EXPECT_EQ(0, bfc_create(&b, &p));
	EXPECT_EQ(0, bfc_add_region(b, 0, 64 * KiB, NULL));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, bfc_alloc(b, sizes[i], NULL, &addrs[i]));
	CHECK(b);
	bfc_get_stats(b, &st);
	bfc_destroy(b);
	return st.in_use;
}

TEST(policy_placement)
{
	const uint64_t one[] = { 40 * KiB };
	const uint64_t low[] = { 8 * KiB, 16 * KiB, 4 * KiB };
	const uint64_t two[] = { 8 * KiB, 32 * KiB, 4 * KiB };
	uint64_t a[3];

	/* TF: 40 KiB of 64 is not split (64 < 2 x 40): the whole region. */
	EXPECT_EQ(64 * KiB, place(_metadata, BFC_POLICY_TF, 0, one, 1, a));
	EXPECT_EQ(0, a[0]);
	/* Every other policy splits to the rounded size; 40 KiB is not
	 * below the 24 KiB rest it leaves (half: low end), but below seg's
	 * small_size unless that is 40 KiB.
	 */
	EXPECT_EQ(40 * KiB, place(_metadata, BFC_POLICY_EXACT, 0, one, 1, a));
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(40 * KiB, place(_metadata, BFC_POLICY_HALF, 0, one, 1, a));
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(40 * KiB, place(_metadata, BFC_POLICY_SEGREGATE, 0, one, 1, a));
	EXPECT_EQ(24 * KiB, a[0]);
	EXPECT_EQ(40 * KiB, place(_metadata, BFC_POLICY_SEGREGATE, 40 * KiB, one, 1, a));
	EXPECT_EQ(0, a[0]);

	/* TF and exact: in address order from 0. */
	place(_metadata, BFC_POLICY_TF, 0, low, 3, a);
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(8 * KiB, a[1]);
	EXPECT_EQ(24 * KiB, a[2]);
	place(_metadata, BFC_POLICY_EXACT, 0, low, 3, a);
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(8 * KiB, a[1]);
	EXPECT_EQ(24 * KiB, a[2]);
	/* half: 8 KiB < its 56 KiB rest: at the top; 32 KiB of the 56 KiB
	 * left is not below its 24 KiB rest: at the bottom; 4 KiB of 24 KiB:
	 * at the top of that.
	 */
	place(_metadata, BFC_POLICY_HALF, 0, two, 3, a);
	EXPECT_EQ(56 * KiB, a[0]);
	EXPECT_EQ(0, a[1]);
	EXPECT_EQ(52 * KiB, a[2]);
	/* seg with small_size 16 KiB: 8 and 4 KiB at the top, 32 at the
	 * bottom.
	 */
	place(_metadata, BFC_POLICY_SEGREGATE, 16 * KiB, two, 3, a);
	EXPECT_EQ(56 * KiB, a[0]);
	EXPECT_EQ(0, a[1]);
	EXPECT_EQ(52 * KiB, a[2]);
}

/* age: split when the rest is at least 1/8 of the request; the request
 * beside the free chunk's older neighbour (edges are older than chunks).
 */
TEST(policy_age)
{
	const uint64_t one[] = { 40 * KiB };
	const uint64_t most[] = { 57 * KiB };
	const uint64_t edge[] = { 56 * KiB };
	const uint64_t three[] = { 8 * KiB, 16 * KiB, 4 * KiB, 4 * KiB };
	uint64_t a[4];

	/* 24 KiB of rest >= 5 KiB: split; both neighbours are edges: low. */
	EXPECT_EQ(40 * KiB, place(_metadata, BFC_POLICY_AGE, 0, one, 1, a));
	EXPECT_EQ(0, a[0]);
	/* 7 KiB of rest < 57/8 KiB: the whole region; 8 KiB >= 7 KiB: split. */
	EXPECT_EQ(64 * KiB, place(_metadata, BFC_POLICY_AGE, 0, most, 1, a));
	EXPECT_EQ(56 * KiB, place(_metadata, BFC_POLICY_AGE, 0, edge, 1, a));
	/* 8 KiB at 0; the rest [8, 64) lies between chunk 1 and the high
	 * edge (older): 16 KiB at its top, 48 KiB; then [8, 48) lies between
	 * chunks 1 (older) and 2: 4 KiB at 8 KiB; then [12, 48) between
	 * chunks 3 and 2 (older): 4 KiB at 44 KiB.
	 */
	EXPECT_EQ(32 * KiB, place(_metadata, BFC_POLICY_AGE, 0, three, 4, a));
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(48 * KiB, a[1]);
	EXPECT_EQ(8 * KiB, a[2]);
	EXPECT_EQ(44 * KiB, a[3]);
}

/* age: a rest below the request is split off only into an empty size
 * class.  Regions A (64 KiB at 0) and B (64 KiB at 1 MiB).  28 KiB at 0
 * leaves 36 KiB of A; 32 KiB fits it best, with a 4 KiB rest whose class
 * is empty: split, at A's top (beside the edge, older), the 4 KiB sliver
 * at 28 KiB stays free.  28 KiB from B leaves 36 KiB there (TF's rule
 * splits it); 32 KiB fits it with a 4 KiB rest again, but the sliver
 * holds that class now: the whole 36 KiB is handed out.  Once the sliver
 * is taken, the same request splits.
 */
TEST(policy_age_crowded_rest)
{
	struct bfc_chunk_info ci;
	struct bfc_params p;
	bfc_handle_t h;
	uint64_t a;
	struct bfc *b;

	bfc_params_default(&p, 256);
	p.policy = BFC_POLICY_AGE;
	ASSERT_EQ(0, bfc_create(&b, &p));
	ASSERT_EQ(0, bfc_add_region(b, 0, 64 * KiB, NULL));
	ASSERT_EQ(0, bfc_add_region(b, 1 * MiB, 64 * KiB, NULL));
	ASSERT_EQ(0, bfc_alloc(b, 28 * KiB, NULL, &a));
	EXPECT_EQ(0, a);
	ASSERT_EQ(0, bfc_alloc(b, 32 * KiB, &h, &a));
	ASSERT_EQ(0, bfc_chunk_info(b, h, &ci));
	EXPECT_EQ(32 * KiB, ci.addr);
	EXPECT_EQ(32 * KiB, ci.size);		/* split: a 4 KiB sliver */
	ASSERT_EQ(0, bfc_alloc(b, 28 * KiB, NULL, &a));
	EXPECT_EQ(1 * MiB, a);
	ASSERT_EQ(0, bfc_alloc(b, 32 * KiB, &h, &a));
	ASSERT_EQ(0, bfc_chunk_info(b, h, &ci));
	EXPECT_EQ(1 * MiB + 28 * KiB, ci.addr);
	EXPECT_EQ(36 * KiB, ci.size);		/* whole: the class is taken */
	CHECK(b);
	ASSERT_EQ(0, bfc_free(b, h));
	ASSERT_EQ(0, bfc_alloc(b, 4 * KiB, NULL, &a));
	EXPECT_EQ(28 * KiB, a);			/* the sliver */
	ASSERT_EQ(0, bfc_alloc(b, 32 * KiB, &h, &a));
	ASSERT_EQ(0, bfc_chunk_info(b, h, &ci));
	EXPECT_EQ(1 * MiB + 32 * KiB, ci.addr);
	EXPECT_EQ(32 * KiB, ci.size);		/* split: the class is empty */
	CHECK(b);
	bfc_destroy(b);
}

/* Size 0 is a caller error: -EINVAL, not counted as a failed allocation. */
TEST(size_zero_and_one)
{
	struct bfc *b = bt_create_tf(256);
	struct bfc_chunk_info i;
	bfc_handle_t h = 77;
	uint64_t a = 77;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(-EINVAL, ALLOC(b, 0, &h, &a));
	EXPECT_EQ(77, h);
	EXPECT_EQ(0, bt_stats(b).failed_allocs);
	/* No region yet. */
	ASSERT_EQ(-ENOMEM, ALLOC(b, 1, &h, &a));
	EXPECT_EQ(1, bt_stats(b).failed_allocs);
	ASSERT_EQ(0, ADD(b, 1 * MiB, 1 * MiB, NULL));
	ASSERT_EQ(-EINVAL, ALLOC(b, 0, NULL, NULL));
	ASSERT_EQ(0, ALLOC(b, 1, &h, &a));
	EXPECT_EQ(1 * MiB, a);
	i = bt_info(b, h);
	EXPECT_EQ(256, i.size);
	EXPECT_EQ(1, i.requested);
	EXPECT_EQ(1, i.alloc_id);
	EXPECT_TRUE(i.in_use);
	EXPECT_EQ(256, bt_stats(b).in_use);
	EXPECT_EQ(1, bt_stats(b).requested);
	/* Either out-pointer may be NULL. */
	ASSERT_EQ(0, ALLOC(b, 1, NULL, NULL));
	ASSERT_EQ(0, ALLOC(b, 1, &h, NULL));
	EXPECT_EQ(1 * MiB + 512, bt_info(b, h).addr);
	bfc_destroy(b);
}

TEST(exact_fit_uses_whole_region)
{
	struct bfc *b = bt_create_tf(256);
	bfc_handle_t h;

	ASSERT_EQ(0, ADD(b, 64 * KiB, 4 * KiB, NULL));
	EXPECT_EQ(64 * KiB, ALLOC_OK(b, 4 * KiB - 255, &h));
	EXPECT_EQ(4 * KiB, bt_info(b, h).size);
	EXPECT_EQ(0, bt_stats(b).chunks_free);
	EXPECT_EQ(-ENOMEM, ALLOC(b, 1, NULL, NULL));
	EXPECT_EQ(1, bt_stats(b).failed_allocs);
	EXPECT_EQ(0, FREE(b, h));
	EXPECT_EQ(4 * KiB, bt_stats(b).largest_free);
	bfc_destroy(b);
}

/* TF splits when chunk >= 2 * request, and keeps the front part. */
TEST(split_at_twice_not_below)
{
	struct bfc *b = bt_create_tf(256);
	bfc_handle_t h, h2;

	ASSERT_EQ(0, ADD(b, 0x10000, 1024, NULL));
	EXPECT_EQ(0x10000, ALLOC_OK(b, 512, &h));	/* 1024 = 2 * 512 */
	EXPECT_EQ(512, bt_info(b, h).size);
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	/* The 512-byte rest, asked for 257 (R = 512): exact, no split. */
	EXPECT_EQ(0x10200, ALLOC_OK(b, 257, &h2));
	EXPECT_EQ(512, bt_info(b, h2).size);
	EXPECT_EQ(0, FREE(b, h));
	EXPECT_EQ(0, FREE(b, h2));
	EXPECT_EQ(1, bt_stats(b).chunks_free);

	/* 1024 < 2 * 768: the request gets the whole chunk. */
	EXPECT_EQ(0x10000, ALLOC_OK(b, 513, &h));
	EXPECT_EQ(1024, bt_info(b, h).size);
	EXPECT_EQ(513, bt_info(b, h).requested);
	EXPECT_EQ(1024, bt_stats(b).in_use);
	EXPECT_EQ(513, bt_stats(b).requested);
	EXPECT_EQ(0, FREE(b, h));
	/* Just under twice, larger: 7936 for 4096. */
	ASSERT_EQ(0, ADD(b, 0x100000, 8192 - 256, NULL));
	EXPECT_EQ(0x100000, ALLOC_OK(b, 4096, &h));
	EXPECT_EQ(8192 - 256, bt_info(b, h).size);
	bfc_destroy(b);
}

/* The other half of TF's rule: leftover >= split_threshold. */
TEST(split_threshold)
{
	struct bfc *b = bt_create_tf(256);
	bfc_handle_t h;

	ASSERT_EQ(0, ADD(b, 1 * GiB, 400 * MiB, NULL));
	/* 400 MiB < 2 * 200.x MiB, but 200 MiB - 256 left >= 128 MiB. */
	EXPECT_EQ(1 * GiB, ALLOC_OK(b, 200 * MiB + 1, &h));
	EXPECT_EQ(200 * MiB + 256, bt_info(b, h).size);
	EXPECT_EQ(0, FREE(b, h));
	/* Leftover one granule short of 128 MiB: no split. */
	ASSERT_EQ(0, ADD(b, 2 * GiB, 200 * MiB + 128 * MiB - 256, NULL));
	EXPECT_EQ(2 * GiB, ALLOC_OK(b, 200 * MiB, &h));
	EXPECT_EQ(328 * MiB - 256, bt_info(b, h).size);
	bfc_destroy(b);
}

TEST(always_split_and_ratio_off)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);	/* exact sizes */
	bfc_handle_t h;

	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	EXPECT_EQ(0, ALLOC_OK(b, 300, &h));
	EXPECT_EQ(512, bt_info(b, h).size);
	EXPECT_EQ(512, ALLOC_OK(b, 1 * MiB - 768, &h));
	EXPECT_EQ(1 * MiB - 768, bt_info(b, h).size);
	bfc_destroy(b);

	b = bt_create(256, 0, 128 * MiB, 0, 0);	/* ratio test disabled */
	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	EXPECT_EQ(0, ALLOC_OK(b, 256, &h));
	EXPECT_EQ(1 * MiB, bt_info(b, h).size);
	bfc_destroy(b);

	/* split_ratio * request overflows: no split by ratio. */
	b = bt_create(256, UINT32_MAX, UINT64_MAX, 0, 0);
	ASSERT_EQ(0, ADD(b, 1ull << 41, 1ull << 41, NULL));
	EXPECT_EQ(1ull << 41, ALLOC_OK(b, 1ull << 40, &h));
	EXPECT_EQ(1ull << 41, bt_info(b, h).size);
	bfc_destroy(b);
}

TEST(bins_last_is_open_ended)
{
	struct bfc *b = bt_create_tf(256);
	bfc_handle_t h;

	EXPECT_EQ(0, bfc_bin_of(b, 0));
	EXPECT_EQ(0, bfc_bin_of(b, 256));
	EXPECT_EQ(0, bfc_bin_of(b, 511));
	EXPECT_EQ(1, bfc_bin_of(b, 512));
	EXPECT_EQ(30, bfc_bin_of(b, (256ull << 31) - 1));
	EXPECT_EQ(31, bfc_bin_of(b, 256ull << 31));
	EXPECT_EQ(31, bfc_bin_of(b, 1ull << 50));
	EXPECT_EQ(31, bfc_bin_of(b, UINT64_MAX));
	/* Chunks far beyond the last bin's bound work like any other. */
	ASSERT_EQ(0, ADD(b, 1ull << 52, 1ull << 51, NULL));
	EXPECT_EQ(1ull << 52, ALLOC_OK(b, 1ull << 49, &h));
	EXPECT_EQ(31, bt_info(b, h).bin);
	EXPECT_EQ((1ull << 52) + (1ull << 49), ALLOC_OK(b, 1ull << 49, &h));
	EXPECT_EQ((1ull << 51) - (2ull << 49), bt_stats(b).largest_free);
	bfc_destroy(b);
}

/* Granularities above 2^58: every size (a multiple of 2^59) has a class
 * of its own (bfc_internal.h), and best fit still holds among them.
 */
TEST(huge_granularity_classes)
{
	const uint64_t g = 1ull << 59;
	struct bfc *b = bt_create(g, 2, g, 0, 0);	/* always split */
	bfc_handle_t h2, h3, h4;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 16 * g, NULL));	/* [0, 2^63) */
	EXPECT_EQ(0, ALLOC_OK(b, g, NULL));
	EXPECT_EQ(g, ALLOC_OK(b, g, &h2));
	EXPECT_EQ(2 * g, ALLOC_OK(b, 2 * g, &h3));
	EXPECT_EQ(4 * g, ALLOC_OK(b, g, &h4));
	EXPECT_EQ(5 * g, ALLOC_OK(b, 5 * g, NULL));
	ASSERT_EQ(0, FREE(b, h2));
	ASSERT_EQ(0, FREE(b, h4));
	ASSERT_EQ(0, FREE(b, h3));		/* merges both: 4 granules at g */
	EXPECT_EQ(2, bt_stats(b).chunks_free);	/* and the tail: 6 at 10g */
	EXPECT_EQ(6 * g, bt_stats(b).largest_free);
	/* Best fit: 2 granules from the 4 at g, not from the 6 at 10g; then
	 * 1 from the 2 left at 3g; then 5 from the tail.
	 */
	EXPECT_EQ(g, ALLOC_OK(b, 2 * g, NULL));
	EXPECT_EQ(3 * g, ALLOC_OK(b, g, NULL));
	EXPECT_EQ(10 * g, ALLOC_OK(b, 5 * g, NULL));
	EXPECT_EQ(g, bt_stats(b).largest_free);
	EXPECT_EQ(2, bt_stats(b).chunks_free);	/* 1 at 4g, 1 at 15g */
	bfc_destroy(b);
}

TEST(sizes_near_uint64_max)
{
	struct bfc *b = bt_create_tf(256);
	/* A region may end at 2^64 - 256 at most (base + size must fit). */
	const uint64_t top = UINT64_MAX - 255;
	bfc_handle_t h;

	ASSERT_EQ(-EINVAL, ADD(b, top, 256, NULL));
	ASSERT_EQ(0, ADD(b, top - 2 * MiB, 2 * MiB, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, UINT64_MAX, NULL, NULL));	/* rounding overflows */
	EXPECT_EQ(-ENOMEM, ALLOC(b, UINT64_MAX - 254, NULL, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, UINT64_MAX - 255, NULL, NULL)); /* no overflow, no fit */
	EXPECT_EQ(-ENOMEM, ALLOC(b, 1ull << 63, NULL, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, 2 * MiB + 1, NULL, NULL));
	EXPECT_EQ(5, bt_stats(b).failed_allocs);
	/* The region at the top of the address space is usable to its end. */
	EXPECT_EQ(top - 2 * MiB, ALLOC_OK(b, 1 * MiB, &h));
	EXPECT_EQ(top - 1 * MiB, ALLOC_OK(b, 512 * KiB, NULL));
	/* 512 KiB < 2 * (512 KiB - 256): the last chunk, whole. */
	EXPECT_EQ(top - 512 * KiB, ALLOC_OK(b, 512 * KiB - 256, NULL));
	EXPECT_EQ(0, bt_stats(b).chunks_free);
	EXPECT_EQ(0, FREE_ADDR(b, top - 512 * KiB));
	EXPECT_EQ(0, FREE(b, h));
	EXPECT_EQ(2, bt_stats(b).chunks_free);
	bfc_destroy(b);
}

/* PyTorch's max_split_size: big chunks are never split, and small requests
 * never take them.
 */
TEST(max_split_size)
{
	struct bfc *b = bt_create(256, 2, 128 * MiB, 1 * MiB, 0);
	bfc_handle_t h, h2;

	ASSERT_EQ(0, ADD(b, 16 * MiB, 4 * MiB, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, 256, NULL, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, 1 * MiB - 256, NULL, NULL));
	EXPECT_EQ(2, bt_stats(b).failed_allocs);
	/* At least max_split_size once rounded: served whole. */
	EXPECT_EQ(16 * MiB, ALLOC_OK(b, 1 * MiB - 255, &h));
	EXPECT_EQ(4 * MiB, bt_info(b, h).size);
	EXPECT_EQ(0, FREE(b, h));
	/* A region below the limit splits as usual. */
	ASSERT_EQ(0, ADD(b, 32 * MiB, 768 * KiB, NULL));
	EXPECT_EQ(32 * MiB, ALLOC_OK(b, 256 * KiB, &h));
	EXPECT_EQ(256 * KiB, bt_info(b, h).size);
	EXPECT_EQ(32 * MiB + 256 * KiB, ALLOC_OK(b, 200 * KiB, &h2));
	EXPECT_EQ(200 * KiB, bt_info(b, h2).size);
	/* 3 MiB takes the big chunk whole; nothing is left for 2 MiB. */
	EXPECT_EQ(16 * MiB, ALLOC_OK(b, 3 * MiB, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(b, 2 * MiB, NULL, NULL));
	bfc_destroy(b);
}

/* Growing the metadata array keeps handles (and what they name) valid. */
TEST(handles_survive_growth)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);
	static bfc_handle_t h[5000];
	int i;

	ASSERT_EQ(0, ADD(b, 0, 5000 * 256, NULL));
	for (i = 0; i < 5000; i++)
		ASSERT_EQ(i * 256ull, ALLOC_OK(b, 100 + i % 156, &h[i]));
	for (i = 0; i < 5000; i++) {
		ASSERT_EQ(i * 256ull, bt_info(b, h[i]).addr);
		ASSERT_EQ(100 + i % 156ull, bt_info(b, h[i]).requested);
	}
	for (i = 0; i < 5000; i += 2)
		ASSERT_EQ(0, bfc_free(b, h[i]));
	CHECK(b);
	EXPECT_EQ(2500, bt_stats(b).chunks_free);
	for (i = 1; i < 5000; i += 2)
		ASSERT_EQ(0, bfc_free(b, h[i]));
	CHECK(b);
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	bfc_destroy(b);
}

TEST_HARNESS_MAIN
