// SPDX-License-Identifier: MIT
/*
 * loader - a data loader on gpupool: N worker processes produce batches
 * straight into pinned pool chunks (examples/batch_ring.c), the consumer
 * takes each in place: with CUDA, cudaMemcpyAsync to the GPU from that
 * memory; always, a checksum that proves the bytes arrived.
 *
 *   loader [--workers N] [--batches N] [--batch-size BYTES]
 *          [--data-dir DIR | --file FILE] [--quiet]
 *
 * Batches are synthetic images (uint8 HWC, labels in the first 4 KiB) made
 * from their index, or with --data-dir the directory's files packed in name
 * order (read with pread, then written into the chunk), or with --file the
 * bytes of one file of records, batch i from i * batch-size on (wrapping),
 * read with gp_read straight into the pinned chunk: O_DIRECT, io_uring fixed
 * buffers where the kernel takes them, no page cache.  Prints progress on a terminal, then `batches:`, `throughput:` and
 * `checksum:` lines, and `gpupoolctl stat` on the kernel backend ($GPUPOOL_CTL,
 * else the build tree's, else PATH).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch_ring.h"

#define BASE_LEN	(1u << 20)
#define LABEL_BYTES	4096u

/* Synthetic data ----------------------------------------------------------- */

static unsigned char *pixels;	/* 1 MiB, made before the workers fork */

static void make_pixels(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int i;

	pixels = malloc(BASE_LEN);
	if (!pixels) {
		perror("loader");
		exit(1);
	}
	for (i = 0; i < BASE_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pixels[i] = (unsigned char)x;
	}
}

static uint64_t synthetic(uint64_t index, void *dst, size_t len, void *arg)
{
	unsigned char *d = dst;
	size_t off, rot = (size_t)(index * 7919 % BASE_LEN), k;
	uint32_t *labels = dst;

	(void)arg;
	for (off = 0; off + 4 <= len && off < LABEL_BYTES; off += 4)
		labels[off / 4] = (uint32_t)((index * 1024 + off / 4) % 1000);
	while (off < len) {	/* the pixel block, rotated per batch */
		k = BASE_LEN - rot < len - off ? BASE_LEN - rot : len - off;
		memcpy(d + off, pixels + rot, k);
		off += k;
		rot = 0;
	}
	return br_checksum(dst, len);
}

/* Batches from files -------------------------------------------------------- */

struct files {
	char **path;
	off_t *size;
	int n;
	uint64_t total;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_dir(struct files *f, const char *dir)
{
	struct dirent *e;
	struct stat st;
	char p[PATH_MAX];
	DIR *d = opendir(dir);
	int i;

	if (!d) {
		fprintf(stderr, "loader: %s: %s\n", dir, strerror(errno));
		exit(2);
	}
	while ((e = readdir(d))) {
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode) || !st.st_size)
			continue;
		f->path = realloc(f->path, sizeof(*f->path) * (size_t)(f->n + 1));
		if (!f->path || !(f->path[f->n] = strdup(p))) {
			perror("loader");
			exit(1);
		}
		f->n++;
	}
	closedir(d);
	if (!f->n) {
		fprintf(stderr, "loader: no non-empty files in %s\n", dir);
		exit(2);
	}
	qsort(f->path, (size_t)f->n, sizeof(*f->path), by_name);
	f->size = calloc((size_t)f->n, sizeof(*f->size));
	for (i = 0; f->size && i < f->n; i++) {
		if (stat(f->path[i], &st)) {
			perror(f->path[i]);
			exit(2);
		}
		f->size[i] = st.st_size;
		f->total += (uint64_t)st.st_size;
	}
}

/* Batch i: the byte stream of all files (wrapping) from i * len on. */
static uint64_t from_files(uint64_t index, void *dst, size_t len, void *arg)
{
	struct files *f = arg;
	uint64_t pos = index * len % f->total;
	size_t off = 0;
	int i = 0;

	while (pos >= (uint64_t)f->size[i])
		pos -= (uint64_t)f->size[i++];
	while (off < len) {
		int fd = open(f->path[i], O_RDONLY | O_CLOEXEC);
		size_t want = (size_t)f->size[i] - pos;
		ssize_t got;

		if (want > len - off)
			want = len - off;
		got = fd < 0 ? -1 : pread(fd, (char *)dst + off, want, (off_t)pos);
		if (fd >= 0)
			close(fd);
		if (got <= 0) {
			fprintf(stderr, "loader: reading %s failed\n", f->path[i]);
			_exit(3);
		}
		off += (size_t)got;
		pos = 0;
		i = (i + 1) % f->n;
	}
	return br_checksum(dst, len);
}

