// SPDX-License-Identifier: MIT
/*
 * host_alloc: buffers of many sizes are usable, aligned, distinct and
 * accounted; each segment is registered with CUDA exactly once; frees of
 * unknown pointers are refused; everything goes back at gp_close.
 */
#include "helpers.h"

static const size_t sizes[] = {
	1, 7, 512, 513, 4096, 65536, 100000, 1 << 20, (1 << 20) + 1,
	3 << 20, 11 << 20, 64 << 20,
};
#define NR (sizeof(sizes) / sizeof(sizes[0]))

TEST(sizes_usable)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	void *p[NR];
	size_t want = 0;
	unsigned int i;
	struct rt rt;

	rt_load(&rt);
	OPEN(NULL, &ctx);
	for (i = 0; i < NR; i++) {
		ASSERT_EQ(0, gp_host_alloc(ctx, sizes[i], 0, &p[i]))
			TH_LOG("%zu: %s", sizes[i], gp_last_error(ctx));
		ASSERT_EQ(0, (uintptr_t)p[i] % 512);
		if (sizes[i] > (1 << 20))
			ASSERT_EQ(0, (uintptr_t)p[i] % 4096);
		fill(p[i], sizes[i], i);
		want += sizes[i];
	}
	for (i = 0; i < NR; i++)
		ASSERT_TRUE(check_fill(p[i], sizes[i], i)) TH_LOG("buffer %u overwritten", i);
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(want, st.requested);
	ASSERT_GE(st.in_use, st.requested);
	ASSERT_GE(st.reserved, st.in_use);
	ASSERT_EQ(NR, st.allocs);
	if (rt.devices) {
		struct cdd_counts c = rt_counts(&rt);

		ASSERT_EQ(st.segments, st.registered);
		ASSERT_EQ(st.segments, st.register_calls);
		if (rt.is_double) {
			ASSERT_EQ(st.segments, c.registered);
			ASSERT_EQ(st.reserved, c.registered_bytes);
		}
	}
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, gp_host_free(ctx, p[i]));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.in_use);
	ASSERT_EQ(0, st.requested);
	ASSERT_EQ(st.reserved, st.idle);
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	if (rt.is_double)
		ASSERT_EQ(0, rt_counts(&rt).registered);
}

TEST(bad_free)
{
	struct gp_ctx *ctx;
	void *p;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 1000, 0, &p));
	ASSERT_EQ(-EINVAL, gp_host_free(ctx, (char *)p + 512));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(-EINVAL, gp_host_free(ctx, p));	/* twice */
	ASSERT_EQ(0, gp_host_free(ctx, NULL));
	ASSERT_EQ(-EINVAL, gp_host_alloc(ctx, 10, 0x100, &p));
	gp_close(ctx);
}

/* Buffers left allocated at gp_close are released (LeakSanitizer and the
 * double check that nothing stays mapped or registered).
 */
TEST(close_releases_everything)
{
	struct gp_ctx *ctx;
	unsigned int i;
	struct rt rt;
	void *p;

	rt_load(&rt);
	OPEN(NULL, &ctx);
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, gp_host_alloc(ctx, 1000 + i * 50000, i % 3 ? 0 : GP_HOST_SHARED, &p));
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	if (rt.is_double) {
		struct cdd_counts c = rt_counts(&rt);

		ASSERT_EQ(0, c.registered);
		ASSERT_EQ(c.calls[CDD_HOST_REGISTER], c.calls[CDD_HOST_UNREGISTER]);
	}
}

TEST_HARNESS_MAIN
