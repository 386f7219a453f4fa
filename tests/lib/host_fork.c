// SPDX-License-Identifier: MIT
/*
 * host_fork: a buffer allocated before fork() (no GP_HOST_SHARED, no
 * export) is the same memory in the child: the child reads the parent's
 * bytes, writes its own, and the parent sees them, on either backend (a
 * dataset loaded into pinned memory, then fork-started loader workers).
 * The parent's buffers stay registered with CUDA after the child is gone.
 * Segments faulted in by one thread or by several (GPUPOOL_POPULATE_THREADS)
 * hold the same bytes, and a new segment is mapped and locked in full
 * (smaps' Locked:) before the allocation returns; with shmem THP allowed
 * (shmem_enabled advise, within_size or always) a large user-backend
 * segment is made of huge pages (ShmemHugePages / FileHugePages in
 * /proc/meminfo).
 */
#include "helpers.h"	/* first: it defines _GNU_SOURCE */

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>

/* A small buffer (2 MiB segment), one over a segment of its own, one large
 * enough for several population threads.
 */
static const size_t sizes[] = { 1000, (3u << 20) + 12345, 80u << 20 };
#define NR (sizeof(sizes) / sizeof(sizes[0]))

static void fork_round(struct __test_metadata *_metadata, const char *threads)
{
	struct gp_ctx *ctx;
	void *p[NR];
	int status;
	unsigned int i;
	struct rt rt;
	pid_t pid;

	if (threads)
		setenv("GPUPOOL_POPULATE_THREADS", threads, 1);
	rt_load(&rt);
	OPEN(NULL, &ctx);
	for (i = 0; i < NR; i++) {
		ASSERT_EQ(0, gp_host_alloc(ctx, sizes[i], 0, &p[i]))
			TH_LOG("%zu: %s", sizes[i], gp_last_error(ctx));
		fill(p[i], sizes[i], 10 + i);
	}
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int bad = 0;

		for (i = 0; i < NR; i++) {
			if (!check_fill(p[i], sizes[i], 10 + i))
				bad = 20 + i;
			fill(p[i], sizes[i], 50 + i);
		}
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("the child saw other bytes");
	for (i = 0; i < NR; i++)
		ASSERT_TRUE(check_fill(p[i], sizes[i], 50 + i))
			TH_LOG("buffer %u: the child's bytes are not the parent's", i);
	if (rt.devices && rt.is_double)
		for (i = 0; i < NR; i++)
			ASSERT_LE(sizes[i], rt.registered_size(p[i]))
				TH_LOG("buffer %u is no longer registered", i);
	/* The parent writes again: its own mapping, still writable. */
	for (i = 0; i < NR; i++) {
		fill(p[i], sizes[i], 90 + i);
		ASSERT_TRUE(check_fill(p[i], sizes[i], 90 + i));
		ASSERT_EQ(0, gp_host_free(ctx, p[i]));
	}
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
}

TEST(child_shares_buffers)
{
	fork_round(_metadata, NULL);
}

TEST(child_shares_buffers_one_thread)
{
	fork_round(_metadata, "1");
}

TEST(child_shares_buffers_many_threads)
{
	fork_round(_metadata, "5");
}

/* The "Locked:" kB of the mappings in [p, p + n), from /proc/self/smaps
 * (pages mapped in a locked mapping: a page that is only in the file, or
 * mapped unlocked, does not count); -1 when unreadable.
 */
static long locked_kb(void *p, size_t n)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi, a = (unsigned long)(uintptr_t)p;
	char line[256];
	long v, sum = -1;
	int in = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo >= a && hi <= a + n;
		else if (in && sscanf(line, "Locked: %ld", &v) == 1)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	fclose(f);
	return sum;
}

/* A new user-backend segment, made by one thread or by several (a file
 * each), is locked and resident in full before the allocation returns,
 * and reads zero.
 */
