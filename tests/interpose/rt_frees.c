// SPDX-License-Identifier: MIT
/*
 * rt_frees: what cudaFreeHost and the queries do with pointers the pool
 * did not serve, or no longer holds, under the interposer.  CUDA's memory
 * goes back to CUDA; a double free, an inner pointer or a freed buffer get
 * the invalid-value error CUDA gives a bad pointer, and never reach CUDA
 * or change the pool.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

TEST(double_free_and_inner_pointers)
{
	struct gp_interpose_stats before = ip_stats(), after;
	struct cdrv_counts drv = drv_counts();
	unsigned int f;
	void *p, *q, *d;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&q, 4096, 0));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost((char *)p + 512));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetFlags(&f, p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&d, p, 0));
	/* The other buffer is untouched by all of that. */
	memset(q, 1, 4096);
	EXPECT_EQ(RT_SUCCESS, cudaHostGetFlags(&f, q));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(q));
	after = ip_stats();
	EXPECT_EQ(before.bad_frees + 2, after.bad_frees);
	EXPECT_EQ(before.freed + 2, after.freed);
	EXPECT_EQ(drv.calls[CDRV_FREE_HOST], drv_counts().calls[CDRV_FREE_HOST]);
}

TEST(cudas_memory_goes_back_to_cuda)
{
	struct gp_interpose_stats before = ip_stats(), after;
	struct cdrv_counts drv = drv_counts();
	void *wc;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&wc, 1 << 20, HOST_WRITE_COMBINED));
	ASSERT_EQ(1 << 20, cdrv_live_size_of(wc));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(wc));
	EXPECT_EQ(0, cdrv_live_size_of(wc));
	/* And a second free is CUDA's to refuse. */
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(wc));
	after = ip_stats();
	EXPECT_EQ(before.real_frees + 2, after.real_frees);
	EXPECT_EQ(before.bad_frees, after.bad_frees);
	EXPECT_EQ(drv.calls[CDRV_FREE_HOST] + 2, drv_counts().calls[CDRV_FREE_HOST]);
	EXPECT_EQ(drv.bad_frees + 1, drv_counts().bad_frees);
}

TEST(foreign_pointers)
{
	int on_stack;
	void *heap = malloc(64), *d;
	unsigned int f;

	ASSERT_NE(NULL, heap);
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(heap));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(&on_stack));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetFlags(&f, heap));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&d, &on_stack, 0));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(NULL));
	free(heap);
}

/* A freed buffer's memory is served again, to the next request. */
TEST(reuse_after_free)
{
	void *p, *q;
	int i;

	for (i = 0; i < 100; i++) {
		ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 100000, HOST_PORTABLE));
		ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
		ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&q, 100000, HOST_PORTABLE));
		EXPECT_EQ(p, q);
		ASSERT_EQ(RT_SUCCESS, cudaFreeHost(q));
	}
	EXPECT_EQ(0, ip_stats().live_bytes);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
