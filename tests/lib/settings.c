// SPDX-License-Identifier: MIT
/*
 * settings: every GPUPOOL_* variable libgpupool reads (docs/library.md,
 * "Environment"), set to each kind of bad value, fails gp_open() with
 * -EINVAL and exactly the message that names the variable, the value and
 * what it takes; set empty, it is unset (the open succeeds); set well, it
 * is read.  The kinds: sizes (core/bfc_size.c, the module's and
 * gpupoolctl's reader too), whole numbers, percentages, fractions, names
 * and yes-or-no (userlib/env.c).
 */
#include "helpers.h"

#define SIZE_TAKES	"a size is digits and an optional K, M, G or T, or KiB, " \
			"MiB, GiB or TiB (powers of 1024), as 512M, at most 8 EiB"
#define FRACTION	"a fraction of the device's memory, above 0 and at most 1 " \
			"with a point and up to 6 decimals, as 0.8"
#define DEV_LIMIT_TAKES	SIZE_TAKES "; or " FRACTION
#define DEV_FRACTION_TAKES "expected " FRACTION ", or a size (digits and a unit, as 40G)"
#define COUNT_TAKES	"expected a whole number from 1 to 65536"
#define GC_TAKES	"expected a whole number from 0 to 86400000"
#define PERCENT_TAKES	"expected a percentage from 0 to 1000, up to 4 decimals (as 9.09), or none"
#define BOOL_TAKES	"expected 1, yes, true or on, or 0, no, false or off"

