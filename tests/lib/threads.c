// SPDX-License-Identifier: MIT
/*
 * threads: many threads allocate and free host buffers and device blocks on
 * one context at once; every buffer keeps its bytes, and the counters add
 * up afterwards.  (Also meant for ThreadSanitizer.)
 */
#include <pthread.h>

#include "helpers.h"

#define NTHREADS 8
#define ROUNDS 3000

/* Every worker starts at once: created one after another, the first ones
 * could be done before the last ones start, and the test would not be
 * concurrent at all where threads are cheap and rounds fast.
 */
static pthread_barrier_t start;

struct arg {
	struct gp_ctx *ctx;
	unsigned int id;
	int dev;
	gp_stream_t stream;
	int fail;
};

static void *host_worker(void *v)
{
	struct arg *a = v;
	void *live[16] = { 0 };
	size_t size[16] = { 0 };
	unsigned int i, seed = a->id * 7919u;

	pthread_barrier_wait(&start);

	for (i = 0; i < ROUNDS; i++) {
		unsigned int k = (seed = seed * 1103515245u + 12345u) >> 16 & 15;

		if (live[k]) {
			if (!check_fill(live[k], size[k] < 256 ? size[k] : 256, k + a->id) ||
			    gp_host_free(a->ctx, live[k]))
				a->fail++;
			live[k] = NULL;
			continue;
		}
		size[k] = (seed >> 8) % ((i & 63) ? 65536 : (8u << 20)) + 1;
		if (gp_host_alloc(a->ctx, size[k], 0, &live[k])) {
			a->fail++;
			live[k] = NULL;
			continue;
		}
		fill(live[k], size[k] < 256 ? size[k] : 256, k + a->id);
	}
	for (i = 0; i < 16; i++)
		if (live[i] && gp_host_free(a->ctx, live[i]))
			a->fail++;
	return NULL;
}

static void *dev_worker(void *v)
{
	struct arg *a = v;
	void *live[16] = { 0 };
	unsigned int i, seed = a->id * 104729u;

	pthread_barrier_wait(&start);

	for (i = 0; i < ROUNDS; i++) {
		unsigned int k = (seed = seed * 1103515245u + 12345u) >> 16 & 15;

		if (live[k]) {
			if (gp_dev_free(a->ctx, live[k], a->stream))
				a->fail++;
			live[k] = NULL;
		} else if (gp_dev_alloc(a->ctx, 0, (seed >> 4) % (4u << 20) + 1,
					a->stream, &live[k])) {
			a->fail++;
			live[k] = NULL;
		}
	}
	for (i = 0; i < 16; i++)
		if (live[i] && gp_dev_free(a->ctx, live[i], a->stream))
			a->fail++;
	return NULL;
}

TEST(host_concurrent)
{
	struct arg a[NTHREADS];
	pthread_t t[NTHREADS];
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	int i;

	rt_load(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, NTHREADS));
	for (i = 0; i < NTHREADS; i++) {
		a[i] = (struct arg){ .ctx = ctx, .id = (unsigned int)i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, host_worker, &a[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		ASSERT_EQ(0, a[i].fail) TH_LOG("thread %d: %s", i, gp_last_error(ctx));
	}
	pthread_barrier_destroy(&start);
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.in_use);
	ASSERT_EQ(st.allocs, st.frees);
	ASSERT_EQ(st.reserved, st.idle);
	TH_LOG("%llu allocations, %llu cache hits, %llu segments mapped",
	       (unsigned long long)st.allocs, (unsigned long long)st.cache_hits,
	       (unsigned long long)st.map_calls);
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt));
}

TEST(dev_concurrent)
{
	struct arg a[NTHREADS];
	pthread_t t[NTHREADS];
	gp_stream_t s[NTHREADS];
	struct gp_dev_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	int i;

	RT_SETUP(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, NTHREADS));
	for (i = 0; i < NTHREADS; i++) {
		s[i] = NULL;
		if (i % 2)
			ASSERT_EQ(0, rt.StreamCreate(&s[i]));
		a[i] = (struct arg){ .ctx = ctx, .id = (unsigned int)i, .stream = s[i] };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, dev_worker, &a[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		ASSERT_EQ(0, a[i].fail) TH_LOG("thread %d: %s", i, gp_last_error(ctx));
	}
	pthread_barrier_destroy(&start);
	ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
	TH_LOG("%llu allocations, peak %llu in use, %llu reserved in %llu segments, "
	       "%llu refusals", (unsigned long long)st.allocs,
	       (unsigned long long)st.peak_in_use,
	       (unsigned long long)st.peak_reserved,
	       (unsigned long long)st.cuda_mallocs,
	       (unsigned long long)st.malloc_refusals);
	ASSERT_EQ(0, st.in_use);
	ASSERT_EQ(st.allocs, st.frees);
	gp_close(ctx);
	for (i = 0; i < NTHREADS; i++)
		if (s[i])
			rt.StreamDestroy(s[i]);
	ASSERT_TRUE(rt_clean(&rt));
}

TEST_HARNESS_MAIN
