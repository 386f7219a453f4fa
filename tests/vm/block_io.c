// SPDX-License-Identifier: GPL-2.0
/*
 * block_io: the block layer reads into and writes from pool chunks.
 *
 * O_DIRECT and Linux AIO take the chunk's pages with pin_user_pages() for
 * the length of one request and hand them to the block driver; a loader
 * that reads its shards with O_DIRECT does exactly this, and on the debug
 * kernel (KASAN, lockdep, kmemleak) every such path must stay quiet:
 *  - O_DIRECT pread/pwrite between a chunk and a brd ramdisk, whole chunks
 *    and sector-aligned pieces of them, one iovec spanning two chunks;
 *  - Linux AIO (io_submit) reads into several chunks at once, and a write;
 *  - a chunk freed, unmapped and its device fd closed while an AIO read
 *    into it has not been reaped: nothing is lost or reused early, the
 *    pool comes back whole and the module unloads;
 *  - an ext4 file system on the ramdisk: a file written through the page
 *    cache, read back with O_DIRECT (sync and AIO) into a chunk.
 * Raw syscalls: the test build links nothing extra.
 */
#define _GNU_SOURCE
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <sys/mount.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define CH	(1 * MiB)
#define NCH	4

FIXTURE(blk) {
	int fd;			/* /dev/gpupool */
	int dev;		/* the ramdisk, O_DIRECT */
	uint64_t dev_size;
	uint64_t h[NCH];
	unsigned char *p[NCH];
};

FIXTURE_SETUP(blk)
{
	int i;

	for (i = 0; i < NCH; i++)
		self->p[i] = MAP_FAILED;
	self->fd = -1;
	self->dev = -1;
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=8M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	for (i = 0; i < NCH; i++) {
		self->h[i] = gp_alloc(self->fd, CH);
		ASSERT_NE(0, self->h[i]);
		self->p[i] = gp_map(self->fd, self->h[i], CH);
		ASSERT_NE(MAP_FAILED, self->p[i]);
	}
	self->dev = gp_ramdisk(O_RDWR | O_DIRECT);
	if (self->dev < 0)
		GP_SKIP("no ramdisk (brd) for O_DIRECT: %s",
			strerror(-self->dev));
	ASSERT_EQ(0, ioctl(self->dev, BLKGETSIZE64, &self->dev_size));
	ASSERT_LE(4 * CH, self->dev_size);
}

FIXTURE_TEARDOWN(blk)
{
	int i;

	if (self->dev >= 0)
		close(self->dev);
	for (i = 0; i < NCH; i++)
		if (self->p[i] != MAP_FAILED)
			munmap(self->p[i], CH);
	if (self->fd >= 0)
		close(self->fd);
	EXPECT_EQ(0, gp_wait_quiet(10000, 1));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed + (i >> 12));
}

/* The first byte where p differs from fill(seed), or len. */
static size_t check(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 31 + seed + (i >> 12)))
			break;
	return i;
}

TEST_F(blk, odirect_whole_chunks)
{
	fill(self->p[0], CH, 7);
	ASSERT_EQ((ssize_t)CH, pwrite(self->dev, self->p[0], CH, 0));
	memset(self->p[1], 0xee, CH);
	ASSERT_EQ((ssize_t)CH, pread(self->dev, self->p[1], CH, 0));
	EXPECT_EQ(CH, check(self->p[1], CH, 7));
}

/* Sector-aligned pieces at odd places inside chunks, both directions. */
TEST_F(blk, odirect_pieces)
{
	const size_t off = 3 * 512, len = 5 * 4096 + 512;

	fill(self->p[0] + off, len, 11);
	ASSERT_EQ((ssize_t)len, pwrite(self->dev, self->p[0] + off, len,
				       2 * CH + 4096));
	memset(self->p[1], 0, CH);
	ASSERT_EQ((ssize_t)len, pread(self->dev, self->p[1] + 7 * 512, len,
				      2 * CH + 4096));
	EXPECT_EQ(len, check(self->p[1] + 7 * 512, len, 11));
	/* Nothing around the piece was touched. */
	EXPECT_TRUE(gp_all_bytes(self->p[1], 7 * 512, 0));
	EXPECT_TRUE(gp_all_bytes(self->p[1] + 7 * 512 + len,
				 CH - 7 * 512 - len, 0));
}

