// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_basic: ALLOC gives an exact page-rounded chunk, already zero; it
 * maps, takes writes and reads them back; unmap and FREE give every byte
 * back to the pool (after zeroing); the figures in STATS follow each step.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

GP_POOL_FIXTURE(pool, "pool_size=32M", 5000)

TEST_F(pool, alloc_map_write_read_free)
{
	struct gpupool_pool_stats s;
	struct gpupool_alloc a;
	uint64_t size = 3 * MiB + 123, i;
	unsigned char *p, *q;

	ASSERT_EQ(0, gp_alloc_ex(self->fd, size, 0, 0, &a));
	EXPECT_EQ(0, a.handle % GP_PG);
	EXPECT_NE(0, a.handle);
	EXPECT_EQ(gp_chunk_of(size), a.chunk_size);

	s = gp_pool();
	EXPECT_EQ(32 * MiB, s.total);
	EXPECT_EQ(a.chunk_size, s.in_use);
	EXPECT_EQ(1, s.chunks_in_use);
	EXPECT_EQ(1, s.allocs);
	EXPECT_EQ(s.total, s.free + s.in_use + s.zeroing + s.quarantined);

	p = gp_map(self->fd, a.handle, a.chunk_size);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	EXPECT_TRUE(gp_all_bytes(p, a.chunk_size, 0));
	for (i = 0; i < a.chunk_size; i++)
		p[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < a.chunk_size; i++)
		if (p[i] != (unsigned char)(i * 7 + 1))
			break;
	EXPECT_EQ(a.chunk_size, i);

	/* A second mapping of the same chunk sees the same bytes. */
	q = gp_map(self->fd, a.handle, a.chunk_size);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, memcmp(p, q, a.chunk_size));
	q[12345] = 0xab;
	EXPECT_EQ(0xab, p[12345]);
	EXPECT_EQ(0, munmap(q, a.chunk_size));

	EXPECT_EQ(0, munmap(p, a.chunk_size));
	EXPECT_EQ(0, gp_free(self->fd, a.handle));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	s = gp_pool();
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(32 * MiB, s.free);
	EXPECT_EQ(32 * MiB, s.largest_free);
	EXPECT_EQ(1, s.frees);
	EXPECT_EQ(1, s.chunks_free);
	EXPECT_EQ(gp_chunk_of(size), s.peak_in_use);
}

/* Sizes are rounded up to a page, exactly: no power-of-two waste. */
TEST_F(pool, exact_sizes)
{
	static const uint64_t sizes[] = {
		1, 4095, 4096, 4097, 12288, 129 * KiB + 1, 5 * MiB - 1,
		7 * MiB + 8192,
	};
	uint64_t handles[8], total = 0;
	struct gpupool_alloc a;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, gp_alloc_ex(self->fd, sizes[i], 0, 0, &a));
		EXPECT_EQ(gp_chunk_of(sizes[i]), a.chunk_size);
		handles[i] = a.handle;
		total += a.chunk_size;
	}
	EXPECT_EQ(total, gp_pool().in_use);
	for (i = 1; i < 8; i++)
		EXPECT_NE(handles[i - 1], handles[i]);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, gp_free(self->fd, handles[i]));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(32 * MiB, gp_pool().free);
	EXPECT_EQ(1, gp_pool().chunks_free);
}

/*
 * The whole pool as one chunk, then nothing more; after FREE a new
 * allocation waits for the zeroing worker rather than failing.
 */
TEST_F(pool, whole_pool)
{
	struct gpupool_alloc a, b;

	ASSERT_EQ(0, gp_alloc_ex(self->fd, 32 * MiB, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, 4096, 0, 0, &b));
	EXPECT_EQ(1, gp_pool().failed_allocs);
	EXPECT_EQ(0, gp_pool().free);
	EXPECT_EQ(0, gp_free(self->fd, a.handle));
	EXPECT_EQ(0, gp_alloc_ex(self->fd, 32 * MiB, 0, 0, &b));
	EXPECT_EQ(0, gp_free(self->fd, b.handle));
}

/* The chunk reports the node its pages are on, which VERSION lists. */
TEST_F(pool, node_reported)
{
	struct gpupool_version v;
	struct gpupool_alloc a;

	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(self->fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(32 * MiB, v.pool_size);
	ASSERT_EQ(0, gp_alloc_ex(self->fd, 4096, 0, 0, &a));
	ASSERT_LT(a.chunk_node, 64);
	EXPECT_TRUE(v.node_mask & (1ULL << a.chunk_node));
	EXPECT_EQ(0, a.pad);
	EXPECT_EQ(0, gp_free(self->fd, a.handle));
}

TEST_HARNESS_MAIN
