// SPDX-License-Identifier: MIT
/*
 * rt_figures: every figure of gp_interpose_stats() and of the stats file
 * (GPUPOOL_INTERPOSE_STATS) against what the program did, request by
 * request: served (by the runtime's and the driver's entry points), freed,
 * live bytes, passed to CUDA by why (flags, size 0, a registration CUDA
 * refused) with their bytes, refused in strict mode, frees passed on or
 * refused, the parent's memory in a child of fork(); the mode, the pool,
 * its backend.  A NULL result pointer and the queries count nothing.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

/* What the figures must be; compared field by field. */
static struct gp_interpose_stats want;

#define SAME(field) do {						\
	if (got.field != want.field) {					\
		fprintf(stderr, "# %s: %s is %llu, not %llu\n", step,	\
			#field, (unsigned long long)got.field,		\
			(unsigned long long)want.field);		\
		bad++;							\
	}								\
} while (0)

/* 0 when every figure is as wanted after step. */
static int check(const char *step)
{
	struct gp_interpose_stats got = ip_stats();
	int i, bad = 0;

	SAME(served);
	SAME(served_bytes);
	SAME(served_driver);
	SAME(freed);
	SAME(live_bytes);
	for (i = 0; i < GP_INTERPOSE_NR_WHY; i++) {
		SAME(fell_back[i]);
		SAME(fell_back_bytes[i]);
		SAME(refused[i]);
	}
	SAME(real_frees);
	SAME(bad_frees);
	SAME(inherited);
	SAME(mode);
	SAME(pool);
	if (got.pool == 1 && (got.reserved < got.live_bytes ||
			      strcmp(got.backend, getenv("GPUPOOL_BACKEND")))) {
		fprintf(stderr, "# %s: reserved %llu, backend %s\n", step,
			(unsigned long long)got.reserved, got.backend);
		bad++;
	}
	return bad;
}

static void served(size_t n, int driver)
{
	want.served++;
	want.served_bytes += n;
	want.served_driver += driver;
	want.live_bytes += n;
	want.pool = 1;
}

static void fell_back(int why, size_t n)
{
	want.fell_back[why]++;
	want.fell_back_bytes[why] += n;
}

/* The requests, each followed by its check; the status says how many
 * figures were wrong.
 */
static int requests(void)
{
	void (*fail_register)(int) = (void (*)(int))rt_sym("cdd_fail_register");
	int (*cu_alloc)(void **, size_t, unsigned int);
	void *a, *b, *wc, *z, *big, *heap = malloc(64);
	unsigned int f;
	int bad = check("start");

	*(void **)&cu_alloc = dlsym(RTLD_DEFAULT, "cuMemHostAlloc");
	bad += cudaHostAlloc(&a, 1000, 0) || (served(1000, 0), check("served 1000"));
	bad += cu_alloc(&b, 5000, HOST_MAPPED) ||
	       (served(5000, 1), check("served 5000 by the driver"));
	bad += cudaHostAlloc(&wc, 4096, HOST_WRITE_COMBINED) ||
	       (fell_back(GP_INTERPOSE_FLAGS, 4096), check("write-combined"));
	bad += cudaHostAlloc(&z, 0, 0) == RT_SUCCESS ||
	       (fell_back(GP_INTERPOSE_FLAGS, 0), check("size 0"));
	bad += cudaHostAlloc(NULL, 4096, 0) == RT_SUCCESS || check("NULL");
	bad += cudaHostGetFlags(&f, a) || check("a query");
	bad += cudaFreeHost(a) || (want.freed++, want.live_bytes -= 1000,
				   check("freed 1000"));
	bad += cudaFreeHost(a) != RT_INVALID_VALUE ||
	       (want.bad_frees++, check("a double free"));
	bad += cudaFreeHost(wc) || (want.real_frees++, check("CUDA's memory"));
	bad += cudaFreeHost(heap) != RT_INVALID_VALUE ||
	       (want.real_frees++, check("no one's memory"));
	fail_register(1);
	bad += cudaHostAlloc(&big, 64 << 20, 0) ||
	       (fell_back(GP_INTERPOSE_CUDA, 64 << 20), check("registration refused"));
	bad += cudaFreeHost(big) || (want.real_frees++, check("its free"));
	free(heap);
	cudaGetLastError();
	return bad;	/* b stays live: live_bytes 5000 in the report */
}

