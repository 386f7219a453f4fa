// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_output: gpupoolctl against the real module in a known state: a 32 MiB
 * one-node pool, this process holding 1 MiB + 3 MiB in two chunks.  Its
 * figures must be exactly those; its error messages must say what to do
 * (module not loaded, /dev/gpupool not accessible).  The binary is the
 * build tree's: <O>/tools/gpupoolctl, found from this program's own path
 * (<O>/tests/vm/ctl_output).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

static const char *ctl_path(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = 0;
	snprintf(path, sizeof(path), "%s/../../tools/gpupoolctl", dirname(self));
	return access(path, X_OK) ? NULL : path;
}

/* Run gpupoolctl ARGS (as uid when uid >= 0): output, and exit code. */
static char *ctl(const char *args, int uid, int *code)
{
	char cmd[PATH_MAX + 256], *out = calloc(1, 1 << 16);
	size_t n;
	FILE *p;
	int st;

	if (uid >= 0)
		snprintf(cmd, sizeof(cmd), "setpriv --reuid=%d --regid=%d --clear-groups %s %s 2>&1",
			 uid, uid, ctl_path(), args);
	else
		snprintf(cmd, sizeof(cmd), "%s %s 2>&1", ctl_path(), args);
	*code = -1;
	p = popen(cmd, "r");
	if (!p)
		return out;
	n = fread(out, 1, (1 << 16) - 1, p);
	out[n] = 0;
	st = pclose(p);
	*code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

FIXTURE(known) {
	int fd;
	uint64_t h[2];
	bool ready;	/* setup went through */
};

/* The kselftest harness of 6.1 (the tests' headers) still runs a test's
 * body after its setup skipped: the body must not run gpupoolctl then.
 */
#define NEED_SETUP() do { if (!self->ready) return; } while (0)

FIXTURE_SETUP(known)
{
	GP_REQUIRE();
	if (!ctl_path())
		SKIP(return, "gpupoolctl not built next to the tests");
	ASSERT_EQ(0, gp_load_1("pool_size=32M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	self->h[0] = gp_alloc(self->fd, MiB);
	self->h[1] = gp_alloc(self->fd, 3 * MiB);
	ASSERT_NE(0, self->h[0]);
	ASSERT_NE(0, self->h[1]);
	ASSERT_EQ(0, gp_wait_quiet(20000, 1));
	self->ready = true;
}

FIXTURE_TEARDOWN(known)
{
	if (self->fd > 0)
		close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_F(known, stat_figures)
{
	NEED_SETUP();
	struct gpupool_pool_stats s = gp_pool();
	char want[256];
	int code;
	char *out = ctl("stat -b", -1, &code);

	EXPECT_EQ(0, code);
	/* total, used, free, zeroing, quarantined, largest, peak */
	snprintf(want, sizeof(want), "Pool:    %12llu %12llu %12llu %12u %12u %12llu %12llu",
		 32 * MiB, 4 * MiB, 28 * MiB, 0, 0,
		 (unsigned long long)s.largest_free, 4 * MiB);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("want '%s' in:\n%s", want, out);
	EXPECT_NE(NULL, strstr(out, "allocs 2, frees 0, failed 0"));
	free(out);

	out = ctl("stat --json", -1, &code);
	EXPECT_EQ(0, code);
	snprintf(want, sizeof(want), "\"InUse\": %llu", 4 * MiB);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"PoolTotal\": 33554432"));
	free(out);
}

TEST_F(known, top_names_us)
{
	NEED_SETUP();
	char want[256];
	int code;
	char *out = ctl("top -n 1 -b", -1, &code);

	EXPECT_EQ(0, code);
	snprintf(want, sizeof(want), "%8d %12llu %8d", getpid(), 4 * MiB, 2);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("want '%s' in:\n%s", want, out);
	free(out);
	out = ctl("top -n 1 --json", -1, &code);
	snprintf(want, sizeof(want), "{\"pid\": %d, \"bytes\": %llu, \"chunks\": 2,",
		 getpid(), 4 * MiB);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	free(out);
}

TEST_F(known, map_and_prometheus)
{
	NEED_SETUP();
	char *line, want[128];
	int code, used = 0, i;
	char *out = ctl("map", -1, &code);

	EXPECT_EQ(0, code);
	line = strstr(out, "  [");
	ASSERT_NE(NULL, line) TH_LOG("%s", out);
	/* 4 of 32 MiB in use, 64 cells: 8 cells of '#' (0.5 MiB each). */
	for (i = 3; i < 3 + 64 && line[i]; i++)
		used += line[i] == '#';
	EXPECT_EQ(8, used) TH_LOG("%s", out);
	free(out);

	out = ctl("prometheus", -1, &code);
	EXPECT_EQ(0, code);
	/* One node in this VM: its series are the pool's, and no other. */
	snprintf(want, sizeof(want), "gpupool_in_use_bytes{node=\"0\"} %llu\n",
		 4 * MiB);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "gpupool_chunks_in_use{node=\"0\"} 2\n"));
	EXPECT_EQ(NULL, strstr(out, "node=\"all\""));
	/* The loaded module's version, from /sys/module/gpupool/version. */
	EXPECT_NE(NULL, strstr(out, "gpupool_build_info{version=\"" GPUPOOL_VERSION "\",abi_version=\"")) TH_LOG("%s", out);
	free(out);
}

TEST_F(known, info_matches_ioctl)
{
	NEED_SETUP();
	struct gpupool_version v;
	char want[128];
	int code;
	char *out;

	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(self->fd, GPUPOOL_IOC_VERSION, &v));
	out = ctl("info --json", -1, &code);
	EXPECT_EQ(0, code);
	snprintf(want, sizeof(want), "\"pool_size\": %llu, \"granularity\": %llu",
		 (unsigned long long)v.pool_size,
		 (unsigned long long)v.granularity);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	free(out);
}

/* /dev/gpupool is 0660 root:root by default: nobody gets a clear refusal. */
TEST_F(known, no_access_says_which_group)
{
	NEED_SETUP();
	int code;
	char *out = ctl("info", 65534, &code);

	EXPECT_EQ(4, code) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "is not accessible to you (group 'root', mode 660)")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "70-gpupool.rules"));
	free(out);
}

TEST(not_loaded_says_how_to_load)
{
	int code;
	char *out;

	GP_REQUIRE();
	if (!ctl_path())
		SKIP(return, "gpupoolctl not built next to the tests");
	ASSERT_EQ(0, gp_unload_wait(5000));
	out = ctl("stat", -1, &code);
	EXPECT_EQ(3, code);
	EXPECT_NE(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s", out);
	free(out);
	out = ctl("info", -1, &code);
	EXPECT_EQ(3, code);
	free(out);
}

TEST_HARNESS_MAIN
