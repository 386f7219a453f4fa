// SPDX-License-Identifier: MIT
/*
 * user_populate.c - the user backend's pinning and faulting in of a new
 * segment (see user.c for the whole story): how many threads, whether
 * shmem gives huge pages, mlock2(MLOCK_ONFAULT), then the pages made by
 * writing zeros into the memfds and MADV_POPULATE_READ (or
 * MADV_POPULATE_WRITE under shmem THP), a thread per memfd.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "env.h"
#include "user.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT	0x01
#endif

/* A population thread is worth its start for this much at least: two
 * threads make and free a 2 MiB segment (the small pool's) in 0.75-0.85x
 * the time of one on the project's 2-core machine (bench/README.md), so
 * even the smallest segment is split when a second CPU is idle.
 */
#define GP_POPULATE_MIN	(1ull << 20)

/* GPUPOOL_POPULATE_THREADS, capped at the threads a segment may use. */
int gp_populate_threads_setting(struct gp_ctx *ctx, unsigned int *n)
{
	uint64_t v;
	int ret = gp_env_count(ctx, "GPUPOOL_POPULATE_THREADS", 1,
			       GP_POPULATE_SETTING_MAX, &v);

	if (ret > 0)
		*n = v < GP_POPULATE_MAX_THREADS ? (unsigned int)v :
		     GP_POPULATE_MAX_THREADS;
	return ret;
}

/* The user backend's setting, read whichever backend opens. */
int gp_backend_check_env(struct gp_ctx *ctx)
{
	unsigned int n;

	return gp_populate_threads_setting(ctx, &n) < 0 ? -EINVAL : 0;
}

/* The CPUs this process may run on (at most GP_POPULATE_MAX_THREADS). */
unsigned int gp_populate_threads_default(void)
{
	cpu_set_t cpus;
	long n;

	if (sched_getaffinity(0, sizeof(cpus), &cpus))
		return 1;
	n = CPU_COUNT(&cpus);
	if (n > GP_POPULATE_MAX_THREADS)
		n = GP_POPULATE_MAX_THREADS;
	return n >= 1 ? (unsigned int)n : 1;
}

/* Tasks running or runnable now, this one included (/proc/loadavg's
 * fourth field, "R/T"); 0 when it cannot be read.
 */
static long gp_tasks_running(void)
{
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	char buf[128], *p;
	ssize_t n = -1;

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strchr(buf, '/');
	while (p && p > buf && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p ? strtol(p, NULL, 10) : 0;
}

/* What one population thread makes at least: GP_POPULATE_MIN, or a huge
 * page where shmem THP may map them (a part's file offset 0 must then fall
 * on a huge page).
 */
static uint64_t gp_populate_unit(const struct gp_ctx *ctx)
{
	return gp_user_of(ctx)->shmem_thp ? GP_HUGE_PAGE : GP_POPULATE_MIN;
}

/*
 * Threads to fault in a new segment of size bytes: one per population unit
 * at most, and GPUPOOL_POPULATE_THREADS or the CPUs this process
 * may use.  Without GPUPOOL_POPULATE_THREADS, only as many as there are
 * CPUs nobody else wants now: a thread that must wait for a CPU only adds
 * its start and its hand-over to the work.
 */
unsigned int gp_populate_threads(struct gp_ctx *ctx, uint64_t size)
{
	uint64_t n = gp_user_of(ctx)->populate_threads;
	long busy;

	if (n > size / gp_populate_unit(ctx))
		n = size / gp_populate_unit(ctx);
	if (n >= 2 && !gp_user_of(ctx)->populate_threads_set) {
		busy = gp_tasks_running() - 1;	/* others than this one */
		if (busy > 0)
			n = (uint64_t)busy >= n ? 1 : n - (uint64_t)busy;
	}
	return n >= 1 ? (unsigned int)n : 1;
}

/* The bracketed word of a THP setting file into word ("" when unread). */
static void gp_thp_word(const char *path, char *word, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[256], *l, *r;
	ssize_t n = -1;

	word[0] = 0;
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return;
	buf[n] = 0;
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (r && (size_t)(r - l) <= len) {
		memcpy(word, l + 1, (size_t)(r - l - 1));
		word[r - l - 1] = 0;
	}
}

/* Whether a shmem mapping with MADV_HUGEPAGE gets 2 MiB pages: shmem_enabled
 * (or, on kernels with per-size settings, the 2 MiB one when it does not
 * inherit) is advise, within_size, always or force.
 */
bool gp_shmem_thp_allowed(void)
{
	static const char *const yes[] = { "advise", "within_size", "always", "force" };
	char w[32];
	unsigned int i;

	gp_thp_word("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/shmem_enabled",
		    w, sizeof(w));
	if (!w[0] || !strcmp(w, "inherit"))
		gp_thp_word("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
			    w, sizeof(w));
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcmp(w, yes[i]))
			return true;
	return false;
}

