// SPDX-License-Identifier: MIT
/*
 * drv_dlsym: XLA's way (TensorFlow, JAX): no runtime linked, the driver
 * opened with dlopen("libcuda.so.1") and its entry points taken with
 * dlsym().  Under the interposer the pinned host ones come back as the
 * interposer's and are served by the pool; every other one is the
 * driver's own; dlsym() stays dlsym() for everyone else (RTLD_NEXT is
 * still relative to its caller, a successful lookup leaves no error).
 */
#include "ip_test.h"

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_host_alloc_fn)(void **, size_t, unsigned int);
typedef int (*cu_alloc_host_fn)(void **, size_t);
typedef int (*cu_alloc_host_v1_fn)(void **, unsigned int);
typedef int (*cu_free_fn)(void *);
typedef int (*cu_flags_fn)(unsigned int *, void *);
typedef int (*cu_devptr_fn)(unsigned long long *, void *, unsigned int);
typedef int (*cu_devptr_v1_fn)(unsigned int *, void *, unsigned int);

FIXTURE(driver) {
	void *dl;
	cu_host_alloc_fn host_alloc;
	cu_free_fn free_host;
	cu_flags_fn get_flags;
	cu_devptr_fn devptr;
};

#define SYM(dl, name) dlsym(dl, name)

FIXTURE_SETUP(driver)
{
	cu_init_fn init;

	self->dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, self->dl);
	*(void **)&init = SYM(self->dl, "cuInit");
	*(void **)&self->host_alloc = SYM(self->dl, "cuMemHostAlloc");
	*(void **)&self->free_host = SYM(self->dl, "cuMemFreeHost");
	*(void **)&self->get_flags = SYM(self->dl, "cuMemHostGetFlags");
	*(void **)&self->devptr = SYM(self->dl, "cuMemHostGetDevicePointer_v2");
	ASSERT_NE(NULL, init);
	ASSERT_EQ(CU_SUCCESS, init(0));
}

FIXTURE_TEARDOWN(driver)
{
}

TEST_F(driver, wrapped_entry_points_are_the_interposers)
{
	static const char *const wrapped[] = {
		"cuMemHostAlloc", "cuMemAllocHost", "cuMemAllocHost_v2",
		"cuMemFreeHost", "cuMemHostGetFlags", "cuMemHostGetDevicePointer",
		"cuMemHostGetDevicePointer_v2", "cuGetProcAddress",
		"cuGetProcAddress_v2",
	};
	unsigned int i;

	for (i = 0; i < sizeof(wrapped) / sizeof(wrapped[0]); i++) {
		dlerror();
		EXPECT_TRUE(ip_is_ours(dlsym(self->dl, wrapped[i])))
			TH_LOG("%s", wrapped[i]);
		EXPECT_EQ(NULL, dlerror());
	}
	/* Not a pinned host call: the driver's own. */
	EXPECT_FALSE(ip_is_ours(dlsym(self->dl, "cuInit")));
	EXPECT_FALSE(ip_is_ours(dlsym(self->dl, "cuMemHostRegister_v2")));
	EXPECT_EQ(NULL, dlsym(self->dl, "cuNoSuchFunction"));
	EXPECT_NE(NULL, dlerror());
}

