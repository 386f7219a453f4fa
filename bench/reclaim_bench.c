// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim_bench - what asking for idle memory costs, measured inside the
 * test VM (bench/kmod.mk runs it beside kmod_bench).  Figures are
 * printed, targets as PASS/MISS, nothing is asserted.
 *
 *  R1. ALLOC + FREE without pressure: 1000 pairs of 4 KiB and 64 of
 *      64 MiB ALLOC and FREE per load, with another file holding chunks
 *      marked idle (what a process of the new library keeps), on this
 *      module and on the module before idle chunks were asked for
 *      ($KMOD_BENCH_RECLAIM_BASE_KO, which bench/kmod.mk builds from git),
 *      loaded in turn, $KMOD_BENCH_BASE_ROUNDS rounds (default 8), the
 *      order alternating.  Target (PASS/MISS): this module's median pair,
 *      over every round, no more than 2% above the baseline's, each size.
 *  R2. Under pressure: B allocates 160 MiB of a 256 MiB pool and maps it,
 *      while holder A keeps 160 MiB idle and gives it back when asked
 *      (poll, GPUPOOL_IOC_ASKED, munmap, FREE, as libgpupool's keeper does
 *      without CUDA: on a GPU host add cudaHostUnregister), against B's
 *      same request from a free pool, $KMOD_BENCH_RECLAIM_ROUNDS rounds
 *      (default 7).  Printed: the medians and their ratio, and the parts
 *      of the time under pressure: B's wait for A (the ask's wait_ns, from
 *      GPUPOOL_IOC_ASK_REPORT), of which A's own give-back (munmap and
 *      FREE, timed by A), and the rest (the zeroing of what A gave, the
 *      ALLOC and the mmap).  Those are what reclaim_wait_ms must cover.
 *
 * Its section letter is r: $KMOD_BENCH_SECTIONS without it skips it.
 * Run as root with $GPUPOOL_KO naming the module (vm/run-vm.sh does both).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kmod_util.h"

#define PAIRS		1000
#define PAIRS_BIG	64
#define BASE_ROUNDS	8
#define PRESSURE_ROUNDS	7
#define BIG		(160 * MiB)
#define IDLE_CHUNKS	8

static int env_int(const char *var, int dflt, int max)
{
	const char *s = getenv(var);
	int v = s && *s ? atoi(s) : dflt;

	return v < 1 || v > max ? dflt : v;
}

static int open_dev(void)
{
	return open("/dev/gpupool", O_RDWR | O_CLOEXEC);
}

/* ALLOC of size (flags), its handle in *h: 0 or -errno. */
static int alloc(int fd, uint64_t size, uint32_t flags, uint64_t *h)
{
	struct gpupool_alloc a;

	memset(&a, 0, sizeof(a));
	a.size = size;
	a.flags = flags;
	if (ioctl(fd, GPUPOOL_IOC_ALLOC, &a))
		return -errno;
	*h = a.handle;
	return 0;
}

static void free_h(int fd, uint64_t h)
{
	struct gpupool_free f;

	memset(&f, 0, sizeof(f));
	f.handle = h;
	ioctl(fd, GPUPOOL_IOC_FREE, &f);
}

/* Mark a chunk idle; -1 when the module has no such ioctl (baseline). */
static int mark_idle(int fd, uint64_t h)
{
	struct gpupool_idle in;

	memset(&in, 0, sizeof(in));
	in.handle = h;
	return ioctl(fd, GPUPOOL_IOC_IDLE, &in) ? -1 : 0;
}

/* R1 --------------------------------------------------------------------- */

/*
 * n ALLOC + FREE pairs of size on fd, their times (s) into t; the pool
 * settled (nothing being zeroed) every 4 pairs of a large size.  0 or -1.
 */
static int pairs(int fd, uint64_t size, int n, double *t)
{
	uint64_t h = 0;
	double t0;
	int i;

	for (i = 0; i < n; i++) {
		if (size > MiB && !(i % 4))
			settle(fd);
		t0 = now();
		if (alloc(fd, size, 0, &h))
			return -1;
		free_h(fd, h);
		t[i] = now() - t0;
	}
	return 0;
}

/*
 * One load of module ko: PAIRS pairs of 4 KiB into small, PAIRS_BIG of
 * 64 MiB into big (after untimed ones: the first after a load).  0 or -1.
 */
