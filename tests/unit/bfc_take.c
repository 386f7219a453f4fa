// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_take.c - bfc_take_free_spans() (free space in whole aligned blocks
 * taken out as in-use chunks, as the library's device pool does with the
 * granules it unmaps) and bfc_split() (an in-use chunk cut in two, so that
 * part of it can be freed): checked against a reference computed chunk by
 * chunk, with bfc_check() after each step, and freed back to the state
 * they started from.
 */
#include "bfc_test.h"

#define G	256ull		/* the allocator's granularity */
#define A	(4 * KiB)	/* the blocks asked for */
#define MAXH	4096
#define MAXT	4096

struct taken {
	uint32_t n;
	uint64_t base[MAXT], size[MAXT];
	uint64_t min;		/* take only spans of at least this */
};

static bool take(void *ctx, uint64_t base, uint64_t size)
{
	struct taken *t = ctx;

	if (size < t->min || t->n >= MAXT)
		return false;
	t->base[t->n] = base;
	t->size[t->n] = size;
	t->n++;
	return true;
}

/* Reference: per free chunk, its whole aligned blocks of at least min. */
struct ref {
	uint64_t min, bytes;
};

static int ref_chunk(void *ctx, const struct bfc_chunk_info *c)
{
	struct ref *r = ctx;
	uint64_t lo = (c->addr + A - 1) / A * A, hi = (c->addr + c->size) / A * A;

	if (!c->in_use && hi > lo && hi - lo >= r->min)
		r->bytes += hi - lo;
	return 0;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

TEST(bad_align_takes_nothing)
{
	struct bfc *b = bt_create_tf(G);

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 64 * KiB, NULL));
	EXPECT_EQ(0, bfc_take_free_spans(b, 3 * KiB, NULL, NULL));
	EXPECT_EQ(0, bfc_take_free_spans(b, 0, NULL, NULL));
	EXPECT_EQ(0, bfc_take_free_spans(b, G / 2, NULL, NULL));
	EXPECT_EQ(64 * KiB, bt_stats(b).free_bytes);
	CHECK(b);
	bfc_destroy(b);
}

TEST(take_cuts_whole_blocks_and_leaves_the_ends)
{
	struct bfc *b = bt_create(G, 0, G, 0, 0);	/* always split */
	struct taken t = { 0 };
	bfc_handle_t h1, h2, ht;
	struct bfc_chunk_info ci;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 64 * KiB, NULL));
	ALLOC_OK(b, 1 * KiB, &h1);		/* [0, 1K) */
	ALLOC_OK(b, 9 * KiB, &h2);		/* [1K, 10K) */
	ASSERT_EQ(0, FREE(b, h2));		/* free [1K, 64K) */
	EXPECT_EQ(60 * KiB, bfc_take_free_spans(b, A, take, &t));
	ASSERT_EQ(1, t.n);
	EXPECT_EQ(4 * KiB, t.base[0]);
	EXPECT_EQ(60 * KiB, t.size[0]);
	CHECK(b);
	/* An in-use chunk at the span, the end below it still free. */
	ASSERT_EQ(0, bfc_lookup(b, 4 * KiB, &ht));
	ci = bt_info(b, ht);
	EXPECT_TRUE(ci.in_use);
	EXPECT_EQ(60 * KiB, ci.size);
	EXPECT_EQ(3 * KiB, bt_stats(b).free_bytes);
	EXPECT_EQ(3 * KiB, bt_stats(b).largest_free);
	/* Best fit sees only what was left. */
	EXPECT_EQ(-BFC_ENOMEM, ALLOC(b, 4 * KiB, NULL, NULL));
	/* Freed again, it coalesces as before. */
	ASSERT_EQ(0, FREE(b, ht));
	EXPECT_EQ(63 * KiB, bt_stats(b).largest_free);
	ASSERT_EQ(0, FREE(b, h1));
	EXPECT_EQ(0, bt_stats(b).in_use);
	CHECK(b);
	bfc_destroy(b);
}

