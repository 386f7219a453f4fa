// SPDX-License-Identifier: GPL-2.0
/*
 * module_params: every parameter of gpupool.ko, given each kind of bad
 * value (letters, a sign, past 2^64 or past the most, junk after, a unit
 * in lower case or a decimal one, spaces, hexadecimal), fails the load
 * with -EINVAL, leaves nothing behind, and says exactly why in one kernel
 * log line that names the parameter, the value and what it takes.  Sizes
 * are read by the reader the library and gpupoolctl use
 * (core/bfc_size.c); an empty value is the default.
 */
#include <sys/klog.h>

#include "kselftest_harness.h"
#include "lib.h"

#define SIZE_TAKES	"a size is digits and an optional K, M, G or T, or KiB, " \
			"MiB, GiB or TiB (powers of 1024), as 512M, at most 64 TiB"
#define MODE_TAKES	"expected permission bits in octal, at most 0777 (as 0660)"
#define NODES_TAKES	"expected NUMA node numbers below 64, decimal, separated " \
			"by commas (as nodes=0,1)"
#define MS_TAKES	"expected milliseconds, decimal digits, at most 60000"
#define BOOL_TAKES	"expected 1, y, Y or on (yes), or 0, n, N or off (no)"

static const struct bad {
	const char *params, *line;
} bad[] = {
	/* The sizes. */
	{ "pool_size=lots", "pool_size=lots: not a number; " SIZE_TAKES },
	{ "pool_size=-16M", "pool_size=-16M: negative; " SIZE_TAKES },
	{ "pool_size=+16M", "pool_size=+16M: a sign (a size is digits alone); " SIZE_TAKES },
	{ "pool_size=16Mx", "pool_size=16Mx: something after the unit; " SIZE_TAKES },
	{ "pool_size=16X", "pool_size=16X: something after the number that is no unit; " SIZE_TAKES },
	{ "pool_size=16m", "pool_size=16m: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB); " SIZE_TAKES },
	{ "pool_size=16mib", "pool_size=16mib: a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB); " SIZE_TAKES },
	{ "pool_size=16M per_process_limit=4GB", "per_process_limit=4GB: a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB); " SIZE_TAKES },
	{ "pool_size=\" 16M\"", "pool_size= 16M: white space before the number; " SIZE_TAKES },
	{ "pool_size=\"16 M\"", "pool_size=16 M: white space after the number; " SIZE_TAKES },
	{ "pool_size=\"16M\n\"", "pool_size=16M?: white space after the number; " SIZE_TAKES },
	{ "pool_size=0x1000000", "pool_size=0x1000000: hexadecimal (a size is decimal); " SIZE_TAKES },
	{ "pool_size=1.5G", "pool_size=1.5G: a fraction (a size is whole bytes: 1536M, not 1.5G); " SIZE_TAKES },
	{ "pool_size=16M max_size=K", "max_size=K: not a number; " SIZE_TAKES },
	/* Once memparse()d: 16E wrapped to 0 (no growth), 1p was a
	 * petabyte, and a huge max_size made kvcalloc WARN.
	 */
	{ "pool_size=16M max_size=16E", "max_size=16E: something after the number that is no unit; " SIZE_TAKES },
	{ "pool_size=16M max_size=1p", "max_size=1p: something after the number that is no unit; " SIZE_TAKES },
	{ "pool_size=16M max_size=65T", "max_size=65T: too large; " SIZE_TAKES },
	{ "pool_size=16M max_size=99999999999999999999", "max_size=99999999999999999999: too large; " SIZE_TAKES },
	{ "pool_size=16M max_size=17592186044416M", "max_size=17592186044416M: too large; " SIZE_TAKES },
	{ "pool_size=16M per_process_limit=-1", "per_process_limit=-1: negative; " SIZE_TAKES },
	{ "pool_size=16M reclaim_rate=fast", "reclaim_rate=fast: not a number; " SIZE_TAKES },
	{ "pool_size=16M reclaim_rate=-1M", "reclaim_rate=-1M: negative; " SIZE_TAKES },
	{ "pool_size=16M reclaim_rate=1MB", "reclaim_rate=1MB: a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB); " SIZE_TAKES },
	/* Sizes that read but do not fit together. */
	{ "pool_size=0", "pool_size=0 and no growth (max_size=0): nothing to serve" },
	{ "pool_size=16M max_size=8M", "max_size=8M is below pool_size=16M" },
	/* dev_mode, in octal. */
	{ "pool_size=16M dev_mode=01666", "dev_mode=01666: " MODE_TAKES },
	{ "pool_size=16M dev_mode=0x1b6", "dev_mode=0x1b6: " MODE_TAKES },
	{ "pool_size=16M dev_mode=-1", "dev_mode=-1: " MODE_TAKES },
	{ "pool_size=16M dev_mode=660x", "dev_mode=660x: " MODE_TAKES },
	{ "pool_size=16M dev_mode=0668", "dev_mode=0668: " MODE_TAKES },
	{ "pool_size=16M dev_mode", "dev_mode=: " MODE_TAKES },
	{ "pool_size=16M dev_mode=\"0660 \"", "dev_mode=0660 : " MODE_TAKES },
	/* reclaim_wait_ms, in decimal milliseconds; a line break only
	 * where written while loaded (reclaim_wait_written).
	 */
	{ "pool_size=16M reclaim_wait_ms=-1", "reclaim_wait_ms=-1: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms=1s", "reclaim_wait_ms=1s: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms=0x10", "reclaim_wait_ms=0x10: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms=60001", "reclaim_wait_ms=60001: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms=99999999999999999999", "reclaim_wait_ms=99999999999999999999: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms=\"500\n\"", "reclaim_wait_ms=500\\n: " MS_TAKES },
	{ "pool_size=16M reclaim_wait_ms", "reclaim_wait_ms=: " MS_TAKES },
	/* nodes. */
	{ "pool_size=16M nodes=63", "nodes: node 63 has no memory the pool can use (or does not exist)" },
	{ "pool_size=16M nodes=abc", "nodes=abc: " NODES_TAKES },
	{ "pool_size=16M nodes=-1", "nodes=-1: " NODES_TAKES },
	{ "pool_size=16M nodes=0,,1", "nodes=0,,1: " NODES_TAKES },
	{ "pool_size=16M nodes=0,", "nodes=0,: " NODES_TAKES },
	{ "pool_size=16M nodes=99999999999999999999", "nodes=99999999999999999999: " NODES_TAKES },
	{ "pool_size=16M nodes=\"0 \"", "nodes=0 : " NODES_TAKES },
	{ "pool_size=16M nodes", "nodes=: " NODES_TAKES },
	/* The yes-or-no ones. */
	{ "pool_size=16M strict=yes", "strict=yes: " BOOL_TAKES },
	{ "pool_size=16M strict=1x", "strict=1x: " BOOL_TAKES },
	{ "pool_size=16M strict=-1", "strict=-1: " BOOL_TAKES },
	{ "pool_size=16M selftest=2", "selftest=2: " BOOL_TAKES },
	{ "pool_size=16M selftest=\"1 \"", "selftest=1 : " BOOL_TAKES },
	{ "pool_size=16M huge_maps=true", "huge_maps=true: " BOOL_TAKES },
	/* The names. */
	{ "pool_size=16M policy=best", "policy=best: expected tf, exact, seg, half or age" },
	{ "pool_size=16M policy=TF", "policy=TF: expected tf, exact, seg, half or age" },
	{ "pool_size=16M cgroup_limits=DMEM", "cgroup_limits=DMEM: expected auto, dmem or module" },
	{ "pool_size=16M cgroup_limits=\" auto\"", "cgroup_limits= auto: expected auto, dmem or module" },
};

