/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the in-VM tests of the pool's ioctls and mappings (on top of
 * lib.h): thin ioctl wrappers returning 0 or -errno, /proc/gpupool figures,
 * and a waiter for the zeroing worker.
 */
#ifndef GPUPOOL_TESTS_VM_POOL_LIB_H
#define GPUPOOL_TESTS_VM_POOL_LIB_H

#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <linux/gpupool.h>

#include "lib.h"

#define KiB	(1ULL << 10)
#define MiB	(1ULL << 20)

/*
 * The kernel's page size: 4 KiB on x86-64; 4, 16 or 64 KiB on arm64 (the
 * VMs boot a 64 KiB one).  A chunk is whole pages, and the module counts
 * its figures (in_use, peak, quarantined ...) in chunks' sizes.
 */
#define GP_PG	((unsigned long)getpagesize())

/* The chunk the module cuts for a request of n bytes: whole pages. */
static inline uint64_t gp_chunk_of(uint64_t n)
{
	return (n + GP_PG - 1) & ~(uint64_t)(GP_PG - 1);
}

/* The first NUMA node with memory (0 on a machine without NUMA). */
static inline int gp_first_node(void)
{
	char buf[64];

	if (gp_read_file("/sys/devices/system/node/has_memory", buf,
			 sizeof(buf)) <= 0)
		return 0;
	return atoi(buf);
}

/*
 * Load with one sub-pool only (nodes=<first node with memory>), so that a
 * test's figures about "the pool" (largest free chunk, one chunk spanning
 * it all) hold on a NUMA machine too (vm/run-vm.sh --numa).
 */
static inline int gp_load_1(const char *params)
{
	char p[256];

	snprintf(p, sizeof(p), "%s nodes=%d", params, gp_first_node());
	return gp_load(p);
}

static inline int gp_open_dev(void)
{
	return open(GP_DEV, O_RDWR | O_CLOEXEC);
}

static inline int gp_ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* ALLOC: 0 or -errno; *a filled (handle, chunk_size, chunk_node). */
static inline int gp_alloc_ex(int fd, uint64_t size, uint32_t flags,
			      uint32_t node, struct gpupool_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->flags = flags;
	a->node = node;
	return gp_ioc(fd, GPUPOOL_IOC_ALLOC, a);
}

/* ALLOC anywhere: the handle, or 0 on failure (errno set). */
static inline uint64_t gp_alloc(int fd, uint64_t size)
{
	struct gpupool_alloc a;
	int ret = gp_alloc_ex(fd, size, 0, 0, &a);

	if (ret) {
		errno = -ret;
		return 0;
	}
	return a.handle;
}

static inline int gp_free(int fd, uint64_t handle)
{
	struct gpupool_free f;

	memset(&f, 0, sizeof(f));
	f.handle = handle;
	return gp_ioc(fd, GPUPOOL_IOC_FREE, &f);
}

/* EXPORT: the new fd, or -errno. */
static inline int gp_export(int fd, uint64_t handle, uint32_t flags)
{
	struct gpupool_export e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.handle = handle;
	e.flags = flags;
	ret = gp_ioc(fd, GPUPOOL_IOC_EXPORT, &e);
	return ret ? ret : (int)e.fd;
}

/* STATS: the whole pool, and up to nr per-node entries. */
static inline int gp_stats(int fd, struct gpupool_stats *st,
			   struct gpupool_pool_stats *nodes, uint32_t nr)
{
	memset(st, 0, sizeof(*st));
	st->nr_nodes = nodes ? nr : 0;
	st->nodes_ptr = (uintptr_t)nodes;
	return gp_ioc(fd, GPUPOOL_IOC_STATS, st);
}

/* The whole pool's figures, through a file of its own. */
static inline struct gpupool_pool_stats gp_pool(void)
{
	struct gpupool_pool_stats z;
	struct gpupool_stats st;
	int fd = gp_open_dev();

	memset(&z, 0, sizeof(z));
	if (fd < 0)
		return z;
	if (gp_stats(fd, &st, NULL, 0)) {
		close(fd);
		return z;
	}
	close(fd);
	return st.total;
}

/* Map a chunk read-write, shared: the address or MAP_FAILED. */
static inline void *gp_map(int fd, uint64_t handle, uint64_t size)
{
	return mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    (off_t)handle);
}

/*
 * The brd ramdisk /dev/ram0, opened with flags (O_DIRECT works on it; the
 * VM's 9p root and tmpfs /tmp take no O_DIRECT).  Built into the debug
 * kernel (64 MiB from boot); a module on Debian's kernels, loaded here with
 * 16 MiB when absent.  The fd, or -errno.
 */
