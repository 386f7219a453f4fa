/* SPDX-License-Identifier: MIT */
/*
 * user.h - inside the user backend (userlib/backend/user*.c): its files'
 * shared parts.  The rest of the library sees gp_backend_user only.
 */
#ifndef GPUPOOL_USERLIB_BACKEND_USER_H
#define GPUPOOL_USERLIB_BACKEND_USER_H

#include "internal.h"
#include "backend/backend.h"
#include "host/seg.h"

#define GP_POPULATE_MAX_THREADS	256

/* ctx->backend_data. */
struct gp_user {
	uint64_t memlock_limit;		/* RLIMIT_MEMLOCK at open (0: unknown) */
	unsigned int populate_threads;	/* faulting in a segment */
	bool populate_threads_set;	/* GPUPOOL_POPULATE_THREADS given */
	bool shmem_thp;			/* shmem THP allowed */
	bool hugetlb_ok;		/* MFD_HUGETLB worked or not tried yet */
};

static inline struct gp_user *gp_user_of(const struct gp_ctx *ctx)
{
	return ctx->backend_data;
}

/* user_node.c */
/* GP_OPEN_NUMA_STRICT at open: -ENODEV (message set) when the node cannot
 * serve this process.
 */
int gp_user_node_check(struct gp_ctx *ctx);
/* Place a fresh mapping on the context's node (mbind); an error only when
 * the node is strict.
 */
int gp_user_bind(struct gp_ctx *ctx, void *addr, uint64_t size);

/* user_populate.c */
/* GPUPOOL_POPULATE_THREADS, at most 65536 (env.h's return; more than
 * GP_POPULATE_MAX_THREADS give that many).
 */
#define GP_POPULATE_SETTING_MAX	65536
int gp_populate_threads_setting(struct gp_ctx *ctx, unsigned int *n);
/* How many threads may fault in a segment without it (see there). */
unsigned int gp_populate_threads_default(void);
/* Threads to fault in a new segment of size bytes. */
unsigned int gp_populate_threads(struct gp_ctx *ctx, uint64_t size);
/* Whether a shmem mapping with MADV_HUGEPAGE gets 2 MiB pages. */
bool gp_shmem_thp_allowed(void);
/* An mlock of size bytes failed with errno e: -ENOMEM, saying why. */
int gp_memlock_error(struct gp_ctx *ctx, int e, uint64_t size);
/* mlock(2) itself (AddressSanitizer's interceptor makes mlock() a no-op). */
int gp_mlock(void *addr, uint64_t size);
/* Pin and fault in a fresh mapping of normal pages made of `parts` memfds
 * (fds[i] mapped from its offset 0 at addr + i * part) from `threads`
 * threads; 1 when the kernel has no mlock2 (the caller mlocks).
 */
int gp_lock_populate(struct gp_ctx *ctx, void *addr, uint64_t size,
		     const int *fds, unsigned int parts, uint64_t part,
		     unsigned int threads);
/* The size of each part but the last of a segment for n threads. */
uint64_t gp_part_size(const struct gp_ctx *ctx, uint64_t size, unsigned int n);

#endif /* GPUPOOL_USERLIB_BACKEND_USER_H */
