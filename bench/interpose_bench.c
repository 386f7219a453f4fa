// SPDX-License-Identifier: MIT
/*
 * interpose_bench - what the interposer costs: cudaHostAlloc + cudaFreeHost
 * pairs at 4 KiB, 1 MiB and 64 MiB, on 1, 2 and 8 threads, three ways:
 *   direct      straight to the CUDA runtime (here the test double, over
 *               the driver double: an mmap and an munmap per pair, as the
 *               real runtime's pinned allocations are a driver call each)
 *   library     gp_host_alloc + gp_host_free on a libgpupool context
 *               opened as the interposer opens its own
 *   interposed  the same cudaHostAlloc calls under libgpupool-interpose
 * after each thread has held a buffer of the size, so that the pool has
 * the segments the requests need (a cached size).  The interposer's own
 * cost is interposed minus library: its guard, its figures, its cache of
 * a thread's freed buffers (userlib/interpose/cache.c, which takes the
 * pools' lock off a thread's repeated size: it can make the difference
 * negative).  Target: at most 200 ns per pair.
 *
 * Each figure is the median of 5 runs, each a process of its own (this
 * program run again with --run MODE SIZE THREADS PAIRS), ns per pair and
 * thread: the wall time from the threads' start to the last one's end,
 * over the pairs each made.  --quick: fewer pairs and runs (a smoke run).
 * Environment: GPUPOOL_BACKEND (default user: the module is not needed),
 * and the paths bench/interpose.mk gives (IB_* below).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpupool.h>

int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaFreeHost(void *p);

#define IB_TARGET_NS	200.0
#define IB_RUNS		5

enum { DIRECT, LIBRARY, INTERPOSED, NR_MODES };

struct ib_run {
	int mode;
	size_t size;
	long pairs;
	struct gp_ctx *ctx;
	pthread_barrier_t warm, start;
	long failed;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int get(struct ib_run *r, void **p)
{
	return r->mode == LIBRARY ? gp_host_alloc(r->ctx, r->size, 0, p) :
	       cudaHostAlloc(p, r->size, 0);
}

static int put(struct ib_run *r, void *p)
{
	return r->mode == LIBRARY ? gp_host_free(r->ctx, p) : cudaFreeHost(p);
}

/* Each thread holds a buffer at once first, so that the pool has the
 * segments every thread's requests need (a cached size), then starts.
 */
static void *worker(void *arg)
{
	struct ib_run *r = arg;
	long i, bad = 0;
	void *p;

	bad += get(r, &p);
	pthread_barrier_wait(&r->warm);
	bad += put(r, p);
	pthread_barrier_wait(&r->start);
	for (i = 0; i < r->pairs; i++)
		bad += get(r, &p) || put(r, p);
	__atomic_fetch_add(&r->failed, bad, __ATOMIC_RELAXED);
	return NULL;
}

/* One measurement, in this process: ns per pair, or -1. */
static double measure(int mode, size_t size, int threads, long pairs)
{
	struct ib_run r = { .mode = mode, .size = size, .pairs = pairs };
	pthread_t t[64];
	struct gp_options o;
	double t0;
	int i;

	if (mode == LIBRARY) {
		gp_options_init(&o);
		o.flags = GP_OPEN_REQUIRE_CUDA | GP_OPEN_HOST_MAPPED;
		if (gp_open(&o, &r.ctx)) {
			fprintf(stderr, "gp_open: %s\n", gp_last_error(NULL));
			return -1;
		}
	}
	pthread_barrier_init(&r.warm, NULL, (unsigned int)threads);
	pthread_barrier_init(&r.start, NULL, (unsigned int)threads + 1);
	for (i = 0; i < threads; i++) {
		int err = pthread_create(&t[i], NULL, worker, &r);

		/* The others would wait for it at the barriers for ever. */
		if (err) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			_exit(2);
		}
	}
	pthread_barrier_wait(&r.start);
	t0 = now_ns();
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	t0 = now_ns() - t0;
	if (r.ctx)
		gp_close(r.ctx);
	return r.failed ? -1 : t0 / (double)pairs;
}

