// SPDX-License-Identifier: MIT
/*
 * gpupoolctl - look at the gpupool pinned-memory pool, in the spirit of
 * `free` and `nvidia-smi`.  stat, top, map and prometheus read
 * /proc/gpupool (world-readable); `info` asks /dev/gpupool
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
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/gpupool.h>

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

		printf("%s{\"pid\": %lld, \"bytes\": %llu, \"chunks\": %llu, \"comm\": ",
		       i ? ", " : "", (long long)h->pid,
		       (unsigned long long)h->bytes,
		       (unsigned long long)h->chunks);
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

/* Largest first; the same bytes by path. */
static int cgroup_by_bytes(const void *a, const void *b)
{
	const struct gpctl_cgroup *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->path, y->path);
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
		printf("%8s %12s %8s %6s  %s\n", "PID", "BYTES", "CHUNKS", "%POOL",
		       "COMMAND");
		for (i = 0; i < p.nr_holders; i++) {
			const struct gpctl_holder *h = &p.holders[i];
			uint64_t total = gpctl_value(&p, "PoolTotal");

			printf("%8lld %12s %8llu %5.1f%%  ", (long long)h->pid,
			       fmt_size(b1, sizeof(b1), h->bytes, o->unit),
			       (unsigned long long)h->chunks,
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
		printf("%s\n", gpctl_value(&p, "HugeMaps") ?
		       "mappings: a chunk's whole 2 MiB blocks in 2 MiB entries (FilePmdMapped in /proc/PID/smaps), the rest in 4 KiB" :
		       "mappings: 4 KiB entries");
	gpctl_pool_free(&p);
	return EX_OK;
}

/* prometheus ---------------------------------------------------------------- */

struct metric {
	const char *key;	/* whole-pool key; per node "Node<N>" + key */
	const char *name;
	const char *type;
	const char *help;
};

/*
 * Per node where /proc/gpupool has per-node figures, else one pool-wide
 * series without labels: never both, so that sum() over a metric is the
 * pool's figure.
 */
static const struct metric metrics[] = {
	{ "PoolTotal", "gpupool_total_bytes", "gauge", "Memory the pool holds." },
	{ "PoolFree", "gpupool_free_bytes", "gauge", "Free, zeroed, ready to allocate." },
	{ "InUse", "gpupool_in_use_bytes", "gauge", "In live chunks." },
	{ "PeakInUse", "gpupool_peak_in_use_bytes", "gauge", "Highest in-use since load." },
	{ "Zeroing", "gpupool_zeroing_bytes", "gauge", "Released, waiting to be zeroed." },
	{ "Quarantined", "gpupool_quarantined_bytes", "gauge", "Released but still pinned by others." },
	{ "LargestFree", "gpupool_largest_free_bytes", "gauge", "Largest free chunk." },
	{ "Fragmentation", "gpupool_fragmentation_ratio", "gauge", "1 - largest free / free." },
	{ "ChunksInUse", "gpupool_chunks_in_use", "gauge", "Live chunks." },
	{ "ChunksFree", "gpupool_chunks_free", "gauge", "Free chunks." },
	{ "Allocs", "gpupool_allocs_total", "counter", "Successful allocations." },
	{ "Frees", "gpupool_frees_total", "counter", "Chunks released." },
	{ "FailedAllocs", "gpupool_failed_allocs_total", "counter", "Allocations refused for lack of memory." },
	{ "Growths", "gpupool_growths_total", "counter", "Regions added after load." },
	{ "LimitDenials", "gpupool_limit_denials_total", "counter", "Allocations refused by per_process_limit." },
	{ "PoolLimit", "gpupool_limit_bytes", "gauge", "Growth limit (max_size); 0: no growth." },
	{ "PerProcessLimit", "gpupool_per_process_limit_bytes", "gauge", "Most bytes one process may hold; 0: no limit." },
};

static void prom_value(FILE *out, const struct gpctl_field *f)
{
	if (f->unit == 'p')
		fprintf(out, "%g\n", (double)f->value / 1e6);
	else
		fprintf(out, "%llu\n", (unsigned long long)f->value);
}

/* The field's node number when it is "Node<N>" + key, else -1. */
static long node_of(const char *field, const char *key)
{
	char *end;
	long nid;

	if (strncmp(field, "Node", 4))
		return -1;
	nid = strtol(field + 4, &end, 10);
	if (end == field + 4 || nid < 0 || strcmp(end, key))
		return -1;
	return nid;
}

/* The loaded module's version (MODULE_VERSION), or "unknown". */
static void module_version(char *buf, size_t len)
{
	const char *path = getenv("GPUPOOL_MODULE_VERSION_PATH");
	FILE *f = fopen(path ? path : "/sys/module/gpupool/version", "r");

	snprintf(buf, len, "unknown");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

/*
 * The cgroup series, a bounded label set: at most max cgroups by name,
 * every limited one first, then the largest by bytes; the rest summed
 * into cgroup="other", so that each metric's sum over its series is the
 * sum over every Cgroup line.  (Each cgroup's figures include its
 * descendants': the pool's own figure is cgroup="/", not a sum.)
 */
static int cgroup_rank(const void *a, const void *b)
{
	const struct gpctl_cgroup *x = *(const struct gpctl_cgroup *const *)a;
	const struct gpctl_cgroup *y = *(const struct gpctl_cgroup *const *)b;
	bool lx = x->limit != GPCTL_NO_LIMIT, ly = y->limit != GPCTL_NO_LIMIT;

	if (lx != ly)
		return lx ? -1 : 1;
	return cgroup_by_bytes(x, y);
}

struct cg_series {
	const char *name, *type, *help;
	size_t off;		/* of the figure in struct gpctl_cgroup */
	bool limited_only;	/* only where a limit is set; no "other" */
	bool table_only;	/* not with dmem limits (the module's 0s) */
};

static const struct cg_series cg_series[] = {
	{ "gpupool_cgroup_bytes", "gauge",
	  "Bytes charged to the cgroup and its descendants.",
	  offsetof(struct gpctl_cgroup, bytes), false, false },
	{ "gpupool_cgroup_chunks", "gauge",
	  "Chunks charged to the cgroup and its descendants.",
	  offsetof(struct gpctl_cgroup, chunks), false, false },
	{ "gpupool_cgroup_limit_bytes", "gauge",
	  "The cgroup's limit (gpupoolctl limit set), where it has one.",
	  offsetof(struct gpctl_cgroup, limit), true, true },
	{ "gpupool_cgroup_denials_total", "counter",
	  "Allocations refused by the cgroup's own limit.",
	  offsetof(struct gpctl_cgroup, denials), false, true },
};

static uint64_t cg_figure(const struct gpctl_cgroup *c, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)c + off, sizeof(v));
	return v;
}

