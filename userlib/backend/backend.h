/* SPDX-License-Identifier: MIT */
/*
 * backend.h - where host segments come from (userlib/backend/): the two
 * backends behind one table of operations.  Each keeps its own state
 * behind ctx->backend_data, made by its open (the kernel's by its probe)
 * and freed by its close; nothing else reads it.
 */
#ifndef GPUPOOL_USERLIB_BACKEND_BACKEND_H
#define GPUPOOL_USERLIB_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gp_ctx;
struct gp_info;
struct gp_seg;

/* What a host backend does; both fill seg->addr/size/fd/huge/khandle.
 * The host pools count the maps and unmaps (gp_host_stats): a backend
 * calls nothing of theirs.
 */
struct gp_backend_ops {
	const char *name;
	/* On failure nothing of it is left. */
	int (*open)(struct gp_ctx *ctx);
	void (*close)(struct gp_ctx *ctx);
	/* Map a new segment of exactly size bytes (a multiple of the page);
	 * keep_fd: the segment may be exported, keep a descriptor for it.
	 */
	int (*map)(struct gp_ctx *ctx, struct gp_seg *seg, uint64_t size,
		   bool keep_fd);
	void (*unmap)(struct gp_ctx *ctx, struct gp_seg *seg);
	int (*export_fd)(struct gp_ctx *ctx, struct gp_seg *seg, int *fd);
	/* Map a descriptor another process exported, when it is of this
	 * backend's kind (-ENOTTY, no message, when not), whichever backend
	 * is open: seg is then unmapped by the open backend's unmap, as any
	 * other.  host/share.c decides whom to ask first.
	 */
	int (*import_fd)(struct gp_ctx *ctx, int fd, struct gp_seg *seg);
	/* The unit of host memory: the page, or gpupool.ko's granularity
	 * when that is larger.
	 */
	uint64_t (*granularity)(const struct gp_ctx *ctx);
	/* What this process may lock, for gp_host_stats (NULL: nothing
	 * counts against such a limit).
	 */
	uint64_t (*memlock_limit)(const struct gp_ctx *ctx);
	/* Its part of gp_info (NULL: none). */
	void (*info)(struct gp_ctx *ctx, struct gp_info *info);
	/* Its words for gp_info's why (NULL: nothing to say). */
	const char *(*why)(const struct gp_ctx *ctx);
	/* Idle memory that circulates (NULL: the backend's system asks for
	 * nothing).  mark: seg, a pool segment, holds nothing in use (idle)
	 * or something again; said to the system, which may then ask for
	 * idle ones back.  asked: wait up to timeout_ms (-1: no bound) until
	 * the system asks for idle segments or stop_fd is readable: 0 with
	 * the asked segments' khandles in handles (*nr, at most room),
	 * -ECANCELED (stop_fd), -ETIMEDOUT or -errno.  A map of a segment
	 * with no_ask set asks no one for theirs.
	 */
	void (*mark)(struct gp_ctx *ctx, struct gp_seg *seg, bool idle);
	int (*asked)(struct gp_ctx *ctx, int stop_fd, int timeout_ms,
		     uint64_t *handles, uint32_t room, uint32_t *nr);
};
extern const struct gp_backend_ops gp_backend_user;
extern const struct gp_backend_ops gp_backend_kernel;

/* kernel.c: probe /dev/gpupool; 0 when usable (then the kernel backend's
 * open follows).  Else why (len bytes) says what was wrong, for gp_info
 * when AUTO goes on to the user backend; forced (GPUPOOL_BACKEND=kernel):
 * the error is the context's too.
 */
int gp_kernel_probe(struct gp_ctx *ctx, bool forced, char *why, size_t len);
/* user_populate.c: the backends' settings from the environment (the user
 * backend's GPUPOOL_POPULATE_THREADS), checked whichever backend opens, so
 * that a bad one fails every open: -EINVAL, with its message.
 */
int gp_backend_check_env(struct gp_ctx *ctx);

/* backend.c: GP_OPEN_NUMA_STRICT to a node that cannot serve it: -ENODEV
 * at open, naming the nodes that can (nodes: their list, "0-1,3").
 */
int gp_strict_node_error(struct gp_ctx *ctx, const char *what,
			 const char *nodes);

#endif /* GPUPOOL_USERLIB_BACKEND_BACKEND_H */
