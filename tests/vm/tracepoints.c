// SPDX-License-Identifier: GPL-2.0
/*
 * tracepoints: the module's events in tracefs (events/gpupool/), as perf and
 * bpftrace see them.  With every gpupool event enabled: an allocation, its
 * free and zeroing; a growth; a refused allocation; a quarantined chunk
 * (vmsplice holds its pages) zeroed once released.  Each event carries the
 * sizes, the node and the allocating process's pid; alloc also the time it
 * took (wait_ns) and its result.  alloc and the chunk events carry the id
 * of the cgroup (v2) the chunk is charged to: for an ALLOC in a cgroup of
 * the test's, its directory's inode number (cgroup_field).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

static const char *tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[128];
	unsigned int i;

	/* Debian kernels: tracefs at /sys/kernel/tracing, mounted on use. */
	if (access("/sys/kernel/tracing/events", F_OK))
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
	}
	return NULL;
}

static int tr_write(const char *dir, const char *file, const char *val)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* The first line of the trace holding every one of the words, or NULL. */
static const char *find(const char *trace, const char *w1, const char *w2,
			const char *w3)
{
	static char line[512];
	const char *p = trace, *e;

	for (; *p; p = *e ? e + 1 : e) {
		size_t len;

		e = strchrnul(p, '\n');
		len = (size_t)(e - p) < sizeof(line) - 1 ?
		      (size_t)(e - p) : sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = 0;
		if (strstr(line, w1) && (!w2 || strstr(line, w2)) &&
		    (!w3 || strstr(line, w3)))
			return line;
	}
	return NULL;
}

TEST(events_in_tracefs)
{
	static char trace[1 << 20];
	char pid[32], want[128], path[256], fmt[4096];
	const char *dir, *l;
	unsigned char buf[64 * KiB];
	struct iovec iov;
	int fd, pfd[2];
	uint64_t h;
	char *p;

	GP_REQUIRE();
	dir = tracefs();
	if (!dir)
		GP_SKIP("no tracefs in this kernel");
	ASSERT_EQ(0, gp_load_1("pool_size=2M max_size=16M"));
	snprintf(path, sizeof(path), "%s/events/gpupool/gpupool_alloc/format", dir);
	ASSERT_LT(0, gp_read_file(path, fmt, sizeof(fmt))) TH_LOG("%s", path);
	EXPECT_NE(NULL, strstr(fmt, "field:u64 wait_ns;")) TH_LOG("%s", fmt);
	EXPECT_NE(NULL, strstr(fmt, "field:pid_t pid;"));
	EXPECT_NE(NULL, strstr(fmt, "field:u64 cgroup;"));

	ASSERT_EQ(0, tr_write(dir, "tracing_on", "0"));
	ASSERT_EQ(0, tr_write(dir, "trace", ""));
	ASSERT_EQ(0, tr_write(dir, "events/gpupool/enable", "1"));
	ASSERT_EQ(0, tr_write(dir, "tracing_on", "1"));

	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	/* Served from the pool as loaded, freed, zeroed. */
	h = gp_alloc(fd, MiB);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, gp_free(fd, h));
	ASSERT_EQ(0, gp_wait_quiet(5000, 0));
	/* More than the pool holds: it grows. */
	h = gp_alloc(fd, 4 * MiB);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, gp_free(fd, h));
	/* More than max_size: refused. */
	EXPECT_EQ(0, gp_alloc(fd, 64 * MiB));
	EXPECT_EQ(ENOMEM, errno);
	/* Pages held by a pipe: quarantined, zeroed once the pipe lets go. */
	h = gp_alloc(fd, sizeof(buf));
	ASSERT_NE(0, h);
	p = gp_map(fd, h, sizeof(buf));
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, sizeof(buf));
	ASSERT_EQ(0, pipe(pfd));
	iov.iov_base = p;
	iov.iov_len = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(buf), vmsplice(pfd[1], &iov, 1, 0));
	ASSERT_EQ(0, munmap(p, sizeof(buf)));
	ASSERT_EQ(0, gp_free(fd, h));
	ASSERT_EQ(0, gp_wait_quiet(5000, 0));
	EXPECT_EQ(sizeof(buf), gp_pool().quarantined);
	ASSERT_EQ((ssize_t)sizeof(buf), read(pfd[0], buf, sizeof(buf)));
	close(pfd[0]);
	close(pfd[1]);
	EXPECT_EQ(0, gp_wait_quiet(10000, 1));
	close(fd);

	ASSERT_EQ(0, tr_write(dir, "tracing_on", "0"));
	snprintf(path, sizeof(path), "%s/trace", dir);
	ASSERT_LT(0, gp_read_file(path, trace, sizeof(trace)));
	ASSERT_EQ(0, tr_write(dir, "events/gpupool/enable", "0"));
	ASSERT_EQ(0, tr_write(dir, "trace", ""));

	snprintf(pid, sizeof(pid), " pid=%d ", getpid());
	l = find(trace, "gpupool_alloc: size=1048576 chunk_size=1048576 ", pid, " ret=0");
	EXPECT_NE(NULL, l) TH_LOG("%s", trace);
	EXPECT_NE(NULL, l ? strstr(l, " wait_ns=") : NULL);
	EXPECT_NE(NULL, find(trace, "gpupool_free: size=1048576 ", " pid=", NULL));
	snprintf(want, sizeof(want), " pid=%d", getpid());
	EXPECT_NE(NULL, find(trace, "gpupool_zeroed: size=1048576 ", want, NULL));
	EXPECT_NE(NULL, find(trace, "gpupool_grow: size=", want, NULL)) TH_LOG("%s", trace);
	EXPECT_NE(NULL, find(trace, "gpupool_alloc: size=4194304 chunk_size=4194304 ", " ret=0", NULL));
	EXPECT_NE(NULL, find(trace, "gpupool_alloc: size=67108864 chunk_size=0 ", " ret=-12", NULL));
	EXPECT_NE(NULL, find(trace, "gpupool_quarantine: size=65536 ", want, NULL));
	EXPECT_NE(NULL, find(trace, "gpupool_zeroed: size=65536 ", want, NULL));
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* The event's format file (events/gpupool/NAME/format) has the field. */
static int has_field(const char *dir, const char *event, const char *field)
{
	char path[256], fmt[4096];

	snprintf(path, sizeof(path), "%s/events/gpupool/%s/format", dir, event);
	if (gp_read_file(path, fmt, sizeof(fmt)) <= 0)
		return 0;
	return strstr(fmt, field) != NULL;
}