static void prom_cgroups(FILE *out, const struct gpctl_pool *p, long max)
{
	const struct gpctl_field *src = gpctl_field(p, "CgroupLimits");
	bool dmem = src && !strcmp(src->text, "dmem");
	const struct gpctl_cgroup **rank = NULL;
	size_t i, m, named, n = p->nr_cgroups;
	bool *shown = NULL;

	if (!src && !n)
		return;		/* a module without per-cgroup figures */
	if (n) {
		rank = malloc(n * sizeof(*rank));
		shown = calloc(n, sizeof(*shown));
		if (!rank || !shown) {
			fprintf(stderr, "gpupoolctl: out of memory: no cgroup series\n");
			goto out;
		}
	}
	for (i = 0; i < n; i++)
		rank[i] = &p->cgroups[i];
	if (n)
		qsort(rank, n, sizeof(*rank), cgroup_rank);
	named = max < 0 || (size_t)max > n ? n : (size_t)max;
	for (i = 0; i < named; i++)
		shown[rank[i] - p->cgroups] = true;

	for (m = 0; m < sizeof(cg_series) / sizeof(cg_series[0]); m++) {
		const struct cg_series *cs = &cg_series[m];
		uint64_t other = 0;
		bool any = false;

		for (i = 0; i < n; i++)
			any |= shown[i] && (!cs->limited_only ||
					    p->cgroups[i].limit != GPCTL_NO_LIMIT);
		if ((cs->limited_only && !any) || (cs->table_only && dmem))
			continue;
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", cs->name, cs->help,
			cs->name, cs->type);
		/* In the file's order (by path), as /proc/gpupool lists them. */
		for (i = 0; i < n; i++) {
			const struct gpctl_cgroup *c = &p->cgroups[i];

			if (!shown[i]) {
				other += cg_figure(c, cs->off);
				continue;
			}
			if (cs->limited_only && c->limit == GPCTL_NO_LIMIT)
				continue;
			fprintf(out, "%s{cgroup=", cs->name);
			prom_label(out, c->path);
			fprintf(out, "} %llu\n", (unsigned long long)cg_figure(c, cs->off));
		}
		if (named < n && !cs->limited_only)
			fprintf(out, "%s{cgroup=\"other\"} %llu\n", cs->name,
				(unsigned long long)other);
	}
	fprintf(out, "# HELP gpupool_cgroup_limit_denials_total Allocations refused by any cgroup limit (module's table or dmem.max).\n"
		"# TYPE gpupool_cgroup_limit_denials_total counter\n"
		"gpupool_cgroup_limit_denials_total %llu\n",
		(unsigned long long)gpctl_value(p, "CgroupDenials"));
