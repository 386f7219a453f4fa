// SPDX-License-Identifier: MIT
/*
 * rt_threads: 8 threads, each making 10^5 cudaHostAlloc / cudaFreeHost
 * pairs of mixed sizes under the interposer, writing every buffer and
 * checking it is still theirs before the free.  Every request is served
 * by the pool, every buffer freed, and CUDA registers only the segments
 * (no CUDA call per request).  Built with AddressSanitizer and with
 * ThreadSanitizer (tests/interpose/Makefile).
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <pthread.h>

#define THREADS	8
#define PAIRS	100000

static const size_t sizes[] = { 4096, 100, 65536, 1 << 20, 3000, 2 << 20 };

struct worker {
	pthread_t t;
	int id;
	long bad;		/* failed calls or clobbered buffers */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char *p, *keep = NULL;
	long i;

	for (i = 0; i < PAIRS; i++) {
		size_t n = sizes[(i + w->id) % (sizeof(sizes) / sizeof(sizes[0]))];

		if (cudaHostAlloc((void **)&p, n, i & 3)) {
			w->bad++;
			continue;
		}
		p[0] = p[n - 1] = (unsigned char)w->id;
		/* One buffer held across the next request: never shared. */
		if (keep && (keep[0] != (unsigned char)w->id || cudaFreeHost(keep)))
			w->bad++;
		keep = p;
	}
	if (keep && cudaFreeHost(keep))
		w->bad++;
	return NULL;
}

/* Under TCG in a VM (the kernel backend's run) this takes some 30 s: the
 * harness's default bound.
 */
FIXTURE(pairs) {
};

FIXTURE_SETUP(pairs)
{
}

FIXTURE_TEARDOWN(pairs)
{
}

TEST_F_TIMEOUT(pairs, eight_threads_many_pairs, 300)
{
	struct gp_interpose_stats before, after;
	struct worker w[THREADS];
	struct cdd_counts rt;
	void *p;
	int i;

	/* A first pair opens the pool. */
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	before = ip_stats();
	for (i = 0; i < THREADS; i++) {
		w[i].id = i + 1;
		w[i].bad = 0;
		ASSERT_EQ(0, pthread_create(&w[i].t, NULL, work, &w[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(w[i].t, NULL);
		EXPECT_EQ(0, w[i].bad) TH_LOG("thread %d", w[i].id);
	}
	after = ip_stats();
	EXPECT_EQ(before.served + THREADS * PAIRS, after.served);
	EXPECT_EQ(before.freed + THREADS * PAIRS, after.freed);
	EXPECT_EQ(0, after.live_bytes);
	EXPECT_EQ(0, after.fell_back[GP_INTERPOSE_POOL_FULL] +
		     after.fell_back[GP_INTERPOSE_OTHER]);
	rt = rt_counts();
	/* Segments only: a handful, not one per request. */
	EXPECT_LT(rt.calls[CDD_HOST_REGISTER], 64);
	EXPECT_EQ(0, drv_counts().calls[CDRV_HOST_ALLOC]);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
