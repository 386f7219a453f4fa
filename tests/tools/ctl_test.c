// SPDX-License-Identifier: MIT
/*
 * ctl_test - the /proc/gpupool parser and gpupoolctl's output for a known
 * pool state (fixture-2node.txt: two nodes, two holders, maps; a module
 * before ABI 1.1, without cgroup lines), on the host.  The cgroup lines
 * and the limit command: ctl_cgroup_test.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "ctl_lib.h"

TEST(parses_fixture)
{
	struct gpctl_pool p;
	size_t len;
	char *text = slurp(FIXTURE_FILE, &len);

	ASSERT_NE(NULL, text);
	ASSERT_EQ(0, gpctl_parse_proc(text, len, &p));
	EXPECT_EQ(256ull << 20, gpctl_value(&p, "PoolTotal"));
	EXPECT_EQ(8ull << 20, gpctl_value(&p, "InUse"));
	EXPECT_EQ(500000, gpctl_value(&p, "Fragmentation"));
	EXPECT_EQ('p', gpctl_field(&p, "Fragmentation")->unit);
	EXPECT_EQ(331, gpctl_value(&p, "ReserveTime"));
	EXPECT_EQ(128ull << 20, gpctl_value(&p, "Node1PoolTotal"));
	EXPECT_STREQ("1.0", gpctl_field(&p, "AbiVersion")->text);
	ASSERT_EQ(2, p.nr_holders);
	EXPECT_EQ(4242, p.holders[0].pid);
	EXPECT_EQ(1ull << 20, p.holders[0].bytes);
	EXPECT_STREQ("data loader \"x\"", p.holders[1].comm);
	EXPECT_EQ(2, p.holders[1].chunks);
	ASSERT_EQ(2, p.nr_maps);
	EXPECT_EQ(1, p.maps[1].node);
	EXPECT_EQ(64, strlen(p.maps[1].cells));
	EXPECT_EQ(NULL, gpctl_field(&p, "Node0Bin0"));
	/* A module before ABI 1.1: no cgroup lines, no CgroupLimits. */
	EXPECT_EQ(0, p.nr_cgroups);
	EXPECT_EQ(NULL, p.cgroups);
	EXPECT_EQ(NULL, gpctl_field(&p, "CgroupLimits"));
	gpctl_pool_free(&p);
	free(text);
}

/* ABI 1.2: a holder's idle kB before its name; where the line is, no matter. */
TEST(holders_idle_from_abi_1_2)
{
	static const char text[] =
		"Holder: 7 163840 2 163840 train 1\n"
		"AbiVersion:            1.2\n"
		"Holder: 0 4096 1 0 12 monkeys\n";
	struct gpctl_pool p;

	ASSERT_EQ(0, gpctl_parse_proc(text, strlen(text), &p));
	EXPECT_EQ(1, p.abi_major);
	EXPECT_EQ(2, p.abi_minor);
	ASSERT_EQ(2, p.nr_holders);
	EXPECT_EQ(160ull << 20, p.holders[0].idle);
	EXPECT_STREQ("train 1", p.holders[0].comm);
	EXPECT_EQ(0, p.holders[1].idle);
	EXPECT_STREQ("12 monkeys", p.holders[1].comm);
	gpctl_pool_free(&p);
}

TEST(rejects_what_is_not_proc_gpupool)
{
	static const char *const bad[] = {
		"",
		"PoolTotal: 4 kB\n",				/* no AbiVersion */
		"AbiVersion: 1.0\nPoolTotal: 99999999999999999999 kB\n",
		"AbiVersion: 1.0\nPoolTotal: 18014398509481984 kB\n",	/* << 10 overflows */
		"AbiVersion: 1.0\nPool Total: 4 kB\n",
		"AbiVersion: 1.0\nPoolTotal: 4 MB\n",
		"AbiVersion: 1.0\nHolder: 12 x 1 cmd\n",
		"AbiVersion: 1.0\nHolder: 12 4\n",
		"AbiVersion: 1.2\nHolder: 12 4 1 cmd\n",	/* no idle kB */
		"AbiVersion: 1.2\nHolder: 12 4 1 8 cmd\n",	/* idle > kB */
		"Holder: 12 4 1 cmd\nAbiVersion: 1.2\n",
		"AbiVersion: 1.x\n",
		"AbiVersion: 1.0\n: 5\n",
		"AbiVersion: 1.0\nNodexMap: ##\n",
		"AbiVersion: 1.0\nno colon here\n",
	};
	struct gpctl_pool p;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, gpctl_parse_proc(bad[i], strlen(bad[i]), &p)) {
			TH_LOG("accepted: %s", bad[i]);
		}
		EXPECT_EQ(NULL, p.fields);
	}
}