static const struct bad {
	const char *var, *value, *msg;
} bad[] = {
	/* Sizes: letters, a sign, past 2^64, past the most, junk after, a
	 * unit in lower case or decimal, spaces, a fraction, hexadecimal.
	 */
	{ "GPUPOOL_HOST_LIMIT", "abc", "GPUPOOL_HOST_LIMIT=abc: not a number; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "-64M", "GPUPOOL_HOST_LIMIT=-64M: negative; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "+64M", "GPUPOOL_HOST_LIMIT=+64M: a sign (a size is digits alone); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "18446744073709551616", "GPUPOOL_HOST_LIMIT=18446744073709551616: too large; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "17592186044416M", "GPUPOOL_HOST_LIMIT=17592186044416M: too large; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "9223372036854775809", "GPUPOOL_HOST_LIMIT=9223372036854775809: too large; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64X", "GPUPOOL_HOST_LIMIT=64X: something after the number that is no unit; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64M!", "GPUPOOL_HOST_LIMIT=64M!: something after the unit; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64m", "GPUPOOL_HOST_LIMIT=64m: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64mib", "GPUPOOL_HOST_LIMIT=64mib: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64MB", "GPUPOOL_HOST_LIMIT=64MB: a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64 MB", "GPUPOOL_HOST_LIMIT=64 MB: white space after the number; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", " 64M", "GPUPOOL_HOST_LIMIT= 64M: white space before the number; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64M ", "GPUPOOL_HOST_LIMIT=64M : white space after the number; " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "1.5G", "GPUPOOL_HOST_LIMIT=1.5G: a fraction (a size is whole bytes: 1536M, not 1.5G); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "0x40", "GPUPOOL_HOST_LIMIT=0x40: hexadecimal (a size is decimal); " SIZE_TAKES },
	{ "GPUPOOL_HOST_LIMIT", "64\n", "GPUPOOL_HOST_LIMIT=64?: white space after the number; " SIZE_TAKES },
	/* A size or a fraction. */
	{ "GPUPOOL_DEV_LIMIT", "abc", "GPUPOOL_DEV_LIMIT=abc: not a number; " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "-1G", "GPUPOOL_DEV_LIMIT=-1G: negative; " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "99999999999999999999", "GPUPOOL_DEV_LIMIT=99999999999999999999: too large; " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "40g", "GPUPOOL_DEV_LIMIT=40g: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB); " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "1e30", "GPUPOOL_DEV_LIMIT=1e30: something after the number that is no unit; " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "40 G", "GPUPOOL_DEV_LIMIT=40 G: white space after the number; " DEV_LIMIT_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "-0.5", "GPUPOOL_DEV_LIMIT=-0.5: negative; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "1.5", "GPUPOOL_DEV_LIMIT=1.5: more than 1; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "0.0", "GPUPOOL_DEV_LIMIT=0.0: 0; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "0.8x", "GPUPOOL_DEV_LIMIT=0.8x: something after the number; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "0.8 ", "GPUPOOL_DEV_LIMIT=0.8 : white space after the number; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "0.1234567", "GPUPOOL_DEV_LIMIT=0.1234567: too many decimals; " DEV_FRACTION_TAKES },
	{ "GPUPOOL_DEV_LIMIT", "1.", "GPUPOOL_DEV_LIMIT=1.: no digit after the point; " DEV_FRACTION_TAKES },
	/* A whole number. */
	{ "GPUPOOL_POPULATE_THREADS", "abc", "GPUPOOL_POPULATE_THREADS=abc: not a number; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "-4", "GPUPOOL_POPULATE_THREADS=-4: negative; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "0", "GPUPOOL_POPULATE_THREADS=0: too small; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "65537", "GPUPOOL_POPULATE_THREADS=65537: too large; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "18446744073709551617", "GPUPOOL_POPULATE_THREADS=18446744073709551617: too large; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "4x", "GPUPOOL_POPULATE_THREADS=4x: something after the number; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "4K", "GPUPOOL_POPULATE_THREADS=4K: something after the number; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "2.5", "GPUPOOL_POPULATE_THREADS=2.5: a fraction (a whole number is digits alone); " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", " 4", "GPUPOOL_POPULATE_THREADS= 4: white space before the number; " COUNT_TAKES },
	{ "GPUPOOL_POPULATE_THREADS", "4 ", "GPUPOOL_POPULATE_THREADS=4 : white space after the number; " COUNT_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "10s", "GPUPOOL_HOST_GC_IDLE_MS=10s: something after the number; " GC_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "-1", "GPUPOOL_HOST_GC_IDLE_MS=-1: negative; " GC_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "86400001", "GPUPOOL_HOST_GC_IDLE_MS=86400001: too large; " GC_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "0x10", "GPUPOOL_HOST_GC_IDLE_MS=0x10: something after the number; " GC_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "never", "GPUPOOL_HOST_GC_IDLE_MS=never: not a number; " GC_TAKES },
	{ "GPUPOOL_HOST_GC_IDLE_MS", "1.5", "GPUPOOL_HOST_GC_IDLE_MS=1.5: a fraction (a whole number is digits alone); " GC_TAKES },
	/* A percentage, or none. */
	{ "GPUPOOL_DEV_HEADROOM", "abc", "GPUPOOL_DEV_HEADROOM=abc: not a number; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "-1", "GPUPOOL_DEV_HEADROOM=-1: negative; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "1001", "GPUPOOL_DEV_HEADROOM=1001: too large; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "99999999999999999999", "GPUPOOL_DEV_HEADROOM=99999999999999999999: too large; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "9%", "GPUPOOL_DEV_HEADROOM=9%: something after the number; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "9.123456", "GPUPOOL_DEV_HEADROOM=9.123456: too many decimals; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", "None", "GPUPOOL_DEV_HEADROOM=None: not a number; " PERCENT_TAKES },
	{ "GPUPOOL_DEV_HEADROOM", " 9", "GPUPOOL_DEV_HEADROOM= 9: white space before the number; " PERCENT_TAKES },
	/* Names, exactly as written (lower case). */
	{ "GPUPOOL_BACKEND", "bogus", "GPUPOOL_BACKEND=bogus: expected auto, kernel or user" },
	{ "GPUPOOL_BACKEND", "Kernel", "GPUPOOL_BACKEND=Kernel: expected auto, kernel or user" },
	{ "GPUPOOL_BACKEND", "user ", "GPUPOOL_BACKEND=user : expected auto, kernel or user" },
	{ "GPUPOOL_BACKEND", "-1", "GPUPOOL_BACKEND=-1: expected auto, kernel or user" },
	{ "GPUPOOL_DEV_MODE", "virtual", "GPUPOOL_DEV_MODE=virtual: expected auto or segments" },
	{ "GPUPOOL_DEV_MODE", "SEGMENTS", "GPUPOOL_DEV_MODE=SEGMENTS: expected auto or segments" },
	{ "GPUPOOL_POLICY", "best", "GPUPOOL_POLICY=best: expected tf, exact, seg, half or age" },
	{ "GPUPOOL_POLICY", "TF", "GPUPOOL_POLICY=TF: expected tf, exact, seg, half or age" },
	{ "GPUPOOL_POLICY", " tf", "GPUPOOL_POLICY= tf: expected tf, exact, seg, half or age" },
	/* Yes or no. */
	{ "GPUPOOL_DEBUG", "maybe", "GPUPOOL_DEBUG=maybe: " BOOL_TAKES },
	{ "GPUPOOL_DEBUG", "2", "GPUPOOL_DEBUG=2: " BOOL_TAKES },
	{ "GPUPOOL_DEBUG", "-1", "GPUPOOL_DEBUG=-1: " BOOL_TAKES },
	{ "GPUPOOL_DEBUG", "YES", "GPUPOOL_DEBUG=YES: " BOOL_TAKES },
	{ "GPUPOOL_DEBUG", "1 ", "GPUPOOL_DEBUG=1 : " BOOL_TAKES },
	{ "GPUPOOL_REQUIRE_CUDA", "sure", "GPUPOOL_REQUIRE_CUDA=sure: " BOOL_TAKES },
	{ "GPUPOOL_REQUIRE_CUDA", "10", "GPUPOOL_REQUIRE_CUDA=10: " BOOL_TAKES },
};

/* Every variable the table covers, and GPUPOOL_CUDART (a path). */
static const char *const vars[] = {
	"GPUPOOL_HOST_LIMIT", "GPUPOOL_DEV_LIMIT", "GPUPOOL_POPULATE_THREADS",
	"GPUPOOL_DEV_HEADROOM", "GPUPOOL_BACKEND", "GPUPOOL_DEV_MODE",
	"GPUPOOL_POLICY", "GPUPOOL_DEBUG", "GPUPOOL_REQUIRE_CUDA",
	"GPUPOOL_HOST_GC_IDLE_MS", "GPUPOOL_CUDART",
};
#define NR_VARS	(sizeof(vars) / sizeof(vars[0]))

/* The test's own environment (the runner's GPUPOOL_BACKEND, the double's
 * GPUPOOL_CUDART), put back after each change.
 */
static char *saved[NR_VARS];

static void save_env(void)
{
	unsigned int i;

	for (i = 0; i < NR_VARS; i++)
		saved[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
}

static void restore_env(void)
{
	unsigned int i;

	for (i = 0; i < NR_VARS; i++) {
		if (saved[i])
			setenv(vars[i], saved[i], 1);
		else
			unsetenv(vars[i]);
	}
}

/* ctx's host limit is 64 MiB: more is refused, saying so, mapping nothing. */
static void limited_to_64m(struct __test_metadata *_metadata,
			   struct gp_ctx *ctx, size_t more)
{
	struct gp_host_stats st;
	void *p;

	EXPECT_EQ(-ENOMEM, gp_host_alloc(ctx, more, 0, &p));
	EXPECT_NE(NULL, strstr(gp_last_error(ctx), "would exceed 64.0 MiB"))
		TH_LOG("%s", gp_last_error(ctx));
	ASSERT_EQ(0, gp_host_stats(ctx, &st));
	EXPECT_EQ(0, st.reserved);
}

TEST(bad_values_fail_the_open_saying_so)
{
	struct gp_ctx *ctx;
	unsigned int i;
	struct rt rt;

	rt_load(&rt);
	save_env();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ctx = NULL;
		setenv(bad[i].var, bad[i].value, 1);
		EXPECT_EQ(-EINVAL, gp_open(NULL, &ctx)) TH_LOG("%s='%s'", bad[i].var, bad[i].value);
		EXPECT_EQ(NULL, ctx);
		EXPECT_STREQ(bad[i].msg, gp_last_error(NULL));
		if (ctx)
			gp_close(ctx);
		restore_env();
	}
}

/* Set empty, every variable is unset: the open succeeds as without it. */
TEST(empty_is_unset)
{
	struct gp_ctx *ctx;
	struct gp_info a, b;
	unsigned int i;
	struct rt rt;

	rt_load(&rt);
	save_env();
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &a));
	gp_close(ctx);
	for (i = 0; i < NR_VARS; i++) {
		if (!strcmp(vars[i], "GPUPOOL_CUDART") ||
		    !strcmp(vars[i], "GPUPOOL_BACKEND"))
			continue;	/* the test's own: kept */
		setenv(vars[i], "", 1);
	}
	OPEN(NULL, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &b));
	EXPECT_EQ(a.backend, b.backend);
	EXPECT_EQ(a.cuda_state, b.cuda_state);
	EXPECT_EQ(a.dev_mode, b.dev_mode);
	gp_close(ctx);
	restore_env();
}

