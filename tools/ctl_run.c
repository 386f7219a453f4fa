// SPDX-License-Identifier: MIT
/*
 * ctl_run.c - `gpupoolctl run [OPTIONS] [--] COMMAND [ARGS...]`: run an
 * unmodified program with libgpupool-interpose preloaded, so that the
 * pinned host memory it asks of CUDA (cudaHostAlloc, cuMemHostAlloc, ...)
 * comes from the gpupool pool (docs/interpose.md).  It sets the
 * environment and exec()s the command, which keeps gpupoolctl's pid; its
 * exit status is the command's (127 when it cannot be run, as env(1)).
 *
 *   --mode fallback|strict   what the pool cannot serve goes to CUDA
 *                            (fallback, the default) or fails (strict)
 *   --stats FILE             the interposer appends each process's
 *                            figures to FILE when it exits
 *   --debug                  ... and prints them on stderr (GPUPOOL_DEBUG)
 *   --backend kernel|user    the pool's backend (default kernel: the
 *                            module's pool, its limits and its figures)
 *   --library PATH           the interposer (default: beside this
 *                            gpupoolctl in a build tree, else installed)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

#ifndef GPUPOOL_INTERPOSER
#define GPUPOOL_INTERPOSER "/usr/local/lib/gpupool/libgpupool-interpose.so"
#endif

struct run_opts {
	const char *mode, *stats, *backend, *library;
	int debug;
};

static void run_usage(FILE *out)
{
	fprintf(out,
		"usage: gpupoolctl run [--mode fallback|strict] [--stats FILE] [--debug]\n"
		"                      [--backend kernel|user] [--library PATH] [--] COMMAND [ARGS...]\n"
		"runs COMMAND with its CUDA pinned host allocations served by the gpupool pool\n");
}

/* The interposer: --library, $GPUPOOL_INTERPOSE_LIBRARY, the build tree's
 * (<O>/tools/gpupoolctl -> <O>/userlib/), the installed one.  quiet: say
 * nothing when there is none (cdi).
 */
int ctl_interposer(const char *given, char out[PATH_MAX], bool quiet)
{
	const char *env = ctl_env("GPUPOOL_INTERPOSE_LIBRARY");
	char self[PATH_MAX], tree[PATH_MAX + 64];
	ssize_t n;

	if (!given && env)
		given = env;
	if (!given) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		self[n > 0 ? n : 0] = 0;
		snprintf(tree, sizeof(tree), "%s/../userlib/libgpupool-interpose.so",
			 dirname(self));
		given = access(tree, R_OK) ? GPUPOOL_INTERPOSER : tree;
	}
	/* LD_PRELOAD takes a path relative to the command's directory. */
	if (!realpath(given, out) || access(out, R_OK)) {
		if (quiet)
			return EX_FAIL;
		fprintf(stderr, "gpupoolctl run: no interposer at %s: %s\n"
			"  (install libgpupool1, or name it with --library PATH)\n",
			given, strerror(errno));
		return EX_FAIL;
	}
	return EX_OK;
}

/* LD_PRELOAD with the interposer after what is there (a sanitizer's
 * runtime must stay first), once.
 */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int ret;

	if (old && strstr(old, lib))
		return 0;
	if (old && *old) {
		if (asprintf(&val, "%s:%s", old, lib) < 0)
			return -1;
		ret = setenv("LD_PRELOAD", val, 1);
		free(val);
		return ret;
	}
	return setenv("LD_PRELOAD", lib, 1);
}

static int one_of(const char *what, const char *v, const char *a,
		  const char *b)
{
	if (!strcmp(v, a) || !strcmp(v, b))
		return 0;
	fprintf(stderr, "gpupoolctl run: %s wants %s or %s, not '%s'\n", what,
		a, b, v);
	return -1;
}

/* Options up to the command: its index in argv, or -1 (said). */
static int parse_run(int argc, char **argv, struct run_opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **val = !strcmp(a, "--mode") ? &o->mode :
				   !strcmp(a, "--stats") ? &o->stats :
				   !strcmp(a, "--backend") ? &o->backend :
				   !strcmp(a, "--library") ? &o->library : NULL;

		if (!strcmp(a, "--"))
			return i + 1 < argc ? i + 1 : -1;
		if (a[0] != '-')
			return i;
		if (!strcmp(a, "--debug")) {
			o->debug = 1;
			continue;
		}
		if (!val || i + 1 >= argc) {
			fprintf(stderr, "gpupoolctl run: %s '%s'\n", val ?
				"missing the value of" : "unknown option", a);
			return -1;
		}
		*val = argv[++i];
	}
	return -1;
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o = { .mode = "fallback" };
	char lib[PATH_MAX];
	int cmd = parse_run(argc, argv, &o), ret;

	if (cmd < 0 || one_of("--mode", o.mode, "fallback", "strict") ||
	    (o.backend && one_of("--backend", o.backend, "kernel", "user"))) {
		run_usage(stderr);
		return EX_USAGE;
	}
	ret = ctl_interposer(o.library, lib, false);
	if (ret)
		return ret;
	if (set_preload(lib) ||
	    setenv("GPUPOOL_INTERPOSE_MODE", o.mode, 1) ||
	    (o.stats && setenv("GPUPOOL_INTERPOSE_STATS", o.stats, 1)) ||
	    (o.backend && setenv("GPUPOOL_BACKEND", o.backend, 1)) ||
	    (o.debug && setenv("GPUPOOL_DEBUG", "1", 1))) {
		fprintf(stderr, "gpupoolctl run: %s\n", strerror(errno));
		return EX_FAIL;
	}
	fflush(NULL);
	execvp(argv[cmd], argv + cmd);
	fprintf(stderr, "gpupoolctl run: cannot run '%s': %s\n", argv[cmd],
		strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
