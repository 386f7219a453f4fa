// SPDX-License-Identifier: MIT
/*
 * cgroup_limit: a cgroup limit of gpupool.ko refuses a chunk with ENOSPC,
 * and gp_host_alloc() says so: -ENOSPC, and gp_last_error() names the
 * cgroup, its limit and its use.
 *
 *  - On the kernel backend, as root, with a module of ABI 1.1 (the VM's
 *    lib-<kernel> run): a cgroup with a limit set through
 *    GPUPOOL_IOC_CGROUP (the module's own limits), the test moved into it
 *    (or into a child of it); within the limit gp_host_alloc() succeeds,
 *    past it it fails with -ENOSPC naming the cgroup whose limit refused
 *    (the parent's, or the child's own when that one is lower), and a
 *    refusal that releasing the idle cached segments cures is retried
 *    once, as for the module's per_process_limit.  Where the module's
 *    limits are the dmem controller's (GPUPOOL_FEATURE_DMEM, Linux 6.14+,
 *    and dmem in /sys/fs/cgroup/cgroup.controllers), the same through
 *    dmem.max.  cgroup2 is mounted at /sys/fs/cgroup when nothing is (the
 *    VMs boot without it, and it is unmounted again); the cgroups are
 *    removed at the end, whatever happened.
 *  - Everywhere (the user backend on the host too): the library's reading
 *    of cgroupfs for the dmem case (userlib/backend/cgroupfs.c) against a tree of
 *    its own in a temporary directory, with a mountinfo file of its own:
 *    the mount found, the walk up, which cgroup it names, the files it
 *    refuses to follow or parse.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <linux/gpupool.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "helpers.h"
#include "backend/cgroupfs.h"	/* the library's own (internal) walk */

#define MIB		(1024ull * 1024)
#define CGROOT		"/sys/fs/cgroup"

/* Small files ---------------------------------------------------------------- */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

static int make_file(const char *dir, const char *name, const char *text)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -EIO;
	}
	return close(fd);
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* The module ------------------------------------------------------------------ */

/* GPUPOOL_IOC_VERSION's features; -1 for a module without them (1.0). */
static long long module_features(void)
{
	struct gpupool_version v;
	int fd = open("/dev/gpupool", O_RDWR | O_CLOEXEC);
	long long f = -1;

	if (fd < 0)
		return -1;
	memset(&v, 0, sizeof(v));
	if (!ioctl(fd, GPUPOOL_IOC_VERSION, &v) &&
	    (v.abi_major > 1 || v.abi_minor >= 1) &&
	    (v.features & GPUPOOL_FEATURE_CGROUP))
		f = (long long)v.features;
	close(fd);
	return f;
}

/* The module's own limit on the cgroup at dir. */
static int set_module_limit(const char *dir, uint64_t limit)
{
	struct gpupool_cgroup c;
	int dev, fd, r = 0;

	dev = open("/dev/gpupool", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		close(dev);
		return r;
	}
	memset(&c, 0, sizeof(c));
	c.flags = GPUPOOL_CGROUP_SET_LIMIT;
	c.cgroup_fd = fd;
	c.limit = limit;
	if (ioctl(dev, GPUPOOL_IOC_CGROUP, &c))
		r = -errno;
	close(fd);
	close(dev);
	return r;
}

/* The cgroups of a kernel-backend test --------------------------------------- */

FIXTURE(cg)
{
	struct gp_ctx *ctx;
	bool mounted;			/* cgroup2 mounted at CGROOT by us */
	bool moved;			/* this process moved into a cgroup */
	char parent[128];		/* CGROOT/gpupool-<test>-<pid> */
	char child[160];		/* parent/task */
	char name[64];			/* the parent as the module names it */
	long long features;
};

FIXTURE_SETUP(cg)
{
	memset(self, 0, sizeof(*self));
	self->features = -1;
}

