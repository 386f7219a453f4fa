// SPDX-License-Identifier: MIT
/*
 * loader_bench - the data loader two ways, same run, same machine, printed
 * and never asserted:
 *
 *  gpupool:  examples/batch_ring.c: workers write each batch straight into
 *            a shared pinned pool chunk; the consumer takes it in place.
 *  PyTorch-style: workers write each batch into shared memory (a memfd,
 *            as torch's shared-memory tensors); a pin thread copies it into
 *            a pinned (mlock'ed) buffer and frees the shared slot; the
 *            consumer takes the pinned copy (pytorch issue 78018 describes
 *            this extra copy).
 *
 * Both use the same worker count, the same batch producer (synthetic bytes
 * + checksum) and the same consumer work (verify the checksum), with two
 * batches in flight per worker.  For 1, 2, 4 workers x 1, 16, 64 MiB it
 * prints batches/s, GB/s, the ratio, and the memory each holds (shared +
 * pinned bytes it allocated).  Target: >= 1.5x at 64 MiB, less memory.
 * Each case runs `reps` times, the two pipelines in alternating order; it
 * prints the median rate of each and the median of the reps' ratios (one
 * run of a case lasts well under a second: a single one is at the mercy of
 * whatever else the machine does in that moment).
 *
 *   loader_bench [total MiB per case, default 1024] [reps, default 5]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch_ring.h"

#define MiB		(1ull << 20)
#define MAX_SLOTS	8
#define MAX_REPS	99

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "loader_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The producer both pipelines run in their workers: a 64 KiB pattern,
 * varied per batch, written over the batch; then its checksum.
 */
static uint64_t produce(uint64_t index, void *dst, size_t len, void *arg)
{
	static unsigned char pat[65536];
	size_t off, k;

	(void)arg;
	for (k = 0; k < sizeof(pat); k++)
		pat[k] = (unsigned char)(index * 131 + k * 7);
	for (off = 0; off < len; off += k) {
		k = len - off < sizeof(pat) ? len - off : sizeof(pat);
		memcpy((char *)dst + off, pat, k);
	}
	return br_checksum(dst, len);
}

/* gpupool --------------------------------------------------------------------- */

static double run_gpupool(struct gp_ctx *ctx, int workers, size_t batch,
			  uint64_t batches, uint64_t *held)
{
	struct br_opts o = { .workers = workers, .batch_bytes = batch,
			     .batches = batches, .produce = produce };
	struct gp_host_stats st;
	struct br_batch b;
	struct br_ring *r;
	char err[256];
	double t0, t;
	int ret;

	r = br_start(ctx, &o, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "loader_bench: %s\n", err);
		exit(1);
	}
	gp_host_stats(ctx, &st);
	*held = st.reserved;
	t0 = now();
	while ((ret = br_next(r, &b, err, sizeof(err))) == 0) {
		if (br_checksum(b.data, b.len) != b.sum) {
			fprintf(stderr, "loader_bench: gpupool: bad batch\n");
			exit(1);
		}
		br_release(r, &b);
	}
	t = now() - t0;
	if (ret < 0 || br_stop(r)) {
		fprintf(stderr, "loader_bench: gpupool: %s\n", err);
		exit(1);
	}
	gp_host_trim(ctx, NULL);
	return t;
}

/* PyTorch-style --------------------------------------------------------------- */

struct task { uint64_t slot, index; };
struct reply { uint64_t slot, index, sum; };