static int pairs_on(const char *ko, double *small, double *big)
{
	uint64_t held[IDLE_CHUNKS];
	int fd, other, i, ret = -1;

	if (unload())
		return -1;
	setenv("GPUPOOL_KO", ko, 1);
	if (load("pool_size=512M"))
		return -1;
	fd = open_dev();
	other = open_dev();
	if (fd < 0 || other < 0)
		goto out;
	/* Another file's idle chunks (the baseline knows no such mark). */
	for (i = 0; i < IDLE_CHUNKS; i++)
		if (!alloc(other, 2 * MiB, 0, &held[i]))
			mark_idle(other, held[i]);
	ret = pairs(fd, 4096, PAIRS, small) || pairs(fd, 4096, PAIRS, small) ||
	      pairs(fd, 64 * MiB, PAIRS_BIG, big) ? -1 : 0;
out:
	if (other >= 0)
		close(other);
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * Each round loads both modules in turn (the order alternating) and takes
 * their pairs; the verdict is on the median of every pair of a module over
 * all rounds (a round the host slowed moves its own figures, not the
 * verdict).
 */
static void bench_no_pressure(void)
{
	static double small[2][BASE_ROUNDS * 4 * PAIRS];
	static double big[2][BASE_ROUNDS * 4 * PAIRS_BIG];
	const char *base = getenv("KMOD_BENCH_RECLAIM_BASE_KO");
	int rounds = env_int("KMOD_BENCH_BASE_ROUNDS", BASE_ROUNDS,
			     BASE_ROUNDS * 4);
	const char *which[2] = { "today", "baseline" };
	char *ours = strdup(getenv("GPUPOOL_KO"));
	double med[2][2], *ps, *pb;
	int round, k, m;

	if (!base || !*base || !ours) {
		printf("\nR1. skipped: no baseline module ($KMOD_BENCH_RECLAIM_BASE_KO)\n");
		free(ours);
		return;
	}
	printf("\nR1. ALLOC + FREE without pressure, another file holding %d idle chunks: today against %s, %d rounds, loaded in turn (median of %d pairs each)\n",
	       IDLE_CHUNKS, base, rounds, PAIRS);
	printf("   %5s %-8s %14s %14s\n", "round", "module", "4 KiB pair us",
	       "64 MiB pair us");
	for (round = 0; round < rounds; round++) {
		for (k = 0; k < 2; k++) {
			m = k ^ (round & 1);
			ps = &small[m][round * PAIRS];
			pb = &big[m][round * PAIRS_BIG];
			if (pairs_on(m ? base : ours, ps, pb)) {
				printf("   MISS R1: %s failed (%s)\n", which[m],
				       strerror(errno));
				goto out;
			}
			printf("   %5d %-8s %14.2f %14.2f\n", round, which[m],
			       median(ps, PAIRS) * 1e6,
			       median(pb, PAIRS_BIG) * 1e6);
		}
	}
	for (m = 0; m < 2; m++) {
		med[m][0] = median(small[m], rounds * PAIRS);
		med[m][1] = median(big[m], rounds * PAIRS_BIG);
	}
	for (k = 0; k < 2; k++)
		printf("   %s R1 %-6s: today / baseline = %.3f (p50 of %d pairs each: %.2f us / %.2f us; target <= 1.02)\n",
		       med[0][k] / med[1][k] <= 1.02 ? "PASS" : "MISS",
		       k ? "64 MiB" : "4 KiB", med[0][k] / med[1][k],
		       rounds * (k ? PAIRS_BIG : PAIRS), med[0][k] * 1e6,
		       med[1][k] * 1e6);
out:
	unload();
	setenv("GPUPOOL_KO", ours, 1);
	free(ours);
}

/* R2 --------------------------------------------------------------------- */

/*
 * Holder A: on each byte from sock, allocates BIG, maps it, marks it idle
 * and says so; when asked, unmaps and frees what is asked and writes the
 * seconds that took (a double) to sock.
 */
static int holder(int sock)
{
	int fd = open_dev();
	struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
			       { .fd = fd, .events = POLLPRI } };
	struct gpupool_asked q;
	uint64_t h = 0, asked[4];
	char *map = NULL, c;
	double t0, t;

	if (fd < 0)
		return 1;
	for (;;) {
		if (poll(p, 2, -1) < 0)
			continue;
		if ((p[1].revents & POLLPRI) && map) {
			t0 = now();
			memset(&q, 0, sizeof(q));
			q.nr = 4;
			q.handles_ptr = (uintptr_t)asked;
			if (!ioctl(fd, GPUPOOL_IOC_ASKED, &q) && q.nr &&
			    asked[0] == h) {
				munmap(map, BIG);
				free_h(fd, h);
				map = NULL;
				t = now() - t0;
				if (write(sock, &t, sizeof(t)) != sizeof(t))
					return 2;
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		if (read(sock, &c, 1) != 1 || c == 'q')
			return 0;
		if (alloc(fd, BIG, 0, &h))
			return 3;
		map = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h);
		if (map == MAP_FAILED)
			return 4;
		memset(map, 1, BIG);
		if (mark_idle(fd, h) || write(sock, "i", 1) != 1)
			return 5;
	}
}

/* B's request: ALLOC + mmap + a write to its first page, seconds. */
static double b_request(int fd)
{
	uint64_t h = 0;
	double t0 = now(), t;
	char *p;

	if (alloc(fd, BIG, 0, &h))
		return -1;
	p = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h);
	if (p == MAP_FAILED)
		return -1;
	p[0] = 1;
	t = now() - t0;
	munmap(p, BIG);
	free_h(fd, h);
	return t;
}

