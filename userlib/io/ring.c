// SPDX-License-Identifier: MIT
/*
 * ring.c - the io_uring of the file reader, on raw system calls (no
 * liburing in the build; its shape, ring.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ring.h"

int gp_ring_init(struct gp_ring *r, unsigned int entries)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *m;

	memset(&p, 0, sizeof(p));
	memset(r, 0, sizeof(*r));
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		close(r->fd);
		return -EOPNOTSUPP;
	}
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->map_len = sq_len > cq_len ? sq_len : cq_len;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	if (r->map == MAP_FAILED)
		goto fail;
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		munmap(r->map, r->map_len);
		goto fail;
	}
	m = r->map;
	r->entries = p.sq_entries;
	r->sq_head = (unsigned int *)(m + p.sq_off.head);
	r->sq_tail = (unsigned int *)(m + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(m + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(m + p.sq_off.array);
	r->cq_head = (unsigned int *)(m + p.cq_off.head);
	r->cq_tail = (unsigned int *)(m + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(m + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);
	r->sqe_tail = *r->sq_tail;
	return 0;
fail:
	{
		int e = errno;

		close(r->fd);
		return -e;
	}
}

void gp_ring_exit(struct gp_ring *r)
{
	munmap(r->sqes, r->sqes_len);
	munmap(r->map, r->map_len);
	close(r->fd);
}

struct io_uring_sqe *gp_ring_get_sqe(struct gp_ring *r)
{
	unsigned int head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	struct io_uring_sqe *sqe;
	unsigned int idx;

	if (r->sqe_tail - head >= r->entries)
		return NULL;
	idx = r->sqe_tail & *r->sq_mask;
	sqe = &r->sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	r->sq_array[idx] = idx;
	r->sqe_tail++;
	return sqe;
}

/* Hand the SQEs got since the last call to the kernel's side of the ring. */
static void gp_ring_flush(struct gp_ring *r)
{
	r->unsubmitted += r->sqe_tail - *r->sq_tail;
	__atomic_store_n(r->sq_tail, r->sqe_tail, __ATOMIC_RELEASE);
}

int gp_ring_submit_and_wait(struct gp_ring *r, unsigned int wait_nr)
{
	unsigned int flags = wait_nr ? IORING_ENTER_GETEVENTS : 0;
	long ret;

	gp_ring_flush(r);
	for (;;) {
		ret = syscall(__NR_io_uring_enter, r->fd, r->unsubmitted,
			      wait_nr, flags, NULL, 0);
		if (ret >= 0) {
			r->unsubmitted -= (unsigned int)ret;
			if (!r->unsubmitted || wait_nr)
				return 0;
			continue;
		}
		if (errno == EINTR) {
			/* The wait was interrupted: submitted nothing more
			 * (or everything); look at the completions again.
			 */
			if (wait_nr && !r->unsubmitted)
				return 0;
			continue;
		}
		if (errno == EAGAIN || errno == EBUSY) {
			/* Completions must be reaped first. */
			return r->unsubmitted ? 0 : -errno;
		}
		return -errno;
	}
}

static int gp_ring_register(struct gp_ring *r, unsigned int op, void *arg,
			    unsigned int nr)
{
	return syscall(__NR_io_uring_register, r->fd, op, arg, nr) < 0 ?
	       -errno : 0;
}

int gp_ring_register_buffer_update(struct gp_ring *r, unsigned int idx,
				   void *base, size_t len)
{
	struct iovec iov = { .iov_base = base, .iov_len = len };
	struct io_uring_rsrc_update2 up;

	memset(&up, 0, sizeof(up));
	up.offset = idx;
	up.data = (uint64_t)(uintptr_t)&iov;
	up.nr = 1;
	return gp_ring_register(r, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
}

int gp_ring_register_buffers_sparse(struct gp_ring *r, unsigned int nr)
{
	struct io_uring_rsrc_register rr;

	memset(&rr, 0, sizeof(rr));
	rr.nr = nr;
	rr.flags = IORING_RSRC_REGISTER_SPARSE;
	return gp_ring_register(r, IORING_REGISTER_BUFFERS2, &rr, sizeof(rr));
}
