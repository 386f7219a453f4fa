// SPDX-License-Identifier: MIT
/*
 * host_exact: no power-of-two rounding.  A 129.5 MB request holds about
 * 129.5 MB (rounded to at most 2 MiB), not 256 MB; odd sizes likewise.
 */
#include "helpers.h"

static void check_holds(struct __test_metadata *_metadata, size_t size)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	void *p;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, size, 0, &p)) TH_LOG("%s", gp_last_error(ctx));
	memset(p, 0xab, size);
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	TH_LOG("%zu bytes asked: %llu reserved, %llu in use", size,
	       (unsigned long long)st.reserved, (unsigned long long)st.in_use);
	ASSERT_GE(st.reserved, size);
	ASSERT_LE(st.reserved, size + (2u << 20));
	ASSERT_LE(st.in_use, size + (2u << 20));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST(mb_129_5)
{
	struct rt rt;

	rt_load(&rt);
	check_holds(_metadata, 129500000);
}

/* Sizes one byte past a round figure; a power-of-two rounding would take
 * 64 MiB and 256 MiB.  The larger one stays under 256 MiB: the VM tests load
 * gpupool.ko with pool_size=256M, and on the kernel backend a buffer cannot
 * be larger than the module's pool (it would fail with -ENOMEM, "the pool is
 * full", which says nothing about rounding).
 */
TEST(odd_sizes)
{
	check_holds(_metadata, (40u << 20) + 1);
	check_holds(_metadata, 200000001);
}

TEST(shared_exact)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	void *p;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 129500000, GP_HOST_SHARED, &p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_LE(st.reserved, 129500000 + (2u << 20));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.reserved);	/* shared buffers are never cached */
	gp_close(ctx);
}

/* GP_OPEN_NO_HUGEPAGES: a shared buffer is page-rounded (the kernel's
 * page: 4 KiB, or 64 KiB on an arm64 kernel built so), never rounded up to
 * 2 MiB for huge pages (as the header says).
 */
TEST(shared_no_hugepages_page_rounded)
{
	/* ten pages short of 4 MiB: no multiple of 2 MiB with either */
	size_t size = (4u << 20) - 10 * (size_t)getpagesize();
	struct gp_host_stats st;
	struct gp_options o;
	struct gp_ctx *ctx;
	void *p;

	gp_options_init(&o);
	o.flags = GP_OPEN_NO_HUGEPAGES;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, size, GP_HOST_SHARED, &p));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ(size, st.reserved);
	EXPECT_EQ(0, st.segments_huge);
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST_HARNESS_MAIN
