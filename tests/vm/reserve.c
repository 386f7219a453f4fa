// SPDX-License-Identifier: GPL-2.0
/*
 * reserve: the load reserves the pool and says so (one line per node with
 * the time it took); asked for more than the machine has, it takes what it
 * can and warns, or with strict=1 fails cleanly, leaving nothing behind.
 */
#include "kselftest_harness.h"
#include "pool_lib.h"

static long long meminfo(const char *key)
{
	char text[8192], val[64];
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	/* Page cache comes and goes with the tests' own files: drop it. */
	sync();
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			perror("drop_caches");
		close(fd);
	}
	/* Compaction also drains the per-CPU free lists into the counts. */
	fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			perror("compact_memory");
		close(fd);
	}
	usleep(300 * 1000);
	if (gp_read_file("/proc/meminfo", text, sizeof(text)) <= 0 ||
	    !gp_proc_value(text, key, val, sizeof(val)))
		return -1;
	return strtoll(val, NULL, 10) * 1024;
}

static int klog_count(const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f = popen("dmesg", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	pclose(f);
	return n;
}

TEST(logs_reservation)
{
	int before;

	GP_REQUIRE();
	before = klog_count("MiB in ");
	ASSERT_EQ(0, gp_load_1("pool_size=32M"));
	EXPECT_LT(before, klog_count("MiB in "));
	EXPECT_LE(0, gp_proc_num("ReserveTime"));
	EXPECT_EQ(32768, gp_proc_num("Node0PoolTotal"));
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* Twice the machine's memory: strict=1 refuses and gives it all back. */
TEST(strict_refuses)
{
	long long total = meminfo("MemTotal"), before, after;
	char params[96];

	GP_REQUIRE();
	ASSERT_LT(0, total);
	before = gp_free_bytes();
	snprintf(params, sizeof(params), "pool_size=%lld strict=1",
		 2 * total);
	EXPECT_EQ(-ENOMEM, gp_load(params));
	EXPECT_EQ(0, gp_loaded());
	EXPECT_EQ(-1, access(GP_DEV, F_OK));
	/* (Reclaim may have freed page cache: more free is fine.) */
	after = gp_free_bytes();
	TH_LOG("free %lld kB before, %lld kB after", before >> 10,
	       after >> 10);
	EXPECT_LT(before - after, (long long)MiB);
}

/*
 * Without strict: loads with what it could get, which is most of the memory
 * but not below the floor (1/32 of the node): this test goes on running.
 */
TEST(partial_reservation)
{
	long long total = meminfo("MemTotal");
	struct gpupool_pool_stats s;
	char params[96];
	int warned;

	GP_REQUIRE();
	warned = klog_count("the kernel had no more to give");
	snprintf(params, sizeof(params), "pool_size=%lld", 2 * total);
	ASSERT_EQ(0, gp_load(params));
	s = gp_pool();
	EXPECT_LT(s.total, (uint64_t)total);
	EXPECT_LT(total / 2, (long long)s.total);
	TH_LOG("reserved %llu of %lld MiB", (unsigned long long)s.total >> 20,
	       total >> 20);
	EXPECT_EQ(s.total, s.free);
	EXPECT_EQ(warned + 1, klog_count("the kernel had no more to give"));
	/* Give it back at once: the VM has little left. */
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