/* One request gathering from two chunks and scattering into two others. */
TEST_F(blk, odirect_iovecs_across_chunks)
{
	struct iovec out[2] = {
		{ self->p[0] + CH / 2, CH / 2 }, { self->p[1], CH / 2 },
	};
	struct iovec in[2] = {
		{ self->p[2] + 4096, CH / 4 }, { self->p[3], 3 * CH / 4 },
	};

	fill(self->p[0] + CH / 2, CH / 2, 3);
	fill(self->p[1], CH / 2, 4);
	ASSERT_EQ((ssize_t)CH, pwritev(self->dev, out, 2, CH));
	ASSERT_EQ((ssize_t)CH, preadv(self->dev, in, 2, CH));
	EXPECT_EQ(0, memcmp(self->p[2] + 4096, self->p[0] + CH / 2, CH / 4));
	EXPECT_EQ(0, memcmp(self->p[3], self->p[0] + CH / 2 + CH / 4, CH / 4));
	EXPECT_EQ(0, memcmp(self->p[3] + CH / 4, self->p[1], CH / 2));
}

static int aio_setup(unsigned int n, aio_context_t *ctx)
{
	*ctx = 0;
	return syscall(__NR_io_setup, n, ctx) ? -errno : 0;
}

static void aio_prep(struct iocb *cb, int op, int fd, void *buf, size_t len,
		     uint64_t off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_lio_opcode = op;
	cb->aio_fildes = fd;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = len;
	cb->aio_offset = (int64_t)off;
	cb->aio_data = (uintptr_t)buf;
}

