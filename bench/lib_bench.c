// SPDX-License-Identifier: MIT
/*
 * lib_bench.c - libgpupool's speed, printed, never asserted.
 *
 *   lib_bench [trace.csv ...]
 *
 * 1. Host alloc+free of small (<= 64 KiB) and large (>= 64 MiB) buffers
 *    through libgpupool (whatever backend gp_open picks: user here, kernel
 *    where gpupool.ko is loaded), against malloc+mlock and against
 *    mmap(MAP_POPULATE | MAP_LOCKED).  libgpupool is measured warm (served
 *    from its cache: the steady state of a data loader) and cold (trimmed
 *    after every free, so every allocation maps, pins and registers).
 * 2. Device-pool alloc+free replaying each trace, through the CUDA runtime
 *    named by GPUPOOL_CUDART (the test double measures the allocator's own
 *    overhead: its cudaMalloc is an mmap that touches nothing).
 * 3. With a real GPU (the runtime reports a device and is not the double):
 *    host-to-device copy bandwidth from a gpupool buffer, from cudaHostAlloc
 *    memory and from pageable malloc memory.
 *
 * Every figure is the median over repeated batches; ratios are against
 * libgpupool.  Targets: a cached small host allocation under 100 ns; a
 * cached large one independent of its size.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <gpupool.h>

#include "trace.h"

#define BATCHES 11

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

enum method { M_GP_WARM, M_GP_COLD, M_MALLOC_MLOCK, M_MMAP_LOCKED, M_NR };
static const char *const mname[M_NR] = {
	"gpupool (cached)", "gpupool (cold)", "malloc+mlock", "mmap(POPULATE|LOCKED)",
};

static struct gp_ctx *ctx;

/* ns per alloc+free pair: the median of `batches` batches of n pairs. */
static double run(enum method m, size_t size, int n, int batches)
{
	double t[BATCHES];
	int b, i;
	void *p;

	for (b = 0; b < batches; b++) {
		double t0 = now_ns();

		for (i = 0; i < n; i++) {
			switch (m) {
			case M_GP_WARM:
			case M_GP_COLD:
				if (gp_host_alloc(ctx, size, 0, &p)) {
					fprintf(stderr, "gp_host_alloc: %s\n", gp_last_error(ctx));
					exit(1);
				}
				*(volatile char *)p = 1;
				gp_host_free(ctx, p);
				if (m == M_GP_COLD)
					gp_host_trim(ctx, NULL);
				break;
			case M_MALLOC_MLOCK:
				p = malloc(size);
				if (!p || mlock(p, size)) {
					perror("malloc+mlock");
					exit(1);
				}
				*(volatile char *)p = 1;
				munlock(p, size);
				free(p);
				break;
			default:
				p = mmap(NULL, size, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE |
					 MAP_LOCKED, -1, 0);
				if (p == MAP_FAILED) {
					perror("mmap");
					exit(1);
				}
				*(volatile char *)p = 1;
				munmap(p, size);
				break;
			}
		}
		t[b] = (now_ns() - t0) / n;
	}
	return median(t, batches);
}

static void host_bench(void)
{
	static const size_t sizes[] = { 64, 4096, 65536, 64ul << 20, 256ul << 20,
					1ul << 30 };
	struct gp_info info;
	unsigned int s;
	int m;

	gp_info(ctx, &info);
	printf("== host alloc+free, %s backend (CUDA %s), median ns per pair ==\n",
	       info.backend_name, info.cuda_state ? "registered" : "off");
	printf("%12s", "size");
	for (m = 0; m < M_NR; m++)
		printf(" %22s", mname[m]);
	printf("   ratios vs cached\n");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		int small = size <= 65536;
		double r[M_NR];
		void *p;

		/* Warm the cache once. */
		gp_host_alloc(ctx, size, 0, &p);
		gp_host_free(ctx, p);
		for (m = 0; m < M_NR; m++) {
			int n = small ? (m == M_GP_WARM ? 200000 : 2000) :
				(m == M_GP_WARM ? 20000 : 1);

			r[m] = run((enum method)m, size, n,
				   small || m == M_GP_WARM ? BATCHES : 5);
			if (m == M_GP_COLD) {	/* leave it warm for the next */
				gp_host_alloc(ctx, size, 0, &p);
				gp_host_free(ctx, p);
			}
		}
		printf("%12zu", size);
		for (m = 0; m < M_NR; m++)
			printf(" %22.0f", r[m]);
		printf("   cold x%.0f, mlock x%.0f, mmap x%.0f\n", r[1] / r[0],
		       r[2] / r[0], r[3] / r[0]);
		gp_host_trim(ctx, NULL);
	}
}

