// SPDX-License-Identifier: MIT
/*
 * open_steps: gp_open() fails at each of its steps in turn, made to by the
 * library's test hook (gp_open_fail_step), and for real where a step can
 * be refused from outside; every time it leaves nothing behind: no memory
 * (LeakSanitizer, asked in the test's own process: the harness's children
 * _exit(), so its check at exit never runs there), nothing freed twice
 * (AddressSanitizer), no descriptor, nothing left with the runtime (the
 * double's books); and the context opens and works afterwards.
 */
#include <dirent.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "helpers.h"

/* ctx.c's test hook: in no public header, hidden in the shared library;
 * this program links the library's objects.
 */
extern unsigned int gp_open_fail_step;

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Nothing of a context is left: descriptors as before (fds), no memory
 * unreachable, nothing registered, allocated or reserved with the double.
 */
static void nothing_left(struct __test_metadata *_metadata, struct rt *rt,
			 int fds, const char *after)
{
	struct cdd_counts c = rt_counts(rt);

	EXPECT_EQ(fds, open_fds()) TH_LOG("after %s", after);
#ifdef __SANITIZE_ADDRESS__
	/* Without ASan (its arm64 build under qemu-user: UBSan alone, see
	 * scripts/arm64-user.sh) memory is not checked here.
	 */
	EXPECT_EQ(0, __lsan_do_recoverable_leak_check()) TH_LOG("after %s", after);
#endif
	EXPECT_EQ(0, c.registered) TH_LOG("after %s", after);
	EXPECT_EQ(0, c.dev_live) TH_LOG("after %s", after);
	EXPECT_EQ(0, c.events_live) TH_LOG("after %s", after);
	EXPECT_EQ(0, c.reservations) TH_LOG("after %s", after);
	EXPECT_EQ(0, c.handles) TH_LOG("after %s", after);
	EXPECT_TRUE(rt_clean(rt)) TH_LOG("after %s: %s", after,
					  rt->is_double ? rt->last_violation() : "");
}

/* A context that opened: it allocates, frees and closes. */
static void use_and_close(struct __test_metadata *_metadata, struct rt *rt,
			  struct gp_ctx *ctx)
{
	void *small, *large, *dev = NULL;

	ASSERT_EQ(0, gp_host_alloc(ctx, 1000, 0, &small)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_alloc(ctx, 3 << 20, 0, &large)) TH_LOG("%s", gp_last_error(ctx));
	if (rt->devices)
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 1 << 20, NULL, &dev))
			TH_LOG("%s", gp_last_error(ctx));
	EXPECT_EQ(0, gp_host_free(ctx, small));
	EXPECT_EQ(0, gp_host_free(ctx, large));
	EXPECT_EQ(0, gp_dev_free(ctx, dev, NULL));
	gp_close(ctx);
}

static int kernel_absent(int ret)
{
	return ret == -ENODEV && backend_forced_kernel() &&
	       access("/dev/gpupool", F_OK);
}

/* Step n fails, for n = 1, 2, ... until the hook no longer fires (past
 * the step after the last): each failure is the hook's, the last one
 * after every step, and each leaves nothing behind.
 */
