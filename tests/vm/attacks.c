// SPDX-License-Identifier: GPL-2.0
/*
 * attacks: what one process must never be able to do to another's memory,
 * one test per attack.  A victim fills its chunk with a secret pattern; the
 * attacker tries; every test checks both the refusal and that the secret
 * never shows up in anything the attacker can read.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define SECRET	0xa5
#define NOBODY	65534

/* Does [p, p+len) contain 64 bytes of the secret in a row? */
static int sees_secret(const unsigned char *p, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		run = p[i] == SECRET ? run + 1 : 0;
		if (run == 64)
			return 1;
	}
	return 0;
}

/* A victim: allocates `size` in its own open file, maps it, fills it with
 * the secret, writes its handle and size to `out`, then sleeps until
 * killed.  Returns its pid.
 */
static pid_t start_victim(uint64_t size, uint64_t info[2])
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		int fd = gp_open_dev();
		uint64_t h = gp_alloc(fd, size), msg[2] = { h, size };
		char *m = h ? gp_map(fd, h, size) : NULL;

		if (!m)
			_exit(1);
		memset(m, SECRET, size);
		if (write(p[1], msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], info, 2 * sizeof(uint64_t)) != 2 * sizeof(uint64_t))
		pid = -1;
	close(p[0]);
	return pid;
}

static void stop(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static int drop_to_nobody(void)
{
	return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ? -1 : 0;
}

GP_POOL_FIXTURE(pool, "pool_size=16M", 10000)

/* Guessing: the victim's handle, and every page offset of the pool, on the
 * attacker's own file: FREE, EXPORT and mmap all fail.
 */
TEST_F(pool, guess_handles_and_offsets)
{
	struct gpupool_export e;
	struct gpupool_free f;
	uint64_t info[2], off;
	pid_t v = start_victim(MiB, info);
	void *m;

	ASSERT_LT(0, v);
	memset(&f, 0, sizeof(f));
	f.handle = info[0];
	EXPECT_NE(0, ioctl(self->fd, GPUPOOL_IOC_FREE, &f));
	memset(&e, 0, sizeof(e));
	e.handle = info[0];
	EXPECT_NE(0, ioctl(self->fd, GPUPOOL_IOC_EXPORT, &e));
	for (off = 0; off < 16 * MiB; off += GP_PG) {
		m = mmap(NULL, info[1], PROT_READ, MAP_SHARED, self->fd, (off_t)off);
		EXPECT_EQ(MAP_FAILED, m) TH_LOG("offset %#llx mapped",
						 (unsigned long long)off);
		if (m != MAP_FAILED) {
			EXPECT_FALSE(sees_secret(m, info[1]));
			munmap(m, info[1]);
		}
	}
	stop(v);
}

/* /proc/<pid>/mem of a process that is not our child, as another user:
 * refused, and nothing of the chunk comes back.
 */
static int read_procmem(void *arg)
{
	uint64_t *a = arg;	/* pid, address, size */
	unsigned char buf[4096];
	char path[64];
	int fd;

	if (drop_to_nobody())
		return 10;
	snprintf(path, sizeof(path), "/proc/%llu/mem", (unsigned long long)a[0]);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? 0 : 11;
	if (pread(fd, buf, sizeof(buf), (off_t)a[1]) > 0 &&
	    sees_secret(buf, sizeof(buf)))
		return 12;
	return 13;	/* opened: not refused */
}

TEST_F(pool, proc_pid_mem_of_another)
{
	uint64_t info[2], a[3];
	pid_t v = start_victim(MiB, info);
	char maps[256], line[4096];
	FILE *f;

	ASSERT_LT(0, v);
	/* Find where the victim mapped its chunk (its /proc/pid/maps). */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", v);
	f = fopen(maps, "r");
	ASSERT_NE(NULL, f);
	a[1] = 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "gpupool"))
			a[1] = strtoull(line, NULL, 16);
	fclose(f);
	ASSERT_NE(0, a[1]);
	a[0] = (uint64_t)v;
	a[2] = info[1];
	EXPECT_EQ(0, gp_run_child(read_procmem, a));
	stop(v);
}

/* A handle that was freed and whose memory went to someone else names
 * nothing: the old owner can neither map nor free it.
 */
TEST_F(pool, stale_handle_after_reuse)
{
	struct gpupool_free f;
	uint64_t h, info[2];
	pid_t v;

	h = gp_alloc(self->fd, 16 * MiB);	/* the whole pool */
	ASSERT_NE(0, h);
	ASSERT_EQ(0, gp_free(self->fd, h));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	v = start_victim(16 * MiB, info);	/* gets the same memory */
	ASSERT_LT(0, v);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 16 * MiB, PROT_READ, MAP_SHARED,
				   self->fd, (off_t)h));
	memset(&f, 0, sizeof(f));
	f.handle = h;
	EXPECT_NE(0, ioctl(self->fd, GPUPOOL_IOC_FREE, &f));
	stop(v);
}

/* A mapping kept after free keeps its pages: everything anyone else
 * allocates meanwhile is other memory (neither side sees the other's
 * bytes).
 */
