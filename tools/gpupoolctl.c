// SPDX-License-Identifier: MIT
/*
 * gpupoolctl - look at the gpupool pinned-memory pool, in the spirit of
 * `free` and `nvidia-smi`.  stat, top, map and prometheus (ctl_prometheus.c)
 * read /proc/gpupool (world-readable); `info` asks /dev/gpupool
 * (GPUPOOL_IOC_VERSION); `limit` (ctl_limit.c) sets and shows per-cgroup
 * limits; `cdi` (ctl_cdi.c) writes the CDI spec for container runtimes.
 *
 *   gpupoolctl info         what the loaded module speaks and serves
 *   gpupoolctl stat         the pool at a glance, per NUMA node and cgroup
 *   gpupoolctl top          holders and cgroups sorted by bytes, refreshed
 *   gpupoolctl map          occupancy picture per node
 *   gpupoolctl prometheus   Prometheus text format (--textfile DIR: for
 *                           node_exporter's textfile collector)
 *   gpupoolctl limit        per-cgroup limits: set, clear, show
 *   gpupoolctl cdi          the CDI spec (gpupool.io/pool=default)
 *   gpupoolctl run -- CMD   CMD with its CUDA pinned memory from the pool
 *                           (ctl_run.c)
 *
 * GPUPOOL_PROC_PATH and GPUPOOL_DEV_PATH override the two paths (tests).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* The per-pool figures `stat` shows, in the order it shows them. */
static const char *const stat_keys[] = {
	"PoolTotal", "InUse", "PoolFree", "Zeroing", "Quarantined",
	"LargestFree", "PeakInUse",
};
#define NR_STAT_KEYS (sizeof(stat_keys) / sizeof(stat_keys[0]))

/*
 * All fields as one JSON object: numbers in bytes / ms / ppm as named,
 * AbiVersion and words (CgroupLimits) as strings.
 */
static void json_fields(const struct gpctl_pool *p)
{
	size_t i;

	putchar('{');
	for (i = 0; i < p->nr_fields; i++) {
		const struct gpctl_field *f = &p->fields[i];

		printf("%s", i ? ", " : "");
		json_str(f->key);
		if (!strcmp(f->key, "AbiVersion") || f->unit == 'w') {
			printf(": ");
			json_str(f->text);
		} else {
			printf(": %llu", (unsigned long long)f->value);
		}
	}
	putchar('}');
}

static void json_holders(const struct gpctl_pool *p)
{
	size_t i;

	putchar('[');
	for (i = 0; i < p->nr_holders; i++) {
		const struct gpctl_holder *h = &p->holders[i];

		printf("%s{\"pid\": %lld, \"bytes\": %llu, \"chunks\": %llu, \"idle\": %llu, \"comm\": ",
		       i ? ", " : "", (long long)h->pid,
		       (unsigned long long)h->bytes,
		       (unsigned long long)h->chunks,
		       (unsigned long long)h->idle);
		json_str(h->comm);
		putchar('}');
	}
	putchar(']');
}

/* Cgroups as a JSON array: limit null when none. */
static void json_cgroups(const struct gpctl_pool *p)
{
	size_t i;

	putchar('[');
	for (i = 0; i < p->nr_cgroups; i++) {
		const struct gpctl_cgroup *c = &p->cgroups[i];

		printf("%s{\"cgroup\": ", i ? ", " : "");
		json_str(c->path);
		printf(", \"bytes\": %llu, \"chunks\": %llu, \"limit\": ",
		       (unsigned long long)c->bytes, (unsigned long long)c->chunks);
		if (c->limit == GPCTL_NO_LIMIT)
			printf("null");
		else
			printf("%llu", (unsigned long long)c->limit);
		printf(", \"denials\": %llu}", (unsigned long long)c->denials);
	}
	putchar(']');
}

/*
 * The cgroup section of stat and top: one row per Cgroup line (the module
 * writes them by path; top sorts them by bytes first).  Nothing from a
 * module without per-cgroup figures (no CgroupLimits line).
 */
