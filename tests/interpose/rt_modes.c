// SPDX-License-Identifier: MIT
/*
 * rt_modes: what the pool cannot serve, in each mode.  Here the pool is
 * unavailable (the kernel backend asked for where no module is loaded, so
 * these skip in the VM), or CUDA refuses to register a new segment:
 * fallback mode hands the request to CUDA, counts it and says so once;
 * strict mode fails it with CUDA's out-of-memory error; a bad mode is
 * said and turns the interposer off.  The figures go to stderr with
 * GPUPOOL_DEBUG and to a file with GPUPOOL_INTERPOSE_STATS, appended by
 * every process.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

/* Three requests, three frees; the status says whether each went as the
 * mode says.
 */
static int three_requests(int want)
{
	struct gp_interpose_stats st;
	int i, ok = 1;
	void *p;

	for (i = 0; i < 3; i++) {
		p = NULL;
		if (cudaHostAlloc(&p, 65536, HOST_PORTABLE) != want)
			ok = 0;
		if (want == RT_SUCCESS && (cdrv_live_size_of(p) != 65536 ||
					   cudaFreeHost(p)))
			ok = 0;
		if (want != RT_SUCCESS && p)
			ok = 0;
	}
	st = ip_stats();
	if (st.served || st.pool != -1 || !strstr(st.why, "/dev/gpupool"))
		ok = 0;
	if (want == RT_SUCCESS)
		ok &= st.fell_back[GP_INTERPOSE_UNAVAILABLE] == 3 &&
		      st.fell_back_bytes[GP_INTERPOSE_UNAVAILABLE] == 3 * 65536;
	else
		ok &= st.refused[GP_INTERPOSE_UNAVAILABLE] == 3;
	return !ok;
}

static int fallback_unavailable(void)
{
	return three_requests(RT_SUCCESS);
}

static int strict_unavailable(void)
{
	return three_requests(RT_MEMORY_ALLOCATION);
}

/* A bad mode: everything is CUDA's, nothing counted. */
static int mode_off(void)
{
	struct gp_interpose_stats st;
	void *p;

	if (cudaHostAlloc(&p, 4096, 0) || cdrv_live_size_of(p) != 4096 ||
	    cudaFreeHost(p))
		return 1;
	st = ip_stats();
	return !(st.mode == GP_INTERPOSE_OFF && st.served == 0 && st.pool == 0);
}

/* CUDA refuses the new segment's registration: CUDA serves it. */
static int register_refused(void)
{
	void (*fail_register)(int) = (void (*)(int))rt_sym("cdd_fail_register");
	struct gp_interpose_stats st;
	void *p;

	fail_register(1);
	if (cudaHostAlloc(&p, 4096, 0) || cdrv_live_size_of(p) != 4096 ||
	    cudaFreeHost(p))
		return 1;
	if (cudaHostAlloc(&p, 4096, 0) || cdrv_live_size_of(p) || cudaFreeHost(p))
		return 2;	/* the next one is the pool's */
	st = ip_stats();
	return !(st.fell_back[GP_INTERPOSE_CUDA] == 1 && st.served == 1);
}

static void tmp_name(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "/tmp/gpupool-ip-%s-%d", what, (int)getpid());
	unlink(buf);
}

/* Scenario in mode with no pool (the kernel backend, no module): the
 * status it ends with, and how many lines of its stderr hold said.
 */
static void no_pool(struct __test_metadata *_metadata, const char *mode,
		    const char *scenario, const char *said)
{
	char err[64], env_mode[64];
	const char *env[] = { "GPUPOOL_BACKEND=kernel", env_mode, NULL };

	if (access("/dev/gpupool", F_OK) == 0)
		SKIP(return, "gpupool.ko is loaded: the pool is available");
	snprintf(env_mode, sizeof(env_mode), "GPUPOOL_INTERPOSE_MODE=%s", mode);
	tmp_name(err, sizeof(err), "err");
	EXPECT_EQ(0, ip_spawn(scenario, env, err));
	EXPECT_EQ(1, ip_count_lines(err, said));
	unlink(err);
}

TEST(fallback_goes_to_cuda_and_says_so_once)
{
	no_pool(_metadata, "fallback", "fallback_unavailable",
		"goes to CUDA (fallback mode");
}

TEST(strict_fails_as_cuda_would_and_says_so_once)
{
	no_pool(_metadata, "strict", "strict_unavailable", "fails (strict mode)");
}

TEST(a_bad_mode_turns_it_off)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=stirct", NULL };
	char err[64];

	tmp_name(err, sizeof(err), "err");
	EXPECT_EQ(0, ip_spawn("mode_off", env, err));
	EXPECT_EQ(1, ip_count_lines(err, "GPUPOOL_INTERPOSE_MODE=stirct"));
	unlink(err);
}

TEST(registration_refused_goes_to_cuda)
{
	static const char *const env[] = { "GPUPOOL_INTERPOSE_MODE=fallback", NULL };

	EXPECT_EQ(0, ip_spawn("register_refused", env, NULL));
}

/* Two processes append their figures to one file; GPUPOOL_DEBUG prints
 * them too; a third that asks nothing of CUDA writes nothing.
 */
TEST(figures_at_exit)
{
	char stats[64], err[64], env_stats[128];
	const char *env[] = { env_stats, "GPUPOOL_DEBUG=1",
			      "GPUPOOL_INTERPOSE_MODE=fallback", NULL };

	tmp_name(stats, sizeof(stats), "stats");
	tmp_name(err, sizeof(err), "err");
	snprintf(env_stats, sizeof(env_stats), "GPUPOOL_INTERPOSE_STATS=%s", stats);
	ASSERT_EQ(0, ip_spawn("register_refused", env, err));
	ASSERT_EQ(0, ip_spawn("register_refused", env, NULL));
	/* A process that asks nothing of CUDA says nothing. */
	ASSERT_EQ(0, ip_spawn("idle", env, err));
	EXPECT_EQ(2, ip_count_lines(stats, "gpupool-interpose: pid "));
	EXPECT_EQ(2, ip_count_lines(stats, "served 1 bytes 4096 driver 0 freed 1"));
	EXPECT_EQ(2, ip_count_lines(stats, "fell_back unavailable 0 pool_full 0 limit 0 cuda 1 "));
	EXPECT_EQ(1, ip_count_lines(err, "served 1 bytes 4096"));
	unlink(stats);
	unlink(err);
}

static int idle(void)
{
	return 0;
}

static const struct ip_scenario scenarios[] = {
	{ "idle", idle },
	{ "fallback_unavailable", fallback_unavailable },
	{ "strict_unavailable", strict_unavailable },
	{ "mode_off", mode_off },
	{ "register_refused", register_refused },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