int gp_memlock_error(struct gp_ctx *ctx, int e, uint64_t size)
{
	char a[32], b[32];
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return gp_err(ctx, -ENOMEM,
			      "mlock of %s failed: %s (the system is out of memory it can pin)",
			      gp_fmt_bytes(a, sizeof(a), size), strerror(e));
	return gp_err(ctx, -ENOMEM,
		      "mlock of %s failed: RLIMIT_MEMLOCK is %s, and this process's "
		      "pinned memory may not exceed it; raise it (ulimit -l, 'memlock' in "
		      "/etc/security/limits.conf, LimitMEMLOCK= for a systemd service, "
		      "--ulimit memlock=-1 for docker) or load gpupool.ko, whose pool does "
		      "not count against it",
		      gp_fmt_bytes(a, sizeof(a), size),
		      gp_fmt_bytes(b, sizeof(b), rl.rlim_cur));
}

int gp_mlock(void *addr, uint64_t size)
{
	return (int)syscall(SYS_mlock, addr, (size_t)size);
}

/*
 * Filling a segment: pieces of GP_FILL_PIECE bytes (whole huge pages),
 * taken in order by the threads of gp_populate() from a shared counter.
 * With shmem THP off, a piece is written first (pwritev of zeros into the
 * memfd: the pages are allocated by the file, without a page fault each),
 * then mapped by MADV_POPULATE_READ, whose read faults map up to 16 pages
 * each (fault-around), writable (shmem keeps no dirty accounting) and
 * locked (VM_LOCKONFAULT).  With shmem THP allowed, MADV_POPULATE_WRITE
 * faults in 2 MiB pages (a write() would allocate small ones: only a
 * mapping with MADV_HUGEPAGE gets huge pages under "advise").  The writes
 * take the file's lock one at a time; the mapping of one piece overlaps
 * the writing of the next.
 */
#define GP_FILL_PIECE	(4ull << 20)
#define GP_ZERO_LEN	(64u << 10)

static char gp_zero[GP_ZERO_LEN];	/* never written: the source of zeros */

struct gp_fill {
	char *addr;
	uint64_t size;
	const int *fds;		/* part i: fds[i], at addr + i * part */
	unsigned int parts;
	uint64_t part;
	bool write_first;	/* pwritev, then MADV_POPULATE_READ */
	long page;
	uint64_t next[GP_POPULATE_MAX_THREADS];	/* per part: its next piece (atomic) */
	int err;		/* the first errno (atomic), 0 when all is in */
};