/* Every prefix of a real file, cut anywhere, in a buffer of exactly that
 * length (ASan catches a read past it): parses or is refused cleanly.
 */
TEST(any_truncation_is_safe)
{
	struct gpctl_pool p;
	size_t len, cut;
	char *text = slurp(FIXTURE_FILE, &len);
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

TEST(stat_bytes)
{
	int code = -1;
	char *out = ctl(FIXTURE_FILE, "stat -b", &code);

	EXPECT_EQ(0, code);
	/* total, used, free, zeroing, quarantined, largest, peak, frag, chunks */
	EXPECT_NE(NULL, strstr(out, "Pool:       268435456      8388608    260046848            0            0    130023424     12582912   50.0%        3")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "Node1:      134217728      4194304    130023424")) {
		TH_LOG("%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "allocs 10, frees 7, failed 1, limit denials 0; holders 2; reserved in 331 ms"));
	/* A module before ABI 1.1: no cgroup section. */
	EXPECT_EQ(NULL, strstr(out, "cgroups")) TH_LOG("%s", out);
	free(out);
}

TEST(stat_human_and_units)
{
	int code = -1;
	char *out = ctl(FIXTURE_FILE, "stat", &code);

	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "256.0Mi")) TH_LOG("%s", out);
	free(out);
	out = ctl(FIXTURE_FILE, "stat -m", &code);
	EXPECT_NE(NULL, strstr(out, "Pool:             256            8          248")) TH_LOG("%s", out);
	free(out);
}

TEST(stat_json)
{
	int code = -1;
	char *out = ctl(FIXTURE_FILE, "stat --json", &code);

	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "\"PoolTotal\": 268435456"));
	EXPECT_NE(NULL, strstr(out, "\"AbiVersion\": \"1.0\""));
	EXPECT_NE(NULL, strstr(out, "{\"pid\": 77, \"bytes\": 7340032, \"chunks\": 2, \"idle\": 0, \"comm\": \"data loader \\\"x\\\"\"}")) TH_LOG("%s", out);
	free(out);
}

TEST(top_sorted_by_bytes)
{
	int code = -1;
	char *out = ctl(FIXTURE_FILE, "top -n 1 -b", &code), *a, *b;

	EXPECT_EQ(0, code);
	a = strstr(out, "      77      7340032        2            0   2.7%  data loader \"x\"");
	b = strstr(out, "    4242      1048576        1            0   0.4%  python3");
	EXPECT_NE(NULL, a) TH_LOG("%s", out);
	EXPECT_NE(NULL, b) TH_LOG("%s", out);
	EXPECT_TRUE(a && b && a < b);
	EXPECT_EQ(NULL, strchr(out, '\033'));	/* not a tty: no escapes */
	free(out);
	out = ctl(FIXTURE_FILE, "top -n 2 -d 0.01 --json", &code);
	EXPECT_EQ(0, code);
	a = strstr(out, "[{\"pid\": 77,");
	EXPECT_NE(NULL, a);
	EXPECT_NE(NULL, a ? strstr(a + 1, "[{\"pid\": 77,") : NULL);
	free(out);
}

