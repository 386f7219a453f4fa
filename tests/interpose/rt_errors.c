// SPDX-License-Identifier: MIT
/*
 * rt_errors: CUDA's error state under the interposer.  The runtime keeps
 * a thread's last error until cudaGetLastError() returns it (and clears
 * it); cudaPeekAtLastError() returns it and keeps it; a successful call
 * leaves it.  Every error the interposer answers itself through the
 * runtime's entry points (strict mode's out of memory; a free or a query
 * of no live pool buffer; the parent's memory in a child of fork()) is
 * pending afterwards as CUDA's own would be, the runtime's own errors
 * keep working (and the double's state is CUDA's: the control case), and
 * the newer of the two is the one returned.  The driver keeps no such
 * state: its entry points leave the runtime's as it is.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#define RT_INVALID_DEVICE	101

int cudaSetDevice(int d);
int cudaGetDevice(int *d);
int cudaPeekAtLastError(void);

/* e is pending: peeked twice, kept across a successful call, then taken
 * and cleared.  0 when it held, else the step that did not.
 */
static int pending(int e)
{
	int dev;
	void *p;

	if (cudaPeekAtLastError() != e || cudaPeekAtLastError() != e)
		return 1;
	if (cudaGetDevice(&dev) || cudaHostAlloc(&p, 4096, 0) || cudaFreeHost(p))
		return 2;
	if (cudaPeekAtLastError() != e)
		return 3;
	if (cudaGetLastError() != e)
		return 4;
	return cudaGetLastError() != RT_SUCCESS || cudaPeekAtLastError() != RT_SUCCESS ?
	       5 : 0;
}

/* The control: the double's own state is CUDA's. */
TEST(the_runtimes_own_errors)
{
	ASSERT_EQ(RT_SUCCESS, cudaGetLastError());
	EXPECT_EQ(RT_INVALID_DEVICE, cudaSetDevice(99));
	EXPECT_EQ(0, pending(RT_INVALID_DEVICE));
	/* A newer error replaces an older one. */
	EXPECT_EQ(RT_INVALID_DEVICE, cudaSetDevice(99));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostAlloc(NULL, 4096, 0));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
	/* Passed to CUDA, refused there: CUDA's error, CUDA's state. */
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostAlloc(&(void *){ NULL }, 4096, 8));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
}

/* Each invalid-value answer of the interposer (no live buffer there). */
TEST(invalid_value_answers)
{
	void *p, *d;
	unsigned int f;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 8192, 0));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost((char *)p + 512));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetFlags(&f, p));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
	EXPECT_EQ(RT_INVALID_VALUE, cudaHostGetDevicePointer(&d, p, 0));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
}

/* The interposer's error takes the runtime's older one; the runtime's
 * newer one comes first and clears both.
 */
TEST(the_newer_error_wins)
{
	void *p;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_DEVICE, cudaSetDevice(99));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
	EXPECT_EQ(0, pending(RT_INVALID_VALUE));
	EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
	EXPECT_EQ(RT_INVALID_DEVICE, cudaSetDevice(99));
	EXPECT_EQ(0, pending(RT_INVALID_DEVICE));
}

/* Every runtime version's entry points share the thread's state. */
TEST(every_version)
{
	static const char *const versions[] = {
		"libcudart.so.11.0", "libcudart.so.12", "libcudart.so.13",
	};
	int (*peek)(void), (*get)(void);
	unsigned int i;
	void *p;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	ASSERT_EQ(RT_SUCCESS, cudaFreeHost(p));
	for (i = 0; i < 3; i++) {
		*(void **)&peek = dlvsym(RTLD_DEFAULT, "cudaPeekAtLastError", versions[i]);
		*(void **)&get = dlvsym(RTLD_DEFAULT, "cudaGetLastError", versions[i]);
		ASSERT_TRUE(ip_is_ours(peek) && ip_is_ours(get));
		EXPECT_EQ(RT_INVALID_VALUE, cudaFreeHost(p));
		EXPECT_EQ(RT_INVALID_VALUE, peek());
		EXPECT_EQ(RT_INVALID_VALUE, get()) TH_LOG("%s", versions[i]);
		EXPECT_EQ(RT_SUCCESS, get());
	}
}

/* The driver's entry points: their answer only. */
TEST(the_driver_keeps_none)
{
	int (*cu_free)(void *) = (int (*)(void *))dlsym(RTLD_DEFAULT, "cuMemFreeHost");
	void *p;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	EXPECT_EQ(CU_INVALID_VALUE, cu_free((char *)p + 8));
	EXPECT_EQ(RT_SUCCESS, cudaPeekAtLastError());
	EXPECT_EQ(CU_SUCCESS, cu_free(p));
}

/* A child of fork(): the parent's memory answers not initialized. */
TEST(child_of_fork)
{
	unsigned int f;
	void *p, *d;
	pid_t pid;
	int st;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int bad = 0;

		/* Its own CUDA calls fail there: no pending() here. */
		bad |= (cudaFreeHost(p) != RT_INITIALIZATION ||
			cudaPeekAtLastError() != RT_INITIALIZATION ||
			cudaGetLastError() != RT_INITIALIZATION) << 1;
		bad |= (cudaHostGetFlags(&f, p) != RT_INITIALIZATION ||
			cudaGetLastError() != RT_INITIALIZATION) << 2;
		bad |= (cudaHostGetDevicePointer(&d, p, 0) != RT_INITIALIZATION ||
			cudaGetLastError() != RT_INITIALIZATION) << 3;
		bad |= (cudaGetLastError() != RT_SUCCESS) << 4;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, WIFEXITED(st) ? WEXITSTATUS(st) : 100);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

/* Strict mode, a new segment CUDA refuses to register: out of memory,
 * from both of the runtime's allocations.
 */
static int strict_oom(void)
{
	void (*fail_register)(int) = (void (*)(int))rt_sym("cdd_fail_register");
	void *p = NULL;
	int r;

	fail_register(2);
	if (cudaHostAlloc(&p, 4096, 0) != RT_MEMORY_ALLOCATION || p)
		return 10;
	if (cudaPeekAtLastError() != RT_MEMORY_ALLOCATION ||
	    cudaGetLastError() != RT_MEMORY_ALLOCATION ||
	    cudaGetLastError() != RT_SUCCESS)
		return 11;
	if (cudaMallocHost(&p, 4096) != RT_MEMORY_ALLOCATION)
		return 12;
	r = pending(RT_MEMORY_ALLOCATION);
	return r ? 20 + r : ip_stats().refused[GP_INTERPOSE_CUDA] != 2;
}

TEST(strict_out_of_memory)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=strict", NULL };

	EXPECT_EQ(0, ip_spawn("strict_oom", env, "/dev/null"));
}

static const struct ip_scenario scenarios[] = {
	{ "strict_oom", strict_oom },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
