// SPDX-License-Identifier: GPL-2.0
/*
 * huge_maps: where the module keeps its 2 MiB blocks whole (HugeMaps: 1 in
 * /proc/gpupool, Linux 6.15 and later), a chunk's whole blocks are mapped
 * with 2 MiB (PMD) entries, and what works on a chunk mapped page by page
 * works the same:
 *  - an mmap lands where the chunk's blocks fall on 2 MiB boundaries;
 *    touching a block maps all of it (smaps FilePmdMapped); what is not a
 *    whole block of the chunk is mapped page by page;
 *  - the bytes: zero at first, what one mapping writes another (an
 *    exported fd, a forked child) reads, both ways;
 *  - fork: the child starts with nothing mapped and faults in 2 MiB;
 *  - munmap, mprotect and MADV_DONTNEED of part of a block (the entry is
 *    split), of a whole block, and mremap: bytes kept, rights enforced;
 *  - MADV_NOHUGEPAGE before the first touch: page by page;
 *  - GUP through a 2 MiB entry: O_DIRECT from and into it; vmsplice holds
 *    the block in quarantine until the pipe lets go;
 *  - huge_maps=0 maps page by page; huge_maps=1 where the kernel cannot is
 *    refused at load;
 *  - with 16 or 64 KiB pages (arm64), where no PMD entry maps a block,
 *    mappings are placed for the kernel's contiguous PTEs instead
 *    (cont_entries_placed); the PMD tests skip there.
 * Every test ends with the pool whole (the fixture's unload).  On 6.15 and
 * later (with THP) the module must map so by default: a module that does
 * not fails here; before 6.15 all but the parameter's test skip.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define BLK	(2 * MiB)
#define PPB	(BLK / GP_PG)	/* pages a block */
#define POOL	(32 * MiB)

GP_POOL_FIXTURE(hm, "pool_size=32M", 10000)

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"

/* Is the kernel at least major.minor? */
static int kernel_at_least(int want_major, int want_minor)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major > want_major || (major == want_major && minor >= want_minor);
}

/*
 * Can this kernel map a module's pages with 2 MiB entries, with
 * transparent huge pages: with 4 KiB pages PMD ones, Linux 6.15 or later
 * (vmf_insert_folio_pmd()); with 16 or 64 KiB pages (arm64) contiguous
 * PTEs, 6.10 or later (CONFIG_ARM64_CONTPTE, which THP brings by
 * default)?  Then the module must do so by default (huge_maps).
 */
static int kernel_can_huge_map(void)
{
	if (access(THP_ENABLED, F_OK))
		return 0;
	return sysconf(_SC_PAGESIZE) == 4096 ? kernel_at_least(6, 15) :
					       kernel_at_least(6, 10);
}

/* Does the THP setting let a fault map 2 MiB ("always" or "madvise")? */
static int thp_faults_allowed(void)
{
	char buf[128];

	return gp_read_file(THP_ENABLED, buf, sizeof(buf)) > 0 &&
	       !strstr(buf, "[never]");
}

/* PMD entries: 4 KiB pages, where the kernel can. */
#define NEED_HUGE() do {						\
	if (sysconf(_SC_PAGESIZE) != 4096)				\
		SKIP(return, "no PMD entry maps a block with %ld KiB pages " \
		     "(cont_entries_placed instead)",			\
		     sysconf(_SC_PAGESIZE) >> 10);			\
	if (!kernel_can_huge_map())					\
		SKIP(return, "no 2 MiB mappings for modules before Linux 6.15"); \
	ASSERT_EQ(1, gp_proc_num("HugeMaps"));				\
	if (!thp_faults_allowed())					\
		SKIP(return, THP_ENABLED " is never");			\
} while (0)

static long pmd_kb(const void *p)
{
	return gp_vma_kb(p, "FilePmdMapped");
}

/* A new chunk of len bytes, mapped in *p; its handle. */
static uint64_t map_new(struct __test_metadata *_metadata, int fd,
			unsigned long len, char **p)
{
	uint64_t h = gp_alloc(fd, len);

	EXPECT_NE(0, h);
	if (!h)
		return 0;
	*p = gp_map(fd, h, len);
	EXPECT_NE(MAP_FAILED, *p);
	return *p == MAP_FAILED ? 0 : h;
}