TEST_F(pool, mapping_kept_across_free)
{
	uint64_t h, h2, got = 0;
	unsigned char *mine, *other;
	int fd2 = gp_open_dev();

	ASSERT_LE(0, fd2);
	h = gp_alloc(self->fd, 4 * MiB);
	mine = gp_map(self->fd, h, 4 * MiB);
	ASSERT_NE(NULL, mine);
	memset(mine, SECRET, 4 * MiB);
	ASSERT_EQ(0, gp_free(self->fd, h));
	/* Take all the rest, in pieces, and look at every byte. */
	while ((h2 = gp_alloc(fd2, MiB))) {
		other = gp_map(fd2, h2, MiB);
		ASSERT_NE(NULL, other);
		EXPECT_FALSE(sees_secret(other, MiB));
		memset(other, 0x5a, MiB);
		munmap(other, MiB);
		got += MiB;
	}
	EXPECT_EQ(12 * MiB, got);
	EXPECT_TRUE(sees_secret(mine, 4 * MiB));
	EXPECT_EQ(SECRET, mine[4 * MiB - 1]);
	munmap(mine, 4 * MiB);
	close(fd2);
}

/* An exported chunk fd kept after its owner exited: still that chunk, and
 * nobody else's allocations overlap it.
 */
TEST_F(pool, fd_kept_across_owner_exit)
{
	struct gpupool_export e;
	unsigned char *m, *other;
	int sv[2], cfd, fd2;
	uint64_t h;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	if (!pid) {	/* the owner: allocate, fill, export, hand over, die */
		int fd = gp_open_dev();
		uint64_t hh = gp_alloc(fd, 2 * MiB);
		char *mm = gp_map(fd, hh, 2 * MiB);
		int x;

		if (!mm)
			_exit(1);
		memset(mm, SECRET, 2 * MiB);
		memset(&e, 0, sizeof(e));
		e.handle = hh;
		if (ioctl(fd, GPUPOOL_IOC_EXPORT, &e))
			_exit(2);
		x = (int)e.fd;
		if (gp_send_fd(sv[1], x, NULL, 0, 0))
			_exit(3);
		_exit(0);	/* SIGKILL would do the same; see close_frees */
	}
	cfd = gp_recv_fd(sv[0], NULL, 0, 0);
	ASSERT_LE(0, cfd);
	waitpid(pid, NULL, 0);
	m = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_TRUE(sees_secret(m, 2 * MiB));
	fd2 = gp_open_dev();
	while ((h = gp_alloc(fd2, MiB))) {
		other = gp_map(fd2, h, MiB);
		ASSERT_NE(NULL, other);
		EXPECT_FALSE(sees_secret(other, MiB));
		memset(other, 0x5a, MiB);
		munmap(other, MiB);
	}
	EXPECT_TRUE(sees_secret(m, 2 * MiB));
	EXPECT_EQ(SECRET, m[2 * MiB - 1]);
	munmap(m, 2 * MiB);
	close(cfd);
	close(fd2);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, gp_wait_quiet(20000, 1));
	EXPECT_EQ(0, gp_pool().in_use);
}

/* Pages still pinned by someone (vmsplice into a pipe: the same page
 * references a long-term pin holds) after free, unmap and exit: a new
 * owner taking the whole pool never writes into them.
 */
TEST_F(pool, pinned_chunk_freed_and_reallocated)
{
	unsigned char buf[64 * KiB], *other;
	uint64_t h, got = 0;
	int pfd[2], fd2;
	struct iovec iov;
	char *m;

	ASSERT_EQ(0, pipe(pfd));
	h = gp_alloc(self->fd, 64 * KiB);
	m = gp_map(self->fd, h, 64 * KiB);
	ASSERT_NE(NULL, m);
	memset(m, SECRET, 64 * KiB);
	iov.iov_base = m;
	iov.iov_len = 64 * KiB;
	ASSERT_EQ(64 * KiB, vmsplice(pfd[1], &iov, 1, 0));
	munmap(m, 64 * KiB);
	ASSERT_EQ(0, gp_free(self->fd, h));
	fd2 = gp_open_dev();
	while ((h = gp_alloc(fd2, 64 * KiB))) {	/* everything allocatable */
		other = gp_map(fd2, h, 64 * KiB);
		ASSERT_NE(NULL, other);
		memset(other, 0x5a, 64 * KiB);
		munmap(other, 64 * KiB);
		got += 64 * KiB;
	}
	EXPECT_GE(16 * MiB - 64 * KiB, got);	/* the pinned chunk is not there */
	ASSERT_EQ(64 * KiB, read(pfd[0], buf, sizeof(buf)));
	EXPECT_TRUE(sees_secret(buf, sizeof(buf)));
	EXPECT_EQ(SECRET, buf[sizeof(buf) - 1]);
	close(fd2);
	close(pfd[0]);
	close(pfd[1]);
	EXPECT_EQ(0, gp_wait_quiet(20000, 1));
}

