// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_size.c - the size reader the module, the library and gpupoolctl
 * share (core/bfc_size.c): every unit, the edges of 2^64 and of the
 * caller's maximum, each kind of bad value with its reason, the value as
 * the message shows it, and *out left alone on failure.  What each caller
 * then says is its own test's (tests/lib/settings.c, tests/vm/module_params.c,
 * tests/tools/ctl_cgroup_test.c).
 */
#include "bfc_test.h"
#include "bfc_size.h"

#define TAKES	"; a size is " BFC_SIZE_ACCEPTED ", at most "

TEST(units_and_edges)
{
	static const struct { const char *s; uint64_t max, v; } good[] = {
		{ "0", 1, 0 }, { "1", 1, 1 }, { "016", 100, 16 },
		{ "1K", 1 << 20, 1 << 10 }, { "1KiB", 1 << 20, 1 << 10 },
		{ "3M", 1ull << 40, 3ull << 20 }, { "3MiB", 1ull << 40, 3ull << 20 },
		{ "5G", 1ull << 40, 5ull << 30 }, { "5GiB", 1ull << 40, 5ull << 30 },
		{ "64T", 64ull << 40, 64ull << 40 }, { "64TiB", 64ull << 40, 64ull << 40 },
		{ "18446744073709551615", UINT64_MAX, UINT64_MAX },
		{ "16777215T", UINT64_MAX, 16777215ull << 40 },
	};
	char msg[BFC_SIZE_MSG_LEN];
	unsigned int i;
	uint64_t v;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 12345;
		EXPECT_EQ(0, bfc_size_parse("x", good[i].s, good[i].max, &v, msg,
					    sizeof(msg))) TH_LOG("%s: %s", good[i].s, msg);
		EXPECT_EQ(good[i].v, v) TH_LOG("%s", good[i].s);
	}
}

TEST(bad_values_say_why)
{
	static const struct { const char *s; uint64_t max; const char *msg; } bad[] = {
		{ "", 1024, "n=: empty" TAKES "1 KiB" },
		{ "abc", 1024, "n=abc: not a number" TAKES "1 KiB" },
		{ "-1", 1024, "n=-1: negative" TAKES "1 KiB" },
		{ "+1", 1024, "n=+1: a sign (a size is digits alone)" TAKES "1 KiB" },
		{ "\t1", 1024, "n=?1: white space before the number" TAKES "1 KiB" },
		{ "1025", 1024, "n=1025: too large" TAKES "1 KiB" },
		{ "2K", 1024, "n=2K: too large" TAKES "1 KiB" },
		{ "1000", 999, "n=1000: too large" TAKES "999 bytes" },
		{ "18446744073709551616", UINT64_MAX, "n=18446744073709551616: too large" TAKES "18446744073709551615 bytes" },
		{ "16777216T", UINT64_MAX, "n=16777216T: too large" TAKES "18446744073709551615 bytes" },
		{ "1P", UINT64_MAX, "n=1P: something after the number that is no unit" TAKES "18446744073709551615 bytes" },
		{ "1k", 1ull << 63, "n=1k: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB)" TAKES "8 EiB" },
		{ "1Kib", 1ull << 63, "n=1Kib: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB)" TAKES "8 EiB" },
		{ "1kB", 1ull << 63, "n=1kB: a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB)" TAKES "8 EiB" },
		{ "1TB", 1ull << 63, "n=1TB: a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB)" TAKES "8 EiB" },
		{ "1Ki", 1ull << 63, "n=1Ki: something after the unit" TAKES "8 EiB" },
		{ "1,5G", 1ull << 63, "n=1,5G: a fraction (a size is whole bytes: 1536M, not 1.5G)" TAKES "8 EiB" },
		{ "0X10", 1ull << 63, "n=0X10: hexadecimal (a size is decimal)" TAKES "8 EiB" },
		{ "1G\r", 1ull << 63, "n=1G?: white space after the number" TAKES "8 EiB" },
		{ "123456789012345678901234567890123456789012345678901234567890",
		  64ull << 40, "n=123456789012345678901234567890123456789012345678...: too large" TAKES "64 TiB" },
	};
	char msg[BFC_SIZE_MSG_LEN];
	unsigned int i;
	uint64_t v;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 12345;
		msg[0] = 0;
		EXPECT_EQ(-BFC_EINVAL, bfc_size_parse("n", bad[i].s, bad[i].max, &v,
						      msg, sizeof(msg))) TH_LOG("accepted '%s'", bad[i].s);
		EXPECT_STREQ(bad[i].msg, msg);
		EXPECT_EQ(12345, v) TH_LOG("%s", bad[i].s);
	}
}

TEST_HARNESS_MAIN