/*
 * The pair above times an allocation and a free together.  Here each is
 * timed alone: batches of SPLIT_N allocations (all live at once, from
 * segments a first untimed round mapped), then their SPLIT_N frees.
 */
#define SPLIT_N 128

static void host_split_bench(void)
{
	static const size_t sizes[] = { 64, 4096, 65536 };
	double ta[BATCHES], tf[BATCHES];
	void *p[SPLIT_N];
	unsigned int s;
	int b, i;

	printf("\n== cached small host buffers: allocation and free timed apart, median ns each (batches of %d live) ==\n",
	       SPLIT_N);
	printf("%12s %12s %12s\n", "size", "alloc", "free");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (b = -1; b < BATCHES; b++) {
			double t0 = now_ns(), t1;

			for (i = 0; i < SPLIT_N; i++)
				if (gp_host_alloc(ctx, sizes[s], 0, &p[i])) {
					fprintf(stderr, "gp_host_alloc: %s\n",
						gp_last_error(ctx));
					exit(1);
				}
			t1 = now_ns();
			for (i = 0; i < SPLIT_N; i++)
				gp_host_free(ctx, p[i]);
			if (b >= 0) {	/* round -1 maps the segments */
				ta[b] = (t1 - t0) / SPLIT_N;
				tf[b] = (now_ns() - t1) / SPLIT_N;
			}
		}
		printf("%12zu %12.0f %12.0f\n", sizes[s], median(ta, BATCHES),
		       median(tf, BATCHES));
		gp_host_trim(ctx, NULL);
	}
}

