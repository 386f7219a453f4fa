// SPDX-License-Identifier: MIT
/*
 * ctl_cgroup_test - per-cgroup figures and limits in the tools, on the
 * host, without the module: the Cgroup lines of /proc/gpupool (fixtures
 * for the module's own limits and for dmem's), what stat, top and
 * prometheus make of them (the bounded label set included), and `limit`'s
 * checks of its arguments, which all come before it needs the module (so
 * that here, with none loaded, the first thing it cannot do is say so).
 * The dmem side reads and writes a directory standing in for the cgroup2
 * mount.  The real module: tests/vm/ctl_output.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "kselftest_harness.h"
#include "bfc_size.h"
#include "ctl.h"
#include "ctl_lib.h"

/* gpupoolctl with no module, whatever this machine has loaded. */
static char *ctl_nodev(const char *proc, const char *args, int *code)
{
	setenv("GPUPOOL_DEV_PATH", "/nonexistent/gpupool", 1);
	return ctl(proc, args, code);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

/* The parser ----------------------------------------------------------------- */

TEST(parses_cgroup_lines)
{
	struct gpctl_pool p;
	size_t len;
	char *text = slurp(CGROUP_FIXTURE, &len);
	const struct gpctl_field *f;

	ASSERT_NE(NULL, text);
	ASSERT_EQ(0, gpctl_parse_proc(text, len, &p));
	f = gpctl_field(&p, "CgroupLimits");
	ASSERT_NE(NULL, f);
	EXPECT_EQ('w', f->unit);
	EXPECT_STREQ("module", f->text);
	EXPECT_EQ(0, f->value);
	EXPECT_EQ(3, gpctl_value(&p, "CgroupDenials"));
	EXPECT_EQ(0, gpctl_field(&p, "CgroupDenials")->unit);
	/* Holders and the rest as before. */
	EXPECT_EQ(2, p.nr_holders);
	EXPECT_EQ(2, p.nr_maps);
	ASSERT_EQ(5, p.nr_cgroups);
	EXPECT_STREQ("/", p.cgroups[0].path);
	EXPECT_EQ(8ull << 20, p.cgroups[0].bytes);
	EXPECT_EQ(3, p.cgroups[0].chunks);
	EXPECT_EQ(GPCTL_NO_LIMIT, p.cgroups[0].limit);
	EXPECT_STREQ("/idle", p.cgroups[1].path);
	EXPECT_EQ(0, p.cgroups[1].bytes);
	EXPECT_EQ(1ull << 30, p.cgroups[1].limit);
	EXPECT_STREQ("/kubepods", p.cgroups[2].path);
	EXPECT_EQ(8ull << 20, p.cgroups[2].limit);
	EXPECT_EQ(3, p.cgroups[2].denials);
	/* \012 and \134 decoded: the path itself, spaces and all. */
	EXPECT_STREQ("/kubepods/pod a\nb", p.cgroups[3].path);
	EXPECT_STREQ("/user\\slice", p.cgroups[4].path);
	gpctl_pool_free(&p);
	EXPECT_EQ(NULL, p.cgroups);
	free(text);

	text = slurp(DMEM_FIXTURE, &len);
	ASSERT_NE(NULL, text);
	ASSERT_EQ(0, gpctl_parse_proc(text, len, &p));
	EXPECT_STREQ("dmem", gpctl_field(&p, "CgroupLimits")->text);
	EXPECT_EQ(2, gpctl_value(&p, "CgroupDenials"));
	ASSERT_EQ(3, p.nr_cgroups);
	EXPECT_EQ(GPCTL_NO_LIMIT, p.cgroups[2].limit);
	EXPECT_STREQ("/kubepods/pod1", p.cgroups[2].path);
	gpctl_pool_free(&p);
	free(text);
}

TEST(rejects_bad_cgroup_lines)
{
	static const char *const bad[] = {
		"AbiVersion: 1.1\nCgroup: 4 1 - 0 relative\n",
		"AbiVersion: 1.1\nCgroup: 4 1 - 0\n",
		"AbiVersion: 1.1\nCgroup: 4 1 - 0 \n",
		"AbiVersion: 1.1\nCgroup: 4 1 x 0 /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 -0 /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 - 0x /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 -  /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1-0 /a\n",
		"AbiVersion: 1.1\nCgroup: -4 1 - 0 /a\n",
		"AbiVersion: 1.1\nCgroup: 18014398509481984 1 - 0 /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 18014398509481984 0 /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 - 99999999999999999999 /a\n",
		"AbiVersion: 1.1\nCgroup: 4 1 - 0 /a\\000b\n",	/* a NUL in it */
		"AbiVersion: 1.1\nCgroupLimits: mod ule\n",
		"AbiVersion: 1.1\nCgroupLimits: 5x\n",
		"AbiVersion: 1.1\nCgroupLimits: averyveryverylongword\n",
		"AbiVersion: 1.1\nCgroupLimits: dmem!\n",
	};
	struct gpctl_pool p;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, gpctl_parse_proc(bad[i], strlen(bad[i]), &p)) {
			TH_LOG("accepted: %s", bad[i]);
		}
		EXPECT_EQ(NULL, p.cgroups);
		EXPECT_EQ(NULL, p.fields);
	}
}

