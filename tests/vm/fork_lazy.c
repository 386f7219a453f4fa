// SPDX-License-Identifier: GPL-2.0
/*
 * fork_lazy: fork copies no PTE of a chunk mapping; the child
 * faults in what it touches and sees the parent's pages.
 *  - right after fork the child's chunk vma has no page mapped (smaps Rss
 *    0; today's VM_MIXEDMAP module copied every PTE, Rss = the chunk);
 *    reading then gives the parent's bytes, writes show both ways, and the
 *    pages it touched are all it has mapped;
 *  - the same through a moved (mremap), split (mprotect, partial munmap)
 *    mapping and through an exported chunk fd: each fault finds the page
 *    at its offset in the chunk;
 *  - the kernel faults the child's pages in for it: copy_to_user (read
 *    from a pipe), copy_from_user (write to a pipe), GUP (vmsplice);
 *  - the parent's own refault (MADV_DONTNEED) keeps its bytes; a child's
 *    MADV_DONTNEED drops only its own PTEs;
 *  - nothing leaks: once every process has unmapped, the pool is whole.
 * With huge_maps=0: page by page, as the Rss figures say.  The same with
 * 2 MiB entries is huge_maps's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define CH	(4 * MiB)

GP_POOL_FIXTURE(flz, "pool_size=32M huge_maps=0", 10000)

struct sync {
	int to_child[2], to_parent[2];
};

static int sync_init(struct sync *s)
{
	return pipe(s->to_child) || pipe(s->to_parent) ? -1 : 0;
}

static int say(int fd)
{
	return write(fd, "x", 1) == 1 ? 0 : -1;
}

static int hear(int fd)
{
	char c;

	return read(fd, &c, 1) == 1 ? 0 : -1;
}

/*
 * The child's side of the basic exchange on p (len bytes, chunk page
 * first at p): no PTE at first, the parent's bytes on reading, its own
 * write seen by the parent, the parent's write seen by it.
 */
static int child_exchange(char *p, unsigned long len, unsigned long first,
			  struct sync *s)
{
	long rss = gp_vma_kb(p, "Rss");

	if (rss != 0) {
		fprintf(stderr, "child: Rss of the chunk vma right after fork: %ld kB, want 0\n",
			rss);
		return 10;
	}
	/* One page touched: one page mapped. */
	if (p[GP_PG] != (char)gp_page_pat(first + 1))
		return 11;
	rss = gp_vma_kb(p, "Rss");
	if (rss != (long)(GP_PG >> 10)) {
		fprintf(stderr, "child: Rss after reading one page: %ld kB, want %lu\n",
			rss, GP_PG >> 10);
		return 12;
	}
	if (gp_check_pages(p, len, first))
		return 13;
	if (gp_vma_kb(p, "Rss") != (long)(len / 1024))
		return 14;
	p[0] = 0x55;
	p[len - 1] = 0x66;
	if (say(s->to_parent[1]) || hear(s->to_child[0]))
		return 15;
	/* The parent wrote page 2 after our fault: the same page. */
	if (p[2 * GP_PG] != 0x44)
		return 16;
	return 0;
}

static void parent_exchange(struct __test_metadata *_metadata, char *p,
			    unsigned long len, struct sync *s)
{
	/* Our write end closed: a child that exits early reads as EOF. */
	close(s->to_parent[1]);
	close(s->to_child[0]);
	ASSERT_EQ(0, hear(s->to_parent[0]));
	EXPECT_EQ(0x55, p[0]);
	EXPECT_EQ(0x66, p[len - 1]);
	p[2 * GP_PG] = 0x44;
	ASSERT_EQ(0, say(s->to_child[1]));
	close(s->to_parent[0]);
	close(s->to_child[1]);
}

