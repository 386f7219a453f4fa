// SPDX-License-Identifier: MIT
/*
 * dev_vmm: the device pool's virtual mode (one reserved range per stream
 * pool, granules mapped as its region grows) and the test double's driver
 * entry points it runs on.  The mode is picked where the device supports
 * it and can be refused; the region grows by exactly the granules a request
 * lacks and its top chunk coalesces with the growth; a trim gives back free
 * granules anywhere (after waiting for their stream), as holes best fit
 * does not choose while mapped free space fits, mapped again when a block
 * needs them; mapped bytes stay within a budget above the most in use; a
 * refused cuMemCreate trims,
 * retries, then says out of memory with nothing leaked; the double
 * refuses what the CUDA documentation forbids.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>

#include "helpers.h"
#include "cuda.h"	/* userlib/cuda.h: the driver's types */

#define G	(2ull << 20)	/* the double's granularity */
#define MiB	(1ull << 20)

static struct gp_dev_stats stats(struct gp_ctx *ctx)
{
	struct gp_dev_stats st;

	memset(&st, 0, sizeof(st));
	gp_dev_stats(ctx, 0, &st);
	return st;
}

/* What the double holds equals what the pool says it has mapped. */
#define EXPECT_BOOKS(rt, ctx) do {					\
	struct cdd_counts _c = rt_counts(rt);				\
	struct gp_dev_stats _s = stats(ctx);				\
	EXPECT_EQ(_s.mapped, _c.mapped_bytes);				\
	EXPECT_EQ(_s.mapped, _c.phys_bytes);				\
	EXPECT_EQ(_s.mapped / G, _c.handles);				\
	EXPECT_EQ(_s.mapped, _s.reserved);				\
} while (0)

/* Close ctx: the double then holds no reservation and saw no violation. */
#define EXPECT_CLOSED_CLEAN(rt, ctx) do {				\
	gp_close(ctx);							\
	EXPECT_EQ(0, rt_counts(rt).reservations);			\
	EXPECT_TRUE(rt_clean(rt)) TH_LOG("%s", (rt)->last_violation());	\
} while (0)

TEST(mode_chosen)
{
	struct gp_options o;
	struct gp_ctx *ctx;
	struct gp_info i;
	struct rt rt;

	RT_SETUP(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &i));
	if (!rt.is_double && i.dev_mode != GP_DEV_VIRTUAL) {
		gp_close(ctx);
		SKIP(return, "the GPU has no virtual memory management");
	}
	EXPECT_EQ(GP_DEV_VIRTUAL, i.dev_mode);
	EXPECT_EQ(GP_DEV_VIRTUAL, stats(ctx).mode);
	EXPECT_LE(256, stats(ctx).granularity);
	gp_close(ctx);

	/* Asked away, by the option and by the environment. */
	gp_options_init(&o);
	o.flags = GP_OPEN_DEV_SEGMENTS;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &i));
	EXPECT_EQ(GP_DEV_SEGMENTS, i.dev_mode);
	EXPECT_EQ(256, stats(ctx).granularity);
	gp_close(ctx);
	setenv("GPUPOOL_DEV_MODE", "segments", 1);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &i));
	EXPECT_EQ(GP_DEV_SEGMENTS, i.dev_mode);
	gp_close(ctx);
	setenv("GPUPOOL_DEV_MODE", "virtual-please", 1);
	EXPECT_EQ(-EINVAL, gp_open(NULL, &ctx));
	unsetenv("GPUPOOL_DEV_MODE");
	if (!rt.is_double)
		return;

	/* A device without it; then a runtime before 12.5 (the double
	 * calls it a violation if the by-version entry point is used).
	 */
	rt.set_vmm(0, 0);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &i));
	EXPECT_EQ(GP_DEV_SEGMENTS, i.dev_mode);
	gp_close(ctx);
	rt.set_vmm(1, 0);
	rt.set_runtime_version(12040);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &i));
	EXPECT_EQ(GP_DEV_VIRTUAL, i.dev_mode);
	gp_close(ctx);
	EXPECT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
}

