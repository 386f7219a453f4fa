// SPDX-License-Identifier: MIT
/*
 * io_bench - a file of records into pinned chunks, four ways, cold cache:
 *
 *   (a) buffered pread into ordinary memory, then memcpy into a pinned chunk
 *       (today's PyTorch path: read / np.fromfile -> tensor -> pin);
 *   (b) buffered pread straight into the chunk;
 *   (c) gp_read into the chunk, on its best path;
 *   fio --direct=1 --ioengine=io_uring on the same file, block size and
 *   number of jobs, in the same run: the reference from outside.
 *
 * 4 workers (threads; fio: jobs), 16 MiB batches, each worker reading every
 * 4th batch (fio: each job a quarter of the file, the same bytes in all).
 * Cold cache: the file's pages are dropped (POSIX_FADV_DONTNEED) before each
 * case, and /proc/sys/vm/drop_caches is written too with IO_BENCH_DROP=1
 * where permitted.  Figures: GB/s, CPU seconds per GB (user + system of the
 * process, fio's through RUSAGE_CHILDREN), and page-cache growth: the
 * file's pages resident afterwards (mincore), as a share of the bytes read.
 *
 * Usage: io_bench [MiB] [DIR]   (default 2048 MiB, capped to a quarter of
 * the free space in DIR and to 4096; DIR default: the current directory).
 * The file is kept (DIR/gpupool-io-bench.dat) and reused when its size
 * matches.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpupool.h>

#define WORKERS	4
#define BATCH	(16ull << 20)

enum mode { MODE_COPY, MODE_BUFFERED, MODE_GPREAD };

static const char *mode_name[] = {
	"(a) pread + copy to chunk",
	"(b) pread into chunk",
	"(c) gp_read into chunk",
};

struct result {
	double gbps, cpu_per_gb, cache_pct;
	int ok;
};

static struct gp_ctx *ctx;
static int file_fd;
static uint64_t file_size;
static const char *file_path;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_of(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void drop_cache(void)
{
	const char *d = getenv("IO_BENCH_DROP");
	int fd;

	fdatasync(file_fd);
	posix_fadvise(file_fd, 0, 0, POSIX_FADV_DONTNEED);
	if (d && !strcmp(d, "1")) {
		fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "1", 1) != 1)
				fprintf(stderr, "io_bench: drop_caches: %s\n", strerror(errno));
			close(fd);
		}
	}
}

/* Pages of the file in the page cache, as a share of its size. */
static double cached_pct(void)
{
	size_t pages = (file_size + 4095) / 4096, i, n = 0;
	unsigned char *v = malloc(pages);
	void *m = mmap(NULL, file_size, PROT_READ, MAP_SHARED, file_fd, 0);

	if (!v || m == MAP_FAILED || mincore(m, file_size, v)) {
		free(v);
		if (m != MAP_FAILED)
			munmap(m, file_size);
		return -1;
	}
	for (i = 0; i < pages; i++)
		n += v[i] & 1;
	munmap(m, file_size);
	free(v);
	return 100.0 * (double)n / (double)pages;
}

struct worker {
	int id;
	enum mode mode;
	int fail;
	pthread_t th;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t nbatch = file_size / BATCH, b;
	char *chunk = NULL, *tmp = NULL;
	size_t done;
	ssize_t n;

	if (gp_host_alloc(ctx, BATCH, 0, (void **)&chunk)) {
		fprintf(stderr, "io_bench: %s\n", gp_last_error(ctx));
		w->fail = 1;
		return NULL;
	}
	if (w->mode == MODE_COPY && !(tmp = malloc(BATCH))) {
		w->fail = 1;
		goto out;
	}
	for (b = (uint64_t)w->id; b < nbatch; b += WORKERS) {
		uint64_t off = b * BATCH;

		switch (w->mode) {
		case MODE_COPY:
			n = pread(file_fd, tmp, BATCH, (off_t)off);
			if (n != (ssize_t)BATCH)
				goto bad;
			memcpy(chunk, tmp, BATCH);
			break;
		case MODE_BUFFERED:
			n = pread(file_fd, chunk, BATCH, (off_t)off);
			if (n != (ssize_t)BATCH)
				goto bad;
			break;
		case MODE_GPREAD:
			if (gp_read(ctx, file_fd, off, chunk, BATCH, 0, &done) ||
			    done != BATCH) {
				fprintf(stderr, "io_bench: gp_read: %s\n",
					gp_last_error(ctx));
				goto bad;
			}
			break;
		}
		/* Each batch starts with its number: the right bytes came. */
		if (*(uint64_t *)chunk != b)
			goto bad;
	}
	goto out;
bad:
	w->fail = 1;
out:
	free(tmp);
	gp_host_free(ctx, chunk);
	return NULL;
}

