// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_walk.c - bfc_walk_chunks(), the walk that stops and goes on after
 * the allocator changed: with no change it is bfc_for_each_chunk() in
 * slices; with changes between slices it visits in increasing address
 * order, each visit is a chunk as it was at that moment, and no chunk that
 * stayed the same from start to end is missed.
 */
#include "bfc_test.h"

#define MAX_CHUNKS	4096

struct seen {
	uint32_t n;
	uint64_t addr[MAX_CHUNKS], size[MAX_CHUNKS];
	int stop_after;		/* fn returns -1 at this visit (0: never) */
};

static int record(void *ctx, const struct bfc_chunk_info *c)
{
	struct seen *s = ctx;

	if (s->n < MAX_CHUNKS) {
		s->addr[s->n] = c->addr;
		s->size[s->n] = c->size;
	}
	s->n++;
	return s->stop_after && s->n == (uint32_t)s->stop_after ? -1 : 0;
}

static void snapshot(const struct bfc *b, struct seen *s)
{
	s->n = 0;
	s->stop_after = 0;
	bfc_for_each_chunk(b, record, s);
}

static bool has(const struct seen *s, uint64_t addr, uint64_t size)
{
	uint32_t i;

	for (i = 0; i < s->n && i < MAX_CHUNKS; i++)
		if (s->addr[i] == addr && s->size[i] == size)
			return true;
	return false;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* Three regions, two of them adjacent (not merged), cut into chunks of
 * which about half are free.
 */
FIXTURE(walk) {
	struct bfc *b;
	bfc_handle_t h[512];
	bool used[512];
	uint32_t nh;
	struct seen all, got;
};

FIXTURE_SETUP(walk)
{
	uint32_t i;

	self->b = bt_create(256, 0, 256, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 0x100000, 64 * KiB, NULL));
	ASSERT_EQ(0, ADD(self->b, 0x110000, 32 * KiB, NULL));
	ASSERT_EQ(0, ADD(self->b, 0x400000, 64 * KiB, NULL));
	for (self->nh = 0; self->nh < 200; self->nh++) {
		if (bfc_alloc(self->b, 256 * (1 + rnd(4)),
			      &self->h[self->nh], NULL))
			break;
		self->used[self->nh] = true;
	}
	for (i = 0; i < self->nh; i += 2) {
		ASSERT_EQ(0, FREE(self->b, self->h[i]));
		self->used[i] = false;
	}
	snapshot(self->b, &self->all);
	ASSERT_LT(50u, self->all.n);
	memset(&self->got, 0, sizeof(self->got));
}

FIXTURE_TEARDOWN(walk)
{
	bfc_destroy(self->b);
}

/* No change: any slice size gives exactly bfc_for_each_chunk's sequence. */
TEST_F(walk, slices_equal_for_each)
{
	uint32_t max, calls;
	int r;

	for (max = 0; max <= 9; max++) {
		struct bfc_cursor cur = { 0 };

		self->got.n = 0;
		calls = 0;
		do {
			r = bfc_walk_chunks(self->b, &cur, max, record, &self->got);
			ASSERT_LE(0, r);
			ASSERT_GT(10000u, ++calls);
		} while (r == BFC_WALK_MORE);
		ASSERT_EQ(self->all.n, self->got.n);
		EXPECT_EQ(0, memcmp(self->all.addr, self->got.addr,
				    self->all.n * sizeof(uint64_t)));
		EXPECT_EQ(0, memcmp(self->all.size, self->got.size,
				    self->all.n * sizeof(uint64_t)));
		EXPECT_EQ(max ? (self->all.n + max - 1) / max : 1, calls);
		/* A finished walk stays finished. */
		EXPECT_EQ(0, bfc_walk_chunks(self->b, &cur, max, record, &self->got));
		EXPECT_EQ(self->all.n, self->got.n);
	}
}

/* fn's non-zero return stops the walk; the cursor goes on after it. */
TEST_F(walk, fn_stops_and_resumes)
{
	struct bfc_cursor cur = { 0 };

	self->got.stop_after = 5;
	EXPECT_EQ(-1, bfc_walk_chunks(self->b, &cur, 0, record, &self->got));
	EXPECT_EQ(5u, self->got.n);
	self->got.stop_after = 0;
	EXPECT_EQ(0, bfc_walk_chunks(self->b, &cur, 0, record, &self->got));
	ASSERT_EQ(self->all.n, self->got.n);
	EXPECT_EQ(0, memcmp(self->all.addr, self->got.addr,
			    self->all.n * sizeof(uint64_t)));
}

/* An empty allocator, and one whose regions all went during the walk. */
TEST(walk_empty)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);
	struct bfc_cursor cur = { 0 };
	struct seen s = { 0 };
	uint32_t id;

	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, bfc_walk_chunks(b, &cur, 1, record, &s));
	EXPECT_EQ(0u, s.n);
	ASSERT_EQ(0, ADD(b, 0x1000, 512, NULL));
	ASSERT_EQ(0, ADD(b, 0x2000, 512, &id));
	EXPECT_EQ(BFC_WALK_MORE, bfc_walk_chunks(b, &cur, 1, record, &s));
	EXPECT_EQ(1u, s.n);
	ASSERT_EQ(0, REMOVE(b, id, NULL, NULL));
	EXPECT_EQ(0, bfc_walk_chunks(b, &cur, 1, record, &s));
	EXPECT_EQ(1u, s.n);
	bfc_destroy(b);
}

