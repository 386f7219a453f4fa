// SPDX-License-Identifier: MIT
/*
 * rt_reentry: no wrapper of the interposer serves when it is entered from
 * inside another wrapper or from libgpupool's own CUDA calls, whichever
 * path the outer request took (served from a cached segment or a new
 * one, a device-pointer query, passed to CUDA, refused registration, a
 * child of fork(), a stream capture).
 *
 * How it is seen: the doubles call a hook of this program at the entry of
 * every call the interposer and libgpupool make (cdd_set_hook,
 * cdrv_set_hook).  While the program is inside one of its own calls to a
 * wrapper, the hook calls every wrapper of the interposer's list
 * (userlib/interpose/entries.h), each version of each, and checks that
 * each reached CUDA (the double counted the call) rather than answering
 * itself: a query about a live pool buffer, a free of a pointer inside
 * the pool that is no buffer, an allocation; and that the ways to the
 * driver's entry points still hand out the interposer's.  A wrapper that
 * served there is counted as entered; each path must call the hook and
 * count none.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"
#include "entries.h"

#include <pthread.h>

#define MODE_GLOBAL	0
#define N(a)		(sizeof(a) / sizeof((a)[0]))

static __thread int armed, probing;
static void *live;		/* a live pool buffer */
static int probes, entered, undecided;
static char first_entered[128];

static int (*swap_last)(int);
static int (*drv_free)(void *);

static void entry(const char *what)
{
	if (!entered++)
		snprintf(first_entered, sizeof(first_entered), "%s", what);
}

typedef int (*rt_q_fn)(void *, void *, unsigned int);

/* A runtime entry point (version v) that serves: did it reach the double? */
static void probe_runtime(const char *name, const char *version)
{
	void *fn = dlvsym(RTLD_DEFAULT, name, version), *p = NULL;
	char *inner = (char *)live + 8;
	struct cdd_counts before = rt_counts();
	unsigned int f;
	int r, fn_id = -1;

	if (!fn)
		return;
	if (!strcmp(name, "cudaHostAlloc")) {
		r = ((int (*)(void **, size_t, unsigned int))fn)(&p, 4096, 0);
		fn_id = CDD_HOST_ALLOC;
	} else if (!strcmp(name, "cudaMallocHost")) {
		r = ((int (*)(void **, size_t))fn)(&p, 4096);
		fn_id = CDD_HOST_ALLOC;
	} else if (!strcmp(name, "cudaFreeHost")) {
		r = ((int (*)(void *))fn)(inner);
		fn_id = CDD_FREE_HOST;
	} else if (!strcmp(name, "cudaHostGetFlags")) {
		r = ((int (*)(unsigned int *, void *))fn)(&f, live);
		fn_id = CDD_HOST_GET_FLAGS;
	} else if (!strcmp(name, "cudaHostGetDevicePointer")) {
		r = ((int (*)(void **, void *, unsigned int))fn)(&p, live, 0);
		p = NULL;
		fn_id = CDD_HOST_GET_DEVPTR;
	} else if (!strcmp(name, "cudaGetLastError") ||
		   !strcmp(name, "cudaPeekAtLastError")) {
		/* The runtime has none pending, the interposer one (the
		 * fixture's bad free): only the outermost would say it.
		 */
		int was = swap_last(RT_SUCCESS);

		r = ((int (*)(void))fn)();
		swap_last(was);
		if (r != RT_SUCCESS)
			entry(name);
		return;
	} else {
		fprintf(stderr, "# no probe for %s\n", name);
		entry(name);
		return;
	}
	(void)r;
	if (p && drv_free(p))
		undecided++;	/* served: not the driver's to free */
	if (rt_counts().calls[fn_id] == before.calls[fn_id])
		entry(name);
}

