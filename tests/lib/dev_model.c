// SPDX-License-Identifier: MIT
/*
 * dev_model: random work on the device pool checked against a model, in
 * both modes.  The model is the set of live blocks: each one's bytes are
 * stamped when it is allocated and must read back intact until it is
 * freed (a trim that unmapped a granule under a live block, or a block
 * handed out twice, shows); no two live blocks overlap; the pool's
 * in-use and requested bytes equal the model's; in the virtual mode the
 * double's live handles and mapped bytes equal the pool's mapped bytes at
 * every step.  Trims, limits and refused creations are mixed in; at the end
 * everything is freed, trimmed and closed with nothing left in the double.
 * GPUPOOL_TEST_SEED picks the seed (default: fixed); each run is repeatable.
 */
#include "helpers.h"

#define MAXLIVE	256
#define STEPS	4000
#define KiB	(1ull << 10)
#define MiB	(1ull << 20)

struct blk { char *p; size_t n; unsigned int seed; int stream; };

static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

/* Stamp and check a block: all of it when small, else its first, middle
 * and last 4 KiB.
 */
#define PIECE	4096

static void stamp(const struct blk *b)
{
	size_t m = b->n / 2;

	if (b->n < 4 * PIECE) {
		fill(b->p, b->n, b->seed);
		return;
	}
	fill(b->p, PIECE, b->seed);
	fill(b->p + m, PIECE, b->seed + 1);
	fill(b->p + b->n - PIECE, PIECE, b->seed + 2);
}

static int intact(const struct blk *b)
{
	size_t m = b->n / 2;

	if (b->n < 4 * PIECE)
		return check_fill(b->p, b->n, b->seed);
	return check_fill(b->p, PIECE, b->seed) &&
	       check_fill(b->p + m, PIECE, b->seed + 1) &&
	       check_fill(b->p + b->n - PIECE, PIECE, b->seed + 2);
}

static size_t pick_size(void)
{
	switch (rnd(10)) {
	case 0: return 1 + rnd(64);
	case 1: case 2: case 3: return 1 + rnd(64 * KiB);
	case 4: case 5: return 1 + rnd(2 * MiB);
	case 6: case 7: return MiB + rnd(6 * MiB);
	case 8: return 2 * MiB * (1 + rnd(4));		/* whole granules */
	default: return 8 * MiB + rnd(24 * MiB);
	}
}

FIXTURE(model) {
	struct rt rt;
};

FIXTURE_VARIANT(model) {
	const char *mode;
	uint64_t limit;
};

FIXTURE_VARIANT_ADD(model, segments) { .mode = "segments" };
FIXTURE_VARIANT_ADD(model, virtual) { .mode = "auto" };
FIXTURE_VARIANT_ADD(model, virtual_limit) { .mode = "auto", .limit = 96 * MiB };

FIXTURE_SETUP(model)
{
	const char *seed = getenv("GPUPOOL_TEST_SEED");

	rng = seed && *seed ? strtoull(seed, NULL, 0) | 1 : 0x2545f4914f6cdd1dull;
	setenv("GPUPOOL_DEV_MODE", variant->mode, 1);
	RT_SETUP(&self->rt);
	NEED_DOUBLE(&self->rt);
	self->rt.set_mem_total(256 * MiB);
}

FIXTURE_TEARDOWN(model)
{
}

