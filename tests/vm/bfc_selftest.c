// SPDX-License-Identifier: GPL-2.0
/*
 * bfc_selftest: the BFC core's randomized self-check, run in kernel
 * context (the module's selftest=1 parameter): 20000 random allocations and
 * frees with the pool's parameters, every invariant checked after each.
 * The load fails when the check does; the result is in the kernel log.
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

TEST(selftest_passes)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load("pool_size=4M selftest=1"))
		TH_LOG("selftest failed: see the kernel log");
	EXPECT_EQ(1, klog_has("gpupool: selftest: passed"));
	EXPECT_EQ(0, klog_has("gpupool: selftest: FAILED"));
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
