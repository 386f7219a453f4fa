// SPDX-License-Identifier: MIT
/*
 * drv_linked: a program linked against the driver (-lcuda: here the
 * driver double as libcuda.so.1), calling its pinned host entry points by
 * symbol.  They bind the interposer's (preloaded before the driver), which
 * serves them from the pool and passes the rest to the driver's own,
 * found after it.
 */
#include "ip_test.h"

int cuInit(unsigned int flags);
int cuMemHostAlloc(void **pp, size_t n, unsigned int flags);
int cuMemAllocHost_v2(void **pp, size_t n);
int cuMemFreeHost(void *p);
int cuMemHostGetFlags(unsigned int *flags, void *p);
int cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p,
				 unsigned int flags);

TEST(by_symbol)
{
	struct gp_interpose_stats before = ip_stats(), after;
	unsigned long long d;
	unsigned int f;
	void *p, *q, *wc;

	ASSERT_EQ(CU_SUCCESS, cuInit(0));
	EXPECT_TRUE(ip_is_ours(dlsym(RTLD_DEFAULT, "cuMemHostAlloc")));
	ASSERT_EQ(CU_SUCCESS, cuMemHostAlloc(&p, 5 << 20, HOST_MAPPED));
	ASSERT_EQ(CU_SUCCESS, cuMemAllocHost_v2(&q, 1000));
	EXPECT_EQ(CU_SUCCESS, cuMemHostGetFlags(&f, (char *)p + 4096));
	EXPECT_EQ(HOST_MAPPED, f);
	EXPECT_EQ(CU_SUCCESS, cuMemHostGetDevicePointer_v2(&d, q, 0));
	EXPECT_EQ((uintptr_t)q + CDD_DEVPTR_DELTA, d);
	/* The driver's own, through the interposer. */
	ASSERT_EQ(CU_SUCCESS, cuMemHostAlloc(&wc, 4096, HOST_WRITE_COMBINED));
	EXPECT_EQ(4096, cdrv_live_size_of(wc));
	EXPECT_EQ(CU_SUCCESS, cuMemFreeHost(wc));
	EXPECT_EQ(CU_SUCCESS, cuMemFreeHost(p));
	EXPECT_EQ(CU_SUCCESS, cuMemFreeHost(q));
	EXPECT_EQ(CU_INVALID_VALUE, cuMemFreeHost(q));
	after = ip_stats();
	EXPECT_EQ(before.served_driver + 2, after.served_driver);
	EXPECT_EQ(before.freed + 2, after.freed);
	EXPECT_EQ(before.real_frees + 1, after.real_frees);
	EXPECT_EQ(0, drv_counts().live);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
