// SPDX-License-Identifier: MIT
/*
 * read_file: gp_read() and the batched reader put exactly the file's bytes
 * into pool memory, for aligned and unaligned offsets, lengths and buffers,
 * short files and the end of the file; refuse bad input; take the O_DIRECT
 * paths without filling the page cache (mincore on the file afterwards),
 * io_uring fixed buffers where the kernel takes them, and the page cache
 * only where allowed (a file system without O_DIRECT, GP_READ_BUFFERED).
 *
 * Where: run as root with brd available (the VM), the files live on an ext4
 * made on a brd ramdisk (/run/gpupool-read-ext4); elsewhere in
 * $GPUPOOL_TEST_READ_DIR, $TMPDIR or /tmp.  The file system without
 * O_DIRECT is tmpfs (/dev/shm): refused before 6.6, taken since.
 */
#include "helpers.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <sys/utsname.h>

#define MNT	"/run/gpupool-read-ext4"

static int mounted(const char *dir)
{
	char line[512];
	FILE *f = fopen("/proc/mounts", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " " MNT " ") != NULL;
	fclose(f);
	(void)dir;
	return found;
}

/* The directory for test files: ext4 on brd when we can make one. */
static const char *test_dir(void)
{
	const char *d = getenv("GPUPOOL_TEST_READ_DIR");

	if (d && *d)
		return d;
	if (geteuid() == 0) {
		if (mounted(MNT))
			return MNT;
		if ((!access("/dev/ram0", F_OK) ||
		     !system("modprobe brd rd_nr=1 rd_size=32768 2>/dev/null")) &&
		    !access("/dev/ram0", F_OK) &&
		    !system("mkdir -p " MNT " && mkfs.ext4 -q -F /dev/ram0 "
			    ">/dev/null 2>&1 && { modprobe ext4 2>/dev/null; "
			    "mount -t ext4 /dev/ram0 " MNT "; }"))
			return MNT;
	}
	d = getenv("TMPDIR");
	return d && *d ? d : "/tmp";
}

/* A file of n bytes (seeded pattern), its pages dropped from the cache. */
static int make_file(char *path, size_t plen, const char *dir, size_t n,
		     unsigned int seed)
{
	unsigned char *b = malloc(n ? n : 1);
	int fd;

	if (!b)
		return -1;
	snprintf(path, plen, "%s/gp_read_XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		free(b);
		return -1;
	}
	fill(b, n, seed);
	if (n && write(fd, b, n) != (ssize_t)n) {
		close(fd);
		free(b);
		return -1;
	}
	free(b);
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	return fd;
}

/* Pages of fd's first n bytes in the page cache. */
static long resident(int fd, size_t n)
{
	size_t pages = (n + 4095) / 4096, i;
	unsigned char *v = calloc(pages, 1);
	long r = 0;
	void *m;

	m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || !v) {
		free(v);
		return -1;
	}
	if (mincore(m, n, v))
		r = -1;
	for (i = 0; r >= 0 && i < pages; i++)
		r += v[i] & 1;
	munmap(m, n);
	free(v);
	return r;
}

static int on_tmpfs(const char *path)
{
	struct statfs s;

	return !statfs(path, &s) && s.f_type == 0x01021994;	/* TMPFS_MAGIC */
}

