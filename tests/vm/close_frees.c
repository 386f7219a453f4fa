// SPDX-License-Identifier: GPL-2.0
/*
 * close_frees: chunks belong to the open file.  Closing it (last reference:
 * dup()s and fork()ed copies count) frees every chunk it still holds; so
 * does the process dying of SIGKILL.  A mapping keeps only its own chunk
 * (and the module) until it is unmapped.
 */
#include <signal.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

GP_LOADED_FIXTURE(pool, "pool_size=16M", 5000)

static int alloc_many(int fd, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!gp_alloc(fd, (uint64_t)(i % 7 + 1) * 4096 * 11))
			return -1;
	return 0;
}

TEST_F(pool, close_frees_all)
{
	int fd = gp_open_dev(), fd2;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, alloc_many(fd, 40));
	EXPECT_EQ(40, gp_pool().chunks_in_use);
	/* A dup keeps the file open. */
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	close(fd);
	EXPECT_EQ(40, gp_pool().chunks_in_use);
	close(fd2);
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().chunks_in_use);
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(40, gp_pool().frees);
	EXPECT_EQ(16 * MiB, gp_pool().free);
}

/*
 * A mapping keeps its own chunk, not the file: close() frees the file's
 * other chunks at once.  The mapping still pins the module.
 */
TEST_F(pool, close_keeps_mappings)
{
	int fd = gp_open_dev();
	uint64_t h;
	char *p;

	ASSERT_LE(0, fd);
	h = gp_alloc(fd, MiB);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, alloc_many(fd, 5));
	p = gp_map(fd, h, MiB);
	ASSERT_NE(MAP_FAILED, p);
	close(fd);
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(1, gp_pool().chunks_in_use);
	EXPECT_EQ(MiB, gp_pool().in_use);
	p[0] = 1;
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(-EAGAIN, gp_unload());
	EXPECT_EQ(0, munmap(p, MiB));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().chunks_in_use);
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(16 * MiB, gp_pool().free);
}

static int alloc_and_die(void *arg)
{
	int fd = gp_open_dev(), *sig = arg;
	uint64_t h;
	char *p;

	if (fd < 0 || alloc_many(fd, 30))
		return 1;
	h = gp_alloc(fd, 2 * MiB);
	p = h ? gp_map(fd, h, 2 * MiB) : MAP_FAILED;
	if (p == MAP_FAILED)
		return 2;
	memset(p, 1, 2 * MiB);
	/* Some fds and mappings left around for the kernel to clean up. */
	if (dup(fd) < 0 || gp_export(fd, h, 0) < 0)
		return 3;
	kill(getpid(), *sig);
	pause();
	return 4;
}

TEST_F(pool, sigkill_frees_all)
{
	int sig = SIGKILL;

	EXPECT_EQ(128 + SIGKILL, gp_run_child(alloc_and_die, &sig));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().chunks_in_use);
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(31, gp_pool().frees);
	EXPECT_EQ(16 * MiB, gp_pool().free);
}

TEST_F(pool, sigsegv_frees_all)
{
	int sig = SIGSEGV;

	EXPECT_EQ(128 + SIGSEGV, gp_run_child(alloc_and_die, &sig));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(16 * MiB, gp_pool().free);
}

TEST_HARNESS_MAIN
