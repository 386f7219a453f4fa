/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * trace.h - allocation traces for the benchmarks.
 *
 * Format (see bench/data/README.md), one event a line, '#' starts a comment
 * line, blank lines are ignored:
 *
 *	a,<id>,<size_bytes>,<stream or empty>,<t>	allocate
 *	f,<id>,<t>					free
 *
 * Only the first fields are read (a: id and size; f: id); anything after them
 * is ignored.  Ids are dense: the allocations of a trace carry the ids
 * 0..n-1, each exactly once (in any order); a free names an id allocated
 * earlier and not yet freed.  Allocations never freed stay live at the end.
 */
#ifndef BENCH_TRACE_H
#define BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* One operation: the id, with TRACE_FREE set for a free. */
#define TRACE_FREE	0x80000000u
#define TRACE_ID_MASK	0x7fffffffu

struct trace {
	char *path;		/* as given to trace_load() */
	char *name;		/* file name without directory and ".csv" */
	uint32_t nr_ops;	/* allocations + frees */
	uint32_t *ops;		/* nr_ops entries: id | TRACE_FREE for a free */
	uint32_t nr_ids;	/* number of allocations (ids 0..nr_ids-1) */
	uint64_t *size;		/* requested size of each id */
	uint32_t nr_frees;
	uint32_t nr_live_at_end;	/* allocated, never freed */

	/* Figures derived at load time (independent of any allocator). */
	uint64_t min_size, max_size;
	uint64_t peak_live_requested;	/* max over time of sum of sizes */
	uint32_t peak_live_chunks;
};

/* Load a trace.  On failure returns -1 and writes "path:line: reason" into
 * err (err_len bytes, NUL-terminated); *t is then left empty.  On success
 * returns 0; release with trace_free().
 */
int trace_load(const char *path, struct trace *t, char *err, size_t err_len);
void trace_free(struct trace *t);

/* Peak of the sum of live sizes, each rounded up to a multiple of gran (a
 * power of two).  This is the smallest pool a perfect packer needs at that
 * granularity.
 */
uint64_t trace_peak_live_rounded(const struct trace *t, uint64_t gran);

#endif /* BENCH_TRACE_H */
