// SPDX-License-Identifier: MIT
/*
 * dev_alloc: the device pool over cudaMalloc segments: blocks are distinct
 * and reused, growth starts small and doubles (TensorFlow's Extend), stats
 * add up, bad frees are refused, gp_close gives every segment back, and
 * the snapshot is valid JSON.
 */
#include <sys/wait.h>

#include "helpers.h"

/* These are the cudaMalloc segments' growth; the virtual mode's are in
 * dev_vmm.c, and dev_model.c runs the same random work in both modes.
 */
__attribute__((constructor)) static void segment_mode(void)
{
	setenv("GPUPOOL_DEV_MODE", "segments", 1);
}

TEST(alloc_reuse_stats)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	void *p[64], *q;
	unsigned int i;
	struct rt rt;

	RT_SETUP(&rt);
	OPEN(NULL, &ctx);
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1000 + i * 4096, NULL, &p[i]));
		ASSERT_EQ(0, (uintptr_t)p[i] % 256);
	}
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(64, st.allocs);
	ASSERT_GE(st.reserved, st.in_use);
	ASSERT_EQ(st.segments, st.cuda_mallocs);
	q = p[10];
	ASSERT_EQ(0, gp_dev_free(ctx, q, NULL));
	/* Same stream, same size: the same block at once. */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1000 + 10 * 4096, NULL, &p[10]));
	ASSERT_EQ(q, p[10]);
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, gp_dev_free(ctx, p[i], NULL));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(0, st.in_use);
	ASSERT_EQ(0, st.requested);
	ASSERT_EQ(-EINVAL, gp_dev_free(ctx, q, NULL));		/* twice */
	ASSERT_EQ(-EINVAL, gp_dev_free(ctx, (char *)q + 256, NULL));
	ASSERT_EQ(-ENODEV, gp_dev_alloc(ctx, 99, 100, NULL, &q));
	ASSERT_EQ(-EINVAL, gp_dev_alloc(ctx, 0, 0, NULL, &q));
	gp_close(ctx);
	if (rt.is_double) {
		struct cdd_counts c = rt_counts(&rt);

		ASSERT_EQ(0, c.dev_live);
		ASSERT_EQ(c.calls[CDD_MALLOC] - c.malloc_refused, c.calls[CDD_FREE]);
		ASSERT_EQ(0, c.events_live);
		ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	}
}

TEST(growth_doubles)
{
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	void *p[8];
	struct rt rt;
	int i;

	RT_SETUP(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(2 << 20, st.next_segment);
	/* Each 1.5 MiB block needs a new segment: 2, 4, 8, 16 MiB... */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, (3 << 20) / 2, NULL, &p[i]));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	TH_LOG("4 x 1.5 MiB: %llu segments, %llu reserved, next %llu",
	       (unsigned long long)st.segments, (unsigned long long)st.reserved,
	       (unsigned long long)st.next_segment);
	ASSERT_EQ(3, st.segments);		/* 2 + 4 (two blocks) + 8 MiB */
	ASSERT_EQ(14 << 20, st.reserved);
	ASSERT_EQ(16 << 20, st.next_segment);
	/* A request beyond the next size grows to fit it. */
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 100 << 20, NULL, &p[4]));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(128 << 20, st.next_segment);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, gp_dev_free(ctx, p[i], NULL));
	gp_close(ctx);
}

TEST(limit_fraction)
{
	struct gp_dev_stats st;
	struct gp_options o;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	rt.set_mem_total(1000u << 20);
	gp_options_init(&o);
	o.dev_limit_fraction = 0.5;
	OPEN(&o, &ctx);
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 600 << 20, NULL, &p));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "limit 500.0 MiB"));
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 400 << 20, NULL, &p));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(500 << 20, st.limit);
	ASSERT_LE(st.reserved, 500 << 20);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	gp_close(ctx);
}

/* A limit below the granularity is 256 bytes, not "none"; the largest
 * limit the environment takes (2^63 bytes) is kept as it is (larger ones
 * fail the open: tests/lib/settings.c).
 */
TEST(tiny_and_huge_limits)
{
	struct gp_dev_stats st;
	struct gp_options o;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p, *q;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	gp_options_init(&o);
	o.dev_limit = 1;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 256, NULL, &p));
	ASSERT_EQ(-ENOMEM, gp_dev_alloc(ctx, 0, 256, NULL, &q));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(256, st.limit);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	gp_close(ctx);
	setenv("GPUPOOL_DEV_LIMIT", "8388608T", 1);	/* the most: 2^63 */
	OPEN(NULL, &ctx);
	unsetenv("GPUPOOL_DEV_LIMIT");
	ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 256, NULL, &p));
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	ASSERT_EQ(1ull << 63, st.limit);
	ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
	gp_close(ctx);
}

static int json_ok(const char *json)
{
	FILE *f = popen("/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
			"sys.exit(0 if d[\"version\"]==1 and len(d[\"devices\"])==1 and "
			"len(d[\"devices\"][0][\"segments\"])>=2 and "
			"any(b[\"state\"]==\"pending_free\" for s in d[\"devices\"][0][\"segments\"] for b in s[\"blocks\"]) "
			"else 3)'", "w");
	int st;

	if (!f)
		return -1;
	fputs(json, f);
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(snapshot_json)
{
	gp_stream_t s1, s2;
	struct gp_ctx *ctx;
	void *p[6];
	char *json;
	size_t len;
	struct rt rt;
	int i;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	if (access("/usr/bin/python3", X_OK))
		SKIP(return, "no /usr/bin/python3 to parse JSON");
	ASSERT_EQ(0, rt.StreamCreate(&s1));
	ASSERT_EQ(0, rt.StreamCreate(&s2));
	rt.hold_events(1);
	OPEN(NULL, &ctx);
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 100000 * (i + 1), i < 3 ? s1 : s2, &p[i]));
	ASSERT_EQ(0, gp_dev_record_stream(ctx, p[1], s2));
	ASSERT_EQ(0, gp_dev_free(ctx, p[1], s1));	/* pending */
	ASSERT_EQ(0, gp_dev_free(ctx, p[4], s2));	/* free */
	ASSERT_EQ(0, gp_dev_snapshot(ctx, -1, &json, &len));
	ASSERT_EQ(strlen(json), len);
	TH_LOG("%.300s...", json);
	ASSERT_EQ(0, json_ok(json));
	free(json);
	gp_close(ctx);
	rt.StreamDestroy(s1);
	rt.StreamDestroy(s2);
}

TEST_HARNESS_MAIN
