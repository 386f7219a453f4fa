// SPDX-License-Identifier: MIT
/*
 * loader_ring: the data loader's zero-copy ring (examples/batch_ring.c,
 * compiled into this test under ASan) on whatever backend is in force:
 * every batch arrives once and intact from forked workers through shared
 * chunks; a dying worker and a consumer holding every slot are reported;
 * the slots go back at the end.  Workers gp_read a file straight into the
 * slots they imported.  Then examples/loader end to end.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "helpers.h"
#include "batch_ring.h"

#define BATCH	(256u << 10)

/* Each batch: its index in every 8-byte word, so content proves identity. */
static uint64_t produce(uint64_t index, void *dst, size_t len, void *arg)
{
	uint64_t *w = dst;
	size_t i;

	(void)arg;
	for (i = 0; i < len / 8; i++)
		w[i] = index * 0x10001 + i;
	return br_checksum(dst, len);
}

static uint64_t produce_dies(uint64_t index, void *dst, size_t len, void *arg)
{
	if (index == 5)
		_exit(7);
	return produce(index, dst, len, arg);
}

TEST(every_batch_arrives_once)
{
	struct br_opts o = { .workers = 3, .batch_bytes = BATCH, .batches = 40,
			     .produce = produce };
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	struct br_ring *r;
	struct br_batch b;
	char seen[40] = { 0 }, err[256];
	int n = 0, ret;

	OPEN(NULL, &ctx);
	r = br_start(ctx, &o, err, sizeof(err));
	ASSERT_NE(NULL, r) TH_LOG("%s", err);
	while ((ret = br_next(r, &b, err, sizeof(err))) == 0) {
		const uint64_t *w = b.data;

		ASSERT_LT(b.index, 40);
		EXPECT_EQ(0, seen[b.index]);
		seen[b.index] = 1;
		EXPECT_EQ(b.sum, br_checksum(b.data, b.len));
		EXPECT_EQ(b.index * 0x10001 + 1000, w[1000]);
		br_release(r, &b);
		n++;
	}
	EXPECT_EQ(1, ret) TH_LOG("%s", err);
	EXPECT_EQ(40, n);
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ(6 * (uint64_t)BATCH, st.in_use);	/* 2 slots per worker */
	EXPECT_EQ(0, br_stop(r));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ(0, st.in_use);
	gp_close(ctx);
}

/* Batch i: bytes [i * len, (i + 1) * len) of the file at arg, read with
 * gp_read into the slot through the worker's context.
 */
static uint64_t produce_from_file(uint64_t index, void *dst, size_t len,
				  void *arg)
{
	int fd = open(arg, O_RDONLY | O_CLOEXEC);
	size_t done = 0;

	if (fd < 0 || gp_read(br_worker_ctx(), fd, index * len, dst, len, 0, &done) ||
	    done != len) {
		fprintf(stderr, "worker: gp_read: %s\n", gp_last_error(br_worker_ctx()));
		_exit(9);
	}
	close(fd);
	return br_checksum(dst, len);
}

TEST(workers_read_a_file_into_slots)
{
	char path[256], err[256];
	const char *dir = getenv("TMPDIR");
	struct br_opts o = { .workers = 2, .batch_bytes = BATCH, .batches = 8,
			     .produce = produce_from_file, .arg = path };
	uint64_t *w = malloc(8 * BATCH);
	struct gp_ctx *ctx;
	struct br_ring *r;
	struct br_batch b;
	int fd, n = 0, ret;
	size_t i;

	ASSERT_NE(NULL, w);
	for (i = 0; i < 8 * BATCH / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15ull;
	snprintf(path, sizeof(path), "%s/gp_loader_XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)(8 * BATCH), write(fd, w, 8 * BATCH));
	close(fd);
	OPEN(NULL, &ctx);
	r = br_start(ctx, &o, err, sizeof(err));
	ASSERT_NE(NULL, r) TH_LOG("%s", err);
	while ((ret = br_next(r, &b, err, sizeof(err))) == 0) {
		EXPECT_EQ(0, memcmp(b.data, (char *)w + b.index * BATCH, BATCH))
			TH_LOG("batch %llu", (unsigned long long)b.index);
		br_release(r, &b);
		n++;
	}
	EXPECT_EQ(1, ret) TH_LOG("%s", err);
	EXPECT_EQ(8, n);
	EXPECT_EQ(0, br_stop(r));
	gp_close(ctx);
	unlink(path);
	free(w);
}

TEST(dying_worker_is_reported)
{
	struct br_opts o = { .workers = 1, .batch_bytes = 8192, .batches = 20,
			     .produce = produce_dies };
	struct gp_ctx *ctx;
	struct br_ring *r;
	struct br_batch b;
	char err[256] = "";
	int n = 0, ret;

	OPEN(NULL, &ctx);
	r = br_start(ctx, &o, err, sizeof(err));
	ASSERT_NE(NULL, r) TH_LOG("%s", err);
	while ((ret = br_next(r, &b, err, sizeof(err))) == 0) {
		br_release(r, &b);
		n++;
	}
	EXPECT_EQ(-1, ret);
	EXPECT_NE(NULL, strstr(err, "died")) TH_LOG("%s", err);
	EXPECT_GE(5, n);
	EXPECT_EQ(-1, br_stop(r));
	gp_close(ctx);
}

TEST(holding_every_slot_is_reported)
{
	struct br_opts o = { .workers = 1, .slots = 2, .batch_bytes = 8192,
			     .batches = 10, .produce = produce };
	struct gp_ctx *ctx;
	struct br_ring *r;
	struct br_batch b[3];
	char err[256] = "";

	OPEN(NULL, &ctx);
	r = br_start(ctx, &o, err, sizeof(err));
	ASSERT_NE(NULL, r) TH_LOG("%s", err);
	ASSERT_EQ(0, br_next(r, &b[0], err, sizeof(err)));
	ASSERT_EQ(0, br_next(r, &b[1], err, sizeof(err)));
	EXPECT_EQ(-1, br_next(r, &b[2], err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "every slot is held")) TH_LOG("%s", err);
	br_release(r, &b[0]);
	EXPECT_EQ(0, br_next(r, &b[2], err, sizeof(err))) TH_LOG("%s", err);
	EXPECT_EQ(0, br_stop(r));
	gp_close(ctx);
}

TEST(bad_geometry_refused)
{
	struct br_opts o = { .workers = 0, .batch_bytes = 8192, .batches = 1,
			     .produce = produce };
	struct gp_ctx *ctx;
	char err[256] = "";

	OPEN(NULL, &ctx);
	EXPECT_EQ(NULL, br_start(ctx, &o, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "bad ring geometry")) TH_LOG("%s", err);
	o.workers = 4;
	o.slots = 2;
	EXPECT_EQ(NULL, br_start(ctx, &o, err, sizeof(err)));
	gp_close(ctx);
}

/* The example as `make demo` runs it: its last lines say it all. */
TEST(loader_example_end_to_end)
{
	char cmd[512], out[8192];
	size_t n;
	FILE *p;
	int st;

	if (access(tests_loader_bin, X_OK))
		SKIP(return, "%s not built", tests_loader_bin);
	snprintf(cmd, sizeof(cmd),
		 "%s --quiet --workers 2 --batches 12 --batch-size 1M 2>&1",
		 tests_loader_bin);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	st = pclose(p);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "batches: 12\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nchecksum: ok\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "throughput: "));
	if (backend_forced_kernel())	/* then it ends with gpupoolctl stat */
		EXPECT_NE(NULL, strstr(out, "Pool:")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
