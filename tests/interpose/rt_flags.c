// SPDX-License-Identifier: MIT
/*
 * rt_flags: a program linked against the runtime (cudaHostAlloc and kin by
 * symbol, libcudart.so.13's versions), under the interposer: every flag
 * the pool honours is served from the pool at the size asked, answers the
 * flag and device-pointer queries as CUDA would, and every flag it does
 * not honour goes to CUDA.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

static const size_t sizes[] = {
	1, 511, 512, 4097, 1 << 20, (1 << 20) + 1, 10 << 20, 64 << 20,
};

/* Served from the pool, the flags and device address as CUDA says. */
static int served_well(void *p, size_t n, unsigned int flags)
{
	unsigned int f = ~0u;
	void *d = NULL;

	memset(p, 0xa5, n);
	if (cudaHostGetFlags(&f, p) || f != flags)
		return 0;
	if (cudaHostGetFlags(&f, (char *)p + n - 1) || f != flags)
		return 0;
	if (cudaHostGetDevicePointer(&d, (char *)p + n / 2, 0) ||
	    (uintptr_t)d != (uintptr_t)p + n / 2 + CDD_DEVPTR_DELTA)
		return 0;
	return ((unsigned char *)p)[n - 1] == 0xa5;
}

TEST(served_flags_and_sizes)
{
	struct gp_interpose_stats before = ip_stats(), after;
	struct cdrv_counts drv = drv_counts();
	unsigned int flags;
	uint64_t bytes = 0;
	unsigned int i;
	void *p;

	for (flags = 0; flags <= (HOST_PORTABLE | HOST_MAPPED); flags++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			p = NULL;
			ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, sizes[i], flags));
			ASSERT_NE(NULL, p);
			EXPECT_TRUE(served_well(p, sizes[i], flags))
				TH_LOG("flags %u, %zu bytes", flags, sizes[i]);
			ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
			bytes += sizes[i];
		}
	ASSERT_EQ(RT_SUCCESS, cudaMallocHost(&p, 3000));
	EXPECT_TRUE(served_well(p, 3000, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	after = ip_stats();
	EXPECT_EQ(1, after.pool);
	EXPECT_EQ(before.served + 4 * 8 + 1, after.served);
	EXPECT_EQ(before.served_bytes + bytes + 3000, after.served_bytes);
	EXPECT_EQ(after.served, after.freed);
	EXPECT_EQ(0, after.live_bytes);
	EXPECT_EQ(0, after.served_driver);
	/* None of it reached CUDA's allocator. */
	EXPECT_EQ(drv.calls[CDRV_HOST_ALLOC], drv_counts().calls[CDRV_HOST_ALLOC]);
}

/* PyTorch's rounding is its own: the pool keeps 129.5 MB in a segment of
 * 130 MB (2 MiB steps), not 256 MB.
 */
TEST(own_size_not_a_power_of_two)
{
	uint64_t before = ip_stats().reserved;
	size_t n = 129500000;
	void *p;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, n, HOST_PORTABLE));
	EXPECT_LE(ip_stats().reserved - before, n + (2ul << 20));
	EXPECT_GE(ip_stats().reserved - before, n);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

TEST(write_combined_and_unknown_flags_go_to_cuda)
{
	static const unsigned int to_cuda[] = { 4, 5, 6, 7 };
	struct gp_interpose_stats before = ip_stats(), after;
	struct cdrv_counts drv = drv_counts(), now;
	unsigned int i, f;
	void *p;

	for (i = 0; i < sizeof(to_cuda) / sizeof(to_cuda[0]); i++) {
		ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 8192, to_cuda[i]));
		now = drv_counts();
		EXPECT_EQ(8192, cdrv_live_size_of(p));
		EXPECT_EQ(RT_SUCCESS, cudaHostGetFlags(&f, p));
		EXPECT_EQ(to_cuda[i], f);
		EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
		EXPECT_EQ(now.live - 1, drv_counts().live);
	}
	/* Unknown: CUDA's answer, whatever it is (the double's: invalid). */
	p = NULL;
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostAlloc(&p, 8192, 8));
	EXPECT_EQ(NULL, p);
	after = ip_stats();
	EXPECT_EQ(before.fell_back[GP_INTERPOSE_FLAGS] + 5,
		  after.fell_back[GP_INTERPOSE_FLAGS]);
	EXPECT_EQ(before.served, after.served);
	EXPECT_EQ(drv.calls[CDRV_HOST_ALLOC] + 5, drv_counts().calls[CDRV_HOST_ALLOC]);
}

/* Size 0 reaches CUDA, counted as flags (docs/interpose.md); a NULL
 * result pointer is no request: CUDA's answer, uncounted.
 */
TEST(size_zero_and_null_are_cudas)
{
	struct gp_interpose_stats before = ip_stats(), after;
	struct cdrv_counts drv = drv_counts();
	void *p = NULL;

	EXPECT_EQ(RT_INVALID_VALUE, cudaHostAlloc(&p, 0, 0));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostAlloc(NULL, 4096, 0));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&p, &p, 1));
	after = ip_stats();
	EXPECT_EQ(before.served, after.served);
	EXPECT_EQ(before.fell_back[GP_INTERPOSE_FLAGS] + 1,
		  after.fell_back[GP_INTERPOSE_FLAGS]);
	EXPECT_EQ(before.fell_back_bytes[GP_INTERPOSE_FLAGS],
		  after.fell_back_bytes[GP_INTERPOSE_FLAGS]);
	/* The size 0 request reached the driver. */
	EXPECT_EQ(drv.calls[CDRV_HOST_ALLOC] + 1, drv_counts().calls[CDRV_HOST_ALLOC]);
	cudaGetLastError();
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
