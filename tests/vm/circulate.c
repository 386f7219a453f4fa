// SPDX-License-Identifier: GPL-2.0
/*
 * circulate: idle memory circulates between libgpupool processes on the
 * kernel backend, with the library's defaults.  A 256 MiB pool; process A
 * allocates 160 MiB, frees it (the library keeps the segment cached, and
 * tells the module it is idle) and calls the library no more; process B
 * asks for 160 MiB:
 *  - B is served while A lives, with memory that is zero, A's keeper
 *    thread having given the segment back; A's next allocation works;
 *  - A stopped (SIGSTOP): B is refused after the bounded wait, and its
 *    message names A (pid and command) and says it did not answer;
 *  - A's memory in use: nothing is taken, and B is refused plainly, its
 *    message saying that no process holds idle memory.
 */
#include "kselftest_harness.h"
#include "circulate_lib.h"

#define BIG	(160 * MiB)

FIXTURE(cir) {
	struct gp_child a, b;
};

FIXTURE_SETUP(cir)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=256M " GP_RECLAIM_WAIT));
	ASSERT_EQ(0, lh_start_by(&self->a, NULL, NULL));
	ASSERT_EQ(0, lh_start_by(&self->b, NULL, NULL));
}

FIXTURE_TEARDOWN(cir)
{
	EXPECT_EQ(0, lh_stop(&self->a));
	EXPECT_EQ(0, lh_stop(&self->b));
	EXPECT_EQ(0, gp_unload_wait(10000));
}

TEST_F(cir, idle_cache_serves_another)
{
	struct lh_reply r;

	ASSERT_EQ(0, lh_call(&self->a, 'a', BIG).ret);
	ASSERT_EQ(0, lh_call(&self->a, 'f', 0).ret);
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));

	r = lh_call(&self->b, 'a', BIG);
	ASSERT_EQ(0, r.ret) TH_LOG("B: %s", r.msg);
	EXPECT_EQ(1, r.b) TH_LOG("B's buffer was not zero");
	EXPECT_EQ(BIG, lh_call(&self->a, 's', 0).a);	/* trimmed: given */
	EXPECT_EQ(1, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimGiven"));
	EXPECT_EQ(0, gp_proc_num("Idle"));
	EXPECT_EQ(0, gp_proc_num("FailedAllocs"));

	/* A's next allocation works, from what is free. */
	r = lh_call(&self->a, 'a', 64 * MiB);
	EXPECT_EQ(0, r.ret) TH_LOG("A: %s", r.msg);
	EXPECT_EQ(0, lh_call(&self->b, 'c', 0).ret);
}

TEST_F(cir, stopped_holder_is_named)
{
	struct lh_reply r;
	char want[64];
	int st;

	ASSERT_EQ(0, gp_set_param("reclaim_wait_ms", "1000"));
	ASSERT_EQ(0, lh_call(&self->a, 'a', BIG).ret);
	ASSERT_EQ(0, lh_call(&self->a, 'f', 0).ret);
	ASSERT_EQ(0, kill(self->a.pid, SIGSTOP));
	ASSERT_EQ(self->a.pid, waitpid(self->a.pid, &st, WUNTRACED));

	r = lh_call(&self->b, 'a', BIG);
	EXPECT_EQ(-ENOMEM, r.ret);
	snprintf(want, sizeof(want), "pid %d (circulate)", (int)self->a.pid);
	EXPECT_NE(NULL, strstr(r.msg, want)) TH_LOG("%s", r.msg);
	EXPECT_NE(NULL, strstr(r.msg, "not given in time")) TH_LOG("%s", r.msg);
	EXPECT_NE(NULL, strstr(r.msg, "160.0 MiB idle")) TH_LOG("%s", r.msg);
	EXPECT_EQ(1, gp_proc_num("ReclaimTimeouts"));

	/* Running again, A still has its cache, and answers the next ask. */
	ASSERT_EQ(0, gp_set_param("reclaim_wait_ms", GP_RECLAIM_WAIT_MS));
	ASSERT_EQ(0, kill(self->a.pid, SIGCONT));
	r = lh_call(&self->b, 'a', BIG);
	EXPECT_EQ(0, r.ret) TH_LOG("B: %s", r.msg);
}

TEST_F(cir, in_use_refused_plainly)
{
	struct lh_reply r;

	ASSERT_EQ(0, lh_call(&self->a, 'a', BIG).ret);
	r = lh_call(&self->b, 'a', BIG);
	EXPECT_EQ(-ENOMEM, r.ret);
	EXPECT_NE(NULL, strstr(r.msg, "the pool is full; no other process holds idle memory"))
		TH_LOG("%s", r.msg);
	EXPECT_EQ(0, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(0, lh_call(&self->a, 'c', 0).ret);
}

TEST_HARNESS_MAIN
