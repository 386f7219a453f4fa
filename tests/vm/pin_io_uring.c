// SPDX-License-Identifier: GPL-2.0
/*
 * pin_io_uring: chunks can be pinned long-term (FOLL_LONGTERM GUP, as
 * cudaHostRegister and io_uring fixed buffers do), and a chunk freed while
 * pinned is quarantined, not reused, until the pin goes.
 *
 * io_uring (raw syscalls; the test build links nothing extra):
 *  - Linux 6.1 pins the buffer (pin_user_pages(FOLL_LONGTERM)) and then
 *    refuses any file-backed vma that is not shmem/hugetlbfs with
 *    EOPNOTSUPP.  EOPNOTSUPP therefore means the long-term pin succeeded;
 *    EFAULT would mean GUP refused our mapping (VM_IO/VM_PFNMAP, movable
 *    pages) - the failure this test exists to catch.
 *  - Linux 6.4+ (6.12 here) registers the chunk as a fixed buffer.  Then an
 *    O_DIRECT READ_FIXED from a block device (brd ramdisk: the VM's root is
 *    9p and its /tmp tmpfs, neither does O_DIRECT) lands in the chunk; the
 *    chunk freed while registered is quarantined (STATS, /proc), its bytes
 *    untouched (a WRITE_FIXED from it reads back the same), never handed
 *    out; after unregistering it is zeroed and back in the pool.
 */
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

/* One whole 2 MiB block: where the module maps such blocks with 2 MiB
 * entries (huge_maps), registering it pins it through one.
 */
#define CH	(2 * MiB)

struct ring {
	int fd;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int ring_init(struct ring *r)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP && cq_len > sq_len)
		sq_len = cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED |
		  MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -errno;
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED |
			  MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			return -errno;
	}
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -errno;
	r->sq_head = (unsigned int *)(sq + p.sq_off.head);
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

static int ring_register(struct ring *r, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return syscall(__NR_io_uring_register, r->fd,
		       IORING_REGISTER_BUFFERS, &iov, 1) ? -errno : 0;
}

static int ring_unregister(struct ring *r)
{
	return syscall(__NR_io_uring_register, r->fd,
		       IORING_UNREGISTER_BUFFERS, NULL, 0) ? -errno : 0;
}

/* One READ_FIXED / WRITE_FIXED of len bytes at off, waited for: res. */
static int ring_rw_fixed(struct ring *r, int op, int fd, void *buf,
			 unsigned int len, uint64_t off)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = op;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = off;
	sqe->buf_index = 0;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0)
		return -errno;
	head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

FIXTURE(pin) {
	int fd;
	uint64_t h;
	char *p;
	struct ring r;
	int reg;		/* result of registering the chunk */
};

FIXTURE_SETUP(pin)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=4M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	self->h = gp_alloc(self->fd, CH);
	ASSERT_NE(0, self->h);
	self->p = gp_map(self->fd, self->h, CH);
	ASSERT_NE(MAP_FAILED, self->p);
	ASSERT_EQ(0, ring_init(&self->r)) TH_LOG("io_uring_setup: %s", strerror(errno));
	self->reg = ring_register(&self->r, self->p, CH);
}