static void text_cgroups(struct gpctl_pool *p, char unit, bool sort_bytes)
{
	const struct gpctl_field *src = gpctl_field(p, "CgroupLimits");
	bool dmem = src && !strcmp(src->text, "dmem");
	char b1[32], b2[32];
	size_t i;

	if (!src && !p->nr_cgroups)
		return;
	if (sort_bytes && p->nr_cgroups)
		qsort(p->cgroups, p->nr_cgroups, sizeof(*p->cgroups),
		      cgroup_by_bytes);
	printf("\ncgroups (limits: %s; %llu allocations refused by a cgroup limit):\n",
	       dmem ? "dmem.max, see gpupoolctl limit show" : "the module's own",
	       (unsigned long long)gpctl_value(p, "CgroupDenials"));
	if (!p->nr_cgroups) {
		printf("  (no cgroup has chunks or a limit)\n");
		return;
	}
	printf("%12s %8s %12s %8s  %s\n", "USED", "CHUNKS", "LIMIT", "DENIALS",
	       "CGROUP");
	for (i = 0; i < p->nr_cgroups; i++) {
		const struct gpctl_cgroup *c = &p->cgroups[i];

		/* With dmem, the limits are in dmem.max, and dmem does not
		 * say whose limit refused (only the total counts).
		 */
		printf("%12s %8llu %12s ", fmt_size(b1, sizeof(b1), c->bytes, unit),
		       (unsigned long long)c->chunks,
		       dmem ? "dmem.max" : c->limit == GPCTL_NO_LIMIT ? "-" :
		       fmt_size(b2, sizeof(b2), c->limit, unit));
		if (dmem)
			printf("%8s  ", "-");
		else
			printf("%8llu  ", (unsigned long long)c->denials);
		text_name(c->path);
		putchar('\n');
	}
}

/*
 * Idle memory and the asks for it, one line (a module before ABI 1.2 has
 * no such figures: nothing).
 */
static void text_reclaim(const struct gpctl_pool *p, char unit)
{
	char b1[32], b2[32], b3[32];

	if (!gpctl_field(p, "ReclaimAsks"))
		return;
	printf("idle %s in %llu chunks; reclaim: %llu asks, %s asked, %s given back, %llu timeouts, %llu throttled\n",
	       fmt_size(b1, sizeof(b1), gpctl_value(p, "Idle"), unit),
	       (unsigned long long)gpctl_value(p, "ChunksIdle"),
	       (unsigned long long)gpctl_value(p, "ReclaimAsks"),
	       fmt_size(b2, sizeof(b2), gpctl_value(p, "ReclaimAsked"), unit),
	       fmt_size(b3, sizeof(b3), gpctl_value(p, "ReclaimGiven"), unit),
	       (unsigned long long)gpctl_value(p, "ReclaimTimeouts"),
	       (unsigned long long)gpctl_value(p, "ReclaimThrottled"));
}

/* stat ---------------------------------------------------------------------- */

static void stat_row(const struct gpctl_pool *p, const char *name,
		     const char *prefix, char unit)
{
	char key[GPCTL_KEY_MAX], b[32];
	size_t i;

	printf("%-8s", name);
	for (i = 0; i < NR_STAT_KEYS; i++) {
		snprintf(key, sizeof(key), "%s%s", prefix, stat_keys[i]);
		printf(" %12s", fmt_size(b, sizeof(b), gpctl_value(p, key), unit));
	}
	snprintf(key, sizeof(key), "%sFragmentation", prefix);
	printf(" %6.1f%%", gpctl_value(p, key) / 1e4);
	snprintf(key, sizeof(key), "%sChunksInUse", prefix);
	printf(" %8llu\n", (unsigned long long)gpctl_value(p, key));
}