/* The kernel's PATH_MAX bounds a path: 4095 bytes parse, 4096 do not. */
TEST(cgroup_path_length)
{
	size_t n, head = strlen("AbiVersion: 1.1\nCgroup: 4 1 - 0 ");
	struct gpctl_pool p;
	char *text;

	for (n = GPCTL_PATH_MAX - 1; n <= GPCTL_PATH_MAX; n++) {
		text = malloc(head + n + 1);
		ASSERT_NE(NULL, text);
		memcpy(text, "AbiVersion: 1.1\nCgroup: 4 1 - 0 ", head);
		memset(text + head, 'x', n);
		text[head] = '/';
		if (n < GPCTL_PATH_MAX) {
			ASSERT_EQ(0, gpctl_parse_proc(text, head + n, &p));
			EXPECT_EQ(n, strlen(p.cgroups[0].path));
			gpctl_pool_free(&p);
		} else {
			EXPECT_EQ(-EINVAL, gpctl_parse_proc(text, head + n, &p));
		}
		free(text);
	}
}

/* Every prefix of the cgroup fixture, in a buffer of exactly its length. */
TEST(cgroup_truncation_is_safe)
{
	struct gpctl_pool p;
	size_t len, cut;
	char *text = slurp(CGROUP_FIXTURE, &len);
	int ok = 0;

	ASSERT_NE(NULL, text);
	for (cut = 0; cut <= len; cut++) {
		char *copy = malloc(cut ? cut : 1);
		int ret;

		memcpy(copy, text, cut);
		ret = gpctl_parse_proc(copy, cut, &p);
		ASSERT_TRUE(ret == 0 || ret == -EINVAL);
		if (!ret) {
			ok++;
			gpctl_pool_free(&p);
		}
		free(copy);
	}
	EXPECT_GT(ok, 0);
	free(text);
}

/* stat, top, prometheus ------------------------------------------------------ */

TEST(stat_shows_cgroups)
{
	int code = -1;
	char *out = ctl(CGROUP_FIXTURE, "stat -b", &code), *a, *b;

	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "\ncgroups (limits: the module's own; 3 allocations refused by a cgroup limit):\n"
			       "        USED   CHUNKS        LIMIT  DENIALS  CGROUP\n"
			       "     8388608        3            -        0  /\n"
			       "           0        0   1073741824        0  /idle\n"
			       "     7340032        2      8388608        3  /kubepods\n"
			       "     7340032        2            -        0  /kubepods/pod a\\012b\n"
			       "     1048576        1            -        0  /user\\134slice\n")) {
		TH_LOG("%s", out);
	}
	free(out);

	out = ctl(CGROUP_FIXTURE, "stat", &code);
	EXPECT_NE(NULL, strstr(out, "       7.0Mi        2        8.0Mi        3  /kubepods\n")) TH_LOG("%s", out);
	free(out);

	out = ctl(CGROUP_FIXTURE, "stat --json", &code);
	EXPECT_EQ(0, code);
	EXPECT_TRUE(is_json(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"CgroupLimits\": \"module\", \"CgroupDenials\": 3")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"cgroups\": [{\"cgroup\": \"/\", \"bytes\": 8388608, \"chunks\": 3, \"limit\": null, \"denials\": 0}, ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"cgroup\": \"/kubepods/pod a\\u000ab\", \"bytes\": 7340032")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"cgroup\": \"/kubepods\", \"bytes\": 7340032, \"chunks\": 2, \"limit\": 8388608, \"denials\": 3}")) TH_LOG("%s", out);
	free(out);

	/* dmem: the limits are in dmem.max, and whose refused is not known. */
	out = ctl(DMEM_FIXTURE, "stat -b", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "cgroups (limits: dmem.max, see gpupoolctl limit show; 2 allocations refused by a cgroup limit):\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "     4194304        1     dmem.max        -  /kubepods/pod1\n")) TH_LOG("%s", out);
	free(out);

	/* top: by bytes, ties by path. */
	out = ctl(CGROUP_FIXTURE, "top -n 1 -b", &code);
	EXPECT_EQ(0, code);
	a = strstr(out, "     7340032        2      8388608        3  /kubepods\n");
	b = strstr(out, "     7340032        2            -        0  /kubepods/pod a\\012b\n");
	EXPECT_TRUE(a && b && a < b) TH_LOG("%s", out);
	a = strstr(out, "     1048576        1            -        0  /user\\134slice\n");
	b = strstr(out, "           0        0   1073741824        0  /idle\n");
	EXPECT_TRUE(a && b && a < b) TH_LOG("%s", out);
	EXPECT_TRUE(strstr(out, "      77      7340032") < strstr(out, "cgroups (")) TH_LOG("%s", out);
	free(out);
}

