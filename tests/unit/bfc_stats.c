// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_stats.c - statistics are exact: bytes and counts in use, requested,
 * peaks and their reset, reserved, largest allocation and free chunk,
 * fragmentation in ppm (integer), per-bin totals.
 */
#include "bfc_test.h"

TEST(exact_running_stats)
{
	struct bfc *b = bt_create_tf(256);
	struct bfc_stats s;
	bfc_handle_t h1, h2, h3;
	uint32_t id;

	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	s = bt_stats(b);
	EXPECT_EQ(1 * MiB, s.reserved);
	EXPECT_EQ(1 * MiB, s.free_bytes);
	EXPECT_EQ(1 * MiB, s.largest_free);
	EXPECT_EQ(0, s.fragmentation_ppm);

	EXPECT_EQ(0, ALLOC_OK(b, 100, &h1));		/* 256, split */
	EXPECT_EQ(256, ALLOC_OK(b, 1000, &h2));		/* 1024, split */
	/* 1047296 left < 2 * 716800: taken whole. */
	EXPECT_EQ(1280, ALLOC_OK(b, 716800, &h3));
	s = bt_stats(b);
	EXPECT_EQ(1 * MiB, s.in_use);
	EXPECT_EQ(1 * MiB, s.peak_in_use);
	EXPECT_EQ(100 + 1000 + 716800, s.requested);
	EXPECT_EQ(1047296, s.largest_alloc);
	EXPECT_EQ(0, s.free_bytes);
	EXPECT_EQ(0, s.largest_free);
	EXPECT_EQ(0, s.fragmentation_ppm);
	EXPECT_EQ(3, s.nr_allocs);
	EXPECT_EQ(3, s.chunks_in_use);
	EXPECT_EQ(0, s.chunks_free);

	ASSERT_EQ(0, FREE(b, h3));
	ASSERT_EQ(0, FREE(b, h1));
	s = bt_stats(b);
	EXPECT_EQ(1024, s.in_use);
	EXPECT_EQ(1 * MiB, s.peak_in_use);
	EXPECT_EQ(1000, s.requested);
	EXPECT_EQ(1047552, s.free_bytes);
	EXPECT_EQ(1047296, s.largest_free);
	EXPECT_EQ(256ull * 1000000 / 1047552, s.fragmentation_ppm);	/* 244 */
	EXPECT_EQ(2, s.nr_frees);
	EXPECT_EQ(1, s.chunks_in_use);
	EXPECT_EQ(2, s.chunks_free);
	EXPECT_EQ(1047296, s.largest_alloc);		/* a high-water mark */

	bfc_reset_peaks(b);
	EXPECT_EQ(1024, bt_stats(b).peak_in_use);
	ASSERT_EQ(0, ADD(b, 1 * MiB + 4096, 1 * MiB, &id));
	EXPECT_EQ(2 * MiB, bt_stats(b).peak_reserved);
	ASSERT_EQ(0, REMOVE(b, id, NULL, NULL));
	s = bt_stats(b);
	EXPECT_EQ(1 * MiB, s.reserved);
	EXPECT_EQ(2 * MiB, s.peak_reserved);
	EXPECT_EQ(1, s.regions);
	bfc_reset_peaks(b);
	EXPECT_EQ(1 * MiB, bt_stats(b).peak_reserved);
	EXPECT_EQ(0, bt_stats(b).failed_allocs);
	EXPECT_EQ(0, bt_stats(b).bad_frees);
	bfc_destroy(b);
}

TEST(bin_stats)
{
	struct bfc *b = bt_create_tf(256);
	struct bfc_bin_stats bins[BFC_NR_BINS];
	bfc_handle_t h;
	int i;

	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	ALLOC_OK(b, 100, &h);
	ALLOC_OK(b, 1000, NULL);
	ALLOC_OK(b, 3000, NULL);
	ASSERT_EQ(0, FREE(b, h));
	/* [256 free][1024 used][3072 used][rest free] */
	bfc_get_bin_stats(b, bins);
	EXPECT_EQ(1, bins[0].free_chunks);
	EXPECT_EQ(256, bins[0].free_bytes);
	EXPECT_EQ(0, bins[0].in_use_chunks);
	EXPECT_EQ(1, bins[2].in_use_chunks);
	EXPECT_EQ(1024, bins[2].in_use_bytes);
	EXPECT_EQ(1000, bins[2].requested_bytes);
	EXPECT_EQ(1, bins[3].in_use_chunks);		/* 3072: [2048, 4096) */
	EXPECT_EQ(3072, bins[3].in_use_bytes);
	EXPECT_EQ(3000, bins[3].requested_bytes);
	EXPECT_EQ(1, bins[11].free_chunks);		/* 1044224: [512K, 1M) */
	EXPECT_EQ(1 * MiB - 4352, bins[11].free_bytes);
	for (i = 0; i < BFC_NR_BINS; i++)
		if (i != 0 && i != 2 && i != 3 && i != 11)
			EXPECT_EQ(0, bins[i].free_chunks + bins[i].in_use_chunks);
	bfc_destroy(b);
}

/* Beyond 2^44 free bytes the ratio is computed on scaled-down values: off
 * by at most a few ppm.
 */
TEST(fragmentation_huge)
{
	struct bfc *b = bt_create(4096, 0, 4096, 0, 0);
	const uint64_t big = 1ull << 50, small = 3ull << 47;
	uint64_t exact;
	bfc_handle_t h;

	ASSERT_EQ(0, ADD(b, 0, big, NULL));
	ASSERT_EQ(0, ADD(b, 1ull << 52, small, NULL));
	exact = (uint64_t)((unsigned __int128)small * 1000000 / (big + small));
	EXPECT_EQ(exact, bt_stats(b).fragmentation_ppm);
	EXPECT_EQ(big, bt_stats(b).largest_free);
	ALLOC_OK(b, 12345 * 4096 + 1, &h);
	exact = (uint64_t)((unsigned __int128)(small - 12346 * 4096) * 1000000 /
			   (big + small - 12346 * 4096));
	EXPECT_GE(exact + 2, bt_stats(b).fragmentation_ppm);
	EXPECT_LE(exact, bt_stats(b).fragmentation_ppm + 2);
	bfc_destroy(b);
}

/* The largest free chunk is the maximum of the top non-empty class, also
 * when that class holds several chunks (sizes 128..131 granules share one).
 */
TEST(largest_free)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);
	static const uint64_t units[] = { 4, 130, 9, 128, 131, 129, 5 };
	uint64_t max = 0;
	bfc_handle_t h[7];
	int i;

	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	for (i = 0; i < 7; i++) {	/* separated by in-use chunks */
		ALLOC_OK(b, units[i] * 256, &h[i]);
		ALLOC_OK(b, 256, NULL);
	}
	ALLOC_OK(b, bt_stats(b).largest_free, NULL);
	EXPECT_EQ(0, bt_stats(b).largest_free);
	for (i = 0; i < 7; i++) {
		ASSERT_EQ(0, FREE(b, h[i]));
		max = units[i] * 256 > max ? units[i] * 256 : max;
		EXPECT_EQ(max, bt_stats(b).largest_free);
	}
	max = bt_info(b, h[4]).addr;		/* the 131 */
	EXPECT_EQ(max, ALLOC_OK(b, 131 * 256, NULL));
	EXPECT_EQ(130 * 256, bt_stats(b).largest_free);
	ALLOC_OK(b, 129 * 256 + 1, NULL);	/* best fit: the 130 */
	EXPECT_EQ(129 * 256, bt_stats(b).largest_free);
	bfc_destroy(b);
}

TEST_HARNESS_MAIN