TEST(map_and_prometheus)
{
	int code = -1;
	char *out = ctl(FIXTURE_FILE, "map", &code);

	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "node 1: 128.0Mi reserved, 64 cells\n  [#####....")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "legend:"));
	/* No HugeMaps line in the fixture (an older module): 4 KiB. */
	EXPECT_NE(NULL, strstr(out, "\nmappings: 4 KiB entries\n")) TH_LOG("%s", out);
	free(out);
	out = ctl(FIXTURE_FILE, "map --json", &code);
	EXPECT_NE(NULL, strstr(out, "[{\"node\": 0, \"cells\": \"##....")) TH_LOG("%s", out);
	free(out);
	out = ctl(FIXTURE_FILE, "prometheus", &code);
	EXPECT_EQ(0, code);
	/* Per node only: sum() over a metric is the pool's figure. */
	EXPECT_NE(NULL, strstr(out, "# TYPE gpupool_total_bytes gauge\ngpupool_total_bytes{node=\"0\"} 134217728\ngpupool_total_bytes{node=\"1\"} 134217728\n#")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "node=\"all\""));
	EXPECT_NE(NULL, strstr(out, "# TYPE gpupool_allocs_total counter\ngpupool_allocs_total{node=\"0\"} 6\n"));
	/* Pool-wide figures without a per-node breakdown: one unlabelled series. */
	EXPECT_NE(NULL, strstr(out, "# TYPE gpupool_limit_denials_total counter\ngpupool_limit_denials_total 0\n"));
	EXPECT_NE(NULL, strstr(out, "\ngpupool_build_info{version=\"unknown\",abi_version=\"1.0\",tools_version=\"")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "gpupool_holder_bytes{pid=\"77\",comm=\"data loader \\\"x\\\"\"} 7340032\n"));
	free(out);
}

/*
 * A module of ABI 1.2: each holder's idle bytes and the pool's reclaim
 * figures, in top, stat (text and JSON) and prometheus.
 */
static const char reclaim_text[] =
	"AbiVersion:            1.2\n"
	"PoolTotal:         262144 kB\n"
	"PoolFree:           98304 kB\n"
	"InUse:             163840 kB\n"
	"ChunksInUse:            1\n"
	"Nodes:                  1\n"
	"Idle:              163840 kB\n"
	"ChunksIdle:             1\n"
	"ReclaimAsks:            3\n"
	"ReclaimAsked:      491520 kB\n"
	"ReclaimGiven:      327680 kB\n"
	"ReclaimBusy:            0 kB\n"
	"ReclaimTimeouts:        1\n"
	"ReclaimServed:          2\n"
	"ReclaimThrottled:       0\n"
	"ReclaimWaitTime:     1250 ms\n"
	"Holder: 4242 163840 1 163840 trainer\n"
	"Holder: 77 0 0 0 loader\n";

TEST(idle_and_reclaim_figures)
{
	char path[] = "/tmp/gpctl-rc-XXXXXX", *out;
	int code = -1, fd = mkstemp(path);

	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)strlen(reclaim_text),
		  write(fd, reclaim_text, strlen(reclaim_text)));
	close(fd);
	out = ctl(path, "top -n 1", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "     PID        BYTES   CHUNKS         IDLE  %POOL  COMMAND\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "    4242      160.0Mi        1      160.0Mi  62.5%  trainer\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "idle 160.0Mi in 1 chunks; reclaim: 3 asks, 480.0Mi asked, 320.0Mi given back, 1 timeouts, 0 throttled\n")) TH_LOG("%s", out);
	free(out);
	out = ctl(path, "stat --json", &code);
	EXPECT_EQ(0, code);
	EXPECT_TRUE(is_json(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"chunks\": 1, \"idle\": 167772160, \"comm\": \"trainer\"")) TH_LOG("%s", out);
	free(out);
	out = ctl(path, "prometheus", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "\ngpupool_idle_bytes 167772160\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\ngpupool_reclaim_given_bytes_total 335544320\n"));
	EXPECT_NE(NULL, strstr(out, "\ngpupool_reclaim_wait_seconds_total 1.25\n"));
	EXPECT_NE(NULL, strstr(out, "\ngpupool_holder_idle_bytes{pid=\"4242\",comm=\"trainer\"} 167772160\n"));
	free(out);
	unlink(path);
}

/*
 * Holder names are any process's to choose.  The fixture plus five holders
 * as the module writes them (newline and backslash as \ooo, anything else
 * raw): none of it reaches a terminal raw, the JSON stays valid, the
 * Prometheus text stays parseable with one series per label set.
 */
static const char *const odd_holders =
	"Holder: 0 1024 1 a\033[2Jb\n"
	"Holder: 0 2048 1 x\\012Holder: 7 1 1\n"
	"Holder: 0 512 1 x\\012Holder: 7 1 1\n"
	"Holder: 5 256 1 caf\303\n"
	"Holder: 6 256 1 tab\there\\134\n";

