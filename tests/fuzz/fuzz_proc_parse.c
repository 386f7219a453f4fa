// SPDX-License-Identifier: MIT
/*
 * fuzz_proc_parse.c - libFuzzer harness for the /proc/gpupool parser
 * (tools/proc_parse.c) and what gpupoolctl computes from its result.
 *
 * The input is the file's text, exactly len bytes (not NUL-terminated, so
 * AddressSanitizer sees any read past it).  The parse must either fail with
 * -EINVAL or -ENOMEM leaving nothing allocated, or succeed with a pool whose
 * every string is NUL-terminated within its array, whose keys are the
 * letters and digits a line may have, that has an AbiVersion, whose cgroup
 * paths start with '/', and that reads back the same when written out
 * again in the canonical form (the fields, holders, cgroups and maps, in
 * order; sizes in kB; names and paths escaped as the module escapes them)
 * and parsed once more.
 *
 * A text that parses is then handed to gpupoolctl itself: its sources are
 * included here (main renamed), /proc/gpupool is a memfd holding the input,
 * and `stat`, `stat --json`, `top` (one screen, text and JSON), `map`,
 * `map --json`, `prometheus` (with a --max-cgroups of 0, 1, 2 or 100, as
 * the input's length picks) and `limit show` (text and JSON; with dmem
 * limits it walks an empty directory standing in for the cgroup2 mount)
 * run, in the size unit the input's length picks, with stdout thrown away;
 * each must succeed.
 */
#define main gpupoolctl_main
#include "../../tools/gpupoolctl.c"
#undef main
#include "../../tools/ctl_common.c"
#include "../../core/bfc_size.c"
#include "../../tools/ctl_cgroup.c"
#include "../../tools/ctl_limit.c"
#include "../../tools/ctl_cdi.c"
#include "../../tools/ctl_prometheus.c"
#include "../../tools/ctl_info.c"
#include "../../tools/ctl_run.c"

#include <sys/mman.h>

#include "fuzz.h"

int gpupoolctl_main(int argc, char **argv);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int proc_fd = -1;
static char proc_name[64];
static char cgroup_mount[] = "/tmp/fuzz-cgroup2-XXXXXX";