static struct result run_mode(enum mode m)
{
	struct worker w[WORKERS];
	struct result r = { 0 };
	double t0, c0, t, c;
	uint64_t bytes = file_size / BATCH * BATCH;
	int i;

	drop_cache();
	t0 = now();
	c0 = cpu_of(RUSAGE_SELF);
	for (i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ .id = i, .mode = m };
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	r.ok = 1;
	for (i = 0; i < WORKERS; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].fail)
			r.ok = 0;
	}
	t = now() - t0;
	c = cpu_of(RUSAGE_SELF) - c0;
	r.gbps = bytes / t / 1e9;
	r.cpu_per_gb = c / (bytes / 1e9);
	r.cache_pct = cached_pct();
	return r;
}

/* fio, same file, bs and jobs: read its bandwidth from the JSON. */
static struct result run_fio(void)
{
	struct result r = { 0 };
	uint64_t quarter = file_size / BATCH / WORKERS * BATCH;
	char cmd[1024], out[] = "/tmp/gpupool-io-bench-fio-XXXXXX";
	char *buf = NULL, *p;
	double c0, c;
	size_t len = 0;
	FILE *f;
	int fd, st;

	fd = mkstemp(out);
	if (fd < 0)
		return r;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "fio --name=io --filename='%s' --readonly --rw=read --bs=16M "
		 "--direct=1 --ioengine=io_uring --iodepth=1 --numjobs=%d "
		 "--size=%" PRIu64 " --offset_increment=%" PRIu64 " "
		 "--thread --group_reporting --output-format=json --output='%s' "
		 ">/dev/null 2>&1", file_path, WORKERS, quarter, quarter, out);
	drop_cache();
	c0 = cpu_of(RUSAGE_CHILDREN);
	st = system(cmd);
	c = cpu_of(RUSAGE_CHILDREN) - c0;
	f = fopen(out, "r");
	if (f) {
		buf = calloc(1, 1 << 20);
		if (buf)
			len = fread(buf, 1, (1 << 20) - 1, f);
		fclose(f);
	}
	unlink(out);
	if (st || !buf || !len) {
		fprintf(stderr, "io_bench: fio failed (status %d): is fio installed?\n", st);
		free(buf);
		return r;
	}
	p = strstr(buf, "\"read\"");
	p = p ? strstr(p, "\"bw_bytes\"") : NULL;
	if (p) {
		double bw = strtod(strchr(p, ':') + 1, NULL);

		r.gbps = bw / 1e9;
		r.cpu_per_gb = c / (quarter * WORKERS / 1e9);
		r.cache_pct = cached_pct();
		r.ok = bw > 0;
	}
	free(buf);
	return r;
}

static int make_file(const char *dir, uint64_t mib)
{
	static char path[4096];
	struct stat st;
	char *blk;
	uint64_t b;
	int fd;

	snprintf(path, sizeof(path), "%s/gpupool-io-bench.dat", dir);
	file_path = path;
	file_size = mib << 20;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || fstat(fd, &st))
		return -1;
	if ((uint64_t)st.st_size == file_size) {
		file_fd = fd;
		return 0;
	}
	if (ftruncate(fd, 0))
		return -1;
	blk = malloc(BATCH);
	if (!blk)
		return -1;
	for (b = 0; b < file_size / BATCH; b++) {
		size_t i;

		for (i = 0; i < BATCH / 8; i++)
			((uint64_t *)blk)[i] = b * 0x9e3779b97f4a7c15ull + i;
		*(uint64_t *)blk = b;
		if (pwrite(fd, blk, BATCH, (off_t)(b * BATCH)) != (ssize_t)BATCH) {
			free(blk);
			return -1;
		}
	}
	free(blk);
	fsync(fd);
	file_fd = fd;
	return 0;
}