/* The hint, the chunk that was next, merged away and its slot reused
 * above the cursor: the walk must not jump there.  Granules of 256 B:
 * A B C D in use, then the rest, free.  Visit A; free A and B (B's slot
 * goes), take their 512 B back whole, allocate 256 B from the rest (the
 * front, handed out, gets B's slot, at 0x400).  C, D and what follows
 * are unchanged and must be visited.
 */
TEST(walk_hint_reused_above)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);
	bfc_handle_t a, bh, c, d, e;
	struct bfc_cursor cur = { 0 };
	struct seen s = { 0 };

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 4 * KiB, NULL));
	ALLOC_OK(b, 256, &a);
	ALLOC_OK(b, 256, &bh);
	EXPECT_EQ(0x200, ALLOC_OK(b, 256, &c));
	EXPECT_EQ(0x300, ALLOC_OK(b, 256, &d));
	EXPECT_EQ(BFC_WALK_MORE, bfc_walk_chunks(b, &cur, 1, record, &s));
	EXPECT_EQ(bh, cur.hint);
	ASSERT_EQ(0, FREE(b, a));
	ASSERT_EQ(0, FREE(b, bh));
	EXPECT_EQ(0, ALLOC_OK(b, 512, &a));
	EXPECT_EQ(0x400, ALLOC_OK(b, 256, &e));
	EXPECT_EQ(0x400, bt_info(b, bh).addr);	/* the slot, reused */
	EXPECT_EQ(0, bfc_walk_chunks(b, &cur, 0, record, &s));
	ASSERT_EQ(5u, s.n);
	EXPECT_EQ(0x000, s.addr[0]);
	EXPECT_EQ(0x200, s.addr[1]);
	EXPECT_EQ(0x300, s.addr[2]);
	EXPECT_EQ(0x400, s.addr[3]);
	EXPECT_EQ(0x500, s.addr[4]);
	bfc_destroy(b);
}

/* The cursor ends up inside a region's last chunk (the next chunk merged
 * into the one visited): the walk goes on in the region above, once.
 */
TEST(walk_region_ends_past_cursor)
{
	struct bfc *b = bt_create(256, 0, 256, 0, 0);
	bfc_handle_t x, y;
	struct bfc_cursor cur = { 0 };
	struct seen s = { 0 };
	int r, calls = 0;

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ADD(b, 0, 1 * KiB, NULL));
	ASSERT_EQ(0, ADD(b, 64 * KiB, 1 * KiB, NULL));
	EXPECT_EQ(0, ALLOC_OK(b, 512, &x));
	EXPECT_EQ(0x200, ALLOC_OK(b, 512, &y));
	EXPECT_EQ(BFC_WALK_MORE, bfc_walk_chunks(b, &cur, 1, record, &s));
	ASSERT_EQ(0, FREE(b, x));
	ASSERT_EQ(0, FREE(b, y));	/* merges into x: [0, 1 KiB) */
	do {
		r = bfc_walk_chunks(b, &cur, 1, record, &s);
		ASSERT_GT(10, ++calls);
	} while (r == BFC_WALK_MORE);
	EXPECT_EQ(0, r);
	ASSERT_EQ(2u, s.n);
	EXPECT_EQ(64 * KiB, s.addr[1]);
	bfc_destroy(b);
}

/* Random changes between slices of random size: visits in increasing
 * address order, each a chunk that existed when it was visited, and every
 * chunk present (same start and size) in every snapshot visited once.
 */
TEST_F(walk, changes_between_slices)
{
	static struct seen now, kept;
	uint32_t round, i, j;

	for (round = 0; round < 300; round++) {
		struct bfc_cursor cur = { 0 };
		uint64_t last_end = 0;
		uint32_t calls = 0;
		int r;

		self->got.n = 0;
		snapshot(self->b, &kept);
		do {
			uint32_t before = self->got.n;

			snapshot(self->b, &now);
			/* kept: the chunks unchanged in every snapshot so far */
			for (i = j = 0; i < kept.n; i++) {
				if (has(&now, kept.addr[i], kept.size[i])) {
					kept.addr[j] = kept.addr[i];
					kept.size[j++] = kept.size[i];
				}
			}
			kept.n = j;
			r = bfc_walk_chunks(self->b, &cur, 1 + (uint32_t)rnd(8),
					    record, &self->got);
			ASSERT_LE(0, r);
			ASSERT_GT(100000u, ++calls);
			for (i = before; i < self->got.n; i++) {
				ASSERT_TRUE(has(&now, self->got.addr[i],
						self->got.size[i]));
				ASSERT_LE(last_end, self->got.addr[i]);
				last_end = self->got.addr[i] + self->got.size[i];
			}
			/* Change something: free, allocate, or both. */
			for (i = (uint32_t)rnd(3); i > 0; i--) {
				j = (uint32_t)rnd(self->nh);
				if (self->used[j])
					ASSERT_EQ(0, FREE(self->b, self->h[j]));
				self->used[j] = !self->used[j] &&
					!ALLOC(self->b, 256 * (1 + rnd(6)),
					       &self->h[j], NULL);
			}
		} while (r == BFC_WALK_MORE);
		snapshot(self->b, &now);
		for (i = 0; i < kept.n; i++) {
			if (!has(&now, kept.addr[i], kept.size[i]))
				continue;
			ASSERT_TRUE(has(&self->got, kept.addr[i], kept.size[i]))
				TH_LOG("round %u: kept chunk 0x%" PRIx64 "+%" PRIu64 " not visited",
				       round, kept.addr[i], kept.size[i]);
		}
	}
}

TEST_HARNESS_MAIN
