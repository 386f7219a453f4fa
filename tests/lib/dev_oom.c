// SPDX-License-Identifier: MIT
/*
 * dev_oom: what happens when cudaMalloc says no.  Refused growth backs off
 * (90% at a time) down to the request; when nothing fits, cached segments
 * of every stream are released and the allocation retried; pending frees
 * are waited for before out-of-memory; a real out-of-memory says so and,
 * with GPUPOOL_DEBUG, prints the memory map.
 */
#include "helpers.h"

/* These are the cudaMalloc segments' out-of-memory handling; the virtual mode's are in
 * dev_vmm.c, and dev_model.c runs the same random work in both modes.
 */
__attribute__((constructor)) static void segment_mode(void)
{
	setenv("GPUPOOL_DEV_MODE", "segments", 1);
}

TEST(backpedal)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.fail_malloc_above(100u << 20);
	OPEN(NULL, &ctx);
	/* 70 MiB grows to a 128 MiB segment, refused; 90%: 115 MiB,
	 * refused; 103.7 MiB refused; 93 MiB accepted.
	 */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 70u << 20, NULL, &p)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	TH_LOG("reserved %llu after %llu refusals", (unsigned long long)st.reserved,
	       (unsigned long long)st.malloc_refusals);
	ASSERT_EQ(3, st.backpedals);
	ASSERT_EQ(3, st.malloc_refusals);
	ASSERT_LE(st.reserved, 100u << 20);
	ASSERT_GE(st.reserved, 70u << 20);
	/* A request over the cap itself fails after backing off to it. */
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 101u << 20, NULL, &p));
	gp_close(ctx);
	ASSERT_EQ(0, rt_counts(&rt).dev_live);
}

/* A size whose rounding would wrap: out of memory, no cudaMalloc tried. */
TEST(size_near_size_max)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, SIZE_MAX, NULL, &p));
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, SIZE_MAX - 255, NULL, &p));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(0, st.reserved);
	ASSERT_EQ(0, st.malloc_refusals);
	ASSERT_EQ(0, rt_counts(&rt).calls[CDD_MALLOC]);
	gp_close(ctx);
}

TEST(release_cached_and_retry)
{
	struct gp_dev_stats st;
	gp_stream_t s1, s2;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.set_mem_total(256u << 20);
	ASSERT_EQ(0, rt.StreamCreate(&s1));
	ASSERT_EQ(0, rt.StreamCreate(&s2));
	OPEN(NULL, &ctx);
	/* s1 caches a 200 MiB segment... */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 200u << 20, s1, &p));
	ASSERT_EQ(0, gp_dev_free(ctx, p, s1));
	/* ...that s2 needs: released, then cudaMalloc'ed again. */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 150u << 20, s2, &q)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(1, st.cuda_frees);
	ASSERT_EQ(1, st.segments);
	ASSERT_EQ(0, st.ooms);
	ASSERT_EQ(0, gp_dev_free(ctx, q, s2));
	gp_close(ctx);
	rt.StreamDestroy(s1);
	rt.StreamDestroy(s2);
}

TEST(pending_waited_before_oom)
{
	struct gp_dev_stats st;
	gp_stream_t s1, s2;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.set_mem_total(256u << 20);
	rt.hold_events(1);
	ASSERT_EQ(0, rt.StreamCreate(&s1));
	ASSERT_EQ(0, rt.StreamCreate(&s2));
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 200u << 20, s1, &p));
	ASSERT_EQ(0, gp_dev_record_stream(ctx, p, s2));
	ASSERT_EQ(0, gp_dev_free(ctx, p, s1));	/* pending behind s2 */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 200u << 20, s1, &q)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(p, q);			/* after synchronizing */
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(1, st.event_syncs);
	ASSERT_EQ(1, rt_counts(&rt).calls[CDD_EVENT_SYNC]);
	ASSERT_EQ(0, gp_dev_free(ctx, q, s1));
	gp_close(ctx);
	rt.StreamDestroy(s1);
	rt.StreamDestroy(s2);
}

TEST(oom_reports_and_dumps)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	char buf[65536];
	int pfd[2], saved;
	struct rt rt;
	void *p, *q;
	ssize_t n;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.set_mem_total(64u << 20);
	setenv("GPUPOOL_DEBUG", "1", 1);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 40u << 20, NULL, &p));
	ASSERT_EQ(0, pipe(pfd));
	saved = dup(2);
	dup2(pfd[1], 2);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 40u << 20, NULL, &q));
	dup2(saved, 2);
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	ASSERT_GT(n, 0);
	buf[n] = 0;
	ASSERT_NE(NULL, strstr(buf, "out of memory for"));
	ASSERT_NE(NULL, strstr(buf, "*"));	/* the occupancy picture */
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "out of memory on device 0"));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(1, st.ooms);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	close(pfd[0]);
	close(saved);
	gp_close(ctx);
}

/* A stream whose pool is empty survives the release of free segments that
 * an out-of-memory on that very stream triggers.
 */
TEST(empty_stream_pool_survives_oom)
{
	gp_stream_t s1, s2;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.set_mem_total(64u << 20);
	ASSERT_EQ(0, rt.StreamCreate(&s1));
	ASSERT_EQ(0, rt.StreamCreate(&s2));
	OPEN(NULL, &ctx);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 100u << 20, s1, &p));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1u << 20, s2, &q));
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 100u << 20, s1, &p));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1u << 20, s1, &p));
	ASSERT_EQ(0, gp_dev_free(ctx, p, s1));
	ASSERT_EQ(0, gp_dev_free(ctx, q, s2));
	gp_close(ctx);
	rt.StreamDestroy(s1);
	rt.StreamDestroy(s2);
}

/* cudaMalloc failing for another reason than memory (a broken context):
 * -EIO with CUDA's words, at the first refusal: no backing off, and the
 * cached segments stay (giving them back would not help).
 */
TEST(malloc_error_is_not_oom)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1000, NULL, &p));
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));	/* a cached segment */
	rt.fail_malloc_error(1, 700);			/* cudaErrorIllegalAddress */
	ASSERT_EQ(-EIO, gp_dev_alloc(ctx, 0, 100u << 20, NULL, &q));
	EXPECT_NE(NULL, strstr(gp_last_error(ctx), "cudaMalloc")) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	EXPECT_EQ(1, st.segments);
	EXPECT_EQ(0, st.backpedals);
	EXPECT_EQ(0, st.ooms);
	EXPECT_EQ(2, rt_counts(&rt).calls[CDD_MALLOC]);
	/* Not left for the application's next cudaGetLastError(). */
	EXPECT_EQ(0, rt.GetLastError());
	/* The next call works. */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 100u << 20, NULL, &q));
	ASSERT_EQ(0, gp_dev_free(ctx, q, NULL));
	gp_close(ctx);
	ASSERT_EQ(0, rt_counts(&rt).dev_live);
}

TEST(trim)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	uint64_t released;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1000, NULL, &p));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 30u << 20, NULL, &q));
	ASSERT_EQ(0, gp_dev_free(ctx, q, NULL));
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, &released));
	ASSERT_EQ(32u << 20, released);
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(1, st.segments);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(0, st.reserved);
	if (rt.is_double)
		ASSERT_EQ(0, rt_counts(&rt).dev_live);
	gp_close(ctx);
}

TEST_HARNESS_MAIN
