// SPDX-License-Identifier: MIT
/*
 * drv_procaddr: the runtime's way to the driver (and any program's that
 * asks it likewise): cuGetProcAddress_v2 at cudaVersion 11030, 12000 and
 * 13000, cuGetProcAddress (v1), and the runtime's
 * cudaGetDriverEntryPoint(ByVersion), the runtime opened with dlopen()
 * as Python's ctypes opens it.  Where the driver answers with a pinned
 * host entry point, the interposer's comes back instead, the one for
 * exactly the version the driver chose (cuMemAllocHost at 3.2 and later
 * is _v2; cuGetProcAddress from 12.0 is _v2); every other answer, and
 * every status, is the driver's.
 */
#include "ip_test.h"

typedef int (*gpa_v2_fn)(const char *, void **, int, unsigned long long, int *);
typedef int (*gpa_v1_fn)(const char *, void **, int, unsigned long long);
typedef int (*entry_fn)(const char *, void **, unsigned long long, int *);
typedef int (*entry_byver_fn)(const char *, void **, unsigned int,
			      unsigned long long, int *);
typedef int (*cu_host_alloc_fn)(void **, size_t, unsigned int);
typedef int (*cu_free_fn)(void *);

#define FOUND		0
#define NOT_FOUND	1
#define TOO_OLD		2

static void *ours(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);	/* the preloaded definition */
}

FIXTURE(gpa) {
	void *dl;
	gpa_v2_fn gpa;
};

FIXTURE_SETUP(gpa)
{
	int (*init)(unsigned int);

	self->dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(NULL, self->dl);
	*(void **)&init = dlsym(self->dl, "cuInit");
	ASSERT_EQ(CU_SUCCESS, init(0));
	*(void **)&self->gpa = dlsym(self->dl, "cuGetProcAddress_v2");
	ASSERT_TRUE(ip_is_ours(self->gpa));
}

FIXTURE_TEARDOWN(gpa)
{
}

TEST_F(gpa, at_each_version)
{
	static const int versions[] = { 11030, 12000, 13000 };
	unsigned int i;
	void *fn;
	int st;

	for (i = 0; i < 3; i++) {
		int v = versions[i];

		ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemHostAlloc", &fn, v, 0, &st));
		EXPECT_EQ(ours("cuMemHostAlloc"), fn);
		EXPECT_EQ(FOUND, st);
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemAllocHost", &fn, v, 0, &st));
		EXPECT_EQ(ours("cuMemAllocHost_v2"), fn);
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemHostGetDevicePointer", &fn, v, 0, &st));
		EXPECT_EQ(ours("cuMemHostGetDevicePointer_v2"), fn);
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemFreeHost", &fn, v, 0, &st));
		EXPECT_EQ(ours("cuMemFreeHost"), fn);
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemHostGetFlags", &fn, v, 0, &st));
		EXPECT_EQ(ours("cuMemHostGetFlags"), fn);
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuGetProcAddress", &fn, v, 0, &st));
		EXPECT_EQ(ours(v < 12000 ? "cuGetProcAddress" : "cuGetProcAddress_v2"), fn);
		/* The driver's own. */
		ASSERT_EQ(CU_SUCCESS, self->gpa("cuInit", &fn, v, 0, &st));
		EXPECT_EQ(dlsym(self->dl, "cuInit"), fn);
		EXPECT_FALSE(ip_is_ours(fn));
	}
	/* Old versions: the first cuMemAllocHost, 32-bit size. */
	ASSERT_EQ(CU_SUCCESS, self->gpa("cuMemAllocHost", &fn, 3000, 0, &st));
	EXPECT_EQ(ours("cuMemAllocHost"), fn);
}

TEST_F(gpa, statuses_are_the_drivers)
{
	void *fn = (void *)1;
	int st = -1;

	EXPECT_EQ(CU_NOT_FOUND, self->gpa("cuGetProcAddress", &fn, 11020, 0, &st));
	EXPECT_EQ(NULL, fn);
	EXPECT_EQ(TOO_OLD, st);
	EXPECT_EQ(CU_NOT_FOUND, self->gpa("cuNoSuchFunction", &fn, 12000, 0, &st));
	EXPECT_EQ(NOT_FOUND, st);
	EXPECT_EQ(CU_SUCCESS, self->gpa("cuMemHostAlloc", &fn, 12000, 0, NULL));
}

/* The first cuGetProcAddress, and what it hands out, in use. */
TEST_F(gpa, version_one_and_served)
{
	struct gp_interpose_stats before = ip_stats(), after;
	cu_host_alloc_fn alloc;
	gpa_v1_fn gpa1;
	cu_free_fn release;
	void *p;

	*(void **)&gpa1 = dlsym(self->dl, "cuGetProcAddress");
	ASSERT_TRUE(ip_is_ours(gpa1));
	ASSERT_EQ(CU_SUCCESS, gpa1("cuMemHostAlloc", (void **)&alloc, 11030, 0));
	ASSERT_EQ(CU_SUCCESS, gpa1("cuMemFreeHost", (void **)&release, 11030, 0));
	ASSERT_EQ(CU_SUCCESS, alloc(&p, 300000, HOST_MAPPED));
	EXPECT_EQ(CU_SUCCESS, release(p));
	after = ip_stats();
	EXPECT_EQ(before.served_driver + 1, after.served_driver);
	EXPECT_EQ(before.freed + 1, after.freed);
}

/* The runtime, opened as ctypes opens it: its entry points by dlsym are
 * the interposer's, and what its cudaGetDriverEntryPoint(ByVersion)
 * hands out (the driver's answer, through the runtime) too.
 */
TEST(runtime_entry_points)
{
	void *rt = dlopen(tests_cudart, RTLD_NOW | RTLD_LOCAL);
	int (*host_alloc)(void **, size_t, unsigned int), (*free_host)(void *);
	entry_byver_fn byver;
	entry_fn entry;
	void *fn, *p;
	int st;

	ASSERT_NE(NULL, rt);
	*(void **)&host_alloc = dlsym(rt, "cudaHostAlloc");
	*(void **)&free_host = dlsym(rt, "cudaFreeHost");
	*(void **)&entry = dlsym(rt, "cudaGetDriverEntryPoint");
	*(void **)&byver = dlsym(rt, "cudaGetDriverEntryPointByVersion");
	ASSERT_TRUE(ip_is_ours(host_alloc));
	ASSERT_TRUE(ip_is_ours(entry));
	ASSERT_TRUE(ip_is_ours(byver));
	ASSERT_EQ(RT_SUCCESS, entry("cuMemHostAlloc", &fn, 0, &st));
	EXPECT_EQ(ours("cuMemHostAlloc"), fn);
	ASSERT_EQ(RT_SUCCESS, byver("cuMemAllocHost", &fn, 12000, 0, &st));
	EXPECT_EQ(ours("cuMemAllocHost_v2"), fn);
	ASSERT_EQ(RT_SUCCESS, byver("cuMemFreeHost", &fn, 13000, 0, &st));
	EXPECT_EQ(ours("cuMemFreeHost"), fn);
	/* What the double has of its own is not ours. */
	ASSERT_EQ(RT_SUCCESS, entry("cuMemCreate", &fn, 0, &st));
	EXPECT_FALSE(ip_is_ours(fn));
	ASSERT_EQ(RT_SUCCESS, host_alloc(&p, 4096, 0));
	EXPECT_EQ(RT_SUCCESS, free_host(p));
	EXPECT_EQ(1, ip_stats().served >= 1);
}

static const struct ip_scenario scenarios[] = { { NULL, NULL } };
IP_TEST_MAIN(scenarios)
