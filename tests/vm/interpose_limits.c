// SPDX-License-Identifier: GPL-2.0
/*
 * interpose_limits: an unmodified program's pinned memory, bounded.  A
 * program that calls cudaHostAlloc (linked against the CUDA runtime; here
 * the runtime double) runs under libgpupool-interpose on the kernel
 * backend, in a cgroup with a limit on the pool (the module's own table,
 * or dmem.max where the kernel has dmem).  It asks for 3 MiB at a time
 * until the pool stops serving it:
 *  - its requests are served by the pool and charged to its cgroup, which
 *    /proc/gpupool (and dmem.current) shows while it holds them, the
 *    process among the holders like any other, with the
 *    refusal counted there (in the module's table), and uncharged when it
 *    exits;
 *  - strict mode: the request past the limit fails with CUDA's
 *    out-of-memory error, counted as refused by the limit;
 *  - fallback mode: that request is served by CUDA (the driver double's
 *    own allocation), counted as fallen back by the limit.
 * The program is this one, run again as `--hold MODE` under LD_PRELOAD
 * with the build tree's interposer and doubles (found from this
 * program's path: <O>/tests/vm/).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"
#include "../../include/gpupool_interpose.h"

int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaFreeHost(void *p);

#define IP_REQ		(3 * MiB)
#define IP_LIMIT	(8 * MiB)
#define IP_MAX_REQS	10

/* The child ------------------------------------------------------------------ */

static int ip_stats(struct gp_interpose_stats *st)
{
	int (*get)(struct gp_interpose_stats *, size_t);

	*(void **)&get = dlsym(RTLD_DEFAULT, "gp_interpose_stats");
	return get ? get(st, sizeof(*st)) : -1;
}

/*
 * Ask until the pool stops serving; say on stdout "served N bytes B
 * last RC fell_back F refused R", then wait for a line on stdin and free
 * everything.
 */
static int hold(void)
{
	struct gp_interpose_stats st;
	void *p[IP_MAX_REQS];
	int n = 0, rc = 0;
	char line[16];

	do {
		p[n] = NULL;
		rc = cudaHostAlloc(&p[n], IP_REQ, 0);
		if (ip_stats(&st))
			return 2;
		if (!rc)
			n++;
	} while (!rc && st.fell_back[GP_INTERPOSE_LIMIT] == 0 &&
		 n < IP_MAX_REQS);
	printf("served %llu bytes %llu last %d fell_back %llu refused %llu\n",
	       (unsigned long long)st.served,
	       (unsigned long long)st.served_bytes, rc,
	       (unsigned long long)st.fell_back[GP_INTERPOSE_LIMIT],
	       (unsigned long long)st.refused[GP_INTERPOSE_LIMIT]);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	while (n--)
		if (cudaFreeHost(p[n]))
			return 4;
	return 0;
}

/* The test --------------------------------------------------------------------- */

struct ip_child {
	pid_t pid;
	FILE *out;		/* its stdout */
	int in;			/* its stdin */
};

/* <O>/tests/vm/<this> -> <O>. */
static void build_dir(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	snprintf(buf, len, "%s/../..", dirname(self));
}