TEST(prometheus_cgroup_series)
{
	int code = -1;
	char *out = ctl(CGROUP_FIXTURE, "prometheus", &code);

	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out,
		"# TYPE gpupool_cgroup_bytes gauge\n"
		"gpupool_cgroup_bytes{cgroup=\"/\"} 8388608\n"
		"gpupool_cgroup_bytes{cgroup=\"/idle\"} 0\n"
		"gpupool_cgroup_bytes{cgroup=\"/kubepods\"} 7340032\n"
		"gpupool_cgroup_bytes{cgroup=\"/kubepods/pod a\\nb\"} 7340032\n"
		"gpupool_cgroup_bytes{cgroup=\"/user\\\\slice\"} 1048576\n#")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "gpupool_cgroup_chunks{cgroup=\"/kubepods\"} 2\n"));
	/* A limit only where one is set. */
	EXPECT_NE(NULL, strstr(out,
		"# TYPE gpupool_cgroup_limit_bytes gauge\n"
		"gpupool_cgroup_limit_bytes{cgroup=\"/idle\"} 1073741824\n"
		"gpupool_cgroup_limit_bytes{cgroup=\"/kubepods\"} 8388608\n#")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "# TYPE gpupool_cgroup_denials_total counter\n"
			       "gpupool_cgroup_denials_total{cgroup=\"/\"} 0\n"));
	EXPECT_NE(NULL, strstr(out, "gpupool_cgroup_denials_total{cgroup=\"/kubepods\"} 3\n"));
	EXPECT_NE(NULL, strstr(out, "# TYPE gpupool_cgroup_limit_denials_total counter\n"
			       "gpupool_cgroup_limit_denials_total 3\n"));
	EXPECT_EQ(NULL, strstr(out, "cgroup=\"other\""));
	free(out);

	/* dmem: no per-cgroup limit or refusal series (the module has none). */
	out = ctl(DMEM_FIXTURE, "prometheus", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "gpupool_cgroup_bytes{cgroup=\"/kubepods/pod1\"} 4194304\n"));
	EXPECT_EQ(NULL, strstr(out, "gpupool_cgroup_limit_bytes"));
	EXPECT_EQ(NULL, strstr(out, "gpupool_cgroup_denials_total"));
	EXPECT_NE(NULL, strstr(out, "gpupool_cgroup_limit_denials_total 2\n"));
	free(out);

	/* A module before ABI 1.1: no cgroup series at all. */
	out = ctl(FIXTURE_FILE, "prometheus", &code);
	EXPECT_EQ(0, code);
	EXPECT_EQ(NULL, strstr(out, "gpupool_cgroup"));
	free(out);
}

/*
 * 150 cgroups: /c000 .. /c149 with (i + 1) * 4 kB and i % 7 chunks, the
 * three smallest with a limit and 1, 2, 3 refusals.
 */
static void write_many(const char *path, int n)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f)
		abort();
	fprintf(f, "AbiVersion: 1.1\nPoolTotal: 1048576 kB\nCgroupLimits: module\n"
		"CgroupDenials: 6\n");
	for (i = 0; i < n; i++) {
		if (i < 3)
			fprintf(f, "Cgroup: %d %d %d %d /c%03d\n", (i + 1) * 4,
				i % 7, 1024 * (i + 1), i + 1, i);
		else
			fprintf(f, "Cgroup: %d %d - 0 /c%03d\n", (i + 1) * 4, i % 7, i);
	}
	fclose(f);
}

struct series_sum {
	int series;		/* lines of the metric */
	int other;		/* of them cgroup="other" */
	unsigned long long sum, other_value;
};

static struct series_sum sum_metric(const char *out, const char *name)
{
	struct series_sum s = { 0 };
	char prefix[128];
	const char *p = out;

	snprintf(prefix, sizeof(prefix), "\n%s{cgroup=\"", name);
	while ((p = strstr(p, prefix))) {
		const char *v = strstr(p + 1, "} ");
		unsigned long long x = strtoull(v + 2, NULL, 10);

		s.series++;
		s.sum += x;
		if (!strncmp(p + strlen(prefix), "other\"", 6)) {
			s.other++;
			s.other_value = x;
		}
		p++;
	}
	return s;
}

