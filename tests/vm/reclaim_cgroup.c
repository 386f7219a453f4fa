// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim_cgroup: a cgroup limit asks only the holders charged inside the
 * limiting cgroup's subtree; another tenant's idle memory is asked for
 * only when the pool itself is full.  Once with the module's own limits,
 * once with dmem where the kernel has it (CG_VARIANTS).  Cgroups of the
 * test: job (limited) with job/a (holder A) and job/b (B, this process),
 * and other (holder O), a tenant of its own; the pool is 48 MiB.
 *  - B at job's limit: A's idle chunk is asked for and B is served;
 *  - O's idle chunk is never asked for job's limit: B is refused, O keeps
 *    it, the report lists O as holding idle memory elsewhere;
 *  - the pool full: O's idle chunk is asked for, and B is served.
 */
#include "kselftest_harness.h"
#include "cgroup_lib.h"
#include "reclaim_lib.h"

FIXTURE(rcg) {
	struct cg_env env;
	int fd;
	struct gp_child a, o;
};

CG_VARIANTS(rcg);

FIXTURE_SETUP(rcg)
{
	struct cg_in a = { &self->env, "job/a" }, o = { &self->env, "other" };

	CG_SETUP("reclaim");
	ASSERT_EQ(0, gp_set_param("reclaim_wait_ms", GP_RECLAIM_WAIT_MS));
	ASSERT_EQ(0, cg_make(&self->env, "job"));
	ASSERT_EQ(0, cg_make(&self->env, "job/a"));
	ASSERT_EQ(0, cg_make(&self->env, "job/b"));
	ASSERT_EQ(0, cg_make(&self->env, "other"));
	ASSERT_EQ(0, rh_start_by(&self->a, cg_fork_in, &a));
	ASSERT_EQ(0, rh_start_by(&self->o, cg_fork_in, &o));
	ASSERT_EQ(0, cg_enter(&self->env, "job/b"));
}

FIXTURE_TEARDOWN(rcg)
{
	EXPECT_EQ(0, rh_stop(&self->a));
	EXPECT_EQ(0, rh_stop(&self->o));
	close(self->fd);
	cg_teardown(&self->env);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

static int64_t idle_in(struct gp_child *h, uint64_t size)
{
	int64_t i = rh_alloc(h, size);

	if (i >= 0 && rh_call(h, 'I', (uint64_t)i).ret)
		return -1;
	return i;
}

TEST_F(rcg, limit_asks_its_own_subtree)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;

	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", 32 * MiB));
	ASSERT_EQ(0, idle_in(&self->a, 24 * MiB));
	ASSERT_EQ(0, gp_alloc_ex(self->fd, 16 * MiB, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(-ENOSPC, r.refusal);
	EXPECT_EQ(0, r.result);
	EXPECT_EQ(24 * MiB, r.given);
	e = rh_entry(&r, h, self->a.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(GPUPOOL_ASK_ASKED, e->flags);
	EXPECT_EQ(24 * MiB, e->given);
	/* Served, not refused: the limit counts no denial. */
	EXPECT_EQ(0, gp_proc_num("CgroupDenials"));
}

TEST_F(rcg, other_tenant_not_asked_for_a_limit)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;

	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", 16 * MiB));
	/* B's 8 MiB first, O's 24 next: O's gone, they are one hole. */
	ASSERT_EQ(0, gp_alloc_ex(self->fd, 8 * MiB, 0, 0, &b));
	ASSERT_EQ(0, idle_in(&self->o, 24 * MiB));
	EXPECT_EQ(-ENOSPC, gp_alloc_ex(self->fd, 12 * MiB, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(-ENOSPC, r.refusal);
	EXPECT_EQ(0, r.asked);
	EXPECT_EQ(0, r.wait_ns);
	EXPECT_EQ(24 * MiB, r.idle);
	e = rh_entry(&r, h, self->o.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(GPUPOOL_ASK_ELSEWHERE, e->flags);
	EXPECT_EQ(0, e->asked);
	EXPECT_EQ(0, rh_call(&self->o, 'C', 0).ret);
	EXPECT_EQ(1, gp_proc_num("CgroupDenials"));
	EXPECT_EQ(0, gp_proc_num("ReclaimAsks"));

	/* The pool full (48 MiB: O's 24, B's 8): O is asked. */
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", GPUPOOL_NO_LIMIT));
	ASSERT_EQ(0, gp_alloc_ex(self->fd, 30 * MiB, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(-ENOMEM, r.refusal);
	EXPECT_EQ(0, r.result);
	e = rh_entry(&r, h, self->o.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(GPUPOOL_ASK_ASKED, e->flags);
	EXPECT_EQ(24 * MiB, e->given);
	EXPECT_EQ(-EBADMSG, rh_call(&self->o, 'C', 0).ret);
}

TEST_HARNESS_MAIN