/* The kernel log from the last line holding mark on (malloc'd), or NULL. */
static char *log_since(const char *mark)
{
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *at, *next;
	int n;

	if (size <= 0)
		return NULL;
	buf = calloc(1, (size_t)size + 1);
	if (!buf)
		return NULL;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size);
	buf[n > 0 ? n : 0] = 0;
	at = strstr(buf, mark);
	while (at && (next = strstr(at + 1, mark)))
		at = next;
	if (!at) {
		free(buf);
		return NULL;
	}
	memmove(buf, at, strlen(at) + 1);
	return buf;
}

/* The log line "gpupool: <line>" after mark (whole: to its end). */
static int logged(const char *mark, const char *line)
{
	char want[1024], *log = log_since(mark);
	int found;

	snprintf(want, sizeof(want), "gpupool: %s\n", line);
	found = log && strstr(log, want);
	free(log);
	return found;
}

static void mark(const char *text)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("/dev/kmsg");
		close(fd);
	}
}

TEST(bad_params_refused_saying_why)
{
	char m[96];
	unsigned int i;

	GP_REQUIRE();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(m, sizeof(m), "module_params: case %u\n", i);
		mark(m);
		EXPECT_EQ(-EINVAL, gp_load(bad[i].params)) TH_LOG("params \"%s\"", bad[i].params);
		EXPECT_TRUE(logged(m, bad[i].line))
			TH_LOG("params \"%s\": no line \"gpupool: %s\"", bad[i].params, bad[i].line);
		EXPECT_EQ(0, gp_loaded()) TH_LOG("params \"%s\"", bad[i].params);
		EXPECT_EQ(-1, access(GP_DEV, F_OK));
		EXPECT_EQ(-1, access(GP_PROC, F_OK));
		if (gp_loaded())
			gp_unload_wait(2000);
	}
}