TEST(prometheus_cgroups_bounded)
{
	char path[] = "/tmp/gpctl-many-XXXXXX", cmd[512];
	unsigned long long bytes = 0, chunks = 0, denials = 0, other = 0;
	struct series_sum s;
	int code = -1, fd, i;
	char *out;

	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	close(fd);
	write_many(path, 150);
	for (i = 0; i < 150; i++) {
		bytes += (i + 1) * 4096ull;
		chunks += i % 7;
		denials += i < 3 ? i + 1 : 0;
		/* The default 100: the 3 limited, then the 97 largest
		 * (/c053 .. /c149); /c003 .. /c052 are "other".
		 */
		if (i >= 3 && i < 53)
			other += (i + 1) * 4096ull;
	}

	out = ctl(path, "prometheus", &code);
	EXPECT_EQ(0, code);
	s = sum_metric(out, "gpupool_cgroup_bytes");
	EXPECT_EQ(101, s.series);
	EXPECT_EQ(1, s.other);
	EXPECT_EQ(bytes, s.sum);
	EXPECT_EQ(other, s.other_value);
	s = sum_metric(out, "gpupool_cgroup_chunks");
	EXPECT_EQ(101, s.series);
	EXPECT_EQ(chunks, s.sum);
	s = sum_metric(out, "gpupool_cgroup_denials_total");
	EXPECT_EQ(101, s.series);
	EXPECT_EQ(denials, s.sum);
	EXPECT_EQ(0, s.other_value);
	/* Limited ones first, however small; the limit only for them. */
	EXPECT_NE(NULL, strstr(out, "\ngpupool_cgroup_bytes{cgroup=\"/c000\"} 4096\n"));
	EXPECT_NE(NULL, strstr(out, "\ngpupool_cgroup_bytes{cgroup=\"/c053\"} 221184\n"));
	EXPECT_EQ(NULL, strstr(out, "{cgroup=\"/c052\"}"));
	s = sum_metric(out, "gpupool_cgroup_limit_bytes");
	EXPECT_EQ(3, s.series);
	EXPECT_EQ(0, s.other);
	EXPECT_EQ((1 + 2 + 3) << 20, s.sum);
	EXPECT_NE(NULL, strstr(out, "\ngpupool_cgroup_limit_denials_total 6\n"));
	free(out);

	/* --max-cgroups 10: the 3 limited and /c143 .. /c149. */
	out = ctl(path, "prometheus --max-cgroups 10", &code);
	EXPECT_EQ(0, code);
	s = sum_metric(out, "gpupool_cgroup_bytes");
	EXPECT_EQ(11, s.series);
	EXPECT_EQ(bytes, s.sum);
	EXPECT_NE(NULL, strstr(out, "{cgroup=\"/c002\"}"));
	EXPECT_NE(NULL, strstr(out, "{cgroup=\"/c143\"}"));
	EXPECT_EQ(NULL, strstr(out, "{cgroup=\"/c142\"}"));
	free(out);

	/* 2: fewer names than limited cgroups: the largest of those. */
	out = ctl(path, "prometheus --max-cgroups 2", &code);
	s = sum_metric(out, "gpupool_cgroup_bytes");
	EXPECT_EQ(3, s.series);
	EXPECT_EQ(bytes, s.sum);
	EXPECT_NE(NULL, strstr(out, "{cgroup=\"/c002\"}"));
	EXPECT_NE(NULL, strstr(out, "{cgroup=\"/c001\"}"));
	EXPECT_EQ(2, sum_metric(out, "gpupool_cgroup_limit_bytes").series);
	free(out);

	/* 0: everything in "other". */
	out = ctl(path, "prometheus --max-cgroups 0", &code);
	EXPECT_EQ(0, code);
	s = sum_metric(out, "gpupool_cgroup_bytes");
	EXPECT_EQ(1, s.series);
	EXPECT_EQ(bytes, s.other_value);
	EXPECT_EQ(NULL, strstr(out, "gpupool_cgroup_limit_bytes"));
	free(out);

	/* 150 or more: every cgroup by name, no "other". */
	out = ctl(path, "prometheus --max-cgroups 150", &code);
	s = sum_metric(out, "gpupool_cgroup_bytes");
	EXPECT_EQ(150, s.series);
	EXPECT_EQ(0, s.other);
	free(out);

	out = ctl(path, "prometheus --max-cgroups -1", &code);
	EXPECT_EQ(2, code);
	EXPECT_NE(NULL, strstr(out, "--max-cgroups wants a number")) TH_LOG("%s", out);
	free(out);
	out = ctl(path, "prometheus --max-cgroups 1x", &code);
	EXPECT_EQ(2, code);
	free(out);

	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd),
			 "GPUPOOL_PROC_PATH='%s' %s prometheus | promtool check metrics",
			 path, CTL_BIN);
		EXPECT_EQ(0, system(cmd));
	}
	unlink(path);
}

/* What promtool says of the cgroup series (escaped paths, dmem). */
TEST(promtool_accepts_cgroup_metrics)
{
	const char *const fixtures[] = { CGROUP_FIXTURE, DMEM_FIXTURE };
	char cmd[512];
	unsigned int i;

	if (system("command -v promtool >/dev/null 2>&1"))
		SKIP(return, "no promtool (make deps installs Debian's prometheus)");
	for (i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd),
			 "GPUPOOL_PROC_PATH='%s' %s prometheus | promtool check metrics",
			 fixtures[i], CTL_BIN);
		EXPECT_EQ(0, system(cmd)) TH_LOG("%s", fixtures[i]);
	}
}

/* limit: arguments ------------------------------------------------------------ */

TEST(sizes_as_the_module_takes_them)
{
	static const struct { const char *s; unsigned long long v; } good[] = {
		{ "1", 1 }, { "4096", 4096 }, { "1K", 1024 }, { "1KiB", 1024 },
		{ "2M", 2 << 20 }, { "3GiB", 3ull << 30 }, { "4T", 4ull << 40 },
		{ "0001", 1 }, { "8388608T", 1ull << 63 },
		{ "9223372036854775808", 1ull << 63 },
		{ "9223372036854775807", (1ull << 63) - 1 },
	};
	/* The reader's own reasons (core/bfc_size.c), and gpupoolctl's 0. */
	static const struct { const char *s, *why; } bad[] = {
		{ "", "SIZE=: empty;" }, { "0", "SIZE=0: 0 is not a limit" },
		{ "0K", "SIZE=0K: 0 is not a limit" }, { "-1", "SIZE=-1: negative;" },
		{ "-5G", "negative;" }, { "+5", "a sign" },
		{ " 5", "white space before" }, { "1GB", "a decimal unit" },
		{ "1k", "a unit in the wrong case" }, { "3g", "a unit in the wrong case" },
		{ "1 G", "white space after" }, { "1.5G", "a fraction" },
		{ "12x", "no unit" }, { "0x10", "hexadecimal" },
		{ "5KiBs", "something after the unit" }, { "1P", "no unit" },
		{ "9223372036854775809", "too large" },
		{ "8388609T", "too large" },
		{ "18446744073709551616", "too large" },
		{ "99999999999999999999999", "too large" },
		{ "16777216T", "too large" },
	};
	char why[BFC_SIZE_MSG_LEN];
	uint64_t v;
	unsigned int i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 0;
		EXPECT_EQ(0, parse_size("SIZE", good[i].s, &v, why, sizeof(why))) TH_LOG("%s: %s", good[i].s, why);
		EXPECT_EQ(good[i].v, v) TH_LOG("%s", good[i].s);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		EXPECT_EQ(-1, parse_size("SIZE", bad[i].s, &v, why, sizeof(why))) TH_LOG("accepted '%s'", bad[i].s);
		EXPECT_NE(NULL, strstr(why, bad[i].why)) TH_LOG("'%s': %s", bad[i].s, why);
		if (strstr(why, "0 is not"))
			continue;
		EXPECT_NE(NULL, strstr(why, "; a size is digits and an optional K, M, G or T, "
					"or KiB, MiB, GiB or TiB (powers of 1024), as 512M, at most 8 EiB"))
			TH_LOG("'%s': %s", bad[i].s, why);
	}
}

