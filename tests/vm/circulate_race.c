// SPDX-License-Identifier: GPL-2.0
/*
 * circulate_race: a library segment becomes busy again while it is being
 * given back.  Process A (libgpupool, kernel backend) has threads that
 * allocate, fill, check and free 96 MiB buffers in a loop, so that its
 * segments go idle and busy again all the time; process B asks for
 * 200 MiB again and again, which the 256 MiB pool has only when A's
 * keeper gives the idle segment back.  The keeper and A's allocating
 * thread race for the segment under the host pools' lock.  It runs
 * 10 s, then on until A gave back MIN_GIVEN segments and some asked
 * segment went busy again first, up to MAX_SECS.  What must hold: no
 * buffer of A's loses a byte, every buffer B gets is zero, every
 * failure is a plain refusal (ENOMEM), and when both are gone nothing is
 * idle or in use.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "circulate_lib.h"

#define A_SIZE		(96 * MiB)
#define B_SIZE		(200 * MiB)
#define A_THREADS	1
#define MIN_SECS	10
#define MAX_SECS	180
#define MIN_GIVEN	3

struct a_run {
	struct gp_ctx *ctx;
	atomic_int stop;
	atomic_ulong lost, odd, cycles;
	unsigned long seed;
};

/*
 * Allocate, use, free, idle 0-2 ms, again.  Every 16th time the whole
 * buffer is filled and checked; the others, its first and last pages
 * (keeping the segment's idle and busy spells short and many).
 */
static void *a_cycle(void *arg)
{
	struct a_run *a = arg;
	unsigned long n = atomic_fetch_add(&a->cycles, 1) * 7919 + 1;
	uint64_t len;
	char *p;
	int ret;

	while (!atomic_load(&a->stop)) {
		ret = gp_host_alloc(a->ctx, A_SIZE, 0, (void **)&p);
		if (ret) {
			if (ret != -ENOMEM)
				atomic_fetch_add(&a->odd, 1);
			usleep(1000);
			continue;
		}
		/* All of it, or its first and last pages (patterns of
		 * their own page numbers either way).
		 */
		len = n % 16 ? GP_PG : A_SIZE;
		gp_fill_pages(p, len, n % 1000000);
		gp_fill_pages(p + A_SIZE - GP_PG, GP_PG,
			      n % 1000000 + A_SIZE / GP_PG - 1);
		if (gp_check_pages(p, len, n % 1000000) ||
		    gp_check_pages(p + A_SIZE - GP_PG, GP_PG,
				   n % 1000000 + A_SIZE / GP_PG - 1))
			atomic_fetch_add(&a->lost, 1);
		gp_host_free(a->ctx, p);
		usleep(n % 2000);	/* idle a moment: B may ask */
		n = n * 1103515245 + 12345;
	}
	return NULL;
}

/* A: its threads until a byte on sock; its exit says what went wrong. */
static int a_main(int sock)
{
	static struct a_run a;
	pthread_t th[A_THREADS];
	char c;
	int i;

	if (lh_open(&a.ctx))
		return 2;
	for (i = 0; i < A_THREADS; i++)
		pthread_create(&th[i], NULL, a_cycle, &a);
	if (write(sock, "r", 1) != 1 || read(sock, &c, 1) != 1)
		return 3;
	atomic_store(&a.stop, 1);
	for (i = 0; i < A_THREADS; i++)
		pthread_join(th[i], NULL);
	gp_close(a.ctx);
	return atomic_load(&a.lost) ? 1 : atomic_load(&a.odd) ? 4 : 0;
}

GP_LOADED_FIXTURE(cr, "pool_size=256M " GP_RECLAIM_WAIT, 20000)

TEST_F_TIMEOUT(cr, busy_again_while_given_back, MAX_SECS + 60)
{
	unsigned long served = 0, refused = 0, odd = 0, dirty = 0;
	struct gp_child a;
	struct gp_ctx *ctx;
	double t0, t;
	void *p;
	int ret;
	char c;

	ASSERT_EQ(0, gp_child_start(&a, NULL, NULL, a_main));
	ASSERT_EQ(1, read(a.sock, &c, 1));
	ASSERT_EQ(0, lh_open(&ctx));

	for (t0 = gp_now();;) {
		t = gp_now() - t0;
		if (t > MAX_SECS ||
		    (t > MIN_SECS &&
		     gp_proc_num("ReclaimGiven") >= (long long)(MIN_GIVEN * A_SIZE >> 10) &&
		     gp_proc_num("ReclaimBusy") > 0))
			break;
		ret = gp_host_alloc(ctx, B_SIZE, 0, &p);
		if (ret) {
			refused++;
			odd += ret != -ENOMEM;
			usleep(1000);
			continue;
		}
		served++;
		dirty += !gp_all_bytes(p, B_SIZE, 0);
		memset(p, 0xb, B_SIZE);
		/* Given back at once: B's cache must not stand in A's way. */
		gp_host_free(ctx, p);
		gp_host_trim(ctx, NULL);
	}
	ksft_print_msg("B: %lu served, %lu refused in %.0f s; asks %lld, given %lld kB, busy again %lld kB, timeouts %lld\n",
		       served, refused, gp_now() - t0, gp_proc_num("ReclaimAsks"),
		       gp_proc_num("ReclaimGiven"), gp_proc_num("ReclaimBusy"),
		       gp_proc_num("ReclaimTimeouts"));
	gp_close(ctx);
	EXPECT_EQ(0, gp_child_stop(&a, "q", 1))
		TH_LOG("A lost bytes (1) or failed otherwise");
	EXPECT_EQ(0, dirty);
	EXPECT_EQ(0, odd);
	EXPECT_LE(MIN_GIVEN * (A_SIZE >> 10), gp_proc_num("ReclaimGiven"));
	EXPECT_LT(0, gp_proc_num("ReclaimBusy"));
	GP_EXPECT_DRAINED();
}

TEST_HARNESS_MAIN
