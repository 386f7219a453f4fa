// SPDX-License-Identifier: MIT
/*
 * host_nosyscall: small requests do not cost a system call each.  They are
 * packed into 2 MiB segments; the mapping counters in gp_host_stats (every
 * mmap / GPUPOOL_IOC_ALLOC is counted) show it.
 */
#include "helpers.h"

TEST(small_packed)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	static void *p[2000];
	unsigned int i;

	OPEN(NULL, &ctx);
	for (i = 0; i < 2000; i++)
		ASSERT_EQ(0, gp_host_alloc(ctx, 1000 + (i % 7) * 100, 0, &p[i]));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	/* ~3 MB of small buffers: two segments of 2 MiB. */
	TH_LOG("2000 small buffers: %llu map calls, %llu segments",
	       (unsigned long long)st.map_calls, (unsigned long long)st.segments);
	ASSERT_LE(st.map_calls, 2);
	for (i = 0; i < 2000; i++)
		ASSERT_EQ(0, gp_host_free(ctx, p[i]));
	gp_close(ctx);
}

TEST(cached_reuse)
{
	struct gp_host_stats a, b;
	struct gp_ctx *ctx;
	unsigned int i;
	void *p, *q;

	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 64 << 10, 0, &p));
	ASSERT_EQ(0, gp_host_alloc(ctx, 100 << 20, 0, &q));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(0, gp_host_free(ctx, q));
	ASSERT_EQ(0, gp_host_stats(ctx, &a));
	for (i = 0; i < 10000; i++) {
		ASSERT_EQ(0, gp_host_alloc(ctx, 1 + (i * 37) % (64 << 10), 0, &p));
		ASSERT_EQ(0, gp_host_alloc(ctx, (64 << 20) + (i % 100) * 4096, 0, &q));
		ASSERT_EQ(0, gp_host_free(ctx, q));
		ASSERT_EQ(0, gp_host_free(ctx, p));
	}
	ASSERT_EQ(0, gp_host_stats(ctx, &b));
	ASSERT_EQ(a.map_calls, b.map_calls);
	ASSERT_EQ(a.unmap_calls, b.unmap_calls);
	ASSERT_EQ(a.register_calls, b.register_calls);
	ASSERT_EQ(a.cache_hits + 20000, b.cache_hits);
	gp_close(ctx);
}

TEST_HARNESS_MAIN