/* Submit n, reap n; each event's result checked against its length. */
static int aio_run(aio_context_t ctx, struct iocb **cbs, int n)
{
	struct io_event ev[NCH];
	int got = 0, i, r;

	r = syscall(__NR_io_submit, ctx, n, cbs);
	if (r != n)
		return r < 0 ? -errno : -EIO;
	while (got < n) {
		r = syscall(__NR_io_getevents, ctx, 1, n - got, ev, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		for (i = 0; i < r; i++) {
			struct iocb *cb = (struct iocb *)(uintptr_t)ev[i].obj;

			if (ev[i].res != (int64_t)cb->aio_nbytes)
				return ev[i].res < 0 ? (int)ev[i].res : -EIO;
		}
		got += r;
	}
	return 0;
}

TEST_F(blk, aio_reads_into_chunks)
{
	struct iocb cb[NCH], *cbs[NCH];
	aio_context_t ctx;
	unsigned char *src = NULL;
	int i;

	ASSERT_EQ(0, aio_setup(NCH, &ctx));
	ASSERT_EQ(0, posix_memalign((void **)&src, 4096, NCH * CH));
	for (i = 0; i < NCH; i++)
		fill(src + i * CH, CH, 40 + i);
	ASSERT_EQ((ssize_t)(NCH * CH), pwrite(self->dev, src, NCH * CH, 0));
	free(src);

	/* Chunk i gets the device's chunk-sized piece NCH-1-i. */
	for (i = 0; i < NCH; i++) {
		memset(self->p[i], 0, CH);
		aio_prep(&cb[i], IOCB_CMD_PREAD, self->dev, self->p[i], CH,
			 (uint64_t)(NCH - 1 - i) * CH);
		cbs[i] = &cb[i];
	}
	ASSERT_EQ(0, aio_run(ctx, cbs, NCH));
	for (i = 0; i < NCH; i++)
		EXPECT_EQ(CH, check(self->p[i], CH, 40 + NCH - 1 - i))
			TH_LOG("chunk %d", i);

	/* And a write from a chunk, read back through the page allocator. */
	fill(self->p[0], CH, 99);
	aio_prep(&cb[0], IOCB_CMD_PWRITE, self->dev, self->p[0], CH, CH);
	ASSERT_EQ(0, aio_run(ctx, cbs, 1));
	memset(self->p[1], 0, CH);
	ASSERT_EQ((ssize_t)CH, pread(self->dev, self->p[1], CH, CH));
	EXPECT_EQ(CH, check(self->p[1], CH, 99));
	syscall(__NR_io_destroy, ctx);
}

/*
 * A read in flight into a chunk whose owner lets go of everything before
 * reaping: the request holds its own page references, so nothing the
 * kernel frees may be touched (KASAN) and the pool must come back whole.
 */
TEST_F(blk, aio_chunk_freed_before_reap)
{
	struct iocb cb[NCH], *cbs[NCH];
	struct io_event ev[NCH];
	aio_context_t ctx;
	int i, got = 0, r;

	ASSERT_EQ(0, aio_setup(NCH, &ctx));
	for (i = 0; i < NCH; i++) {
		aio_prep(&cb[i], IOCB_CMD_PREAD, self->dev, self->p[i], CH,
			 (uint64_t)i * CH);
		cbs[i] = &cb[i];
	}
	ASSERT_EQ(NCH, syscall(__NR_io_submit, ctx, NCH, cbs));
	for (i = 0; i < NCH; i++) {
		munmap(self->p[i], CH);
		self->p[i] = MAP_FAILED;
		EXPECT_EQ(0, gp_free(self->fd, self->h[i]));
	}
	close(self->fd);
	self->fd = -1;
	while (got < NCH) {
		r = syscall(__NR_io_getevents, ctx, 1, NCH - got, ev, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		ASSERT_LT(0, r);
		for (i = 0; i < r; i++)
			EXPECT_EQ((int64_t)CH, ev[i].res);
		got += r;
	}
	syscall(__NR_io_destroy, ctx);
	ASSERT_EQ(0, gp_wait_quiet(10000, 1));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(8 * MiB, gp_pool().free);
}

/*
 * ext4 on the ramdisk: the path a loader reading shards with O_DIRECT
 * takes (the file system maps file blocks, the block layer pins the
 * chunk's pages).
 */
TEST_F_TIMEOUT(blk, ext4_file_odirect_into_chunk, 300)
{
	const size_t flen = 3 * CH + 4096;
	char dir[] = "/tmp/gpext4XXXXXX", path[64];
	struct iocb cb, *cbs[1] = { &cb };
	aio_context_t ctx;
	unsigned char *buf = NULL;
	int f, mounted;

	if (access("/sbin/mkfs.ext4", X_OK))
		GP_SKIP("no mkfs.ext4 (e2fsprogs) in the VM's root");
	close(self->dev);
	self->dev = -1;
	/* 8 MiB, no journal: mkfs writes little (it is slow under KASAN). */
	ASSERT_EQ(0, system("/sbin/mkfs.ext4 -q -F -O ^has_journal "
			    "-E nodiscard " GP_RAMDISK " 8M >/dev/null 2>&1"));
	ASSERT_NE(NULL, mkdtemp(dir));
	system("modprobe ext4 2>/dev/null");
	mounted = !mount(GP_RAMDISK, dir, "ext4", 0, NULL);
	if (!mounted) {
		rmdir(dir);
		GP_SKIP("mount ext4: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/shard", dir);

	/* Written through the page cache, which is then dropped. */
	f = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	ASSERT_LE(0, f);
	ASSERT_EQ(0, posix_memalign((void **)&buf, 4096, flen));
	fill(buf, flen, 5);
	ASSERT_EQ((ssize_t)flen, write(f, buf, flen));
	ASSERT_EQ(0, fsync(f));
	EXPECT_EQ(0, posix_fadvise(f, 0, 0, POSIX_FADV_DONTNEED));
	close(f);
	free(buf);

	f = open(path, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, f) TH_LOG("O_DIRECT on ext4: %s", strerror(errno));
	memset(self->p[0], 0, CH);
	ASSERT_EQ((ssize_t)CH, pread(f, self->p[0], CH, 4096));
	/* File byte 4096 + i is fill(5)'s byte i with seed 6 (4096 * 31 is
	 * 0 mod 256, and (4096 + i) >> 12 is one more than i >> 12).
	 */
	EXPECT_EQ(CH, check(self->p[0], CH, 6));

	/* The tail: a short read at the end of the file (3 MiB is 768 pages:
	 * seed 5 + 768 mod 256 = 5 again).
	 */
	memset(self->p[1], 0, CH);
	ASSERT_EQ((ssize_t)4096, pread(f, self->p[1], CH, 3 * CH));
	EXPECT_EQ(4096, check(self->p[1], 4096, 5));
	EXPECT_TRUE(gp_all_bytes(self->p[1] + 4096, CH - 4096, 0));

	ASSERT_EQ(0, aio_setup(1, &ctx));
	aio_prep(&cb, IOCB_CMD_PREAD, f, self->p[2], CH, 0);
	EXPECT_EQ(0, aio_run(ctx, cbs, 1));
	EXPECT_EQ(CH, check(self->p[2], CH, 5));
	syscall(__NR_io_destroy, ctx);
	close(f);

	EXPECT_EQ(0, umount(dir));
	rmdir(dir);
}

TEST_HARNESS_MAIN