static const char *mark(int pass)
{
	return pass ? "PASS" : "MISS";
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 2048;
	const char *dir = argc > 2 ? argv[2] : ".";
	struct result r[3], fio;
	struct gp_read_stats rs;
	struct gp_info info;
	struct statvfs vfs;
	uint64_t cap;
	int i, pass = 0, total = 0;

	if (!statvfs(dir, &vfs)) {
		cap = (uint64_t)vfs.f_bavail * vfs.f_frsize / 4 >> 20;
		if (mib > cap) {
			printf("io_bench: %" PRIu64 " MiB capped to %" PRIu64
			       " MiB (a quarter of the free space in %s)\n", mib, cap, dir);
			mib = cap;
		}
	}
	if (mib > 4096)
		mib = 4096;
	mib -= mib % 64;
	if (mib < 64) {
		fprintf(stderr, "io_bench: not enough room for the file in %s\n", dir);
		return 1;
	}
	if (make_file(dir, mib)) {
		fprintf(stderr, "io_bench: cannot write %s: %s\n", file_path, strerror(errno));
		return 1;
	}
	if (gp_open(NULL, &ctx)) {
		fprintf(stderr, "io_bench: %s\n", gp_last_error(NULL));
		return 1;
	}
	printf("file %s: %" PRIu64 " MiB, %d workers, %llu MiB batches; cold cache: "
	       "POSIX_FADV_DONTNEED on the file before each case%s\n",
	       file_path, mib, WORKERS, BATCH >> 20,
	       getenv("IO_BENCH_DROP") ? " + drop_caches (IO_BENCH_DROP=1)" :
	       " (drop_caches not written: IO_BENCH_DROP=1 to)");
	for (i = 0; i < 3; i++)
		r[i] = run_mode((enum mode)i);
	fio = run_fio();
	gp_read_stats(ctx, &rs);
	gp_info(ctx, &info);

	printf("\n%-30s %8s %10s %14s\n", "case", "GB/s", "CPU s/GB", "page cache %");
	for (i = 0; i < 3; i++)
		printf("%-30s %8.2f %10.3f %14.1f%s\n", mode_name[i], r[i].gbps,
		       r[i].cpu_per_gb, r[i].cache_pct, r[i].ok ? "" : "  (FAILED)");
	printf("%-30s %8.2f %10.3f %14.1f%s\n", "fio direct io_uring", fio.gbps,
	       fio.cpu_per_gb, fio.cache_pct, fio.ok ? "" : "  (did not run)");
	printf("\ngp_read paths: fixed %.1f MiB, direct %.1f MiB, bounce %.1f MiB, "
	       "buffered %.1f MiB; backend %s, io_uring fixed buffers: %s\n",
	       rs.fixed_bytes / 1048576.0, rs.direct_bytes / 1048576.0,
	       rs.bounce_bytes / 1048576.0, rs.buffered_bytes / 1048576.0,
	       info.backend_name,
	       info.io_fixed == GP_IO_FIXED_OK ? "taken" :
	       info.io_fixed == GP_IO_FIXED_REFUSED ? "refused by the kernel" :
	       info.io_fixed == GP_IO_FIXED_NO_RING ? "no io_uring" : "unknown");

	printf("\ntargets:\n");
#define TARGET(cond, fmt, ...) do {					\
		int _p = (cond);					\
		total++;						\
		pass += _p;						\
		printf("  %s  " fmt "\n", mark(_p), __VA_ARGS__);	\
	} while (0)
	TARGET(r[2].ok && r[2].gbps >= 1.5 * r[0].gbps,
	       "(c) >= 1.5x (a) cold: %.2fx", r[0].gbps > 0 ? r[2].gbps / r[0].gbps : 0);
	TARGET(fio.ok && r[2].gbps >= 0.9 * fio.gbps,
	       "(c) within 10%% of fio: %.2fx fio", fio.gbps > 0 ? r[2].gbps / fio.gbps : 0);
	TARGET(r[2].ok && r[2].cache_pct >= 0 && r[2].cache_pct < 1.0,
	       "(c) page-cache growth < 1%% of the bytes read: %.2f%%", r[2].cache_pct);
	TARGET(r[2].ok && r[2].cpu_per_gb <= r[0].cpu_per_gb &&
	       r[2].cpu_per_gb <= r[1].cpu_per_gb,
	       "(c) the lowest CPU per GB of (a)-(c): %.3f vs %.3f, %.3f s/GB",
	       r[2].cpu_per_gb, r[0].cpu_per_gb, r[1].cpu_per_gb);
	printf("%d of %d targets met\n", pass, total);
	gp_close(ctx);
	close(file_fd);
	return r[0].ok && r[1].ok && r[2].ok ? 0 : 1;
}
