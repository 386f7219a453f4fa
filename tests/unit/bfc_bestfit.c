// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_bestfit.c - the choice is TensorFlow's best fit exactly: the
 * smallest free chunk >= the rounded request, ties by the lowest address,
 * whatever the size classes: within one class (lower_bound, not the class
 * minimum), across classes (the next class's minimum, not the lowest
 * address), and with many equal-sized chunks freed in any order.
 */
#include "bfc_test.h"

#define G 256ull

/* An exact-size allocator over one big region, and a helper that leaves
 * free chunks of the given sizes (in granules), in address order,
 * separated by in-use granules, followed by an in-use rest.
 */
FIXTURE(layout) {
	struct bfc *b;
	uint64_t addr[64];
	bfc_handle_t h[64];
	int n;
};

FIXTURE_SETUP(layout)
{
	self->b = bt_create(G, 0, G, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 1 * GiB, 1 * GiB, NULL));
	self->n = 0;
}

FIXTURE_TEARDOWN(layout)
{
	bfc_destroy(self->b);
}

static void carve(struct __test_metadata *_metadata, FIXTURE_DATA(layout) *self,
		  const uint64_t *units, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		self->addr[i] = ALLOC_OK(self->b, units[i] * G, &self->h[i]);
		ALLOC_OK(self->b, 1, NULL);
	}
	ALLOC_OK(self->b, bt_stats(self->b).largest_free, NULL);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, FREE(self->b, self->h[i]));
	self->n = n;
	ASSERT_EQ(n, bt_stats(self->b).chunks_free);
}

TEST_F(layout, ties_go_to_the_lowest_address)
{
	static const uint64_t u[] = { 3, 2, 3, 2, 5 };

	carve(_metadata, self, u, 5);
	EXPECT_EQ(self->addr[1], ALLOC_OK(self->b, 2 * G, NULL));
	EXPECT_EQ(self->addr[3], ALLOC_OK(self->b, 2 * G - 100, NULL));
	EXPECT_EQ(self->addr[0], ALLOC_OK(self->b, 3 * G, NULL));
	/* 1 byte: the smallest left is the second 3 (split, front part). */
	EXPECT_EQ(self->addr[2], ALLOC_OK(self->b, 1, NULL));
	EXPECT_EQ(self->addr[2] + G, ALLOC_OK(self->b, 2 * G, NULL));
	EXPECT_EQ(self->addr[4], ALLOC_OK(self->b, 1, NULL));
	EXPECT_EQ(-ENOMEM, ALLOC(self->b, 4 * G + 1, NULL, NULL));
}

/* 128..131 granules share a class: the pick inside it is a lower_bound. */
TEST_F(layout, inside_one_class)
{
	static const uint64_t u[] = { 131, 129, 130, 128, 140 };

	carve(_metadata, self, u, 5);
	EXPECT_EQ(self->addr[1], ALLOC_OK(self->b, 129 * G, NULL));
	EXPECT_EQ(self->addr[2], ALLOC_OK(self->b, 129 * G + 1, NULL));
	EXPECT_EQ(self->addr[0], ALLOC_OK(self->b, 128 * G + 1, NULL));
	/* Nothing >= 129 left in the class (128, and 131's 2-granule rest
	 * elsewhere): the next class's minimum, 140.
	 */
	EXPECT_EQ(self->addr[4], ALLOC_OK(self->b, 129 * G, NULL));
	EXPECT_EQ(self->addr[0] + 129 * G, ALLOC_OK(self->b, 1, NULL));
	EXPECT_EQ(self->addr[3], ALLOC_OK(self->b, 128 * G, NULL));
}

/* A class of many chunks of two sizes: n64 free chunks of 64 granules,
 * then 20 of 65 (one class holds both).  For every n64 from 1 to 40 (so
 * wherever the class index's nodes divide the two runs), a request for
 * 65 finds the first 65, not the class minimum or the next class.
 */
