// SPDX-License-Identifier: GPL-2.0
/*
 * mmap_rules: how chunks map.
 *  - MAP_SHARED only (MAP_PRIVATE: EINVAL); never executable (PROT_EXEC at
 *    mmap: EPERM; mprotect(PROT_EXEC): EACCES);
 *  - length = chunk size, offset = handle, else EINVAL;
 *  - a read-only open gives read-only mappings only;
 *  - mremap: growing fails (EFAULT, VM_DONTEXPAND), moving keeps the bytes,
 *    shrinking is a partial unmap;
 *  - mprotect: read-only then read-write again; a write while read-only
 *    is SIGSEGV;
 *  - MADV_DONTNEED drops the PTEs, a fault brings the same page back;
 *  - fork: the child shares the pages; the chunk stays out of the pool
 *    until the child unmaps too.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define CH	(2 * MiB + 3 * GP_PG)

FIXTURE(chunk) {
	int fd;
	uint64_t h;
};

FIXTURE_SETUP(chunk)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=32M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	self->h = gp_alloc(self->fd, CH);
	ASSERT_NE(0, self->h);
}

FIXTURE_TEARDOWN(chunk)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_F(chunk, bad_mappings)
{
	void *p;
	int ro;

	p = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, self->h);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, CH - GP_PG, PROT_READ, MAP_SHARED, self->fd, self->h);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, CH + GP_PG, PROT_READ, MAP_SHARED, self->fd, self->h);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* An offset inside the chunk, past it, or naming nothing. */
	p = mmap(NULL, CH - GP_PG, PROT_READ, MAP_SHARED, self->fd, self->h + GP_PG);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, GP_PG, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, CH, PROT_READ, MAP_SHARED, self->fd, self->h + (1ULL << 30));
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, CH, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, self->h);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);

	/* Read-only file: PROT_WRITE shared is refused by the VFS (EACCES). */
	ro = open(GP_DEV, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	uint64_t h2 = gp_alloc(ro, GP_PG);

	ASSERT_NE(0, h2);
	p = mmap(NULL, GP_PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, h2);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, GP_PG, PROT_READ, MAP_SHARED, ro, h2);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, GP_PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, GP_PG);
	close(ro);

	EXPECT_EQ(CH, gp_pool().in_use);
}

static int write_faults(void *p)
{
	*(volatile char *)p = 1;
	return 0;
}

TEST_F(chunk, mprotect)
{
	char *p = gp_map(self->fd, self->h, CH);

	ASSERT_NE(MAP_FAILED, p);
	p[0] = 42;
	ASSERT_EQ(0, mprotect(p, CH, PROT_READ));
	EXPECT_EQ(42, p[0]);
	EXPECT_EQ(128 + SIGSEGV, gp_run_child(write_faults, p));
	EXPECT_EQ(-1, mprotect(p, CH, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	/* Part of it only: splits the vma. */
	ASSERT_EQ(0, mprotect(p + GP_PG, GP_PG, PROT_READ | PROT_WRITE));
	p[GP_PG] = 7;
	ASSERT_EQ(0, mprotect(p, CH, PROT_READ | PROT_WRITE));
	p[0] = 43;
	EXPECT_EQ(43, p[0]);
	EXPECT_EQ(7, p[GP_PG]);
	EXPECT_EQ(0, munmap(p, CH));
}

TEST_F(chunk, mremap)
{
	char *p = gp_map(self->fd, self->h, CH), *q, *r;
	size_t i;

	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < CH; i += GP_PG)
		p[i] = (char)(i / GP_PG);

	/* Growing in place or moving: refused (VM_DONTEXPAND). */
	q = mremap(p, CH, CH + GP_PG, 0);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(EFAULT, errno);
	q = mremap(p, CH, 2 * CH, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, q);
	EXPECT_EQ(EFAULT, errno);

	/* Moving: the same pages at the new address. */
	r = mmap(NULL, CH, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	q = mremap(p, CH, CH, MREMAP_MAYMOVE | MREMAP_FIXED, r);
	ASSERT_EQ(r, q) TH_LOG("mremap move: %s", strerror(errno));
	for (i = 0; i < CH; i += GP_PG)
		if (q[i] != (char)(i / GP_PG))
			break;
	EXPECT_EQ(CH, i);

	/* Shrinking: the tail goes, the head still works. */
	p = mremap(q, CH, CH - 2 * GP_PG, 0);
	ASSERT_EQ(q, p);
	p[GP_PG] = 99;
	EXPECT_EQ(99, p[GP_PG]);
	EXPECT_EQ(0, munmap(p, CH - 2 * GP_PG));

	/* Unmapped and freed: the whole chunk is back. */
	EXPECT_EQ(0, gp_free(self->fd, self->h));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(32 * MiB, gp_pool().free);
}

TEST_F(chunk, partial_unmap_and_dontneed)
{
	char *p = gp_map(self->fd, self->h, CH), *q;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, CH);
	/* A hole in the middle: two vmas, each with its reference. */
	EXPECT_EQ(0, munmap(p + MiB, GP_PG));
	EXPECT_EQ(0x5a, p[MiB - 1]);
	EXPECT_EQ(0x5a, p[MiB + GP_PG]);

	/* DONTNEED drops the PTEs; the fault puts the same page back. */
	EXPECT_EQ(0, madvise(p, MiB, MADV_DONTNEED));
	EXPECT_TRUE(gp_all_bytes(p, MiB, 0x5a));

	/* Another mapping of the chunk sees the same bytes at once. */
	q = gp_map(self->fd, self->h, CH);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_TRUE(gp_all_bytes(q, CH, 0x5a));
	EXPECT_EQ(0, munmap(q, CH));

	EXPECT_EQ(0, gp_free(self->fd, self->h));
	EXPECT_EQ(0, munmap(p, MiB));
	/* One piece still mapped: still out of the pool. */
	usleep(100 * 1000);
	EXPECT_EQ(CH, gp_pool().in_use);
	EXPECT_EQ(0x5a, p[CH - 1]);
	EXPECT_EQ(0, munmap(p + MiB + GP_PG, CH - MiB - GP_PG));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(32 * MiB, gp_pool().free);
}

TEST_F(chunk, fork_shares)
{
	int go[2], done[2], status;
	char *p = gp_map(self->fd, self->h, CH), c;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The child sees the parent's bytes, and its writes show. */
		if (p[0] != 1)
			_exit(1);
		p[1] = 2;
		if (write(done[1], "x", 1) != 1)
			_exit(2);
		/* Wait until the parent has unmapped and freed. */
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		if (p[0] != 1 || p[2] != 3)
			_exit(4);
		memset(p, 0x77, CH);
		_exit(0);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	EXPECT_EQ(2, p[1]);
	p[2] = 3;
	EXPECT_EQ(0, munmap(p, CH));
	EXPECT_EQ(0, gp_free(self->fd, self->h));
	usleep(100 * 1000);
	/* The child's mapping keeps the chunk out of the pool. */
	EXPECT_EQ(CH, gp_pool().in_use);
	EXPECT_EQ(0, gp_pool().zeroing);
	ASSERT_EQ(1, write(go[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(32 * MiB, gp_pool().free);

	/* Whatever the child wrote is gone: the next chunk is zero. */
	self->h = gp_alloc(self->fd, 32 * MiB);
	ASSERT_NE(0, self->h);
	p = gp_map(self->fd, self->h, 32 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(gp_all_bytes(p, 32 * MiB, 0));
	munmap(p, 32 * MiB);
}

TEST_HARNESS_MAIN