struct pt {
	int workers, nshm, npin;
	size_t batch;
	uint64_t batches;
	void *shm[MAX_SLOTS];
	void *pin[MAX_SLOTS];
	int sock[MAX_SLOTS];
	pid_t pid[MAX_SLOTS];
	int inflight[MAX_SLOTS];
	/* Free pinned buffers and pinned batches ready for the consumer. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int free_pin[MAX_SLOTS], nr_free_pin;
	struct { int pin; uint64_t sum; } ready[MAX_SLOTS];
	int nr_ready;
	int failed;
};

static void pt_worker(int sock, struct pt *p)
{
	struct task t;
	struct reply r;

	while (recv(sock, &t, sizeof(t), 0) == (ssize_t)sizeof(t)) {
		r.slot = t.slot;
		r.index = t.index;
		r.sum = produce(t.index, p->shm[t.slot], p->batch, NULL);
		if (send(sock, &r, sizeof(r), MSG_NOSIGNAL) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

/* The pin thread: hand free shared slots to workers, copy each finished
 * batch into a free pinned buffer, give the slot back.
 */
static void *pt_pin_thread(void *arg)
{
	struct pt *p = arg;
	int free_shm[MAX_SLOTS], nr_free_shm = 0, i;
	uint64_t next = 0, copied = 0;
	struct pollfd pfd[MAX_SLOTS];
	struct reply r;

	for (i = 0; i < p->nshm; i++)
		free_shm[nr_free_shm++] = i;
	while (copied < p->batches) {
		while (nr_free_shm && next < p->batches) {
			int w = (int)(next % (uint64_t)p->workers);
			struct task t = { (uint64_t)free_shm[--nr_free_shm], next++ };

			if (send(p->sock[w], &t, sizeof(t), MSG_NOSIGNAL) != sizeof(t))
				goto fail;
			p->inflight[w]++;
		}
		for (i = 0; i < p->workers; i++) {
			pfd[i].fd = p->inflight[i] ? p->sock[i] : -1;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)p->workers, -1) < 0)
			goto fail;
		for (i = 0; i < p->workers; i++) {
			int pin;

			if (!pfd[i].revents)
				continue;
			if (recv(p->sock[i], &r, sizeof(r), 0) != sizeof(r))
				goto fail;
			p->inflight[i]--;
			pthread_mutex_lock(&p->lock);
			while (!p->nr_free_pin)
				pthread_cond_wait(&p->cond, &p->lock);
			pin = p->free_pin[--p->nr_free_pin];
			pthread_mutex_unlock(&p->lock);
			memcpy(p->pin[pin], p->shm[r.slot], p->batch);	/* the copy */
			free_shm[nr_free_shm++] = (int)r.slot;
			pthread_mutex_lock(&p->lock);
			p->ready[p->nr_ready].pin = pin;
			p->ready[p->nr_ready].sum = r.sum;
			p->nr_ready++;
			pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
			copied++;
		}
	}
	return NULL;
fail:
	pthread_mutex_lock(&p->lock);
	p->failed = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static double run_pytorch_style(int workers, size_t batch, uint64_t batches,
				uint64_t *held)
{
	struct pt p = { .workers = workers, .batch = batch, .batches = batches };
	uint64_t got = 0;
	pthread_t th;
	double t0, t;
	int i, sv[2], st;

	p.nshm = 2 * workers;	/* two batches in flight per worker */
	p.npin = 2;		/* the pin thread's output, double-buffered */
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (i = 0; i < p.nshm; i++) {
		int fd = memfd_create("loader_bench", MFD_CLOEXEC);

		if (fd < 0 || ftruncate(fd, (off_t)batch))
			die("memfd");
		p.shm[i] = mmap(NULL, batch, PROT_READ | PROT_WRITE, MAP_SHARED,
				fd, 0);
		close(fd);
		if (p.shm[i] == MAP_FAILED)
			die("mmap");
	}
	for (i = 0; i < p.npin; i++) {
		p.pin[i] = mmap(NULL, batch, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p.pin[i] == MAP_FAILED || mlock(p.pin[i], batch))
			die("pinned buffer (mlock; raise ulimit -l)");
		p.free_pin[p.nr_free_pin++] = i;
	}
	*held = (uint64_t)(p.nshm + p.npin) * batch;
	for (i = 0; i < workers; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			die("socketpair");
		fflush(NULL);
		p.pid[i] = fork();
		if (p.pid[i] < 0)
			die("fork");
		if (!p.pid[i]) {
			int j;

			for (j = 0; j < i; j++)
				close(p.sock[j]);
			close(sv[0]);
			pt_worker(sv[1], &p);
		}
		close(sv[1]);
		p.sock[i] = sv[0];
	}
	t0 = now();
	pthread_create(&th, NULL, pt_pin_thread, &p);
	while (got < batches) {
		int pin;
		uint64_t sum;

		pthread_mutex_lock(&p.lock);
		while (!p.nr_ready && !p.failed)
			pthread_cond_wait(&p.cond, &p.lock);
		if (p.failed) {
			fprintf(stderr, "loader_bench: pytorch-style pipeline failed\n");
			exit(1);
		}
		pin = p.ready[0].pin;
		sum = p.ready[0].sum;
		memmove(&p.ready[0], &p.ready[1], sizeof(p.ready[0]) * (size_t)--p.nr_ready);
		pthread_mutex_unlock(&p.lock);
		if (br_checksum(p.pin[pin], batch) != sum) {
			fprintf(stderr, "loader_bench: pytorch-style: bad batch\n");
			exit(1);
		}
		pthread_mutex_lock(&p.lock);
		p.free_pin[p.nr_free_pin++] = pin;
		pthread_cond_broadcast(&p.cond);
		pthread_mutex_unlock(&p.lock);
		got++;
	}
	t = now() - t0;
	pthread_join(th, NULL);
	for (i = 0; i < workers; i++) {
		close(p.sock[i]);
		waitpid(p.pid[i], &st, 0);
	}
	for (i = 0; i < p.nshm; i++)
		munmap(p.shm[i], batch);
	for (i = 0; i < p.npin; i++)
		munmap(p.pin[i], batch);
	return t;
}

