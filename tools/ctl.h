/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - what gpupoolctl's files share.  ctl_common.c: the paths, reading
 * /proc/gpupool, errors that say what to do, sizes written and read (the
 * one place that formats or parses a byte count), escaping of names and
 * files replaced whole.  ctl_cgroup.c: a cgroup named on the command line,
 * and its dmem files.  ctl_limit.c: the limit command.  ctl_cdi.c: the cdi
 * command (the CDI spec for container runtimes).  ctl_prometheus.c: the
 * prometheus command.  ctl_info.c: the info command.  ctl_run.c: the run
 * command (a program under the interposer).  gpupoolctl.c: the other
 * commands, the command table, main.
 */
#ifndef GPUPOOL_CTL_H
#define GPUPOOL_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "proc_parse.h"

/* Exit codes, also in the usage text and gpupoolctl(8). */
enum { EX_OK = 0, EX_FAIL = 1, EX_USAGE = 2, EX_NOMODULE = 3, EX_ACCESS = 4,
       EX_ABI = 5 };

/* /proc/gpupool and /dev/gpupool (GPUPOOL_PROC_PATH, GPUPOOL_DEV_PATH). */
extern const char *proc_path;
extern const char *dev_path;

struct opts {
	bool json;
	char unit;		/* 'h' human, 'b', 'k', 'm', 'g' */
	long iterations;	/* top: -n, 0 = until q */
	double delay;		/* top: -d seconds */
	const char *textfile;	/* prometheus: --textfile DIR */
	long max_cgroups;	/* prometheus: --max-cgroups N */
	const char *output;	/* cdi: --output FILE */
	const char *cdi_version; /* cdi: --cdi-version V */
	int nargs;		/* the command's operands (limit: set ...) */
	char **args;
};

/* The largest limit `limit set` takes: 2^63 bytes (8 EiB). */
#define CTL_SIZE_MAX	(1ull << 63)

/* Print why path cannot be opened (err) and what to do; the exit code. */
int explain_open_error(const char *path, int err);
/* Read /proc/gpupool whole and parse it: EX_OK, or an exit code (said). */
int read_pool(struct gpctl_pool *p);

/* bytes in unit ('h' human-readable, 'b', 'k', 'm', 'g'), into buf. */
const char *fmt_size(char *buf, size_t len, uint64_t bytes, char unit);
/*
 * A size as the module and the library take it (core/bfc_size.h: digits
 * and an optional K, M, G, T, KiB, MiB, GiB or TiB), from 1 byte to
 * CTL_SIZE_MAX, named name in the message: 0, or -1 with msg ("name=s:
 * why; a size is ...", BFC_SIZE_MSG_LEN bytes are enough).
 */
int parse_size(const char *name, const char *s, uint64_t *out, char *msg,
	       size_t len);
/* The variable's value, NULL when it is unset or empty. */
const char *ctl_env(const char *name);

/* A JSON string (ASCII; other bytes as \u00XX) on stdout, or on out. */
void json_str(const char *s);
void json_str_to(FILE *out, const char *s);
/* A name for a terminal: printable ASCII as is, other bytes as \ooo. */
void text_name(const char *s);
/* qsort's order of struct gpctl_cgroup: the largest first; the same
 * bytes by path.
 */
int cgroup_by_bytes(const void *a, const void *b);
/* A Prometheus label value, quoted and escaped. */
void prom_label(FILE *out, const char *s);

/*
 * A file replaced whole: ctl_atomic_open() makes a temporary file beside
 * path, named ".NAME.XXXXXX" (it ends in neither .prom nor .json, which
 * the file's readers would take), mode 0644 whatever the umask, with
 * path's directory first when make_dir and it is missing (one level); the
 * caller writes to f; ctl_atomic_commit() flushes it, syncs it and renames
 * it over path, so that a reader sees the old file or the new one, never
 * a part.  The temporary file never stays behind.
 */
struct ctl_atomic {
	FILE *f;		/* open between the two calls */
	const char *path;
	char tmp[PATH_MAX];
};
/* EX_OK with w->f open, or EX_USAGE / EX_FAIL after saying why (opt: the
 * option that named path, for the messages).
 */
int ctl_atomic_open(struct ctl_atomic *w, const char *path, const char *opt,
		    bool make_dir);
/* EX_OK, or EX_FAIL after saying why; w->f is closed either way. */
int ctl_atomic_commit(struct ctl_atomic *w);

/* `gpupoolctl run ...` (argv[0] is "run"): an exit code, when it could
 * not exec() the command.
 */
int cmd_run(int argc, char **argv);
/* The interposer's path (the one given, or found as `run` finds it) into
 * out: EX_OK, or EX_FAIL (said unless quiet) when there is none.
 */
int ctl_interposer(const char *given, char out[PATH_MAX], bool quiet);

/* The dmem region the module registers (dmem.max: "gpupool <bytes>"). */
#define DMEM_REGION	"gpupool"

/* A cgroup named on the command line, open. */
struct ctl_cgroup {
	int fd;			/* O_RDONLY | O_DIRECTORY */
	char path[PATH_MAX];	/* where it is in the file system */
	char name[PATH_MAX];	/* its path under the cgroup2 mount, "/..." */
};

/*
 * The cgroup2 mount point: $GPUPOOL_CGROUP_MOUNT, else the first cgroup2
 * file system in /proc/self/mountinfo, else /sys/fs/cgroup.  true when one
 * was found (or named).
 */
bool ctl_cgroup_mount(char *buf, size_t len);
/*
 * Open the cgroup arg names: a path under the cgroup2 mount ("/a/b" or
 * "a/b"), an absolute path inside that mount, or "fd:N".  EX_OK, or an
 * exit code after saying why (no such path, not a directory, not cgroup2,
 * cgroup v1).
 */
int ctl_cgroup_open(const char *arg, struct ctl_cgroup *cg);
/* path's name under the mount mnt ("/" for mnt itself), into name. */
void ctl_cgroup_name(const char *path, const char *mnt, char *name, size_t len);
/*
 * The dmem controller's figure of region "gpupool" in file (dmem.max,
 * dmem.current) of the directory dirfd: 0 with *v (GPCTL_NO_LIMIT for
 * "max"), -ENOENT (no such file: the controller is not enabled there),
 * -ESRCH (no gpupool line), -EINVAL (not dmem's format) or another -errno.
 */
int ctl_dmem_read(int dirfd, const char *file, uint64_t *v);
/* dmem.max of cg for region gpupool := bytes (GPCTL_NO_LIMIT: "max"):
 * 0 or -errno.
 */
int ctl_dmem_set(const struct ctl_cgroup *cg, uint64_t bytes);
/*
 * Say why file (dmem.max, dmem.current) of cg failed with err (positive):
 * for ENOENT, which cgroup.subtree_control files need "+dmem".
 */
void ctl_dmem_explain(const struct ctl_cgroup *cg, const char *file, int err);

/* gpupoolctl info. */
int cmd_info(const struct opts *o);
/* gpupoolctl limit set|clear|show ...: o->args, the words after "limit". */
int cmd_limit(const struct opts *o);
/* gpupoolctl cdi [--output FILE] [--cdi-version V]. */
int cmd_cdi(const struct opts *o);
/* gpupoolctl prometheus [--textfile DIR] [--max-cgroups N]. */
int cmd_prometheus(const struct opts *o);

#endif /* GPUPOOL_CTL_H */
