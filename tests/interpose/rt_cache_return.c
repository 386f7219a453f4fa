// SPDX-License-Identifier: MIT
/*
 * rt_cache_return: a thread that freed its buffers and went quiet does
 * not keep them from the pool (userlib/interpose/cache.c).  Its cache
 * goes back to the pool within a short bound while it calls nothing, so
 * the segments go idle and back to the system (host_gc_idle_ms, 200 ms
 * here): the process's reserved bytes fall to what is in use.  The
 * figures count the program's requests (giving a cached buffer back is
 * no second free), and a second free of a buffer given back is refused.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <pthread.h>

#define SMALL	8192
#define LARGE	(3 << 20)	/* a 20 MiB segment of its own */

struct quiet {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int step;		/* 1: freed, 2: go on */
	void *p;
	int ret;		/* its second free of p */
};

static void quiet_step(struct quiet *q, int step)
{
	pthread_mutex_lock(&q->lock);
	q->step = step;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static void quiet_wait(struct quiet *q, int step)
{
	pthread_mutex_lock(&q->lock);
	while (q->step < step)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

/* Allocate a small and a large buffer, free both (cached), stay quiet
 * until told, then free the small one again.
 */
static void *quiet_thread(void *arg)
{
	struct quiet *q = arg;
	void *b = NULL;

	if (cudaHostAlloc(&q->p, SMALL, 0) || cudaHostAlloc(&b, LARGE, 0) ||
	    cudaFreeHost(q->p) || cudaFreeHost(b))
		q->p = NULL;
	quiet_step(q, 1);
	quiet_wait(q, 2);
	if (q->p)
		q->ret = cudaFreeHost(q->p);
	return NULL;
}

/* GPUPOOL_HOST_GC_IDLE_MS=200.  Failures: the step that failed. */
static int quiet_threads_cache(void)
{
	struct quiet q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
			   0, NULL, 0 };
	struct gp_interpose_stats st;
	uint64_t in_use, deadline;
	pthread_t t;
	void *mine;

	/* Main's buffer keeps the small segment in use throughout. */
	if (cudaHostAlloc(&mine, SMALL, 0))
		return 1;
	in_use = ip_stats().reserved;
	if (pthread_create(&t, NULL, quiet_thread, &q))
		return 2;
	quiet_wait(&q, 1);
	if (!q.p || ip_stats().reserved <= in_use)
		return 3;
	/* Polled, with a deadline far past the bound (a loaded machine),
	 * within the harness's 30 s.
	 */
	deadline = ip_now_ms() + 20000;
	while (ip_stats().reserved > in_use && ip_now_ms() < deadline)
		usleep(10000);
	st = ip_stats();
	if (st.reserved != in_use)
		return 4;	/* the quiet thread kept its buffers */
	if (st.served != 3 || st.freed != 2 || st.bad_frees ||
	    st.live_bytes != SMALL)
		return 5;
	quiet_step(&q, 2);
	pthread_join(t, NULL);
	if (q.ret != RT_INVALID_VALUE || ip_stats().bad_frees != 1)
		return 6;	/* its second free was not refused */
	cudaGetLastError();
	return cudaFreeHost(mine) || ip_stats().live_bytes ? 7 : 0;
}

TEST(a_quiet_threads_cache_goes_back)
{
	static const char *const env[] = { "GPUPOOL_HOST_GC_IDLE_MS=200", NULL };

	EXPECT_EQ(0, ip_spawn("quiet_threads_cache", env, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "quiet_threads_cache", quiet_threads_cache },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
