// SPDX-License-Identifier: MIT
/*
 * rt_fork: the interposer across fork() and exec().
 *
 * - A child of fork() whose parent used CUDA cannot use CUDA (the runtime
 *   answers not initialized; the double does as CUDA does): the parent's
 *   pool buffers stay readable in it and answer cudaFreeHost and the
 *   queries with that error, never touching the parent's pool; its own
 *   requests get CUDA's answer there too (out of memory in strict mode).  The parent goes on unharmed.
 * - A child of fork() before any CUDA use has a pool of its own.
 * - A program started by exec() from an interposed process is interposed
 *   and served (LD_PRELOAD passes on).
 * - fork() while other threads allocate neither deadlocks nor leaves the
 *   child's locks held.
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <pthread.h>

/* In a child: exit status 0 when cond holds. */
static int child_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(child_after_cuda_use)
{
	unsigned int f;
	void *p, *q, *d;
	pid_t pid;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 10000, HOST_MAPPED));
	memset(p, 0x5a, 10000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct gp_interpose_stats st;
		int bad = 0;

		bad |= ((unsigned char *)p)[9999] != 0x5a;
		bad |= (cudaFreeHost(p) != RT_INITIALIZATION) << 1;
		bad |= (cudaHostGetFlags(&f, p) != RT_INITIALIZATION) << 2;
		bad |= (cudaHostGetDevicePointer(&d, p, 0) != RT_INITIALIZATION) << 3;
		q = NULL;
		bad |= (cudaHostAlloc(&q, 4096, 0) !=
			ip_unservable(RT_INITIALIZATION)) << 4;
		st = ip_stats();
		bad |= (st.inherited != 3 || st.served != 0) << 5;
		bad |= (st.fell_back[GP_INTERPOSE_CUDA] +
			st.refused[GP_INTERPOSE_CUDA] != 1) << 6;
		_exit(bad);
	}
	EXPECT_EQ(0, child_wait(pid));
	/* The parent's buffer is still its own. */
	EXPECT_EQ(RT_SUCCESS, cudaHostGetFlags(&f, p));
	EXPECT_EQ(HOST_MAPPED, f);
	EXPECT_EQ(0x5a, ((unsigned char *)p)[0]);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&q, 4096, 0));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(q));
}

TEST(child_before_cuda_use)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct gp_interpose_stats st;
		void *p;
		int bad;

		bad = cudaHostAlloc(&p, 4096, 0) || cudaFreeHost(p);
		st = ip_stats();
		_exit(bad || st.served != 1 || st.pool != 1);
	}
	EXPECT_EQ(0, child_wait(pid));
}

static int exec_child(void)
{
	struct gp_interpose_stats st;
	void *p;

	if (cudaHostAlloc(&p, 1 << 20, HOST_PORTABLE) || cudaFreeHost(p))
		return 1;
	st = ip_stats();
	return !(st.served == 1 && st.freed == 1 && st.pool == 1);
}

TEST(exec_keeps_working)
{
	void *p;

	/* The parent has used CUDA: the exec()ed child starts afresh. */
	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&p, 4096, 0));
	EXPECT_EQ(0, ip_spawn("exec_child", NULL, NULL));
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(p));
}

static int stop;

static void *churn(void *arg)
{
	void *p;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		if (!cudaHostAlloc(&p, 8192, 0))
			cudaFreeHost(p);
	return NULL;
}

FIXTURE(forking) {
};

FIXTURE_SETUP(forking)
{
}

FIXTURE_TEARDOWN(forking)
{
}

/*
 * 300 s, not the harness's 30: under single-threaded TCG (the arm64 VMs)
 * the three churning threads leave the forking one a quarter of a CPU,
 * and the test took 30 s there.
 */
TEST_F_TIMEOUT(forking, while_threads_allocate, 300)
{
	pthread_t t[3];
	void *mine;
	int i, n;

	ASSERT_EQ(RT_SUCCESS, cudaHostAlloc(&mine, 4096, 0));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, NULL));
	for (n = 0; n < 20; n++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			unsigned int f;

			/* Every lock free here: a lookup and a request. */
			_exit(cudaHostGetFlags(&f, mine) != RT_INITIALIZATION ||
			      cudaHostAlloc(&mine, 4096, 0) !=
			      ip_unservable(RT_INITIALIZATION));
		}
		EXPECT_EQ(0, child_wait(pid));
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	EXPECT_EQ(RT_SUCCESS, cudaFreeHost(mine));
}

static const struct ip_scenario scenarios[] = {
	{ "exec_child", exec_child },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