/* Good values of each kind are read as written. */
TEST(good_values_are_read)
{
	static const char *const sizes[] = { "64M", "64MiB", "65536K", "0064M",
					     "67108864" };
	struct gp_ctx *ctx;
	unsigned int i;
	struct rt rt;

	rt_load(&rt);
	save_env();
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		setenv("GPUPOOL_HOST_LIMIT", sizes[i], 1);
		setenv("GPUPOOL_POPULATE_THREADS", "1", 1);
		setenv("GPUPOOL_DEV_HEADROOM", "12.5", 1);
		setenv("GPUPOOL_DEV_LIMIT", "0.8", 1);
		setenv("GPUPOOL_DEBUG", "0", 1);
		setenv("GPUPOOL_POLICY", "exact", 1);
		OPEN(NULL, &ctx);
		TH_LOG("GPUPOOL_HOST_LIMIT=%s", sizes[i]);
		limited_to_64m(_metadata, ctx, 65 << 20);
		gp_close(ctx);
		restore_env();
	}
}

/* One small buffer freed, then (at least gone_ms later) a large one
 * freed, whose free checks the age limit: the bytes given back since.
 */
static uint64_t trimmed_after_a_free(struct __test_metadata *_metadata,
				     struct gp_ctx *ctx, unsigned int gone_ms)
{
	struct gp_host_stats st = { 0 };
	void *small = NULL, *large = NULL;