TEST(grows_by_granules_and_coalesces)
{
	struct gp_ctx *ctx;
	struct rt rt;
	uint64_t released = 0;
	char *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	OPEN(NULL, &ctx);
	/* (Requests over 1 MiB: smaller ones have a sub-pool of their own.) */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 3 * MiB, NULL, (void **)&p));
	EXPECT_EQ(2 * G, stats(ctx).mapped);
	EXPECT_EQ(1, rt_counts(&rt).reservations);
	/* 3 MiB more: the 1 MiB left at the top plus one more granule. */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 3 * MiB, NULL, (void **)&q));
	EXPECT_EQ(p + 3 * MiB, q);
	EXPECT_EQ(3 * G, stats(ctx).mapped);
	EXPECT_EQ(1, stats(ctx).segments);
	EXPECT_BOOKS(&rt, ctx);
	/* The memory is there, readable and writable. */
	fill(p, 3 * MiB, 1);
	fill(q, 3 * MiB, 2);
	EXPECT_TRUE(check_fill(p, 3 * MiB, 1));
	EXPECT_TRUE(check_fill(q, 3 * MiB, 2));
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	ASSERT_EQ(0, gp_dev_free(ctx, q, NULL));
	EXPECT_EQ(3 * G, stats(ctx).peak_mapped);
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	EXPECT_EQ(3 * G, released);
	EXPECT_EQ(0, stats(ctx).mapped);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_EQ(0, rt_counts(&rt).mapped);
	EXPECT_CLOSED_CLEAN(&rt, ctx);
}

TEST(trim_unmaps_free_granules_anywhere)
{
	struct gp_ctx *ctx;
	struct rt rt;
	uint64_t released = 0, maps;
	char *a, *b, *c, *d;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	OPEN(NULL, &ctx);
	/* a [0, 8M), b [8M, 14M), c [14M, 17M) of granules up to 18M */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, NULL, (void **)&a));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 6 * MiB, NULL, (void **)&b));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 3 * MiB, NULL, (void **)&c));
	EXPECT_EQ(a + 8 * MiB, b);
	EXPECT_EQ(b + 6 * MiB, c);
	EXPECT_EQ(18 * MiB, stats(ctx).mapped);
	fill(a, 8 * MiB, 3);
	fill(c, 3 * MiB, 4);
	ASSERT_EQ(0, gp_dev_free(ctx, b, NULL));
	/* b's three granules go; [17M, 18M) is free but shares c's. */
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	EXPECT_EQ(6 * MiB, released);
	EXPECT_EQ(12 * MiB, stats(ctx).mapped);
	EXPECT_BOOKS(&rt, ctx);
	EXPECT_TRUE(check_fill(a, 8 * MiB, 3));
	EXPECT_TRUE(check_fill(c, 3 * MiB, 4));
	/* A block placed over the hole gets it mapped again. */
	maps = stats(ctx).map_calls;
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 6 * MiB, NULL, (void **)&d));
	EXPECT_EQ(b, d);
	EXPECT_EQ(maps + 3, stats(ctx).map_calls);
	fill(d, 6 * MiB, 5);
	EXPECT_TRUE(check_fill(d, 6 * MiB, 5));
	EXPECT_BOOKS(&rt, ctx);
	ASSERT_EQ(0, gp_dev_free(ctx, a, NULL));
	ASSERT_EQ(0, gp_dev_free(ctx, c, NULL));
	ASSERT_EQ(0, gp_dev_free(ctx, d, NULL));
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, NULL));
	EXPECT_EQ(0, stats(ctx).mapped);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_CLOSED_CLEAN(&rt, ctx);
}

/* Best fit sees only mapped free space: with an unmapped hole that would
 * fit a request best and a larger mapped free chunk, the request takes the
 * mapped one and maps nothing.  The hole is no block: it cannot be freed,
 * and the snapshot shows it as unmapped.
 */
