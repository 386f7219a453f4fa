// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_diag.c - the text reports: exact occupancy pictures, the chunk and
 * bin dumps of a known layout, snprintf-style truncation and lengths.
 */
#include "bfc_test.h"

/* Region 1: [0x10000, +4 KiB) holding A (1 KiB, in use), B (256, free),
 * C (512, in use), free rest; region 2: [0x20000, +1 KiB) all in use.
 */
FIXTURE(diag) {
	struct bfc *b;
	bfc_handle_t a, c, d;
	char buf[4096];
};

FIXTURE_SETUP(diag)
{
	bfc_handle_t bh;

	self->b = bt_create(256, 0, 256, 0, 0);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, ADD(self->b, 0x10000, 4096, NULL));
	EXPECT_EQ(0x10000, ALLOC_OK(self->b, 1000, &self->a));
	EXPECT_EQ(0x10400, ALLOC_OK(self->b, 256, &bh));
	EXPECT_EQ(0x10500, ALLOC_OK(self->b, 500, &self->c));
	ASSERT_EQ(0, FREE(self->b, bh));
	ASSERT_EQ(0, ADD(self->b, 0x20000, 1024, NULL));
	EXPECT_EQ(0x20000, ALLOC_OK(self->b, 1024, &self->d));
	ASSERT_EQ(0, bfc_set_tag(self->b, self->c, 0xabc));
}

FIXTURE_TEARDOWN(diag)
{
	bfc_destroy(self->b);
}

TEST_F(diag, occupancy_exact)
{
	const char *want8 = "Region 1: **++....\nRegion 2: ********\n";
	size_t n;

	n = bfc_render_occupancy(self->b, self->buf, sizeof(self->buf), 8);
	EXPECT_STREQ(want8, self->buf);
	EXPECT_EQ(strlen(want8), n);
	/* Cells that do not fall on chunk boundaries: floor(4096 * i / 3). */
	bfc_render_occupancy(self->b, self->buf, sizeof(self->buf), 3);
	EXPECT_STREQ("Region 1: ++.\nRegion 2: ***\n", self->buf);
	/* More cells than granules. */
	bfc_render_occupancy(self->b, self->buf, sizeof(self->buf), 20);
	EXPECT_STREQ("Region 1: *****.+*+...........\nRegion 2: ********************\n",
		     self->buf);
	/* Width 0 means TF's 100. */
	n = bfc_render_occupancy(self->b, self->buf, sizeof(self->buf), 0);
	EXPECT_EQ(2 * (strlen("Region 1: ") + 100 + 1), n);
}

TEST(occupancy_empty)
{
	struct bfc *b = bt_create_tf(256);
	char buf[64];

	EXPECT_EQ(strlen("<allocator contains no memory>\n"),
		  bfc_render_occupancy(b, buf, sizeof(buf), 10));
	EXPECT_STREQ("<allocator contains no memory>\n", buf);
	bfc_destroy(b);
}

TEST_F(diag, chunks_exact)
{
	char want[1024];

	snprintf(want, sizeof(want),
		 "Region 1 at 0x10000 of size 4096\n"
		 "InUse at 0x10000 of size 1024 requested 1000 alloc_id 1 tag 0x0 handle %u\n"
		 "Free  at 0x10400 of size 256 handle %u\n"
		 "InUse at 0x10500 of size 512 requested 500 alloc_id 3 tag 0xabc handle %u\n"
		 "Free  at 0x10700 of size 2304 handle %u\n"
		 "Region 2 at 0x20000 of size 1024\n"
		 "InUse at 0x20000 of size 1024 requested 1024 alloc_id 4 tag 0x0 handle %u\n",
		 self->a, bt_handle_at(self->b, 0x10400), self->c,
		 bt_handle_at(self->b, 0x10700), self->d);
	EXPECT_EQ(strlen(want), bfc_dump_chunks(self->b, self->buf, sizeof(self->buf)));
	EXPECT_STREQ(want, self->buf);
}

TEST_F(diag, bins_exact)
{
	const char *want =
		"BFC: 2 regions, 5120B reserved, 2560B in use, 2524B requested, 3 chunks in use, 2 free, largest free 2304B\n"
		"Bin (256): \tTotal Chunks: 1, Chunks in use: 0. 256B allocated for chunks. 0B in use in bin. 0B client-requested in use in bin.\n"
		"Bin (512): \tTotal Chunks: 1, Chunks in use: 1. 512B allocated for chunks. 512B in use in bin. 500B client-requested in use in bin.\n"
		"Bin (1024): \tTotal Chunks: 2, Chunks in use: 2. 2048B allocated for chunks. 2048B in use in bin. 2024B client-requested in use in bin.\n"
		"Bin (2048): \tTotal Chunks: 1, Chunks in use: 0. 2304B allocated for chunks. 0B in use in bin. 0B client-requested in use in bin.\n"
		"Sum Total of in-use chunks: 2560B\n";

	EXPECT_EQ(strlen(want), bfc_dump_bins(self->b, self->buf, sizeof(self->buf)));
	EXPECT_STREQ(want, self->buf);
}

/* Every report: the return value is the full length; a short buffer gets a
 * NUL-terminated prefix; NULL with length 0 only measures.
 */
TEST_F(diag, truncation)
{
	size_t (*fns[3])(const struct bfc *, char *, size_t) = {
		bfc_dump_bins, bfc_dump_chunks, NULL,
	};
	char full[4096], small[40];
	size_t n, i, len;

	for (i = 0; i < 3; i++) {
		n = fns[i] ? fns[i](self->b, full, sizeof(full)) :
			     bfc_render_occupancy(self->b, full, sizeof(full), 50);
		ASSERT_EQ(strlen(full), n);
		for (len = 0; len <= sizeof(small); len++) {
			memset(small, 'X', sizeof(small));
			EXPECT_EQ(n, fns[i] ? fns[i](self->b, small, len) :
				  bfc_render_occupancy(self->b, small, len, 50));
			if (len) {
				EXPECT_EQ(len - 1, strlen(small));
				EXPECT_EQ(0, strncmp(small, full, len - 1));
			} else {
				EXPECT_EQ('X', small[0]);
			}
		}
		EXPECT_EQ(n, fns[i] ? fns[i](self->b, NULL, 0) :
			  bfc_render_occupancy(self->b, NULL, 0, 50));
	}
	/* bfc_check too, with nothing to report. */
	memset(small, 'X', sizeof(small));
	EXPECT_EQ(0, bfc_check(self->b, small, sizeof(small)));
	EXPECT_EQ('\0', small[0]);
	EXPECT_EQ(0, bfc_check(self->b, NULL, 0));
}

TEST_HARNESS_MAIN