	EXPECT_EQ(0, gp_host_alloc(ctx, 4096, 0, &small));
	EXPECT_EQ(0, gp_host_alloc(ctx, 12 << 20, 0, &large));
	if (small)
		EXPECT_EQ(0, gp_host_free(ctx, small));
	usleep(gone_ms * 1000);
	if (large)
		EXPECT_EQ(0, gp_host_free(ctx, large));
	EXPECT_EQ(0, gp_host_stats(ctx, &st));
	return small && large ? st.trimmed : UINT64_MAX;
}

/*
 * GPUPOOL_HOST_GC_IDLE_MS is host_gc_idle_ms where gp_options sets none
 * (the interposer's): at 1 ms, a segment idle 20 ms goes back on the next
 * free (the default, 10 s, would keep it); a value in gp_options wins.
 */
TEST(gc_idle_ms_is_read)
{
	struct gp_options o;
	struct gp_ctx *ctx;
	uint64_t trimmed;
	struct rt rt;

	rt_load(&rt);
	save_env();
	setenv("GPUPOOL_HOST_GC_IDLE_MS", "1", 1);
	OPEN(NULL, &ctx);
	trimmed = trimmed_after_a_free(_metadata, ctx, 20);
	EXPECT_LE(2u << 20, trimmed);
	EXPECT_NE(UINT64_MAX, trimmed);
	gp_close(ctx);

	gp_options_init(&o);
	o.host_gc_idle_ms = GP_HOST_GC_NEVER;
	OPEN(&o, &ctx);
	EXPECT_EQ(0, trimmed_after_a_free(_metadata, ctx, 20));
	gp_close(ctx);
	restore_env();
}

/*
 * The issue that made these readers, as a new user met it: a 200 MiB
 * request under GPUPOOL_HOST_LIMIT.  Only 64M is a limit; every other
 * value used to be read as none at all (abc, -64M) or as 64 bytes (64X,
 * "64 MB"), and now fails the open, naming the variable.
 */
TEST(a_mistyped_limit_is_never_a_different_limit)
{
	static const char *const values[] = { "64M", "abc", "-64M", "64X", "64 MB" };
	struct gp_ctx *ctx;
	unsigned int i;
	struct rt rt;

	rt_load(&rt);
	save_env();
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		ctx = NULL;
		setenv("GPUPOOL_HOST_LIMIT", values[i], 1);
		if (!i) {
			OPEN(NULL, &ctx);
			limited_to_64m(_metadata, ctx, 200 << 20);
			TH_LOG("%s: refused: %s", values[i], gp_last_error(ctx));
			gp_close(ctx);
		} else {
			EXPECT_EQ(-EINVAL, gp_open(NULL, &ctx));
			EXPECT_EQ(0, strncmp(gp_last_error(NULL), "GPUPOOL_HOST_LIMIT=",
					     strlen("GPUPOOL_HOST_LIMIT=")))
				TH_LOG("%s", gp_last_error(NULL));
			TH_LOG("%s: gp_open: %s", values[i], gp_last_error(NULL));
		}
		restore_env();
	}
}

TEST_HARNESS_MAIN