static int direct_ok(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

FIXTURE(rd) {
	struct gp_ctx *ctx;
	struct rt rt;
	char path[256];
	int fd;
	size_t size;
	unsigned char *pool;	/* 4 MiB pool buffer */
	unsigned char *ref;
};

FIXTURE_SETUP(rd)
{
	self->fd = -1;
	self->ctx = NULL;
	rt_load(&self->rt);
	OPEN(NULL, &self->ctx);
	ASSERT_EQ(0, gp_host_alloc(self->ctx, 4 << 20, 0, (void **)&self->pool));
	self->size = (1 << 20) + 4096 * 3 + 123;
	self->fd = make_file(self->path, sizeof(self->path), test_dir(),
			     self->size, 7);
	ASSERT_LE(0, self->fd) TH_LOG("test file in %s: %s", test_dir(),
				      strerror(errno));
	self->ref = malloc(self->size);
	ASSERT_NE(NULL, self->ref);
	fill(self->ref, self->size, 7);
}

FIXTURE_TEARDOWN(rd)
{
	if (self->fd >= 0) {
		close(self->fd);
		unlink(self->path);
	}
	free(self->ref);
	if (self->ctx)
		gp_close(self->ctx);
}

/* gp_read one range and compare with the file; returns done. */
static size_t read_check(struct __test_metadata *_metadata,
			 FIXTURE_DATA(rd) *self, uint64_t off, size_t doff,
			 size_t len, unsigned int flags)
{
	size_t done = 12345, want;

	memset(self->pool, 0xee, 4 << 20);
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, off, self->pool + doff, len,
			     flags, &done)) {
		TH_LOG("off %llu doff %zu len %zu: %s", (unsigned long long)off,
		       doff, len, gp_last_error(self->ctx));
	}
	want = off >= self->size ? 0 : self->size - off < len ?
	       self->size - off : len;
	EXPECT_EQ(want, done) TH_LOG("off %llu len %zu", (unsigned long long)off, len);
	EXPECT_EQ(0, memcmp(self->pool + doff, self->ref + (off < self->size ? off : 0),
			    done)) TH_LOG("off %llu doff %zu len %zu",
					  (unsigned long long)off, doff, len);
	/* Nothing written around the range. */
	if (doff)
		EXPECT_EQ(0xee, self->pool[doff - 1]);
	if (doff + len < (4u << 20))
		EXPECT_EQ(0xee, self->pool[doff + len]);
	return done;
}

TEST_F(rd, offsets_lengths_buffers)
{
	static const struct { uint64_t off; size_t doff, len; } c[] = {
		{ 0, 0, 1 << 20 },		/* aligned everywhere */
		{ 4096, 8192, 65536 },
		{ 513, 513, 100000 },		/* head, body, tail */
		{ 513, 0, 100000 },		/* memory and file disagree */
		{ 4095, 4095, 2 },		/* across one boundary */
		{ 1, 7, 1 },
		{ 0, 0, 4 << 20 },		/* past the end: short */
		{ 100, 100, 2 << 20 },
		{ (1 << 20) + 4096 * 3, 0, 4096 },	/* the last partial block */
		{ (1 << 20) + 4096 * 3 + 123, 0, 10 },	/* at the end */
		{ 5 << 20, 0, 10 },		/* past it */
	};
	unsigned int i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		read_check(_metadata, self, c[i].off, c[i].doff, c[i].len, 0);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		read_check(_metadata, self, c[i].off, c[i].doff, c[i].len,
			   GP_READ_BUFFERED);
}

TEST_F(rd, short_file)
{
	char path[256];
	size_t done = 0;
	int fd;

	fd = make_file(path, sizeof(path), test_dir(), 100, 3);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gp_read(self->ctx, fd, 0, self->pool, 1 << 20, 0, &done));
	EXPECT_EQ(100, done);
	EXPECT_TRUE(check_fill(self->pool, 100, 3));
	ASSERT_EQ(0, gp_read(self->ctx, fd, 60, self->pool, 4096, 0, &done));
	EXPECT_EQ(40, done);
	close(fd);
	unlink(path);
	/* An empty file. */
	fd = make_file(path, sizeof(path), test_dir(), 0, 3);
	ASSERT_LE(0, fd);
	done = 1;
	ASSERT_EQ(0, gp_read(self->ctx, fd, 0, self->pool, 4096, 0, &done));
	EXPECT_EQ(0, done);
	close(fd);
	unlink(path);
}

