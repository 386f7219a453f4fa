// SPDX-License-Identifier: MIT
/*
 * require_cuda: without a usable runtime the host pool still works,
 * unregistered, and gp_info says so; GPUPOOL_REQUIRE_CUDA=1 makes that an
 * error.  Also: a registration refused by the runtime fails the allocation
 * cleanly.
 */
#include "helpers.h"

TEST(no_runtime_works_unregistered)
{
	struct gp_host_stats st;
	struct gp_info info;
	struct gp_ctx *ctx;
	void *p;

	setenv("GPUPOOL_CUDART", "/nonexistent/libcudart.so.13", 1);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(GP_CUDA_OFF, info.cuda_state);
	ASSERT_NE(NULL, strstr(info.why, "not registered"));
	ASSERT_EQ(0, gp_host_alloc(ctx, 5 << 20, 0, &p));
	memset(p, 1, 5 << 20);
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.registered);
	ASSERT_EQ(0, st.register_calls);
	ASSERT_EQ(-ENODEV, gp_dev_alloc(ctx, 0, 100, NULL, &p));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "CUDA is not usable"));
	gp_close(ctx);
}

TEST(require_without_runtime)
{
	struct gp_ctx *ctx;

	setenv("GPUPOOL_CUDART", "/nonexistent/libcudart.so.13", 1);
	setenv("GPUPOOL_REQUIRE_CUDA", "1", 1);
	ASSERT_EQ(-ENODEV, gp_open(NULL, &ctx));
	TH_LOG("%s", gp_last_error(NULL));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "CUDA is required"));
}

TEST(require_without_device)
{
	struct gp_ctx *ctx;
	struct rt rt;

	rt_load(&rt);
	NEED_DOUBLE(&rt);
	rt.set_device_count(0);
	setenv("GPUPOOL_REQUIRE_CUDA", "1", 1);
	ASSERT_EQ(-ENODEV, gp_open(NULL, &ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "no CUDA device"));
	unsetenv("GPUPOOL_REQUIRE_CUDA");
	OPEN(NULL, &ctx);
	gp_close(ctx);
}

TEST(real_runtime_without_gpu)
{
	struct gp_info info;
	struct gp_ctx *ctx;
	void *p;

	/* The installed runtime, where there is no GPU, is not usable. */
	setenv("GPUPOOL_CUDART", "libcudart.so.13", 1);
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	TH_LOG("%s", info.why);
	if (info.cuda_state == GP_CUDA_REGISTERED) {
		gp_close(ctx);
		SKIP(return, "a GPU is present");
	}
	ASSERT_EQ(0, gp_host_alloc(ctx, 4096, 0, &p));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST(register_refused)
{
	struct gp_host_stats st;
	struct gp_ctx *ctx;
	struct rt rt;
	void *p;

	rt_load(&rt);
	NEED_DOUBLE(&rt);
	OPEN(NULL, &ctx);
	rt.fail_register(1);
	ASSERT_EQ(-EIO, gp_host_alloc(ctx, 3 << 20, 0, &p));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "cudaHostRegister"));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(0, st.reserved);
	ASSERT_EQ(st.map_calls, st.unmap_calls);
	ASSERT_EQ(0, gp_host_alloc(ctx, 3 << 20, 0, &p));	/* next one works */
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	ASSERT_EQ(0, rt_counts(&rt).registered);
}

TEST_HARNESS_MAIN