TEST_F(driver, served_by_the_pool)
{
	struct gp_interpose_stats before = ip_stats(), after;
	cu_alloc_host_fn alloc_v2;
	cu_alloc_host_v1_fn alloc_v1;
	cu_devptr_v1_fn devptr_v1;
	unsigned long long d;
	unsigned int f, d32;
	void *p, *q, *r;

	ASSERT_EQ(CU_SUCCESS, self->host_alloc(&p, 1 << 20, HOST_PORTABLE));
	EXPECT_EQ(CU_SUCCESS, self->get_flags(&f, (char *)p + 100));
	EXPECT_EQ(HOST_PORTABLE, f);
	EXPECT_EQ(CU_SUCCESS, self->devptr(&d, p, 0));
	EXPECT_EQ((uintptr_t)p + CDD_DEVPTR_DELTA, d);
	*(void **)&alloc_v2 = dlsym(self->dl, "cuMemAllocHost_v2");
	*(void **)&alloc_v1 = dlsym(self->dl, "cuMemAllocHost");
	*(void **)&devptr_v1 = dlsym(self->dl, "cuMemHostGetDevicePointer");
	ASSERT_EQ(CU_SUCCESS, alloc_v2(&q, 5000));
	ASSERT_EQ(CU_SUCCESS, alloc_v1(&r, 5000u));
	EXPECT_EQ(CU_SUCCESS, self->get_flags(&f, r));
	EXPECT_EQ(0, f);
	/* A 32-bit device address cannot hold this one, as the driver says. */
	EXPECT_EQ(CU_INVALID_VALUE, devptr_v1(&d32, q, 0));
	EXPECT_EQ(CU_SUCCESS, self->free_host(p));
	EXPECT_EQ(CU_SUCCESS, self->free_host(q));
	EXPECT_EQ(CU_SUCCESS, self->free_host(r));
	after = ip_stats();
	EXPECT_EQ(before.served_driver + 3, after.served_driver);
	EXPECT_EQ(before.freed + 3, after.freed);
	EXPECT_EQ(0, drv_counts().live);
}

TEST_F(driver, cudas_errors_and_cudas_memory)
{
	struct gp_interpose_stats before = ip_stats(), after;
	void *p, *wc;

	ASSERT_EQ(CU_SUCCESS, self->host_alloc(&p, 4096, 0));
	EXPECT_EQ(CU_SUCCESS, self->free_host(p));
	EXPECT_EQ(CU_INVALID_VALUE, self->free_host(p));
	ASSERT_EQ(CU_SUCCESS, self->host_alloc(&wc, 4096, HOST_WRITE_COMBINED));
	EXPECT_EQ(4096, cdrv_live_size_of(wc));
	EXPECT_EQ(CU_SUCCESS, self->free_host(wc));
	/* Unknown flags: the driver's answer. */
	EXPECT_EQ(CU_INVALID_VALUE, self->host_alloc(&p, 4096, 0x10));
	after = ip_stats();
	EXPECT_EQ(before.bad_frees + 1, after.bad_frees);
	EXPECT_EQ(before.real_frees + 1, after.real_frees);
	EXPECT_EQ(before.fell_back[GP_INTERPOSE_FLAGS] + 2,
		  after.fell_back[GP_INTERPOSE_FLAGS]);
}

/* RTLD_NEXT is relative to the caller: from this program, the next
 * definition of cuMemHostAlloc is the interposer's (preloaded after it);
 * from the interposer it would be none (the driver is RTLD_LOCAL).
 */
TEST(rtld_next_stays_the_callers)
{
	EXPECT_TRUE(ip_is_ours(dlsym(RTLD_NEXT, "cuMemHostAlloc")));
	EXPECT_NE(NULL, dlsym(RTLD_NEXT, "malloc"));
	EXPECT_TRUE(ip_is_ours(dlsym(RTLD_DEFAULT, "cuMemFreeHost")));
}

static int strict_no_pool(void)
{
	void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_host_alloc_fn alloc;
	cu_init_fn init;
	void *p = NULL;

	*(void **)&init = dlsym(dl, "cuInit");
	*(void **)&alloc = dlsym(dl, "cuMemHostAlloc");
	if (!init || !alloc || init(0))
		return 10;
	return !(alloc(&p, 4096, 0) == CU_OUT_OF_MEMORY && !p &&
		 ip_stats().refused[GP_INTERPOSE_UNAVAILABLE] == 1);
}

TEST(strict_without_a_pool_is_out_of_memory)
{
	static const char *const env[] = {
		"GPUPOOL_BACKEND=kernel", "GPUPOOL_INTERPOSE_MODE=strict", NULL,
	};

	if (access("/dev/gpupool", F_OK) == 0)
		SKIP(return, "gpupool.ko is loaded: the pool is available");
	EXPECT_EQ(0, ip_spawn("strict_no_pool", env, "/dev/null"));
}

static const struct ip_scenario scenarios[] = {
	{ "strict_no_pool", strict_no_pool },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
