// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_regions.c - regions: validation, no coalescing across regions,
 * removal (busy, unknown, free; handles die with their region),
 * bfc_remove_free_regions, BFC_MERGE_ADJACENT_REGIONS, bfc_free_at_top.
 */
#include "bfc_test.h"

TEST(add_validation)
{
	struct bfc *b = bt_create_tf(4096);
	uint32_t id1 = 0, id2 = 0, id = 99;

	ASSERT_EQ(-EINVAL, ADD(b, 0x100000, 0, &id));
	EXPECT_EQ(99, id);
	ASSERT_EQ(-EINVAL, ADD(b, 0x100800, 0x10000, NULL));	/* base */
	ASSERT_EQ(-EINVAL, ADD(b, 0x100000, 0x10800, NULL));	/* size */
	ASSERT_EQ(-EINVAL, ADD(b, UINT64_MAX - 0xfff, 0x2000, NULL)); /* wraps */
	ASSERT_EQ(-EINVAL, ADD(b, 1ull << 63, 1ull << 63, NULL));	/* ends at 2^64 */
	ASSERT_EQ(0, ADD(b, 0x100000, 0x10000, &id1));
	EXPECT_EQ(1, id1);
	/* Every kind of overlap: same, front, back, containing, contained. */
	ASSERT_EQ(-EINVAL, ADD(b, 0x100000, 0x10000, NULL));
	ASSERT_EQ(-EINVAL, ADD(b, 0xff000, 0x2000, NULL));
	ASSERT_EQ(-EINVAL, ADD(b, 0x10f000, 0x2000, NULL));
	ASSERT_EQ(-EINVAL, ADD(b, 0x0, 0x200000, NULL));
	ASSERT_EQ(-EINVAL, ADD(b, 0x101000, 0x1000, NULL));
	EXPECT_EQ(1, bt_stats(b).regions);
	EXPECT_EQ(0x10000, bt_stats(b).reserved);
	/* Adjacent on both sides is fine; address 0 is fine. */
	ASSERT_EQ(0, ADD(b, 0x110000, 0x1000, &id2));
	EXPECT_EQ(2, id2);
	ASSERT_EQ(0, ADD(b, 0xff000, 0x1000, NULL));
	ASSERT_EQ(0, ADD(b, 0, 0x1000, &id));
	EXPECT_EQ(4, id);
	EXPECT_EQ(4, bt_stats(b).regions);
	EXPECT_EQ(0x13000, bt_stats(b).reserved);
	EXPECT_EQ(0x13000, bt_stats(b).peak_reserved);
	EXPECT_EQ(4, bt_stats(b).chunks_free);
	/* Not merged: the biggest fit is the 64 KiB region. */
	EXPECT_EQ(-ENOMEM, ALLOC(b, 0x11000, NULL, NULL));
	EXPECT_EQ(0x100000, ALLOC_OK(b, 0x10000, NULL));
	bfc_destroy(b);
}

TEST(no_coalescing_across_regions)
{
	struct bfc *b = bt_create_tf(256);
	bfc_handle_t h1, h2;

	ASSERT_EQ(0, ADD(b, 0x10000, 0x1000, NULL));
	ASSERT_EQ(0, ADD(b, 0x11000, 0x1000, NULL));
	EXPECT_EQ(0x10000, ALLOC_OK(b, 0x1000, &h1));
	EXPECT_EQ(0x11000, ALLOC_OK(b, 0x1000, &h2));
	ASSERT_EQ(0, FREE(b, h1));
	ASSERT_EQ(0, FREE(b, h2));
	EXPECT_EQ(2, bt_stats(b).chunks_free);
	EXPECT_EQ(0x1000, bt_stats(b).largest_free);
	EXPECT_EQ(500000, bt_stats(b).fragmentation_ppm);
	EXPECT_EQ(-ENOMEM, ALLOC(b, 0x1100, NULL, NULL));
	bfc_destroy(b);
}