static void trace_bench(const char *path)
{
	struct gp_dev_stats st;
	char err[256];
	struct trace t;
	double ns[BATCHES];
	void **ptr;
	int b, reps;
	uint32_t i;

	if (trace_load(path, &t, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	ptr = calloc(t.nr_ids, sizeof(*ptr));
	reps = (int)(200000 / (t.nr_ops + 1)) + 1;
	for (b = 0; b < BATCHES; b++) {
		double t0 = now_ns();
		int r;

		for (r = 0; r < reps; r++) {
			for (i = 0; i < t.nr_ops; i++) {
				uint32_t id = t.ops[i] & TRACE_ID_MASK;

				if (t.ops[i] & TRACE_FREE) {
					gp_dev_free(ctx, ptr[id], NULL);
					ptr[id] = NULL;
				} else if (gp_dev_alloc(ctx, 0, t.size[id], NULL, &ptr[id])) {
					fprintf(stderr, "%s: %s\n", t.name, gp_last_error(ctx));
					goto out;
				}
			}
			for (i = 0; i < t.nr_ids; i++)
				if (ptr[i]) {
					gp_dev_free(ctx, ptr[i], NULL);
					ptr[i] = NULL;
				}
		}
		ns[b] = (now_ns() - t0) / ((double)reps * (t.nr_ops + t.nr_live_at_end));
	}
	gp_dev_stats(ctx, 0, &st);
	printf("%-24s %8u ops %8.1f ns/op   peak reserved %7.1f MiB for %7.1f MiB live"
	       " (x%.3f), %llu segments\n", t.name, t.nr_ops, median(ns, BATCHES),
	       st.peak_reserved / 1048576.0, t.peak_live_requested / 1048576.0,
	       (double)st.peak_reserved / (double)(t.peak_live_requested ?
						   t.peak_live_requested : 1),
	       (unsigned long long)st.segments);
out:
	free(ptr);
	trace_free(&t);
}

/* Host-to-device bandwidth on a real GPU. */
static void bandwidth_bench(void *dl)
{
	int (*hostalloc)(void **, size_t, unsigned int);
	int (*freehost)(void *);
	int (*dmalloc)(void **, size_t);
	int (*dfree)(void *);
	int (*memcpy_)(void *, const void *, size_t, int);
	int (*devsync)(void);
	const size_t size = 256ul << 20;
	const char *names[3] = { "gpupool chunk", "cudaHostAlloc", "pageable malloc" };
	void *src[3] = { NULL, NULL, NULL }, *dst;
	double gbs[BATCHES];
	int k, b;

	*(void **)&hostalloc = dlsym(dl, "cudaHostAlloc");
	*(void **)&freehost = dlsym(dl, "cudaFreeHost");
	*(void **)&dmalloc = dlsym(dl, "cudaMalloc");
	*(void **)&dfree = dlsym(dl, "cudaFree");
	*(void **)&memcpy_ = dlsym(dl, "cudaMemcpy");
	*(void **)&devsync = dlsym(dl, "cudaDeviceSynchronize");
	if (!hostalloc || !freehost || !dmalloc || !dfree || !memcpy_ || !devsync ||
	    dmalloc(&dst, size))
		return;
	if (gp_host_alloc(ctx, size, 0, &src[0]) || hostalloc(&src[1], size, 0) ||
	    !(src[2] = malloc(size)))
		goto out;
	printf("== host-to-device copies of %zu MiB, median GB/s ==\n", size >> 20);
	for (k = 0; k < 3; k++) {
		memset(src[k], k, size);
		for (b = 0; b < BATCHES; b++) {
			double t0 = now_ns();

			memcpy_(dst, src[k], size, 1 /* cudaMemcpyHostToDevice */);
			devsync();
			gbs[b] = (double)size / (now_ns() - t0);
		}
		printf("%-16s %6.1f GB/s\n", names[k], median(gbs, BATCHES));
	}
out:
	if (src[0])
		gp_host_free(ctx, src[0]);
	if (src[1])
		freehost(src[1]);
	free(src[2]);
	dfree(dst);
}

int main(int argc, char **argv)
{
	const char *rt = getenv("GPUPOOL_CUDART");
	struct gp_options o;
	struct gp_info info;
	void *dl = NULL;
	int i;

	/* Host figures without CUDA registration (none is possible here). */
	gp_options_init(&o);
	o.flags = GP_OPEN_NO_CUDA;
	if (gp_open(&o, &ctx)) {
		fprintf(stderr, "gp_open: %s\n", gp_last_error(NULL));
		return 1;
	}
	host_bench();
	host_split_bench();
	gp_close(ctx);

	if (argc < 2)
		return 0;
	if (rt && *rt) {
		void (*set_mem)(size_t);

		dl = dlopen(rt, RTLD_NOW | RTLD_LOCAL);
		*(void **)&set_mem = dl ? dlsym(dl, "cdd_set_mem_total") : NULL;
		if (set_mem)
			set_mem(1ul << 40);	/* the double: room for any trace */
	}
	if (gp_open(NULL, &ctx)) {
		fprintf(stderr, "gp_open: %s\n", gp_last_error(NULL));
		return 1;
	}
	gp_info(ctx, &info);
	if (info.cuda_state != GP_CUDA_REGISTERED) {
		printf("== device pool: skipped, CUDA not usable (%s) ==\n", info.why);
		gp_close(ctx);
		return 0;
	}
	printf("== device pool alloc+free replaying traces through %s ==\n", info.cudart);
	for (i = 1; i < argc; i++) {
		trace_bench(argv[i]);
		gp_dev_trim(ctx, -1, NULL);
		gp_close(ctx);
		if (gp_open(NULL, &ctx))
			return 1;
	}
	if (dl && !dlsym(dl, "cdd_reset"))
		bandwidth_bench(dl);
	gp_close(ctx);
	return 0;
}