/* A driver entry point that serves, by the interposer's own symbol. */
static void probe_driver(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name), *p = NULL;
	struct cdrv_counts before = drv_counts();
	unsigned long long d;
	unsigned int f, d32;
	int fn_id;

	if (!strcmp(name, "cuMemHostAlloc")) {
		((int (*)(void **, size_t, unsigned int))fn)(&p, 4096, 0);
		fn_id = CDRV_HOST_ALLOC;
	} else if (!strcmp(name, "cuMemAllocHost")) {
		((int (*)(void **, unsigned int))fn)(&p, 4096);
		fn_id = CDRV_ALLOC_HOST;
	} else if (!strcmp(name, "cuMemAllocHost_v2")) {
		((int (*)(void **, size_t))fn)(&p, 4096);
		fn_id = CDRV_ALLOC_HOST;
	} else if (!strcmp(name, "cuMemFreeHost")) {
		((int (*)(void *))fn)((char *)live + 8);
		fn_id = CDRV_FREE_HOST;
	} else if (!strcmp(name, "cuMemHostGetFlags")) {
		((int (*)(unsigned int *, void *))fn)(&f, live);
		fn_id = CDRV_HOST_GET_FLAGS;
	} else if (!strcmp(name, "cuMemHostGetDevicePointer")) {
		((int (*)(unsigned int *, void *, unsigned int))fn)(&d32, live, 0);
		fn_id = CDRV_HOST_GET_DEVPTR;
	} else if (!strcmp(name, "cuMemHostGetDevicePointer_v2")) {
		((int (*)(unsigned long long *, void *, unsigned int))fn)(&d, live, 0);
		fn_id = CDRV_HOST_GET_DEVPTR;
	} else {
		fprintf(stderr, "# no probe for %s\n", name);
		entry(name);
		return;
	}
	if (p && drv_counts().live == before.live + 1)
		drv_free(p);
	if (drv_counts().calls[fn_id] == before.calls[fn_id])
		entry(name);
}

/* The ways to the driver's entry points swap at any depth. */
static void probe_swaps(const char *name, const char *version)
{
	void *fn = version ? dlvsym(RTLD_DEFAULT, name, version) :
		   dlsym(RTLD_DEFAULT, name), *got = NULL;
	int st, r;

	if (!fn)
		return;
	if (!strcmp(name, "cuGetProcAddress"))
		r = ((int (*)(const char *, void **, int, unsigned long long))fn)
			("cuMemHostAlloc", &got, 13000, 0);
	else if (!strcmp(name, "cuGetProcAddress_v2"))
		r = ((int (*)(const char *, void **, int, unsigned long long, int *))fn)
			("cuMemHostAlloc", &got, 13000, 0, &st);
	else if (strstr(name, "ByVersion"))
		r = ((int (*)(const char *, void **, unsigned int, unsigned long long,
			      int *))fn)("cuMemHostAlloc", &got, 12000, 0, &st);
	else
		r = ((int (*)(const char *, void **, unsigned long long, int *))fn)
			("cuMemHostAlloc", &got, 0, &st);
	/* A child of fork() has no driver: nothing to swap there. */
	if (r == 0 && got && got != dlsym(RTLD_DEFAULT, "cuMemHostAlloc"))
		entry(name);
}

static const char *const versions[] = {
	IP_RT_VERSION_0, IP_RT_VERSION_1, IP_RT_VERSION_2,
};