TEST(split_then_free_parts)
{
	struct bfc *b = bt_create(G, 0, G, 0, 0);
	bfc_handle_t h, r, r2;
	struct bfc_chunk_info ci;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 64 * KiB, NULL));
	ALLOC_OK(b, 16 * KiB - 100, &h);		/* [0, 16K) */
	ASSERT_EQ(0, bfc_set_tag(b, h, 7));
	EXPECT_EQ(-BFC_EINVAL, bfc_split(b, h, 0, &r));
	EXPECT_EQ(-BFC_EINVAL, bfc_split(b, h, 100, &r));	/* not a granule */
	EXPECT_EQ(-BFC_EINVAL, bfc_split(b, h, 16 * KiB, &r));
	EXPECT_EQ(-BFC_EINVAL, bfc_split(b, 999, 4 * KiB, &r));
	CHECK(b);
	ASSERT_EQ(0, bfc_split(b, h, 4 * KiB, &r));	/* [0,4K) [4K,16K) */
	ASSERT_EQ(0, bfc_split(b, r, 8 * KiB, &r2));	/* [4K,12K) [12K,16K) */
	CHECK(b);
	ci = bt_info(b, r);
	EXPECT_TRUE(ci.in_use);
	EXPECT_EQ(4 * KiB, ci.addr);
	EXPECT_EQ(8 * KiB, ci.size);
	EXPECT_EQ(7, ci.tag);
	EXPECT_EQ(4 * KiB, bt_info(b, h).requested);
	EXPECT_EQ(16 * KiB, bt_stats(b).in_use);
	EXPECT_EQ(3, bt_stats(b).chunks_in_use);
	/* Free the middle: the rest stays in use around it. */
	ASSERT_EQ(0, FREE(b, r));
	EXPECT_EQ(8 * KiB, bt_stats(b).in_use);
	EXPECT_EQ(48 * KiB, bt_stats(b).largest_free);
	CHECK(b);
	ASSERT_EQ(0, FREE(b, h));
	ASSERT_EQ(0, FREE(b, r2));
	EXPECT_EQ(64 * KiB, bt_stats(b).largest_free);
	EXPECT_EQ(0, bt_stats(b).requested);
	CHECK(b);
	bfc_destroy(b);
}

TEST(random_take_split_free_back)
{
	static bfc_handle_t h[MAXH];
	static struct taken t;
	int round;

	for (round = 0; round < 30; round++) {
		uint32_t flags = round & 1 ? BFC_MERGE_ADJACENT_REGIONS : 0;
		struct bfc *b = bt_create(G, round % 3 ? 2 : 0,
					  round % 3 ? 128 * MiB : G, 0, flags);
		struct bfc_stats before, after;
		struct ref ref = { 0, 0 };
		uint64_t base, got;
		int i, nh = 0;
		uint32_t k;

		ASSERT_NE(NULL, b);
		for (base = rnd(8) * G; base < 4 * MiB; ) {
			uint64_t size = (1 + rnd(512)) * G * (1 + rnd(8));

			ASSERT_EQ(0, ADD(b, base, size, NULL));
			base += size + (rnd(3) ? 0 : (1 + rnd(16)) * G);
		}
		for (i = 0; i < 2000; i++) {
			if (nh < MAXH && (nh == 0 || rnd(100) < 55)) {
				if (bfc_alloc(b, 1 + rnd(rnd(4) ? 8 * KiB : 96 * KiB),
					      &h[nh], NULL) == 0)
					nh++;
			} else {
				int j = (int)rnd((uint64_t)nh);

				ASSERT_EQ(0, bfc_free(b, h[j]));
				h[j] = h[--nh];
			}
		}
		before = bt_stats(b);
		memset(&t, 0, sizeof(t));
		t.min = round % 2 ? 0 : 3 * A;
		ref.min = t.min;
		bfc_for_each_chunk(b, ref_chunk, &ref);
		got = bfc_take_free_spans(b, A, take, &t);
		EXPECT_EQ(ref.bytes, got) TH_LOG("round %d", round);
		CHECK(b);
		EXPECT_EQ(before.in_use + got, bt_stats(b).in_use);
		/* Nothing taken is left: no whole block of min in the rest. */
		ref.bytes = 0;
		bfc_for_each_chunk(b, ref_chunk, &ref);
		EXPECT_EQ(0, ref.bytes);
		/* Give it back in pieces: split each span, free both parts. */
		for (k = 0; k < t.n; k++) {
			bfc_handle_t x, rest;

			ASSERT_EQ(0, bfc_lookup(b, t.base[k], &x));
			if (t.size[k] > A) {
				ASSERT_EQ(0, bfc_split(b, x, A, &rest));
				ASSERT_EQ(0, bfc_free(b, rest));
			}
			ASSERT_EQ(0, bfc_free(b, x));
		}
		CHECK(b);
		after = bt_stats(b);
		EXPECT_EQ(before.in_use, after.in_use);
		EXPECT_EQ(before.requested, after.requested);
		EXPECT_EQ(before.chunks_free, after.chunks_free);
		EXPECT_EQ(before.largest_free, after.largest_free);
		while (nh)
			ASSERT_EQ(0, bfc_free(b, h[--nh]));
		CHECK(b);
		EXPECT_EQ(0, bt_stats(b).in_use);
		bfc_destroy(b);
	}
}

TEST_HARNESS_MAIN