/* Bad sizes: status 2, before the cgroup or the module is looked at. */
TEST(limit_refuses_bad_sizes)
{
	static const char *const sizes[] = {
		"0", "-1", "-5G", "1GB", "1.5G", "''", "99999999999999999999",
		"9223372036854775809", "8388609T", "+5", "0x10", "64m",
	};
	char args[256];
	unsigned int i;
	int code;
	char *out;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(args, sizeof(args), "limit set /nonexistent-cgroup %s", sizes[i]);
		out = ctl_nodev(CGROUP_FIXTURE, args, &code);
		EXPECT_EQ(2, code) TH_LOG("%s: %s", sizes[i], out);
		EXPECT_NE(NULL, strstr(out, "gpupoolctl: limit set: SIZE=")) TH_LOG("%s: %s", sizes[i], out);
		EXPECT_EQ(NULL, strstr(out, "no such cgroup"));
		EXPECT_EQ(NULL, strstr(out, "The gpupool module is not loaded"));
		free(out);
	}
	/* 2^63 itself is a size: the next complaint is the cgroup. */
	out = ctl_nodev(CGROUP_FIXTURE, "limit set /nonexistent-cgroup 8388608T", &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "no such cgroup")) TH_LOG("%s", out);
	free(out);
}

TEST(limit_usage_errors)
{
	static const char *const args[] = {
		"limit", "limit set", "limit set /", "limit set / 1G x",
		"limit clear", "limit clear / 1G", "limit show / x", "limit bogus /",
		"limit set fd:x 1G", "limit set fd: 1G", "limit set fd:-1 1G",
		"limit show fd:9999", "limit set '' 1G",
	};
	unsigned int i;
	int code;
	char *out;

	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		out = ctl_nodev(CGROUP_FIXTURE, args[i], &code);
		EXPECT_EQ(2, code) TH_LOG("%s: %s", args[i], out);
		EXPECT_EQ(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s: %s", args[i], out);
		free(out);
	}
	out = ctl_nodev(CGROUP_FIXTURE, "limit show fd:9999", &code);
	EXPECT_NE(NULL, strstr(out, "9999 is not an open file descriptor")) TH_LOG("%s", out);
	free(out);
}

/* What is not a cgroup, by path and by fd: status 1 and what it is. */
TEST(limit_refuses_what_is_not_a_cgroup)
{
	char dir[] = "/tmp/gpctl-notcg-XXXXXX", file[300], args[700], mnt[PATH_MAX];
	struct statfs sfs;
	int code;
	char *out;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/file", dir);
	write_file(file, "x\n");
	ASSERT_EQ(0, statfs(dir, &sfs));

	/* A path under the cgroup2 mount that is not there. */
	out = ctl_nodev(CGROUP_FIXTURE, "limit set /gpctl-no-such-cgroup/x 1G", &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "no such cgroup: ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "/gpctl-no-such-cgroup/x does not exist")) TH_LOG("%s", out);
	free(out);
	out = ctl_nodev(CGROUP_FIXTURE, "limit clear gpctl-no-such-cgroup", &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "gpctl-no-such-cgroup does not exist")) TH_LOG("%s", out);
	free(out);

	/* A regular file, by path and as fd:N. */
	snprintf(args, sizeof(args), "limit set %s 1G", file);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "is not a directory")) TH_LOG("%s", out);
	free(out);
	snprintf(args, sizeof(args), "limit show fd:7 7<%s", file);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "fd:7 is not a directory")) TH_LOG("%s", out);
	free(out);

	/* A directory of another file system, by path and as fd:N. */
	snprintf(args, sizeof(args), "limit set %s 1G", dir);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "is not a cgroup: its file system is")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "not cgroup2")) TH_LOG("%s", out);
	free(out);
	snprintf(args, sizeof(args), "limit show fd:7 7<%s", dir);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "is not a cgroup")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, dir)) TH_LOG("%s", out);	/* named by its path */
	free(out);

	/* Under a cgroup2 mount named by the test: the same checks. */
	snprintf(mnt, sizeof(mnt), "%s/sub", dir);
	ASSERT_EQ(0, mkdir(mnt, 0755));
	setenv("GPUPOOL_CGROUP_MOUNT", dir, 1);
	out = ctl_nodev(CGROUP_FIXTURE, "limit set sub 1G", &code);
	unsetenv("GPUPOOL_CGROUP_MOUNT");
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "/sub is not a cgroup")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "under the cgroup2 mount, ")) TH_LOG("%s", out);
	free(out);
	rmdir(mnt);
	unlink(file);
	EXPECT_EQ(0, rmdir(dir));
}

