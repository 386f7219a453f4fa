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

/* Sizes whose rounding (to pages, to 2 MiB) would wrap around: refused
 * with ENOMEM and a message, nothing mapped, the context still usable (the
 * libFuzzer harness of the kernel backend found GP_HOST_SHARED of
 * SIZE_MAX "succeeding" with a wrapped size).
 */
TEST(sizes_near_size_max)
{
	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2 + 1 };
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	unsigned int i, fl;
	void *p;

	OPEN(NULL, &ctx);
	for (i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		for (fl = 0; fl <= GP_HOST_SHARED; fl += GP_HOST_SHARED) {
			p = NULL;
			ASSERT_EQ(-ENOMEM, gp_host_alloc(ctx, huge[i], fl, &p));
			ASSERT_EQ(NULL, p);
			ASSERT_NE(NULL, strstr(gp_last_error(ctx), "bytes"));
		}
	}
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.reserved);
	ASSERT_EQ(6, st.failed);
	ASSERT_EQ(0, gp_host_alloc(ctx, 4096, 0, &p));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

/* Buffers left allocated at gp_close are released (LeakSanitizer and the
 * double check that nothing stays mapped or registered).  About 100 MB in
 * all, of the three kinds (small, large, shared): well inside the VM's
 * 256 MiB pool even with each kind's segment rounding (at 50 kB steps the
 * total, ~248 MB, plus 20 MiB large segments could exceed the pool).
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
		ASSERT_EQ(0, gp_host_alloc(ctx, 1000 + i * 20000, i % 3 ? 0 : GP_HOST_SHARED, &p));
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	if (rt.is_double) {
		struct cdd_counts c = rt_counts(&rt);

		ASSERT_EQ(0, c.registered);
		ASSERT_EQ(c.calls[CDD_HOST_REGISTER], c.calls[CDD_HOST_UNREGISTER]);
	}
}

TEST_HARNESS_MAIN
