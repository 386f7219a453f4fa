// SPDX-License-Identifier: MIT
/*
 * ctl_run: `gpupoolctl run` end to end: the command it runs (this
 * program, linked against the runtime double, started with no preload of
 * its own) is served by the pool through the interposer as installed,
 * with the mode, figures file and backend it was given, a preload already
 * there kept first, and gpupoolctl's exit status the command's.  A bad
 * setting of libgpupool's is said once on stderr, and the requests go to
 * CUDA (fallback) or fail (strict).
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <limits.h>

/* This program's path, for gpupoolctl to run. */
static const char *self(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	path[n > 0 ? n : 0] = 0;
	return path;
}

/* Run gpupoolctl with args, in an environment without the tests'
 * preload, with env ("NAME=VALUE", or NULL) added and stderr appended to
 * errfile (or not); its exit status.
 */
static int ctl_in(const char *const *args, const char *preload,
		  const char *env, const char *errfile)
{
	const char *argv[16] = { tests_gpupoolctl, "run" };
	pid_t pid;
	int i, st;

	for (i = 0; args[i] && i < 13; i++)
		argv[i + 2] = args[i];
	pid = fork();
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		unsetenv("GPUPOOL_INTERPOSE_MODE");
		unsetenv("GPUPOOL_BACKEND");
		if (env)
			putenv((char *)env);
		if (errfile && (st = open(errfile, O_WRONLY | O_CREAT | O_APPEND,
					  0600)) >= 0)
			dup2(st, 2);
		execv(tests_gpupoolctl, (char *const *)argv);
		_exit(126);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int ctl(const char *const *args, const char *preload)
{
	return ctl_in(args, preload, NULL, NULL);
}

/* Under gpupoolctl run: the preload and mode it set, a request served. */
static int served(void)
{
	const char *pre = getenv("LD_PRELOAD"), *mode;
	struct gp_interpose_stats st;
	void *p;

	mode = getenv("GPUPOOL_INTERPOSE_MODE");
	if (!pre || !strstr(pre, "libgpupool-interpose.so") || !mode ||
	    strcmp(mode, "fallback"))
		return 10;
	if (cudaHostAlloc(&p, 12345, 0) || cudaFreeHost(p))
		return 11;
	st = ip_stats();
	return !(st.served == 1 && st.freed == 1 && !strcmp(st.backend, "user"));
}

static int strict_refused(void)
{
	void *p = NULL;

	return !(cudaHostAlloc(&p, 4096, 0) == RT_MEMORY_ALLOCATION && !p);
}

static int preload_order(void)
{
	const char *pre = getenv("LD_PRELOAD");

	return !(pre && !strncmp(pre, "libm.so.6:", 10) &&
		 strstr(pre, "libgpupool-interpose.so"));
}

static int exit_seven(void)
{
	return 7;
}

/* Three requests under a bad setting (CTL_RUN_BAD, "NAME=VALUE"): the
 * pool never opens, saying why; CUDA serves them (fallback) or they fail
 * (strict).
 */
static int bad_setting(void)
{
	const char *bad = getenv("CTL_RUN_BAD");
	int strict = !strcmp(getenv("GPUPOOL_INTERPOSE_MODE"), "strict");
	struct gp_interpose_stats st;
	int i, ok = 1;
	void *p;

	for (i = 0; i < 3; i++) {
		p = NULL;
		if (cudaHostAlloc(&p, 4096, 0) != (strict ? RT_MEMORY_ALLOCATION : 0))
			ok = 0;
		if (!strict && (!p || cudaFreeHost(p)))
			ok = 0;
	}
	st = ip_stats();
	ok &= bad && st.served == 0 && st.pool == -1 && strstr(st.why, bad) == st.why;
	ok &= strict ? st.refused[GP_INTERPOSE_UNAVAILABLE] == 3 :
		       st.fell_back[GP_INTERPOSE_UNAVAILABLE] == 3;
	return !ok;
}

TEST(served_with_figures)
{
	char stats[64];
	const char *args[] = { "--backend", "user", "--stats", stats, "--",
			       NULL, "--scenario", "served", NULL };

	snprintf(stats, sizeof(stats), "/tmp/gpupool-ctl-run-%d", (int)getpid());
	unlink(stats);
	args[5] = self();
	EXPECT_EQ(0, ctl(args, NULL));
	EXPECT_EQ(1, ip_count_lines(stats, "served 1 bytes 12345"));
	unlink(stats);
}

TEST(strict_mode)
{
	const char *args[] = { "--mode", "strict", "--backend", "kernel",
			       self(), "--scenario", "strict_refused", NULL };

	if (access("/dev/gpupool", F_OK) == 0)
		SKIP(return, "gpupool.ko is loaded: the pool is available");
	EXPECT_EQ(0, ctl(args, NULL));
}

TEST(preload_kept_first_and_exit_status)
{
	const char *order[] = { self(), "--scenario", "preload_order", NULL };
	const char *seven[] = { "--", self(), "--scenario", "exit_seven", NULL };
	const char *missing[] = { "--", "/nonexistent/program", NULL };
	const char *bad[] = { "--mode", "strikt", "--", "true", NULL };

	EXPECT_EQ(0, ctl(order, "libm.so.6"));
	EXPECT_EQ(7, ctl(seven, NULL));
	EXPECT_EQ(127, ctl(missing, NULL));
	EXPECT_EQ(2, ctl(bad, NULL));
}

/* A bad setting of libgpupool's, each kind: said once on stderr (with the
 * variable, its value and what it takes), CUDA serving in fallback mode.
 */
TEST(bad_setting_said_once)
{
	static const char *const bad[] = {
		"GPUPOOL_HOST_LIMIT=64m", "GPUPOOL_DEBUG=maybe",
		"GPUPOOL_POLICY=best", "GPUPOOL_POPULATE_THREADS=-1",
		"GPUPOOL_DEV_HEADROOM=9%",
	};
	static const char *const modes[] = { "fallback", "strict" };
	char err[64], said[96];
	unsigned int i, m;

	snprintf(err, sizeof(err), "/tmp/gpupool-ctl-run-err-%d", (int)getpid());
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (m = 0; m < 2; m++) {
			const char *args[] = { "--mode", modes[m], "--backend", "user",
					       "--", self(), "--scenario",
					       "bad_setting", NULL };

			unlink(err);
			setenv("CTL_RUN_BAD", bad[i], 1);
			snprintf(said, sizeof(said), "the pool is unavailable: %s: ", bad[i]);
			EXPECT_EQ(0, ctl_in(args, NULL, bad[i], err)) TH_LOG("%s %s", bad[i], modes[m]);
			EXPECT_EQ(1, ip_count_lines(err, said)) TH_LOG("%s %s", bad[i], modes[m]);
			EXPECT_EQ(1, ip_count_lines(err, "gpupool-interpose: "));
		}
	}
	unsetenv("CTL_RUN_BAD");
	unlink(err);
}

static const struct ip_scenario scenarios[] = {
	{ "served", served },
	{ "strict_refused", strict_refused },
	{ "preload_order", preload_order },
	{ "exit_seven", exit_seven },
	{ "bad_setting", bad_setting },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