/* Fork a child that runs the exchange above on p with this process. */
static void fork_exchange(struct __test_metadata *_metadata, char *p,
			  unsigned long first)
{
	struct sync s;
	pid_t pid;

	ASSERT_EQ(0, sync_init(&s));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child_exchange(p, CH, first, &s));
	parent_exchange(_metadata, p, CH, &s);
	EXPECT_EQ(0, gp_reap(pid));
}

/* A new chunk (CH) in *h, mapped in *p, page i holding gp_page_pat(first + i). */
static void map_new(struct __test_metadata *_metadata, int fd, uint64_t *h,
		    char **p, unsigned long first)
{
	*h = gp_alloc(fd, CH);
	ASSERT_NE(0, *h);
	*p = gp_map(fd, *h, CH);
	ASSERT_NE(MAP_FAILED, *p);
	gp_fill_pages(*p, CH, first);
}

/* Unmap len at p, free h (0: none left); the pool is whole again. */
static void unmap_free(struct __test_metadata *_metadata, int fd, char *p,
		       unsigned long len, uint64_t h)
{
	EXPECT_EQ(0, munmap(p, len));
	if (h)
		EXPECT_EQ(0, gp_free(fd, h));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(32 * MiB, gp_pool().free);
}

TEST_F(flz, child_faults_in_parent_bytes)
{
	uint64_t h;
	char *p;

	map_new(_metadata, self->fd, &h, &p, 0);
	/* The parent's prefill maps the whole chunk. */
	EXPECT_EQ((long)(CH / 1024), gp_vma_kb(p, "Rss"));
	fork_exchange(_metadata, p, 0);
	/* The parent's mapping is untouched by the child's life. */
	EXPECT_EQ((long)(CH / 1024), gp_vma_kb(p, "Rss"));
	EXPECT_EQ(0x55, p[0]);
	unmap_free(_metadata, self->fd, p, CH, h);
}

/* Grandchildren too: a child that never touched the chunk forks again. */
TEST_F(flz, grandchild)
{
	uint64_t h;
	char *p;
	pid_t pid;

	map_new(_metadata, self->fd, &h, &p, 3);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pid_t g = fork();

		if (g < 0)
			_exit(20);
		if (!g) {
			if (gp_vma_kb(p, "Rss") != 0)
				_exit(21);
			if (gp_check_pages(p, CH, 3))
				_exit(22);
			p[5] = 9;
			_exit(0);
		}
		if (gp_reap(g))
			_exit(23);
		_exit(gp_vma_kb(p, "Rss") == 0 && p[5] == 9 ? 0 : 24);
	}
	EXPECT_EQ(0, gp_reap(pid));
	EXPECT_EQ(9, p[5]);
	unmap_free(_metadata, self->fd, p, CH, h);
}

/*
 * Moved, shrunk and split: the child's faults find each page at its offset
 * in the chunk (vm_pgoff kept by mremap and splits).
 */
TEST_F(flz, moved_and_split)
{
	char *p, *q, *hole;
	uint64_t h;
	pid_t pid;

	map_new(_metadata, self->fd, &h, &p, 0);
	/* Move it where nothing is. */
	hole = mmap(NULL, CH + 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	q = mremap(p, CH, CH, MREMAP_MAYMOVE | MREMAP_FIXED, hole + 2 * MiB);
	ASSERT_EQ(hole + 2 * MiB, q);
	munmap(hole, 2 * MiB);
	/* Split: page 3 read-only, the last MiB unmapped. */
	ASSERT_EQ(0, mprotect(q + 3 * GP_PG, GP_PG, PROT_READ));
	ASSERT_EQ(0, munmap(q + CH - MiB, MiB));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (gp_vma_kb(q, "Rss") != 0 || gp_vma_kb(q + 4 * GP_PG, "Rss") != 0)
			_exit(30);
		if (gp_check_pages(q + 4 * GP_PG, CH - MiB - 4 * GP_PG, 4))
			_exit(31);
		if (gp_check_pages(q, 4 * GP_PG, 0))
			_exit(32);
		q[4 * GP_PG] = 0x21;
		_exit(0);
	}
	EXPECT_EQ(0, gp_reap(pid));
	EXPECT_EQ(0x21, q[4 * GP_PG]);
	unmap_free(_metadata, self->fd, q, CH - MiB, h);
}

