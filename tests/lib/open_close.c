// SPDX-License-Identifier: MIT
/*
 * open_close: gp_open with defaults and options, gp_info, option checking,
 * the environment (GPUPOOL_BACKEND), the last-error string.
 */
#include <math.h>

#include "helpers.h"

TEST(defaults)
{
	struct gp_ctx *ctx;
	struct gp_info info;
	struct rt rt;

	rt_load(&rt);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_TRUE(info.backend == GP_BACKEND_USER || info.backend == GP_BACKEND_KERNEL);
	ASSERT_EQ(GP_VERSION_MAJOR, info.lib_major);
	ASSERT_EQ(1, info.abi_major);
	ASSERT_NE(0, info.host_granularity);
	ASSERT_NE(0, strlen(info.backend_name));
	if (info.backend == GP_BACKEND_KERNEL)
		ASSERT_NE(0, info.kmod_abi_major);
	if (rt.devices)
		ASSERT_EQ(GP_CUDA_REGISTERED, info.cuda_state);
	TH_LOG("backend %s, cuda %d (%s), why: %s", info.backend_name,
	       info.cuda_state, info.cudart, info.why);
	ASSERT_STREQ("", gp_last_error(ctx));
	gp_close(ctx);
}

TEST(no_cuda_flag)
{
	struct gp_options o;
	struct gp_ctx *ctx;
	struct gp_info info;
	struct rt rt;

	rt_load(&rt);
	gp_options_init(&o);
	o.flags = GP_OPEN_NO_CUDA;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(GP_CUDA_OFF, info.cuda_state);
	ASSERT_EQ(0, info.device_count);
	ASSERT_NE(NULL, strstr(info.why, "GP_OPEN_NO_CUDA"));
	gp_close(ctx);
}

TEST(bad_options)
{
	struct gp_options o;
	struct gp_ctx *ctx = NULL;

	gp_options_init(&o);
	o.flags = 1u << 30;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "unknown flags"));
	gp_options_init(&o);
	o.backend = 7;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	gp_options_init(&o);
	o.dev_limit_fraction = 1.5;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	gp_options_init(&o);
	o.dev_limit_fraction = NAN;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	/* Sizes whose doubling or rounding would wrap (the first once
	 * looped for ever in the first gp_dev_alloc, holding the pool lock).
	 */
	gp_options_init(&o);
	o.dev_initial_segment = 1ull << 63;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	gp_options_init(&o);
	o.host_small_segment = ~0ull;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	gp_options_init(&o);
	o.reserved[3] = 1;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	ASSERT_EQ(NULL, ctx);
	ASSERT_EQ(-EINVAL, gp_open(NULL, NULL));
}

TEST(env_backend)
{
	struct gp_ctx *ctx;
	struct gp_info info;

	setenv("GPUPOOL_BACKEND", "bogus", 1);
	ASSERT_EQ(-EINVAL, gp_open(NULL, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "GPUPOOL_BACKEND"));
	setenv("GPUPOOL_BACKEND", "user", 1);
	ASSERT_EQ(0, gp_open(NULL, &ctx));
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(GP_BACKEND_USER, info.backend);
	ASSERT_STREQ("user", info.backend_name);
	gp_close(ctx);
}

/* Three fresh small host buffers a, b, c: TF's placement cuts each from
 * the low end of the segment's free range (each above the one before),
 * half's from the high end (each below); age's b beside the segment's high
 * edge (older than a), c beside a (older than b).  Bit 0: b above a; bit
 * 1: c above b.
 */
static int order3(struct __test_metadata *_metadata,
		  const struct gp_options *o)
{
	struct gp_ctx *ctx;
	void *p[3];
	int i, bits;

	EXPECT_EQ(0, gp_open(o, &ctx)) TH_LOG("%s", gp_last_error(NULL));
	if (!ctx)
		return -1;
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, gp_host_alloc(ctx, 4096, 0, &p[i]));
	bits = ((uintptr_t)p[1] > (uintptr_t)p[0]) |
	       ((uintptr_t)p[2] > (uintptr_t)p[1]) << 1;
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, gp_host_free(ctx, p[i]));
	gp_close(ctx);
	return bits;
}