TEST(mapped_free_space_before_a_hole)
{
	struct gp_ctx *ctx;
	struct rt rt;
	uint64_t released = 0, maps, mapped;
	char *a, *b, *c, *d, *e, *json = NULL;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	OPEN(NULL, &ctx);
	/* a [0, 8M), b [8M, 10M), c [10M, 22M), d [22M, 24M) */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, NULL, (void **)&a));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 2 * MiB, NULL, (void **)&b));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 12 * MiB, NULL, (void **)&c));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 2 * MiB, NULL, (void **)&d));
	ASSERT_EQ(0, gp_dev_free(ctx, a, NULL));
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	EXPECT_EQ(8 * MiB, released);		/* a's granules: a hole */
	EXPECT_EQ(-EINVAL, gp_dev_free(ctx, a, NULL));
	ASSERT_EQ(0, gp_dev_snapshot(ctx, 0, &json, NULL));
	EXPECT_NE(NULL, strstr(json, "\"state\":\"unmapped\""));
	free(json);
	ASSERT_EQ(0, gp_dev_free(ctx, c, NULL));	/* 12M free, mapped */
	maps = stats(ctx).map_calls;
	mapped = stats(ctx).mapped;
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, NULL, (void **)&e));
	EXPECT_EQ(c, e);
	EXPECT_EQ(maps, stats(ctx).map_calls);
	EXPECT_EQ(mapped, stats(ctx).mapped);
	fill(e, 8 * MiB, 6);
	EXPECT_TRUE(check_fill(e, 8 * MiB, 6));
	EXPECT_BOOKS(&rt, ctx);
	ASSERT_EQ(0, gp_dev_free(ctx, b, NULL));
	ASSERT_EQ(0, gp_dev_free(ctx, d, NULL));
	ASSERT_EQ(0, gp_dev_free(ctx, e, NULL));
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, NULL));
	EXPECT_EQ(0, stats(ctx).mapped);
	EXPECT_EQ(0, stats(ctx).segments);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_CLOSED_CLEAN(&rt, ctx);
}

/* A queue of large buffers of three sizes (a data loader's prefetch
 * queue), which fragments one region: mapping a hole again or growing
 * first unmaps the idle granules over the budget (1/11 above the most in
 * use, at least a granule), so the mapped bytes never pass it by more than
 * the rounding of one request to granules; the books agree throughout, and
 * a trim at the end leaves nothing.
 */
/* The queue above, on the double rt, with GPUPOOL_DEV_HEADROOM set to
 * headroom (NULL: the default): mapped bytes never pass the most in use
 * plus room_ppm millionths of it (UINT64_MAX: no bound) and two granules;
 * the pool's books match the double's; a trim leaves nothing.  *trims:
 * the budget trims counted.
 */
static void queue_run(struct __test_metadata *_metadata, struct rt *rtp,
		      const char *headroom, uint64_t room_ppm, uint64_t *trims)
{
	static const uint64_t sizes[3] = { 36 * MiB + 768 * 1024,
					   117 * MiB + 197 * 1024,
					   18 * MiB + 393 * 1024 };
	struct gp_ctx *ctx;
	struct rt rt = *rtp;
	void *q[9];
	uint64_t hw = 0, x = 12345, in_use, most_mapped = 0;
	unsigned head = 0, n = 0, i, target;

	*trims = UINT64_MAX;
	unsetenv("GPUPOOL_DEV_MODE");
	if (headroom)
		setenv("GPUPOOL_DEV_HEADROOM", headroom, 1);
	else
		unsetenv("GPUPOOL_DEV_HEADROOM");
	OPEN(NULL, &ctx);
	unsetenv("GPUPOOL_DEV_HEADROOM");
	for (i = 0; i < 600; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		target = 6 + (unsigned)(x >> 33) % 3;
		while (n >= target) {
			ASSERT_EQ(0, gp_dev_free(ctx, q[head], NULL));
			head = (head + 1) % 9;
			n--;
		}
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, i % 50 == 49 ? sizes[i % 3] / 3 :
					  sizes[i % 3], NULL, &q[(head + n) % 9]));
		n++;
		in_use = stats(ctx).in_use;
		if (in_use > hw)
			hw = in_use;
		if (stats(ctx).mapped > most_mapped)
			most_mapped = stats(ctx).mapped;
		if (room_ppm != UINT64_MAX)
			ASSERT_LE(stats(ctx).mapped,
				  hw + hw / 1000000 * room_ppm + 2 * G)
				TH_LOG("allocation %u: %llu mapped, %llu in use at most", i,
				       (unsigned long long)stats(ctx).mapped,
				       (unsigned long long)hw);
	}
	/* Without a bound the loader's holes stay mapped: well over 1/11. */
	if (room_ppm == UINT64_MAX)
		EXPECT_LT(hw + hw / 8, most_mapped);
	EXPECT_BOOKS(&rt, ctx);
	*trims = stats(ctx).growth_trims;
	while (n) {
		ASSERT_EQ(0, gp_dev_free(ctx, q[head], NULL));
		head = (head + 1) % 9;
		n--;
	}
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, NULL));
	EXPECT_EQ(0, stats(ctx).mapped);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_EQ(0, rt_counts(&rt).mapped);
	EXPECT_CLOSED_CLEAN(&rt, ctx);
}

