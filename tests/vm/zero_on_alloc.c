// SPDX-License-Identifier: GPL-2.0
/*
 * zero_on_alloc: a chunk never shows what an earlier holder wrote.  One
 * process fills the whole pool with a pattern and frees it (by FREE, by
 * close, by dying); another process then gets the same memory back and
 * finds only zeros.  And the wait for the zeroing worker that this costs an
 * allocation has an end, however busy the pool.
 */
#include <signal.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define POOL	(16 * MiB)

GP_LOADED_FIXTURE(pool, "pool_size=16M", 5000)

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

/*
 * An allocation that does not fit waits for the zeroing worker only for the
 * chunks that were zeroing when it looked.  Here the pool is all one-page
 * holes between one-page chunks, so two pages never fit, while churners
 * keep releasing one-page chunks: free + zeroing always covers two pages
 * and something is nearly always being zeroed.  The two-page ALLOC must
 * fail with ENOMEM while they churn, not wait until they stop (CI once saw
 * a load_many worker stuck like this for over a minute on the debug
 * kernel).
 */
#define CHURNERS	8
#define CHURN_BATCH	16
#define CHURN_SECS	60

struct churn {
	atomic_int started, stop, done;
	atomic_ullong frees;
};

static int churn(void *arg)
{
	struct churn *ch = arg;
	double end = gp_now() + CHURN_SECS;
	uint64_t h[CHURN_BATCH];
	int fd = gp_open_dev(), i, n;

	if (fd < 0)
		return 30;
	atomic_fetch_add(&ch->started, 1);
	while (!atomic_load(&ch->stop) && gp_now() < end) {
		for (n = 0; n < CHURN_BATCH; n++) {
			h[n] = gp_alloc(fd, GP_PG);
			if (!h[n])
				break;
		}
		for (i = 0; i < n; i++)
			if (gp_free(fd, h[i]))
				return 31;
		atomic_fetch_add(&ch->frees, n);
	}
	atomic_fetch_add(&ch->done, 1);
	return 0;
}

TEST_F_TIMEOUT(pool, busy_zeroing_does_not_stall_alloc, 2 * CHURN_SECS)
{
	static uint64_t h[POOL / 4096];	/* one-page chunks: 4 KiB at least */
	const int pages = (int)(POOL / GP_PG);
	struct gpupool_alloc a;
	struct churn *ch;
	pid_t pids[CHURNERS];
	int fd = gp_open_dev(), n = 0, i, status, ret, done;
	unsigned long long frees;

	ASSERT_LE(0, fd);
	while (n < pages && (h[n] = gp_alloc(fd, GP_PG)))
		n++;
	ASSERT_EQ(pages, n);
	for (i = 0; i < n; i += 2)
		ASSERT_EQ(0, gp_free(fd, h[i]));
	ASSERT_EQ(0, gp_wait_quiet(10000, 0));

	ch = mmap(NULL, sizeof(*ch), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ch);
	for (i = 0; i < CHURNERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			_exit(churn(ch));
	}
	while ((atomic_load(&ch->started) < CHURNERS ||
		atomic_load(&ch->frees) < 1000) && !atomic_load(&ch->done))
		usleep(1000);

	ret = gp_alloc_ex(fd, 2 * GP_PG, 0, 0, &a);
	done = atomic_load(&ch->done);
	frees = atomic_load(&ch->frees);
	atomic_store(&ch->stop, 1);
	for (i = 0; i < CHURNERS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("churner %d: status %#x", i, status);
	}
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(0, done) TH_LOG("the ALLOC returned only after the churners stopped (%d s)",
				  CHURN_SECS);
	TH_LOG("%llu one-page chunks released before the ALLOC returned, %llu in all",
	       frees, (unsigned long long)atomic_load(&ch->frees));
	munmap(ch, sizeof(*ch));
	close(fd);
}

TEST_HARNESS_MAIN
