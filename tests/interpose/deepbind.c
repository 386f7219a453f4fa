// SPDX-License-Identifier: MIT
/*
 * deepbind: the runtime reached from places the interposer's runtime
 * symbols do not reach, each in a process of its own (what loads first
 * is the point).  Built without sanitizers (they refuse RTLD_DEEPBIND),
 * against the interposer as installed.
 *
 * A library opened with RTLD_DEEPBIND looks up its symbols in its own
 * dependencies first, so its cudaHostAlloc binds the runtime's, not the
 * interposer's.  The runtime reaches the driver through the
 * cuGetProcAddress it found with dlsym():
 * - when the process had loaded the runtime before (a framework that
 *   opens a plugin), that dlsym was the interposer's: the request is
 *   served by the pool, through the driver's entry points;
 * - when the library brought the runtime, the runtime was loaded into
 *   the same deep scope, its dlsym is glibc's, and the interposer never
 *   sees the request: CUDA serves it.
 * A runtime linked statically into a library (DALI, RMM; here the
 * runtime double built into libdeep_static.so, its symbols hidden) is
 * the same: served through the driver when the library is opened as
 * usual, CUDA's when it is opened with RTLD_DEEPBIND.  docs/interpose.md
 * says so.
 */
#include "ip_test.h"

/* A pinned allocation of n bytes through lib's deep_alloc, written and
 * freed; 0, or which step failed.
 */
static int deep_pair(const char *lib, int mode, size_t n)
{
	void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL | mode);
	int (*alloc)(void **, size_t), (*release)(void *);
	void *p;

	if (!dl)
		return 1;
	*(void **)&alloc = dlsym(dl, "deep_alloc");
	*(void **)&release = dlsym(dl, "deep_free");
	if (!alloc || !release || alloc(&p, n))
		return 2;
	memset(p, 3, n);
	return release(p) ? 3 : 0;
}

/* Served by the pool through the driver's entry points; or (pool 0)
 * never seen by the interposer, the driver's own allocation.
 */
static int seen(int pool, const struct cdrv_counts *before)
{
	struct gp_interpose_stats st = ip_stats();

	if (!pool)
		return !(st.served == 0 && st.pool == 0 &&
			 drv_counts().calls[CDRV_HOST_ALLOC] ==
			 before->calls[CDRV_HOST_ALLOC] + 1);
	return !(st.served == 1 && st.served_driver == 1 && st.freed == 1 &&
		 st.pool == 1);
}

/* deep_pair() of lib opened with mode; then seen(pool). */
static int deep_case(const char *lib, int mode, int pool)
{
	struct cdrv_counts before = drv_counts();

	return deep_pair(lib, mode, 100000) ?: seen(pool, &before);
}

static int runtime_first(void)
{
	if (!dlopen(tests_cudart, RTLD_NOW | RTLD_GLOBAL))
		return 10;
	return deep_case(tests_libdeep, RTLD_DEEPBIND, 1);
}

static int library_brings_runtime(void)
{
	return deep_case(tests_libdeep, RTLD_DEEPBIND, 0);
}

static int static_runtime(void)
{
	return deep_case(tests_libdeep_static, 0, 1);
}

static int static_runtime_deepbind(void)
{
	return deep_case(tests_libdeep_static, RTLD_DEEPBIND, 0);
}

TEST(deepbind_library_after_the_runtime)
{
	EXPECT_EQ(0, ip_spawn("runtime_first", NULL, NULL));
}

TEST(deepbind_library_bringing_the_runtime_is_cudas)
{
	EXPECT_EQ(0, ip_spawn("library_brings_runtime", NULL, NULL));
}

TEST(static_runtime_in_a_library)
{
	EXPECT_EQ(0, ip_spawn("static_runtime", NULL, NULL));
}

TEST(static_runtime_in_a_deepbind_library_is_cudas)
{
	EXPECT_EQ(0, ip_spawn("static_runtime_deepbind", NULL, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "runtime_first", runtime_first },
	{ "library_brings_runtime", library_brings_runtime },
	{ "static_runtime", static_runtime },
	{ "static_runtime_deepbind", static_runtime_deepbind },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