TEST(mapped_follows_in_use_in_a_queue)
{
	uint64_t trims;
	struct rt rt;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	queue_run(_metadata, &rt, NULL, 1000000 / 11, &trims);
	EXPECT_LT(0, trims);
}

/* GPUPOOL_DEV_HEADROOM trades memory for remapping: 50% keeps mapped
 * bytes within half above the most in use and trims no more often than
 * the default; "none" never unmaps before a mapping; nonsense fails
 * gp_open with the variable named.
 */
TEST(headroom_from_the_environment)
{
	struct gp_ctx *ctx = NULL;
	uint64_t dflt, half, none;
	struct rt rt;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	queue_run(_metadata, &rt, NULL, 1000000 / 11, &dflt);
	queue_run(_metadata, &rt, "50", 500000, &half);
	queue_run(_metadata, &rt, "none", UINT64_MAX, &none);
	EXPECT_LT(0, dflt);
	EXPECT_GE(dflt, half);
	EXPECT_EQ(0, none);
	setenv("GPUPOOL_DEV_HEADROOM", "9%", 1);
	EXPECT_EQ(-EINVAL, gp_open(NULL, &ctx));
	EXPECT_NE(NULL, strstr(gp_last_error(NULL), "GPUPOOL_DEV_HEADROOM"));
	setenv("GPUPOOL_DEV_HEADROOM", "-1", 1);
	EXPECT_EQ(-EINVAL, gp_open(NULL, &ctx));
	unsetenv("GPUPOOL_DEV_HEADROOM");
}

/* A block freed on its stream is free at once while work queued there may
 * still touch it: before unmapping a stream pool's granules the pool waits
 * for that stream (cuMemUnmap does not wait, as cudaFree does), once per
 * trim, and not at all when nothing is unmapped.
 */
TEST(trim_waits_for_the_stream_first)
{
	struct gp_ctx *ctx;
	struct rt rt;
	gp_stream_t s;
	uint64_t syncs, released = 0;
	char *a, *b;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	ASSERT_EQ(0, rt.StreamCreate(&s));
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, s, (void **)&a));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, s, (void **)&b));
	syncs = rt_counts(&rt).calls[CDD_STREAM_SYNC];
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	EXPECT_EQ(0, released);
	EXPECT_EQ(syncs, rt_counts(&rt).calls[CDD_STREAM_SYNC]);
	ASSERT_EQ(0, gp_dev_free(ctx, a, s));
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	EXPECT_EQ(8 * MiB, released);
	EXPECT_EQ(syncs + 1, rt_counts(&rt).calls[CDD_STREAM_SYNC]);
	ASSERT_EQ(0, gp_dev_free(ctx, b, s));
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, NULL));
	EXPECT_EQ(syncs + 2, rt_counts(&rt).calls[CDD_STREAM_SYNC]);
	EXPECT_EQ(0, stats(ctx).mapped);
	gp_close(ctx);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	rt.StreamDestroy(s);
}

TEST(refused_creation_trims_retries_then_enomem)
{
	gp_stream_t s1, s2;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q, *r;
	int i, n = 0;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	rt.set_mem_total(18 * MiB);
	ASSERT_EQ(0, rt.StreamCreate(&s1));
	ASSERT_EQ(0, rt.StreamCreate(&s2));
	OPEN(NULL, &ctx);
	/* s2 holds 16 MiB, s1 caches a granule (within the slack kept
	 * before a growth): s2's next growth is refused, the pool trims s1
	 * and retries.
	 */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 16 * MiB, s2, &q));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 2 * MiB, s1, &p));
	ASSERT_EQ(0, gp_dev_free(ctx, p, s1));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 2 * MiB, s2, &r)) TH_LOG("%s", gp_last_error(ctx));
	EXPECT_EQ(18 * MiB, stats(ctx).mapped);
	EXPECT_EQ(1, stats(ctx).malloc_refusals);
	EXPECT_BOOKS(&rt, ctx);
	ASSERT_EQ(0, gp_dev_free(ctx, r, s2));
	rt.set_mem_total(64 * MiB);
	/* Creation refused after 2 more granules: 8 MiB needs three more
	 * (2 MiB free at the top), maps 2, is refused the third, gives
	 * them back, trims, is refused again, and fails clearly.
	 */
	rt.fail_create_after(2);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 8 * MiB, s2, &r));
	EXPECT_NE(NULL, strstr(gp_last_error(ctx), "out of memory on device 0"));
	EXPECT_EQ(16 * MiB, stats(ctx).mapped);
	EXPECT_EQ(1, stats(ctx).ooms);
	EXPECT_BOOKS(&rt, ctx);
	/* Still usable: with two more granules, what fits in them does. */
	rt.fail_create_after(2);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 4 * MiB, s2, &r)) TH_LOG("%s", gp_last_error(ctx));
	fill(r, 4 * MiB, 6);
	EXPECT_TRUE(check_fill(r, 4 * MiB, 6));
	/* Nothing more can be created now, and no room is left. */
	for (i = 0; i < 4; i++) {
		void *x;

		if (gp_dev_alloc(ctx, 0, MiB + MiB * i, s2, &x) == -ENOMEM)
			n++;
	}
	EXPECT_EQ(4, n);
	EXPECT_EQ(20 * MiB, stats(ctx).mapped);
	EXPECT_BOOKS(&rt, ctx);
	rt.fail_create_after(-1);
	ASSERT_EQ(0, gp_dev_free(ctx, r, s2));
	ASSERT_EQ(0, gp_dev_free(ctx, q, s2));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 20 * MiB, s1, &p)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_dev_free(ctx, p, s1));
	EXPECT_BOOKS(&rt, ctx);
	gp_close(ctx);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_EQ(0, rt_counts(&rt).reservations);
	EXPECT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	rt.StreamDestroy(s1);
	rt.StreamDestroy(s2);
}

