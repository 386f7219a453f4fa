// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_errors: every ioctl rejects what it must and changes nothing when
 * it does: size 0, sizes above the pool, unknown flag bits, non-zero
 * pad/reserved fields, a node without GPUPOOL_ALLOC_NODE, a node without a
 * sub-pool, unknown and freed handles (double free), handles of another
 * file, unaligned handles; unknown commands give ENOTTY.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

GP_POOL_FIXTURE(pool, "pool_size=16M", 5000)

static void expect_untouched(struct __test_metadata *_metadata)
{
	struct gpupool_pool_stats s = gp_pool();

	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(0, s.allocs);
	EXPECT_EQ(16 * MiB, s.free);
}

TEST_F(pool, alloc_bad_sizes)
{
	struct gpupool_alloc a;

	EXPECT_EQ(-EINVAL, gp_alloc_ex(self->fd, 0, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, 16 * MiB + 1, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, 1ULL << 40, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, UINT64_MAX, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, UINT64_MAX - 4095, 0, 0, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, 1ULL << 63, 0, 0, &a));
	expect_untouched(_metadata);
	EXPECT_EQ(5, gp_pool().failed_allocs);
}

TEST_F(pool, alloc_bad_fields)
{
	struct gpupool_alloc a;
	unsigned int i;

	for (i = 0; i < 32; i++) {
		if (GPUPOOL_ALLOC_VALID_FLAGS & (1u << i))
			continue;
		EXPECT_EQ(-EINVAL, gp_alloc_ex(self->fd, 4096, 1u << i, 0, &a))
			TH_LOG("flag bit %u", i);
	}
	memset(&a, 0, sizeof(a));
	a.size = 4096;
	a.pad = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_ALLOC, &a));
	for (i = 0; i < 4; i++) {
		memset(&a, 0, sizeof(a));
		a.size = 4096;
		a.reserved[i] = 1;
		EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_ALLOC, &a));
	}
	/* node is only meaningful with GPUPOOL_ALLOC_NODE. */
	EXPECT_EQ(-EINVAL, gp_alloc_ex(self->fd, 4096, 0, 1, &a));
	/* A node with no sub-pool. */
	EXPECT_EQ(-ENODEV, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, 63, &a));
	EXPECT_EQ(-ENODEV, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, 64, &a));
	EXPECT_EQ(-ENODEV, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, ~0u, &a));
	EXPECT_EQ(-EFAULT, gp_ioc(self->fd, GPUPOOL_IOC_ALLOC, NULL));
	expect_untouched(_metadata);

	/* Output fields set by the caller are ignored. */
	memset(&a, 0, sizeof(a));
	a.size = 4096;
	a.handle = 0x1234000;
	a.chunk_size = 1;
	a.chunk_node = 77;
	EXPECT_EQ(0, gp_ioc(self->fd, GPUPOOL_IOC_ALLOC, &a));
	EXPECT_EQ(gp_chunk_of(4096), a.chunk_size);
	EXPECT_EQ(0, gp_free(self->fd, a.handle));
}

TEST_F(pool, free_bad_handles)
{
	struct gpupool_free f;
	uint64_t h;
	int fd2;

	EXPECT_EQ(-EINVAL, gp_free(self->fd, 0));
	EXPECT_EQ(-EINVAL, gp_free(self->fd, 4096));
	EXPECT_EQ(-EINVAL, gp_free(self->fd, 1ULL << 40));
	EXPECT_EQ(-EINVAL, gp_free(self->fd, UINT64_MAX));

	h = gp_alloc(self->fd, 8192);
	ASSERT_NE(0, h);
	/* Not page-aligned: not a handle. */
	EXPECT_EQ(-EINVAL, gp_free(self->fd, h + 1));
	EXPECT_EQ(-EINVAL, gp_free(self->fd, h + 4096));
	/* Another file's handle space is its own. */
	fd2 = gp_open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EINVAL, gp_free(fd2, h));
	close(fd2);
	EXPECT_EQ(gp_chunk_of(8192), gp_pool().in_use);

	memset(&f, 0, sizeof(f));
	f.handle = h;
	f.flags = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_FREE, &f));
	f.flags = 0;
	f.pad = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_FREE, &f));
	f.pad = 0;
	f.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_FREE, &f));
	EXPECT_EQ(gp_chunk_of(8192), gp_pool().in_use);

	EXPECT_EQ(0, gp_free(self->fd, h));
	/* Double free. */
	EXPECT_EQ(-EINVAL, gp_free(self->fd, h));
	EXPECT_EQ(1, gp_pool().frees);
	/* The freed handle is not soon handed out again. */
	EXPECT_NE(h, gp_alloc(self->fd, 4096));
}

TEST_F(pool, export_and_stats_bad_fields)
{
	struct gpupool_export e;
	struct gpupool_stats st;
	uint64_t h = gp_alloc(self->fd, 4096);

	ASSERT_NE(0, h);
	EXPECT_EQ(-EINVAL, gp_export(self->fd, h + 4096, 0));
	EXPECT_EQ(-EINVAL, gp_export(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, gp_export(self->fd, h, 2));
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_EXPORT, &e));

	memset(&st, 0, sizeof(st));
	st.flags = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_STATS, &st));
	memset(&st, 0, sizeof(st));
	st.reserved[3] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_STATS, &st));
	memset(&st, 0, sizeof(st));
	st.nr_nodes = 1;	/* and no pointer */
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_STATS, &st));
	memset(&st, 0, sizeof(st));
	st.nr_nodes = 1;
	st.nodes_ptr = 8;	/* unmapped */
	EXPECT_EQ(-EFAULT, gp_ioc(self->fd, GPUPOOL_IOC_STATS, &st));
	EXPECT_EQ(0, gp_free(self->fd, h));
}

TEST_F(pool, unknown_commands)
{
	uint64_t x = 0;
	int cfd;
	uint64_t h = gp_alloc(self->fd, 4096);

	ASSERT_NE(0, h);
	EXPECT_EQ(-ENOTTY, gp_ioc(self->fd, _IO(GPUPOOL_IOC_MAGIC, 0x7f), &x));
	/* A chunk fd's command on /dev/gpupool, and the other way round. */
	EXPECT_EQ(-ENOTTY, gp_ioc(self->fd, GPUPOOL_IOC_CHUNK_INFO, &x));
	cfd = gp_export(self->fd, h, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(-ENOTTY, gp_ioc(cfd, GPUPOOL_IOC_ALLOC, &x));
	EXPECT_EQ(-ENOTTY, gp_ioc(cfd, GPUPOOL_IOC_VERSION, &x));
	close(cfd);
	EXPECT_EQ(0, gp_free(self->fd, h));
}

TEST_HARNESS_MAIN