/* Write zeros into [off, off + len) of file fd; 0 or an errno value. */
static int gp_fill_write(int fd, uint64_t off, uint64_t len)
{
	struct iovec iov[GP_FILL_PIECE / GP_ZERO_LEN];
	unsigned int n;
	ssize_t w;

	while (len) {
		for (n = 0; n < GP_FILL_PIECE / GP_ZERO_LEN &&
			    (uint64_t)n * GP_ZERO_LEN < len; n++) {
			iov[n].iov_base = gp_zero;
			iov[n].iov_len = len - (uint64_t)n * GP_ZERO_LEN < GP_ZERO_LEN ?
					 len - (uint64_t)n * GP_ZERO_LEN : GP_ZERO_LEN;
		}
		w = pwritev(fd, iov, (int)n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w ? errno : ENOSPC;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/* Fault in len bytes at off in part p; 0 or an errno value. */
static int gp_fill_piece(const struct gp_fill *f, unsigned int p, uint64_t off,
			 uint64_t len)
{
	char *addr = f->addr + p * f->part + off;
	volatile char *v = (volatile char *)addr;
	uint64_t i;
	int e;

	if (f->write_first) {
		e = gp_fill_write(f->fds[p], off, len);
		if (e)
			return e;
	}
	if (!madvise(addr, len, f->write_first ? MADV_POPULATE_READ :
		     MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return errno;
	/* A kernel before MADV_POPULATE_*: a fault per page (a fresh
	 * memfd's pages read zero, and stay zero).
	 */
	for (i = 0; i < len; i += (uint64_t)f->page) {
		if (f->write_first)
			(void)v[i];
		else
			v[i] = 0;
	}
	return 0;
}

struct gp_filler {
	struct gp_fill *f;
	unsigned int first;	/* the part this thread starts with */
};

/* A thread's work: the pieces of its own part, then what is left of the
 * others (a thread that could not start, or started late, leaves its part
 * to the rest).
 */
static void *gp_fill_worker(void *arg)
{
	struct gp_filler *w = arg;
	struct gp_fill *f = w->f;
	unsigned int j, p;
	uint64_t off, len;
	int e, none = 0;

	for (j = 0; j < f->parts; j++) {
		p = (w->first + j) % f->parts;
		len = p == f->parts - 1 ? f->size - p * f->part : f->part;
		while ((off = __atomic_fetch_add(&f->next[p], GP_FILL_PIECE,
						 __ATOMIC_RELAXED)) < len) {
			if (__atomic_load_n(&f->err, __ATOMIC_RELAXED))
				return NULL;
			e = gp_fill_piece(f, p, off, len - off < GP_FILL_PIECE ?
					  len - off : GP_FILL_PIECE);
			if (e)
				__atomic_compare_exchange_n(&f->err, &none, e,
							    false,
							    __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/*
 * Fault in [addr, addr + size), made of `parts` memfds (fds[i] mapped from
 * its offset 0 at addr + i * part), from `threads` threads (this one
 * included), thread i starting with part i % parts.  0 or an errno value.
 */
static int gp_populate(struct gp_ctx *ctx, void *addr, uint64_t size,
		       const int *fds, unsigned int parts, uint64_t part,
		       unsigned int threads)
{
	struct gp_filler w[GP_POPULATE_MAX_THREADS];
	pthread_t th[GP_POPULATE_MAX_THREADS];
	struct gp_fill *f;
	unsigned int i, started;
	int err;

	f = calloc(1, sizeof(*f));
	if (!f)
		return ENOMEM;
	f->addr = addr;
	f->size = size;
	f->fds = fds;
	f->parts = parts;
	f->part = part;
	/* No file (fds[0] < 0: see gp_user_map_anon()): faults.  One file:
	 * its writes would take turns on its lock.
	 */
	f->write_first = !gp_user_of(ctx)->shmem_thp && fds[0] >= 0;
	if (f->write_first && parts == 1)
		threads = 1;
	f->page = (long)ctx->page_size;
	for (i = 0; i < threads; i++) {
		w[i].f = f;
		w[i].first = i % parts;
	}
	for (i = 1, started = 0; i < threads; i++)
		if (!pthread_create(&th[started], NULL, gp_fill_worker, &w[i]))
			started++;
	gp_fill_worker(&w[0]);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	err = f->err;
	free(f);
	return err;
}

/*
 * Pin and fault in a fresh mapping of normal pages, made of `parts`
 * memfds (see gp_populate()): mlock2(MLOCK_ONFAULT) (RLIMIT_MEMLOCK
 * checked for the whole size, nothing faulted yet), then gp_populate().
 * 1 when the kernel has no mlock2 (the caller mlocks).
 */
int gp_lock_populate(struct gp_ctx *ctx, void *addr, uint64_t size,
		     const int *fds, unsigned int parts, uint64_t part,
		     unsigned int threads)
{
	int e;

	if (syscall(SYS_mlock2, addr, (size_t)size, MLOCK_ONFAULT)) {
		e = errno;
		if (e == ENOSYS || e == EINVAL)
			return 1;
		return (e == ENOMEM || e == EPERM || e == EAGAIN) ?
		       gp_memlock_error(ctx, e, size) :
		       gp_err(ctx, -e, "mlock2: %s", strerror(e));
	}
	e = gp_populate(ctx, addr, size, fds, parts, part, threads);
	if (e)
		return gp_err(ctx, -ENOMEM, "faulting in %llu bytes: %s",
			      (unsigned long long)size, strerror(e));
	return 0;
}

/* The parts of a segment of size bytes for n threads: the size of each but
 * the last, whole population units.
 */
uint64_t gp_part_size(const struct gp_ctx *ctx, uint64_t size, unsigned int n)
{
	uint64_t unit = gp_populate_unit(ctx);
	uint64_t per = (size + n - 1) / n;

	return (per + unit - 1) & ~(unit - 1);
}
