// SPDX-License-Identifier: MIT
/*
 * ctx.c - opening and closing a context: options and environment, the
 * choice of host backend, loading CUDA, NUMA placement, gp_info().
 */
#define _GNU_SOURCE
#include <linux/gpupool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"
#include "env.h"
#include "backend/backend.h"
#include "dev/devpools.h"
#include "host/host.h"
#include "io/io.h"

GP_API void gp_options_init(struct gp_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->backend = GP_BACKEND_AUTO;
	o->numa_node = GP_NUMA_ANY;
}

/* GPUPOOL_POLICY, when gp_options.placement leaves the choice open: the
 * core's names (bfc_policy_name()).
 */
static int gp_env_policy(struct gp_ctx *ctx)
{
	const char *names[BFC_NR_POLICIES + 1];
	unsigned int i;
	int ret;

	for (i = 0; i < BFC_NR_POLICIES; i++)
		names[i] = bfc_policy_name(i);
	names[i] = NULL;
	ret = gp_env_name(ctx, "GPUPOOL_POLICY", names, &i);
	if (ret > 0 && ctx->opt.placement == GP_PLACEMENT_DEFAULT)
		ctx->opt.placement = GP_PLACEMENT_TF + (int)i;
	return ret;
}

/* GPUPOOL_HOST_LIMIT and GPUPOOL_DEV_LIMIT, when gp_options has none. */
static int gp_env_limits(struct gp_ctx *ctx)
{
	struct gp_options *o = &ctx->opt;
	uint64_t bytes = 0;
	double fraction = 0.0;
	int ret;

	ret = gp_env_size(ctx, "GPUPOOL_HOST_LIMIT", &bytes);
	if (ret > 0 && !o->host_limit)
		o->host_limit = bytes;
	if (ret >= 0)
		ret = gp_env_size_or_fraction(ctx, "GPUPOOL_DEV_LIMIT", &bytes,
					      &fraction);
	if (ret > 0 && !o->dev_limit && o->dev_limit_fraction == 0.0) {
		o->dev_limit = bytes;
		o->dev_limit_fraction = fraction;
	}
	return ret;
}

/* The most GPUPOOL_HOST_GC_IDLE_MS takes: a day (longer: say 0, never). */
#define GP_ENV_GC_IDLE_MAX	86400000ull

/* GPUPOOL_HOST_GC_IDLE_MS, when gp_options has no host_gc_idle_ms: the
 * interposer's (which opens with the defaults) way to set it; 0: never.
 */
static int gp_env_gc(struct gp_ctx *ctx)
{
	uint64_t ms = 0;
	int ret;

	ret = gp_env_count(ctx, "GPUPOOL_HOST_GC_IDLE_MS", 0, GP_ENV_GC_IDLE_MAX,
			   &ms);
	if (ret > 0 && !ctx->opt.host_gc_idle_ms)
		ctx->opt.host_gc_idle_ms = ms ? ms : GP_HOST_GC_NEVER;
	return ret;
}

/* The names GPUPOOL_BACKEND takes, in enum gp_backend's order. */
static const char *const gp_backend_names[] = { "auto", "kernel", "user", NULL };
static const char *const gp_dev_mode_names[] = { "auto", "segments", NULL };
_Static_assert(GP_BACKEND_AUTO == 0 && GP_BACKEND_KERNEL == 1 &&
	       GP_BACKEND_USER == 2, "gp_backend_names follows enum gp_backend");

/* The environment's part of the options (docs/library.md, "Environment"):
 * a variable wins over gp_options where the table says so; a bad one
 * fails the open (-EINVAL, saying which, and what it takes).
 */
static int gp_apply_env(struct gp_ctx *ctx)
{
	struct gp_options *o = &ctx->opt;
	unsigned int i = 0;
	bool b = false;
	int ret;

	ret = gp_env_bool(ctx, "GPUPOOL_DEBUG", &ctx->debug);
	if (ret >= 0)
		ret = gp_env_name(ctx, "GPUPOOL_BACKEND", gp_backend_names, &i);
	if (ret > 0 && i)	/* auto: gp_options.backend's choice */
		o->backend = (int)i;
	if (ret >= 0)
		ret = gp_env_name(ctx, "GPUPOOL_DEV_MODE", gp_dev_mode_names, &i);
	if (ret > 0 && i == 1)
		o->flags |= GP_OPEN_DEV_SEGMENTS;
	if (ret >= 0)
		ret = gp_env_bool(ctx, "GPUPOOL_REQUIRE_CUDA", &b);
	if (ret > 0 && b)
		o->flags |= GP_OPEN_REQUIRE_CUDA;
	if (ret >= 0)
		ret = gp_env_policy(ctx);
	if (ret >= 0)
		ret = gp_env_limits(ctx);
	if (ret >= 0)
		ret = gp_env_gc(ctx);
	return ret < 0 ? ret : 0;
}

