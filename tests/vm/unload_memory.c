// SPDX-License-Identifier: GPL-2.0
/*
 * unload_memory: loading takes the pool out of free memory; unloading gives
 * it all back (free memory before load and after unload agree within a
 * small margin; counted as the page allocator does, per-CPU lists included,
 * see gp_free_bytes()), also after chunks were used, freed while mapped, exported and
 * passed around.  While anything refers to the module (an open file, a
 * mapping, an exported chunk fd) it cannot be unloaded.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

#define POOL	(128 * MiB)
#define MARGIN	(1 * MiB)	/* less than one 2 MiB block */
/*
 * What loading may take besides the pool: the module's own memory, whose
 * text 6.14 and later (x86, ARCH_HAS_EXECMEM_ROX) carve out of 2 MiB pages
 * they allocate for module text when their cache of them runs out: seen
 * on the debug kernel, a load after fault_inject's took 2.6 MiB more than
 * the pool.  The unload must still give back all but MARGIN.
 */
#define MODULE_SPACE	(2 * MiB)

static long long memfree(void)
{
	return gp_free_bytes();
}

TEST(memory_comes_back)
{
	long long before, loaded, after;
	uint64_t h[3];
	int fd, cfd, i;
	char *p, *q;

	GP_REQUIRE();
	before = memfree();
	ASSERT_LT(0, before);
	ASSERT_EQ(0, gp_load("pool_size=128M"));
	loaded = memfree();
	EXPECT_LT(before - loaded, (long long)(POOL + MODULE_SPACE + MARGIN));
	EXPECT_GT(before - loaded, (long long)(POOL - MARGIN));

	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	for (i = 0; i < 3; i++) {
		h[i] = gp_alloc(fd, 16 * MiB + i * 4096);
		ASSERT_NE(0, h[i]);
	}
	p = gp_map(fd, h[0], 16 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, 16 * MiB);
	cfd = gp_export(fd, h[1], 0);
	ASSERT_LE(0, cfd);
	q = mmap(NULL, 16 * MiB + 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		 cfd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, gp_free(fd, h[0]));

	/* Each holder of the module keeps it. */
	close(fd);
	EXPECT_EQ(-EAGAIN, gp_unload());
	munmap(p, 16 * MiB);
	EXPECT_EQ(-EAGAIN, gp_unload());
	close(cfd);
	EXPECT_EQ(-EAGAIN, gp_unload());
	munmap(q, 16 * MiB + 4096);
	ASSERT_EQ(0, gp_unload_wait(5000));

	/* Less free after than before would be a leak; more is the kernel
	 * tidying up (reclaim, compaction) under the pool's pressure.
	 */
	after = memfree();
	TH_LOG("free before load %lld kB, loaded %lld kB, after unload %lld kB",
	       before >> 10, loaded >> 10, after >> 10);
	EXPECT_LT(before - after, (long long)MARGIN);
}

/* Loading and unloading repeatedly leaks nothing. */
TEST(cycles_leak_nothing)
{
	long long before, after;
	int i, fd;

	GP_REQUIRE();
	before = memfree();
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, gp_load("pool_size=64M"));
		fd = gp_open_dev();
		ASSERT_LE(0, fd);
		ASSERT_NE(0, gp_alloc(fd, 10 * MiB));
		close(fd);
		ASSERT_EQ(0, gp_unload_wait(5000));
	}
	after = memfree();
	TH_LOG("free before %lld kB, after %lld kB", before >> 10,
	       after >> 10);
	EXPECT_LT(before - after, (long long)MARGIN);
}

TEST_HARNESS_MAIN