TEST(placement)
{
	struct gp_options o;
	struct gp_ctx *ctx;

	gp_options_init(&o);
	o.backend = GP_BACKEND_USER;
	o.flags = GP_OPEN_NO_CUDA;
	o.placement = GP_PLACEMENT_AGE + 1;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "placement"));
	o.placement = -1;
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	o.placement = GP_PLACEMENT_DEFAULT;
	setenv("GPUPOOL_POLICY", "best", 1);
	ASSERT_EQ(-EINVAL, gp_open(&o, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "GPUPOOL_POLICY"));
	unsetenv("GPUPOOL_POLICY");
	EXPECT_EQ(3, order3(_metadata, &o));	/* the default: tf */
	o.placement = GP_PLACEMENT_HALF;
	EXPECT_EQ(0, order3(_metadata, &o));
	o.placement = GP_PLACEMENT_EXACT;
	EXPECT_EQ(3, order3(_metadata, &o));
	o.placement = GP_PLACEMENT_SEG;
	EXPECT_EQ(0, order3(_metadata, &o));
	o.placement = GP_PLACEMENT_AGE;
	EXPECT_EQ(1, order3(_metadata, &o));
	/* The environment when the option is left at its default; not
	 * over an option set.
	 */
	o.placement = GP_PLACEMENT_DEFAULT;
	setenv("GPUPOOL_POLICY", "half", 1);
	EXPECT_EQ(0, order3(_metadata, &o));
	setenv("GPUPOOL_POLICY", "age", 1);
	EXPECT_EQ(1, order3(_metadata, &o));
	o.placement = GP_PLACEMENT_TF;
	EXPECT_EQ(3, order3(_metadata, &o));
	unsetenv("GPUPOOL_POLICY");
}

TEST(kernel_absent)
{
	struct gp_ctx *ctx;

	if (access("/dev/gpupool", F_OK) == 0)
		SKIP(return, "/dev/gpupool exists");
	setenv("GPUPOOL_BACKEND", "kernel", 1);
	ASSERT_EQ(-ENODEV, gp_open(NULL, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "modprobe gpupool"));
	TH_LOG("%s", gp_last_error(NULL));
	unsetenv("GPUPOOL_BACKEND");
	/* AUTO falls back to the user backend and says why. */
	ASSERT_EQ(0, gp_open(NULL, &ctx));
	{
		struct gp_info info;

		ASSERT_EQ(0, gp_info(ctx, &info));
		ASSERT_EQ(GP_BACKEND_USER, info.backend);
		ASSERT_NE(NULL, strstr(info.why, "/dev/gpupool"));
	}
	gp_close(ctx);
}

TEST(debug_log)
{
	struct gp_ctx *ctx;
	char buf[4096] = "";
	int pfd[2], saved;
	ssize_t n;

	setenv("GPUPOOL_DEBUG", "1", 1);
	ASSERT_EQ(0, pipe(pfd));
	saved = dup(2);
	dup2(pfd[1], 2);
	OPEN(NULL, &ctx);
	gp_close(ctx);
	dup2(saved, 2);
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	ASSERT_GT(n, 0);
	buf[n] = 0;
	ASSERT_NE(NULL, strstr(buf, "gpupool: backend "));
	close(pfd[0]);
	close(saved);
}

TEST(last_error_per_ctx)
{
	struct gp_ctx *ctx;
	void *p;

	OPEN(NULL, &ctx);
	ASSERT_EQ(-EINVAL, gp_host_alloc(ctx, 0, 0, &p));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "size 0"));
	ASSERT_EQ(-EINVAL, gp_host_free(ctx, (void *)0x1000));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "not a buffer"));
	ASSERT_STREQ("Invalid argument", gp_strerror(-EINVAL));
	gp_close(ctx);
}

/* A failed gp_open()'s message survives asking a context for its own. */
TEST(open_error_kept_per_thread)
{
	struct gp_options o;
	struct gp_ctx *ctx, *bad = NULL;
	void *p;

	OPEN(NULL, &ctx);
	ASSERT_EQ(-EINVAL, gp_host_alloc(ctx, 0, 0, &p));
	gp_options_init(&o);
	o.flags = 1u << 30;
	ASSERT_EQ(-EINVAL, gp_open(&o, &bad));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "size 0"));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "unknown flags")) TH_LOG("%s", gp_last_error(NULL));
	gp_close(ctx);
}

TEST_HARNESS_MAIN
