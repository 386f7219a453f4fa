// SPDX-License-Identifier: MIT
/*
 * memlock: on the user backend, pinned memory counts against
 * RLIMIT_MEMLOCK; going over it fails with -ENOMEM and a message naming the
 * limit and how to raise it.  The test drops CAP_IPC_LOCK (which lets root
 * ignore the limit) and lowers the limit; the harness runs each test in a
 * child of its own, so nothing leaks into the other tests.
 */
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "helpers.h"

static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	return (int)syscall(SYS_capset, &h, d);
}

/* A context under an 8 MiB RLIMIT_MEMLOCK, without CAP_IPC_LOCK (8 MiB:
 * what the hard limit allows here; raising it needs CAP_SYS_RESOURCE).
 * NULL when the context is not on the user backend (the test skips).
 */
FIXTURE(limited) {
	struct gp_ctx *ctx;
};

FIXTURE_SETUP(limited)
{
	struct rlimit rl = { 8 << 20, 8 << 20 };

	self->ctx = NULL;
	ASSERT_EQ(0, drop_ipc_lock());
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	OPEN(NULL, &self->ctx);
	if (!on_user_backend(self->ctx)) {
		gp_close(self->ctx);
		self->ctx = NULL;
		SKIP(return, "RLIMIT_MEMLOCK applies to the user backend only");
	}
}

FIXTURE_TEARDOWN(limited)
{
	if (self->ctx)
		gp_close(self->ctx);
}

TEST_F(limited, over_limit)
{
	struct gp_ctx *ctx = self->ctx;
	struct gp_host_stats st;
	void *p, *q;

	if (!ctx)		/* setup skipped */
		return;
	/* Small buffers fit in a 2 MiB segment under the 8 MiB limit. */
	ASSERT_EQ(0, gp_host_alloc(ctx, 4096, 0, &p)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(-ENOMEM, gp_host_alloc(ctx, 64 << 20, 0, &q));
	TH_LOG("%s", gp_last_error(ctx));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "RLIMIT_MEMLOCK is 8.0 MiB"));
	ASSERT_NE(NULL, strstr(gp_last_error(ctx), "ulimit -l"));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(8 << 20, st.memlock_limit);
	ASSERT_EQ(st.map_calls, st.unmap_calls + st.segments);
	/* A medium request backs off from a 20 MiB segment to its size. */
	ASSERT_EQ(0, gp_host_alloc(ctx, 3 << 20, 0, &q)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_free(ctx, q));
	ASSERT_EQ(0, gp_host_free(ctx, p));
}

/* When the limit refuses a new segment, the idle cached ones (pinned too)
 * go back and the segment is tried once more: no false out-of-memory while
 * cached memory could serve.
 */
TEST_F(limited, refusal_releases_the_idle_cache)
{
	struct gp_ctx *ctx = self->ctx;
	struct gp_host_stats st;
	void *p, *q;

	if (!ctx)		/* setup skipped */
		return;
	ASSERT_EQ(0, gp_host_alloc(ctx, 5 << 20, 0, &p)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_free(ctx, p));		/* 5 MiB idle, pinned */
	ASSERT_EQ(0, gp_host_alloc(ctx, 6 << 20, 0, &q)) TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(5 << 20, st.trimmed);
	ASSERT_EQ(0, gp_host_free(ctx, q));		/* 6 MiB idle now */
	ASSERT_EQ(0, gp_host_alloc(ctx, 4 << 20, GP_HOST_SHARED, &p))
		TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	ASSERT_EQ(11 << 20, st.trimmed);
	ASSERT_EQ(0, gp_host_free(ctx, p));
}

TEST_HARNESS_MAIN
