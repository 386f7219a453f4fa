/* SPDX-License-Identifier: MIT */
/*
 * devpools.h - the device pools (userlib/dev/) as the rest of the library
 * sees them.  Their state (struct gp_devpools, struct gp_dpool) is dev.h's,
 * private to dev/.
 */
#ifndef GPUPOOL_USERLIB_DEV_DEVPOOLS_H
#define GPUPOOL_USERLIB_DEV_DEVPOOLS_H

#include "gpupool.h"

/* Check the device pools' options (gp_options.dev_*) and read their
 * tunables (GPUPOOL_DEV_HEADROOM); then ctx->dev, where CUDA is usable
 * (pools come on first use).  -EINVAL or -ENOMEM, the message set.
 */
int gp_dev_init(struct gp_ctx *ctx);
void gp_dev_fini(struct gp_ctx *ctx);
/* The mode of device's pool (created if need be), enum gp_dev_mode. */
int gp_dev_mode(struct gp_ctx *ctx, int device);
/* gp_dev_free() with the device known (-1: search every device). */
int gp_dev_free_on(struct gp_ctx *ctx, int device, void *ptr, gp_stream_t stream);

#endif /* GPUPOOL_USERLIB_DEV_DEVPOOLS_H */