static bool terminated(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

static bool key_ok(const char *k)
{
	if (!terminated(k, GPCTL_KEY_MAX) || !*k)
		return false;
	for (; *k; k++)
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9')))
			return false;
	return true;
}

static void check_pool(const struct gpctl_pool *p)
{
	size_t i;

	FZ_ASSERT(gpctl_field(p, "AbiVersion"), "parsed without an AbiVersion");
	for (i = 0; i < p->nr_fields; i++) {
		const struct gpctl_field *f = &p->fields[i];

		FZ_ASSERT(key_ok(f->key) && terminated(f->text, sizeof(f->text)) &&
			  (!f->unit || f->unit == 'B' || f->unit == 'm' ||
			   f->unit == 'p' || f->unit == 'w'),
			  "field #%zu", i);
		FZ_ASSERT(f->unit != 'w' || (f->text[0] && !f->value &&
					     !strpbrk(f->text, " \t")),
			  "word field #%zu", i);
		FZ_ASSERT(gpctl_value(p, f->key) == gpctl_field(p, f->key)->value,
			  "gpctl_value(%s)", f->key);
	}
	for (i = 0; i < p->nr_holders; i++)
		FZ_ASSERT(p->holders[i].pid >= 0 && !(p->holders[i].bytes & 1023) &&
			  !(p->holders[i].idle & 1023) &&
			  p->holders[i].idle <= p->holders[i].bytes &&
			  terminated(p->holders[i].comm, GPCTL_COMM_MAX),
			  "holder #%zu", i);
	for (i = 0; i < p->nr_maps; i++)
		FZ_ASSERT(p->maps[i].node >= 0 && p->maps[i].node <= 1023 &&
			  terminated(p->maps[i].cells, GPCTL_MAP_MAX), "map #%zu", i);
	for (i = 0; i < p->nr_cgroups; i++) {
		const struct gpctl_cgroup *c = &p->cgroups[i];

		FZ_ASSERT(c->path && c->path[0] == '/' &&
			  strlen(c->path) < GPCTL_PATH_MAX && !(c->bytes & 1023) &&
			  (c->limit == GPCTL_NO_LIMIT || !(c->limit & 1023)),
			  "cgroup #%zu", i);
	}
}

/* A name or path as the module writes it: newline and backslash as \ooo. */
static void write_escaped(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\\')
			fprintf(f, "\\%03o", (unsigned char)*s);
		else
			fputc(*s, f);
}

/* The pool in the canonical form of /proc/gpupool; free() the result. */
static char *write_out(const struct gpctl_pool *p, size_t *len)
{
	static const char *const unit[] = { ['B'] = " kB", ['m'] = " ms",
					    ['p'] = " ppm" };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	size_t i;

	FZ_ASSERT(f, "open_memstream");
	for (i = 0; i < p->nr_fields; i++) {
		const struct gpctl_field *x = &p->fields[i];

		if (!strcmp(x->key, "AbiVersion") || x->unit == 'w')
			fprintf(f, "%s: %s\n", x->key, x->text);
		else
			fprintf(f, "%s: %llu%s\n", x->key,
				(unsigned long long)(x->unit == 'B' ? x->value >> 10 :
						     x->value),
				x->unit ? unit[(int)x->unit] : "");
	}
	for (i = 0; i < p->nr_holders; i++) {
		fprintf(f, "Holder: %lld %llu %llu ", (long long)p->holders[i].pid,
			(unsigned long long)(p->holders[i].bytes >> 10),
			(unsigned long long)p->holders[i].chunks);
		if (p->abi_major > 1 || (p->abi_major == 1 && p->abi_minor >= 2))
			fprintf(f, "%llu ",
				(unsigned long long)(p->holders[i].idle >> 10));
		write_escaped(f, p->holders[i].comm);
		fputc('\n', f);
	}
	for (i = 0; i < p->nr_cgroups; i++) {
		const struct gpctl_cgroup *c = &p->cgroups[i];

		fprintf(f, "Cgroup: %llu %llu ", (unsigned long long)(c->bytes >> 10),
			(unsigned long long)c->chunks);
		if (c->limit == GPCTL_NO_LIMIT)
			fprintf(f, "- ");
		else
			fprintf(f, "%llu ", (unsigned long long)(c->limit >> 10));
		fprintf(f, "%llu ", (unsigned long long)c->denials);
		write_escaped(f, c->path);
		fputc('\n', f);
	}
	for (i = 0; i < p->nr_maps; i++)
		fprintf(f, "Node%dMap: %s\n", p->maps[i].node, p->maps[i].cells);
	FZ_ASSERT(!fclose(f), "fclose of a memstream");
	return buf;
}

static void check_same(const struct gpctl_pool *a, const struct gpctl_pool *b)
{
	size_t i;

	FZ_ASSERT(a->nr_fields == b->nr_fields && a->nr_holders == b->nr_holders &&
		  a->nr_maps == b->nr_maps && a->nr_cgroups == b->nr_cgroups,
		  "read back: %zu/%zu/%zu/%zu, was %zu/%zu/%zu/%zu",
		  b->nr_fields, b->nr_holders, b->nr_maps, b->nr_cgroups,
		  a->nr_fields, a->nr_holders, a->nr_maps, a->nr_cgroups);
	for (i = 0; i < a->nr_fields; i++)
		FZ_ASSERT(!strcmp(a->fields[i].key, b->fields[i].key) &&
			  a->fields[i].value == b->fields[i].value &&
			  a->fields[i].unit == b->fields[i].unit &&
			  (a->fields[i].unit != 'w' ||
			   !strcmp(a->fields[i].text, b->fields[i].text)),
			  "read back: field %s", a->fields[i].key);
	for (i = 0; i < a->nr_holders; i++)
		FZ_ASSERT(a->holders[i].pid == b->holders[i].pid &&
			  a->holders[i].bytes == b->holders[i].bytes &&
			  a->holders[i].chunks == b->holders[i].chunks &&
			  a->holders[i].idle == b->holders[i].idle &&
			  !strcmp(a->holders[i].comm, b->holders[i].comm),
			  "read back: holder #%zu", i);
	for (i = 0; i < a->nr_maps; i++)
		FZ_ASSERT(a->maps[i].node == b->maps[i].node &&
			  !strcmp(a->maps[i].cells, b->maps[i].cells),
			  "read back: map #%zu", i);
	for (i = 0; i < a->nr_cgroups; i++)
		FZ_ASSERT(a->cgroups[i].bytes == b->cgroups[i].bytes &&
			  a->cgroups[i].chunks == b->cgroups[i].chunks &&
			  a->cgroups[i].limit == b->cgroups[i].limit &&
			  a->cgroups[i].denials == b->cgroups[i].denials &&
			  !strcmp(a->cgroups[i].path, b->cgroups[i].path),
			  "read back: cgroup #%zu", i);
}

/* gpupoolctl's commands on the text, which parses. */
static void run_commands(const uint8_t *data, size_t size, bool limits)
{
	const char units[] = { 'h', 'b', 'k', 'm', 'g' };
	const long max_cgroups[] = { 0, 1, 2, 100 };
	struct opts o = { .unit = units[size % 5], .delay = 2.0,
			  .max_cgroups = max_cgroups[(size / 5) % 4] };
	int j;

	FZ_ASSERT(!ftruncate(proc_fd, 0) &&
		  pwrite(proc_fd, data, size, 0) == (ssize_t)size, "memfd write");
	for (j = 0; j < 2; j++) {
		o.json = j;
		FZ_ASSERT(cmd_stat(&o) == EX_OK, "stat (json %d)", j);
		FZ_ASSERT(top_once(&o, false) == EX_OK, "top (json %d)", j);
		FZ_ASSERT(cmd_map(&o) == EX_OK, "map (json %d)", j);
		/* Only where there are limits to show: for a module before
		 * ABI 1.1 it would say so on stderr, the fuzzer's log.
		 */
		if (limits)
			FZ_ASSERT(show_all(&o) == EX_OK, "limit show (json %d)", j);
	}
	o.textfile = NULL;
	FZ_ASSERT(cmd_prometheus(&o) == EX_OK, "prometheus");
	fflush(stdout);
}

/*
 * Texts of the shapes an empty corpus takes long to reach (run-fuzz.sh
 * starts from one): Cgroup lines with and without limits, escaped paths,
 * CgroupLimits of both kinds.  Also in corpus/fuzz_proc_parse/ for runs
 * by hand.
 */
static const char *const seeds[] = {
	("AbiVersion: 1.1\nPoolTotal: 8192 kB\nInUse: 4096 kB\nNodes: 1\n"
	 "Node0PoolTotal: 8192 kB\nHolder: 7 4096 2 a b\n"
	 "CgroupLimits:      module\nCgroupDenials:          3\n"
	 "Cgroup: 4096 2 - 0 /\nCgroup: 0 0 4 0 /idle\n"
	 "Cgroup: 4096 2 8192 3 /k8s\n"
	 "Cgroup: 1024 1 - 0 /k8s/pod a\\012b\\134c\n"
	 "Node0Map: #...\n"),
	("AbiVersion: 1.1\nCgroupLimits:        dmem\nCgroupDenials:          2\n"
	 "Cgroup: 8192 3 - 0 /\nCgroup: 4096 1 - 0 /a/b\n"),
	"AbiVersion: 1.1\nCgroupLimits: module\nCgroupDenials: 0\n",
	("AbiVersion: 1.2\nPoolTotal: 262144 kB\nIdle: 163840 kB\n"
	 "ChunksIdle: 1\nReclaimAsks: 2\nReclaimGiven: 163840 kB\n"
	 "ReclaimWaitTime: 1004 ms\nReclaimWait: 1000 ms\n"
	 "Holder: 7 163840 1 163840 trainer\nHolder: 0 4096 1 0 a\\012b\n"),
};

static char seed_dir[] = "/tmp/fuzz-proc-seeds-XXXXXX";
static char **new_argv;

static void rm_dir(const char *dir)
{
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		snprintf(path, sizeof(path), "%s/seed%zu", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

static void cleanup(void)
{
	if (seed_dir[strlen(seed_dir) - 1] != 'X')
		rm_dir(seed_dir);
	rmdir(cgroup_mount);
	free(new_argv);
}

/*
 * When every input named on the command line is a directory (a corpus, as
 * run-fuzz.sh passes), add one more holding the seeds: libFuzzer reads
 * every corpus directory and writes what it finds to the first.  An input
 * file (a crash to replay) is left alone.
 */
static void add_seeds(int *argc, char ***argv)
{
	struct stat st;
	int i, dirs = 0;
	size_t k;

	for (i = 1; i < *argc; i++) {
		if ((*argv)[i][0] == '-')
			continue;
		if (stat((*argv)[i], &st) || !S_ISDIR(st.st_mode))
			return;
		dirs++;
	}
	if (!dirs || !mkdtemp(seed_dir))
		return;
	for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		char path[128];
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed%zu", seed_dir, k);
		f = fopen(path, "w");
		FZ_ASSERT(f && fputs(seeds[k], f) >= 0 && !fclose(f), "seed %zu", k);
	}
	new_argv = calloc((size_t)*argc + 2, sizeof(*new_argv));
	FZ_ASSERT(new_argv, "argv");
	memcpy(new_argv, *argv, (size_t)*argc * sizeof(*new_argv));
	new_argv[(*argc)++] = seed_dir;
	*argv = new_argv;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	proc_fd = memfd_create("fake-proc-gpupool", MFD_CLOEXEC);
	FZ_ASSERT(proc_fd >= 0, "memfd_create");
	snprintf(proc_name, sizeof(proc_name), "/proc/self/fd/%d", proc_fd);
	proc_path = proc_name;
	/* limit show with dmem limits walks the cgroup2 mount: an empty one. */
	FZ_ASSERT(mkdtemp(cgroup_mount), "mkdtemp");
	setenv("GPUPOOL_CGROUP_MOUNT", cgroup_mount, 1);
	add_seeds(argc, argv);
	atexit(cleanup);
	/* The commands' output: formatted, then thrown away. */
	FZ_ASSERT(freopen("/dev/null", "w", stdout), "stdout to /dev/null");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpctl_pool p, q;
	size_t len = 0;
	bool limits;
	char *text;
	int rc = gpctl_parse_proc((const char *)data, size, &p);

	if (rc) {
		FZ_ASSERT((rc == -EINVAL || rc == -ENOMEM) && !p.fields &&
			  !p.holders && !p.maps && !p.cgroups && !p.nr_fields &&
			  !p.nr_holders && !p.nr_maps && !p.nr_cgroups,
			  "failed parse: %d, and something is left", rc);
		return 0;
	}
	check_pool(&p);
	text = write_out(&p, &len);
	rc = gpctl_parse_proc(text, len, &q);
	FZ_ASSERT(rc == 0, "the canonical form does not parse (%d):\n%s", rc, text);
	check_same(&p, &q);
	gpctl_pool_free(&q);
	free(text);
	limits = gpctl_field(&p, "CgroupLimits");
	gpctl_pool_free(&p);
	FZ_ASSERT(!p.fields && !p.nr_fields && !p.cgroups && !p.nr_cgroups,
		  "gpctl_pool_free left fields or cgroups");
	run_commands(data, size, limits);
	return 0;
}
