/* SPDX-License-Identifier: MIT */
/*
 * gpupool_interpose.h - the figures of libgpupool-interpose.so, the
 * library that `gpupoolctl run` preloads so that a process's pinned host
 * allocations through CUDA come from the gpupool pool (docs/interpose.md).
 *
 * The function below is defined by the interposer only, not by
 * libgpupool.so: a program that wants the figures looks it up, and finds
 * nothing when it runs without the interposer:
 *
 *	int (*get)(struct gp_interpose_stats *, size_t) =
 *		(int (*)(struct gp_interpose_stats *, size_t))
 *		dlsym(RTLD_DEFAULT, "gp_interpose_stats");
 *	struct gp_interpose_stats st;
 *	if (get && get(&st, sizeof(st)) == 0) ...
 */
#ifndef GPUPOOL_INTERPOSE_H
#define GPUPOOL_INTERPOSE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GPUPOOL_INTERPOSE_MODE */
enum gp_interpose_mode {
	GP_INTERPOSE_FALLBACK = 0,	/* what the pool cannot serve, CUDA does */
	GP_INTERPOSE_STRICT = 1,	/* what the pool cannot serve fails */
	GP_INTERPOSE_OFF = 2,		/* everything to CUDA (a bad setting) */
};

/* Why a request went to CUDA (or, in strict mode, failed). */
enum gp_interpose_why {
	GP_INTERPOSE_UNAVAILABLE = 0,	/* no pool: no module, no CUDA, ... */
	GP_INTERPOSE_POOL_FULL = 1,	/* the pool (or the system) refused */
	GP_INTERPOSE_LIMIT = 2,		/* a cgroup or per-process limit */
	GP_INTERPOSE_CUDA = 3,		/* registering a new segment failed */
	GP_INTERPOSE_FLAGS = 4,		/* write-combined or unknown flags */
	GP_INTERPOSE_OTHER = 5,
	GP_INTERPOSE_NR_WHY = 6,
};

struct gp_interpose_stats {
	uint64_t served;		/* allocations the pool served */
	uint64_t served_bytes;		/* their bytes, as asked */
	uint64_t served_driver;		/* of which through the driver API */
	uint64_t freed;			/* pool buffers freed */
	uint64_t live_bytes;		/* bytes asked of buffers not freed */
	uint64_t reserved;		/* bytes of the pool's segments mapped
					 * for this process now */
	uint64_t fell_back[GP_INTERPOSE_NR_WHY];	/* to CUDA, by why */
	uint64_t fell_back_bytes[GP_INTERPOSE_NR_WHY];
	uint64_t refused[GP_INTERPOSE_NR_WHY];		/* strict: failed */
	uint64_t real_frees;		/* frees of CUDA's memory, passed on */
	uint64_t bad_frees;		/* frees of no live pool buffer */
	uint64_t inherited;		/* calls on the parent's pool memory
					 * in a child of fork() */
	int32_t mode;			/* enum gp_interpose_mode */
	int32_t pool;			/* 1 open, -1 cannot serve, 0 not yet */
	char backend[16];		/* "kernel" / "user" once open */
	char why[256];			/* why the pool cannot serve, or "" */
};

/* Copy the figures of this process (since its start, or since the fork()
 * that made it) into *st; size is sizeof(*st).  0, or -EINVAL.
 */
int gp_interpose_stats(struct gp_interpose_stats *st, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* GPUPOOL_INTERPOSE_H */