/* Start `--hold` in cgroup rel, under the interposer in mode. */
static int ip_start(struct ip_child *c, struct cg_env *env, const char *rel,
		    const char *mode)
{
	char o[PATH_MAX], pre[PATH_MAX + 64], lib[PATH_MAX + 64], m[64];
	int to[2], from[2];

	build_dir(o, sizeof(o));
	snprintf(pre, sizeof(pre), "%s/userlib/libgpupool-interpose.so", o);
	if (access(pre, R_OK) || pipe(to) || pipe(from))
		return -1;
	c->pid = cg_fork_into(env, rel);
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		snprintf(lib, sizeof(lib), "%s/tests/cudadrv_double", o);
		snprintf(m, sizeof(m), "GPUPOOL_INTERPOSE_MODE=%s", mode);
		setenv("LD_PRELOAD", pre, 1);
		setenv("LD_LIBRARY_PATH", lib, 1);
		setenv("GPUPOOL_BACKEND", "kernel", 1);
		putenv(m);
		execl("/proc/self/exe", "ip-hold", "--hold", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = fdopen(from[0], "r");
	return c->pid > 0 && c->out ? 0 : -1;
}

static int ip_finish(struct ip_child *c)
{
	int st;

	if (write(c->in, "go\n", 3) != 3)
		return -1;
	close(c->in);
	fclose(c->out);
	if (waitpid(c->pid, &st, 0) != c->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

FIXTURE(ip) {
	struct cg_env env;
	int fd;
};

CG_VARIANTS(ip);

FIXTURE_SETUP(ip)
{
	CG_SETUP("interpose");
	ASSERT_EQ(0, cg_make(&self->env, "job"));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", IP_LIMIT));
}

FIXTURE_TEARDOWN(ip)
{
	cg_teardown(&self->env);
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(20000));
}

/* Run the program in mode; what it said, and the job's figures while it
 * held its memory and after it exited.
 */
static void run_job(struct __test_metadata *_metadata, FIXTURE_DATA(ip) *self,
		    const char *mode, unsigned long long said[5])
{
	struct gpupool_cgroup held, after;
	struct ip_child c;
	struct cg_line l;
	char path[256];

	ASSERT_EQ(0, ip_start(&c, &self->env, "job", mode));
	ASSERT_EQ(5, fscanf(c.out, "served %llu bytes %llu last %llu fell_back %llu refused %llu",
			    &said[0], &said[1], &said[2], &said[3], &said[4]));
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "job", &held));
	/* /proc/gpupool shows the job's use like any other holder's. */
	ASSERT_EQ(1, cg_proc_line(cg_proc(), cg_rel(&self->env, "job", path,
						     sizeof(path)), &l));
	EXPECT_EQ((long long)(held.usage >> 10), l.kb);
	/* ... and the process as a holder, as any other. */
	snprintf(path, sizeof(path), "\nHolder: %d %llu ", (int)c.pid,
		 (unsigned long long)(held.usage >> 10));
	EXPECT_NE(NULL, strstr(cg_proc(), path)) TH_LOG("no '%s'", path + 1);
	/* The refusal: the module's table counts it, dmem its own charge. */
	if (self->env.dmem) {
		EXPECT_EQ((long long)held.usage,
			  cg_dmem_value(&self->env, "job", "dmem.current"));
	} else {
		EXPECT_LE(1, l.denials);
	}
	EXPECT_EQ(0, ip_finish(&c));
	EXPECT_GE(held.usage, said[1]);
	EXPECT_LE(held.usage, IP_LIMIT);
	EXPECT_LE(1, held.chunks);
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "job", &after));
	EXPECT_EQ(0, after.usage);
}

TEST_F(ip, strict_fails_at_the_limit)
{
	unsigned long long said[5];

	run_job(_metadata, self, "strict", said);
	EXPECT_LE(1, said[0]);			/* served before the limit */
	EXPECT_EQ(said[0] * IP_REQ, said[1]);
	EXPECT_EQ(2, said[2]);			/* cudaErrorMemoryAllocation */
	EXPECT_EQ(0, said[3]);
	EXPECT_EQ(1, said[4]);			/* refused by the limit */
}

TEST_F(ip, fallback_is_served_by_cuda)
{
	unsigned long long said[5];

	run_job(_metadata, self, "fallback", said);
	EXPECT_LE(1, said[0]);
	EXPECT_EQ(said[0] * IP_REQ, said[1]);
	EXPECT_EQ(0, said[2]);			/* CUDA served it */
	EXPECT_EQ(1, said[3]);			/* fallen back by the limit */
	EXPECT_EQ(0, said[4]);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--hold"))
		return hold();
	return test_harness_run(argc, argv);
}
