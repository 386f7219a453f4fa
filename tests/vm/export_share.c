// SPDX-License-Identifier: GPL-2.0
/*
 * export_share: a chunk is shared by EXPORT-ing it as a chunk fd and
 * passing that (SCM_RIGHTS, fork).  The receiver maps it at offset 0 with
 * the chunk's length and asks its size with CHUNK_INFO; the chunk lives
 * while any fd or mapping does, even after its allocator FREEs it or
 * exits.  A process that was not given the chunk cannot reach it: not
 * through its own /dev/gpupool file with any handle or offset, nor
 * through another process's handle numbers.
 */
#include <sys/socket.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define CH	(MiB + GP_PG)	/* a chunk of 1 MiB and a page */

GP_POOL_FIXTURE(pool, "pool_size=16M", 5000)

TEST_F(pool, chunk_info)
{
	struct gpupool_chunk_info ci;
	struct gpupool_alloc a;
	int cfd;

	ASSERT_EQ(0, gp_alloc_ex(self->fd, CH - 100, 0, 0, &a));
	cfd = gp_export(self->fd, a.handle, 0);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(0, fcntl(cfd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(cfd, F_GETFL) & O_ACCMODE);
	memset(&ci, 0, sizeof(ci));
	ASSERT_EQ(0, gp_ioc(cfd, GPUPOOL_IOC_CHUNK_INFO, &ci));
	EXPECT_EQ(CH, ci.size);
	EXPECT_EQ(a.chunk_node, ci.node);
	ci.flags = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(cfd, GPUPOOL_IOC_CHUNK_INFO, &ci));
	memset(&ci, 0, sizeof(ci));
	ci.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(cfd, GPUPOOL_IOC_CHUNK_INFO, &ci));
	close(cfd);

	cfd = gp_export(self->fd, a.handle, GPUPOOL_EXPORT_CLOEXEC);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(cfd, F_GETFD) & FD_CLOEXEC);

	/* The chunk fd maps at offset 0 with the chunk's length only. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, CH, PROT_READ, MAP_SHARED, cfd, GP_PG));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, CH - GP_PG, PROT_READ, MAP_SHARED, cfd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, CH, PROT_READ, MAP_PRIVATE, cfd, 0));
	EXPECT_EQ(EINVAL, errno);
	close(cfd);

	/* A read-only /dev file exports read-only chunk fds. */
	int ro = open(GP_DEV, O_RDONLY | O_CLOEXEC);
	uint64_t h;

	ASSERT_LE(0, ro);
	h = gp_alloc(ro, 4096);
	ASSERT_NE(0, h);
	cfd = gp_export(ro, h, 0);
	ASSERT_LE(0, cfd);
	EXPECT_EQ(O_RDONLY, fcntl(cfd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0));
	EXPECT_EQ(EACCES, errno);
	close(cfd);
	close(ro);
}

/* A worker fills a chunk and passes it over a socket, then exits. */
TEST_F(pool, scm_rights)
{
	int sv[2], cfd, status;
	struct gpupool_chunk_info ci;
	pid_t pid;
	char *p;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = gp_open_dev(), c;
		uint64_t h;
		char *q;

		close(sv[0]);
		h = fd < 0 ? 0 : gp_alloc(fd, CH);
		if (!h)
			_exit(1);
		q = gp_map(fd, h, CH);
		if (q == MAP_FAILED)
			_exit(2);
		memset(q, 0x42, CH);
		c = gp_export(fd, h, GPUPOOL_EXPORT_CLOEXEC);
		if (c < 0 || gp_send_fd(sv[1], c, NULL, 0, 0))
			_exit(3);
		/* Exit: the file, its handle and the mapping go. */
		_exit(0);
	}
	close(sv[1]);
	cfd = gp_recv_fd(sv[0], NULL, 0, 0);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	usleep(100 * 1000);
	EXPECT_EQ(CH, gp_pool().in_use);
	memset(&ci, 0, sizeof(ci));
	ASSERT_EQ(0, gp_ioc(cfd, GPUPOOL_IOC_CHUNK_INFO, &ci));
	ASSERT_EQ(CH, ci.size);
	p = mmap(NULL, ci.size, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(gp_all_bytes(p, CH, 0x42));
	close(cfd);
	close(sv[0]);
	/* The mapping alone keeps it. */
	usleep(100 * 1000);
	EXPECT_EQ(CH, gp_pool().in_use);
	EXPECT_EQ(0, munmap(p, CH));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
}