#define GP_RAMDISK	"/dev/ram0"
static inline int gp_ramdisk(int flags)
{
	int fd;

	if (access(GP_RAMDISK, F_OK) &&
	    system("modprobe brd rd_nr=1 rd_size=16384"))
		return -ENODEV;
	fd = open(GP_RAMDISK, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Wait (up to ms) until nothing is being zeroed; with quarantine too, until
 * nothing is quarantined either.  0 when quiet, -ETIMEDOUT otherwise.
 */
static inline int gp_wait_quiet(int ms, int quarantine)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	struct gpupool_pool_stats s;

	for (;;) {
		s = gp_pool();
		if (!s.zeroing && (!quarantine || !s.quarantined))
			return 0;
		if (ms <= 0)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
		ms -= 5;
	}
}

/*
 * A field in kB (Rss, FilePmdMapped, ...) of this process's vma that starts
 * at p, from /proc/self/smaps; -1 if no such vma or field.  A vma's first
 * smaps line starts with its address in lower-case hex, its fields with a
 * capital.
 */
static inline long gp_vma_kb(const void *p, const char *field)
{
	char line[512], want[32];
	size_t flen = strlen(field);
	int in = 0;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)p);
	while (fgets(line, sizeof(line), f)) {
		if (isxdigit((unsigned char)line[0]) &&
		    !isupper((unsigned char)line[0]))
			in = !strncmp(line, want, strlen(want));
		else if (in && !strncmp(line, field, flen) &&
			 line[flen] == ':' &&
			 sscanf(line + flen + 1, "%ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* A /proc/gpupool figure as a number (kB for sizes); -1 when absent. */
static inline long long gp_proc_num(const char *key)
{
	static char text[65536];
	char val[128];

	if (gp_read_file(GP_PROC, text, sizeof(text)) <= 0)
		return -1;
	if (!gp_proc_value(text, key, val, sizeof(val)))
		return -1;
	return strtoll(val, NULL, 10);
}

/*
 * Shrink every slab cache (/sys/kernel/slab/<cache>/shrink; aliases are
 * symlinks and skipped).  Besides giving empty slabs back, on a KASAN
 * kernel this drains the cache's objects from KASAN's quarantine, which
 * otherwise holds freed objects back from the page allocator (up to 1/32
 * of memory) and makes free memory drift by megabytes between two
 * readings.
 */
static inline void gp_shrink_slabs(void)
{
	char path[300];
	struct dirent *d;
	DIR *dir = opendir("/sys/kernel/slab");
	int fd;

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.' || d->d_type == DT_LNK)
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink",
			 d->d_name);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (write(fd, "1", 1) != 1)
			perror(path);
		close(fd);
	}
	closedir(dir);
}

/*
 * Free memory in bytes, as the page allocator holds it: the zones' free
 * pages plus the pages on the per-CPU free lists (/proc/zoneinfo).  MemFree
 * leaves the latter out, and they swing by tens of MiB as big frees pass
 * through them; page cache is dropped and slab caches shrunk first.  -1 on
 * error.
 */
static inline long long gp_free_bytes(void)
{
	static char text[1 << 20];
	long long pages = 0;
	const char *p;
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			perror("drop_caches");
		close(fd);
	}
	gp_shrink_slabs();
	usleep(200 * 1000);
	if (gp_read_file("/proc/zoneinfo", text, sizeof(text)) <= 0)
		return -1;
	for (p = text; (p = strchr(p, '\n')); ) {
		p++;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "nr_free_pages ", 14))
			pages += atoll(p + 14);
		else if (!strncmp(p, "count: ", 7))
			pages += atoll(p + 7);
	}
	return pages * GP_PG;
}

/* Seconds on the monotonic clock. */
static inline double gp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Does every byte of [p, p + len) equal c?  memcmp() against 256 bytes of
 * c: a byte loop over a 160 MiB buffer took seconds under TCG.
 */
static inline int gp_all_bytes(const void *p, size_t len, unsigned char c)
{
	const unsigned char *b = p;
	unsigned char ref[256];
	size_t i, n;

	memset(ref, c, sizeof(ref));
	for (i = 0; i < len; i += n) {
		n = len - i < sizeof(ref) ? len - i : sizeof(ref);
		if (memcmp(b + i, ref, n))
			return 0;
	}
	return 1;
}

/* Wait for child pid: its exit status, 128 + the signal that ended it, or
 * -errno.
 */
static inline int gp_reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* Fork a child running fn(arg); its exit status (or 128 + signal). */
static inline int gp_run_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(arg));
	return gp_reap(pid);
}

/*
 * A range filled page by page (GP_PG): page i of it holds
 * gp_page_pat(first + i) in every byte, so that a page mapped at the wrong
 * place shows.
 */
static inline unsigned char gp_page_pat(unsigned long i)
{
	return (unsigned char)(i * 7 + 1);
}

static inline void gp_fill_pages(char *p, unsigned long len,
				 unsigned long first)
{
	unsigned long i;

	for (i = 0; i < len / GP_PG; i++)
		memset(p + i * GP_PG, gp_page_pat(first + i), GP_PG);
}

