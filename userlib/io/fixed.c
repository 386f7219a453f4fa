// SPDX-License-Identifier: MIT
/*
 * fixed.c - each reader's fixed-buffer slots: a host segment registered
 * once with the reader's ring (IORING_OP_READ_FIXED then skips pinning its
 * pages per read), dropped when the segment goes.  The kernel may refuse
 * (6.1 does for file-backed mappings that are not shmem: gpupool.ko's
 * chunks): remembered per segment, and for the context on -EOPNOTSUPP or
 * -EFAULT.
 */
#include <string.h>

#include "reader.h"

void gp_fixed_table_init(struct gp_reader *r, struct gp_reader_pool *pool)
{
	int unknown = GP_IO_FIXED_UNKNOWN;
	int ret = gp_ring_register_buffers_sparse(&r->ring, GP_IO_FIXED_SLOTS);

	r->fixed_table = !ret;
	/* A sparse table (IORING_RSRC_REGISTER_SPARSE) is 5.19's: older
	 * kernels say EINVAL, and reads use plain READ.
	 */
	if (ret) {
		gp_debug(r->ctx, "io_uring buffer table: %s; no fixed buffers",
			 strerror(-ret));
		__atomic_compare_exchange_n(&pool->fixed_state, &unknown,
					    GP_IO_FIXED_NO_TABLE, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

/* pool->lock held: the kernel refused slot's registration (ret): the
 * segment is remembered as refused, so that no read asks again; the
 * context stops asking on -EOPNOTSUPP or -EFAULT.
 */
static void gp_fixed_refused(struct gp_reader *r, struct gp_reader_pool *pool,
			     int slot, uint64_t size, int ret)
{
	gp_debug(r->ctx, "io_uring fixed buffer %#llx + %llu: %s",
		 (unsigned long long)r->fixed[slot].addr,
		 (unsigned long long)size, strerror(-ret));
	r->fixed[slot].size = UINT64_MAX;
	pool->st.fixed_refusals++;
	if (ret == -EOPNOTSUPP || ret == -EFAULT) {
		__atomic_store_n(&pool->fixed_state, GP_IO_FIXED_REFUSED,
				 __ATOMIC_RELAXED);
		pool->fixed_err = -ret;
	}
}

static bool gp_fixed_taken(const struct gp_fixed_slot *s)
{
	return s->size && s->size != UINT64_MAX;
}

int gp_fixed_slot(struct gp_reader *r, struct gp_reader_pool *pool,
		  uint64_t addr, uint64_t size)
{
	int i, slot = -1, ret;

	if (!r->has_ring || !r->fixed_table ||
	    __atomic_load_n(&pool->fixed_state, __ATOMIC_RELAXED) == GP_IO_FIXED_REFUSED ||
	    size > GP_IO_FIXED_MAX)
		return -1;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < GP_IO_FIXED_SLOTS; i++) {
		if (r->fixed[i].size && r->fixed[i].addr == addr) {
			slot = r->fixed[i].size == UINT64_MAX ? -1 : i;
			goto out;
		}
		if (!r->fixed[i].size && slot < 0)
			slot = i;
	}
	if (slot < 0)
		goto out;
	ret = gp_ring_register_buffer_update(&r->ring, (unsigned int)slot,
					     (void *)(uintptr_t)addr, size);
	r->fixed[slot].addr = addr;
	if (ret) {
		gp_fixed_refused(r, pool, slot, size, ret);
		slot = -1;
		goto out;
	}
	r->fixed[slot].size = size;
	pool->st.fixed_registered++;
	if (__atomic_load_n(&pool->fixed_state, __ATOMIC_RELAXED) != GP_IO_FIXED_REFUSED)
		__atomic_store_n(&pool->fixed_state, GP_IO_FIXED_OK, __ATOMIC_RELAXED);
out:
	pthread_mutex_unlock(&pool->lock);
	return slot;
}

unsigned int gp_fixed_drop(struct gp_reader *r, uint64_t addr)
{
	unsigned int i, dropped = 0;

	for (i = 0; i < GP_IO_FIXED_SLOTS; i++) {
		if (!r->fixed[i].size || r->fixed[i].addr != addr)
			continue;
		if (gp_fixed_taken(&r->fixed[i])) {
			gp_ring_register_buffer_update(&r->ring, i, NULL, 0);
			dropped++;
		}
		r->fixed[i].addr = 0;
		r->fixed[i].size = 0;
	}
	return dropped;
}

unsigned int gp_fixed_count(const struct gp_reader *r)
{
	unsigned int i, n = 0;

	for (i = 0; i < GP_IO_FIXED_SLOTS; i++)
		n += gp_fixed_taken(&r->fixed[i]);
	return n;
}
