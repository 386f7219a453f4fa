// SPDX-License-Identifier: MIT
/*
 * rt_cache: a thread's freed pool buffers (userlib/interpose/cache.c).
 * The thread's next request of the same size and flags gets its buffer
 * back; any other request is the pool's.  A cached buffer is a freed one
 * to everyone: a second free, from any thread, and a query are refused.
 * A thread's cache goes back to the pool when the thread ends, and when
 * the pool cannot serve the thread (a limit): the request is then served.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <pthread.h>

TEST(same_size_and_flags_get_it_back)
{
	void *p, *q, *r;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 5000, HOST_PORTABLE));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&q, 5000, HOST_MAPPED));
	EXPECT_NE(p, q);	/* other flags: the pool's */
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&r, 5001, HOST_PORTABLE));
	EXPECT_NE(p, r);	/* another size */
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(r));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&r, 5000, HOST_PORTABLE));
	EXPECT_EQ(p, r);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(q));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(r));
	EXPECT_EQ(0, ip_stats().live_bytes);
}

static void *free_it(void *p)
{
	return (void *)(intptr_t)cudaFreeHost(p);
}

TEST(a_cached_buffer_is_a_freed_one)
{
	unsigned int f;
	void *p, *d, *ret;
	pthread_t t;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 8192, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
	ASSERT_EQ(0, pthread_create(&t, NULL, free_it, p));
	pthread_join(t, &ret);
	EXPECT_EQ(RT_INVALID_VALUE, (int)(intptr_t)ret);
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetFlags(&f, p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetFlags(&f, (char *)p + 100));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&d, p, 0));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost((char *)p + 512));
	EXPECT_EQ(3, ip_stats().bad_frees);
	cudaGetLastError();
}

/* A thread allocates and frees; its cache goes back to the pool when it
 * ends: the main thread's request gets the same memory.
 */
static void *alloc_and_free(void *arg)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, 300000, 0) || cudaFreeHost(p))
		p = NULL;
	*(void **)arg = p;
	return NULL;
}

TEST(a_threads_cache_goes_back_when_it_ends)
{
	void *theirs = NULL, *mine;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, alloc_and_free, &theirs));
	pthread_join(t, NULL);
	ASSERT_NE(NULL, theirs);
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&mine, 300000, 0));
	EXPECT_EQ(theirs, mine);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(mine));
}

/* Another thread's free: that thread's cache, not the allocating one's. */
static void *alloc_one(void *arg)
{
	return cudaHostAlloc((void **)arg, 7000, 0) ? NULL : arg;
}

TEST(freed_by_another_thread)
{
	void *p = NULL, *q;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, alloc_one, &p));
	pthread_join(t, NULL);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&q, 7000, 0));
	EXPECT_EQ(p, q);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(q));
}

/* Strict, GPUPOOL_HOST_LIMIT=24M: a 16 MiB buffer freed (cached: its
 * segment busy), then 18 MiB: served, the cache given back first.
 */
static int at_the_limit(void)
{
	void *p, *q;

	if (cudaHostAlloc(&p, 16 << 20, 0) || cudaFreeHost(p))
		return 1;
	if (cudaHostAlloc(&q, 18 << 20, 0))
		return 2;
	return cudaFreeHost(q) || ip_stats().refused[GP_INTERPOSE_POOL_FULL] ? 3 : 0;
}

TEST(the_cache_gives_way_at_a_limit)
{
	static const char *const env[] = {
		"GPUPOOL_INTERPOSE_MODE=strict", "GPUPOOL_HOST_LIMIT=24M", NULL,
	};

	EXPECT_EQ(0, ip_spawn("at_the_limit", env, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "at_the_limit", at_the_limit },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
