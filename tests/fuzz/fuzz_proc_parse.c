// SPDX-License-Identifier: MIT
/*
 * fuzz_proc_parse.c - libFuzzer harness for the /proc/gpupool parser
 * (tools/proc_parse.c) and what gpupoolctl computes from its result.
 *
 * The input is the file's text, exactly len bytes (not NUL-terminated, so
 * AddressSanitizer sees any read past it).  The parse must either fail with
 * -EINVAL or -ENOMEM leaving nothing allocated, or succeed with a pool whose
 * every string is NUL-terminated within its array, whose keys are the
 * letters and digits a line may have, that has an AbiVersion, and that
 * reads back the same when written out again in the canonical form (the
 * fields, holders and maps, in order; sizes in kB) and parsed once more.
 *
 * A text that parses is then handed to gpupoolctl itself: its source is
 * included here (main renamed), /proc/gpupool is a memfd holding the input,
 * and `stat`, `stat --json`, `top` (one screen, text and JSON), `map`,
 * `map --json` and `prometheus` run, in the size unit the input's length
 * picks, with stdout thrown away; each must succeed.
 */
#define main gpupoolctl_main
#include "../../tools/gpupoolctl.c"
#undef main

#include <sys/mman.h>

#include "fuzz.h"

int gpupoolctl_main(int argc, char **argv);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int proc_fd = -1;
static char proc_name[64];

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
			  (!f->unit || f->unit == 'B' || f->unit == 'm' || f->unit == 'p'),
			  "field #%zu", i);
		FZ_ASSERT(gpctl_value(p, f->key) == gpctl_field(p, f->key)->value,
			  "gpctl_value(%s)", f->key);
	}
	for (i = 0; i < p->nr_holders; i++)
		FZ_ASSERT(p->holders[i].pid >= 0 && !(p->holders[i].bytes & 1023) &&
			  terminated(p->holders[i].comm, GPCTL_COMM_MAX),
			  "holder #%zu", i);
	for (i = 0; i < p->nr_maps; i++)
		FZ_ASSERT(p->maps[i].node >= 0 && p->maps[i].node <= 1023 &&
			  terminated(p->maps[i].cells, GPCTL_MAP_MAX), "map #%zu", i);
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

		if (!strcmp(x->key, "AbiVersion"))
			fprintf(f, "%s: %s\n", x->key, x->text);
		else
			fprintf(f, "%s: %llu%s\n", x->key,
				(unsigned long long)(x->unit == 'B' ? x->value >> 10 :
						     x->value),
				x->unit ? unit[(int)x->unit] : "");
	}
	for (i = 0; i < p->nr_holders; i++) {
		const char *c;

		fprintf(f, "Holder: %lld %llu %llu ", (long long)p->holders[i].pid,
			(unsigned long long)(p->holders[i].bytes >> 10),
			(unsigned long long)p->holders[i].chunks);
		/* As the module escapes a name (the parser decodes it). */
		for (c = p->holders[i].comm; *c; c++)
			if (*c == '\n' || *c == '\\')
				fprintf(f, "\\%03o", (unsigned char)*c);
			else
				fputc(*c, f);
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
		  a->nr_maps == b->nr_maps, "read back: %zu/%zu/%zu, was %zu/%zu/%zu",
		  b->nr_fields, b->nr_holders, b->nr_maps, a->nr_fields,
		  a->nr_holders, a->nr_maps);
	for (i = 0; i < a->nr_fields; i++)
		FZ_ASSERT(!strcmp(a->fields[i].key, b->fields[i].key) &&
			  a->fields[i].value == b->fields[i].value &&
			  a->fields[i].unit == b->fields[i].unit,
			  "read back: field %s", a->fields[i].key);
	for (i = 0; i < a->nr_holders; i++)
		FZ_ASSERT(a->holders[i].pid == b->holders[i].pid &&
			  a->holders[i].bytes == b->holders[i].bytes &&
			  a->holders[i].chunks == b->holders[i].chunks &&
			  !strcmp(a->holders[i].comm, b->holders[i].comm),
			  "read back: holder #%zu", i);
	for (i = 0; i < a->nr_maps; i++)
		FZ_ASSERT(a->maps[i].node == b->maps[i].node &&
			  !strcmp(a->maps[i].cells, b->maps[i].cells),
			  "read back: map #%zu", i);
}

/* gpupoolctl's commands on the text, which parses. */
static void run_commands(const uint8_t *data, size_t size)
{
	const char units[] = { 'h', 'b', 'k', 'm', 'g' };
	struct opts o = { .unit = units[size % 5], .delay = 2.0 };
	int j;

	FZ_ASSERT(!ftruncate(proc_fd, 0) &&
		  pwrite(proc_fd, data, size, 0) == (ssize_t)size, "memfd write");
	for (j = 0; j < 2; j++) {
		o.json = j;
		FZ_ASSERT(cmd_stat(&o) == EX_OK, "stat (json %d)", j);
		FZ_ASSERT(top_once(&o, false) == EX_OK, "top (json %d)", j);
		FZ_ASSERT(cmd_map(&o) == EX_OK, "map (json %d)", j);
	}
	o.textfile = NULL;
	FZ_ASSERT(cmd_prometheus(&o) == EX_OK, "prometheus");
	fflush(stdout);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	proc_fd = memfd_create("fake-proc-gpupool", MFD_CLOEXEC);
	FZ_ASSERT(proc_fd >= 0, "memfd_create");
	snprintf(proc_name, sizeof(proc_name), "/proc/self/fd/%d", proc_fd);
	proc_path = proc_name;
	/* The commands' output: formatted, then thrown away. */
	FZ_ASSERT(freopen("/dev/null", "w", stdout), "stdout to /dev/null");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gpctl_pool p, q;
	size_t len = 0;
	char *text;
	int rc = gpctl_parse_proc((const char *)data, size, &p);

	if (rc) {
		FZ_ASSERT((rc == -EINVAL || rc == -ENOMEM) && !p.fields &&
			  !p.holders && !p.maps && !p.nr_fields &&
			  !p.nr_holders && !p.nr_maps,
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
	gpctl_pool_free(&p);
	FZ_ASSERT(!p.fields && !p.nr_fields, "gpctl_pool_free left fields");
	run_commands(data, size);
	return 0;
}