TEST(limit_counts_mapped_bytes)
{
	struct gp_options o;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	gp_options_init(&o);
	o.dev_limit = 8 * MiB;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 5 * MiB, NULL, &p));
	EXPECT_EQ(6 * MiB, stats(ctx).mapped);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 4 * MiB, NULL, &q));
	EXPECT_EQ(6 * MiB, stats(ctx).mapped);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 8 * MiB, NULL, &q)) TH_LOG("%s", gp_last_error(ctx));
	EXPECT_EQ(8 * MiB, stats(ctx).peak_mapped);
	ASSERT_EQ(0, gp_dev_free(ctx, q, NULL));
	EXPECT_BOOKS(&rt, ctx);
	gp_close(ctx);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
}

/* On either runtime (the real one in the lib-real-gpu suite): blocks of
 * many sizes on two streams, mapped in whole granules, nothing mapped after
 * they are freed and trimmed.  No byte is touched (device memory).
 */
TEST(virtual_roundtrip_any_runtime)
{
	static const size_t sizes[] = { 256, 4096, MiB, MiB + 1, 3 * MiB,
					64 * MiB + 256, 200 * MiB };
	void *p[2][sizeof(sizes) / sizeof(sizes[0])];
	struct gp_dev_stats st;
	gp_stream_t s[2] = { NULL, NULL };
	struct gp_ctx *ctx;
	struct gp_info info;
	uint64_t released = 0;
	struct rt rt;
	unsigned int i, k;

	RT_SETUP(&rt);
	unsetenv("GPUPOOL_DEV_MODE");
	ASSERT_EQ(0, rt.StreamCreate(&s[1]));
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	if (info.dev_mode != GP_DEV_VIRTUAL) {
		gp_close(ctx);
		rt.StreamDestroy(s[1]);
		SKIP(return, "the device pool is not in the virtual mode here");
	}
	for (k = 0; k < 2; k++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			ASSERT_EQ(0, gp_dev_alloc(ctx, 0, sizes[i], s[k], &p[k][i]))
				TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	EXPECT_EQ(GP_DEV_VIRTUAL, st.mode);
	EXPECT_EQ(0, st.mapped % st.granularity);
	EXPECT_LE(st.in_use, st.mapped);
	EXPECT_EQ(st.mapped, st.reserved);
	EXPECT_LE(4, st.segments);	/* two streams, small and large each */
	for (k = 0; k < 2; k++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			ASSERT_EQ(0, gp_dev_free(ctx, p[k][i], s[k]));
	ASSERT_EQ(0, gp_dev_trim(ctx, 0, &released));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	EXPECT_EQ(0, st.mapped);
	EXPECT_LE(st.peak_mapped, released);
	EXPECT_EQ(st.map_calls, st.unmap_calls);
	gp_close(ctx);
	rt.StreamDestroy(s[1]);
	EXPECT_EQ(0, rt_counts(&rt).handles);
	EXPECT_EQ(0, rt_counts(&rt).reservations);
	EXPECT_TRUE(rt_clean(&rt));
}

/* The double itself: what the documentation forbids is refused. */
TEST(double_is_strict)
{
	struct {
		gp_cu_result (*create)(gp_cu_mem *, size_t, const struct gp_cu_prop *,
				       unsigned long long);
		gp_cu_result (*release)(gp_cu_mem);
		gp_cu_result (*map)(gp_cu_ptr, size_t, size_t, gp_cu_mem,
				    unsigned long long);
		gp_cu_result (*unmap)(gp_cu_ptr, size_t);
		gp_cu_result (*access)(gp_cu_ptr, size_t, const struct gp_cu_access *,
				       size_t);
		gp_cu_result (*reserve)(gp_cu_ptr *, size_t, size_t, gp_cu_ptr,
					unsigned long long);
		gp_cu_result (*addr_free)(gp_cu_ptr, size_t);
	} d;
	int (*entry)(const char *, void **, unsigned int, unsigned long long, int *);
	struct gp_cu_prop prop = { 0 };
	struct gp_cu_access acc = { 0 };
	gp_cu_mem h = 0, h2 = 0;
	gp_cu_ptr va = 0;
	struct rt rt;
	int st, status;
	pid_t pid;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	*(void **)&entry = dlsym(rt.dl, "cudaGetDriverEntryPointByVersion");
	ASSERT_NE(NULL, entry);
#define GET(f, n) ASSERT_EQ(0, entry(n, (void **)&d.f, 12000, 0, &st))
	GET(create, "cuMemCreate");
	GET(release, "cuMemRelease");
	GET(map, "cuMemMap");
	GET(unmap, "cuMemUnmap");
	GET(access, "cuMemSetAccess");
	GET(reserve, "cuMemAddressReserve");
	GET(addr_free, "cuMemAddressFree");
#undef GET
	prop.type = 1;
	prop.location.type = 1;
	acc.location = prop.location;
	acc.flags = 3;
	ASSERT_EQ(0, d.reserve(&va, 4 * G, 0, 0, 0));
	EXPECT_EQ(0, va % G);
	/* Not multiples of the granularity. */
	EXPECT_NE(0, d.create(&h, G + 4096, &prop, 0));
	EXPECT_NE(0, d.reserve(&va, G / 2, 0, 0, 0));
	ASSERT_EQ(0, d.create(&h, G, &prop, 0));
	ASSERT_EQ(0, d.create(&h2, G, &prop, 0));
	EXPECT_NE(0, d.map(va + 4096, G, 0, h, 0));
	/* Access before mapping; mapping; mapping over it; unmapping what
	 * is not mapped; freeing the range while mapped.
	 */
	EXPECT_NE(0, d.access(va, G, &acc, 1));
	ASSERT_EQ(0, d.map(va, G, 0, h, 0));
	EXPECT_NE(0, d.map(va, G, 0, h2, 0));
	EXPECT_NE(0, d.unmap(va + G, G));
	EXPECT_NE(0, d.unmap(va, 2 * G));
	EXPECT_NE(0, d.addr_free(va, 4 * G));
	/* Touching before cuMemSetAccess faults, as on a GPU. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		*(volatile char *)(uintptr_t)va = 1;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* SIGSEGV, or under ASan its report and exit status 1. */
	EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
		    (WIFEXITED(status) && WEXITSTATUS(status) != 0));
	ASSERT_EQ(0, d.access(va, G, &acc, 1));
	*(volatile char *)(uintptr_t)va = 1;
	/* Released while mapped: it lives until unmapped. */
	ASSERT_EQ(0, d.release(h));
	EXPECT_EQ(2, rt_counts(&rt).handles);
	EXPECT_NE(0, d.release(h));		/* twice */
	EXPECT_NE(0, d.map(va + G, G, 0, h, 0));	/* a released handle */
	ASSERT_EQ(0, d.unmap(va, G));
	EXPECT_EQ(1, rt_counts(&rt).handles);
	EXPECT_EQ(0, rt_counts(&rt).mapped_bytes);
	ASSERT_EQ(0, d.release(h2));
	EXPECT_EQ(0, rt_counts(&rt).handles);
	ASSERT_EQ(0, d.addr_free(va, 4 * G));
	EXPECT_EQ(0, rt_counts(&rt).reservations);
	/* Each refusal above was a violation. */
	EXPECT_EQ(10, rt.check()) TH_LOG("last: %s", rt.last_violation());
	rt.reset();
}

TEST_HARNESS_MAIN
