// SPDX-License-Identifier: GPL-2.0
/*
 * free_while_mapped: FREE drops only the file's reference.  A mapping (or
 * an exported fd) keeps the chunk's memory out of the pool: STATS show it
 * in use, the handle is dead at once, the bytes stay readable and
 * writable; when the last mapping goes the chunk is zeroed and returns.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

#define CH	(4 * MiB)

GP_POOL_FIXTURE(pool, "pool_size=16M", 5000)

TEST_F(pool, mapping_keeps_chunk)
{
	struct gpupool_pool_stats s;
	uint64_t h = gp_alloc(self->fd, CH);
	char *p;

	ASSERT_NE(0, h);
	p = gp_map(self->fd, h, CH);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x3c, CH);
	ASSERT_EQ(0, gp_free(self->fd, h));

	/* The handle is dead: no new mapping, no second FREE, no EXPORT. */
	EXPECT_EQ(MAP_FAILED, gp_map(self->fd, h, CH));
	EXPECT_EQ(-EINVAL, gp_free(self->fd, h));
	EXPECT_EQ(-EINVAL, gp_export(self->fd, h, 0));

	usleep(100 * 1000);
	s = gp_pool();
	EXPECT_EQ(CH, s.in_use);
	EXPECT_EQ(1, s.chunks_in_use);
	EXPECT_EQ(0, s.frees);
	EXPECT_EQ(16 * MiB - CH, s.free);
	/* So the pool cannot hand it out again. */
	EXPECT_EQ(0, gp_alloc(self->fd, 16 * MiB));
	EXPECT_EQ(ENOMEM, errno);

	EXPECT_TRUE(gp_all_bytes(p, CH, 0x3c));
	p[CH - 1] = 1;
	EXPECT_EQ(0, munmap(p, CH));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	s = gp_pool();
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(1, s.frees);
	EXPECT_EQ(16 * MiB, s.free);
}

TEST_F(pool, exported_fd_keeps_chunk)
{
	uint64_t h = gp_alloc(self->fd, CH);
	int cfd;
	char *p;

	ASSERT_NE(0, h);
	cfd = gp_export(self->fd, h, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, gp_free(self->fd, h));
	usleep(100 * 1000);
	EXPECT_EQ(CH, gp_pool().in_use);
	/* Still mappable through the chunk fd. */
	p = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	close(cfd);
	usleep(100 * 1000);
	EXPECT_EQ(CH, gp_pool().in_use);
	EXPECT_EQ(0, munmap(p, CH));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(16 * MiB, gp_pool().free);
}

TEST_HARNESS_MAIN