TEST_F(rd, bad_input)
{
	char other[64] = "untouched";
	size_t done = 77;
	int wfd, dfd;
	void *small;

	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, self->pool, 0, 0, &done));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, other, 10, 0, &done));
	EXPECT_STREQ("untouched", other);
	/* Past the allocation's end, or across two allocations. */
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, self->pool + (4 << 20) - 10,
				   20, 0, &done));
	ASSERT_EQ(0, gp_host_alloc(self->ctx, 1000, 0, &small));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, small, 2000, 0, &done));
	EXPECT_EQ(0, gp_read(self->ctx, self->fd, 0, (char *)small + 500, 500, 0, &done));
	EXPECT_EQ(500, done);
	done = 77;
	EXPECT_EQ(0, gp_host_free(self->ctx, small));
	/* Freed: no longer a buffer. */
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, small, 10, 0, &done));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, self->pool, SIZE_MAX, 0, &done));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, UINT64_MAX - 5, self->pool, 10,
				   0, &done));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, self->pool, 10, 0x80, &done));
	EXPECT_EQ(-EINVAL, gp_read(self->ctx, self->fd, 0, self->pool, 10,
				   GP_READ_NO_CACHE | GP_READ_BUFFERED, &done));
	EXPECT_EQ(-EBADF, gp_read(self->ctx, -1, 0, self->pool, 10, 0, &done));
	EXPECT_EQ(-EBADF, gp_read(self->ctx, 1000000, 0, self->pool, 10, 0, &done));
	wfd = open(self->path, O_WRONLY);
	ASSERT_LE(0, wfd);
	EXPECT_EQ(-EBADF, gp_read(self->ctx, wfd, 0, self->pool, 10, 0, &done));
	close(wfd);
	dfd = open(test_dir(), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	EXPECT_EQ(-EISDIR, gp_read(self->ctx, dfd, 0, self->pool, 10, 0, &done));
	close(dfd);
	EXPECT_EQ(77, done);		/* untouched on failure */
	EXPECT_NE(0, strlen(gp_last_error(self->ctx)));
	EXPECT_EQ(-EINVAL, gp_read(NULL, self->fd, 0, self->pool, 10, 0, &done));
}

/* O_DIRECT leaves the page cache alone; GP_READ_BUFFERED fills it. */
TEST_F(rd, page_cache)
{
	struct gp_read_stats a, b;
	size_t done;

	if (!direct_ok(self->path))
		SKIP(return, "%s takes no O_DIRECT", test_dir());
	if (on_tmpfs(self->path))	/* its pages are the file */
		SKIP(return, "%s is tmpfs: no ext4 here", test_dir());
	TH_LOG("files in %s", test_dir());
	ASSERT_EQ(0, resident(self->fd, self->size)) TH_LOG("not dropped before");
	ASSERT_EQ(0, gp_read_stats(self->ctx, &a));
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 513, self->pool + 513,
			     self->size - 513, GP_READ_NO_CACHE, &done));
	EXPECT_EQ(self->size - 513, done);
	EXPECT_EQ(0, memcmp(self->pool + 513, self->ref + 513, done));
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, self->size, 0, &done));
	EXPECT_EQ(self->size, done);
	EXPECT_EQ(0, memcmp(self->pool, self->ref, done));
	ASSERT_EQ(0, gp_read_stats(self->ctx, &b));
	EXPECT_EQ(0, resident(self->fd, self->size));
	EXPECT_EQ(a.buffered_bytes, b.buffered_bytes);
	EXPECT_LT(0, b.bounce_bytes - a.bounce_bytes);	/* the head and tails */
	EXPECT_EQ(2 * self->size - 513, b.bytes - a.bytes);
	EXPECT_EQ(b.bytes - a.bytes, (b.fixed_bytes - a.fixed_bytes) +
		  (b.direct_bytes - a.direct_bytes) + (b.bounce_bytes - a.bounce_bytes));

	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, self->size,
			     GP_READ_BUFFERED, &done));
	EXPECT_EQ(self->size, done);
	ASSERT_EQ(0, gp_read_stats(self->ctx, &a));
	EXPECT_EQ(self->size, a.buffered_bytes - b.buffered_bytes);
	EXPECT_LT(0, resident(self->fd, self->size));
}

/* tmpfs: O_DIRECT refused before 6.6 (then the page cache, or -EINVAL under
 * GP_READ_NO_CACHE), taken since.
 */
