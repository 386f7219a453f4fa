// SPDX-License-Identifier: GPL-2.0
/*
 * zero_on_alloc: a chunk never shows what an earlier holder wrote.  One
 * process fills the whole pool with a pattern and frees it (by FREE, by
 * close, by dying); another process then gets the same memory back and
 * finds only zeros.
 */
#include <signal.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define POOL	(16 * MiB)

FIXTURE(pool) {
	int unused;
};

FIXTURE_SETUP(pool)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=16M"));
}

FIXTURE_TEARDOWN(pool)
{
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* how: 0 FREE and exit, 1 exit without FREE, 2 SIGKILL itself. */
static int dirty_everything(void *arg)
{
	int how = *(int *)arg, fd = gp_open_dev(), i;
	uint64_t h[4];
	char *p;

	if (fd < 0)
		return 10;
	/* In pieces, so that the pieces' order in the pool is mixed. */
	for (i = 0; i < 4; i++) {
		h[i] = gp_alloc(fd, POOL / 4);
		if (!h[i])
			return 11;
		p = gp_map(fd, h[i], POOL / 4);
		if (p == MAP_FAILED)
			return 12;
		memset(p, 0xa5 + i, POOL / 4);
	}
	if (how == 2)
		kill(getpid(), SIGKILL);
	for (i = 0; how == 0 && i < 4; i++)
		if (gp_free(fd, h[i]))
			return 13;
	return 0;
}

static int check_clean(void *arg)
{
	int fd = gp_open_dev();
	uint64_t h;
	char *p;

	(void)arg;
	if (fd < 0)
		return 20;
	/* One chunk spanning the whole pool: it may have to wait for the
	 * zeroing worker, never see a dirty page.
	 */
	h = gp_alloc(fd, POOL);
	if (!h)
		return 21;
	p = gp_map(fd, h, POOL);
	if (p == MAP_FAILED)
		return 22;
	return gp_all_bytes(p, POOL, 0) ? 0 : 23;
}

TEST_F(pool, after_free)
{
	int how = 0;

	ASSERT_EQ(0, gp_run_child(dirty_everything, &how));
	EXPECT_EQ(0, gp_run_child(check_clean, NULL));
}

TEST_F(pool, after_exit)
{
	int how = 1;

	ASSERT_EQ(0, gp_run_child(dirty_everything, &how));
	EXPECT_EQ(0, gp_run_child(check_clean, NULL));
}

TEST_F(pool, after_sigkill)
{
	int how = 2;

	ASSERT_EQ(128 + SIGKILL, gp_run_child(dirty_everything, &how));
	EXPECT_EQ(0, gp_run_child(check_clean, NULL));
}

/* Small chunks reused at once by the same file are zero too. */
TEST_F(pool, reuse_small)
{
	int fd = gp_open_dev(), i;
	uint64_t h;
	char *p;

	ASSERT_LE(0, fd);
	for (i = 0; i < 50; i++) {
		h = gp_alloc(fd, 3 * 4096);
		ASSERT_NE(0, h);
		p = gp_map(fd, h, 3 * 4096);
		ASSERT_NE(MAP_FAILED, p);
		ASSERT_TRUE(gp_all_bytes(p, 3 * 4096, 0)) TH_LOG("round %d", i);
		memset(p, 0xff, 3 * 4096);
		munmap(p, 3 * 4096);
		ASSERT_EQ(0, gp_free(fd, h));
	}
	close(fd);
}

TEST_HARNESS_MAIN
