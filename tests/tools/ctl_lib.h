/* SPDX-License-Identifier: MIT */
/*
 * ctl_lib.h - what the tools tests share: reading a file whole, running
 * the built gpupoolctl against a fixture standing in for /proc/gpupool,
 * and asking Python whether a text is JSON.
 */
#ifndef GPUPOOL_TESTS_TOOLS_CTL_LIB_H
#define GPUPOOL_TESTS_TOOLS_CTL_LIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "proc_parse.h"

/* The fixtures standing in for /proc/gpupool and the built gpupoolctl:
 * paths.c, compiled with the build's paths. */
extern const char fixture_2node[], fixture_cgroups[], fixture_dmem[];
extern const char ctl_bin[];
#define FIXTURE_FILE	fixture_2node
#define CGROUP_FIXTURE	fixture_cgroups
#define DMEM_FIXTURE	fixture_dmem
#define CTL_BIN		ctl_bin

/* The first 1 MiB - 1 of path, NUL-terminated; NULL if it cannot be read. */
static inline char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;

	if (!f)
		return NULL;
	buf = calloc(1, 1 << 20);
	*len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	return buf;
}

/* Run gpupoolctl with args against `proc`; its stdout+stderr, exit code. */
static inline char *ctl(const char *proc, const char *args, int *code)
{
	static char cmd[3 * 4096 + 256];
	char *out = calloc(1, 1 << 20);
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "GPUPOOL_PROC_PATH='%s' %s %s 2>&1", proc,
		 CTL_BIN, args);
	*code = -1;
	p = popen(cmd, "r");
	if (!p || !out)
		return out;
	n = fread(out, 1, (1 << 20) - 1, p);
	out[n] = 0;
	st = pclose(p);
	*code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

static inline int is_json(const char *out)
{
	FILE *p = popen("python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode())'", "w");

	if (!p)
		return 0;
	fputs(out, p);
	return pclose(p) == 0;
}

#endif /* GPUPOOL_TESTS_TOOLS_CTL_LIB_H */