static void bench_pressure(void)
{
	int rounds = env_int("KMOD_BENCH_RECLAIM_ROUNDS", PRESSURE_ROUNDS, 41);
	double tf[41], tp[41], tw[41], ta[41], mf, mp, mw, ma;
	struct gpupool_ask_report rep;
	int sv[2], fd, r, n = 0;
	pid_t pid;
	char c;

	if (unload() || load("pool_size=256M") ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		printf("\nR2. cannot load the module (%s)\n", strerror(errno));
		return;
	}
	printf("\nR2. B's 160 MiB (ALLOC + mmap) in a 256 MiB pool: from a free pool, and while A keeps 160 MiB idle (%d rounds)\n",
	       rounds);
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sv[0]);
		_exit(holder(sv[1]));
	}
	close(sv[1]);
	fd = open_dev();
	for (r = 0; r < rounds && fd >= 0; r++) {
		settle(fd);
		tf[n] = b_request(fd);		/* free pool */
		settle(fd);
		if (write(sv[0], "a", 1) != 1 || read(sv[0], &c, 1) != 1)
			break;
		tp[n] = b_request(fd);		/* A asked */
		memset(&rep, 0, sizeof(rep));
		if (tf[n] < 0 || tp[n] < 0 ||
		    ioctl(fd, GPUPOOL_IOC_ASK_REPORT, &rep) || !rep.given ||
		    read(sv[0], &ta[n], sizeof(ta[n])) != sizeof(ta[n]))
			break;
		tw[n++] = rep.wait_ns / 1e9;
	}
	if (write(sv[0], "q", 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (fd >= 0)
		close(fd);
	unload();
	if (n < rounds) {
		printf("   failed after %d rounds (%s)\n", n, strerror(errno));
		return;
	}
	mf = median(tf, n);
	mp = median(tp, n);
	mw = median(tw, n);
	ma = median(ta, n);
	printf("   from a free pool     %9.2f ms\n", mf * 1e3);
	printf("   A asked and giving   %9.2f ms: %.2fx the free pool's\n",
	       mp * 1e3, mp / mf);
	printf("     of which B's wait for A %9.2f ms (A's munmap + FREE %.2f ms), the rest (zeroing, ALLOC, mmap) %.2f ms\n",
	       mw * 1e3, ma * 1e3, (mp - mw) * 1e3);
}

int main(void)
{
	const char *sections = getenv("KMOD_BENCH_SECTIONS");

	/* Its section is "r": with others named and not it, nothing. */
	if (sections && *sections && !strchr(sections, 'r')) {
		printf("# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0\n");
		return 0;
	}
	if (!getenv("GPUPOOL_KO")) {
		fprintf(stderr, "reclaim_bench: GPUPOOL_KO not set\n");
		return 1;
	}
	printf("reclaim_bench: %ld CPUs\n", sysconf(_SC_NPROCESSORS_ONLN));
	bench_no_pressure();
	bench_pressure();
	printf("# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0\n");
	return 0;
}