/* Without access to /dev/gpupool nothing works; /proc/gpupool shows the
 * totals but not root's holder lines.
 */
static int unprivileged(void *arg)
{
	char text[65536];
	pid_t root_holder = *(pid_t *)arg;
	char me[32];

	(void)root_holder;
	if (drop_to_nobody())
		return 10;
	if (open(GP_DEV, O_RDWR) >= 0 || (errno != EACCES && errno != EPERM))
		return 11;
	if (open(GP_DEV, O_RDONLY) >= 0)
		return 12;
	if (gp_read_file(GP_PROC, text, sizeof(text)) <= 0)
		return 13;
	if (!strstr(text, "PoolTotal:"))
		return 14;
	snprintf(me, sizeof(me), "Holder: %d ", (int)root_holder);
	if (strstr(text, me))
		return 15;	/* a root process's line shown to nobody */
	return 0;
}

TEST_F(pool, unprivileged_user)
{
	pid_t me = getpid();

	ASSERT_NE(0, gp_alloc(self->fd, MiB));
	EXPECT_EQ(0, gp_run_child(unprivileged, &me));
}

/* Sizes and offsets at the edges of 64 bits never wrap into success. */
TEST_F(pool, integer_overflows)
{
	static const uint64_t sizes[] = {
		~0ull, ~0ull - 4095, ~0ull - 4096, 1ull << 63, (1ull << 63) + 1,
		~0ull << 12, (~0ull << 12) + 1, 1ull << 52,
	};
	struct gpupool_pool_stats *nodes;
	struct gpupool_alloc a;
	struct gpupool_stats s;
	unsigned int i;
	uint64_t h;
	char *m;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.size = sizes[i];
		EXPECT_NE(0, ioctl(self->fd, GPUPOOL_IOC_ALLOC, &a))
			TH_LOG("size %#llx allocated", (unsigned long long)sizes[i]);
	}
	h = gp_alloc(self->fd, MiB);
	ASSERT_NE(0, h);
	/* offset + length wrapping, and lengths past the chunk. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ, MAP_SHARED, self->fd,
				   (off_t)(~0ull & ~4095ull & ~(1ull << 63))));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, ~0ull & ~4095ull >> 1, PROT_READ,
				   MAP_SHARED, self->fd, (off_t)h));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, MiB + GP_PG, PROT_READ, MAP_SHARED,
				   self->fd, (off_t)h));
	/* STATS with a huge nr_nodes: writes only the nodes that exist, into
	 * an array followed by a guard page.
	 */
	m = mmap(NULL, 2 * GP_PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, mprotect(m + GP_PG, GP_PG, PROT_NONE));
	nodes = (void *)(m + GP_PG - sizeof(*nodes));	/* room for one */
	memset(&s, 0, sizeof(s));
	s.nr_nodes = ~0u;
	s.nodes_ptr = (uint64_t)(uintptr_t)nodes;
	EXPECT_EQ(0, ioctl(self->fd, GPUPOOL_IOC_STATS, &s));
	EXPECT_EQ(1, s.nr_nodes);	/* the pool here has one sub-pool */
	EXPECT_EQ(16 * MiB, nodes->total);
	munmap(m, 2 * GP_PG);
}

/* The per-process limit holds against one process, and chunks passed on
 * by fd still count against their allocator after it exits; the memory
 * comes back when the last holder lets go.
 */
static int fill_to_limit(void *arg)
{
	int sock = *(int *)arg, fd = gp_open_dev(), n = 0;
	struct gpupool_alloc a;

	for (;;) {
		struct gpupool_export e;

		memset(&a, 0, sizeof(a));
		a.size = MiB;
		if (ioctl(fd, GPUPOOL_IOC_ALLOC, &a))
			break;
		n++;
		memset(&e, 0, sizeof(e));
		e.handle = a.handle;
		if (ioctl(fd, GPUPOOL_IOC_EXPORT, &e))
			return 20;
		if (gp_send_fd(sock, (int)e.fd, NULL, 0, 0))
			return 21;
		close((int)e.fd);
	}
	if (errno != EDQUOT)
		return 22;
	return n == 4 ? 0 : 23;	/* 4 MiB: the limit */
}

TEST(exhaust_past_limit_and_hold_by_fd)
{
	int sv[2], fds[8], n = 0, i;
	struct gpupool_pool_stats s;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=16M per_process_limit=4M"));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	EXPECT_EQ(0, gp_run_child(fill_to_limit, &sv[1]));
	/* Collect the fds it passed before it exited. */
	while (n < 8 && (fds[n] = gp_recv_fd(sv[0], NULL, 0, MSG_DONTWAIT)) >= 0)
		n++;
	EXPECT_EQ(4, n);
	s = gp_pool();
	EXPECT_EQ(4 * MiB, s.in_use);	/* held by us, through the fds */
	for (i = 0; i < n; i++)
		close(fds[i]);
	EXPECT_EQ(0, gp_wait_quiet(20000, 1));
	s = gp_pool();
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(s.total, s.free);
	close(sv[0]);
	close(sv[1]);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

TEST_HARNESS_MAIN