out:
	free(rank);
	free(shown);
}

static void prom_write(FILE *out, const struct gpctl_pool *p, long max_cgroups)
{
	const struct gpctl_field *abi = gpctl_field(p, "AbiVersion");
	char modver[64];
	size_t m, i;

	module_version(modver, sizeof(modver));
	fprintf(out, "# HELP gpupool_build_info The loaded module's version and ABI, and gpupoolctl's version.\n"
		"# TYPE gpupool_build_info gauge\n"
		"gpupool_build_info{version=");
	prom_label(out, modver);
	fprintf(out, ",abi_version=");
	prom_label(out, abi ? abi->text : "unknown");
	fprintf(out, ",tools_version=");
	prom_label(out, GPUPOOL_VERSION);
	fprintf(out, "} 1\n");

	for (m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++) {
		const struct metric *mt = &metrics[m];
		const struct gpctl_field *f = gpctl_field(p, mt->key);
		bool per_node = false;

		for (i = 0; i < p->nr_fields && !per_node; i++)
			per_node = node_of(p->fields[i].key, mt->key) >= 0;
		if (!per_node && !f)
			continue;
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", mt->name,
			mt->help, mt->name, mt->type);
		if (!per_node) {
			fprintf(out, "%s ", mt->name);
			prom_value(out, f);
			continue;
		}
		for (i = 0; i < p->nr_fields; i++) {
			long nid = node_of(p->fields[i].key, mt->key);

			if (nid < 0)
				continue;
			fprintf(out, "%s{node=\"%ld\"} ", mt->name, nid);
			prom_value(out, &p->fields[i]);
		}
	}
	fprintf(out, "# HELP gpupool_holder_bytes Bytes counting against each holder process.\n"
		"# TYPE gpupool_holder_bytes gauge\n");
	for (i = 0; i < p->nr_holders; i++) {
		const struct gpctl_holder *h = &p->holders[i];
		uint64_t bytes = 0;
		size_t j;

		/* One series per label set: exited holders all have pid 0,
		 * and two of them may share a name.  The first of each set
		 * prints the sum.
		 */
		for (j = 0; j < i; j++)
			if (p->holders[j].pid == h->pid &&
			    !strcmp(p->holders[j].comm, h->comm))
				break;
		if (j < i)
			continue;
		for (j = i; j < p->nr_holders; j++)
			if (p->holders[j].pid == h->pid &&
			    !strcmp(p->holders[j].comm, h->comm))
				bytes += p->holders[j].bytes;
		fprintf(out, "gpupool_holder_bytes{pid=\"%lld\",comm=", (long long)h->pid);
		prom_label(out, h->comm);
		fprintf(out, "} %llu\n", (unsigned long long)bytes);
	}
	prom_cgroups(out, p, max_cgroups);
}