/* Batch i: FILE from i * len on (wrapping), with gp_read into the chunk. */
static uint64_t from_file(uint64_t index, void *dst, size_t len, void *arg)
{
	static int fd = -1;	/* per worker process */
	const char *path = arg;
	struct gp_ctx *ctx = br_worker_ctx();
	struct gp_read_stats st;
	uint64_t size, pos;
	size_t off = 0, done;
	struct stat sb;

	if (fd < 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "loader: %s: %s\n", path, strerror(errno));
		_exit(3);
	}
	if (fstat(fd, &sb) || !sb.st_size) {
		fprintf(stderr, "loader: %s is empty\n", path);
		_exit(3);
	}
	size = (uint64_t)sb.st_size;
	pos = index * len % size;
	while (off < len) {
		size_t want = len - off < size - pos ? len - off : (size_t)(size - pos);

		if (gp_read(ctx, fd, pos, (char *)dst + off, want, 0, &done) || !done) {
			fprintf(stderr, "loader: gp_read %s: %s\n", path,
				gp_last_error(ctx));
			_exit(3);
		}
		off += done;
		pos = (pos + done) % size;
	}
	if (index == 0 && !gp_read_stats(ctx, &st))
		fprintf(stderr, "loader: batch 0 read with gp_read: io_uring fixed "
			"buffers %.1f MiB, O_DIRECT %.1f MiB, bounce %.1f MiB, "
			"page cache %.1f MiB\n", st.fixed_bytes / 1048576.0,
			st.direct_bytes / 1048576.0, st.bounce_bytes / 1048576.0,
			st.buffered_bytes / 1048576.0);
	return br_checksum(dst, len);
}

/* CUDA, when libgpupool registered the memory ------------------------------ */

struct cuda {
	int (*malloc_)(void **, size_t);
	int (*free_)(void *);
	int (*memcpy_async)(void *, const void *, size_t, int, void *);
	int (*sync)(void *);
	void *dev;
};

/* The runtime libgpupool loaded (gp_info().cudart), for the copies. */
static int cuda_open(struct cuda *c, const char *cudart, size_t bytes)
{
	void *h = dlopen(cudart, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return -1;
	c->malloc_ = (int (*)(void **, size_t))dlsym(h, "cudaMalloc");
	c->free_ = (int (*)(void *))dlsym(h, "cudaFree");
	c->memcpy_async = (int (*)(void *, const void *, size_t, int, void *))
		dlsym(h, "cudaMemcpyAsync");
	c->sync = (int (*)(void *))dlsym(h, "cudaStreamSynchronize");
	if (!c->malloc_ || !c->free_ || !c->memcpy_async || !c->sync ||
	    c->malloc_(&c->dev, bytes))
		return -1;
	return 0;
}

/* Main ------------------------------------------------------------------------ */

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G': case 'g': v *= 1024; /* fall through */
	case 'M': case 'm': v *= 1024; /* fall through */
	case 'K': case 'k': v *= 1024; end++; break;
	}
	if (*end || end == s || v < 1 || v > 1e15) {
		fprintf(stderr, "loader: '%s' is not a size\n", s);
		exit(2);
	}
	return (size_t)v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_ctl_stat(void)
{
	char path[PATH_MAX + 32] = "gpupoolctl", cmd[PATH_MAX + 64], self[PATH_MAX];
	const char *env = getenv("GPUPOOL_CTL");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (env) {
		snprintf(path, sizeof(path), "%s", env);
	} else if (n > 0) {	/* <O>/examples/loader -> <O>/tools/gpupoolctl */
		self[n] = 0;
		*strrchr(self, '/') = 0;
		snprintf(path, sizeof(path), "%s/../tools/gpupoolctl", self);
		if (access(path, X_OK))
			snprintf(path, sizeof(path), "gpupoolctl");
	}
	snprintf(cmd, sizeof(cmd), "'%s' stat", path);
	fflush(stdout);
	if (system(cmd))
		fprintf(stderr, "loader: `%s` failed\n", cmd);
}

