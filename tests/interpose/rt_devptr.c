// SPDX-License-Identifier: MIT
/*
 * rt_devptr: the device address of pinned memory, asked every way a
 * program asks it (the runtime's cudaHostGetDevicePointer by symbol, the
 * driver's cuMemHostGetDevicePointer and _v2 by dlsym() and by
 * cuGetProcAddress_v2), in both modes.  For a pool buffer the answer is
 * CUDA's for the registered segment at that address: the interposer asks
 * the runtime, and the runtime asks the driver through the entry point it
 * took from cuGetProcAddress_v2, which is the interposer's own wrapper.
 * That call must reach the driver, not the interposer's query again (it
 * recursed until the stack overflowed, with the real runtime as with the
 * double, which asks the driver as the real runtime does).
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

typedef int (*devptr_fn)(unsigned long long *, void *, unsigned int);
typedef int (*devptr_v1_fn)(unsigned int *, void *, unsigned int);
typedef int (*gpa_v2_fn)(const char *, void **, int, unsigned long long, int *);

static uint64_t driver_devptr_calls(void)
{
	return drv_counts().calls[CDRV_HOST_GET_DEVPTR];
}

/* The runtime's answer for [p, p + n), CUDA's (the driver saw each). */
static int runtime_answers(void *p, size_t n)
{
	size_t offs[] = { 0, 1, n / 2, n - 1 };
	uint64_t before = driver_devptr_calls();
	unsigned int i;
	void *d;

	for (i = 0; i < 4; i++) {
		d = NULL;
		if (cudaHostGetDevicePointer(&d, (char *)p + offs[i], 0) ||
		    (uintptr_t)d != (uintptr_t)p + offs[i] + CDD_DEVPTR_DELTA)
			return 0;
	}
	return driver_devptr_calls() >= before + 4;
}

TEST(runtime_by_symbol)
{
	static const size_t sizes[] = { 4096, 1 << 20, 8 << 20 };
	unsigned int i;
	void *p;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, sizes[i], HOST_MAPPED));
		EXPECT_TRUE(runtime_answers(p, sizes[i])) TH_LOG("%zu bytes", sizes[i]);
		EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
	}
	EXPECT_EQ(sizeof(sizes) / sizeof(sizes[0]), ip_stats().served);
}

/* The driver's entry points, from dlsym() on the driver and from its
 * cuGetProcAddress_v2 (both the interposer's).
 */
TEST(driver_entry_points)
{
	void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *p;
	devptr_fn by_dlsym, by_gpa;
	devptr_v1_fn v1;
	gpa_v2_fn gpa;
	unsigned long long d;
	unsigned int d32;
	uint64_t before;
	int st;

	ASSERT_NE(NULL, dl);
	*(void **)&by_dlsym = dlsym(dl, "cuMemHostGetDevicePointer_v2");
	*(void **)&v1 = dlsym(dl, "cuMemHostGetDevicePointer");
	*(void **)&gpa = dlsym(dl, "cuGetProcAddress_v2");
	ASSERT_TRUE(ip_is_ours(by_dlsym));
	ASSERT_TRUE(ip_is_ours(gpa));
	ASSERT_EQ(CU_SUCCESS, gpa("cuMemHostGetDevicePointer", (void **)&by_gpa,
				  13000, 0, &st));
	ASSERT_TRUE(ip_is_ours(by_gpa));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 100000, HOST_MAPPED));
	before = driver_devptr_calls();
	EXPECT_EQ(CU_SUCCESS, by_dlsym(&d, (char *)p + 7, 0));
	EXPECT_EQ((uintptr_t)p + 7 + CDD_DEVPTR_DELTA, d);
	EXPECT_EQ(CU_SUCCESS, by_gpa(&d, p, 0));
	EXPECT_EQ((uintptr_t)p + CDD_DEVPTR_DELTA, d);
	/* No 32-bit device address holds it: the driver's answer. */
	EXPECT_EQ(CU_INVALID_VALUE, v1(&d32, p, 0));
	EXPECT_LE(before + 3, driver_devptr_calls());
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

/* What the pool does not hold: a freed buffer is refused without asking
 * CUDA; CUDA's own memory is CUDA's to answer.
 */
TEST(freed_and_cudas_own)
{
	uint64_t before;
	void *p, *wc, *d;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, HOST_MAPPED));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	before = driver_devptr_calls();
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&d, p, 0));
	EXPECT_EQ(before, driver_devptr_calls());
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&wc, 8192, HOST_WRITE_COMBINED));
	EXPECT_EQ(RT_SUCCESS, cudaHostGetDevicePointer(&d, (char *)wc + 100, 0));
	EXPECT_EQ((uintptr_t)wc + 100 + CDD_DEVPTR_DELTA, (uintptr_t)d);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(wc));
}

static int strict_devptr(void)
{
	void *p;
	int ok;

	if (cudaHostAlloc(&p, 65536, HOST_MAPPED))
		return 2;
	ok = runtime_answers(p, 65536) && ip_stats().mode == GP_INTERPOSE_STRICT;
	return cudaFreeHost(p) || !ok;
}

TEST(strict_mode)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=strict", NULL };

	EXPECT_EQ(0, ip_spawn("strict_devptr", env, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "strict_devptr", strict_devptr },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
