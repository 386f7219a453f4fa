// SPDX-License-Identifier: MIT
/*
 * backend.c - what both host backends share, calling neither: the
 * message of a strict NUMA placement neither can serve.
 */
#include "internal.h"
#include "backend/backend.h"

int gp_strict_node_error(struct gp_ctx *ctx, const char *what,
			 const char *nodes)
{
	return gp_err(ctx, -ENODEV,
		      "%s on NUMA node %d, and GP_OPEN_NUMA_STRICT "
		      "allows no other (nodes that can serve: %s)",
		      what, ctx->numa_node, *nodes ? nodes : "none");
}
