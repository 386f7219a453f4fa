/* SPDX-License-Identifier: MIT */
/*
 * io.h - the file reader (userlib/io/) as the rest of the library sees it.
 */
#ifndef GPUPOOL_USERLIB_IO_IO_H
#define GPUPOOL_USERLIB_IO_IO_H

#include <stdint.h>

struct gp_ctx;

/* The context closes: every reader goes. */
void gp_io_fini(struct gp_ctx *ctx);
/* For gp_info: GP_IO_FIXED_*, what reads found so far. */
uint32_t gp_io_fixed_state(struct gp_ctx *ctx);

#endif /* GPUPOOL_USERLIB_IO_IO_H */