FIXTURE_TEARDOWN(cg)
{
	char pid[32];

	gp_close(self->ctx);	/* its chunks go: nothing charged to them */
	if (self->moved) {
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		EXPECT_EQ(0, write_str(CGROOT "/cgroup.procs", pid));
	}
	if (self->child[0] && access(self->child, F_OK) == 0)
		EXPECT_EQ(0, rmdir(self->child))
			TH_LOG("rmdir %s: %s", self->child, strerror(errno));
	if (self->parent[0] && access(self->parent, F_OK) == 0)
		EXPECT_EQ(0, rmdir(self->parent))
			TH_LOG("rmdir %s: %s", self->parent, strerror(errno));
	if (self->mounted)
		umount2(CGROOT, MNT_DETACH);
}

/*
 * Whether this test applies here: the kernel backend (a context opened
 * on it, kept in self->ctx), root, a module with cgroup support.  Else
 * a reason to skip.
 */
static const char *kernel_cgroup_test(struct __test_metadata *_metadata,
				      FIXTURE_DATA(cg) *self)
{
	struct gp_options o;
	int r;

	if (!backend_forced_kernel())
		return "a test of gpupool.ko's cgroup limits (GPUPOOL_BACKEND=kernel, in the VM)";
	if (geteuid())
		return "needs root (cgroups, GPUPOOL_IOC_CGROUP's limits)";
	gp_options_init(&o);
	o.flags = GP_OPEN_NO_CUDA;
	r = gp_open(&o, &self->ctx);
	if (r == -ENODEV && access("/dev/gpupool", F_OK))
		return "GPUPOOL_BACKEND=kernel but gpupool.ko is not loaded";
	if (r) {
		TH_LOG("gp_open: %s", gp_last_error(NULL));
		_metadata->passed = 0;
		return "gp_open failed";
	}
	self->features = module_features();
	if (self->features < 0)
		return "gpupool.ko older than ABI 1.1 (no cgroup support)";
	return NULL;
}

