/* SPDX-License-Identifier: MIT */
/*
 * proc_parse.h - /proc/gpupool as data: every `Key: value` field, the
 * holder lines, the cgroup lines, the bin lines and the occupancy maps.
 * No I/O: the caller reads the file and hands over the text (gpupoolctl
 * does; so can a fuzzer).  The format is described in docs/proc-gpupool.md.
 */
#ifndef GPUPOOL_PROC_PARSE_H
#define GPUPOOL_PROC_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define GPCTL_KEY_MAX	48
#define GPCTL_COMM_MAX	64
#define GPCTL_MAP_MAX	256
/* A cgroup path, as the kernel's PATH_MAX bounds it (NUL included). */
#define GPCTL_PATH_MAX	4096
/* struct gpctl_cgroup's limit when the line says `-` (no limit). */
#define GPCTL_NO_LIMIT	UINT64_MAX

/* One `Key: value` line.  Sizes (` kB`) are stored in bytes. */
struct gpctl_field {
	char key[GPCTL_KEY_MAX];
	uint64_t value;
	/* 'B' bytes (was kB), 'm' ms, 'p' ppm, 0 none, 'w' a word (value 0,
	 * the word in text: CgroupLimits' "module" or "dmem")
	 */
	char unit;
	char text[16];		/* the value as written (AbiVersion: "1.0") */
};

struct gpctl_holder {
	int64_t pid;
	uint64_t bytes;
	uint64_t chunks;
	uint64_t idle;		/* of bytes, in chunks marked idle (ABI 1.2) */
	char comm[GPCTL_COMM_MAX];
};

/*
 * "Cgroup: <kB> <chunks> <limit kB or -> <denials> <path>": a cgroup's
 * share of the pool, its descendants' included.  path is the cgroup's path
 * with the module's \ooo escapes decoded (it may hold spaces, newlines,
 * any byte but NUL), malloc'ed, freed by gpctl_pool_free().
 */
struct gpctl_cgroup {
	uint64_t bytes;
	uint64_t chunks;
	uint64_t limit;		/* bytes; GPCTL_NO_LIMIT when `-` */
	uint64_t denials;	/* ALLOCs this cgroup's limit refused */
	char *path;
};

struct gpctl_map {
	int node;
	char cells[GPCTL_MAP_MAX];	/* NUL-terminated */
};

struct gpctl_pool {
	/* The module's ABI, from the AbiVersion line (1.2: holders' idle). */
	uint64_t abi_major, abi_minor;
	struct gpctl_field *fields;
	size_t nr_fields;
	struct gpctl_holder *holders;
	size_t nr_holders;
	struct gpctl_map *maps;
	size_t nr_maps;
	struct gpctl_cgroup *cgroups;	/* in the file's order (by path) */
	size_t nr_cgroups;
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