static void write_odd_fixture(char *path)
{
	size_t len, at;
	char *text = slurp(FIXTURE_FILE, &len), *after;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!text || !f)
		abort();
	/* After the fixture's last holder line. */
	after = strstr(text, "Holder: 77");
	at = after ? (size_t)(strchr(after, '\n') + 1 - text) : len;
	fwrite(text, 1, at, f);
	fputs(odd_holders, f);
	fwrite(text + at, 1, len - at, f);
	fclose(f);
	free(text);
}

TEST(hostile_holder_names)
{
	char path[] = "/tmp/gpctl-odd-XXXXXX", *out, *text;
	struct gpctl_pool p;
	int code = -1;
	size_t i, len;

	write_odd_fixture(path);
	text = slurp(path, &len);
	ASSERT_EQ(0, gpctl_parse_proc(text, len, &p));
	ASSERT_EQ(7, p.nr_holders);
	EXPECT_STREQ("x\nHolder: 7 1 1", p.holders[3].comm);
	EXPECT_STREQ("tab\there\\", p.holders[6].comm);
	gpctl_pool_free(&p);
	free(text);

	out = ctl(path, "top -n 1 -b", &code);
	EXPECT_EQ(0, code);
	EXPECT_EQ(NULL, strchr(out, '\033')) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strchr(out, '\t'));
	EXPECT_NE(NULL, strstr(out, "  a\\033[2Jb\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "  x\\012Holder: 7 1 1\n"));
	EXPECT_NE(NULL, strstr(out, "  caf\\303\n"));
	EXPECT_NE(NULL, strstr(out, "  tab\\011here\\134\n"));
	free(out);

	out = ctl(path, "stat --json", &code);
	EXPECT_EQ(0, code);
	EXPECT_TRUE(is_json(out)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"comm\": \"x\\u000aHolder: 7 1 1\"")) TH_LOG("%s", out);
	free(out);

	out = ctl(path, "prometheus", &code);
	EXPECT_EQ(0, code);
	for (i = 0; out[i]; i++)
		if ((unsigned char)out[i] > 0x7e || (out[i] < 0x20 && out[i] != '\n'))
			break;
	EXPECT_EQ(strlen(out), i) TH_LOG("byte %#x at %zu", (unsigned char)out[i], i);
	/* The two exited "x\nHolder..." holders: one series, their sum. */
	EXPECT_NE(NULL, strstr(out, "gpupool_holder_bytes{pid=\"0\",comm=\"x\\nHolder: 7 1 1\"} 2621440\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(strstr(out, "comm=\"x\\nHolder") + 1, "comm=\"x\\nHolder"));
	EXPECT_NE(NULL, strstr(out, "comm=\"tab\\\\011here\\\\\"} 262144\n")) TH_LOG("%s", out);
	free(out);
	unlink(path);
}

/* A read error is not "a format this gpupoolctl does not know". */
TEST(read_error_is_not_a_format_error)
{
	int code = -1;
	char *out = ctl("/proc/self/mem", "stat", &code);

	EXPECT_EQ(1, code) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "reading /proc/self/mem")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "upgrade"));
	free(out);
}

TEST(errors_say_what_to_do)
{
	int code = -1;
	char *out = ctl("/nonexistent/gpupool", "stat", &code), path[] = "/tmp/gpctl-XXXXXX";
	FILE *f;
	int fd;

	EXPECT_EQ(3, code);
	EXPECT_NE(NULL, strstr(out, "The gpupool module is not loaded")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "modprobe gpupool"));
	free(out);

	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	f = fdopen(fd, "w");
	fputs("AbiVersion: 1.0\nSomethingNew: 5 furlongs\n", f);
	fclose(f);
	out = ctl(path, "stat", &code);
	EXPECT_EQ(5, code);
	EXPECT_NE(NULL, strstr(out, "upgrade the gpupool tools")) TH_LOG("%s", out);
	free(out);
	unlink(path);

	out = ctl(FIXTURE_FILE, "stat --bogus", &code);
	EXPECT_EQ(2, code);
	free(out);
	out = ctl(FIXTURE_FILE, "top -n x", &code);
	EXPECT_EQ(2, code);
	EXPECT_NE(NULL, strstr(out, "-n wants a positive number"));
	free(out);
}

/*
 * --textfile DIR: DIR/gpupool.prom holds exactly what stdout would, world-
 * readable, with no temporary file left beside it; a directory that cannot
 * be written is an error that leaves nothing behind either.  The module's
 * version comes from /sys/module/gpupool/version (here a stand-in file).
 */
