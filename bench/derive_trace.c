// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * derive_trace.c - a new trace from an existing one (format: trace.h), to
 * check a result on traces it was not chosen on.
 *
 *   derive_trace scale NUM/DEN IN.csv OUT.csv
 *	Every size times NUM/DEN (rounded down, at least 1 byte); the order of
 *	events is kept.
 *
 *   derive_trace reverse IN.csv OUT.csv
 *	The trace run backwards: each free becomes the allocation of its id
 *	(same size) and each allocation its free; chunks the trace leaves live
 *	are allocated first.  Lifetimes stay intervals, so the peak live bytes
 *	and chunks are the same, met in the opposite order.
 *
 * The t field is the event's index (the benchmark does not read it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

static int usage(void)
{
	fprintf(stderr, "usage: derive_trace scale NUM/DEN IN.csv OUT.csv\n"
			"       derive_trace reverse IN.csv OUT.csv\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned long long num = 1, den = 1;
	const char *in, *out;
	struct trace t;
	char err[512];
	uint8_t *freed;
	uint32_t i, id, k = 0;
	int rev;
	FILE *f;

	if (argc == 5 && !strcmp(argv[1], "scale")) {
		if (sscanf(argv[2], "%llu/%llu", &num, &den) != 2 || !num || !den)
			return usage();
		rev = 0;
		in = argv[3];
		out = argv[4];
	} else if (argc == 4 && !strcmp(argv[1], "reverse")) {
		rev = 1;
		in = argv[2];
		out = argv[3];
	} else {
		return usage();
	}
	if (trace_load(in, &t, err, sizeof(err))) {
		fprintf(stderr, "derive_trace: %s\n", err);
		return 1;
	}
	freed = calloc(t.nr_ids ? t.nr_ids : 1, 1);
	f = fopen(out, "w");
	if (!freed || !f) {
		perror(out);
		return 1;
	}
	fprintf(f, "# a,<id>,<size_bytes>,<stream or empty>,<t>  |  f,<id>,<t>   (derive_trace %s%s%s of %s; t = event index)\n",
		argv[1], rev ? "" : " ", rev ? "" : argv[2], t.name);
	if (rev) {
		for (i = 0; i < t.nr_ops; i++)
			if (t.ops[i] & TRACE_FREE)
				freed[t.ops[i] & TRACE_ID_MASK] = 1;
		for (id = 0; id < t.nr_ids; id++)
			if (!freed[id])
				fprintf(f, "a,%u,%llu,,%u\n", id,
					(unsigned long long)t.size[id], k++);
		for (i = t.nr_ops; i-- > 0; k++) {
			id = t.ops[i] & TRACE_ID_MASK;
			if (t.ops[i] & TRACE_FREE)
				fprintf(f, "a,%u,%llu,,%u\n", id,
					(unsigned long long)t.size[id], k);
			else
				fprintf(f, "f,%u,%u\n", id, k);
		}
	} else {
		for (i = 0; i < t.nr_ops; i++) {
			unsigned long long s;

			id = t.ops[i] & TRACE_ID_MASK;
			if (t.ops[i] & TRACE_FREE) {
				fprintf(f, "f,%u,%u\n", id, i);
				continue;
			}
			s = (unsigned long long)t.size[id] * num / den;
			fprintf(f, "a,%u,%llu,,%u\n", id, s ? s : 1, i);
		}
	}
	free(freed);
	trace_free(&t);
	if (fclose(f)) {
		perror(out);
		return 1;
	}
	return 0;
}