TEST(each_step_fails_in_turn)
{
	struct gp_ctx *ctx = NULL;
	char what[512] = "";
	unsigned int n;
	int fds, ret;
	struct rt rt;

	rt_load(&rt);	/* CUDA with the double where it loads: more to undo */
	fds = open_fds();
	ASSERT_LT(0, fds);
	for (n = 1; n < 100; n++) {
		gp_open_fail_step = n;
		ret = gp_open(NULL, &ctx);
		if (!ret)
			break;
		if (kernel_absent(ret))
			SKIP(return, "GPUPOOL_BACKEND=kernel: %s", gp_last_error(NULL));
		ASSERT_EQ(-ENOMEM, ret) TH_LOG("step %u: %s", n, gp_last_error(NULL));
		snprintf(what, sizeof(what), "%s", gp_last_error(NULL));
		TH_LOG("step %u: %s", n, what);
		ASSERT_NE(NULL, strstr(what, "failure injected"));
		ASSERT_EQ(NULL, ctx);
		nothing_left(_metadata, &rt, fds, what);
	}
	gp_open_fail_step = 0;
	ASSERT_NE(NULL, ctx) TH_LOG("the hook fired at every step up to %u", n);
	EXPECT_NE(NULL, strstr(what, "after the last step")) TH_LOG("%s", what);
	EXPECT_LE(3, n - 1);
	use_and_close(_metadata, &rt, ctx);
	nothing_left(_metadata, &rt, fds, "gp_close");
	/* And again, without the hook. */
	ctx = NULL;
	ASSERT_EQ(0, gp_open(NULL, &ctx)) TH_LOG("%s", gp_last_error(NULL));
	use_and_close(_metadata, &rt, ctx);
	nothing_left(_metadata, &rt, fds, "the second gp_close");
}

/* The steps that can be refused from outside, refused for real: the
 * options (a bad GPUPOOL_POLICY), CUDA (required but absent), the device
 * pools (a bad GPUPOOL_DEV_HEADROOM), the backend (a strict NUMA node no
 * backend has).  Each leaves nothing behind.
 */
TEST(refused_steps_leave_nothing)
{
	static const struct {
		const char *env, *val;	/* set for the open */
		unsigned int flags;
		int numa_node, ret;
		const char *says;
	} cases[] = {
		{ "GPUPOOL_POLICY", "bogus", 0, GP_NUMA_ANY, -EINVAL, "GPUPOOL_POLICY" },
		{ "GPUPOOL_CUDART", "/nonexistent/libcudart.so",
		  GP_OPEN_REQUIRE_CUDA, GP_NUMA_ANY, -ENODEV, "CUDA is required" },
		{ "GPUPOOL_DEV_HEADROOM", "-1", 0, GP_NUMA_ANY, -EINVAL,
		  "GPUPOOL_DEV_HEADROOM" },
		{ NULL, NULL, GP_OPEN_NUMA_STRICT, 1000, -ENODEV,
		  "NUMA node 1000" },
	};
	struct gp_options o;
	struct gp_ctx *ctx;
	const char *cudart;
	char keep[512];
	unsigned int i;
	int fds, ret;
	struct rt rt;

	rt_load(&rt);
	cudart = getenv("GPUPOOL_CUDART");
	snprintf(keep, sizeof(keep), "%s", cudart ? cudart : "");
	fds = open_fds();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gp_options_init(&o);
		o.flags = cases[i].flags;
		o.numa_node = cases[i].numa_node;
		if (cases[i].env)
			setenv(cases[i].env, cases[i].val, 1);
		ctx = NULL;
		ret = gp_open(&o, &ctx);
		if (cases[i].env)
			unsetenv(cases[i].env);
		setenv("GPUPOOL_CUDART", keep, 1);
		if (kernel_absent(ret))
			SKIP(return, "GPUPOOL_BACKEND=kernel: %s", gp_last_error(NULL));
		if (!ret && cases[i].numa_node >= 0) {
			/* Where the system does not say which nodes have
			 * memory, the open cannot refuse the node.
			 */
			TH_LOG("NUMA node %d not refused here", cases[i].numa_node);
			gp_close(ctx);
			ctx = NULL;
		} else {
			EXPECT_EQ(cases[i].ret, ret) TH_LOG("%s: %s", cases[i].says,
							     gp_last_error(NULL));
			EXPECT_NE(NULL, strstr(gp_last_error(NULL), cases[i].says))
				TH_LOG("%s", gp_last_error(NULL));
		}
		EXPECT_EQ(NULL, ctx);
		nothing_left(_metadata, &rt, fds, cases[i].says);
	}
	ASSERT_EQ(0, gp_open(NULL, &ctx)) TH_LOG("%s", gp_last_error(NULL));
	use_and_close(_metadata, &rt, ctx);
	nothing_left(_metadata, &rt, fds, "gp_close");
}

TEST_HARNESS_MAIN