/* The first mount of fstype in /proc/self/mountinfo, or false. */
static bool find_mount(const char *fstype, char *buf, size_t len)
{
	char line[4096], want[64], mp[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	snprintf(want, sizeof(want), " - %s ", fstype);
	while (f && !found && fgets(line, sizeof(line), f)) {
		if (strstr(line, want) && sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    !strchr(mp, '\\')) {
			snprintf(buf, len, "%s", mp);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * A real cgroup2 directory passes every check: then, with no module, the
 * message is that it is not loaded (status 3), for each way of naming it.
 */
TEST(limit_on_a_real_cgroup_needs_the_module)
{
	char mnt[PATH_MAX], args[PATH_MAX + 64];
	struct statfs sfs;
	const char *names[4];
	unsigned int i;
	int code;
	char *out;

	if (!find_mount("cgroup2", mnt, sizeof(mnt)) || statfs(mnt, &sfs) ||
	    (unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC)
		SKIP(return, "no cgroup2 file system mounted here");
	snprintf(args, sizeof(args), "limit set %s 1G", mnt);	/* the mount itself */
	names[0] = "limit set / 1G";
	names[1] = "limit clear /";
	names[2] = "limit show /";
	names[3] = args;
	for (i = 0; i < 4; i++) {
		out = ctl_nodev(CGROUP_FIXTURE, names[i], &code);
		EXPECT_EQ(3, code) TH_LOG("%s: %s", names[i], out);
		EXPECT_NE(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s: %s", names[i], out);
		free(out);
	}
	snprintf(args, sizeof(args), "limit set fd:7 1G 7<%s", mnt);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(3, code) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s", out);
	free(out);
}

/* A cgroup v1 hierarchy is named as one (where this machine has one). */
TEST(limit_refuses_cgroup_v1)
{
	char mnt[PATH_MAX], args[PATH_MAX + 64];
	struct statfs sfs;
	int code;
	char *out;

	if (!find_mount("cgroup", mnt, sizeof(mnt)) || statfs(mnt, &sfs) ||
	    (unsigned long)sfs.f_type != CGROUP_SUPER_MAGIC)
		SKIP(return, "no cgroup v1 hierarchy mounted here");
	snprintf(args, sizeof(args), "limit set %s 1G", mnt);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "is in a cgroup v1 hierarchy")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "cgroup v2")) TH_LOG("%s", out);
	free(out);
	snprintf(args, sizeof(args), "limit show fd:7 7<%s", mnt);
	out = ctl_nodev(CGROUP_FIXTURE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "is in a cgroup v1 hierarchy")) TH_LOG("%s", out);
	free(out);
}

/* limit show, no cgroup: /proc/gpupool only ------------------------------------ */

TEST(limit_show_module_table)
{
	int code = -1;
	char *out = ctl_nodev(CGROUP_FIXTURE, "limit show -b", &code);

	EXPECT_EQ(0, code) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "limits: the module's own (gpupoolctl limit set)\n"
			       "       LIMIT         USED   CHUNKS  DENIALS  CGROUP\n"
			       "  1073741824            0        0        0  /idle\n"
			       "     8388608      7340032        2        3  /kubepods\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "  /\n"));	/* no limit: not listed */
	free(out);
	out = ctl_nodev(CGROUP_FIXTURE, "limit show --json", &code);
	EXPECT_EQ(0, code);
	EXPECT_TRUE(is_json(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"limits\": \"module\", \"cgroups\": [{\"cgroup\": \"/idle\", \"limit\": 1073741824, \"bytes\": 0, \"chunks\": 0, \"denials\": 0}, ")) TH_LOG("%s", out);
	free(out);

	/* A module before ABI 1.1 has no limits to show. */
	out = ctl_nodev(FIXTURE_FILE, "limit show", &code);
	EXPECT_EQ(5, code);
	EXPECT_NE(NULL, strstr(out, "(ABI 1.0) does not charge cgroups")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Upgrade the gpupool module")) TH_LOG("%s", out);
	free(out);
	/* And no module at all. */
	out = ctl_nodev("/nonexistent/gpupool", "limit show", &code);
	EXPECT_EQ(3, code);
	EXPECT_NE(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s", out);
	free(out);
}

/* dmem, on a directory standing in for the cgroup2 mount ---------------------- */

struct fake_tree {
	char root[32];
};

/*
 * root: controllers with dmem, subtree_control "cpu dmem";
 *   a/   dmem.max 1 GiB (beside another region), dmem.current 7 MiB,
 *        subtree_control empty
 *   a/b/ no dmem files (dmem not enabled in a)
 *   c/   dmem.max max
 *   "d e"/ dmem.max 4 MiB, dmem.current 4 KiB
 */
static void make_tree(struct fake_tree *t)
{
	char p[128];

	snprintf(t->root, sizeof(t->root), "/tmp/gpctl-cg-XXXXXX");
	if (!mkdtemp(t->root))
		abort();
#define F(rel, text) do { snprintf(p, sizeof(p), "%s/%s", t->root, rel); write_file(p, text); } while (0)
#define D(rel) do { snprintf(p, sizeof(p), "%s/%s", t->root, rel); if (mkdir(p, 0755)) abort(); } while (0)
	F("cgroup.controllers", "cpu memory dmem\n");
	F("cgroup.subtree_control", "cpu dmem\n");
	D("a");
	F("a/dmem.max", "drm/0000:03:00.0/vram0 max\ngpupool 1073741824\n");
	F("a/dmem.current", "drm/0000:03:00.0/vram0 0\ngpupool 7340032\n");
	F("a/cgroup.subtree_control", "\n");
	D("a/b");
	D("c");
	F("c/dmem.max", "gpupool max\n");
	F("c/dmem.current", "gpupool 0\n");
	D("d e");
	F("d e/dmem.max", "gpupool 4194304\n");
	F("d e/dmem.current", "gpupool 4096\n");
#undef F
#undef D
}

static void remove_tree(struct fake_tree *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	if (strncmp(t->root, "/tmp/gpctl-cg-", 14) || system(cmd))
		abort();
}

TEST(limit_show_dmem_walks_the_tree)
{
	struct fake_tree t;
	char p[128];
	int code;
	char *out;

	make_tree(&t);
	setenv("GPUPOOL_CGROUP_MOUNT", t.root, 1);
	out = ctl_nodev(DMEM_FIXTURE, "limit show -b", &code);
	EXPECT_EQ(0, code) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "limits: dmem.max of region gpupool (the dmem controller)\n"
			       "       LIMIT         USED   CHUNKS  DENIALS  CGROUP\n"
			       "  1073741824      7340032        -        -  /a\n"
			       "     4194304         4096        -        -  /d e\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "/c\n"));	/* "max": no limit */
	free(out);
	out = ctl_nodev(DMEM_FIXTURE, "limit show --json", &code);
	EXPECT_EQ(0, code);
	EXPECT_TRUE(is_json(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "{\"limits\": \"dmem\", \"cgroups\": [{\"cgroup\": \"/a\", \"limit\": 1073741824, \"bytes\": 7340032, \"chunks\": null, \"denials\": null}")) TH_LOG("%s", out);
	free(out);

	/* No dmem.max anywhere: say where to enable the controller. */
	snprintf(p, sizeof(p), "rm -f '%s'/*/dmem.*", t.root);
	ASSERT_EQ(0, system(p));
	out = ctl_nodev(DMEM_FIXTURE, "limit show", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "(no cgroup has a limit)")) TH_LOG("%s", out);
	snprintf(p, sizeof(p), "echo +dmem > %s/cgroup.subtree_control", t.root);
	EXPECT_NE(NULL, strstr(out, p)) TH_LOG("%s", out);
	free(out);
	unsetenv("GPUPOOL_CGROUP_MOUNT");
	remove_tree(&t);
}

/* stderr of a call, as a string (free it). */
static int saved_stderr = -1;
static FILE *capture;

static void capture_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	saved_stderr = dup(2);
	if (!capture || saved_stderr < 0 || dup2(fileno(capture), 2) < 0)
		abort();
}

static char *capture_end(void)
{
	char *buf = calloc(1, 1 << 16);
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(capture);
	n = fread(buf, 1, (1 << 16) - 1, capture);
	buf[n] = 0;
	fclose(capture);
	return buf;
}

/* A cgroup of the fake tree, as ctl_cgroup_open would give it. */
static void fake_cgroup(const struct fake_tree *t, const char *rel, struct ctl_cgroup *cg)
{
	memset(cg, 0, sizeof(*cg));
	snprintf(cg->path, sizeof(cg->path), "%s%s%s", t->root, *rel ? "/" : "", rel);
	snprintf(cg->name, sizeof(cg->name), "/%s", rel);
	cg->fd = open(cg->path, O_RDONLY | O_DIRECTORY);
	if (cg->fd < 0)
		abort();
}

TEST(dmem_files)
{
	struct ctl_cgroup cg;
	struct fake_tree t;
	char p[256], *text, *err;
	size_t len;
	uint64_t v;

	make_tree(&t);
	setenv("GPUPOOL_CGROUP_MOUNT", t.root, 1);

	fake_cgroup(&t, "a", &cg);
	EXPECT_EQ(0, ctl_dmem_read(cg.fd, "dmem.max", &v));
	EXPECT_EQ(1ull << 30, v);
	EXPECT_EQ(0, ctl_dmem_read(cg.fd, "dmem.current", &v));
	EXPECT_EQ(7ull << 20, v);
	/* set: the one line, in bytes; clear: "max". */
	EXPECT_EQ(0, ctl_dmem_set(&cg, 3ull << 30));
	snprintf(p, sizeof(p), "%s/a/dmem.max", t.root);
	text = slurp(p, &len);
	EXPECT_STREQ("gpupool 3221225472\n", text);
	free(text);
	EXPECT_EQ(0, ctl_dmem_read(cg.fd, "dmem.max", &v));
	EXPECT_EQ(3ull << 30, v);
	EXPECT_EQ(0, ctl_dmem_set(&cg, GPCTL_NO_LIMIT));
	text = slurp(p, &len);
	EXPECT_STREQ("gpupool max\n", text);
	free(text);
	EXPECT_EQ(0, ctl_dmem_read(cg.fd, "dmem.max", &v));
	EXPECT_EQ(GPCTL_NO_LIMIT, v);
	/* Not dmem's format, or no line for the region. */
	write_file(p, "gpupool 12x\n");
	EXPECT_EQ(-EINVAL, ctl_dmem_read(cg.fd, "dmem.max", &v));
	write_file(p, "gpupool -1\n");
	EXPECT_EQ(-EINVAL, ctl_dmem_read(cg.fd, "dmem.max", &v));
	write_file(p, "gpupoolx 5\ndrm/x 7\n");
	EXPECT_EQ(-ESRCH, ctl_dmem_read(cg.fd, "dmem.max", &v));
	close(cg.fd);

	/* a/b: dmem is not enabled in a: enable it at the root's level (done)
	 * and in a, in that order.
	 */
	fake_cgroup(&t, "a/b", &cg);
	EXPECT_EQ(-ENOENT, ctl_dmem_read(cg.fd, "dmem.max", &v));
	EXPECT_EQ(-ENOENT, ctl_dmem_set(&cg, 1 << 20));
	capture_begin();
	ctl_dmem_explain(&cg, "dmem.max", ENOENT);
	err = capture_end();
	snprintf(p, sizeof(p), "echo +dmem > %s/a/cgroup.subtree_control\n", t.root);
	EXPECT_NE(NULL, strstr(err, p)) TH_LOG("%s", err);
	snprintf(p, sizeof(p), "echo +dmem > %s/cgroup.subtree_control\n", t.root);
	EXPECT_EQ(NULL, strstr(err, p)) TH_LOG("%s", err);	/* it has dmem */
	free(err);
	/* Neither the root nor a: both, from the top down. */
	snprintf(p, sizeof(p), "%s/cgroup.subtree_control", t.root);
	write_file(p, "cpu\n");
	capture_begin();
	ctl_dmem_explain(&cg, "dmem.max", ENOENT);
	err = capture_end();
	snprintf(p, sizeof(p), "    echo +dmem > %s/cgroup.subtree_control\n"
		 "    echo +dmem > %s/a/cgroup.subtree_control\n", t.root, t.root);
	EXPECT_NE(NULL, strstr(err, p)) TH_LOG("%s", err);
	free(err);
	close(cg.fd);

	/* The root has no dmem.max of its own. */
	fake_cgroup(&t, "", &cg);
	capture_begin();
	ctl_dmem_explain(&cg, "dmem.max", ENOENT);
	err = capture_end();
	EXPECT_NE(NULL, strstr(err, "The root cgroup has no dmem.max")) TH_LOG("%s", err);
	free(err);
	close(cg.fd);

	/* A kernel without the controller. */
	snprintf(p, sizeof(p), "%s/cgroup.controllers", t.root);
	write_file(p, "cpu memory\n");
	fake_cgroup(&t, "a/b", &cg);
	capture_begin();
	ctl_dmem_explain(&cg, "dmem.max", ENOENT);
	err = capture_end();
	EXPECT_NE(NULL, strstr(err, "this kernel has no dmem controller")) TH_LOG("%s", err);
	free(err);
	/* No line for the region. */
	capture_begin();
	ctl_dmem_explain(&cg, "dmem.max", ESRCH);
	err = capture_end();
	EXPECT_NE(NULL, strstr(err, "has no line for region gpupool")) TH_LOG("%s", err);
	free(err);
	close(cg.fd);

	unsetenv("GPUPOOL_CGROUP_MOUNT");
	remove_tree(&t);
}

/* The cgroup2 mount from mountinfo, and names under it. */
TEST(cgroup_mount_and_names)
{
	char mnt[PATH_MAX], want[PATH_MAX], name[PATH_MAX];

	unsetenv("GPUPOOL_CGROUP_MOUNT");
	if (find_mount("cgroup2", want, sizeof(want))) {
		EXPECT_TRUE(ctl_cgroup_mount(mnt, sizeof(mnt)));
		EXPECT_STREQ(want, mnt);
	} else {
		EXPECT_FALSE(ctl_cgroup_mount(mnt, sizeof(mnt)));
		EXPECT_STREQ("/sys/fs/cgroup", mnt);
	}
	setenv("GPUPOOL_CGROUP_MOUNT", "/x//y/", 1);
	EXPECT_TRUE(ctl_cgroup_mount(mnt, sizeof(mnt)));
	EXPECT_STREQ("/x/y", mnt);
	unsetenv("GPUPOOL_CGROUP_MOUNT");
	ctl_cgroup_name("/x/y", "/x/y", name, sizeof(name));
	EXPECT_STREQ("/", name);
	ctl_cgroup_name("/x/y/a/b", "/x/y", name, sizeof(name));
	EXPECT_STREQ("/a/b", name);
	ctl_cgroup_name("/x/yz", "/x/y", name, sizeof(name));
	EXPECT_STREQ("/x/yz", name);
	ctl_cgroup_name("/a", "/", name, sizeof(name));
	EXPECT_STREQ("/a", name);
}

TEST_HARNESS_MAIN
