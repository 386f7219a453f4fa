/* SPDX-License-Identifier: MIT */
/*
 * proc_parse.h - /proc/gpupool as data: every `Key: value` field, the
 * holder lines, the bin lines and the occupancy maps.  No I/O: the caller
 * reads the file and hands over the text (gpupoolctl does; so can a
 * fuzzer).  The format is described in docs/proc-gpupool.md.
 */
#ifndef GPUPOOL_PROC_PARSE_H
#define GPUPOOL_PROC_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define GPCTL_KEY_MAX	48
#define GPCTL_COMM_MAX	64
#define GPCTL_MAP_MAX	256

/* One `Key: value` line.  Sizes (` kB`) are stored in bytes. */
struct gpctl_field {
	char key[GPCTL_KEY_MAX];
	uint64_t value;
	char unit;		/* 'B' bytes (was kB), 'm' ms, 'p' ppm, 0 none */
	char text[16];		/* the value as written (AbiVersion: "1.0") */
};

struct gpctl_holder {
	int64_t pid;
	uint64_t bytes;
	uint64_t chunks;
	char comm[GPCTL_COMM_MAX];
};

struct gpctl_map {
	int node;
	char cells[GPCTL_MAP_MAX];	/* NUL-terminated */
};

struct gpctl_pool {
	struct gpctl_field *fields;
	size_t nr_fields;
	struct gpctl_holder *holders;
	size_t nr_holders;
	struct gpctl_map *maps;
	size_t nr_maps;
};

/*
 * Parse len bytes of text (need not be NUL-terminated).  0, or -ENOMEM, or
 * -EINVAL when the text is not /proc/gpupool (no AbiVersion line, or a line
 * that is none of the known shapes).  On success free with gpctl_pool_free();
 * on failure nothing is left allocated.
 */
int gpctl_parse_proc(const char *buf, size_t len, struct gpctl_pool *out);
void gpctl_pool_free(struct gpctl_pool *p);

/* The field named key, or NULL. */
const struct gpctl_field *gpctl_field(const struct gpctl_pool *p,
				      const char *key);
/* Its value, or 0 when absent. */
uint64_t gpctl_value(const struct gpctl_pool *p, const char *key);

#endif /* GPUPOOL_PROC_PARSE_H */