/* The cgroup= value of a trace line; ~0 when there is none. */
static uint64_t cgroup_of(const char *line)
{
	const char *p = line ? strstr(line, " cgroup=") : NULL;
	char *end;
	uint64_t v;

	if (!p)
		return ~0ull;
	v = strtoull(p + 8, &end, 10);
	return end != p + 8 && (*end == ' ' || !*end) ? v : ~0ull;
}

FIXTURE(cgtrace) {
	const char *dir;
	struct cg_env env;
};

FIXTURE_SETUP(cgtrace)
{
	int ret;

	GP_REQUIRE();
	self->dir = tracefs();
	if (!self->dir)
		GP_SKIP("no tracefs in this kernel");
	ret = cg_mount();
	if (ret)
		GP_SKIP("cannot mount cgroup2 at %s: %s", CG_MNT, strerror(-ret));
	ASSERT_EQ(0, gp_load_1("pool_size=4M"));
	ASSERT_EQ(0, cg_setup(&self->env, "trace", 0));
}

FIXTURE_TEARDOWN(cgtrace)
{
	tr_write(self->dir, "tracing_on", "0");
	tr_write(self->dir, "events/gpupool/enable", "0");
	tr_write(self->dir, "trace", "");
	cg_teardown(&self->env);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/*
 * An ALLOC inside a test cgroup: its alloc, free and zeroed events carry
 * that cgroup's id, which is the inode number of its directory; one in
 * the root cgroup carries the root's.
 */
TEST_F(cgtrace, cgroup_field)
{
	static const char *const events[] = {
		"gpupool_alloc", "gpupool_free", "gpupool_zeroed",
		"gpupool_quarantine",
	};
	static char trace[1 << 20];
	uint64_t id, root_id, h;
	char path[256];
	unsigned int i;
	int fd;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		EXPECT_TRUE(has_field(self->dir, events[i], "field:u64 cgroup;"))
			TH_LOG("event %u: no cgroup field", i);
	ASSERT_EQ(0, cg_make(&self->env, "t"));
	id = cg_id(&self->env, "t");
	ASSERT_NE(0, id);
	ASSERT_NE(cg_id(&self->env, NULL), id);
	root_id = cg_id(&self->env, NULL);

	ASSERT_EQ(0, tr_write(self->dir, "tracing_on", "0"));
	ASSERT_EQ(0, tr_write(self->dir, "trace", ""));
	ASSERT_EQ(0, tr_write(self->dir, "events/gpupool/enable", "1"));
	ASSERT_EQ(0, tr_write(self->dir, "tracing_on", "1"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cg_enter(&self->env, "t"));
	h = gp_alloc(fd, 256 * KiB);
	ASSERT_NE(0, h);
	/* Freed from the root cgroup: still the charge's cgroup. */
	ASSERT_EQ(0, cg_leave());
	ASSERT_EQ(0, gp_free(fd, h));
	h = gp_alloc(fd, 128 * KiB);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, gp_free(fd, h));
	ASSERT_EQ(0, gp_wait_quiet(5000, 0));
	close(fd);
	ASSERT_EQ(0, tr_write(self->dir, "tracing_on", "0"));
	snprintf(path, sizeof(path), "%s/trace", self->dir);
	ASSERT_LT(0, gp_read_file(path, trace, sizeof(trace)));

	EXPECT_EQ(id, cgroup_of(find(trace, "gpupool_alloc: size=262144 ",
				     " ret=0", NULL))) TH_LOG("%s", trace);
	EXPECT_EQ(id, cgroup_of(find(trace, "gpupool_free: size=262144 ",
				     NULL, NULL)));
	EXPECT_EQ(id, cgroup_of(find(trace, "gpupool_zeroed: size=262144 ",
				     NULL, NULL)));
	EXPECT_EQ(root_id, cgroup_of(find(trace, "gpupool_alloc: size=131072 ",
					  " ret=0", NULL)));
	EXPECT_EQ(root_id, cgroup_of(find(trace, "gpupool_free: size=131072 ",
					  NULL, NULL)));
}

TEST_HARNESS_MAIN
