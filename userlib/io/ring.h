/* SPDX-License-Identifier: MIT */
/*
 * ring.h - a small io_uring on raw system calls, shaped like liburing's:
 * get an SQE, prep it, submit; peek at CQEs and mark them seen; register
 * fixed buffers.  No SQPOLL, one mapping for both rings (5.4's
 * IORING_FEAT_SINGLE_MMAP).  A ring is used by one thread at a time.
 */
#ifndef GPUPOOL_USERLIB_IO_RING_H
#define GPUPOOL_USERLIB_IO_RING_H

#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>

struct gp_ring {
	int fd;
	unsigned int entries;
	void *map;
	size_t map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	unsigned int sqe_tail;		/* SQEs handed out, published or not */
	unsigned int unsubmitted;	/* published, not yet taken by the kernel */
};

/* 0 or -errno (-EOPNOTSUPP: a kernel without the single mapping). */
int gp_ring_init(struct gp_ring *r, unsigned int entries);
void gp_ring_exit(struct gp_ring *r);

/* A zeroed SQE, or NULL when the submission queue is full. */
struct io_uring_sqe *gp_ring_get_sqe(struct gp_ring *r);

static inline void gp_ring_prep_read(struct io_uring_sqe *sqe, int fd,
				     void *buf, unsigned int len,
				     uint64_t offset, void *user_data)
{
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->off = offset;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = len;
	sqe->user_data = (uint64_t)(uintptr_t)user_data;
}

static inline void gp_ring_prep_read_fixed(struct io_uring_sqe *sqe, int fd,
					   void *buf, unsigned int len,
					   uint64_t offset, int buf_index,
					   void *user_data)
{
	gp_ring_prep_read(sqe, fd, buf, len, offset, user_data);
	sqe->opcode = IORING_OP_READ_FIXED;
	sqe->buf_index = (uint16_t)buf_index;
}

/* SQEs got and not yet taken by the kernel. */
static inline unsigned int gp_ring_sq_ready(const struct gp_ring *r)
{
	return r->sqe_tail - *r->sq_tail + r->unsubmitted;
}

/* Submit what is queued and wait for wait_nr completions (EINTR retried):
 * 0 or -errno.  gp_ring_submit() waits for none.
 */
int gp_ring_submit_and_wait(struct gp_ring *r, unsigned int wait_nr);

static inline int gp_ring_submit(struct gp_ring *r)
{
	return gp_ring_submit_and_wait(r, 0);
}

/* The oldest completion not yet seen, or NULL. */
static inline struct io_uring_cqe *gp_ring_peek_cqe(struct gp_ring *r)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return NULL;
	return &r->cqes[head & *r->cq_mask];
}

static inline void gp_ring_cqe_seen(struct gp_ring *r)
{
	__atomic_store_n(r->cq_head, *r->cq_head + 1, __ATOMIC_RELEASE);
}

/* A sparse table of nr fixed buffers (5.19): 0 or -errno. */
int gp_ring_register_buffers_sparse(struct gp_ring *r, unsigned int nr);
/* Fixed buffer idx becomes [base, base + len) (len 0: empty). */
int gp_ring_register_buffer_update(struct gp_ring *r, unsigned int idx,
				   void *base, size_t len);

#endif /* GPUPOOL_USERLIB_IO_RING_H */