static int cmd_stat(const struct opts *o)
{
	struct gpctl_pool p;
	char prefix[24], name[24];
	unsigned long n, nodes;
	size_t i;
	int ret = read_pool(&p);

	if (ret)
		return ret;
	nodes = gpctl_value(&p, "Nodes");
	if (o->json) {
		printf("{\"fields\": ");
		json_fields(&p);
		printf(", \"holders\": ");
		json_holders(&p);
		printf(", \"cgroups\": ");
		json_cgroups(&p);
		printf("}\n");
		gpctl_pool_free(&p);
		return EX_OK;
	}
	printf("%-8s %12s %12s %12s %12s %12s %12s %12s %7s %8s\n", "",
	       "total", "used", "free", "zeroing", "quarantined", "largest",
	       "peak", "frag", "chunks");
	stat_row(&p, "Pool:", "", o->unit);
	for (n = 0, i = 0; i < p.nr_fields && n < nodes; i++) {
		const char *k = p.fields[i].key;
		char *end;
		long nid;

		if (strncmp(k, "Node", 4) || !strstr(k, "PoolTotal"))
			continue;
		nid = strtol(k + 4, &end, 10);
		if (strcmp(end, "PoolTotal"))
			continue;
		snprintf(prefix, sizeof(prefix), "Node%ld", nid);
		snprintf(name, sizeof(name), "Node%ld:", nid);
		stat_row(&p, name, prefix, o->unit);
		n++;
	}
	printf("allocs %llu, frees %llu, failed %llu, limit denials %llu; holders %zu; reserved in %llu ms\n",
	       (unsigned long long)gpctl_value(&p, "Allocs"),
	       (unsigned long long)gpctl_value(&p, "Frees"),
	       (unsigned long long)gpctl_value(&p, "FailedAllocs"),
	       (unsigned long long)gpctl_value(&p, "LimitDenials"),
	       p.nr_holders,
	       (unsigned long long)gpctl_value(&p, "ReserveTime"));
	text_reclaim(&p, o->unit);
	text_cgroups(&p, o->unit, false);
	gpctl_pool_free(&p);
	return EX_OK;
}

/* top ----------------------------------------------------------------------- */

