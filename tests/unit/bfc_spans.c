// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_spans.c - bfc_free_spans(), the walk of free address space in whole
 * aligned blocks: checked against a reference computed block by block
 * from bfc_for_each_chunk(), over random allocations, frees and regions
 * (adjacent ones, merged or not, and apart).
 */
#include "bfc_test.h"

#define G	256ull		/* the allocator's granularity */
#define A	(4 * KiB)	/* the blocks asked for */
#define SPAN	(4 * MiB)	/* address space the regions live in */
#define NBLK	(SPAN / A)
#define MAXH	4096

struct spans {
	uint32_t n;
	uint64_t base[NBLK], size[NBLK];
};

static void record(void *ctx, uint64_t base, uint64_t size)
{
	struct spans *s = ctx;

	if (s->n < NBLK) {
		s->base[s->n] = base;
		s->size[s->n] = size;
	}
	s->n++;
}

/* Reference: a block is free when free chunks cover all of it. */
static uint64_t covered[NBLK];

static int cover(void *ctx, const struct bfc_chunk_info *c)
{
	uint64_t a;

	(void)ctx;
	if (c->in_use)
		return 0;
	for (a = c->addr; a < c->addr + c->size; a += G)
		covered[a / A] += G;
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* Compare; returns the number of differences. */
static int compare(const struct bfc *b)
{
	struct spans s = { 0 };
	uint64_t total, want = 0, i, j;
	int bad = 0;

	memset(covered, 0, sizeof(covered));
	bfc_for_each_chunk(b, cover, NULL);
	total = bfc_free_spans(b, A, record, &s);
	/* Walk the reference in runs of wholly free blocks. */
	j = 0;
	for (i = 0; i < NBLK; ) {
		uint64_t k = i;

		while (k < NBLK && covered[k] == A)
			k++;
		if (k > i) {
			if (j >= s.n || s.base[j] != i * A ||
			    s.size[j] != (k - i) * A)
				bad++;
			want += (k - i) * A;
			j++;
			i = k;
		} else {
			i++;
		}
	}
	if (j != s.n || total != want)
		bad++;
	return bad;
}

TEST(empty_and_bad_align)
{
	struct bfc *b = bt_create_tf(G);

	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, bfc_free_spans(b, A, NULL, NULL));
	ASSERT_EQ(0, ADD(b, 0, 64 * KiB, NULL));
	EXPECT_EQ(64 * KiB, bfc_free_spans(b, A, NULL, NULL));
	EXPECT_EQ(0, bfc_free_spans(b, 3 * KiB, NULL, NULL));
	EXPECT_EQ(0, bfc_free_spans(b, 0, NULL, NULL));
	bfc_destroy(b);
}

TEST(in_use_chunks_cut_runs)
{
	struct bfc *b = bt_create(G, 0, G, 0, 0);	/* always split */
	struct spans s = { 0 };
	bfc_handle_t h1, h2;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 64 * KiB, NULL));
	ALLOC_OK(b, 5 * KiB, &h1);		/* [0, 5K) */
	ALLOC_OK(b, 1 * KiB, &h2);		/* [5K, 6K) */
	ASSERT_EQ(0, FREE(b, h1));		/* free [0, 5K): one whole block */
	EXPECT_EQ(4 * KiB + 56 * KiB, bfc_free_spans(b, A, record, &s));
	ASSERT_EQ(2, s.n);
	EXPECT_EQ(0, s.base[0]);
	EXPECT_EQ(4 * KiB, s.size[0]);
	EXPECT_EQ(8 * KiB, s.base[1]);		/* [6K, 64K) -> [8K, 64K) */
	EXPECT_EQ(56 * KiB, s.size[1]);
	bfc_destroy(b);
}

TEST(random_against_reference)
{
	static bfc_handle_t h[MAXH];
	int round;

	for (round = 0; round < 40; round++) {
		uint32_t flags = round & 1 ? BFC_MERGE_ADJACENT_REGIONS : 0;
		struct bfc *b = bt_create(G, round % 3 ? 2 : 0,
					  round % 3 ? 128 * MiB : G, 0, flags);
		uint64_t base;
		int i, nh = 0;

		ASSERT_NE(NULL, b);
		/* Regions: some adjacent, some apart, unaligned edges. */
		for (base = rnd(8) * G; base < SPAN - 256 * KiB; ) {
			uint64_t size = (1 + rnd(512)) * G * (1 + rnd(8));

			if (base + size > SPAN)
				size = SPAN - base;
			ASSERT_EQ(0, ADD(b, base, size, NULL));
			base += size + (rnd(3) ? 0 : (1 + rnd(16)) * G);
		}
		for (i = 0; i < 3000; i++) {
			if (nh < MAXH && (nh == 0 || rnd(100) < 55)) {
				if (bfc_alloc(b, 1 + rnd(rnd(4) ? 8 * KiB : 96 * KiB),
					      &h[nh], NULL) == 0)
					nh++;
			} else {
				int k = (int)rnd((uint64_t)nh);

				ASSERT_EQ(0, bfc_free(b, h[k]));
				h[k] = h[--nh];
			}
			if (i % 100 == 0)
				ASSERT_EQ(0, compare(b)) TH_LOG("round %d op %d", round, i);
		}
		while (nh) {
			ASSERT_EQ(0, bfc_free(b, h[--nh]));
			if (nh % 50 == 0)
				ASSERT_EQ(0, compare(b));
		}
		CHECK(b);
		ASSERT_EQ(0, compare(b));
		bfc_destroy(b);
	}
}

TEST_HARNESS_MAIN