/* Wait until the pool has all of its memory back, free. */
static void pool_whole(struct __test_metadata *_metadata)
{
	EXPECT_EQ(0, gp_wait_quiet(10000, 1));
	EXPECT_EQ(POOL, gp_pool().free);
}

TEST_F(hm, whole_blocks_take_one_entry_each)
{
	char *p, *q;
	uint64_t h;
	int cfd;

	NEED_HUGE();
	/* The pool's first chunk: offset 0, four whole blocks. */
	h = map_new(_metadata, self->fd, 8 * MiB, &p);
	ASSERT_NE(0, h);
	EXPECT_EQ(0, (unsigned long)p % BLK);
	/* Nothing is mapped before the first touch, then 2 MiB at a time. */
	EXPECT_EQ(0, gp_vma_kb(p, "Rss"));
	p[3 * GP_PG] = 1;
	EXPECT_EQ(2048, gp_vma_kb(p, "Rss"));
	EXPECT_EQ(2048, pmd_kb(p));
	p[3 * GP_PG] = 0;
	EXPECT_TRUE(gp_all_bytes(p, 8 * MiB, 0));
	EXPECT_EQ(8192, pmd_kb(p));
	gp_fill_pages(p, 8 * MiB, 0);

	/* An exported fd maps the same bytes, on 2 MiB entries too. */
	cfd = gp_export(self->fd, h, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	q = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, q);
	close(cfd);
	EXPECT_EQ(0, (unsigned long)q % BLK);
	EXPECT_EQ(0, gp_check_pages(q, 8 * MiB, 0));
	EXPECT_EQ(8192, pmd_kb(q));
	q[5 * MiB] = 0x21;
	EXPECT_EQ(0x21, p[5 * MiB]);
	EXPECT_EQ(0, munmap(q, 8 * MiB));
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	pool_whole(_metadata);
}

/* A chunk that starts 64 KiB into block 0: only block 1 is whole. */
TEST_F(hm, partial_blocks_page_by_page)
{
	uint64_t a, h;
	char *p;

	NEED_HUGE();
	a = gp_alloc(self->fd, 64 * KiB);
	ASSERT_NE(0, a);
	h = map_new(_metadata, self->fd, 4 * MiB, &p);
	ASSERT_NE(0, h);
	EXPECT_EQ(64 * KiB, (unsigned long)p % BLK);
	EXPECT_TRUE(gp_all_bytes(p, 4 * MiB, 0));
	EXPECT_EQ(2048, pmd_kb(p));
	EXPECT_EQ(4096, gp_vma_kb(p, "Rss"));
	gp_fill_pages(p, 4 * MiB, 3);
	/* Refaulted after MADV_DONTNEED: every page at its own place. */
	EXPECT_EQ(0, madvise(p, 4 * MiB, MADV_DONTNEED));
	EXPECT_EQ(0, gp_vma_kb(p, "Rss"));
	EXPECT_EQ(0, gp_check_pages(p, 4 * MiB, 3));
	EXPECT_EQ(2048, pmd_kb(p));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	EXPECT_EQ(0, gp_free(self->fd, a));
	pool_whole(_metadata);
}

/*
 * fork: the child has nothing mapped, faults in 2 MiB where it reads, sees
 * the parent's bytes; each sees the other's writes.
 */