TEST(remove_region)
{
	struct bfc *b = bt_create_tf(256);
	uint32_t a, c;
	uint64_t base = 0, size = 0;
	bfc_handle_t h, h2;

	ASSERT_EQ(0, ADD(b, 0x100000, 0x10000, &a));
	ASSERT_EQ(0, ADD(b, 0x200000, 0x20000, &c));
	EXPECT_EQ(0x100000, ALLOC_OK(b, 0x100, &h));
	ASSERT_EQ(-EBUSY, REMOVE(b, a, &base, &size));
	EXPECT_EQ(0, base);
	ASSERT_EQ(-ENOENT, REMOVE(b, 0, NULL, NULL));
	ASSERT_EQ(-ENOENT, REMOVE(b, 77, NULL, NULL));
	/* Freed and coalesced back: removable. */
	ASSERT_EQ(0, FREE(b, h));
	ASSERT_EQ(0, REMOVE(b, a, &base, &size));
	EXPECT_EQ(0x100000, base);
	EXPECT_EQ(0x10000, size);
	EXPECT_EQ(0x20000, bt_stats(b).reserved);
	EXPECT_EQ(0x30000, bt_stats(b).peak_reserved);
	EXPECT_EQ(1, bt_stats(b).regions);
	ASSERT_EQ(-ENOENT, REMOVE(b, a, NULL, NULL));
	/* The whole-region chunk's handle dies with the region. */
	EXPECT_EQ(0x200000, ALLOC_OK(b, 0x20000, &h2));
	ASSERT_EQ(-EBUSY, REMOVE(b, c, NULL, NULL));
	ASSERT_EQ(0, FREE(b, h2));
	EXPECT_EQ(0x200000, bt_info(b, h2).addr);	/* still names the free chunk */
	EXPECT_FALSE(bt_info(b, h2).in_use);
	ASSERT_EQ(0, REMOVE(b, c, NULL, NULL));
	EXPECT_EQ(-EINVAL, bfc_chunk_info(b, h2, &(struct bfc_chunk_info){ 0 }));
	EXPECT_EQ(-EINVAL, FREE(b, h2));
	EXPECT_EQ(-EINVAL, FREE_ADDR(b, 0x200000));
	EXPECT_EQ(2, bt_stats(b).bad_frees);
	EXPECT_EQ(0, bt_stats(b).reserved);
	EXPECT_EQ(0, bt_stats(b).regions);
	EXPECT_EQ(0, bt_stats(b).chunks_free);
	/* Ids are not reused. */
	ASSERT_EQ(0, ADD(b, 0x100000, 0x10000, &a));
	EXPECT_EQ(3, a);
	bfc_destroy(b);
}

struct rel {
	uint64_t base[8], size[8];
	int n;
};

static void rel_cb(void *ctx, uint64_t base, uint64_t size)
{
	struct rel *r = ctx;

	r->base[r->n] = base;
	r->size[r->n] = size;
	r->n++;
}

TEST(remove_free_regions)
{
	struct bfc *b = bt_create_tf(256);
	struct rel r = { .n = 0 };
	bfc_handle_t h;

	/* Added out of order; released in address order. */
	ASSERT_EQ(0, ADD(b, 0x30000, 0x3000, NULL));
	ASSERT_EQ(0, ADD(b, 0x10000, 0x1000, NULL));
	ASSERT_EQ(0, ADD(b, 0x20000, 0x2000, NULL));
	EXPECT_EQ(0x20000, ALLOC_OK(b, 0x2000, &h));
	EXPECT_EQ(0x4000, bfc_remove_free_regions(b, rel_cb, &r));
	CHECK(b);
	ASSERT_EQ(2, r.n);
	EXPECT_EQ(0x10000, r.base[0]);
	EXPECT_EQ(0x1000, r.size[0]);
	EXPECT_EQ(0x30000, r.base[1]);
	EXPECT_EQ(0x3000, r.size[1]);
	EXPECT_EQ(1, bt_stats(b).regions);
	EXPECT_EQ(0, bfc_remove_free_regions(b, NULL, NULL));
	ASSERT_EQ(0, FREE(b, h));
	EXPECT_EQ(0x2000, bfc_remove_free_regions(b, NULL, NULL));
	CHECK(b);
	EXPECT_EQ(0, bt_stats(b).reserved);
	bfc_destroy(b);
}