int main(int argc, char **argv)
{
	struct br_opts o = { .workers = 2, .batches = 64,
			     .batch_bytes = 16u << 20, .produce = synthetic };
	struct files files = { 0 };
	struct cuda cuda = { 0 };
	struct gp_ctx *ctx;
	struct gp_info info;
	struct br_batch b;
	struct br_ring *r;
	uint64_t bad = 0, k = 0;
	int quiet = 0, progress, i, ret;
	double t0, el;
	char err[256];

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		}
		if (!v || strncmp(a, "--", 2)) {
			fprintf(stderr, "usage: loader [--workers N] [--batches N] [--batch-size BYTES] [--data-dir DIR | --file FILE] [--quiet]\n");
			return 2;
		}
		i++;
		if (!strcmp(a, "--workers"))
			o.workers = atoi(v);
		else if (!strcmp(a, "--batches"))
			o.batches = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--batch-size"))
			o.batch_bytes = parse_size(v);
		else if (!strcmp(a, "--data-dir")) {
			load_dir(&files, v);
			o.produce = from_files;
			o.arg = &files;
		} else if (!strcmp(a, "--file")) {
			o.produce = from_file;
			o.arg = (void *)v;
		} else {
			fprintf(stderr, "loader: unknown option %s\n", a);
			return 2;
		}
	}
	if (o.workers < 1 || o.workers > 64 || !o.batches) {
		fprintf(stderr, "loader: --workers must be 1..64 and --batches positive\n");
		return 2;
	}
	if (o.produce == synthetic)
		make_pixels();
	if (gp_open(NULL, &ctx)) {
		fprintf(stderr, "loader: gp_open: %s\n", gp_last_error(NULL));
		return 1;
	}
	gp_info(ctx, &info);
	if (info.cuda_state == GP_CUDA_REGISTERED &&
	    cuda_open(&cuda, info.cudart, o.batch_bytes)) {
		fprintf(stderr, "loader: CUDA is registered but %s gave no device buffer\n",
			info.cudart);
		gp_close(ctx);
		return 1;
	}
	printf("loader: %s backend, CUDA %s, %d workers, %llu batches of %zu bytes\n",
	       info.backend_name,
	       cuda.dev ? "registered: cudaMemcpyAsync to the GPU, and checksums" :
	       "off (checksums instead of copies to a GPU)",
	       o.workers, (unsigned long long)o.batches, o.batch_bytes);
	fflush(stdout);
	r = br_start(ctx, &o, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "loader: %s\n", err);
		gp_close(ctx);
		return 1;
	}
	progress = !quiet && isatty(STDOUT_FILENO);
	t0 = now();
	while ((ret = br_next(r, &b, err, sizeof(err))) == 0) {
		if (cuda.dev &&
		    (cuda.memcpy_async(cuda.dev, b.data, b.len, 1 /* H2D */, NULL) ||
		     cuda.sync(NULL))) {
			fprintf(stderr, "loader: cudaMemcpyAsync failed\n");
			bad++;
		}
		if (br_checksum(b.data, b.len) != b.sum) {
			fprintf(stderr, "loader: batch %llu: checksum mismatch\n",
				(unsigned long long)b.index);
			bad++;
		}
		br_release(r, &b);
		if (progress && (++k % 4 == 0 || k == o.batches)) {
			el = now() - t0;
			printf("\r  %llu/%llu batches, %.1f batches/s, %.2f GB/s ",
			       (unsigned long long)k, (unsigned long long)o.batches,
			       k / el, k * (double)o.batch_bytes / el / 1e9);
			fflush(stdout);
		}
	}
	el = now() - t0;
	if (progress)
		printf("\n");
	if (ret < 0) {
		fprintf(stderr, "loader: %s\n", err);
		bad++;
	}
	if (br_stop(r)) {
		fprintf(stderr, "loader: a worker failed\n");
		bad++;
	}
	printf("batches: %llu\n", (unsigned long long)o.batches);
	printf("throughput: %.1f batches/s, %.2f GB/s\n", o.batches / el,
	       o.batches * (double)o.batch_bytes / el / 1e9);
	if (bad)
		printf("checksum: %llu BAD\n", (unsigned long long)bad);
	else
		printf("checksum: ok\n");
	if (cuda.dev)
		cuda.free_(cuda.dev);
	/* After gp_close, so that the pool shows what the loader gave back
	 * (everything), not this process still holding the device open.
	 */
	gp_close(ctx);
	if (info.backend == GP_BACKEND_KERNEL)
		run_ctl_stat();
	free(pixels);
	for (i = 0; i < files.n; i++)
		free(files.path[i]);
	free(files.path);
	free(files.size);
	return bad ? 1 : 0;
}