int main(int argc, char **argv)
{
	static const int workers[] = { 1, 2, 4 };
	static const size_t sizes[] = { 1 * MiB, 16 * MiB, 64 * MiB };
	uint64_t total = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1024) * MiB;
	unsigned int reps = argc > 2 ? (unsigned int)atoi(argv[2]) : 5;
	struct gp_ctx *ctx;
	struct gp_info info;
	unsigned int w, s, r;

	if (!total || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: loader_bench [MiB per case > 0] [reps 1..%d]\n",
			MAX_REPS);
		return 2;
	}
	if (gp_open(NULL, &ctx)) {
		fprintf(stderr, "loader_bench: %s\n", gp_last_error(NULL));
		return 1;
	}
	gp_info(ctx, &info);
	printf("== data loader: gpupool shared chunks vs PyTorch-style (shared memory + pin-thread copy), %s backend, %ld CPUs, %llu MiB per case, medians of %u runs ==\n",
	       info.backend_name, sysconf(_SC_NPROCESSORS_ONLN),
	       (unsigned long long)(total / MiB), reps);
	printf("%7s %8s %9s | %10s %8s %9s | %10s %8s %9s | %7s %15s\n", "workers",
	       "batch", "batches", "gpupool/s", "GB/s", "held MiB",
	       "pytorch/s", "GB/s", "held MiB", "ratio", "ratio min..max");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (w = 0; w < sizeof(workers) / sizeof(workers[0]); w++) {
			uint64_t n = total / sizes[s], held_gp = 0, held_pt = 0;
			double tg[MAX_REPS], tp[MAX_REPS], ratio[MAX_REPS];
			double mg, mp;

			if (n < 8)
				n = 8;
			for (r = 0; r < reps; r++) {
				/* Alternate which goes first, so neither
				 * always runs on the cache the other left.
				 */
				if ((s + r) & 1) {
					tp[r] = run_pytorch_style(workers[w], sizes[s], n, &held_pt);
					tg[r] = run_gpupool(ctx, workers[w], sizes[s], n, &held_gp);
				} else {
					tg[r] = run_gpupool(ctx, workers[w], sizes[s], n, &held_gp);
					tp[r] = run_pytorch_style(workers[w], sizes[s], n, &held_pt);
				}
				ratio[r] = tp[r] / tg[r];
			}
			mg = median(tg, reps);
			mp = median(tp, reps);
			qsort(ratio, reps, sizeof(*ratio), cmp_double);
			printf("%7d %5zu MiB %9llu | %10.1f %8.2f %9llu | %10.1f %8.2f %9llu | %6.2fx %6.2fx..%.2fx\n",
			       workers[w], (size_t)(sizes[s] / MiB), (unsigned long long)n,
			       n / mg, n * (double)sizes[s] / mg / 1e9,
			       (unsigned long long)(held_gp / MiB), n / mp,
			       n * (double)sizes[s] / mp / 1e9,
			       (unsigned long long)(held_pt / MiB),
			       median(ratio, reps), ratio[0], ratio[reps - 1]);
			fflush(stdout);
		}
	}
	gp_close(ctx);
	return 0;
}
