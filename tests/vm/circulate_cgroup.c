// SPDX-License-Identifier: GPL-2.0
/*
 * circulate_cgroup: idle memory circulates inside a cgroup at its limit,
 * between libgpupool processes, not across tenants.  Once with the
 * module's own limits, once with dmem where the kernel has it
 * (CG_VARIANTS); a 48 MiB pool; cgroups job (limited) with job/a
 * (process A) and job/b (process B), and other (process O):
 *  - A idles 24 MiB (freed, cached); B, in A's cgroup at the cgroup's
 *    limit, is served: A gives its segment back;
 *  - O idles 24 MiB: for job's limit it is never asked, and B is refused
 *    with a message naming job's limit and saying O's idle memory is of
 *    no use here.
 */
#include "kselftest_harness.h"
#include "cgroup_lib.h"
#include "circulate_lib.h"

FIXTURE(ccg) {
	struct cg_env env;
	int fd;
	struct gp_child a, b, o;
};

CG_VARIANTS(ccg);

FIXTURE_SETUP(ccg)
{
	struct cg_in a = { &self->env, "job/a" }, b = { &self->env, "job/b" },
		     o = { &self->env, "other" };

	CG_SETUP("circulate");
	ASSERT_EQ(0, gp_set_param("reclaim_wait_ms", GP_RECLAIM_WAIT_MS));
	ASSERT_EQ(0, cg_make(&self->env, "job"));
	ASSERT_EQ(0, cg_make(&self->env, "job/a"));
	ASSERT_EQ(0, cg_make(&self->env, "job/b"));
	ASSERT_EQ(0, cg_make(&self->env, "other"));
	ASSERT_EQ(0, lh_start_by(&self->a, cg_fork_in, &a));
	ASSERT_EQ(0, lh_start_by(&self->b, cg_fork_in, &b));
	ASSERT_EQ(0, lh_start_by(&self->o, cg_fork_in, &o));
}

FIXTURE_TEARDOWN(ccg)
{
	EXPECT_EQ(0, lh_stop(&self->a));
	EXPECT_EQ(0, lh_stop(&self->b));
	EXPECT_EQ(0, lh_stop(&self->o));
	close(self->fd);
	cg_teardown(&self->env);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

TEST_F(ccg, served_in_its_own_cgroup_at_the_limit)
{
	struct lh_reply r;

	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", 32 * MiB));
	ASSERT_EQ(0, lh_call(&self->a, 'a', 24 * MiB).ret);
	ASSERT_EQ(0, lh_call(&self->a, 'f', 0).ret);
	r = lh_call(&self->b, 'a', 16 * MiB);
	ASSERT_EQ(0, r.ret) TH_LOG("B: %s", r.msg);
	EXPECT_EQ(24 * MiB, lh_call(&self->a, 's', 0).a);
	EXPECT_EQ(0, gp_proc_num("CgroupDenials"));
}

TEST_F(ccg, another_tenant_is_not_asked)
{
	struct lh_reply r;
	char want[64];

	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "job", 16 * MiB));
	ASSERT_EQ(0, lh_call(&self->b, 'a', 8 * MiB).ret);
	ASSERT_EQ(0, lh_call(&self->o, 'a', 24 * MiB).ret);
	ASSERT_EQ(0, lh_call(&self->o, 'f', 0).ret);
	r = lh_call(&self->b, 'a', 12 * MiB);
	EXPECT_EQ(-ENOSPC, r.ret);
	EXPECT_NE(NULL, strstr(r.msg, "/job")) TH_LOG("%s", r.msg);
	snprintf(want, sizeof(want), "pid %d (circulate_cgrou), of no use here",
		 (int)self->o.pid);
	EXPECT_NE(NULL, strstr(r.msg, want)) TH_LOG("%s", r.msg);
	EXPECT_EQ(0, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(0, lh_call(&self->o, 's', 0).a);	/* kept its cache */
}

TEST_HARNESS_MAIN
