// SPDX-License-Identifier: MIT
/*
 * ctl_run: `gpupoolctl run` end to end: the command it runs (this
 * program, linked against the runtime double, started with no preload of
 * its own) is served by the pool through the interposer as installed,
 * with the mode, figures file and backend it was given, a preload already
 * there kept first, and gpupoolctl's exit status the command's.
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
 * preload; its exit status.
 */
static int ctl(const char *const *args, const char *preload)
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
		execv(tests_gpupoolctl, (char *const *)argv);
		_exit(126);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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

static const struct ip_scenario scenarios[] = {
	{ "served", served },
	{ "strict_refused", strict_refused },
	{ "preload_order", preload_order },
	{ "exit_seven", exit_seven },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