TEST(prometheus_textfile)
{
	char dir[] = "/tmp/gpctl-tf-XXXXXX", args[256], path[300], ver[300];
	char *out, *file;
	struct stat st;
	size_t len;
	int code = -1, n = 0;
	struct dirent *e;
	DIR *d;
	FILE *f;

	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(ver, sizeof(ver), "%s/version", dir);
	f = fopen(ver, "w");
	ASSERT_NE(NULL, f);
	fputs("9.8.7\n", f);
	fclose(f);
	setenv("GPUPOOL_MODULE_VERSION_PATH", ver, 1);
	out = ctl(FIXTURE_FILE, "prometheus", &code);
	EXPECT_EQ(0, code);
	EXPECT_NE(NULL, strstr(out, "gpupool_build_info{version=\"9.8.7\",")) TH_LOG("%s", out);
	snprintf(args, sizeof(args), "prometheus --textfile %s", dir);
	free(ctl(FIXTURE_FILE, args, &code));
	EXPECT_EQ(0, code);
	unsetenv("GPUPOOL_MODULE_VERSION_PATH");
	snprintf(path, sizeof(path), "%s/gpupool.prom", dir);
	file = slurp(path, &len);
	ASSERT_NE(NULL, file);
	EXPECT_STREQ(out, file);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0644, st.st_mode & 0777);
	d = opendir(dir);
	ASSERT_NE(NULL, d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	EXPECT_EQ(2, n);	/* version and gpupool.prom */
	free(out);
	free(file);

	snprintf(args, sizeof(args), "prometheus --textfile %s/none", dir);
	out = ctl(FIXTURE_FILE, args, &code);
	EXPECT_EQ(1, code);
	EXPECT_NE(NULL, strstr(out, "/none")) TH_LOG("%s", out);
	free(out);
	unlink(path);
	unlink(ver);
	EXPECT_EQ(0, rmdir(dir));
}

/*
 * gpupoolctl map says how chunks are mapped from HugeMaps and PageSize
 * (a 64 KiB-page arm64 module: 2 MiB contiguous entries, else 64 KiB
 * ones; a 4 KiB one: PMD entries), whatever page size it runs on.
 */
TEST(map_names_the_page_size)
{
	static const char *const lines[][2] = {
		{ "HugeMaps: 1\nPageSize: 64 kB\nHugeMapSize: 2048 kB\n",
		  "\nmappings: a chunk's whole 2 MiB blocks in 2 MiB contiguous entries (arm64's contiguous bit, not in smaps), the rest in 64 KiB\n" },
		{ "HugeMaps: 0\nPageSize: 64 kB\nHugeMapSize: 64 kB\n",
		  "\nmappings: 64 KiB entries\n" },
		{ "HugeMaps: 1\nPageSize: 4 kB\nHugeMapSize: 2048 kB\n",
		  "\nmappings: a chunk's whole 2 MiB blocks in 2 MiB entries (FilePmdMapped in /proc/PID/smaps), the rest in 4 KiB\n" },
	};
	size_t i, len;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char path[] = "/tmp/gpctl-page-XXXXXX", *out;
		char *text = slurp(FIXTURE_FILE, &len);
		int fd = mkstemp(path), code = -1;

		ASSERT_NE(NULL, text);
		ASSERT_LE(0, fd);
		ASSERT_EQ((ssize_t)len, write(fd, text, len));
		ASSERT_EQ((ssize_t)strlen(lines[i][0]),
			  write(fd, lines[i][0], strlen(lines[i][0])));
		close(fd);
		free(text);
		out = ctl(path, "map", &code);
		EXPECT_EQ(0, code);
		EXPECT_NE(NULL, strstr(out, lines[i][1])) TH_LOG("%s", out);
		free(out);
		unlink(path);
	}
}

/* What promtool, the Prometheus project's own checker, says of the output. */
TEST(promtool_accepts_metrics)
{
	char cmd[512];
	int st;

	if (system("command -v promtool >/dev/null 2>&1"))
		SKIP(return, "no promtool (make deps installs Debian's prometheus)");
	snprintf(cmd, sizeof(cmd),
		 "GPUPOOL_PROC_PATH='%s' %s prometheus | promtool check metrics",
		 FIXTURE_FILE, CTL_BIN);
	st = system(cmd);
	EXPECT_EQ(0, st);
}

TEST_HARNESS_MAIN
