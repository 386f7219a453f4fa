// SPDX-License-Identifier: GPL-2.0
/*
 * circulate_interpose: idle memory circulates between unmodified CUDA
 * programs under the interposer, in strict mode (`gpupoolctl run --mode
 * strict`: what the pool cannot serve fails, CUDA serves nothing).  A
 * 256 MiB pool; program A pins 160 MiB with cudaHostAlloc, frees it with
 * cudaFreeHost (the interposer's context keeps the segment cached, idle)
 * and waits; program B pins 160 MiB: it is served by the pool while A
 * lives, A's context giving its segment back; then A's next cudaHostAlloc
 * works too.  The same with buffers small enough for the interposer's
 * thread cache (4 x 16 MiB, freed by A's thread and kept for its next
 * request): the cache gives them back to A's pool within a short bound
 * while A calls nothing, so they are idle and asked for, and B's
 * request for the whole pool is served while A lives.  The programs are
 * this one, run again as `--a`, `--a4`, `--b` and `--b-all`
 * (linked against the build tree's runtime double, with the driver
 * double beside it: <O>/tests/vm/).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaFreeHost(void *p);

#define BIG	(160 * MiB)
#define POOL	(256 * MiB)
#define NR_SMALL	4
#define SMALL	(16 * MiB)	/* four fill a thread's cache */

/* The programs ------------------------------------------------------------ */

static int wait_line(void)
{
	char line[16];

	return fgets(line, sizeof(line), stdin) ? 0 : -1;
}

/* A: pin, free (cached), then on the word pin again. */
static int prog_a(void)
{
	void *p = NULL, *q = NULL;
	int rc = cudaHostAlloc(&p, BIG, 0);

	if (rc)
		return 10 + rc;
	memset(p, 0xa, BIG);
	if (cudaFreeHost(p))
		return 20;
	printf("ready\n");
	fflush(stdout);
	if (wait_line())
		return 30;
	rc = cudaHostAlloc(&q, 64 * MiB, 0);
	printf("next %d\n", rc);
	fflush(stdout);
	wait_line();
	return rc ? 40 : cudaFreeHost(q);
}

/* A4: pin NR_SMALL x SMALL, free them (in the thread's cache), then on
 * the word pin SMALL again.
 */
static int prog_a4(void)
{
	void *p[NR_SMALL], *q = NULL;
	int i, rc;

	for (i = 0; i < NR_SMALL; i++) {
		rc = cudaHostAlloc(&p[i], SMALL, 0);
		if (rc)
			return 10 + rc;
		memset(p[i], 0xa, SMALL);
	}
	for (i = 0; i < NR_SMALL; i++)
		if (cudaFreeHost(p[i]))
			return 20;
	printf("ready\n");
	fflush(stdout);
	if (wait_line())
		return 30;
	rc = cudaHostAlloc(&q, SMALL, 0);
	printf("next %d\n", rc);
	fflush(stdout);
	wait_line();
	return rc ? 40 : cudaFreeHost(q);
}

/* B: pin size, say how it went, hold it until told. */
static int prog_b(size_t size)
{
	void *p = NULL;
	int rc = cudaHostAlloc(&p, size, 0);

	printf("b %d %d\n", rc, rc ? 0 : gp_all_bytes(p, size, 0));
	fflush(stdout);
	wait_line();
	return rc ? 0 : cudaFreeHost(p);
}

/* The test ------------------------------------------------------------------ */

struct prog {
	pid_t pid;
	FILE *out;
	int in;
};

/* Run this program with role under gpupoolctl run --mode strict, with
 * env ("NAME=VALUE") set when not NULL.
 */