TEST_F(hm, fork_child_faults_in_blocks)
{
	int to_child[2], to_parent[2];
	uint64_t h;
	pid_t pid;
	char c, *p;

	NEED_HUGE();
	h = map_new(_metadata, self->fd, 4 * MiB, &p);
	ASSERT_NE(0, h);
	gp_fill_pages(p, 4 * MiB, 1);
	ASSERT_EQ(4096, pmd_kb(p));
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (gp_vma_kb(p, "Rss") != 0)
			_exit(10);
		if (p[GP_PG] != (char)gp_page_pat(2) || pmd_kb(p) != 2048)
			_exit(11);
		if (gp_check_pages(p, 4 * MiB, 1) || pmd_kb(p) != 4096)
			_exit(12);
		p[0] = 0x55;
		p[4 * MiB - 1] = 0x66;
		if (write(to_parent[1], "x", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(13);
		_exit(p[3 * MiB] == 0x44 ? 0 : 14);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	EXPECT_EQ(0x55, p[0]);
	EXPECT_EQ(0x66, p[4 * MiB - 1]);
	p[3 * MiB] = 0x44;
	ASSERT_EQ(1, write(to_child[1], "x", 1));
	EXPECT_EQ(0, gp_reap(pid));
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	pool_whole(_metadata);
}

/* A child writing at p: 0 if it could, the signal's number + 128 if not. */
static int child_write(char *p)
{
	pid_t pid = fork();

	if (!pid) {
		*(volatile char *)p = 1;
		_exit(0);
	}
	return pid < 0 ? -1 : gp_reap(pid);
}

/*
 * Entries split and moved: munmap of a whole block and of one page,
 * mprotect of a whole block and of one page, mremap of a block.
 */
TEST_F(hm, split_protect_move)
{
	char *p, *q;
	uint64_t h;

	NEED_HUGE();
	h = map_new(_metadata, self->fd, 8 * MiB, &p);
	ASSERT_NE(0, h);
	gp_fill_pages(p, 8 * MiB, 5);
	ASSERT_EQ(8192, pmd_kb(p));

	/* Block 1 unmapped: blocks 0, 2 and 3 keep their entries. */
	ASSERT_EQ(0, munmap(p + BLK, BLK));
	EXPECT_EQ(2048, pmd_kb(p));
	EXPECT_EQ(4096, pmd_kb(p + 2 * BLK));
	EXPECT_EQ(0, gp_check_pages(p, BLK, 5));
	EXPECT_EQ(0, gp_check_pages(p + 2 * BLK, 2 * BLK, 5 + 2 * PPB));

	/* Block 2 read-only: readable, a write is a SIGSEGV. */
	ASSERT_EQ(0, mprotect(p + 2 * BLK, BLK, PROT_READ));
	EXPECT_EQ(128 + SIGSEGV, child_write(p + 2 * BLK + 5));
	EXPECT_EQ(0, gp_check_pages(p + 2 * BLK, BLK, 5 + 2 * PPB));
	EXPECT_EQ(0, child_write(p + 3 * BLK));

	/* One page of block 3 read-only: its entry splits, bytes stay. */
	ASSERT_EQ(0, mprotect(p + 3 * BLK + 7 * GP_PG, GP_PG, PROT_READ));
	EXPECT_EQ(128 + SIGSEGV, child_write(p + 3 * BLK + 7 * GP_PG));
	EXPECT_EQ(0, child_write(p + 3 * BLK + 8 * GP_PG));
	/* The children's writes went to the chunk: put the pattern back. */
	p[3 * BLK] = (char)gp_page_pat(5 + 3 * PPB);
	p[3 * BLK + 8 * GP_PG] = (char)gp_page_pat(5 + 3 * PPB + 8);
	EXPECT_EQ(0, gp_check_pages(p + 3 * BLK, BLK, 5 + 3 * PPB));
	EXPECT_EQ(0, pmd_kb(p + 3 * BLK));

	/* One page of block 0 unmapped: the rest of it stays. */
	ASSERT_EQ(0, munmap(p + 100 * GP_PG, GP_PG));
	EXPECT_EQ(0, gp_check_pages(p, 100 * GP_PG, 5));
	EXPECT_EQ(0, gp_check_pages(p + 101 * GP_PG, BLK - 101 * GP_PG, 5 + 101));

	/* Block 2 moved: the same bytes, mapped whole again at a 2 MiB
	 * boundary once touched.
	 */
	q = mremap(p + 2 * BLK, BLK, BLK, MREMAP_MAYMOVE | MREMAP_FIXED,
		   p + BLK);
	ASSERT_EQ(p + BLK, q);
	EXPECT_EQ(0, gp_check_pages(q, BLK, 5 + 2 * PPB));
	EXPECT_EQ(2048, pmd_kb(q));
	EXPECT_EQ(128 + SIGSEGV, child_write(q));

	EXPECT_EQ(0, munmap(p, 4 * BLK));
	EXPECT_EQ(0, gp_free(self->fd, h));
	pool_whole(_metadata);
}

TEST_F(hm, nohugepage_maps_page_by_page)
{
	uint64_t h;
	char *p;

	NEED_HUGE();
	h = map_new(_metadata, self->fd, 4 * MiB, &p);
	ASSERT_NE(0, h);
	ASSERT_EQ(0, madvise(p, 4 * MiB, MADV_NOHUGEPAGE));
	gp_fill_pages(p, 4 * MiB, 9);
	EXPECT_EQ(0, pmd_kb(p));
	EXPECT_EQ(4096, gp_vma_kb(p, "Rss"));
	EXPECT_EQ(0, gp_check_pages(p, 4 * MiB, 9));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	pool_whole(_metadata);
}

/* O_DIRECT from one 2 MiB entry to the ram disk and back into another. */
TEST_F(hm, direct_io_through_entries)
{
	uint64_t a, b;
	char *p, *q;
	int dev;

	NEED_HUGE();
	dev = gp_ramdisk(O_RDWR | O_DIRECT);
	if (dev < 0)
		SKIP(return, "no ram disk: %s", strerror(-dev));
	a = map_new(_metadata, self->fd, BLK, &p);
	b = map_new(_metadata, self->fd, BLK, &q);
	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	gp_fill_pages(p, BLK, 17);
	EXPECT_EQ(2048, pmd_kb(p));
	EXPECT_EQ((ssize_t)BLK, pwrite(dev, p, BLK, 0));
	EXPECT_EQ(0, pmd_kb(q));
	EXPECT_EQ((ssize_t)BLK, pread(dev, q, BLK, 0));
	EXPECT_EQ(2048, pmd_kb(q));
	EXPECT_EQ(0, gp_check_pages(q, BLK, 17));
	close(dev);
	EXPECT_EQ(0, munmap(p, BLK));
	EXPECT_EQ(0, munmap(q, BLK));
	EXPECT_EQ(0, gp_free(self->fd, a));
	EXPECT_EQ(0, gp_free(self->fd, b));
	pool_whole(_metadata);
}

/*
 * vmsplice takes pages through a 2 MiB entry: the freed chunk is held in
 * quarantine, the pipe keeps the bytes, and once read the block is back,
 * zeroed.
 */
TEST_F(hm, vmsplice_holds_a_mapped_block)
{
	unsigned char buf[64 * KiB];
	struct iovec iov;
	int pfd[2];
	uint64_t h;
	char *p;

	NEED_HUGE();
	h = map_new(_metadata, self->fd, BLK, &p);
	ASSERT_NE(0, h);
	gp_fill_pages(p, BLK, 21);
	ASSERT_EQ(2048, pmd_kb(p));
	ASSERT_EQ(0, pipe(pfd));
	iov.iov_base = p + BLK / 2;
	iov.iov_len = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(buf), vmsplice(pfd[1], &iov, 1, 0));
	ASSERT_EQ(0, munmap(p, BLK));
	ASSERT_EQ(0, gp_free(self->fd, h));
	ASSERT_EQ(0, gp_wait_quiet(10000, 0));
	EXPECT_EQ(BLK, gp_pool().quarantined);
	ASSERT_EQ((ssize_t)sizeof(buf), read(pfd[0], buf, sizeof(buf)));
	EXPECT_EQ(0, gp_check_pages((char *)buf, sizeof(buf), 21 + 256));
	close(pfd[0]);
	close(pfd[1]);
	pool_whole(_metadata);
	h = map_new(_metadata, self->fd, POOL, &p);
	ASSERT_NE(0, h);
	EXPECT_TRUE(gp_all_bytes(p, POOL, 0));
	EXPECT_EQ(0, munmap(p, POOL));
	EXPECT_EQ(0, gp_free(self->fd, h));
}

/*
 * 16 and 64 KiB pages (arm64): the kernel folds the PTEs of a block into
 * contiguous entries (no figure in smaps says so), given a folio per block
 * and a mapping congruent to the chunk's pool offset modulo 2 MiB: the
 * module's part, checked here with what it means for the bytes.  The
 * pool's first chunk is at offset 0, the next one a page further.
 */
TEST_F(hm, cont_entries_placed)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t a, h;
	char *p, *q;

	if (pg == 4096)
		SKIP(return, "4 KiB pages: PMD entries (the tests above)");
	if (!kernel_can_huge_map())
		SKIP(return, "no contiguous entries for modules before 6.10");
	ASSERT_EQ(1, gp_proc_num("HugeMaps"));
	EXPECT_EQ(pg >> 10, gp_proc_num("PageSize"));
	EXPECT_EQ(2048, gp_proc_num("HugeMapSize"));
	h = map_new(_metadata, self->fd, 8 * MiB, &p);
	ASSERT_NE(0, h);
	EXPECT_EQ(0, (unsigned long)p % BLK);
	/* Mapped whole at mmap, zero, then what one mapping writes. */
	EXPECT_EQ(8192, gp_vma_kb(p, "Rss"));
	EXPECT_TRUE(gp_all_bytes(p, 8 * MiB, 0));
	gp_fill_pages(p, 8 * MiB, 2);
	a = map_new(_metadata, self->fd, 4 * MiB, &q);
	ASSERT_NE(0, a);
	EXPECT_EQ(0, (unsigned long)q % BLK);
	/* Split and unfolded by the kernel: the bytes stay. */
	ASSERT_EQ(0, munmap(p + BLK + pg, pg));
	ASSERT_EQ(0, mprotect(p + 2 * BLK + 3 * pg, pg, PROT_READ));
	EXPECT_EQ(128 + SIGSEGV, child_write(p + 2 * BLK + 3 * pg));
	EXPECT_EQ(0, gp_check_pages(p, BLK, 2));
	EXPECT_EQ(0, gp_check_pages(p + 2 * BLK, 2 * BLK,
				    2 + 2 * BLK / GP_PG));
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, munmap(q, 4 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	EXPECT_EQ(0, gp_free(self->fd, a));
	pool_whole(_metadata);
	/* One page in, the next chunk's mapping is one page past 2 MiB. */
	a = gp_alloc(self->fd, pg);
	ASSERT_NE(0, a);
	h = map_new(_metadata, self->fd, 4 * MiB, &p);
	ASSERT_NE(0, h);
	EXPECT_EQ(pg, (long)((unsigned long)p % BLK));
	EXPECT_TRUE(gp_all_bytes(p, 4 * MiB, 0));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, gp_free(self->fd, h));
	EXPECT_EQ(0, gp_free(self->fd, a));
	pool_whole(_metadata);
}

/* huge_maps=0: page by page on any kernel; =1 refused where it cannot be. */
TEST(huge_maps_param)
{
	long long huge;
	uint64_t h;
	char *p;
	int fd;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=8M"));
	huge = gp_proc_num("HugeMaps");
	ASSERT_EQ(0, gp_unload_wait(5000));
	/* The default: 2 MiB entries wherever the kernel can. */
	ASSERT_EQ(kernel_can_huge_map(), huge);
	if (!huge)
		EXPECT_EQ(-EINVAL, gp_load_1("pool_size=8M huge_maps=1"));
	ASSERT_EQ(0, gp_load_1("pool_size=8M huge_maps=0"));
	EXPECT_EQ(0, gp_proc_num("HugeMaps"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	h = gp_alloc(fd, 4 * MiB);
	ASSERT_NE(0, h);
	p = gp_map(fd, h, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(4096, gp_vma_kb(p, "Rss"));
	EXPECT_TRUE(gp_all_bytes(p, 4 * MiB, 0));
	EXPECT_GE(0, pmd_kb(p));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	close(fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