/* An exported chunk fd's mapping forks the same way. */
TEST_F(flz, exported_fd)
{
	uint64_t h = gp_alloc(self->fd, CH);
	int cfd;
	char *p;

	ASSERT_NE(0, h);
	cfd = gp_export(self->fd, h, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	p = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, gp_free(self->fd, h));
	close(cfd);
	gp_fill_pages(p, CH, 11);
	fork_exchange(_metadata, p, 11);
	unmap_free(_metadata, self->fd, p, CH, 0);
}

/*
 * The kernel touching the child's unfaulted pages: copy_to_user (read from
 * a pipe into it), copy_from_user (write from it), GUP (vmsplice from it).
 */
TEST_F(flz, kernel_faults_for_child)
{
	uint64_t h;
	char *p;
	pid_t pid;

	map_new(_metadata, self->fd, &h, &p, 0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		const ssize_t pg = GP_PG;
		char buf[pg];
		int pp[2];
		struct iovec iov = { p + 9 * pg, pg };

		if (pipe(pp))
			_exit(40);
		/* copy_from_user from page 5, unfaulted. */
		if (write(pp[1], p + 5 * pg, pg) != pg ||
		    read(pp[0], buf, pg) != pg ||
		    !gp_all_bytes(buf, pg, gp_page_pat(5)))
			_exit(41);
		/* copy_to_user into page 6, unfaulted: the parent sees it. */
		memset(buf, 0x31, pg);
		if (write(pp[1], buf, pg) != pg ||
		    read(pp[0], p + 6 * pg, pg) != pg)
			_exit(42);
		/* GUP: vmsplice pins page 9 into the pipe. */
		if (vmsplice(pp[1], &iov, 1, 0) != pg ||
		    read(pp[0], buf, pg) != pg ||
		    !gp_all_bytes(buf, pg, gp_page_pat(9)))
			_exit(43);
		/* Three pages faulted in, by the kernel. */
		if (gp_vma_kb(p, "Rss") != (long)(3 * GP_PG >> 10))
			_exit(44);
		_exit(0);
	}
	EXPECT_EQ(0, gp_reap(pid));
	EXPECT_TRUE(gp_all_bytes(p + 6 * GP_PG, GP_PG, 0x31));
	unmap_free(_metadata, self->fd, p, CH, h);
}

/*
 * MADV_DONTNEED: the parent refaults its own pages (the fault path, not
 * the prefill); a child's drops only the child's PTEs.
 */
TEST_F(flz, dontneed_refault)
{
	uint64_t h;
	char *p;
	pid_t pid;

	map_new(_metadata, self->fd, &h, &p, 2);
	ASSERT_EQ(0, madvise(p, CH, MADV_DONTNEED));
	EXPECT_EQ(0, gp_vma_kb(p, "Rss"));
	EXPECT_EQ(0, gp_check_pages(p, CH, 2));
	EXPECT_EQ((long)(CH / 1024), gp_vma_kb(p, "Rss"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (gp_check_pages(p, 2 * MiB, 2))
			_exit(50);
		if (madvise(p, CH, MADV_DONTNEED) || gp_vma_kb(p, "Rss") != 0)
			_exit(51);
		_exit(gp_check_pages(p, CH, 2) ? 52 : 0);
	}
	EXPECT_EQ(0, gp_reap(pid));
	EXPECT_EQ((long)(CH / 1024), gp_vma_kb(p, "Rss"));
	EXPECT_EQ(0, gp_check_pages(p, CH, 2));
	unmap_free(_metadata, self->fd, p, CH, h);
}

TEST_HARNESS_MAIN