static int start_env(struct prog *c, const char *role, const char *env)
{
	char self[PATH_MAX], dir[PATH_MAX], ctl[PATH_MAX + 32];
	char lib[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int to[2], from[2];

	self[n > 0 ? n : 0] = 0;
	snprintf(dir, sizeof(dir), "%s", self);
	/* <O>/tests/vm/<this> -> <O>/tools/, <O>/tests/cudadrv_double */
	snprintf(ctl, sizeof(ctl), "%s/../../tools/gpupoolctl", dirname(dir));
	snprintf(lib, sizeof(lib), "%s/../cudadrv_double", dir);
	if (access(ctl, X_OK) || pipe(to) || pipe(from))
		return -1;
	fflush(NULL);
	c->pid = fork();
	if (!c->pid) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		setenv("LD_LIBRARY_PATH", lib, 1);
		if (env)
			putenv((char *)env);
		execl(ctl, "gpupoolctl", "run", "--mode", "strict", "--", self,
		      role, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = fdopen(from[0], "r");
	return c->pid > 0 && c->out ? 0 : -1;
}

static int start(struct prog *c, const char *role)
{
	return start_env(c, role, NULL);
}

static int finish(struct prog *c)
{
	if (write(c->in, "go\n", 3) != 3)
		return -1;
	close(c->in);
	fclose(c->out);
	return gp_reap(c->pid);
}

GP_LOADED_FIXTURE(ci, "pool_size=256M " GP_RECLAIM_WAIT, 20000)

TEST_F(ci, strict_programs_share_through_idle_caches)
{
	struct prog a, b;
	char word[16];
	int rc = -1, zero = 0;

	ASSERT_EQ(0, start(&a, "--a"));
	ASSERT_EQ(1, fscanf(a.out, "%15s", word));
	ASSERT_STREQ("ready", word);
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));

	ASSERT_EQ(0, start(&b, "--b"));
	ASSERT_EQ(2, fscanf(b.out, " b %d %d", &rc, &zero));
	EXPECT_EQ(0, rc) TH_LOG("B's cudaHostAlloc in strict mode failed");
	EXPECT_EQ(1, zero);
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimGiven"));

	/* A's next allocation works. */
	ASSERT_EQ(1, write(a.in, "\n", 1));
	ASSERT_EQ(1, fscanf(a.out, " next %d", &rc));
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0, finish(&a));
	EXPECT_EQ(0, finish(&b));
}

/* A's figure in /proc/gpupool reaches want kB, or the deadline passes. */
static long long wait_idle_kb(long long want)
{
	long long kb = gp_proc_num("Idle");
	int i;

	for (i = 0; i < 1500 && kb != want; i++) {
		usleep(10000);
		kb = gp_proc_num("Idle");
	}
	return kb;
}

TEST_F(ci, thread_cached_buffers_circulate)
{
	struct prog a, b;
	char word[16];
	int rc = -1, zero = 0;

	/* Idle memory goes back to the module only when asked: what the
	 * thread cache keeps must become idle to be asked for.
	 */
	ASSERT_EQ(0, start_env(&a, "--a4", "GPUPOOL_HOST_GC_IDLE_MS=0"));
	ASSERT_EQ(1, fscanf(a.out, "%15s", word));
	ASSERT_STREQ("ready", word);
	/* Polled with a deadline far past the cache's bound (TCG, load): 15 s. */
	EXPECT_EQ(NR_SMALL * SMALL >> 10, wait_idle_kb(NR_SMALL * SMALL >> 10))
		TH_LOG("A's thread cache kept its buffers from the pool");

	ASSERT_EQ(0, start(&b, "--b-all"));
	ASSERT_EQ(2, fscanf(b.out, " b %d %d", &rc, &zero));
	EXPECT_EQ(0, rc) TH_LOG("B's cudaHostAlloc of the pool in strict mode failed");
	EXPECT_EQ(1, zero);
	EXPECT_EQ(NR_SMALL * SMALL >> 10, gp_proc_num("ReclaimGiven"));

	/* B gone, A's next allocation works. */
	EXPECT_EQ(0, finish(&b));
	ASSERT_EQ(1, write(a.in, "\n", 1));
	ASSERT_EQ(1, fscanf(a.out, " next %d", &rc));
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0, finish(&a));
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--a"))
		return prog_a();
	if (argc == 2 && !strcmp(argv[1], "--a4"))
		return prog_a4();
	if (argc == 2 && !strcmp(argv[1], "--b"))
		return prog_b(BIG);
	if (argc == 2 && !strcmp(argv[1], "--b-all"))
		return prog_b(POOL);
	return test_harness_run(argc, argv);
}
