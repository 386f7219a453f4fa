// SPDX-License-Identifier: MIT
/*
 * ctl_prometheus.c - gpupoolctl prometheus: /proc/gpupool in the Prometheus
 * text format, on stdout or, with --textfile DIR, in DIR/gpupool.prom for
 * node_exporter's textfile collector.
 *
 *   gpupoolctl prometheus [--textfile DIR] [--max-cgroups N]
 *
 * gpupool_build_info (the module's version and ABI, gpupoolctl's
 * version), the pool's figures (per NUMA node where /proc/gpupool has
 * them), each holder's bytes and idle bytes, and each cgroup's figures: at most
 * --max-cgroups of them by name, the rest summed as cgroup="other".
 * docs/operations.md has the node_exporter setup.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* The pool's figures ---------------------------------------------------------- */

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
	/* ABI 1.2: idle memory and the asks for it (absent before). */
	{ "Idle", "gpupool_idle_bytes", "gauge", "In chunks their holders keep idle (cached)." },
	{ "ReclaimAsks", "gpupool_reclaim_asks_total", "counter", "Allocations that asked holders for idle chunks." },
	{ "ReclaimAsked", "gpupool_reclaim_asked_bytes_total", "counter", "Bytes asked for." },
	{ "ReclaimGiven", "gpupool_reclaim_given_bytes_total", "counter", "Bytes asked for and given back in time." },
	{ "ReclaimBusy", "gpupool_reclaim_busy_bytes_total", "counter", "Bytes asked for and in use again instead." },
	{ "ReclaimTimeouts", "gpupool_reclaim_timeouts_total", "counter", "Asks whose wait ended at reclaim_wait_ms." },
	{ "ReclaimServed", "gpupool_reclaim_served_total", "counter", "Asking allocations served after their wait." },
	{ "ReclaimThrottled", "gpupool_reclaim_throttled_total", "counter", "Holders not asked: reclaim_rate spent." },
	{ "ReclaimWaitTime", "gpupool_reclaim_wait_seconds_total", "counter", "Time asking allocations waited." },
};

static void prom_value(FILE *out, const struct gpctl_field *f)
{
	if (f->unit == 'p')
		fprintf(out, "%g\n", (double)f->value / 1e6);
	else if (f->unit == 'm')	/* ms: seconds, as Prometheus has it */
		fprintf(out, "%g\n", (double)f->value / 1e3);
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
	const char *path = ctl_env("GPUPOOL_MODULE_VERSION_PATH");
	FILE *f = fopen(path ? path : "/sys/module/gpupool/version", "r");

	snprintf(buf, len, "unknown");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

/* The cgroups ------------------------------------------------------------------ */

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

/* Where a figure is in struct gpctl_cgroup. */
#define CG_OFF(field)	offsetof(struct gpctl_cgroup, field)

static const struct cg_series cg_series[] = {
	{ "gpupool_cgroup_bytes", "gauge", "Bytes charged to the cgroup and its descendants.", CG_OFF(bytes), false, false },
	{ "gpupool_cgroup_chunks", "gauge", "Chunks charged to the cgroup and its descendants.", CG_OFF(chunks), false, false },
	{ "gpupool_cgroup_limit_bytes", "gauge", "The cgroup's limit (gpupoolctl limit set), where it has one.", CG_OFF(limit), true, true },
	{ "gpupool_cgroup_denials_total", "counter", "Allocations refused by the cgroup's own limit.", CG_OFF(denials), false, true },
};

static uint64_t cg_figure(const struct gpctl_cgroup *c, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)c + off, sizeof(v));
	return v;
}

/*
 * Which cgroups the series name: shown[i] for p->cgroups[i], the first max
 * of them by cgroup_rank (all of them when max < 0).  The number named, or
 * -1 when out of memory.
 */
static long cgroups_named(const struct gpctl_pool *p, long max, bool *shown)
{
	const struct gpctl_cgroup **rank;
	size_t i, named, n = p->nr_cgroups;

	rank = malloc(n * sizeof(*rank));
	if (!rank)
		return -1;
	for (i = 0; i < n; i++)
		rank[i] = &p->cgroups[i];
	qsort(rank, n, sizeof(*rank), cgroup_rank);
	named = max < 0 || (size_t)max > n ? n : (size_t)max;
	for (i = 0; i < named; i++)
		shown[rank[i] - p->cgroups] = true;
	free(rank);
	return (long)named;
}

/* One cgroup series: the named cgroups in the file's order (by path, as
 * /proc/gpupool lists them), then "other" for the rest.
 */
