// SPDX-License-Identifier: GPL-2.0
/*
 * growth: with max_size above pool_size the pool grows when full (adding
 * regions that double, within the limit) and never beyond max_size;
 * without max_size it never grows.  pool_size=0 with max_size starts empty.
 * A request no region could hold grows nothing.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

TEST(grows_to_limit)
{
	uint64_t h[8];
	char *p;
	int fd;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=8M max_size=40M"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	EXPECT_EQ(40960, gp_proc_num("PoolLimit"));
	h[0] = gp_alloc(fd, 8 * MiB);
	ASSERT_NE(0, h[0]);
	EXPECT_EQ(8 * MiB, gp_pool().total);
	/* Full: the next one grows the pool (by 8 MiB, then 16 MiB...). */
	h[1] = gp_alloc(fd, 4 * MiB);
	ASSERT_NE(0, h[1]);
	EXPECT_EQ(16 * MiB, gp_pool().total);
	EXPECT_EQ(1, gp_pool().growths);
	h[2] = gp_alloc(fd, 6 * MiB);
	ASSERT_NE(0, h[2]);
	EXPECT_EQ(32 * MiB, gp_pool().total);
	/* The new memory works like the old. */
	p = gp_map(fd, h[2], 6 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(gp_all_bytes(p, 6 * MiB, 0));
	memset(p, 1, 6 * MiB);
	munmap(p, 6 * MiB);
	/* What is free is used before growing again. */
	h[3] = gp_alloc(fd, 14 * MiB);
	ASSERT_NE(0, h[3]);
	EXPECT_EQ(32 * MiB, gp_pool().total);
	/* Up to the limit (a region of 8, not 64 MiB), not past it. */
	h[4] = gp_alloc(fd, 8 * MiB);
	ASSERT_NE(0, h[4]);
	EXPECT_EQ(40 * MiB, gp_pool().total);
	EXPECT_EQ(3, gp_pool().growths);
	EXPECT_EQ(0, gp_alloc(fd, 4096));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(40 * MiB, gp_pool().total);
	EXPECT_EQ(1, gp_pool().failed_allocs);
	close(fd);
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	/* Regions merge: the whole pool is one free chunk again. */
	EXPECT_EQ(40 * MiB, gp_pool().largest_free);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST(starts_empty)
{
	struct gpupool_version v;
	int fd;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=0 max_size=8M"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(0, v.pool_size);
	EXPECT_NE(0, gp_alloc(fd, 5 * MiB));
	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(6 * MiB, v.pool_size);
	close(fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* Another process takes 3 MiB of the 4 and passes the chunk on by fd, so
 * that the caller below holds nothing (its charge cannot overflow).
 */
static int take_3m(void *arg)
{
	int sock = *(int *)arg, fd = gp_open_dev();
	struct gpupool_export e;

	memset(&e, 0, sizeof(e));
	e.handle = gp_alloc(fd, 3 * MiB);
	if (!e.handle || ioctl(fd, GPUPOOL_IOC_EXPORT, &e))
		return 10;
	return gp_send_fd(sock, (int)e.fd, NULL, 0, 0) ? 11 : 0;
}

/* A request within a block of U64_MAX, while the free top of the pool is
 * under a block (2 MiB): it fails at once, with nothing grown.  Once, the
 * blocks it needed were computed with DIV_ROUND_UP, which wrapped to 0,
 * and the pool grew to max_size for a request that could never fit.
 */
TEST(huge_request_grows_nothing)
{
	struct gpupool_alloc a;
	int sv[2], cfd, fd, err;
	uint64_t failed_allocs;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=4M max_size=64M"));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	ASSERT_EQ(0, gp_run_child(take_3m, &sv[1]));
	cfd = gp_recv_fd(sv[0], NULL, 0, MSG_DONTWAIT);
	ASSERT_LE(0, cfd);			/* 1 MiB free, at the top */
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	memset(&a, 0, sizeof(a));
	a.size = ~0ull - 8191;			/* 0xffffffffffffe000 */
	EXPECT_EQ(-1, ioctl(fd, GPUPOOL_IOC_ALLOC, &a));
	err = errno;
	EXPECT_EQ(4 * MiB, gp_pool().total);
	EXPECT_EQ(0, gp_pool().growths);
	failed_allocs = gp_pool().failed_allocs;
	close(fd);
	close(cfd);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, gp_unload_wait(5000));
	EXPECT_EQ(ENOMEM, err);
	EXPECT_EQ(1, failed_allocs);
}

TEST(no_growth_by_default)
{
	int fd;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=8M"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	EXPECT_NE(0, gp_alloc(fd, 8 * MiB));
	EXPECT_EQ(0, gp_alloc(fd, 4096));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(8 * MiB, gp_pool().total);
	EXPECT_EQ(0, gp_pool().growths);
	close(fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
