// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_output: gpupoolctl against the real module in a known state: a 32 MiB
 * one-node pool, this process holding 1 MiB + 3 MiB in two chunks.  Its
 * figures must be exactly those; its error messages must say what to do
 * (module not loaded, /dev/gpupool not accessible).  Then per-cgroup
 * limits on a real cgroup (cgroup2 mounted at /sys/fs/cgroup if nothing
 * is): `limit set/show/clear`, the use shown after allocations made from
 * inside the cgroup, and the refusal without CAP_SYS_ADMIN.  The binary is
 * the build tree's: <O>/tools/gpupoolctl, found from this program's own
 * path (<O>/tests/vm/ctl_output).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/stat.h>
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

/* Run gpupoolctl ARGS (as uid:gid when uid >= 0): output, and exit code. */
static char *ctl_as(const char *args, int uid, int gid, int *code)
{
	char cmd[PATH_MAX + 256], *out = calloc(1, 1 << 16);
	size_t n;
	FILE *p;
	int st;

	if (uid >= 0)
		snprintf(cmd, sizeof(cmd), "setpriv --reuid=%d --regid=%d --clear-groups %s %s 2>&1",
			 uid, gid, ctl_path(), args);
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

/* Run gpupoolctl ARGS (as uid, in its own group, when uid >= 0). */
static char *ctl(const char *args, int uid, int *code)
{
	return ctl_as(args, uid, uid, code);
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
	/* How chunks are mapped, as /proc/gpupool's HugeMaps and PageSize
	 * (in kB) say.
	 */
	snprintf(want, sizeof(want), "\nmappings: %lld KiB entries\n",
		 gp_proc_num("PageSize"));
	EXPECT_NE(NULL, strstr(out, gp_proc_num("HugeMaps") == 1 ?
			       "\nmappings: a chunk's whole 2 MiB blocks in 2 MiB " :
			       want)) TH_LOG("%s", out);
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

/* Per-cgroup limits ------------------------------------------------------- */

#define CGROOT	"/sys/fs/cgroup"
#define CGTEST	CGROOT "/ctltest"

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/* Move this process into the cgroup at dir: 0 or -errno. */
static int enter_cgroup(const char *dir)
{
	char path[PATH_MAX], pid[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	return write_str(path, pid);
}

FIXTURE(cg) {
	int fd;
	bool made;	/* CGTEST is ours to remove */
	bool inside;	/* this process is in CGTEST */
	bool ready;
};

/*
 * A cgroup of the VM's cgroup2 hierarchy (mounted here if nothing is, as
 * the VMs boot without one) and the module with a 32 MiB pool, no chunk.
 */
FIXTURE_SETUP(cg)
{
	self->fd = -1;
	GP_REQUIRE();
	if (!ctl_path())
		GP_SKIP("gpupoolctl not built next to the tests");
	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		GP_SKIP("no cgroup2 hierarchy at " CGROOT ", and mounting one failed: %s",
			strerror(errno));
	rmdir(CGTEST);		/* a run before this one died */
	ASSERT_EQ(0, mkdir(CGTEST, 0755)) TH_LOG("%s: %s", CGTEST, strerror(errno));
	self->made = true;
	/* The module's own limits, also on a kernel with dmem (the debug
	 * kernel): what gpupoolctl prints for dmem is tested on a fixture.
	 */
	ASSERT_EQ(0, gp_load_1("pool_size=32M cgroup_limits=module"));
	self->ready = true;
}

FIXTURE_TEARDOWN(cg)
{
	if (self->inside)
		EXPECT_EQ(0, enter_cgroup(CGROOT));
	if (self->fd >= 0)
		close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
	if (self->made)
		EXPECT_EQ(0, rmdir(CGTEST)) TH_LOG("%s: %s", CGTEST, strerror(errno));
}

/* 1 + 2 MiB charged to CGTEST (allocated from inside it), 6 MiB refused
 * there when limit is set; this process back in the root afterwards (the
 * charge stays with the cgroup).
 */
static void fill_ctltest(struct __test_metadata *_metadata,
			 FIXTURE_DATA(cg) *self, bool limited)
{
	struct gpupool_alloc a;

	ASSERT_EQ(0, enter_cgroup(CGTEST));
	self->inside = true;
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_NE(0, gp_alloc(self->fd, MiB));
	ASSERT_NE(0, gp_alloc(self->fd, 2 * MiB));
	if (limited)	/* 3 + 6 MiB > 8 MiB */
		EXPECT_EQ(-ENOSPC, gp_alloc_ex(self->fd, 6 * MiB, 0, 0, &a));
	ASSERT_EQ(0, enter_cgroup(CGROOT));
	self->inside = false;
}

#define EXPECT_IN(out, text) \
	EXPECT_NE(NULL, strstr(out, text)) TH_LOG("want '%s' in:\n%s", text, out)

TEST_F(cg, limit_set_show_clear)
{
	NEED_SETUP();
	int code;
	char *out;

	out = ctl("info", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "cgroup limits:  the module's own (gpupoolctl limit)\n");
	free(out);

	/* Nothing charged, no limit yet. */
	out = ctl("limit show /ctltest -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "limits: the module's own (gpupoolctl limit set)\n");
	EXPECT_IN(out, "           -            0        0        0  /ctltest\n");
	free(out);

	out = ctl("limit set /ctltest 8M", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "limit of /ctltest set to 8.0Mi (8388608 bytes); it holds 0B in 0 chunks\n");
	free(out);

	fill_ctltest(_metadata, self, true);

	/* Named three ways: under the mount, inside it, by descriptor. */
	out = ctl("limit show /ctltest -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "     8388608      3145728        2        1  /ctltest\n");
	free(out);
	out = ctl("limit show " CGTEST " --json", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "{\"limits\": \"module\", \"cgroups\": [{\"cgroup\": \"/ctltest\", \"limit\": 8388608, \"bytes\": 3145728, \"chunks\": 2, \"denials\": 1}]}\n");
	free(out);
	out = ctl("limit show -b fd:7 7<" CGTEST, -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "     8388608      3145728        2        1  /ctltest\n");
	free(out);

	/* Every limited cgroup, from /proc/gpupool: not the root. */
	out = ctl("limit show -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "     8388608      3145728        2        1  /ctltest\n");
	EXPECT_EQ(NULL, strstr(out, "  /\n")) TH_LOG("%s", out);
	free(out);

	/* stat, top and prometheus show the use (the root's includes it). */
	out = ctl("stat -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "cgroups (limits: the module's own; 1 allocations refused by a cgroup limit):\n");
	EXPECT_IN(out, "     3145728        2            -        0  /\n");
	EXPECT_IN(out, "     3145728        2      8388608        1  /ctltest\n");
	free(out);
	out = ctl("top -n 1 -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "     3145728        2      8388608        1  /ctltest\n");
	free(out);
	out = ctl("prometheus", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "gpupool_cgroup_bytes{cgroup=\"/ctltest\"} 3145728\n");
	EXPECT_IN(out, "gpupool_cgroup_chunks{cgroup=\"/ctltest\"} 2\n");
	EXPECT_IN(out, "gpupool_cgroup_limit_bytes{cgroup=\"/ctltest\"} 8388608\n");
	EXPECT_IN(out, "gpupool_cgroup_denials_total{cgroup=\"/ctltest\"} 1\n");
	EXPECT_IN(out, "gpupool_cgroup_limit_denials_total 1\n");
	free(out);

	/* Below the use: taken, and said. */
	out = ctl("limit set ctltest 2M", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "limit of /ctltest set to 2.0Mi (2097152 bytes); it holds 3.0Mi in 2 chunks\n");
	EXPECT_IN(out, "more than the new limit already");
	free(out);

	out = ctl("limit clear /ctltest", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "limit of /ctltest cleared (was 2.0Mi); it holds 3.0Mi in 2 chunks\n");
	free(out);
	out = ctl("limit show /ctltest -b", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "           -      3145728        2        1  /ctltest\n");
	free(out);
	out = ctl("limit clear /ctltest", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "/ctltest had no limit; it holds 3.0Mi in 2 chunks\n");
	free(out);
	out = ctl("limit show", -1, &code);
	EXPECT_EQ(0, code);
	EXPECT_IN(out, "(no cgroup has a limit)");
	free(out);

	/* Bad arguments change nothing. */
	out = ctl("limit set /ctltest 0", -1, &code);
	EXPECT_EQ(2, code);
	free(out);
	out = ctl("limit set /ctltest/nonexistent 1G", -1, &code);
	EXPECT_EQ(1, code);
	EXPECT_IN(out, "no such cgroup: " CGTEST "/nonexistent does not exist");
	free(out);
	out = ctl("limit set /proc 1G", -1, &code);
	EXPECT_EQ(1, code);
	EXPECT_IN(out, "/proc is not a cgroup: its file system is proc, not cgroup2");
	free(out);
}

/*
 * Changing a limit takes CAP_SYS_ADMIN: a user who may open /dev/gpupool
 * (here by its group, root) can read a cgroup's figures but not set or
 * clear its limit; one who may not open it is told that first.  Anyone
 * lists the limits (from /proc/gpupool).
 */
TEST_F(cg, limit_needs_cap_sys_admin)
{
	NEED_SETUP();
	int code;
	char *out;

	out = ctl("limit set /ctltest 8M", -1, &code);
	EXPECT_EQ(0, code);
	free(out);
	fill_ctltest(_metadata, self, false);

	out = ctl_as("limit set /ctltest 1G", 65534, 0, &code);
	EXPECT_EQ(4, code) TH_LOG("%s", out);
	EXPECT_IN(out, "gpupoolctl: limit set /ctltest: Operation not permitted\n");
	EXPECT_IN(out, "needs CAP_SYS_ADMIN in the initial user namespace");
	free(out);
	out = ctl_as("limit clear /ctltest", 65534, 0, &code);
	EXPECT_EQ(4, code) TH_LOG("%s", out);
	EXPECT_IN(out, "needs CAP_SYS_ADMIN in the initial user namespace");
	free(out);
	out = ctl_as("limit show /ctltest -b", 65534, 0, &code);
	EXPECT_EQ(0, code) TH_LOG("%s", out);
	EXPECT_IN(out, "     8388608      3145728        2        0  /ctltest\n");
	free(out);

	out = ctl("limit set /ctltest 1G", 65534, &code);
	EXPECT_EQ(4, code) TH_LOG("%s", out);
	EXPECT_IN(out, "is not accessible to you");
	free(out);
	out = ctl("limit show -b", 65534, &code);
	EXPECT_EQ(0, code) TH_LOG("%s", out);
	EXPECT_IN(out, "     8388608      3145728        2        0  /ctltest\n");
	free(out);

	/* Nothing of that changed it. */
	out = ctl("limit show /ctltest -b", -1, &code);
	EXPECT_IN(out, "     8388608      3145728        2        0  /ctltest\n");
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
