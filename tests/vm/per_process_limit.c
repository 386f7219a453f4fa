// SPDX-License-Identifier: GPL-2.0
/*
 * per_process_limit: with per_process_limit=N, a process's chunks (in all
 * the files it opened) may add up to N bytes; the ALLOC that would pass it
 * fails with EDQUOT, is counted (LimitDenials) and logged.  A chunk counts
 * until its last reference goes: an exported fd held by someone else keeps
 * it counted; other processes have their own allowance.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

FIXTURE(limited) {
	int fd;
};

FIXTURE_SETUP(limited)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=32M per_process_limit=4M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(limited)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_F(limited, limit_enforced)
{
	struct gpupool_alloc a;
	uint64_t h1, h2;
	int fd2;

	EXPECT_EQ(4096, gp_proc_num("PerProcessLimit"));
	EXPECT_EQ(-EDQUOT, gp_alloc_ex(self->fd, 4 * MiB + 1, 0, 0, &a));
	h1 = gp_alloc(self->fd, 3 * MiB);
	ASSERT_NE(0, h1);
	/* Another file of the same process shares the allowance. */
	fd2 = gp_open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EDQUOT, gp_alloc_ex(fd2, MiB + 4096, 0, 0, &a));
	h2 = gp_alloc(fd2, MiB);
	ASSERT_NE(0, h2);
	EXPECT_EQ(-EDQUOT, gp_alloc_ex(self->fd, 1, 0, 0, &a));
	EXPECT_EQ(3, gp_pool().limit_denials);
	EXPECT_EQ(3, gp_proc_num("LimitDenials"));
	/* Refusals are not out-of-memory failures. */
	EXPECT_EQ(0, gp_pool().failed_allocs);

	/* Freeing makes room again. */
	EXPECT_EQ(0, gp_free(fd2, h2));
	EXPECT_NE(0, gp_alloc(self->fd, MiB));
	close(fd2);
}

static int use_own_allowance(void *arg)
{
	int fd = gp_open_dev();

	(void)arg;
	if (fd < 0)
		return 1;
	if (!gp_alloc(fd, 4 * MiB))
		return 2;
	return gp_alloc(fd, 4096) == 0 && errno == EDQUOT ? 0 : 3;
}

TEST_F(limited, per_process)
{
	ASSERT_NE(0, gp_alloc(self->fd, 4 * MiB));
	EXPECT_EQ(0, gp_run_child(use_own_allowance, NULL));
}

/* A chunk counts against its allocator until its last reference goes. */
TEST_F(limited, exported_chunk_still_counts)
{
	uint64_t h = gp_alloc(self->fd, 4 * MiB);
	int cfd;

	ASSERT_NE(0, h);
	cfd = gp_export(self->fd, h, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, gp_free(self->fd, h));
	EXPECT_EQ(0, gp_alloc(self->fd, 4096));
	EXPECT_EQ(EDQUOT, errno);
	close(cfd);
	EXPECT_NE(0, gp_alloc(self->fd, 4096));
}

TEST_HARNESS_MAIN