TEST_F(rd, no_odirect_fs)
{
	struct gp_read_stats a, b;
	char path[256];
	size_t done;
	int fd, direct;

	if (access("/dev/shm", W_OK))
		SKIP(return, "no /dev/shm");
	fd = make_file(path, sizeof(path), "/dev/shm", 300000, 9);
	ASSERT_LE(0, fd);
	direct = direct_ok(path);
	TH_LOG("tmpfs %s O_DIRECT", direct ? "takes" : "refuses");
	ASSERT_EQ(0, gp_read_stats(self->ctx, &a));
	ASSERT_EQ(0, gp_read(self->ctx, fd, 4096, self->pool, 200000, 0, &done));
	EXPECT_EQ(200000, done);
	EXPECT_TRUE(check_fill(self->pool, 1, 9 + 4096 * 31));
	ASSERT_EQ(0, gp_read_stats(self->ctx, &b));
	if (direct) {
		EXPECT_EQ(a.buffered_bytes, b.buffered_bytes);
		EXPECT_EQ(0, gp_read(self->ctx, fd, 0, self->pool, 10,
				     GP_READ_NO_CACHE, &done));
	} else {
		EXPECT_EQ(200000, b.buffered_bytes - a.buffered_bytes);
		EXPECT_EQ(-EINVAL, gp_read(self->ctx, fd, 0, self->pool, 10,
					   GP_READ_NO_CACHE, &done));
	}
	close(fd);
	unlink(path);
}

static int kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;

	uname(&u);
	sscanf(u.release, "%d.%d", &a, &b);
	return a > maj || (a == maj && b >= min);
}

/* Fixed buffers: taken on the user backend (shmem) and by 6.12 on the
 * kernel backend; refused by 6.1, and reads go on with O_DIRECT.  Before
 * 5.19 there is no sparse buffer table to put them in (5.10: O_DIRECT).
 */
TEST_F(rd, fixed_buffers)
{
	struct gp_read_stats a, b;
	struct gp_info info;
	size_t done;

	if (!direct_ok(self->path))
		SKIP(return, "%s takes no O_DIRECT", test_dir());
	ASSERT_EQ(0, gp_read_stats(self->ctx, &a));
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, 1 << 20, 0, &done));
	ASSERT_EQ(1 << 20, done);
	EXPECT_EQ(0, memcmp(self->pool, self->ref, done));
	ASSERT_EQ(0, gp_read_stats(self->ctx, &b));
	ASSERT_EQ(0, gp_info(self->ctx, &info));
	TH_LOG("backend %s, io_fixed %u, fixed %llu B, direct %llu B",
	       info.backend_name, info.io_fixed,
	       (unsigned long long)(b.fixed_bytes - a.fixed_bytes),
	       (unsigned long long)(b.direct_bytes - a.direct_bytes));
	switch (info.io_fixed) {
	case GP_IO_FIXED_OK:
		EXPECT_EQ(1 << 20, b.fixed_bytes - a.fixed_bytes);
		EXPECT_LE(1, b.fixed_registered);
		break;
	case GP_IO_FIXED_REFUSED:
		EXPECT_EQ(GP_BACKEND_KERNEL, info.backend);
		EXPECT_FALSE(kernel_at_least(6, 12));
		EXPECT_EQ(1 << 20, b.direct_bytes - a.direct_bytes);
		EXPECT_LE(1, b.fixed_refusals);
		break;
	case GP_IO_FIXED_NO_TABLE:
		EXPECT_FALSE(kernel_at_least(5, 19));
		EXPECT_EQ(1 << 20, b.direct_bytes - a.direct_bytes);
		EXPECT_EQ(0, b.fixed_registered);
		break;
	case GP_IO_FIXED_NO_RING: {
		FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
		int dis = 0;

		if (f) {
			if (fscanf(f, "%d", &dis) != 1)
				dis = 0;
			fclose(f);
		}
		EXPECT_NE(0, dis) TH_LOG("no io_uring, yet not disabled");
		EXPECT_EQ(1 << 20, b.direct_bytes - a.direct_bytes);
		break;
	}
	default:
		EXPECT_TRUE(0) TH_LOG("io_fixed %u after a read", info.io_fixed);
	}
	/* Freeing the buffer and trimming unregisters its segment. */
	ASSERT_EQ(0, gp_host_free(self->ctx, self->pool));
	ASSERT_EQ(0, gp_host_trim(self->ctx, NULL));
	ASSERT_EQ(0, gp_read_stats(self->ctx, &b));
	EXPECT_EQ(0, b.fixed_registered);
	ASSERT_EQ(0, gp_host_alloc(self->ctx, 4 << 20, 0, (void **)&self->pool));
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, 1 << 20, 0, &done));
	EXPECT_EQ(0, memcmp(self->pool, self->ref, done));
}