/* One measurement in a process of its own, with the interposer or not. */
static double run_child(int mode, size_t size, int threads, long pairs)
{
	char arg[4][32], buf[64] = "";
	int fds[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(fds))
		return -1;
	snprintf(arg[0], 32, "%d", mode);
	snprintf(arg[1], 32, "%zu", size);
	snprintf(arg[2], 32, "%d", threads);
	snprintf(arg[3], 32, "%ld", pairs);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		if (mode == INTERPOSED)
			setenv("LD_PRELOAD", IB_INTERPOSER, 1);
		execl("/proc/self/exe", "interpose_bench", "--run", arg[0],
		      arg[1], arg[2], arg[3], (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	waitpid(pid, &st, 0);
	buf[n > 0 ? n : 0] = 0;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? atof(buf) : -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(int mode, size_t size, int threads, long pairs,
			int runs)
{
	double v[IB_RUNS];
	int i;

	for (i = 0; i < runs; i++)
		if ((v[i] = run_child(mode, size, threads, pairs)) < 0)
			return -1;
	qsort(v, (size_t)runs, sizeof(v[0]), cmp_double);
	return v[runs / 2];
}

struct ib_worst {
	double ns;
	char where[64];
};

static void note_worst(struct ib_worst *w, double ns, size_t size, int threads)
{
	if (*w->where && ns <= w->ns)
		return;
	w->ns = ns;
	snprintf(w->where, sizeof(w->where), "%zu bytes, %d threads", size,
		 threads);
}

static const char *size_name(size_t size)
{
	return size == 4096 ? "4 KiB" : size == 1 << 20 ? "1 MiB" : "64 MiB";
}

/* One line of the table; 0, or -1 when a run failed. */
static int report_line(size_t size, int threads, long pairs, int runs,
		       struct ib_worst *w)
{
	double v[NR_MODES];
	int m;

	for (m = 0; m < NR_MODES; m++)
		v[m] = median_of(m, size, threads, pairs / threads, runs);
	if (v[DIRECT] < 0 || v[LIBRARY] < 0 || v[INTERPOSED] < 0) {
		printf("%zu bytes, %d threads: a run failed\n", size, threads);
		return -1;
	}
	printf("%-8s %7d %10.0f %10.0f %11.0f %9.0f %8.2fx\n", size_name(size),
	       threads, v[DIRECT], v[LIBRARY], v[INTERPOSED],
	       v[INTERPOSED] - v[LIBRARY], v[INTERPOSED] / v[DIRECT]);
	note_worst(w, v[INTERPOSED] - v[LIBRARY], size, threads);
	return 0;
}

static void verdict(const char *what, const struct ib_worst *w, int ok)
{
	printf("%s: the interposer's own cost at most %.0f ns per pair on a cached size, %s "
	       "(worst %.0f ns%s%s%s)\n", ok && w->ns <= IB_TARGET_NS ? "PASS" : "MISS",
	       IB_TARGET_NS, what, w->ns, *w->where ? ": " : "", w->where,
	       ok ? "" : "; runs failed");
}

static int report(int quick)
{
	static const size_t sizes[] = { 4096, 1 << 20, 64 << 20 };
	static const int threads[] = { 1, 2, 8 };
	long pairs = quick ? 20000 : 200000, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int runs = quick ? 3 : IB_RUNS, s, t, ok = 1;
	struct ib_worst within = { 0, "" }, beyond = { 0, "" };
	char what[64];

	printf("interpose: cudaHostAlloc + cudaFreeHost pairs, ns per pair and thread, "
	       "median of %d runs (backend %s, %ld CPUs)\n", runs,
	       getenv("GPUPOOL_BACKEND"), cpus);
	printf("%-8s %7s %10s %10s %11s %9s %9s\n", "size", "threads",
	       "direct", "library", "interposed", "own cost", "vs direct");
	for (s = 0; s < 3; s++)
		for (t = 0; t < 3; t++)
			if (report_line(sizes[s], threads[t], pairs, runs,
					threads[t] <= cpus ? &within : &beyond))
				ok = 0;
	snprintf(what, sizeof(what), "threads up to the CPUs (%ld)", cpus);
	verdict(what, &within, ok);
	if (beyond.where[0])
		verdict("more threads than CPUs", &beyond, ok);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "--run")) {
		double ns = measure(atoi(argv[2]), strtoul(argv[3], NULL, 10),
				    atoi(argv[4]), atol(argv[5]));

		printf("%.1f\n", ns);
		return ns < 0;
	}
	setenv("GPUPOOL_BACKEND", getenv("GPUPOOL_BACKEND") ?: "user", 1);
	setenv("GPUPOOL_CUDART", IB_CUDART, 0);
	setenv("LD_LIBRARY_PATH", IB_DRIVER_DIR, 1);
	return report(argc > 1 && !strcmp(argv[1], "--quick"));
}