/* Every wrapper of the list, from inside whatever call the hook is in. */
static void probe_all(void)
{
	unsigned int v;

	if (!armed || probing)
		return;
	probing = 1;
	__atomic_fetch_add(&probes, 1, __ATOMIC_RELAXED);
#define DRV(name, kind, params, args)					\
	if (!strcmp(#kind, "serves"))					\
		probe_driver(#name);					\
	else								\
		probe_swaps(#name, NULL);
	IP_DRIVER_ENTRIES(DRV)
#undef DRV
	for (v = 0; v < N(versions); v++) {
#define RT(name, kind, vers, params, args)				\
		if (!strcmp(#kind, "serves"))				\
			probe_runtime(#name, versions[v]);		\
		else							\
			probe_swaps(#name, versions[v]);
		IP_RUNTIME_ENTRIES(RT)
#undef RT
	}
	probing = 0;
}

/* A live pool buffer, an error of the interposer's pending (a free of an
 * inner pointer), the hooks set: what every path starts from.
 */
static int set_up(void)
{
	void (*rt_hook)(void (*)(void)) = (void (*)(void (*)(void)))rt_sym("cdd_set_hook");
	void (*drv_hook)(void (*)(void)) = (void (*)(void (*)(void)))drv_sym("cdrv_set_hook");

	*(void **)&swap_last = rt_sym("cdd_swap_last_error");
	*(void **)&drv_free = drv_sym("cdrv_free");
	if (!rt_hook || !drv_hook || !swap_last || !drv_free ||
	    cudaHostAlloc(&live, 65536, HOST_MAPPED) ||
	    cudaFreeHost((char *)live + 8) != RT_INVALID_VALUE)
		return -1;
	rt_hook(probe_all);
	drv_hook(probe_all);
	probes = entered = undecided = 0;
	return 0;
}

/* The outer call, armed; 0 when the hook ran and no wrapper served. */
#define ARMED(call) __extension__({					\
	armed = 1;							\
	(void)(call);							\
	armed = 0;							\
})

static int verdict(struct __test_metadata *_metadata, const char *path)
{
	EXPECT_LT(0, probes) TH_LOG("%s: the hook never ran", path);
	EXPECT_EQ(0, entered) TH_LOG("%s: %d wrappers served inside another (first %s)",
				     path, entered, first_entered);
	EXPECT_EQ(0, undecided);
	return 0;
}

TEST(new_segment)
{
	void *p = NULL;

	ASSERT_EQ(0, set_up());
	ARMED(cudaHostAlloc(&p, 64 << 20, HOST_PORTABLE));
	ASSERT_NE(NULL, p);
	verdict(_metadata, "a new segment");
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

TEST(device_pointer)
{
	void *d = NULL;

	ASSERT_EQ(0, set_up());
	ARMED(cudaHostGetDevicePointer(&d, live, 0));
	EXPECT_EQ((uintptr_t)live + CDD_DEVPTR_DELTA, (uintptr_t)d);
	verdict(_metadata, "the device pointer");
}

TEST(passed_to_cuda)
{
	int (*cu_alloc)(void **, size_t, unsigned int);
	void *p = NULL, *q = NULL;

	ASSERT_EQ(0, set_up());
	*(void **)&cu_alloc = dlsym(RTLD_DEFAULT, "cuMemHostAlloc");
	ARMED(cudaHostAlloc(&p, 8192, HOST_WRITE_COMBINED));
	ARMED(cu_alloc(&q, 8192, HOST_WRITE_COMBINED));
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	ARMED(cudaFreeHost(p));
	ARMED(cudaFreeHost(q));
	verdict(_metadata, "passed to CUDA");
}

/* Registration refused: libgpupool clears its error, CUDA serves (or,
 * in strict mode, the request fails).
 */
TEST(registration_refused)
{
	void (*fail_register)(int) = (void (*)(int))rt_sym("cdd_fail_register");
	void *p = NULL;

	ASSERT_EQ(0, set_up());
	fail_register(1);
	ARMED(cudaHostAlloc(&p, 80 << 20, 0));
	verdict(_metadata, "a refused registration");
	if (ip_unservable(RT_SUCCESS) == RT_SUCCESS) {
		EXPECT_EQ(80 << 20, cdrv_live_size_of(p));
		EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
	} else {
		EXPECT_EQ(NULL, p);
	}
}

TEST(child_of_fork)
{
	pid_t pid;
	int st;

	ASSERT_EQ(0, set_up());
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		void *q = NULL;

		/* Its own pool opens, CUDA refuses it: a path through
		 * gp_open, registration and its error.
		 */
		ARMED(cudaHostAlloc(&q, 4096, 0));
		_exit(probes == 0 ? 2 : entered ? 3 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
}

TEST(stream_capture)
{
	rt_stream s;
	void *p = NULL, *g = NULL;

	ASSERT_EQ(0, set_up());
	ASSERT_EQ(RT_SUCCESS, cudaStreamCreate(&s));
	ASSERT_EQ(RT_SUCCESS, cudaStreamBeginCapture(s, MODE_GLOBAL));
	ARMED(cudaHostAlloc(&p, 96 << 20, HOST_PORTABLE));
	ASSERT_NE(NULL, p);
	/* The probes' own calls are not the program's: whatever they did to
	 * the capture, it ends.
	 */
	cudaStreamEndCapture(s, &g);
	verdict(_metadata, "a stream capture");
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
	cudaStreamDestroy(s);
}

/* The pool's first request in a process: gp_open's calls. */
static int first_request_scenario(void)
{
	void (*rt_hook)(void (*)(void)) = (void (*)(void (*)(void)))rt_sym("cdd_set_hook");
	void (*drv_hook)(void (*)(void)) = (void (*)(void (*)(void)))drv_sym("cdrv_set_hook");
	void *p = NULL;

	*(void **)&swap_last = rt_sym("cdd_swap_last_error");
	*(void **)&drv_free = drv_sym("cdrv_free");
	/* No pool buffer yet: the probes' queries are about a heap buffer,
	 * their allocations would deadlock on the pool's opening if they
	 * served (alarm: the test fails then rather than hangs).
	 */
	live = malloc(65536);
	rt_hook(probe_all);
	drv_hook(probe_all);
	alarm(60);
	ARMED(cudaHostAlloc(&p, 4096, 0));
	return !p ? 2 : probes == 0 ? 3 : entered ? 4 : 0;
}

TEST(first_request)
{
	EXPECT_EQ(0, ip_spawn("first_request", NULL, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "first_request", first_request_scenario },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