/* cgroup2 at CGROOT (mounted when nothing is); false when it cannot be. */
static bool cgroup2_here(FIXTURE_DATA(cg) *self)
{
	struct statfs s;

	if (statfs(CGROOT, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC)
		return true;
	if (mount("none", CGROOT, "cgroup2", 0, NULL))
		return false;
	self->mounted = true;
	return true;
}

/* The parent and child cgroups (child: NULL for none) of this test. */
static int make_cgroups(FIXTURE_DATA(cg) *self, const char *tag, bool child)
{
	snprintf(self->name, sizeof(self->name), "/gpupool-%s-%d", tag,
		 (int)getpid());
	snprintf(self->parent, sizeof(self->parent), CGROOT "%s", self->name);
	if (mkdir(self->parent, 0755)) {
		self->parent[0] = 0;
		return -errno;
	}
	if (!child)
		return 0;
	snprintf(self->child, sizeof(self->child), "%s/task", self->parent);
	if (mkdir(self->child, 0755)) {
		self->child[0] = 0;
		return -errno;
	}
	return 0;
}

static int move_into(FIXTURE_DATA(cg) *self, const char *dir)
{
	char procs[200], pid[32];
	int r;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	r = write_str(procs, pid);
	if (!r)
		self->moved = true;
	return r;
}

/* The message of the last failure has every one of the strings. */
static void expect_says(struct __test_metadata *_metadata, struct gp_ctx *ctx,
			const char *const *want)
{
	const char *msg = gp_last_error(ctx);

	for (; *want; want++) {
		EXPECT_NE(NULL, strstr(msg, *want))
			TH_LOG("no \"%s\" in: %s", *want, msg);
	}
}

#define EXPECT_SAYS(ctx, ...) \
	expect_says(_metadata, (ctx), (const char *const[]){ __VA_ARGS__, NULL })

/*
 * A limit of 32 MiB on the parent, 64 MiB on the child the test runs in:
 * 24 MiB fit; 16 MiB more do not, and the refusal names the parent with
 * its figures, for a pool buffer and for a GP_HOST_SHARED one (its own
 * chunk); with the child's limit lowered to 8 MiB, under what it holds,
 * even a small buffer's 2 MiB segment is refused, now naming the child.
 */
TEST_F(cg, module_limit_names_the_cgroup)
{
	char child[200], *msg;
	const char *why;
	void *a = NULL, *b = NULL;
	int r;

	why = kernel_cgroup_test(_metadata, self);
	if (why)
		SKIP(return, "%s", why);
	if (self->features & GPUPOOL_FEATURE_DMEM)
		SKIP(return, "the limits are dmem's here (dmem_max_names_the_cgroup)");
	ASSERT_TRUE(cgroup2_here(self)) TH_LOG("mount cgroup2 at " CGROOT ": %s",
					       strerror(errno));
	ASSERT_EQ(0, make_cgroups(self, "cglim", true));
	ASSERT_EQ(0, set_module_limit(self->parent, 32 * MIB));
	ASSERT_EQ(0, set_module_limit(self->child, 64 * MIB));
	ASSERT_EQ(0, move_into(self, self->child));

	ASSERT_EQ(0, gp_host_alloc(self->ctx, 24 * MIB, 0, &a))
		TH_LOG("%s", gp_last_error(self->ctx));
	memset(a, 1, 24 * MIB);
	r = gp_host_alloc(self->ctx, 16 * MIB, 0, &b);
	ASSERT_EQ(-ENOSPC, r) TH_LOG("%d: %s", r, gp_last_error(self->ctx));
	TH_LOG("%s", gp_last_error(self->ctx));
	EXPECT_SAYS(self->ctx, "gpupool.ko refused 16.0 MiB",
		    "limit of 32.0 MiB (24.0 MiB in use)",
		    "gpupoolctl limit set");
	msg = strstr(gp_last_error(self->ctx), "cgroup /");
	EXPECT_NE(NULL, msg);
	if (msg) {	/* the parent's name, not the child's */
		EXPECT_EQ(0, strncmp(msg + 7, self->name, strlen(self->name)));
		EXPECT_EQ(' ', msg[7 + strlen(self->name)]) TH_LOG("%s", msg);
	}
	EXPECT_EQ(-ENOSPC, gp_host_alloc(self->ctx, 16 * MIB, GP_HOST_SHARED, &b));
	EXPECT_SAYS(self->ctx, "gpupool.ko refused 16.0 MiB", self->name,
		    "limit of 32.0 MiB (24.0 MiB in use)");

	/* The child's own limit, below what it holds, refuses first. */
	ASSERT_EQ(0, set_module_limit(self->child, 8 * MIB));
	r = gp_host_alloc(self->ctx, 4096, 0, &b);
	EXPECT_EQ(-ENOSPC, r) TH_LOG("%d: %s", r, gp_last_error(self->ctx));
	snprintf(child, sizeof(child), "cgroup %s/task would exceed its limit "
		 "of 8.0 MiB (24.0 MiB in use)", self->name);
	EXPECT_SAYS(self->ctx, "gpupool.ko refused 2.0 MiB", child);
	TH_LOG("%s", gp_last_error(self->ctx));
	EXPECT_EQ(0, gp_host_free(self->ctx, a));
}

/*
 * The limit on the test's own cgroup: a refusal that the idle cached
 * segments cause is retried after releasing them (as for
 * per_process_limit), and succeeds; one that they do not cure is
 * refused, naming the buffer's size, the limit and what is in use.
 */
TEST_F(cg, refusal_retried_after_idle_release)
{
	struct gp_host_stats st;
	const char *why;
	void *a = NULL, *b = NULL;
	int r;

	why = kernel_cgroup_test(_metadata, self);
	if (why)
		SKIP(return, "%s", why);
	if (self->features & GPUPOOL_FEATURE_DMEM)
		SKIP(return, "the limits are dmem's here (dmem_max_names_the_cgroup)");
	ASSERT_TRUE(cgroup2_here(self));
	ASSERT_EQ(0, make_cgroups(self, "cgretry", false));
	ASSERT_EQ(0, set_module_limit(self->parent, 32 * MIB));
	ASSERT_EQ(0, move_into(self, self->parent));

	ASSERT_EQ(0, gp_host_alloc(self->ctx, 24 * MIB, 0, &a))
		TH_LOG("%s", gp_last_error(self->ctx));
	ASSERT_EQ(0, gp_host_free(self->ctx, a));	/* cached, still charged */
	ASSERT_EQ(0, gp_host_stats(self->ctx, &st));
	ASSERT_EQ(24 * MIB, st.idle);
	/* 28 MiB do not fit in the idle 24 MiB segment: a new segment, which
	 * the limit refuses until the idle one has gone back.
	 */
	r = gp_host_alloc(self->ctx, 28 * MIB, 0, &b);
	ASSERT_EQ(0, r) TH_LOG("%d: %s", r, gp_last_error(self->ctx));
	ASSERT_EQ(0, gp_host_stats(self->ctx, &st));
	EXPECT_EQ(24 * MIB, st.trimmed);
	EXPECT_EQ(28 * MIB, st.reserved);
	EXPECT_EQ(0, st.idle);

	/* 8 MiB more never fit beside them: refused, naming what is held. */
	r = gp_host_alloc(self->ctx, 8 * MIB, GP_HOST_SHARED, &a);
	EXPECT_EQ(-ENOSPC, r) TH_LOG("%d: %s", r, gp_last_error(self->ctx));
	EXPECT_SAYS(self->ctx, "gpupool.ko refused 8.0 MiB", self->name,
		    "limit of 32.0 MiB (28.0 MiB in use)");
	TH_LOG("%s", gp_last_error(self->ctx));
	EXPECT_EQ(0, gp_host_free(self->ctx, b));
}

/*
 * The same through the dmem controller (GPUPOOL_FEATURE_DMEM, the module
 * loaded with cgroup_limits=auto on a kernel with CONFIG_CGROUP_DMEM):
 * the limit is dmem.max of region gpupool, which the kernel does not name
 * in its refusal; the library reads dmem.max and dmem.current up from the
 * test's cgroup and names the parent (the child's own dmem.max is higher).
 */
TEST_F(cg, dmem_max_names_the_cgroup)
{
	char ctl[512], file[200];
	const char *why;
	void *a = NULL, *b = NULL;
	int r;

	why = kernel_cgroup_test(_metadata, self);
	if (why)
		SKIP(return, "%s", why);
	if (!(self->features & GPUPOOL_FEATURE_DMEM))
		SKIP(return, "gpupool.ko's limits are its own here (no dmem controller: Linux 6.14+ with CONFIG_CGROUP_DMEM)");
	ASSERT_TRUE(cgroup2_here(self));
	if (read_str(CGROOT "/cgroup.controllers", ctl, sizeof(ctl)) ||
	    !strstr(ctl, "dmem"))
		SKIP(return, "no dmem in " CGROOT "/cgroup.controllers");
	/* may be on already; the next write says if it is not */
	write_str(CGROOT "/cgroup.subtree_control", "+dmem");
	ASSERT_EQ(0, make_cgroups(self, "cgdmem", true));
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", self->parent);
	ASSERT_EQ(0, write_str(file, "+dmem"));
	snprintf(file, sizeof(file), "%s/dmem.max", self->parent);
	ASSERT_EQ(0, write_str(file, "gpupool 33554432\n"))
		TH_LOG("%s: %s", file, strerror(errno));
	snprintf(file, sizeof(file), "%s/dmem.max", self->child);
	ASSERT_EQ(0, write_str(file, "gpupool 67108864\n"));
	ASSERT_EQ(0, move_into(self, self->child));

	ASSERT_EQ(0, gp_host_alloc(self->ctx, 24 * MIB, 0, &a))
		TH_LOG("%s", gp_last_error(self->ctx));
	r = gp_host_alloc(self->ctx, 16 * MIB, 0, &b);
	ASSERT_EQ(-ENOSPC, r) TH_LOG("%d: %s", r, gp_last_error(self->ctx));
	TH_LOG("%s", gp_last_error(self->ctx));
	snprintf(ctl, sizeof(ctl), "cgroup %s would exceed its limit of 32.0 MiB "
		 "(24.0 MiB in use; dmem.max", self->name);
	snprintf(file, sizeof(file), "%s/dmem.max", self->parent);
	EXPECT_SAYS(self->ctx, "gpupool.ko refused 16.0 MiB", ctl, file);
	EXPECT_EQ(0, gp_host_free(self->ctx, a));
}

/* The library's cgroupfs reading, on a tree of the test's own ------------------ */

static int mkdirs(const char *base, const char *rel)
{
	char path[4200], *p;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	for (p = path + strlen(base) + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = 0;
			if (mkdir(path, 0755) && errno != EEXIST)
				return -errno;
			*p = c;
			if (!c)
				return 0;
		}
	}
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *dir)
{
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		fprintf(stderr, "# could not remove %s: %s\n", dir, strerror(errno));
}