/* Load with params: /proc/gpupool shows the three sizes, then unload. */
static void sizes_shown(struct __test_metadata *_metadata, const char *params,
			const char *total, const char *limit, const char *ppl)
{
	static const char *const keys[] = { "PoolTotal", "PoolLimit", "PerProcessLimit" };
	const char *want[] = { total, limit, ppl };
	char text[16384] = "", val[64] = "";
	unsigned int i;

	ASSERT_EQ(0, gp_load(params)) TH_LOG("params \"%s\"", params);
	EXPECT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	for (i = 0; i < 3; i++) {
		EXPECT_NE(NULL, gp_proc_value(text, keys[i], val, sizeof(val)));
		EXPECT_STREQ(want[i], val) TH_LOG("%s", keys[i]);
	}
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/*
 * Sizes read as written: a leading 0 is decimal (memparse() would read
 * 016 as 14), KiB to TiB as K to T, up to T; an empty parameter is its
 * default (pool_size 256M; max_size and per_process_limit 0: none).
 */
TEST(size_params_read)
{
	GP_REQUIRE();
	sizes_shown(_metadata, "pool_size=016M max_size=00032MiB per_process_limit=1T",
		    "16384 kB", "32768 kB", "1073741824 kB");
	sizes_shown(_metadata, "pool_size=16M max_size= per_process_limit= policy= "
		    "cgroup_limits= nodes= dev_mode= strict= selftest= "
		    "reclaim_wait_ms= reclaim_rate=",
		    "16384 kB", "0 kB", "0 kB");
}

/* The yes-or-no parameters take each of their words; dev_mode octal. */
TEST(words_read)
{
	static const char *const good[] = {
		"strict=0", "strict=n", "strict=N", "strict=off", "strict",
		"strict=1", "strict=y", "strict=Y", "strict=on", "selftest=0",
		"huge_maps=0", "huge_maps=n", "dev_mode=0600", "dev_mode=600",
		"nodes=0", "reclaim_wait_ms=0", "reclaim_wait_ms=60000",
		"reclaim_rate=0", "reclaim_rate=64MiB",
	};
	char params[128];
	unsigned int i;

	GP_REQUIRE();
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(params, sizeof(params), "pool_size=16M %s", good[i]);
		EXPECT_EQ(0, gp_load(params)) TH_LOG("params \"%s\"", params);
		EXPECT_EQ(0, gp_unload_wait(5000));
	}
}

/* The parameter in force, as /sys shows it, in buf. */
static const char *param_now(const char *name, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), GP_SYSMOD "/parameters/%s", name);
	buf[0] = 0;
	if (gp_read_file(path, buf, len) > 0)
		buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/*
 * reclaim_wait_ms written while loaded: by the same reader, with the line
 * break echo adds; a bad value is refused and the value in force stays.
 */
TEST(reclaim_wait_written)
{
	static const char *const bad[] = { "\n", "5s\n", "-1\n", "60001\n",
					   "500\n\n", " 500\n" };
	char path[256], now[64];
	unsigned int i;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load("pool_size=16M reclaim_wait_ms=250"));
	EXPECT_STREQ("250", param_now("reclaim_wait_ms", now, sizeof(now)));
	snprintf(path, sizeof(path), GP_SYSMOD "/parameters/reclaim_wait_ms");
	EXPECT_EQ(0, gp_write_file(path, "500\n"));
	EXPECT_STREQ("500", param_now("reclaim_wait_ms", now, sizeof(now)));
	EXPECT_EQ(0, gp_write_file(path, "0"));
	EXPECT_STREQ("0", param_now("reclaim_wait_ms", now, sizeof(now)));
	EXPECT_EQ(0, gp_write_file(path, "60000\n"));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, gp_write_file(path, bad[i]))
			TH_LOG("wrote \"%s\"", bad[i]);
		EXPECT_STREQ("60000", param_now("reclaim_wait_ms", now, sizeof(now)));
	}
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
