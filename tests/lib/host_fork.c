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

static int shmem_thp_allowed(void);

/* The segment holding p, from /proc/self/smaps: the mapping that holds
 * it and the memfd mappings side by side with it (a segment made by
 * several threads is a file each).
 */
struct seg_maps {
	int maps;	/* -1: unreadable */
	long size_kb;
	long locked_kb;	/* pages mapped in a locked mapping (a page only in
			 * the file, or mapped unlocked, does not count)
			 */
};

static struct seg_maps segment_maps(const void *p)
{
	struct vma {
		unsigned long lo, hi;
		long size_kb, locked_kb;
	} v[64];
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long a = (unsigned long)(uintptr_t)p, lo, hi;
	struct seg_maps m = { -1, 0, 0 };
	int n = 0, in = 0, i, first, last;
	char line[512];
	long kb;

	if (!f)
		return m;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = n < 64 && strstr(line, "memfd:gpupool") != NULL;
			if (in) {
				v[n].lo = lo;
				v[n].hi = hi;
				v[n].size_kb = v[n].locked_kb = 0;
				n++;
			}
		} else if (in && sscanf(line, "Size: %ld", &kb) == 1) {
			v[n - 1].size_kb = kb;
		} else if (in && sscanf(line, "Locked: %ld", &kb) == 1) {
			v[n - 1].locked_kb = kb;
		}
	}
	fclose(f);
	for (i = 0; i < n && !(v[i].lo <= a && a < v[i].hi); i++)
		;
	if (i == n)
		return m;
	for (first = i; first > 0 && v[first - 1].hi == v[first].lo; first--)
		;
	for (last = i; last + 1 < n && v[last].hi == v[last + 1].lo; last++)
		;
	m.maps = last - first + 1;
	for (i = first; i <= last; i++) {
		m.size_kb += v[i].size_kb;
		m.locked_kb += v[i].locked_kb;
	}
	return m;
}

/* A new user-backend segment, made by one thread or by several (a file
 * each), is locked and resident in full before the allocation returns,
 * and reads zero; parts is the number of files it must be made of when
 * shmem THP is off (0: not checked).
 */
static void locked_round(struct __test_metadata *_metadata, const char *threads,
			 size_t size, int parts)
{
	struct seg_maps m;
	struct gp_ctx *ctx;
	size_t i;
	char *p;

	setenv("GPUPOOL_POPULATE_THREADS", threads, 1);
	OPEN(NULL, &ctx);
	if (!on_user_backend(ctx)) {
		gp_close(ctx);
		SKIP(return, "needs the user backend");
	}
	ASSERT_EQ(0, gp_host_alloc(ctx, size, 0, (void **)&p)) TH_LOG("%s", gp_last_error(ctx));
	m = segment_maps(p);
	ASSERT_LT(0, m.maps) TH_LOG("no memfd mapping holds the buffer");
	ASSERT_LE((long)(size >> 10), m.size_kb);
	ASSERT_EQ(m.size_kb, m.locked_kb)
		TH_LOG("%ld kB of a %ld kB segment mapped and locked", m.locked_kb, m.size_kb);
	if (parts && !shmem_thp_allowed())
		ASSERT_EQ(parts, m.maps)
			TH_LOG("a %ld kB segment made by %s threads is %d files",
			       m.size_kb, threads, m.maps);
	for (i = 0; i < size; i += 4096)
		ASSERT_EQ(0, p[i]) TH_LOG("byte %zu of a new buffer is not zero", i);
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST(new_segment_locked_one_thread)
{
	locked_round(_metadata, "1", 80u << 20, 1);
}

TEST(new_segment_locked_many_threads)
{
	locked_round(_metadata, "3", 80u << 20, 3);
}

/* The small pool's 2 MiB segment is made by two threads, a MiB each. */
TEST(small_segment_locked_two_threads)
{
	locked_round(_metadata, "2", 1000, 2);
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
	ASSERT_LE((long)(size >> 10), segment_maps(p).locked_kb);
	fill(p, size, 3);
	ASSERT_TRUE(check_fill(p, size, 3));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
	if (set)
		ASSERT_EQ(0, set_shmem_thp("never"));
}

TEST_HARNESS_MAIN