FIXTURE(tree)
{
	char dir[64];		/* the temporary directory */
	char cg[128];		/* the cgroup2 mount point, in it */
	char mountinfo[128];
};

FIXTURE_SETUP(tree)
{
	char line[600];

	snprintf(self->dir, sizeof(self->dir), "/tmp/gpupool-cgfs-XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->cg, sizeof(self->cg), "%s/c g", self->dir);
	snprintf(self->mountinfo, sizeof(self->mountinfo), "%s/mountinfo",
		 self->dir);
	ASSERT_EQ(0, mkdir(self->cg, 0755));
	ASSERT_EQ(0, mkdirs(self->cg, "a/b/c"));
	/* The mount point has a space: mountinfo says \040. */
	snprintf(line, sizeof(line),
		 "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
		 "25 22 0:23 / /sys rw - sysfs sysfs rw\n"
		 "30 25 0:26 / %s/c\\040g rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		 self->dir);
	ASSERT_EQ(0, make_file(self->dir, "mountinfo", line));
}

FIXTURE_TEARDOWN(tree)
{
	if (self->dir[0])
		rm_tree(self->dir);
}

static int at(FIXTURE_DATA(tree) *self, const char *rel, const char *name,
	      const char *text)
{
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/%s", self->cg, rel);
	return make_file(dir, name, text);
}

TEST(dmem_value_parses_the_region_line)
{
	uint64_t v = 0;

	ASSERT_EQ(0, gp_dmem_value("gpupool 268435456\n", &v));
	EXPECT_EQ(268435456ull, v);
	ASSERT_EQ(0, gp_dmem_value("drm/0000:03:00.0/vram0 max\ngpupool max\n", &v));
	EXPECT_EQ(UINT64_MAX, v);
	ASSERT_EQ(0, gp_dmem_value("other 5\ngpupool\t7", &v));
	EXPECT_EQ(7, v);
	ASSERT_EQ(0, gp_dmem_value("gpupool 18446744073709551615\n", &v));
	EXPECT_EQ(UINT64_MAX, v);
	EXPECT_EQ(-EINVAL, gp_dmem_value("gpupool 18446744073709551616\n", &v));
	EXPECT_EQ(-EINVAL, gp_dmem_value("gpupool 12x\n", &v));
	EXPECT_EQ(-EINVAL, gp_dmem_value("gpupool -1\n", &v));
	EXPECT_EQ(-EINVAL, gp_dmem_value("gpupool \n", &v));
	EXPECT_EQ(-EINVAL, gp_dmem_value("gpupool maximum\n", &v));
	EXPECT_EQ(-ENOENT, gp_dmem_value("gpupoolx 5\n gpupool 5\n", &v));
	EXPECT_EQ(-ENOENT, gp_dmem_value("gpupool", &v));
	EXPECT_EQ(-ENOENT, gp_dmem_value("", &v));
}

TEST_F(tree, mount_found_in_mountinfo)
{
	struct gp_cg_mount *m = malloc(sizeof(*m));
	char other[600];

	ASSERT_NE(NULL, m);
	ASSERT_EQ(0, gp_cg_find_mount(self->mountinfo, "/a/b", m));
	EXPECT_STREQ(self->cg, m->dir);
	EXPECT_STREQ("/", m->root);

	/* A mount showing /a holds /a/b and /a, not /ab or /x. */
	snprintf(other, sizeof(other),
		 "40 1 0:26 /a %s/sub rw - cgroup2 cgroup2 rw\n", self->dir);
	ASSERT_EQ(0, make_file(self->dir, "mi-sub", other));
	snprintf(other, sizeof(other), "%s/mi-sub", self->dir);
	EXPECT_EQ(0, gp_cg_find_mount(other, "/a/b", m));
	EXPECT_STREQ("/a", m->root);
	EXPECT_EQ(0, gp_cg_find_mount(other, "/a", m));
	EXPECT_EQ(-EXDEV, gp_cg_find_mount(other, "/ab", m));
	EXPECT_EQ(-EXDEV, gp_cg_find_mount(other, "/x", m));
	EXPECT_STREQ(GP_CG_DEFAULT_MOUNT, m->dir);

	/* No cgroup2 line (a v1 hierarchy, a bad line): the default. */
	ASSERT_EQ(0, make_file(self->dir, "mi-none",
			       "31 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
			       "32 25 0:28 / /x rw - cgroup2\n"
			       "garbage\n\n - cgroup2 cgroup2\n"));
	snprintf(other, sizeof(other), "%s/mi-none", self->dir);
	EXPECT_EQ(-ENOENT, gp_cg_find_mount(other, "/a", m));
	EXPECT_STREQ(GP_CG_DEFAULT_MOUNT, m->dir);
	EXPECT_STREQ("/", m->root);
	snprintf(other, sizeof(other), "%s/absent", self->dir);
	EXPECT_EQ(-ENOENT, gp_cg_find_mount(other, "/a", m));
	free(m);
}

TEST_F(tree, dmem_walk_names_the_first_over)
{
	struct gp_dmem_hit *h = malloc(sizeof(*h));
	char want[4200];

	ASSERT_NE(NULL, h);
	/* /a: 100 bytes, 90 used; /a/b: no limit; /a/b/c: no files. */
	ASSERT_EQ(0, at(self, "a", "dmem.max", "gpupool 100\n"));
	ASSERT_EQ(0, at(self, "a", "dmem.current", "gpupool 90\n"));
	ASSERT_EQ(0, at(self, "a/b", "dmem.max", "other 5\ngpupool max\n"));
	ASSERT_EQ(0, at(self, "a/b", "dmem.current", "other 5\ngpupool 90\n"));

	EXPECT_EQ(-ENOENT, gp_dmem_find(self->mountinfo, "/a/b/c", 10, h));
	EXPECT_EQ(4, h->levels);		/* c, b, a and the root */
	EXPECT_EQ(0, h->read_error);

	ASSERT_EQ(0, gp_dmem_find(self->mountinfo, "/a/b/c", 11, h));
	EXPECT_STREQ("/a", h->path);
	EXPECT_EQ(100, h->max);
	EXPECT_EQ(90, h->current);
	snprintf(want, sizeof(want), "%s/a/dmem.max", self->cg);
	EXPECT_STREQ(want, h->file);

	/* The first from the bottom, when two would be over. */
	ASSERT_EQ(0, at(self, "a/b", "dmem.max", "gpupool 50\n"));
	ASSERT_EQ(0, at(self, "a/b", "dmem.current", "gpupool 45\n"));
	ASSERT_EQ(0, gp_dmem_find(self->mountinfo, "/a/b/c/", 20, h));
	EXPECT_STREQ("/a/b", h->path);
	EXPECT_EQ(50, h->max);
	ASSERT_EQ(0, gp_dmem_find(self->mountinfo, "/a/b/c", 6, h));
	EXPECT_STREQ("/a/b", h->path);
	/* A request larger than any limit, even with nothing in use. */
	ASSERT_EQ(0, at(self, "a/b", "dmem.current", "gpupool 0\n"));
	ASSERT_EQ(0, gp_dmem_find(self->mountinfo, "/a/b/c", UINT64_MAX, h));
	EXPECT_STREQ("/a/b", h->path);

	/* A limit on the root of the namespace (a container's own cgroup). */
	ASSERT_EQ(0, at(self, ".", "dmem.max", "gpupool 1000\n"));
	ASSERT_EQ(0, at(self, ".", "dmem.current", "gpupool 995\n"));
	ASSERT_EQ(0, gp_dmem_find(self->mountinfo, "/a/b/c", 6, h));
	EXPECT_STREQ("/", h->path);

	/* Unreadable or nonsense files are passed over. */
	ASSERT_EQ(0, at(self, ".", "dmem.current", "gpupool lots\n"));
	ASSERT_EQ(0, at(self, "a/b", "dmem.max", "gpupool 5O\n"));
	EXPECT_EQ(-ENOENT, gp_dmem_find(self->mountinfo, "/a/b/c", 6, h));
	free(h);
}

TEST_F(tree, dmem_walk_refuses_odd_paths_and_files)
{
	struct gp_dmem_hit *h = malloc(sizeof(*h));
	char path[4200], mi[600], *p;

	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, at(self, "a", "dmem.max", "gpupool 100\n"));
	ASSERT_EQ(0, at(self, "a", "dmem.current", "gpupool 100\n"));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, "a/b", 1, h));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, "", 1, h));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, "/a/../a", 1, h));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, "/a/./b", 1, h));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, "/..", 1, h));
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, NULL, 1, h));
	/* ".." inside a name is a name. */
	ASSERT_EQ(0, mkdirs(self->cg, "a/..b"));
	EXPECT_EQ(0, gp_dmem_find(self->mountinfo, "/a/..b", 1, h));
	EXPECT_STREQ("/a", h->path);

	/* A FIFO where dmem.max should be is not read (nothing blocks). */
	ASSERT_EQ(0, mkdirs(self->cg, "f"));
	snprintf(path, sizeof(path), "%s/f/dmem.max", self->cg);
	ASSERT_EQ(0, mkfifo(path, 0644));
	EXPECT_EQ(-ENOENT, gp_dmem_find(self->mountinfo, "/f", 1, h));
	EXPECT_EQ(EINVAL, h->read_error);

	/* A path longer than PATH_MAX; one as deep as the walk goes. */
	memset(path, 'x', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = 0;
	EXPECT_EQ(-EINVAL, gp_dmem_find(self->mountinfo, path, 1, h));
	for (p = path; p < path + 2 * (GP_CG_MAX_DEPTH + 10); p += 2)
		memcpy(p, "/d", 2);
	*p = 0;
	EXPECT_EQ(-ENOENT, gp_dmem_find(self->mountinfo, path, 1, h));
	EXPECT_EQ(GP_CG_MAX_DEPTH, h->levels);

	/* A mount that shows /a at its root: /a/b is read there. */
	snprintf(mi, sizeof(mi), "40 1 0:26 /a %s/c\\040g/a rw - cgroup2 cgroup2 rw\n",
		 self->dir);
	ASSERT_EQ(0, make_file(self->dir, "mi-a", mi));
	snprintf(mi, sizeof(mi), "%s/mi-a", self->dir);
	ASSERT_EQ(0, gp_dmem_find(mi, "/a/b", 1, h));
	EXPECT_STREQ("/a", h->path);
	snprintf(path, sizeof(path), "%s/a/dmem.max", self->cg);
	EXPECT_STREQ(path, h->file);
	EXPECT_EQ(2, h->levels);		/* /a/b and /a: not above */
	EXPECT_EQ(-EXDEV, gp_dmem_find(mi, "/b", 1, h));
	free(h);
}

TEST_HARNESS_MAIN