/* 0 when every page i of p holds gp_page_pat(first + i), else 1 + i. */
static inline unsigned long gp_check_pages(const char *p, unsigned long len,
					   unsigned long first)
{
	unsigned long i;

	for (i = 0; i < len / GP_PG; i++)
		if (!gp_all_bytes(p + i * GP_PG, GP_PG,
				  gp_page_pat(first + i)))
			return 1 + i;
	return 0;
}

/*
 * Pass one fd over a UNIX socket (SCM_RIGHTS) with `len` bytes of data
 * (at least one byte is sent: a message with no data carries no fd).
 * 0 or -errno.
 */
static inline int gp_send_fd(int sock, int fd, const void *data, size_t len,
			     int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte = 'f';
	struct iovec iov = { .iov_base = len ? (void *)data : &byte,
			     .iov_len = len ? len : 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, flags) == (ssize_t)iov.iov_len ? 0 :
	       errno ? -errno : -EIO;
}

/*
 * Receive what gp_send_fd() sent: the fd (O_CLOEXEC) or -errno (-EBADMSG
 * for a message without one); its data into data[len].
 */
static inline int gp_recv_fd(int sock, void *data, size_t len, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { .iov_base = len ? data : &byte,
			     .iov_len = len ? len : 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;
	int fd;

	n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
		return -EBADMSG;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if ((size_t)n != iov.iov_len) {
		close(fd);
		return -EBADMSG;
	}
	return fd;
}

/*
 * A child process driven over a socket (the tests' holders of chunks):
 * forked by fk(arg) (a fork() that returns in both: cg_fork_into() to be
 * born in a cgroup), or by fork() when fk is NULL; it runs main(sock),
 * exits with what that returns, and is killed when its driver dies.
 */
struct gp_child {
	pid_t pid;
	int sock;
};

static inline int gp_child_start(struct gp_child *c, pid_t (*fk)(void *),
				 void *arg, int (*main_fn)(int sock))
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	fflush(NULL);
	c->pid = fk ? fk(arg) : fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid) {
		close(sv[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(main_fn(sv[1]));
	}
	close(sv[1]);
	c->sock = sv[0];
	return 0;
}

/* One command of len bytes, its reply of rlen: 0, or -EPIPE (gone). */
static inline int gp_child_call(struct gp_child *c, const void *cmd,
				size_t len, void *reply, size_t rlen)
{
	if (write(c->sock, cmd, len) != (ssize_t)len ||
	    read(c->sock, reply, rlen) != (ssize_t)rlen)
		return -EPIPE;
	return 0;
}

/* Tell it to quit (continued first, if stopped) and reap: its status. */
static inline int gp_child_stop(struct gp_child *c, const void *quit,
				size_t len)
{
	kill(c->pid, SIGCONT);
	if (write(c->sock, quit, len) != (ssize_t)len)
		kill(c->pid, SIGKILL);
	close(c->sock);
	return gp_reap(c->pid);
}

/*
 * In a test body, once its processes are gone: nothing is being zeroed,
 * idle or in use, every chunk freed, the pool whole again.
 */
#define GP_EXPECT_DRAINED() do {					\
	struct gpupool_pool_stats gp_s_;				\
									\
	EXPECT_EQ(0, gp_wait_quiet(30000, 1));				\
	EXPECT_EQ(0, gp_proc_num("Idle"));				\
	gp_s_ = gp_pool();						\
	EXPECT_EQ(0, gp_s_.in_use);					\
	EXPECT_EQ(gp_s_.total, gp_s_.free);				\
	EXPECT_EQ(gp_s_.allocs, gp_s_.frees);				\
} while (0)

/*
 * The fixture most module tests start from: gpupool.ko loaded with params,
 * /dev/gpupool open in self->fd; the teardown closes it and unloads the
 * module, waiting up to unload_ms for the pool to drain.  Expand it where
 * the test would write FIXTURE(name) and its setup and teardown; needs
 * kselftest_harness.h first.
 */
#define GP_POOL_FIXTURE(name, params, unload_ms)			\
	FIXTURE(name) {							\
		int fd;							\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		GP_REQUIRE();						\
		ASSERT_EQ(0, gp_load_1(params));			\
		self->fd = gp_open_dev();				\
		ASSERT_LE(0, self->fd)					\
			TH_LOG("open /dev/gpupool: %s", strerror(errno)); \
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		close(self->fd);					\
		EXPECT_EQ(0, gp_unload_wait(unload_ms));		\
	}

/*
 * The same with no descriptor held: for tests whose every open and close is
 * the thing under test.
 */
#define GP_LOADED_FIXTURE(name, params, unload_ms)			\
	FIXTURE(name) {							\
		int unused;						\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		GP_REQUIRE();						\
		ASSERT_EQ(0, gp_load_1(params));			\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		EXPECT_EQ(0, gp_unload_wait(unload_ms));		\
	}

#endif /* GPUPOOL_TESTS_VM_POOL_LIB_H */
