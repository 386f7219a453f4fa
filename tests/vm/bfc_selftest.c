// SPDX-License-Identifier: GPL-2.0
/*
 * bfc_selftest: the BFC core's randomized self-check, run in kernel
 * context (the module's selftest=1 parameter): 20000 random allocations and
 * frees with the pool's parameters, every invariant checked after each,
 * with each placement policy (policy=).  The load fails when the check
 * does; the result is in the kernel log.  Also the policy= parameter: each policy
 * loads and places as documented, and an unknown one is refused.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

static int klog_has(const char *needle)
{
	char line[1024];
	int found = 0;
	FILE *f = popen("dmesg", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = 1;
	pclose(f);
	return found;
}

static void selftest_with(struct __test_metadata *_metadata,
			  const char *policy)
{
	char params[64], want[64];

	snprintf(params, sizeof(params), "pool_size=4M selftest=1%s%s",
		 policy ? " policy=" : "", policy ? policy : "");
	snprintf(want, sizeof(want), "policy %s)", policy ? policy : "tf");
	ASSERT_EQ(0, gp_load(params))
		TH_LOG("selftest (%s) failed: see the kernel log", params);
	EXPECT_EQ(1, klog_has("gpupool: selftest: passed"));
	EXPECT_EQ(1, klog_has(want));
	EXPECT_EQ(0, klog_has("gpupool: selftest: FAILED"));
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* The self-test checks the whole pool after each of its 20000 operations:
 * seconds on a Debian kernel, minutes on the debug kernel (KASAN, TCG), so
 * these get 10 minutes each rather than the harness's 30 s.
 */
FIXTURE(st) {
	int unused;
};

FIXTURE_SETUP(st)
{
	GP_REQUIRE();
}

FIXTURE_TEARDOWN(st)
{
}

/* The default policy (tf), then each of the others. */
TEST_F_TIMEOUT(st, selftest_passes, 600)
{
	selftest_with(_metadata, NULL);
}

TEST_F_TIMEOUT(st, selftest_half, 600)
{
	selftest_with(_metadata, "half");
}

TEST_F_TIMEOUT(st, selftest_age, 600)
{
	selftest_with(_metadata, "age");
}

TEST_F_TIMEOUT(st, selftest_exact, 600)
{
	selftest_with(_metadata, "exact");
}

TEST_F_TIMEOUT(st, selftest_seg, 600)
{
	selftest_with(_metadata, "seg");
}

/* A 4 MiB pool: a 2 MiB chunk L, then one page s, then L freed.  TF's
 * placement (tf, exact: the module always splits) puts s right after L,
 * so the largest free chunk is L's 2 MiB; seg and half cut the page from
 * the high end of the free range (small, and smaller than the rest it
 * leaves), and so does age (beside the pool's high edge, older than L), so
 * L's range joins the rest: 4 MiB less the page.
 */
static void place_one(struct __test_metadata *_metadata, const char *policy,
		      uint64_t want_largest)
{
	char params[64], buf[64], want[64];
	uint64_t l, s;
	int fd;

	snprintf(params, sizeof(params), "pool_size=4M%s%s",
		 policy ? " policy=" : "", policy ? policy : "");
	ASSERT_EQ(0, gp_load_1(params)) TH_LOG("params \"%s\"", params);
	snprintf(want, sizeof(want), "%s\n", policy ? policy : "");
	ASSERT_LT(0, gp_read_file(GP_SYSMOD "/parameters/policy", buf,
				  sizeof(buf)));
	EXPECT_STREQ(want, buf);
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	l = gp_alloc(fd, 2 * MiB);
	ASSERT_NE(0, l);
	s = gp_alloc(fd, 4096);
	ASSERT_NE(0, s);
	EXPECT_EQ(0, gp_free(fd, l));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(want_largest, gp_pool().largest_free) TH_LOG("params \"%s\"", params);
	EXPECT_EQ(0, gp_free(fd, s));
	close(fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST(policy_param)
{
	GP_REQUIRE();
	place_one(_metadata, "tf", 2 * MiB);
	place_one(_metadata, "exact", 2 * MiB);
	place_one(_metadata, "seg", 4 * MiB - GP_PG);
	place_one(_metadata, "half", 4 * MiB - GP_PG);
	place_one(_metadata, "age", 4 * MiB - GP_PG);
	place_one(_metadata, NULL, 2 * MiB);	/* the default: tf */
	EXPECT_EQ(-EINVAL, gp_load("pool_size=4M policy=best"));
	EXPECT_EQ(0, gp_loaded());
	if (gp_loaded())
		gp_unload_wait(2000);
}

TEST_HARNESS_MAIN