/* A child inherits a chunk fd (no CLOEXEC) across fork. */
TEST_F(pool, fork_inherits)
{
	uint64_t h = gp_alloc(self->fd, CH);
	int cfd, status;
	pid_t pid;
	char *p;

	ASSERT_NE(0, h);
	cfd = gp_export(self->fd, h, 0);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, gp_free(self->fd, h));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char *q = mmap(NULL, CH, PROT_READ | PROT_WRITE, MAP_SHARED,
			       cfd, 0);

		if (q == MAP_FAILED)
			_exit(1);
		q[CH - 1] = 9;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	p = mmap(NULL, CH, PROT_READ, MAP_SHARED, cfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(9, p[CH - 1]);
	munmap(p, CH);
	close(cfd);
}

/*
 * Isolation: another process with its own /dev/gpupool file tries every
 * handle the owner has (and neighbours, and plain offsets) and reaches
 * nothing; its own handles map only its own chunk.
 */
static int try_to_reach(void *arg)
{
	uint64_t *owner_handles = arg, h, own;
	int fd = gp_open_dev(), i;
	char *p;

	if (fd < 0)
		return 1;
	for (i = 0; i < 8; i++) {
		h = owner_handles[i];
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, h);
		if (p != MAP_FAILED)
			return 2;
		if (gp_free(fd, h) != -EINVAL || gp_export(fd, h, 0) != -EINVAL)
			return 3;
	}
	for (h = 0; h < 64 * GP_PG; h += GP_PG) {
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, h);
		if (p != MAP_FAILED)
			return 4;
	}
	/* Its own chunk, with whatever handle number, holds zeros only. */
	own = gp_alloc(fd, 4096);
	if (!own)
		return 5;
	p = gp_map(fd, own, 4096);
	if (p == MAP_FAILED || !gp_all_bytes(p, 4096, 0))
		return 6;
	return 0;
}

TEST_F(pool, unreachable_without_fd)
{
	uint64_t handles[8];
	char *p;
	int i;

	for (i = 0; i < 8; i++) {
		handles[i] = gp_alloc(self->fd, 4096);
		ASSERT_NE(0, handles[i]);
		p = gp_map(self->fd, handles[i], 4096);
		ASSERT_NE(MAP_FAILED, p);
		memset(p, 0xee, 4096);
		munmap(p, 4096);
	}
	EXPECT_EQ(0, gp_run_child(try_to_reach, handles));
	/* Nothing of ours was touched. */
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(8 * gp_chunk_of(4096), gp_pool().in_use);
	for (i = 0; i < 8; i++) {
		p = gp_map(self->fd, handles[i], 4096);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_TRUE(gp_all_bytes(p, 4096, 0xee));
		munmap(p, 4096);
	}
}

/* EXPORT after FREE: the handle is dead; the earlier fd still holds. */
TEST_F(pool, export_after_free)
{
	uint64_t h = gp_alloc(self->fd, 4096);
	int cfd;

	ASSERT_NE(0, h);
	cfd = gp_export(self->fd, h, 0);
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, gp_free(self->fd, h));
	EXPECT_EQ(-EINVAL, gp_export(self->fd, h, 0));
	close(cfd);
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
	EXPECT_EQ(0, gp_pool().in_use);
}

TEST_HARNESS_MAIN
