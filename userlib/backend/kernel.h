/* SPDX-License-Identifier: MIT */
/*
 * kernel.h - inside the kernel backend (kernel.c, kernel_reclaim.c): its
 * state behind ctx->backend_data, and what its two files share.  The
 * rest of the library sees backend.h.
 */
#ifndef GPUPOOL_USERLIB_BACKEND_KERNEL_H
#define GPUPOOL_USERLIB_BACKEND_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

#define GP_DEV_PATH	"/dev/gpupool"

/* ctx->backend_data: what the probe learnt, and the open device. */
struct gp_kernel {
	int fd;				/* /dev/gpupool */
	uint32_t abi_major, abi_minor;	/* the module's */
	uint64_t node_mask;		/* the module's sub-pools, by node */
	uint64_t gran;			/* the unit of host memory */
	bool huge_maps;			/* /proc/gpupool's HugeMaps */
	bool reclaim;			/* GPUPOOL_FEATURE_RECLAIM (ABI 1.2) */
	char why[128];			/* for gp_info: what the module is */
};

static inline struct gp_kernel *gp_kernel_of(const struct gp_ctx *ctx)
{
	return ctx->backend_data;
}

struct gp_seg;

/* kernel_reclaim.c: the ops of reclaim (backend.h), and the words of a
 * refused ALLOC's report: "; <what is idle where>" into buf ("" when the
 * module keeps no report).
 */
void gp_kernel_mark(struct gp_ctx *ctx, struct gp_seg *seg, bool idle);
int gp_kernel_asked(struct gp_ctx *ctx, int stop_fd, int timeout_ms,
		    uint64_t *handles, uint32_t room, uint32_t *nr);
void gp_kernel_idle_words(struct gp_ctx *ctx, char *buf, size_t len);

#endif /* GPUPOOL_USERLIB_BACKEND_KERNEL_H */