TEST(merge_adjacent)
{
	struct bfc *b = bt_create(256, 2, 128 * MiB, 0, BFC_MERGE_ADJACENT_REGIONS);
	uint32_t a, id;
	uint64_t base, size;

	ASSERT_EQ(0, ADD(b, 1 * MiB, 1 * MiB, &a));
	ASSERT_EQ(0, ADD(b, 2 * MiB, 1 * MiB, &id));	/* after: absorbed */
	EXPECT_EQ(a, id);
	ASSERT_EQ(0, ADD(b, 512 * KiB, 512 * KiB, &id));	/* before */
	EXPECT_EQ(a, id);
	EXPECT_EQ(1, bt_stats(b).regions);
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(2560 * KiB, bt_stats(b).largest_free);
	ASSERT_EQ(0, ADD(b, 4 * MiB, 1 * MiB, &id));	/* apart */
	EXPECT_NE(a, id);
	ASSERT_EQ(2, bt_stats(b).regions);
	ASSERT_EQ(0, ADD(b, 3 * MiB, 1 * MiB, NULL));	/* joins both */
	EXPECT_EQ(1, bt_stats(b).regions);
	EXPECT_EQ(-ENOENT, REMOVE(b, id, NULL, NULL));
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	/* One chunk across all the old boundaries. */
	EXPECT_EQ(512 * KiB, ALLOC_OK(b, 4608 * KiB, NULL));
	EXPECT_EQ(0, bt_stats(b).chunks_free);
	bfc_destroy(b);

	b = bt_create(256, 2, 128 * MiB, 0, BFC_MERGE_ADJACENT_REGIONS);
	ASSERT_EQ(0, ADD(b, 1 * MiB, 1 * MiB, &a));
	ASSERT_EQ(0, ADD(b, 2 * MiB, 1 * MiB, NULL));
	ASSERT_EQ(0, REMOVE(b, a, &base, &size));	/* only as a whole */
	EXPECT_EQ(1 * MiB, base);
	EXPECT_EQ(2 * MiB, size);
	bfc_destroy(b);
}

/* In-use chunks at a boundary: the new region's chunk stays apart until
 * they are freed, then everything coalesces across the old boundary.
 */
TEST(merge_with_busy_boundaries)
{
	struct bfc *b = bt_create(256, 0, 256, 0, BFC_MERGE_ADJACENT_REGIONS);
	bfc_handle_t lo, hi, mid;
	uint32_t a, id;

	ASSERT_EQ(0, ADD(b, 1 * MiB, 64 * KiB, &a));
	ASSERT_EQ(0, ADD(b, 1 * MiB + 128 * KiB, 64 * KiB, NULL));
	EXPECT_EQ(1 * MiB, ALLOC_OK(b, 64 * KiB, &lo));
	EXPECT_EQ(1 * MiB + 128 * KiB, ALLOC_OK(b, 64 * KiB, &hi));
	ASSERT_EQ(0, ADD(b, 1 * MiB + 64 * KiB, 64 * KiB, &id));
	EXPECT_EQ(a, id);
	EXPECT_EQ(1, bt_stats(b).regions);
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(1 * MiB + 64 * KiB, ALLOC_OK(b, 64 * KiB, &mid));
	ASSERT_EQ(-EBUSY, REMOVE(b, a, NULL, NULL));
	ASSERT_EQ(0, FREE(b, lo));
	ASSERT_EQ(0, FREE(b, hi));
	EXPECT_EQ(2, bt_stats(b).chunks_free);
	ASSERT_EQ(0, FREE(b, mid));
	EXPECT_EQ(1, bt_stats(b).chunks_free);
	EXPECT_EQ(192 * KiB, bt_stats(b).largest_free);
	ASSERT_EQ(0, REMOVE(b, a, NULL, NULL));
	bfc_destroy(b);
}

struct walk {
	uint64_t last;
	int n, stop_at;
};

static int walk_cb(void *ctx, const struct bfc_chunk_info *c)
{
	struct walk *w = ctx;

	if (w->n && c->addr <= w->last)
		return -1;
	w->last = c->addr;
	return ++w->n == w->stop_at ? 42 : 0;
}

/* Many regions in scrambled order: the region arrays grow, walks stay in
 * address order, removal in the middle keeps the rest intact.
 */
TEST(many_regions)
{
	struct bfc *b = bt_create_tf(4096);
	struct walk w = { 0 };
	uint32_t ids[200];
	int i;

	for (i = 0; i < 200; i++) {
		uint64_t k = (i * 37) % 200;

		ASSERT_EQ(0, bfc_add_region(b, k * MiB, (k + 1) * 4096, &ids[k]));
	}
	CHECK(b);
	EXPECT_EQ(200, bt_stats(b).regions);
	EXPECT_EQ(0, bfc_for_each_chunk(b, walk_cb, &w));
	EXPECT_EQ(200, w.n);
	w = (struct walk){ .stop_at = 50 };
	EXPECT_EQ(42, bfc_for_each_chunk(b, walk_cb, &w));
	EXPECT_EQ(50, w.n);
	for (i = 0; i < 200; i += 2)
		ASSERT_EQ(0, bfc_remove_region(b, ids[i], NULL, NULL));
	CHECK(b);
	EXPECT_EQ(100, bt_stats(b).regions);
	/* Best fit over what is left: 100 KiB fits region 25 (104 KiB). */
	EXPECT_EQ(25 * MiB, ALLOC_OK(b, 100 * KiB, NULL));
	bfc_destroy(b);
}