static void prom_cg_series(FILE *out, const struct gpctl_pool *p,
			   const struct cg_series *cs, const bool *shown,
			   size_t named)
{
	size_t i, n = p->nr_cgroups;
	uint64_t other = 0;

	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", cs->name, cs->help,
		cs->name, cs->type);
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

static void prom_cgroups(FILE *out, const struct gpctl_pool *p, long max)
{
	const struct gpctl_field *src = gpctl_field(p, "CgroupLimits");
	bool dmem = src && !strcmp(src->text, "dmem");
	size_t i, m, n = p->nr_cgroups;
	bool *shown = NULL;
	long named = 0;

	if (!src && !n)
		return;		/* a module without per-cgroup figures */
	if (n) {
		shown = calloc(n, sizeof(*shown));
		named = shown ? cgroups_named(p, max, shown) : -1;
		if (named < 0) {
			fprintf(stderr, "gpupoolctl: out of memory: no cgroup series\n");
			goto out;
		}
	}
	for (m = 0; m < sizeof(cg_series) / sizeof(cg_series[0]); m++) {
		const struct cg_series *cs = &cg_series[m];
		bool any = false;

		for (i = 0; i < n; i++)
			any |= shown[i] && (!cs->limited_only ||
					    p->cgroups[i].limit != GPCTL_NO_LIMIT);
		if ((cs->limited_only && !any) || (cs->table_only && dmem))
			continue;
		prom_cg_series(out, p, cs, shown, (size_t)named);
	}
	fprintf(out, "# HELP gpupool_cgroup_limit_denials_total Allocations refused by any cgroup limit (module's table or dmem.max).\n"
		"# TYPE gpupool_cgroup_limit_denials_total counter\n"
		"gpupool_cgroup_limit_denials_total %llu\n",
		(unsigned long long)gpctl_value(p, "CgroupDenials"));
out:
	free(shown);
}

/* The whole text ------------------------------------------------------------------ */

static void prom_build_info(FILE *out, const struct gpctl_pool *p)
{
	const struct gpctl_field *abi = gpctl_field(p, "AbiVersion");
	char modver[64];

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
}

/* One of the pool's figures: per node, or one series (struct metric). */
static void prom_metric(FILE *out, const struct gpctl_pool *p,
			const struct metric *mt)
{
	const struct gpctl_field *f = gpctl_field(p, mt->key);
	bool per_node = false;
	size_t i;

	for (i = 0; i < p->nr_fields && !per_node; i++)
		per_node = node_of(p->fields[i].key, mt->key) >= 0;
	if (!per_node && !f)
		return;
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", mt->name,
		mt->help, mt->name, mt->type);
	if (!per_node) {
		fprintf(out, "%s ", mt->name);
		prom_value(out, f);
		return;
	}
	for (i = 0; i < p->nr_fields; i++) {
		long nid = node_of(p->fields[i].key, mt->key);

		if (nid < 0)
			continue;
		fprintf(out, "%s{node=\"%ld\"} ", mt->name, nid);
		prom_value(out, &p->fields[i]);
	}
}

/* A holder's figure: its bytes, or (idle) those of them it keeps idle. */
static uint64_t holder_figure(const struct gpctl_holder *h, bool idle)
{
	return idle ? h->idle : h->bytes;
}

/* One gauge per holder process: name, or name's idle bytes. */
static void prom_holder_series(FILE *out, const struct gpctl_pool *p,
			       const char *name, const char *help, bool idle)
{
	size_t i, j;

	fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (i = 0; i < p->nr_holders; i++) {
		const struct gpctl_holder *h = &p->holders[i];
		uint64_t bytes = 0;

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
				bytes += holder_figure(&p->holders[j], idle);
		fprintf(out, "%s{pid=\"%lld\",comm=", name, (long long)h->pid);
		prom_label(out, h->comm);
		fprintf(out, "} %llu\n", (unsigned long long)bytes);
	}
}

static void prom_holders(FILE *out, const struct gpctl_pool *p)
{
	prom_holder_series(out, p, "gpupool_holder_bytes",
			   "Bytes counting against each holder process.", false);
	if (p->abi_major > 1 || (p->abi_major == 1 && p->abi_minor >= 2))
		prom_holder_series(out, p, "gpupool_holder_idle_bytes",
				   "Of them, bytes the holder keeps idle (cached).",
				   true);
}

static void prom_write(FILE *out, const struct gpctl_pool *p, long max_cgroups)
{
	size_t m;

	prom_build_info(out, p);
	for (m = 0; m < sizeof(metrics) / sizeof(metrics[0]); m++)
		prom_metric(out, p, &metrics[m]);
	prom_holders(out, p);
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

int cmd_prometheus(const struct opts *o)
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