static void locked_round(struct __test_metadata *_metadata, const char *threads)
{
	const size_t size = 80u << 20;
	struct gp_ctx *ctx;
	long locked;
	size_t i;
	char *p;

	setenv("GPUPOOL_POPULATE_THREADS", threads, 1);
	OPEN(NULL, &ctx);
	if (!on_user_backend(ctx)) {
		gp_close(ctx);
		SKIP(return, "needs the user backend");
	}
	ASSERT_EQ(0, gp_host_alloc(ctx, size, 0, (void **)&p)) TH_LOG("%s", gp_last_error(ctx));
	locked = locked_kb(p, size);
	ASSERT_LE((long)(size >> 10), locked)
		TH_LOG("%ld kB of a %zu kB buffer mapped and locked", locked, size >> 10);
	for (i = 0; i < size; i += 4096)
		ASSERT_EQ(0, p[i]) TH_LOG("byte %zu of a new buffer is not zero", i);
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST(new_segment_locked_one_thread)
{
	locked_round(_metadata, "1");
}

TEST(new_segment_locked_many_threads)
{
	locked_round(_metadata, "3");
}

/* Under a file size limit (ulimit -f) smaller than a segment, a new pool
 * segment is still made, a shareable user-backend buffer over the limit
 * is refused (-EFBIG), and the process is not killed (SIGXFSZ).
 */
TEST(file_size_limit)
{
	int status;
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 1u << 20, 1u << 20 };
		struct gp_ctx *ctx;
		void *p;

		if (setrlimit(RLIMIT_FSIZE, &rl) || gp_open(NULL, &ctx))
			_exit(2);
		if (gp_host_alloc(ctx, 40u << 20, 0, &p) ||
		    gp_host_alloc(ctx, 1000, 0, &p))
			_exit(3);
		/* The kernel backend's buffers are no files. */
		if (on_user_backend(ctx) &&
		    gp_host_alloc(ctx, 4u << 20, GP_HOST_SHARED, &p) != -EFBIG)
			_exit(4);
		fill(p, 1000, 7);
		gp_close(ctx);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/* shmem_enabled's choice: the bracketed word. */
static int shmem_thp_allowed(void)
{
	char buf[256], *l, *r;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r)
		return 0;
	*r = 0;
	return !strcmp(l + 1, "advise") || !strcmp(l + 1, "within_size") ||
	       !strcmp(l + 1, "always");
}

/* ShmemHugePages + FileHugePages, kB (or HugePages_Total, a count). */
static long meminfo(int hugetlb)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long v, sum = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (hugetlb ? sscanf(line, "HugePages_Total: %ld", &v) == 1 :
		    (sscanf(line, "ShmemHugePages: %ld", &v) == 1 ||
		     sscanf(line, "FileHugePages: %ld", &v) == 1))
			sum += v;
	fclose(f);
	return sum;
}

/* Write word into shmem_enabled; 0 on success. */
static int set_shmem_thp(const char *word)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(word, f) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * With GPUPOOL_TEST_SHMEM_THP=advise (the VM run of make check: never on a
 * shared machine), shmem_enabled is set to advise for this test when it is
 * not allowed already, and set back to never after.
 */
TEST(shmem_huge_pages_when_allowed)
{
	const char *want = getenv("GPUPOOL_TEST_SHMEM_THP");
	const size_t size = 64u << 20;
	struct gp_ctx *ctx;
	long before, after;
	int set = 0;
	void *p;

	if (want && !strcmp(want, "advise") && !shmem_thp_allowed()) {
		ASSERT_EQ(0, set_shmem_thp("advise"))
			TH_LOG("GPUPOOL_TEST_SHMEM_THP=advise, but shmem_enabled cannot be written");
		set = 1;
	}
	OPEN(NULL, &ctx);
	/* Reserved hugetlb pages would serve the segment instead. */
	if (!on_user_backend(ctx) || !shmem_thp_allowed() || meminfo(1)) {
		gp_close(ctx);
		if (set)
			set_shmem_thp("never");
		SKIP(return, "needs the user backend, shmem_enabled advise, within_size or always, and no hugetlb pages reserved");
	}
	before = meminfo(0);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, gp_host_alloc(ctx, size, 0, &p)) TH_LOG("%s", gp_last_error(ctx));
	after = meminfo(0);
	/* Half at least: others may free huge pages meanwhile, and a 2 MiB
	 * page the kernel had none free for falls back to small ones.
	 */
	ASSERT_LE((long)(size >> 10) / 2, after - before)
		TH_LOG("ShmemHugePages + FileHugePages grew by %ld kB for a %zu kB buffer",
		       after - before, size >> 10);
	ASSERT_LE((long)(size >> 10), locked_kb(p, size));
	fill(p, size, 3);
	ASSERT_TRUE(check_fill(p, size, 3));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
	if (set)
		ASSERT_EQ(0, set_shmem_thp("never"));
}

TEST_HARNESS_MAIN