/* The free chunk ending the highest region: what growing right above it
 * merges with, so a request needs only the rest (the module's growth).
 */
TEST(free_at_top)
{
	struct bfc *b = bt_create(4096, 0, 4096, 0, BFC_MERGE_ADJACENT_REGIONS);
	bfc_handle_t h1, h2;

	EXPECT_EQ(0, bfc_free_at_top(b));
	ASSERT_EQ(0, ADD(b, 8 * MiB, 1 * MiB, NULL));
	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));		/* below: not the top */
	EXPECT_EQ(1 * MiB, bfc_free_at_top(b));
	EXPECT_EQ(0, ALLOC_OK(b, 1 * MiB, NULL));	/* the low one, whole */
	EXPECT_EQ(1 * MiB, bfc_free_at_top(b));
	EXPECT_EQ(8 * MiB, ALLOC_OK(b, 256 * KiB, &h1));
	EXPECT_EQ(768 * KiB, bfc_free_at_top(b));
	EXPECT_EQ(8 * MiB + 256 * KiB, ALLOC_OK(b, 768 * KiB, &h2));
	EXPECT_EQ(0, bfc_free_at_top(b));		/* ends in use */
	ASSERT_EQ(0, FREE(b, h2));
	/* 2 MiB asked, 768 KiB free at the top: 1.25 MiB more above does. */
	EXPECT_EQ(-ENOMEM, ALLOC(b, 2 * MiB, NULL, NULL));
	ASSERT_EQ(0, ADD(b, 9 * MiB, 2 * MiB - bfc_free_at_top(b), NULL));
	EXPECT_EQ(8 * MiB + 256 * KiB, ALLOC_OK(b, 2 * MiB, NULL));
	EXPECT_EQ(0, bfc_free_at_top(b));
	ASSERT_EQ(0, FREE(b, h1));
	EXPECT_EQ(0, bfc_check(b, NULL, 0));
	bfc_destroy(b);
}

/* The free chunks beside a chunk: what a free merges, what an allocation
 * was cut from (the module keeps its per-bin figures with them).
 */
TEST(free_neighbours)
{
	struct bfc *b = bt_create(4096, 0, 4096, 0, 0);
	bfc_handle_t h1, h2, h3;
	uint64_t p = 1, n = 1;

	ASSERT_EQ(0, ADD(b, 0, 1 * MiB, NULL));
	EXPECT_EQ(0, ALLOC_OK(b, 64 * KiB, &h1));
	EXPECT_EQ(64 * KiB, ALLOC_OK(b, 64 * KiB, &h2));
	EXPECT_EQ(128 * KiB, ALLOC_OK(b, 64 * KiB, &h3));
	ASSERT_EQ(0, bfc_free_neighbours(b, h1, &p, &n));
	EXPECT_EQ(0, p);			/* the region's edge */
	EXPECT_EQ(0, n);			/* h2, in use */
	ASSERT_EQ(0, bfc_free_neighbours(b, h3, &p, &n));
	EXPECT_EQ(0, p);
	EXPECT_EQ(832 * KiB, n);		/* the rest of the region */
	ASSERT_EQ(0, FREE(b, h1));
	ASSERT_EQ(0, bfc_free_neighbours(b, h2, &p, &n));
	EXPECT_EQ(64 * KiB, p);
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, FREE(b, h3));
	ASSERT_EQ(0, bfc_free_neighbours(b, h2, &p, &n));
	EXPECT_EQ(64 * KiB, p);
	EXPECT_EQ(896 * KiB, n);
	/* A free chunk has no free neighbour; a freed handle is no chunk. */
	EXPECT_EQ(-EINVAL, bfc_free_neighbours(b, 0, &p, &n));
	EXPECT_EQ(-EINVAL, bfc_free_neighbours(b, 1u << 20, &p, &n));
	ASSERT_EQ(0, FREE(b, h2));
	EXPECT_EQ(-EINVAL, bfc_free_neighbours(b, h3, &p, &n));
	EXPECT_EQ(0, bfc_check(b, NULL, 0));
	bfc_destroy(b);
}

TEST_HARNESS_MAIN