static int in_fallback(void)
{
	want.mode = GP_INTERPOSE_FALLBACK;
	return requests();
}

/* A child of fork(): its figures start at zero, the parent's buffer. */
static int in_a_child(void)
{
	void *p;
	pid_t pid;
	int st;

	if (cudaHostAlloc(&p, 3000, 0))
		return 100;
	pid = fork();
	if (pid == 0) {
		memset(&want, 0, sizeof(want));
		_exit(check("the child") + (cudaFreeHost(p) != RT_INITIALIZATION ||
					    (want.inherited++, check("inherited"))));
	}
	return waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ? 101 :
	       WEXITSTATUS(st);
}

static int in_strict(void)
{
	void (*fail_register)(int) = (void (*)(int))rt_sym("cdd_fail_register");
	void *p = NULL;

	want.mode = GP_INTERPOSE_STRICT;
	fail_register(1);
	if (cudaHostAlloc(&p, 4096, 0) != RT_MEMORY_ALLOCATION)
		return 100;
	want.refused[GP_INTERPOSE_CUDA]++;
	want.pool = 1;
	return check("strict, refused") + (cudaHostAlloc(&p, 4096, 0) ||
					   (served(4096, 0), check("strict, served")));
}

TEST(request_by_request)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=fallback", NULL };

	EXPECT_EQ(0, ip_spawn("fallback", env, NULL));
	EXPECT_EQ(0, ip_spawn("child", env, NULL));
}

TEST(strict)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=strict", NULL };

	EXPECT_EQ(0, ip_spawn("strict", env, "/dev/null"));
}

/* The stats file says the same, figure by figure. */
TEST(the_stats_file)
{
	char path[64], env_stats[128], line[512], expect[4][256];
	const char *env[] = { env_stats, "GPUPOOL_INTERPOSE_MODE=fallback", NULL };
	FILE *f;
	int i, n = 0;

	snprintf(path, sizeof(path), "/tmp/gpupool-ip-figures-%d", (int)getpid());
	unlink(path);
	snprintf(env_stats, sizeof(env_stats), "GPUPOOL_INTERPOSE_STATS=%s", path);
	ASSERT_EQ(0, ip_spawn("fallback", env, NULL));
	snprintf(expect[0], sizeof(expect[0]), " mode fallback pool %s\n",
		 getenv("GPUPOOL_BACKEND"));
	snprintf(expect[1], sizeof(expect[1]), "gpupool-interpose: served 2 bytes "
		 "6000 driver 1 freed 1 live_bytes 5000 reserved ");
	snprintf(expect[2], sizeof(expect[2]), "gpupool-interpose: fell_back "
		 "unavailable 0 pool_full 0 limit 0 cuda 1 flags 2 other 0 "
		 "unavailable_bytes 0 pool_full_bytes 0 limit_bytes 0 "
		 "cuda_bytes %d flags_bytes 4096 other_bytes 0\n", 64 << 20);
	snprintf(expect[3], sizeof(expect[3]), "gpupool-interpose: real_frees 3 "
		 "bad_frees 1 inherited 0\n");
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < 4; i++)
			n += strstr(line, expect[i]) != NULL;
		if (!strncmp(line, "gpupool-interpose: refused ", 27))
			EXPECT_EQ(0, strcmp(line, "gpupool-interpose: refused unavailable 0 "
					    "pool_full 0 limit 0 cuda 0 flags 0 other 0\n"));
	}
	fclose(f);
	unlink(path);
	EXPECT_EQ(4, n);
}

static const struct ip_scenario scenarios[] = {
	{ "fallback", in_fallback },
	{ "child", in_a_child },
	{ "strict", in_strict },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