TEST_F(rd, batch)
{
	struct gp_read_req q[40], *done[40];
	struct gp_reader *r;
	unsigned int i, n, got = 0, polls = 0;
	size_t rec = 10000;

	ASSERT_EQ(0, gp_reader_open(self->ctx, 40, &r));
	memset(self->pool, 0xee, 4 << 20);
	memset(q, 0, sizeof(q));
	for (i = 0; i < 40; i++) {
		q[i].fd = self->fd;
		q[i].offset = (uint64_t)i * 26000 + (i & 1 ? 4096 : 7);
		q[i].dst = self->pool + (size_t)i * 65536 + (i & 2 ? 0 : 7);
		q[i].len = i == 39 ? 100000 : rec;	/* the last one short */
		q[i].user_data = i;
	}
	q[5].len = 0;		/* bad: completes with -EINVAL */
	ASSERT_EQ(0, gp_reader_submit(r, q, 40));
	EXPECT_EQ(40, gp_reader_pending(r));
	EXPECT_EQ(-EBUSY, gp_reader_submit(r, q, 1));
	while (got < 40) {
		ASSERT_EQ(0, gp_reader_wait(r, polls++ % 2 ? 1 : 0, done, 40, &n));
		for (i = 0; i < n; i++) {
			struct gp_read_req *d = done[i];
			size_t want = d->offset + d->len > self->size ?
				      self->size - d->offset : d->len;

			if (d->user_data == 5) {
				EXPECT_EQ(-EINVAL, d->result);
				continue;
			}
			EXPECT_EQ((int64_t)want, d->result) TH_LOG("req %llu",
					(unsigned long long)d->user_data);
			EXPECT_EQ(0, memcmp(d->dst, self->ref + d->offset, want));
		}
		got += n;
	}
	EXPECT_EQ(0, gp_reader_pending(r));
	ASSERT_EQ(0, gp_reader_wait(r, 5, done, 40, &n));	/* nothing left */
	EXPECT_EQ(0, n);
	gp_reader_close(r);
}

/* One descriptor, many requests, some done at submission (no body): the
 * O_DIRECT descriptor stays open for the later ones (no page cache).
 */
TEST_F(rd, batch_no_cache)
{
	struct gp_read_req q[32], *done[32];
	struct gp_read_stats a, b;
	struct gp_reader *r;
	unsigned int i, n, got = 0;

	if (!direct_ok(self->path))
		SKIP(return, "%s takes no O_DIRECT", test_dir());
	ASSERT_EQ(0, gp_reader_open(self->ctx, 32, &r));
	ASSERT_EQ(0, gp_read_stats(self->ctx, &a));
	memset(q, 0, sizeof(q));
	for (i = 0; i < 32; i++) {
		q[i].fd = self->fd;
		q[i].flags = GP_READ_NO_CACHE;
		q[i].offset = (uint64_t)i * 30000 + 5;
		q[i].dst = self->pool + (size_t)i * 65536 + 5;
		q[i].len = i % 2 ? 20000 : 10;	/* the first done at once */
	}
	ASSERT_EQ(0, gp_reader_submit(r, q, 32));
	while (got < 32) {
		ASSERT_EQ(0, gp_reader_wait(r, 32 - got, done, 32, &n));
		for (i = 0; i < n; i++) {
			EXPECT_EQ((int64_t)done[i]->len, done[i]->result);
			EXPECT_EQ(0, memcmp(done[i]->dst, self->ref + done[i]->offset,
					    done[i]->len));
		}
		got += n;
	}
	ASSERT_EQ(0, gp_read_stats(self->ctx, &b));
	EXPECT_EQ(a.buffered_bytes, b.buffered_bytes);
	EXPECT_EQ(a.errors, b.errors);
	gp_reader_close(r);
}

