/* SPDX-License-Identifier: MIT */
/*
 * devpools.h - the device pools (userlib/dev/) as the rest of the library
 * sees them.  Their state (struct gp_devpools, struct gp_dpool) is dev.h's,
 * private to dev/.
 */
#ifndef GPUPOOL_USERLIB_DEV_DEVPOOLS_H
#define GPUPOOL_USERLIB_DEV_DEVPOOLS_H

#include "gpupool.h"

/* The virtual mode's default headroom: mapped bytes at most 1/11 (9.09%)
 * above the most in use.  Less remaps more often (1/16 remapped ~20 times
 * as often on the loader trace); more holds more idle memory.
 */
#define GP_DEV_HEADROOM_PPM	(1000000 / 11)

/* ctx->dev, where CUDA is usable (pools come on first use); -ENOMEM. */
int gp_dev_init(struct gp_ctx *ctx);
void gp_dev_fini(struct gp_ctx *ctx);
/* The mode of device's pool (created if need be), enum gp_dev_mode. */
int gp_dev_mode(struct gp_ctx *ctx, int device);
/* gp_dev_free() with the device known (-1: search every device). */
int gp_dev_free_on(struct gp_ctx *ctx, int device, void *ptr, gp_stream_t stream);

#endif /* GPUPOOL_USERLIB_DEV_DEVPOOLS_H */