static int by_bytes(const void *a, const void *b)
{
	const struct gpctl_holder *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static struct termios saved_tty;
static bool tty_raw;
static volatile sig_atomic_t stop;

static void restore_tty(void)
{
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_raw = false;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Wait `delay` seconds; true when the user pressed q (or a signal came). */
static bool wait_for_quit(double delay)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char c;

	if (stop)
		return true;
	if (!tty_raw) {
		struct timespec ts = { .tv_sec = (time_t)delay };

		ts.tv_nsec = (long)((delay - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);	/* a signal cuts it short: fine */
		return stop;
	}
	if (poll(&pfd, 1, (int)(delay * 1000)) > 0 &&
	    read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
		return true;
	return stop;
}

static int top_once(const struct opts *o, bool screen)
{
	struct gpctl_pool p;
	char b1[32], b2[32], b3[32];
	size_t i;
	int ret = read_pool(&p);

	if (ret)
		return ret;
	if (p.nr_holders)	/* holders is NULL when there are none */
		qsort(p.holders, p.nr_holders, sizeof(*p.holders), by_bytes);
	if (o->json) {
		json_holders(&p);
		putchar('\n');
	} else {
		if (screen)
			printf("\033[H\033[2J");
		printf("gpupool: %s in use of %s, %s free, %zu holders%s\n",
		       fmt_size(b1, sizeof(b1), gpctl_value(&p, "InUse"), o->unit),
		       fmt_size(b2, sizeof(b2), gpctl_value(&p, "PoolTotal"), o->unit),
		       fmt_size(b3, sizeof(b3), gpctl_value(&p, "PoolFree"), o->unit),
		       p.nr_holders, screen ? "   (q to quit)" : "");
		text_reclaim(&p, o->unit);
		printf("%8s %12s %8s %12s %6s  %s\n", "PID", "BYTES", "CHUNKS",
		       "IDLE", "%POOL", "COMMAND");
		for (i = 0; i < p.nr_holders; i++) {
			const struct gpctl_holder *h = &p.holders[i];
			uint64_t total = gpctl_value(&p, "PoolTotal");

			printf("%8lld %12s %8llu %12s %5.1f%%  ", (long long)h->pid,
			       fmt_size(b1, sizeof(b1), h->bytes, o->unit),
			       (unsigned long long)h->chunks,
			       fmt_size(b2, sizeof(b2), h->idle, o->unit),
			       total ? 100.0 * (double)h->bytes / (double)total : 0.0);
			text_name(h->comm);
			putchar('\n');
		}
		text_cgroups(&p, o->unit, true);
	}
	fflush(stdout);
	gpctl_pool_free(&p);
	return EX_OK;
}

static int cmd_top(const struct opts *o)
{
	bool screen = !o->json && isatty(STDOUT_FILENO);
	struct sigaction sa;
	long i;
	int ret = EX_OK;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (screen && isatty(STDIN_FILENO) &&
	    !tcgetattr(STDIN_FILENO, &saved_tty)) {
		struct termios raw = saved_tty;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		if (!tcsetattr(STDIN_FILENO, TCSANOW, &raw)) {
			tty_raw = true;
			atexit(restore_tty);
		}
	}
	for (i = 0; !o->iterations || i < o->iterations; i++) {
		if (i && wait_for_quit(o->delay))
			break;
		ret = top_once(o, screen);
		if (ret)
			break;
	}
	restore_tty();
	return ret;
}

/* map ----------------------------------------------------------------------- */

/*
 * How chunks are mapped, from HugeMaps and PageSize (a module without
 * PageSize ran on 4 KiB pages): PMD entries for whole blocks with 4 KiB
 * pages, arm64's contiguous ones with 16 and 64 KiB, else the page's.
 */
static void print_mappings(const struct gpctl_pool *p)
{
	uint64_t page = gpctl_value(p, "PageSize");

	if (!page)
		page = 4096;
	if (!gpctl_value(p, "HugeMaps"))
		printf("mappings: %llu KiB entries\n", (unsigned long long)page >> 10);
	else if (page == 4096)
		printf("mappings: a chunk's whole 2 MiB blocks in 2 MiB entries (FilePmdMapped in /proc/PID/smaps), the rest in 4 KiB\n");
	else
		printf("mappings: a chunk's whole 2 MiB blocks in 2 MiB contiguous entries (arm64's contiguous bit, not in smaps), the rest in %llu KiB\n",
		       (unsigned long long)page >> 10);
}

static int cmd_map(const struct opts *o)
{
	struct gpctl_pool p;
	char key[GPCTL_KEY_MAX], b[32];
	size_t i;
	int ret = read_pool(&p);

	if (ret)
		return ret;
	if (o->json)
		printf("[");
	for (i = 0; i < p.nr_maps; i++) {
		const struct gpctl_map *m = &p.maps[i];
		size_t cells = strlen(m->cells);
		uint64_t total;

		snprintf(key, sizeof(key), "Node%dPoolTotal", m->node);
		total = gpctl_value(&p, key);
		if (o->json) {
			printf("%s{\"node\": %d, \"cells\": ", i ? ", " : "", m->node);
			json_str(m->cells);
			printf("}");
			continue;
		}
		printf("node %d: %s reserved, %zu cells\n", m->node,
		       fmt_size(b, sizeof(b), total, o->unit), cells);
		printf("  [%s]\n", m->cells);
	}
	if (o->json)
		printf("]\n");
	else if (!p.nr_maps)
		printf("(this module shows no occupancy map: upgrade the module)\n");
	else
		printf("legend: # in use  . free  z being zeroed  q quarantined (still pinned)  ' ' room to grow\n");
	if (!o->json)
		print_mappings(&p);
	gpctl_pool_free(&p);
	return EX_OK;
}

/* main ---------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpupoolctl COMMAND [OPTIONS]\n"
		"  info          ABI version and pool geometry of the loaded module\n"
		"  stat          the pool at a glance, per NUMA node and per cgroup\n"
		"  top           holders and cgroups by bytes, refreshed until q or Ctrl-C\n"
		"  map           occupancy picture per node\n"
		"  prometheus    metrics in the Prometheus text format\n"
		"  limit set CGROUP SIZE   limit what CGROUP (and its descendants) may hold\n"
		"  limit clear CGROUP      remove CGROUP's limit\n"
		"  limit show [CGROUP]     CGROUP's limit and use, or every limited cgroup\n"
		"                CGROUP: a path under the cgroup2 mount (/a/b or a/b), a\n"
		"                path inside that mount, or fd:N (an open directory)\n"
		"                SIZE: bytes, or with a K, M, G or T suffix (1024-based)\n"
		"  cdi           the CDI spec of /dev/gpupool for container runtimes\n"
		"                (device gpupool.io/pool=default)\n"
		"  run [--mode fallback|strict] [--stats FILE] [--debug] [--backend B]\n"
		"      [--library PATH] [--] COMMAND [ARGS...]\n"
		"                COMMAND with the pinned memory it asks of CUDA\n"
		"                served by the pool (exit status: COMMAND's)\n"
		"options:\n"
		"  --json        JSON instead of text (info, stat, top, map, limit show)\n"
		"  -b -k -m -g   sizes in bytes, KiB, MiB, GiB (default: human-readable)\n"
		"  -n N          top: N refreshes, then exit (default: until q)\n"
		"  -d SECONDS    top: delay between refreshes (default 2)\n"
		"  --textfile DIR  prometheus: write DIR/gpupool.prom atomically\n"
		"                (node_exporter's textfile collector)\n"
		"  --max-cgroups N  prometheus: series for at most N cgroups, the rest\n"
		"                summed as cgroup=\"other\" (default 100)\n"
		"  --output FILE cdi: write FILE atomically (/etc/cdi/gpupool.json)\n"
		"  --cdi-version V  cdi: the spec's cdiVersion (default 0.5.0, what\n"
		"                podman 4.3 reads; 0.7.0+ adds the group to the process)\n"
		"exit status: 0 ok, 1 error, 2 usage, 3 module not loaded,\n"
		"             4 no access (to /dev/gpupool, or to change a limit),\n"
		"             5 ABI mismatch (or a module too old for the command)\n");
}

/*
 * The commands: each a name, the function that runs it and how many
 * operands (words after the name: o->args) it takes at most (INT_MAX:
 * any number).  A new command is one line here, its function declared
 * in ctl.h.
 */
struct command {
	const char *name;
	int (*run)(const struct opts *o);
	int max_args;
};

static const struct command commands[] = {
	{ "info", cmd_info, 0 },
	{ "stat", cmd_stat, 0 },
	{ "top", cmd_top, 0 },
	{ "map", cmd_map, 0 },
	{ "prometheus", cmd_prometheus, 0 },
	{ "limit", cmd_limit, 3 },	/* set|clear|show CGROUP [SIZE] */
	{ "cdi", cmd_cdi, 0 },
};

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* The default of --max-cgroups: Prometheus series per cgroup metric. */
#define DEFAULT_MAX_CGROUPS	100

/* What parse_option returns to go on with the next argument. */
#define NEXT_ARG	(-1)

/*
 * The option argv[*i] (and its value, argv[*i + 1], which *i then
 * passes) into o: NEXT_ARG, or the exit code to end with (after -h, or a
 * usage error said).
 */
static int parse_option(struct opts *o, int argc, char **argv, int *i)
{
	char *a = argv[*i], *end;
	bool has_value = *i + 1 < argc;

	if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		usage(stdout);
		return EX_OK;
	} else if (!strcmp(a, "--json")) {
		o->json = true;
	} else if (!strcmp(a, "--textfile") && has_value) {
		o->textfile = argv[++*i];
	} else if (!strcmp(a, "--output") && has_value) {
		o->output = argv[++*i];
	} else if (!strcmp(a, "--cdi-version") && has_value) {
		o->cdi_version = argv[++*i];
	} else if (!strcmp(a, "--max-cgroups") && has_value) {
		const char *v = argv[++*i];
		long n;

		errno = 0;
		n = strtol(v, &end, 10);
		if (*end || end == v || errno || n < 0 || n > 1000000) {
			fprintf(stderr, "gpupoolctl: --max-cgroups wants a number from 0 to 1000000, not '%s'\n",
				v);
			return EX_USAGE;
		}
		o->max_cgroups = n;
	} else if (!strcmp(a, "-b") || !strcmp(a, "-k") ||
		   !strcmp(a, "-m") || !strcmp(a, "-g")) {
		o->unit = a[1];
	} else if ((!strcmp(a, "-n") || !strcmp(a, "-d")) && has_value) {
		const char *v = argv[++*i];
		double n = strtod(v, &end);

		if (*end || end == v || n <= 0 || n > 1e6) {
			fprintf(stderr, "gpupoolctl: %s wants a positive number, not '%s'\n",
				a, v);
			return EX_USAGE;
		}
		if (a[1] == 'n')
			o->iterations = (long)n;
		else
			o->delay = n;
	} else {
		fprintf(stderr, "gpupoolctl: unexpected argument '%s'\n", a);
		usage(stderr);
		return EX_USAGE;
	}
	return NEXT_ARG;
}

/*
 * The command line: options anywhere, the command's name first of the
 * other words, its operands after it (pos, room for argc of them).
 */
static int run(int argc, char **argv, char **pos)
{
	struct opts o = { .unit = 'h', .delay = 2.0,
			  .max_cgroups = DEFAULT_MAX_CGROUPS };
	const struct command *cmd = NULL;
	int i, ret, npos = 0;
	bool dashdash = false;

	if (ctl_env("GPUPOOL_PROC_PATH"))
		proc_path = ctl_env("GPUPOOL_PROC_PATH");
	if (ctl_env("GPUPOOL_DEV_PATH"))
		dev_path = ctl_env("GPUPOOL_DEV_PATH");
	for (i = 1; i < argc; i++) {
		char *a = argv[i];

		/* After a command that takes operands, "-5" is one (limit's
		 * size, refused as negative), and "--" ends the options.
		 */
		if (dashdash || a[0] != '-' ||
		    (cmd && cmd->max_args && a[1] >= '0' && a[1] <= '9')) {
			if (npos && (!cmd || npos > cmd->max_args)) {
				fprintf(stderr, "gpupoolctl: unexpected argument '%s'\n", a);
				usage(stderr);
				return EX_USAGE;
			}
			if (!npos)
				cmd = find_command(a);
			pos[npos++] = a;
		} else if (!strcmp(a, "--")) {
			dashdash = true;
		} else {
			ret = parse_option(&o, argc, argv, &i);
			if (ret != NEXT_ARG)
				return ret;
		}
	}
	if (!npos) {
		usage(stderr);
		return EX_USAGE;
	}
	if (!cmd) {
		fprintf(stderr, "gpupoolctl: unknown command '%s'\n", pos[0]);
		usage(stderr);
		return EX_USAGE;
	}
	o.nargs = npos - 1;
	o.args = pos + 1;
	return cmd->run(&o);
}

int main(int argc, char **argv)
{
	char **pos;
	int ret;

	/* run's arguments are a command's: its own parser (ctl_run.c). */
	if (argc > 1 && !strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	pos = calloc((size_t)argc, sizeof(*pos));
	if (!pos) {
		fprintf(stderr, "gpupoolctl: out of memory\n");
		return EX_FAIL;
	}
	ret = run(argc, argv, pos);
	free(pos);

	/* A full disk under `gpupoolctl prometheus > file` is a failure. */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "gpupoolctl: writing the output: %s\n",
			strerror(errno));
		if (ret == EX_OK)
			ret = EX_FAIL;
	}
	return ret;
}