static int gp_check_options(struct gp_ctx *ctx)
{
	const struct gp_options *o = &ctx->opt;
	unsigned int i;

	if (o->flags & ~GP_OPEN_VALID_FLAGS)
		return gp_err(ctx, -EINVAL, "gp_open: unknown flags %#x",
			      o->flags & ~GP_OPEN_VALID_FLAGS);
	if (o->backend < GP_BACKEND_AUTO || o->backend > GP_BACKEND_USER)
		return gp_err(ctx, -EINVAL, "gp_open: unknown backend %d", o->backend);
	if (o->placement < GP_PLACEMENT_DEFAULT || o->placement > GP_PLACEMENT_AGE)
		return gp_err(ctx, -EINVAL, "gp_open: unknown placement %d", o->placement);
	if (o->numa_node < GP_NUMA_NEAR_GPU)
		return gp_err(ctx, -EINVAL, "gp_open: bad numa_node %d", o->numa_node);
	if (o->host_small_segment &&
	    (o->host_small_segment < GP_HOST_SMALL_MAX ||
	     o->host_small_segment > GP_SIZE_MAX))
		return gp_err(ctx, -EINVAL,
			      "gp_open: host_small_segment must be at least 1 MiB and at most 2^62");
	if ((o->flags & GP_OPEN_REQUIRE_CUDA) && (o->flags & GP_OPEN_NO_CUDA))
		return gp_err(ctx, -EINVAL,
			      "gp_open: GP_OPEN_REQUIRE_CUDA with GP_OPEN_NO_CUDA");
	for (i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return gp_err(ctx, -EINVAL, "gp_open: reserved fields must be 0");
	return 0;
}

static int gp_pick_backend(struct gp_ctx *ctx)
{
	int ret;

	if (ctx->opt.backend != GP_BACKEND_USER) {
		ret = gp_kernel_probe(ctx, ctx->opt.backend == GP_BACKEND_KERNEL,
				      ctx->fallback, sizeof(ctx->fallback));
		if (!ret) {
			ctx->backend = GP_BACKEND_KERNEL;
			ctx->ops = &gp_backend_kernel;
			return ctx->ops->open(ctx);
		}
		if (ctx->opt.backend == GP_BACKEND_KERNEL)
			return ret;
	}
	ctx->backend = GP_BACKEND_USER;
	ctx->ops = &gp_backend_user;
	return ctx->ops->open(ctx);
}

/* Append more to why (len bytes), after "; " when why has something. */
static void gp_why_add(char *why, size_t len, const char *more)
{
	size_t n = strlen(why);

	if (*more && n + 1 < len)
		snprintf(why + n, len - n, "%s%s", n ? "; " : "", more);
}

/* Why the backend and CUDA are what they are, each in its own words. */
static void gp_why_rooms(const struct gp_ctx *ctx, char *why, size_t len)
{
	gp_why_add(why, len, ctx->fallback);
	if (ctx->ops->why)
		gp_why_add(why, len, ctx->ops->why(ctx));
	gp_why_add(why, len, gp_cuda_why(ctx));
}

/* The steps of gp_open ------------------------------------------------------- */

/* The options after the environment, checked and completed. */
static int gp_open_options(struct gp_ctx *ctx)
{
	int ret = gp_check_options(ctx);

	if (!ret)
		ret = gp_apply_env(ctx);
	if (ret)
		return ret;
	if (!ctx->opt.host_small_segment)
		ctx->opt.host_small_segment = 2 * GP_MIB;
	if (!ctx->opt.host_gc_idle_ms)
		ctx->opt.host_gc_idle_ms = GP_HOST_GC_IDLE_MS;
	else if (ctx->opt.host_gc_idle_ms == GP_HOST_GC_NEVER)
		ctx->opt.host_gc_idle_ms = 0;	/* as gp_host_gc() reads it */
	ctx->page_size = gp_page_size_test ? gp_page_size_test :
			 (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

/* CUDA first of the rooms: GP_NUMA_NEAR_GPU and the device pools need it. */
static int gp_open_cuda(struct gp_ctx *ctx)
{
	if (ctx->opt.flags & GP_OPEN_NO_CUDA)
		gp_cuda_off(ctx, "CUDA disabled by GP_OPEN_NO_CUDA");
	else
		gp_cuda_load(ctx, ctx->opt.cudart);
	ctx->opt.cudart = NULL;		/* not kept: the caller owns it */
	gp_debug(ctx, "%s", gp_cuda_why(ctx));
	if (!gp_cuda_usable(ctx) && (ctx->opt.flags & GP_OPEN_REQUIRE_CUDA)) {
		gp_cuda_unload(ctx);
		return gp_err(ctx, -ENODEV,
			      "CUDA is required (GPUPOOL_REQUIRE_CUDA / GP_OPEN_REQUIRE_CUDA) "
			      "but not usable: %s", gp_cuda_why(ctx));
	}
	return 0;
}

/* The NUMA node host memory goes to, then the backend that places it. */
static int gp_open_backend(struct gp_ctx *ctx)
{
	char why[sizeof(((struct gp_info *)0)->why)] = "";
	int ret;

	ctx->numa_node = ctx->opt.numa_node;
	if (ctx->numa_node == GP_NUMA_NEAR_GPU) {
		ctx->numa_node = gp_cuda_numa_node(ctx, ctx->opt.numa_device);
		if (ctx->numa_node < 0)
			gp_debug(ctx, "NUMA node of GPU %d unknown; no placement",
				 ctx->opt.numa_device);
	}
	ret = gp_backend_check_env(ctx);
	if (!ret)
		ret = gp_pick_backend(ctx);
	if (ret)
		return ret;
	gp_why_rooms(ctx, why, sizeof(why));
	gp_debug(ctx, "backend %s (%s), NUMA node %d", ctx->ops->name, why,
		 ctx->numa_node);
	return 0;
}

static void gp_close_backend(struct gp_ctx *ctx)
{
	ctx->ops->close(ctx);
}

/*
 * gp_open's steps, in order: each needs only those before it, and one
 * that fails leaves nothing of itself behind, its message on the context.
 * gp_close, and gp_open when a step fails, undo the steps done in the
 * reverse order.
 */
static const struct gp_open_step {
	const char *name;
	int (*open)(struct gp_ctx *ctx);
	void (*close)(struct gp_ctx *ctx);	/* NULL: nothing to undo */
} gp_open_steps[] = {
	{ "options", gp_open_options, NULL },
	{ "CUDA", gp_open_cuda, gp_cuda_unload },
	{ "device pools", gp_dev_init, gp_dev_fini },
	{ "backend", gp_open_backend, gp_close_backend },
	{ "host pools", gp_host_init, gp_host_fini },
};
#define GP_OPEN_STEPS	(sizeof(gp_open_steps) / sizeof(gp_open_steps[0]))

/* The test hooks (internal.h). */
unsigned int gp_open_fail_step;
uint64_t gp_page_size_test;

/* Step i of gp_open (i == GP_OPEN_STEPS: none, after the last). */
static int gp_open_step(struct gp_ctx *ctx, unsigned int i)
{
	if (gp_open_fail_step == i + 1)
		return gp_err(ctx, -ENOMEM, "gp_open: %s: failure injected (test hook)",
			      i < GP_OPEN_STEPS ? gp_open_steps[i].name :
			      "after the last step");
	return i < GP_OPEN_STEPS ? gp_open_steps[i].open(ctx) : 0;
}

/* Undo the first n steps of gp_open, the last first; free the context. */
static void gp_ctx_release(struct gp_ctx *ctx, unsigned int n)
{
	while (n--)
		if (gp_open_steps[n].close)
			gp_open_steps[n].close(ctx);
	pthread_mutex_destroy(&ctx->err_lock);
	free(ctx);
}

GP_API int gp_open(const struct gp_options *opts, struct gp_ctx **out)
{
	struct gp_ctx *ctx;
	unsigned int i;
	size_t n;
	int ret;

	if (!out)
		return -EINVAL;
	gp_err(NULL, 0, "%s", "");
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return gp_err(NULL, -ENOMEM, "gp_open: out of memory");
	pthread_mutex_init(&ctx->err_lock, NULL);
	gp_options_init(&ctx->opt);
	if (opts) {
		n = opts->size && opts->size < sizeof(ctx->opt) ? opts->size :
		    sizeof(ctx->opt);
		memcpy(&ctx->opt, opts, n);
		ctx->opt.size = sizeof(ctx->opt);
	}
	for (i = 0; i <= GP_OPEN_STEPS; i++) {
		ret = gp_open_step(ctx, i);
		if (ret) {
			/* The step's message is the open's. */
			gp_err(NULL, ret, "%s", ctx->err);
			gp_ctx_release(ctx, i);
			return ret;
		}
	}
	ctx->err[0] = 0;
	*out = ctx;
	return 0;
}

GP_API void gp_close(struct gp_ctx *ctx)
{
	if (!ctx)
		return;
	gp_io_fini(ctx);	/* made on first use, after the open */
	gp_ctx_release(ctx, GP_OPEN_STEPS);
}

GP_API int gp_info(struct gp_ctx *ctx, struct gp_info *info)
{
	if (!ctx || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->backend = ctx->backend;
	gp_cuda_info(ctx, info);
	info->numa_node = ctx->numa_node;
	info->lib_major = GP_VERSION_MAJOR;
	info->lib_minor = GP_VERSION_MINOR;
	info->abi_major = GPUPOOL_ABI_MAJOR;
	info->abi_minor = GPUPOOL_ABI_MINOR;
	if (ctx->ops->info)
		ctx->ops->info(ctx, info);
	gp_host_info(ctx, info);
	gp_why_rooms(ctx, info->why, sizeof(info->why));
	snprintf(info->backend_name, sizeof(info->backend_name), "%s",
		 ctx->ops->name);
	if (gp_cuda_usable(ctx))
		info->dev_mode = gp_dev_mode(ctx, 0);
	info->io_fixed = gp_io_fixed_state(ctx);
	return 0;
}