/* Truncated under the read, or before: short counts of the file's bytes. */
TEST_F(rd, truncated)
{
	struct gp_read_req q[8], *done[8];
	struct gp_reader *r;
	unsigned int i, n, got = 0;
	size_t d;

	ASSERT_EQ(0, ftruncate(self->fd, 300000));
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, self->size, 0, &d));
	EXPECT_EQ(300000, d);
	EXPECT_EQ(0, memcmp(self->pool, self->ref, d));
	ASSERT_EQ(0, gp_reader_open(self->ctx, 8, &r));
	memset(q, 0, sizeof(q));
	for (i = 0; i < 8; i++) {
		q[i].fd = self->fd;
		q[i].offset = i * 37000;
		q[i].dst = self->pool + i * 400000;
		q[i].len = 200000;
	}
	ASSERT_EQ(0, gp_reader_submit(r, q, 8));
	ASSERT_EQ(0, ftruncate(self->fd, 100000));	/* under the reads */
	while (got < 8) {
		ASSERT_EQ(0, gp_reader_wait(r, 1, done, 8, &n));
		for (i = 0; i < n; i++) {
			ASSERT_LE(0, done[i]->result);
			ASSERT_GE(200000, done[i]->result);
			EXPECT_EQ(0, memcmp(done[i]->dst, self->ref + done[i]->offset,
					    done[i]->result));
		}
		got += n;
	}
	gp_reader_close(r);
	ASSERT_EQ(0, gp_read(self->ctx, self->fd, 150000, self->pool, 10, 0, &d));
	EXPECT_EQ(0, d);
}

struct reader_thread {
	FIXTURE_DATA(rd) *self;
	int id, bad;
};

static void *reader_thread(void *arg)
{
	struct reader_thread *t = arg;
	unsigned char *dst = t->self->pool + (size_t)t->id * (1 << 20);
	size_t done;
	int i;

	for (i = 0; i < 20; i++) {
		uint64_t off = (uint64_t)(i * 7 + t->id) * 4096 + (i % 3) * 100;
		size_t len = 200000 + (size_t)i * 1000;

		if (gp_read(t->self->ctx, t->self->fd, off, dst + (i % 3) * 100, len, 0,
			    &done) || done != len ||
		    memcmp(dst + (i % 3) * 100, t->self->ref + off, len))
			t->bad++;
	}
	return NULL;
}

/* Threads share the context: gp_read's readers are taken and given back. */
TEST_F(rd, threads)
{
	struct reader_thread t[4];
	struct gp_read_stats st;
	pthread_t th[4];
	int i;

	for (i = 0; i < 4; i++) {
		t[i] = (struct reader_thread){ .self = self, .id = i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reader_thread, &t[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].bad) TH_LOG("thread %d", i);
	}
	ASSERT_EQ(0, gp_read_stats(self->ctx, &st));
	EXPECT_EQ(80, st.requests);
	EXPECT_EQ(0, st.errors);
	EXPECT_GE(4, st.readers);	/* at most one per thread at a time */
	EXPECT_LE(1, st.readers);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Signals all along: EINTR is retried, the bytes are right. */
TEST_F(rd, eintr)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct sigaction sa;
	size_t done;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	for (i = 0; i < 30; i++) {
		memset(self->pool, 0, self->size);
		ASSERT_EQ(0, gp_read(self->ctx, self->fd, 0, self->pool, self->size,
				     i % 3 == 2 ? GP_READ_BUFFERED : 0, &done));
		ASSERT_EQ(self->size, done);
		ASSERT_EQ(0, memcmp(self->pool, self->ref, done));
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
}

TEST_HARNESS_MAIN
