// SPDX-License-Identifier: MIT
/*
 * host_page_size: the host pools' promises follow the page size, as on an
 * arm64 kernel with 16 or 64 KiB pages: blocks of 512 bytes up to 1 MiB,
 * page-aligned above (64 KiB there), a shared buffer page-rounded, segments
 * whole pages, the granularity gp_info() reports.  The library's test hook
 * (gp_page_size_test) gives a context the larger page on this machine's
 * 4 KiB pages, of which it is a multiple, on the user backend (the kernel
 * backend takes the module's granularity: tests/vm in a 64 KiB VM).
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include "helpers.h"

/* ctx.c's test hook: in no public header, hidden in the shared library;
 * this program links the library's objects.
 */
extern uint64_t gp_page_size_test;

FIXTURE(pg) {
	struct gp_ctx *ctx;
	uint64_t page;
};

FIXTURE_VARIANT(pg) {
	uint64_t page;
};

FIXTURE_VARIANT_ADD(pg, k16) { .page = 16384 };
FIXTURE_VARIANT_ADD(pg, k64) { .page = 65536 };

FIXTURE_SETUP(pg)
{
	struct gp_options o = { .backend = GP_BACKEND_USER };
	struct gp_info i;
	struct rt rt;

	rt_load(&rt);
	self->page = variant->page;
	gp_page_size_test = variant->page;
	OPEN(&o, &self->ctx);
	gp_page_size_test = 0;
	ASSERT_EQ(0, gp_info(self->ctx, &i));
	ASSERT_EQ(variant->page, i.host_granularity);
}

FIXTURE_TEARDOWN(pg)
{
	gp_close(self->ctx);
}

/*
 * Up to 1 MiB: 512-byte blocks, whatever the page; above: page-aligned.
 * Where a segment starts is mmap's, page-aligned on a kernel with that
 * page (here 4 KiB): what the library places is checked, the offsets
 * of large buffers in their segment (all three fit one of 20 MiB).
 */
TEST_F(pg, alignment_follows_the_page)
{
	static const size_t small[] = { 1, 513, 4097, 65535, 1 << 20 };
	static const size_t large[] = { (1 << 20) + 1, 3 << 20, (7 << 20) + 12345 };
	void *p[8];
	size_t i;

	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, gp_host_alloc(self->ctx, small[i], 0, &p[i]))
			TH_LOG("%s", gp_last_error(self->ctx));
		EXPECT_EQ(0, (uintptr_t)p[i] % 512);
		memset(p[i], 0x5a, small[i]);
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, gp_host_alloc(self->ctx, large[i], 0, &p[5 + i]))
			TH_LOG("%s", gp_last_error(self->ctx));
		EXPECT_EQ(0, ((uintptr_t)p[5 + i] - (uintptr_t)p[5]) % self->page)
			TH_LOG("%zu bytes at %p, the first at %p", large[i],
			       p[5 + i], p[5]);
		memset(p[5 + i], 0xa5, large[i]);
	}
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, gp_host_free(self->ctx, p[i]));
}

/* A shared buffer is its own segment of whole pages (at mmap's address);
 * another context imports exactly those bytes.
 */
TEST_F(pg, shared_rounds_to_the_page)
{
	struct gp_host_stats st;
	struct gp_ctx *other;
	size_t size = 0;
	void *p, *q;
	struct stat sb;
	int fd;

	ASSERT_EQ(0, gp_host_alloc(self->ctx, 1, GP_HOST_SHARED, &p));
	ASSERT_EQ(0, gp_host_stats(self->ctx, &st));
	EXPECT_EQ(self->page, st.reserved);
	fill(p, self->page, 3);
	ASSERT_EQ(0, gp_host_export(self->ctx, p, &fd));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ((off_t)self->page, sb.st_size);
	OPEN(NULL, &other);
	ASSERT_EQ(0, gp_host_import(other, fd, &q, &size));
	EXPECT_EQ(self->page, size);
	EXPECT_TRUE(check_fill(q, size, 3));
	EXPECT_EQ(0, gp_host_free(other, q));
	gp_close(other);
	close(fd);
	EXPECT_EQ(0, gp_host_free(self->ctx, p));
}

/* Segments are whole pages: a small segment of 1 MiB + 1 byte asked for
 * is rounded up to the page, and large ones hold whole pages too.
 */
TEST(small_segment_rounds_to_the_page)
{
	struct gp_options o = { .backend = GP_BACKEND_USER,
				.host_small_segment = (1 << 20) + 1 };
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p;

	rt_load(&rt);
	gp_page_size_test = 65536;
	OPEN(&o, &ctx);
	gp_page_size_test = 0;
	ASSERT_EQ(0, gp_host_alloc(ctx, 100, 0, &p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ((1 << 20) + 65536, st.reserved);
	EXPECT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(0, gp_host_alloc(ctx, (2 << 20) + 1, 0, &p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ(0, st.reserved % 65536);
	EXPECT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST_HARNESS_MAIN