TEST_F(layout, inside_one_class_many_chunks)
{
	uint64_t u[60];
	int n64, i;

	for (n64 = 1; n64 <= 40; n64++) {
		bfc_destroy(self->b);
		self->b = bt_create(G, 0, G, 0, 0);
		ASSERT_NE(NULL, self->b);
		ASSERT_EQ(0, ADD(self->b, 1 * GiB, 1 * GiB, NULL));
		for (i = 0; i < n64 + 20; i++)
			u[i] = i < n64 ? 64 : 65;
		carve(_metadata, self, u, n64 + 20);
		EXPECT_EQ(self->addr[n64], ALLOC_OK(self->b, 64 * G + 1, NULL));
		EXPECT_EQ(self->addr[n64 + 1], ALLOC_OK(self->b, 65 * G, NULL));
		EXPECT_EQ(self->addr[0], ALLOC_OK(self->b, 64 * G, NULL));
	}
}

/* Across classes the smallest wins even at a higher address. */
TEST_F(layout, across_classes)
{
	static const uint64_t u[] = { 4000, 1000, 33, 32, 31, 64, 65 };

	carve(_metadata, self, u, 7);
	EXPECT_EQ(self->addr[4], ALLOC_OK(self->b, 31 * G, NULL));
	EXPECT_EQ(self->addr[3], ALLOC_OK(self->b, 31 * G, NULL));	/* 32, split */
	EXPECT_EQ(self->addr[2], ALLOC_OK(self->b, 32 * G + 1, NULL));
	EXPECT_EQ(self->addr[6], ALLOC_OK(self->b, 64 * G + 1, NULL));
	EXPECT_EQ(self->addr[3] + 31 * G, ALLOC_OK(self->b, 1, NULL));	/* the rest */
	EXPECT_EQ(self->addr[5], ALLOC_OK(self->b, 1, NULL));
	EXPECT_EQ(self->addr[1], ALLOC_OK(self->b, 66 * G, NULL));
	EXPECT_EQ(self->addr[1] + 66 * G, ALLOC_OK(self->b, 900 * G, NULL));
	EXPECT_EQ(self->addr[0], ALLOC_OK(self->b, 1000 * G, NULL));
}

/* Every size from 1 to 48 granules and a few large ones, freed in a
 * scrambled order; each request must get the brute-force best fit.
 */
TEST_F(layout, brute_force_agreement)
{
	uint64_t u[64], want, s;
	bool used[64] = { false };
	int i, k, best;

	for (i = 0; i < 64; i++)
		u[i] = i < 48 ? (uint64_t)((i * 29) % 48) + 1 : 1000 + (uint64_t)(i % 7) * 333;
	carve(_metadata, self, u, 64);
	for (k = 0; k < 200; k++) {
		s = (k * 7919ull) % (1700 * G) + 1;
		best = -1;
		for (i = 0; i < 64; i++)
			if (!used[i] && u[i] * G >= (s + G - 1) / G * G &&
			    (best < 0 || u[i] < u[best]))
				best = i;
		if (best < 0) {
			EXPECT_EQ(-ENOMEM, ALLOC(self->b, s, NULL, NULL));
			continue;
		}
		want = self->addr[best];
		EXPECT_EQ(want, ALLOC_OK(self->b, s, NULL));
		/* Exact sizes: the front is taken, the rest stays free. */
		u[best] -= (s + G - 1) / G;
		used[best] = u[best] == 0;
		self->addr[best] += (s + G - 1) / G * G;
	}
}

/* Many chunks of one size: allocation order is address order regardless
 * of the order they were freed in.
 */
TEST(equal_sizes_in_address_order)
{
	struct bfc *b = bt_create(4096, 0, 4096, 0, 0);
	const int n = 3000;
	static bfc_handle_t h[3000];
	static uint64_t a[3000];
	int i;

	ASSERT_EQ(0, ADD(b, 0, 2ull * n * 4096, NULL));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, bfc_alloc(b, 4096, &h[i], &a[i]));
		ASSERT_EQ(0, bfc_alloc(b, 4096, NULL, NULL));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, bfc_free(b, h[(i * 1543) % n]));
	CHECK(b);
	for (i = 0; i < n; i++) {
		uint64_t x;

		ASSERT_EQ(0, bfc_alloc(b, 1 + i % 4096, NULL, &x));
		ASSERT_EQ(a[i], x);
	}
	CHECK(b);
	EXPECT_EQ(0, bt_stats(b).chunks_free);
	bfc_destroy(b);
}

TEST_HARNESS_MAIN