/*
 * --textfile DIR: DIR/gpupool.prom for node_exporter's textfile collector,
 * written whole (ctl_atomic_open: a scrape sees the old file or the new
 * one, never a part; the collector reads only names that end in .prom).
 */
static int prom_textfile(const char *dir, const struct gpctl_pool *p,
			 long max_cgroups)
{
	char path[PATH_MAX];
	struct ctl_atomic w;
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/gpupool.prom", dir) >= sizeof(path)) {
		fprintf(stderr, "gpupoolctl: --textfile: path too long\n");
		return EX_USAGE;
	}
	ret = ctl_atomic_open(&w, path, "--textfile", false);
	if (ret)
		return ret;
	prom_write(w.f, p, max_cgroups);
	return ctl_atomic_commit(&w);
}

static int cmd_prometheus(const struct opts *o)
{
	struct gpctl_pool p;
	int ret = read_pool(&p);

	if (ret)
		return ret;
	if (o->textfile)
		ret = prom_textfile(o->textfile, &p, o->max_cgroups);
	else
		prom_write(stdout, &p, o->max_cgroups);
	gpctl_pool_free(&p);
	return ret;
}

/* info ---------------------------------------------------------------------- */

static int cmd_info(const struct opts *o)
{
	struct gpupool_version v;
	int fd = open(dev_path, O_RDWR | O_CLOEXEC), ret = EX_OK;

	if (fd < 0)
		return explain_open_error(dev_path, errno);
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, GPUPOOL_IOC_VERSION, &v) < 0) {
		fprintf(stderr, "gpupoolctl: GPUPOOL_IOC_VERSION: %s\n",
			strerror(errno));
		close(fd);
		return EX_FAIL;
	}
	close(fd);
	if (v.abi_major != GPUPOOL_ABI_MAJOR) {
		fprintf(stderr, "gpupoolctl: the module speaks ABI %u.%u, these tools %u.%u: upgrade the %s\n",
			v.abi_major, v.abi_minor, GPUPOOL_ABI_MAJOR,
			GPUPOOL_ABI_MINOR,
			v.abi_major > GPUPOOL_ABI_MAJOR ? "gpupool tools (and libgpupool)" :
			"gpupool module");
		ret = EX_ABI;
	}
	if (o->json) {
		printf("{\"abi_major\": %u, \"abi_minor\": %u, \"min_lib_major\": %u, "
		       "\"tools_abi_major\": %u, \"tools_abi_minor\": %u, "
		       "\"pool_size\": %llu, \"granularity\": %llu, "
		       "\"nr_nodes\": %u, \"node_mask\": %llu, \"features\": %llu}\n",
		       v.abi_major, v.abi_minor, v.min_lib_major,
		       GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR,
		       (unsigned long long)v.pool_size,
		       (unsigned long long)v.granularity, v.nr_nodes,
		       (unsigned long long)v.node_mask,
		       (unsigned long long)v.features);
		return ret;
	}
	printf("module ABI:     %u.%u (accepts libraries from ABI %u)\n",
	       v.abi_major, v.abi_minor, v.min_lib_major);
	printf("gpupoolctl ABI: %u.%u\n", GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
	printf("pool size:      %llu bytes\n", (unsigned long long)v.pool_size);
	printf("granularity:    %llu bytes\n", (unsigned long long)v.granularity);
	printf("NUMA nodes:     %u (mask %#llx)\n", v.nr_nodes,
	       (unsigned long long)v.node_mask);
	printf("cgroup limits:  %s\n",
	       !(v.features & GPUPOOL_FEATURE_CGROUP) ? "none (module before ABI 1.1)" :
	       v.features & GPUPOOL_FEATURE_DMEM ? "dmem.max (dmem controller), region gpupool" :
	       "the module's own (gpupoolctl limit)");
	return ret;
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

/* The default of --max-cgroups: Prometheus series per cgroup metric. */
#define DEFAULT_MAX_CGROUPS	100

static int run(int argc, char **argv)
{
	struct opts o = { .unit = 'h', .delay = 2.0,
			  .max_cgroups = DEFAULT_MAX_CGROUPS };
	char *pos[4];
	int i, npos = 0;
	bool dashdash = false;

	if (getenv("GPUPOOL_PROC_PATH"))
		proc_path = getenv("GPUPOOL_PROC_PATH");
	if (getenv("GPUPOOL_DEV_PATH"))
		dev_path = getenv("GPUPOOL_DEV_PATH");
	for (i = 1; i < argc; i++) {
		char *a = argv[i];
		char *end;

		/* After "limit", "-5" is a size (refused as negative), and
		 * "--" ends the options.
		 */
		if (dashdash || a[0] != '-' ||
		    (npos && !strcmp(pos[0], "limit") && a[1] >= '0' && a[1] <= '9')) {
			if (npos == (int)(sizeof(pos) / sizeof(pos[0])) ||
			    (npos && strcmp(pos[0], "limit"))) {
				fprintf(stderr, "gpupoolctl: unexpected argument '%s'\n", a);
				usage(stderr);
				return EX_USAGE;
			}
			pos[npos++] = a;
		} else if (!strcmp(a, "--")) {
			dashdash = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return EX_OK;
		} else if (!strcmp(a, "--json")) {
			o.json = true;
		} else if (!strcmp(a, "--textfile") && i + 1 < argc) {
			o.textfile = argv[++i];
		} else if (!strcmp(a, "--output") && i + 1 < argc) {
			o.output = argv[++i];
		} else if (!strcmp(a, "--cdi-version") && i + 1 < argc) {
			o.cdi_version = argv[++i];
		} else if (!strcmp(a, "--max-cgroups") && i + 1 < argc) {
			long v;

			errno = 0;
			v = strtol(argv[++i], &end, 10);
			if (*end || end == argv[i] || errno || v < 0 || v > 1000000) {
				fprintf(stderr, "gpupoolctl: --max-cgroups wants a number from 0 to 1000000, not '%s'\n",
					argv[i]);
				return EX_USAGE;
			}
			o.max_cgroups = v;
		} else if (!strcmp(a, "-b") || !strcmp(a, "-k") ||
			   !strcmp(a, "-m") || !strcmp(a, "-g")) {
			o.unit = a[1];
		} else if ((!strcmp(a, "-n") || !strcmp(a, "-d")) && i + 1 < argc) {
			double v = strtod(argv[++i], &end);

			if (*end || end == argv[i] || v <= 0 || v > 1e6) {
				fprintf(stderr, "gpupoolctl: %s wants a positive number, not '%s'\n",
					a, argv[i]);
				return EX_USAGE;
			}
			if (a[1] == 'n')
				o.iterations = (long)v;
			else
				o.delay = v;
		} else {
			fprintf(stderr, "gpupoolctl: unexpected argument '%s'\n", a);
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (!npos) {
		usage(stderr);
		return EX_USAGE;
	}
	if (!strcmp(pos[0], "info"))
		return cmd_info(&o);
	if (!strcmp(pos[0], "stat"))
		return cmd_stat(&o);
	if (!strcmp(pos[0], "top"))
		return cmd_top(&o);
	if (!strcmp(pos[0], "map"))
		return cmd_map(&o);
	if (!strcmp(pos[0], "prometheus"))
		return cmd_prometheus(&o);
	if (!strcmp(pos[0], "limit"))
		return cmd_limit(&o, npos - 1, pos + 1);
	if (!strcmp(pos[0], "cdi"))
		return cmd_cdi(&o);
	fprintf(stderr, "gpupoolctl: unknown command '%s'\n", pos[0]);
	usage(stderr);
	return EX_USAGE;
}

int main(int argc, char **argv)
{
	int ret;

	/* run's arguments are a command's: its own parser (ctl_run.c). */
	if (argc > 1 && !strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	ret = run(argc, argv);

	/* A full disk under `gpupoolctl prometheus > file` is a failure. */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "gpupoolctl: writing the output: %s\n",
			strerror(errno));
		if (ret == EX_OK)
			ret = EX_FAIL;
	}
	return ret;
}
