// SPDX-License-Identifier: GPL-2.0
/*
 * circulate_pingpong: four libgpupool processes pass 200 MiB around a
 * 256 MiB pool for a minute.  Each in turn, on its token, allocates
 * 200 MiB (which only the previous one's idle cache can make room for:
 * the module asks it, its keeper gives the segment back), fills and
 * checks it, frees it (cached, idle) and passes the token on.  It runs a
 * minute, then on until each has had MIN_TURNS turns, up to MAX_SECS.
 * Their idle segments go back only when asked (host_gc_idle_ms never), so
 * that the figures can be exact.
 * What must hold: no allocation fails, no buffer loses a byte, and the
 * figures agree: every turn but the first asked, every ask was answered
 * in full and served, what the processes gave back is what the module
 * counts given; once they are gone nothing is idle or in use (and the
 * kernel log is clean: KASAN and lockdep on the debug kernel).
 */
#include "kselftest_harness.h"
#include "circulate_lib.h"

#define WORKERS		4
#define SIZE		(200 * MiB)
#define SECS		60
#define MAX_SECS	400
#define MIN_TURNS	3

struct result {
	uint64_t turns, failed, lost, trimmed;
	char msg[256];
};

/* One worker: turns until told to stop (a token of 0). */
static int worker(int in, int out, int report)
{
	struct gp_host_stats st;
	struct gp_options o;
	struct result res;
	struct gp_ctx *ctx;
	uint64_t tok;
	void *p;
	int ret;

	/* Idle segments go back only when asked: a turn slower than the
	 * age limit (the debug kernel's) would leave nothing to ask for.
	 */
	memset(&res, 0, sizeof(res));
	lh_env();
	gp_options_init(&o);
	o.host_gc_idle_ms = GP_HOST_GC_NEVER;
	if (gp_open(&o, &ctx))
		return 1;
	while (read(in, &tok, sizeof(tok)) == sizeof(tok) && tok) {
		ret = gp_host_alloc(ctx, SIZE, 0, &p);
		if (ret) {
			res.failed++;
			snprintf(res.msg, sizeof(res.msg), "%s", gp_last_error(ctx));
		} else {
			gp_fill_pages(p, SIZE, tok * 1000);
			res.lost += gp_check_pages(p, SIZE, tok * 1000) != 0;
			gp_host_free(ctx, p);
			res.turns++;
		}
		tok++;
		if (write(out, &tok, sizeof(tok)) != sizeof(tok))
			break;
	}
	gp_host_stats(ctx, &st);
	res.trimmed = st.trimmed;
	gp_close(ctx);
	return write(report, &res, sizeof(res)) == sizeof(res) ? 0 : 2;
}

GP_LOADED_FIXTURE(pp, "pool_size=256M " GP_RECLAIM_WAIT, 20000)

TEST_F_TIMEOUT(pp, four_pass_200_mib_around, MAX_SECS + 120)
{
	int ring[WORKERS + 1][2], rep[2], i;
	uint64_t tok = 1, turns = 0, failed = 0, lost = 0, trimmed = 0;
	struct result res[WORKERS];
	pid_t pid[WORKERS];
	double t0 = gp_now();

	/* ring[i]: into worker i; ring[WORKERS]: back to the driver. */
	for (i = 0; i <= WORKERS; i++)
		ASSERT_EQ(0, pipe2(ring[i], O_CLOEXEC));
	ASSERT_EQ(0, pipe2(rep, O_CLOEXEC));
	for (i = 0; i < WORKERS; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(worker(ring[i][0], ring[i + 1][1], rep[1]));
		}
	}
	/* Round and round: the driver passes the token on after the last. */
	while (gp_now() - t0 < MAX_SECS) {
		ASSERT_EQ(sizeof(tok), write(ring[0][1], &tok, sizeof(tok)));
		ASSERT_EQ(sizeof(tok), read(ring[WORKERS][0], &tok, sizeof(tok)));
		if (gp_now() - t0 >= SECS && tok > WORKERS * MIN_TURNS)
			break;
	}
	tok = 0;
	for (i = 0; i < WORKERS; i++) {
		ASSERT_EQ(sizeof(tok), write(ring[i][1], &tok, sizeof(tok)));
		ASSERT_EQ(sizeof(res[i]), read(rep[0], &res[i], sizeof(res[i])));
		turns += res[i].turns;
		failed += res[i].failed;
		lost += res[i].lost;
		trimmed += res[i].trimmed;
		if (res[i].failed)
			ksft_print_msg("a worker failed: %s\n", res[i].msg);
	}
	for (i = 0; i < WORKERS; i++)
		EXPECT_EQ(0, gp_reap(pid[i]));
	ksft_print_msg("%llu turns in %.0f s; asks %lld, given %lld kB, served %lld, timeouts %lld, throttled %lld\n",
		       (unsigned long long)turns, gp_now() - t0,
		       gp_proc_num("ReclaimAsks"), gp_proc_num("ReclaimGiven"),
		       gp_proc_num("ReclaimServed"), gp_proc_num("ReclaimTimeouts"),
		       gp_proc_num("ReclaimThrottled"));
	EXPECT_EQ(0, failed);
	EXPECT_EQ(0, lost);
	EXPECT_LE(WORKERS * MIN_TURNS, turns);
	/* Every turn but the first found the last one's cache in its way. */
	EXPECT_EQ((long long)turns - 1, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(gp_proc_num("ReclaimAsks"), gp_proc_num("ReclaimServed"));
	EXPECT_EQ(0, gp_proc_num("ReclaimTimeouts"));
	EXPECT_EQ(0, gp_proc_num("ReclaimBusy"));
	EXPECT_EQ(gp_proc_num("ReclaimAsked"), gp_proc_num("ReclaimGiven"));
	EXPECT_EQ((long long)(trimmed >> 10), gp_proc_num("ReclaimGiven"));
	EXPECT_EQ(0, gp_proc_num("FailedAllocs"));

	GP_EXPECT_DRAINED();
}

TEST_HARNESS_MAIN
