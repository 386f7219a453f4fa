// SPDX-License-Identifier: MIT
/*
 * read_threads: threads (GPUPOOL_TSAN_THREADS, 16) read one file into pool
 * buffers through one context for GPUPOOL_TSAN_SECONDS (3), under
 * ThreadSanitizer: gp_read (the context's pool of readers), readers of their
 * own (gp_reader_submit / wait), buffers freed and the cache trimmed under
 * the others' registered fixed buffers, gp_read_stats and gp_info between.
 * Every read must bring the file's bytes; the counters must add up.
 */
#include <fcntl.h>

#include "tsan.h"

#define FILE_BYTES	(4u << 20)

static unsigned char *ref;
static int file_fd;

struct worker {
	pthread_t t;
	struct gp_ctx *ctx;
	uint64_t rng, requests;
	struct tfail f;
};

static bool one_read(struct worker *w)
{
	size_t len = rnd_in(&w->rng, 1, 1 << 20), done;
	uint64_t off = rnd_in(&w->rng, 0, FILE_BYTES - 1);
	size_t lead = rnd_in(&w->rng, 0, 4096);
	size_t want = off + len > FILE_BYTES ? FILE_BYTES - off : len;
	unsigned int flags = rnd(&w->rng) % 5 == 0 ? GP_READ_BUFFERED : 0;
	unsigned char *p;
	int ret;

	if (!CHECK(&w->f, !gp_host_alloc(w->ctx, lead + len, 0, (void **)&p),
		   "alloc: %s", gp_last_error(w->ctx)))
		return false;
	ret = gp_read(w->ctx, file_fd, off, p + lead, len, flags, &done);
	w->requests++;
	(void)CHECK(&w->f, !ret && done == want, "gp_read %zu at %llu: %d, %zu",
	      len, (unsigned long long)off, ret, done);
	(void)CHECK(&w->f, !memcmp(p + lead, ref + off, want), "bytes at %llu",
	      (unsigned long long)off);
	gp_host_free(w->ctx, p);
	return !w->f.n;
}

static bool batch(struct worker *w)
{
	struct gp_read_req q[8], *done[8];
	struct gp_reader *r;
	unsigned char *p;
	unsigned int i, n, got = 0;

	if (!CHECK(&w->f, !gp_reader_open(w->ctx, 8, &r), "reader_open"))
		return false;
	if (!CHECK(&w->f, !gp_host_alloc(w->ctx, 8 << 16, 0, (void **)&p), "alloc")) {
		gp_reader_close(r);
		return false;
	}
	memset(q, 0, sizeof(q));
	for (i = 0; i < 8; i++) {
		q[i].fd = file_fd;
		q[i].offset = rnd_in(&w->rng, 0, FILE_BYTES - 65536);
		q[i].dst = p + (i << 16);
		q[i].len = rnd_in(&w->rng, 1, 65536);
	}
	(void)CHECK(&w->f, !gp_reader_submit(r, q, 8), "submit");
	while (!w->f.n && got < 8) {
		(void)CHECK(&w->f, !gp_reader_wait(r, 1, done, 8, &n), "wait");
		for (i = 0; i < n; i++)
			(void)CHECK(&w->f, done[i]->result == (int64_t)done[i]->len &&
			      !memcmp(done[i]->dst, ref + done[i]->offset, done[i]->len),
			      "batch request at %llu", (unsigned long long)done[i]->offset);
		got += n;
	}
	w->requests += 8;
	gp_reader_close(r);
	gp_host_free(w->ctx, p);
	return !w->f.n;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct gp_read_stats st;
	struct gp_info info;

	while (!stopping() && !w->f.n) {
		switch (rnd(&w->rng) % 8) {
		case 0:
			batch(w);
			break;
		case 1:
			gp_host_trim(w->ctx, NULL);
			break;
		case 2:
			(void)CHECK(&w->f, !gp_read_stats(w->ctx, &st) &&
			      st.requests >= st.errors, "stats");
			(void)CHECK(&w->f, !gp_info(w->ctx, &info), "info");
			break;
		default:
			one_read(w);
		}
	}
	return NULL;
}

TSAN_TEST(read_threads)
{
	unsigned int i, nt = tsan_threads();
	struct worker *w = calloc(nt, sizeof(*w));
	char path[] = "/tmp/gp_tsan_read_XXXXXX";
	struct gp_read_stats st;
	struct gp_ctx *ctx;
	uint64_t requests = 0;
	struct rt rt;

	ASSERT_NE(NULL, w);
	ref = malloc(FILE_BYTES);
	ASSERT_NE(NULL, ref);
	fill(ref, FILE_BYTES, 11);
	file_fd = mkstemp(path);
	ASSERT_LE(0, file_fd);
	ASSERT_EQ((ssize_t)FILE_BYTES, write(file_fd, ref, FILE_BYTES));
	unlink(path);
	rt_load(&rt);
	OPEN(NULL, &ctx);
	for (i = 0; i < nt; i++) {
		w[i].ctx = ctx;
		w[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		ASSERT_EQ(0, pthread_create(&w[i].t, NULL, work, &w[i]));
	}
	run_then_stop();
	for (i = 0; i < nt; i++) {
		pthread_join(w[i].t, NULL);
		EXPECT_EQ(0, w[i].f.n) TH_LOG("thread %u: %s", i, w[i].f.why);
		requests += w[i].requests;
	}
	ASSERT_EQ(0, gp_read_stats(ctx, &st));
	EXPECT_EQ(requests, st.requests);
	EXPECT_EQ(0, st.errors);
	gp_close(ctx);
	close(file_fd);
	free(ref);
	free(w);
}

TEST_HARNESS_MAIN
