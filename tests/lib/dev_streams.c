// SPDX-License-Identifier: MIT
/*
 * dev_streams: stream-ordered safety.  A block freed on its stream is
 * reused there at once; a block also used on another stream is handed out
 * again (on any stream) only after the events recorded at free time have
 * completed; the test double holds events incomplete until the test
 * completes them.  In both modes of the device pool.
 */
#include "helpers.h"

#define SZ (256u << 10)

FIXTURE(streams) {
	struct rt rt;
	struct gp_ctx *ctx;
	gp_stream_t s1, s2;
};

FIXTURE_VARIANT(streams) {
	const char *mode;
};

FIXTURE_VARIANT_ADD(streams, segments) { .mode = "segments" };
FIXTURE_VARIANT_ADD(streams, virtual) { .mode = "auto" };

FIXTURE_SETUP(streams)
{
	setenv("GPUPOOL_DEV_MODE", variant->mode, 1);
	RT_SETUP(&self->rt);
	NEED_DOUBLE(&self->rt);
	ASSERT_EQ(0, self->rt.StreamCreate(&self->s1));
	ASSERT_EQ(0, self->rt.StreamCreate(&self->s2));
	self->rt.hold_events(1);
	OPEN(NULL, &self->ctx);
	{
		struct gp_info i;

		ASSERT_EQ(0, gp_info(self->ctx, &i));
		ASSERT_EQ(strcmp(variant->mode, "segments") ? GP_DEV_VIRTUAL :
			  GP_DEV_SEGMENTS, i.dev_mode);
	}
}

FIXTURE_TEARDOWN(streams)
{
	if (!self->ctx)
		return;
	gp_close(self->ctx);
	EXPECT_EQ(0, rt_counts(&self->rt).events_live);
	EXPECT_EQ(0, rt_counts(&self->rt).dev_live);
	EXPECT_EQ(0, rt_counts(&self->rt).handles);
	EXPECT_EQ(0, rt_counts(&self->rt).mapped);
	EXPECT_EQ(0, rt_counts(&self->rt).reservations);
	EXPECT_TRUE(rt_clean(&self->rt));
	self->rt.StreamDestroy(self->s1);
	self->rt.StreamDestroy(self->s2);
}

TEST_F(streams, same_stream_reuse_at_once)
{
	void *p, *q;

	if (!self->ctx)		/* setup skipped */
		return;
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &p));
	ASSERT_EQ(0, gp_dev_free(self->ctx, p, self->s1));
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &q));
	ASSERT_EQ(p, q);
	/* No event was needed. */
	ASSERT_EQ(0, rt_counts(&self->rt).calls[CDD_EVENT_RECORD]);
	/* Another stream never gets a block of s1's segments. */
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s1));
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s2, &q));
	ASSERT_NE(p, q);
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s2));
}

TEST_F(streams, record_stream_waits_for_event)
{
	struct gp_dev_stats st;
	void *p, *q, *r;

	if (!self->ctx)		/* setup skipped */
		return;
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &p));
	ASSERT_EQ(0, gp_dev_record_stream(self->ctx, p, self->s2));
	ASSERT_EQ(0, gp_dev_free(self->ctx, p, self->s1));
	ASSERT_EQ(1, rt_counts(&self->rt).calls[CDD_EVENT_RECORD]);
	ASSERT_EQ(1, rt_counts(&self->rt).events_pending);
	ASSERT_EQ(0, gp_dev_stats(self->ctx, 0, &st));
	ASSERT_EQ(1, st.pending_blocks);
	/* While s2 may still use it, no stream gets it, not even s1. */
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &q));
	ASSERT_NE(p, q);
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s2, &r));
	ASSERT_NE(p, r);
	ASSERT_EQ(-EINVAL, gp_dev_free(self->ctx, p, self->s1));	/* twice */
	ASSERT_EQ(-EINVAL, gp_dev_record_stream(self->ctx, p, self->s1));
	/* Those allocations found the event not ready; that answer is not
	 * left for the application's next cudaGetLastError().
	 */
	ASSERT_LT(0, rt_counts(&self->rt).calls[CDD_EVENT_QUERY]);
	ASSERT_EQ(0, self->rt.GetLastError());
	/* The event completes: the next allocation on s1 finds it. */
	self->rt.complete_events();
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s1));
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &q));
	ASSERT_EQ(0, gp_dev_stats(self->ctx, 0, &st));
	ASSERT_EQ(0, st.pending_blocks);
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s1));
	ASSERT_EQ(0, gp_dev_free(self->ctx, r, self->s2));
}

TEST_F(streams, free_on_other_stream)
{
	void *p, *q;

	if (!self->ctx)		/* setup skipped */
		return;
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &p));
	/* Freed on s2: s2's queued work may use it; an event guards it. */
	ASSERT_EQ(0, gp_dev_free(self->ctx, p, self->s2));
	ASSERT_EQ(1, rt_counts(&self->rt).events_pending);
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &q));
	ASSERT_NE(p, q);
	self->rt.complete_events();
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s1));
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &q));
	ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &p));
	ASSERT_EQ(0, gp_dev_free(self->ctx, q, self->s1));
	ASSERT_EQ(0, gp_dev_free(self->ctx, p, self->s1));
}

TEST_F(streams, events_reused)
{
	unsigned int i;
	void *p;

	if (!self->ctx)		/* setup skipped */
		return;
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, gp_dev_alloc(self->ctx, 0, SZ, self->s1, &p));
		ASSERT_EQ(0, gp_dev_record_stream(self->ctx, p, self->s2));
		ASSERT_EQ(0, gp_dev_free(self->ctx, p, self->s1));
		self->rt.complete_events();
	}
	/* Completed events go back to a cache: a handful, not 100. */
	ASSERT_LE(rt_counts(&self->rt).calls[CDD_EVENT_CREATE], 2);
}

TEST_HARNESS_MAIN