TEST_F(model, random_work)
{
	static struct blk live[MAXLIVE];
	gp_stream_t streams[2];
	struct gp_options o;
	struct gp_ctx *ctx;
	struct gp_info info;
	int nlive = 0, step, i, j, ooms = 0;
	uint64_t want_req = 0;

	if (!self->rt.is_double)	/* setup skipped */
		return;
	ASSERT_EQ(0, self->rt.StreamCreate(&streams[0]));
	ASSERT_EQ(0, self->rt.StreamCreate(&streams[1]));
	gp_options_init(&o);
	o.dev_limit = variant->limit;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(strcmp(variant->mode, "segments") ? GP_DEV_VIRTUAL : GP_DEV_SEGMENTS,
		  info.dev_mode);
	TH_LOG("seed %#llx", (unsigned long long)rng);
	for (step = 0; step < STEPS; step++) {
		struct gp_dev_stats st;
		struct cdd_counts c;
		uint64_t r = rnd(100);

		if (r < 52 && nlive < MAXLIVE) {
			struct blk b = { NULL, pick_size(), (unsigned int)step,
					 (int)rnd(2) };
			int ret;

			if (r < 2 && info.dev_mode == GP_DEV_VIRTUAL)
				self->rt.fail_create_after((long)rnd(3));
			ret = gp_dev_alloc(ctx, 0, b.n, streams[b.stream], (void **)&b.p);
			self->rt.fail_create_after(-1);
			if (ret == -ENOMEM) {
				ooms++;
				continue;
			}
			ASSERT_EQ(0, ret) TH_LOG("step %d: %s", step, gp_last_error(ctx));
			for (i = 0; i < nlive; i++)
				ASSERT_TRUE(b.p + b.n <= live[i].p ||
					    live[i].p + live[i].n <= b.p)
					TH_LOG("step %d: %p+%zu overlaps %p+%zu", step,
					       b.p, b.n, live[i].p, live[i].n);
			stamp(&b);
			live[nlive++] = b;
			want_req += b.n;
		} else if (r < 97 && nlive) {
			i = (int)rnd((uint64_t)nlive);
			ASSERT_TRUE(intact(&live[i])) TH_LOG("step %d: block %p+%zu changed",
							     step, live[i].p, live[i].n);
			ASSERT_EQ(0, gp_dev_free(ctx, live[i].p, streams[live[i].stream]));
			want_req -= live[i].n;
			live[i] = live[--nlive];
		} else {
			uint64_t n = 0;

			ASSERT_EQ(0, gp_dev_trim(ctx, -1, &n));
			for (j = 0; j < nlive; j++)
				ASSERT_TRUE(intact(&live[j])) TH_LOG("step %d: trim broke %p",
								     step, live[j].p);
		}
		ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
		ASSERT_EQ(want_req, st.requested);
		ASSERT_LE(st.requested, st.in_use);
		ASSERT_LE(st.in_use, st.reserved);
		if (variant->limit)
			ASSERT_LE(st.reserved, variant->limit);
		c = rt_counts(&self->rt);
		if (info.dev_mode == GP_DEV_VIRTUAL) {
			ASSERT_EQ(st.mapped, c.mapped_bytes);
			ASSERT_EQ(st.mapped, c.phys_bytes);
			ASSERT_EQ(st.mapped / st.granularity, c.handles);
			ASSERT_EQ(st.mapped, st.reserved);
			ASSERT_EQ(0, c.dev_live);
		} else {
			ASSERT_EQ(st.reserved, c.dev_live_bytes);
			ASSERT_EQ(0, c.handles);
		}
	}
	TH_LOG("%d out-of-memory answers", ooms);
	while (nlive) {
		ASSERT_TRUE(intact(&live[nlive - 1]));
		ASSERT_EQ(0, gp_dev_free(ctx, live[nlive - 1].p,
					 streams[live[nlive - 1].stream]));
		nlive--;
	}
	ASSERT_EQ(0, gp_dev_trim(ctx, -1, NULL));
	{
		struct gp_dev_stats st;

		ASSERT_EQ(0, gp_dev_stats(ctx, 0, &st));
		EXPECT_EQ(0, st.reserved);
		EXPECT_EQ(0, st.mapped);
	}
	gp_close(ctx);
	EXPECT_EQ(0, rt_counts(&self->rt).dev_live);
	EXPECT_EQ(0, rt_counts(&self->rt).handles);
	EXPECT_EQ(0, rt_counts(&self->rt).mapped);
	EXPECT_EQ(0, rt_counts(&self->rt).reservations);
	EXPECT_TRUE(rt_clean(&self->rt)) TH_LOG("%s", self->rt.last_violation());
	self->rt.StreamDestroy(streams[0]);
	self->rt.StreamDestroy(streams[1]);
}

TEST_HARNESS_MAIN