FIXTURE_TEARDOWN(pin)
{
	if (self->r.fd > 0)
		close(self->r.fd);
	close(self->fd);
	if (self->p != MAP_FAILED)
		munmap(self->p, CH);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

/* GUP pins the chunk long-term; an anonymous buffer registers as a control. */
TEST_F(pin, longterm_pin_allowed)
{
	struct ring r2;
	void *anon;

	ASSERT_NE(-EFAULT, self->reg)
		TH_LOG("GUP refused a long-term pin of the chunk");
	if (self->reg == -EOPNOTSUPP)
		TH_LOG("this kernel pins, then refuses non-shmem files (6.1): pin works");
	else
		ASSERT_EQ(0, self->reg) TH_LOG("%s", strerror(-self->reg));

	anon = mmap(NULL, CH, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	ASSERT_EQ(0, ring_init(&r2));
	EXPECT_EQ(0, ring_register(&r2, anon, CH));
	close(r2.fd);
	munmap(anon, CH);

	/* A failed registration leaves no pin behind: nothing quarantined. */
	munmap(self->p, CH);
	self->p = MAP_FAILED;
	if (self->reg)
		EXPECT_EQ(0, gp_pool().quarantined);
}

TEST_F(pin, read_fixed_odirect)
{
	unsigned char *src = NULL;
	int dev, i;

	if (self->reg == -EOPNOTSUPP)
		GP_SKIP("io_uring on this kernel takes no file-backed buffers");
	ASSERT_EQ(0, self->reg);
	dev = gp_ramdisk(O_RDWR | O_DIRECT);
	if (dev < 0)
		GP_SKIP("no ramdisk (brd) for O_DIRECT: %s", strerror(-dev));
	ASSERT_EQ(0, posix_memalign((void **)&src, 4096, CH));
	for (i = 0; i < (int)CH; i++)
		src[i] = (unsigned char)(i * 13 + 5);
	ASSERT_EQ((ssize_t)CH, pwrite(dev, src, CH, 0));
	memset(self->p, 0, CH);

	ASSERT_EQ((int)CH, ring_rw_fixed(&self->r, IORING_OP_READ_FIXED, dev,
					 self->p, CH, 0));
	EXPECT_EQ(0, memcmp(src, self->p, CH));
	free(src);
	close(dev);
}

TEST_F(pin, freed_while_pinned_is_quarantined)
{
	struct gpupool_pool_stats s;
	unsigned char *back = NULL;
	void *buf = self->p;
	int dev, i;

	if (self->reg == -EOPNOTSUPP)
		GP_SKIP("io_uring on this kernel takes no file-backed buffers");
	ASSERT_EQ(0, self->reg);
	dev = gp_ramdisk(O_RDWR | O_DIRECT);
	if (dev < 0)
		GP_SKIP("no ramdisk (brd) for O_DIRECT: %s", strerror(-dev));
	for (i = 0; i < (int)CH; i++)
		self->p[i] = (char)(i * 3 + 1);

	/* Unmap and free: only io_uring's pin holds the pages now. */
	munmap(self->p, CH);
	self->p = MAP_FAILED;
	ASSERT_EQ(0, gp_free(self->fd, self->h));
	for (i = 0; i < 400 && gp_pool().zeroing; i++)
		usleep(5000);
	s = gp_pool();
	EXPECT_EQ(CH, s.quarantined);
	EXPECT_EQ(1, s.chunks_quarantined);
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(CH >> 10, gp_proc_num("Quarantined"));
	EXPECT_EQ(s.total, s.free + s.in_use + s.zeroing + s.quarantined);
	/* Not handed out: the whole pool is not there (and ALLOC does not
	 * wait for a quarantine to end).
	 */
	EXPECT_EQ(0, gp_alloc(self->fd, 4 * MiB));
	EXPECT_EQ(ENOMEM, errno);

	/* The device still writes from it, and it was not zeroed. */
	ASSERT_EQ((int)CH, ring_rw_fixed(&self->r, IORING_OP_WRITE_FIXED, dev,
					 buf, CH, 0));
	ASSERT_EQ(0, posix_memalign((void **)&back, 4096, CH));
	ASSERT_EQ((ssize_t)CH, pread(dev, back, CH, 0));
	for (i = 0; i < (int)CH; i++)
		if (back[i] != (unsigned char)(i * 3 + 1))
			break;
	EXPECT_EQ((int)CH, i) TH_LOG("quarantined chunk changed at byte %d", i);
	free(back);
	close(dev);

	/* Unpinned: zeroed and back in the pool within a few rechecks. */
	ASSERT_EQ(0, ring_unregister(&self->r));
	EXPECT_EQ(0, gp_wait_quiet(10000, 1));
	s = gp_pool();
	EXPECT_EQ(0, s.quarantined);
	EXPECT_EQ(4 * MiB, s.free);
	self->h = gp_alloc(self->fd, 4 * MiB);
	ASSERT_NE(0, self->h);
	self->p = gp_map(self->fd, self->h, CH);	/* wrong length */
	EXPECT_EQ(MAP_FAILED, self->p);
	buf = gp_map(self->fd, self->h, 4 * MiB);
	ASSERT_NE(MAP_FAILED, buf);
	EXPECT_TRUE(gp_all_bytes(buf, 4 * MiB, 0));
	munmap(buf, 4 * MiB);
}

/* Unloading with a pinned quarantined chunk: refused until the ring goes. */
TEST_F(pin, ring_pins_module_until_closed)
{
	if (self->reg == -EOPNOTSUPP)
		GP_SKIP("io_uring on this kernel takes no file-backed buffers");
	ASSERT_EQ(0, self->reg);
	munmap(self->p, CH);
	self->p = MAP_FAILED;
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, gp_wait_quiet(10000, 0));
	EXPECT_EQ(CH, gp_pool().quarantined);
	/* Nothing of ours is open: unload works, and the pinned pages stay
	 * with io_uring until it lets go (then the page allocator has them).
	 */
	EXPECT_EQ(0, gp_unload_wait(5000));
	close(self->r.fd);
	self->r.fd = -1;
}

TEST_HARNESS_MAIN
