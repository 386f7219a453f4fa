// SPDX-License-Identifier: MIT
/*
 * gpupool_spank.c - a SPANK plugin that gives each Slurm job its share of
 * the node's gpupool pool: `--gpupool=SIZE` (srun, sbatch, salloc) becomes
 * a limit on the job's cgroup (job_<id> under Slurm's cgroup/v2 plugin),
 * set on each compute node by `gpupoolctl limit set` (so the module's own
 * limits and dmem.max work alike) before the job's first task runs.
 * `--gpupool-interpose[=strict|fallback]` puts libgpupool-interpose in the
 * job's tasks (LD_PRELOAD, after whatever is there, and its mode), so that
 * the pinned memory its frameworks ask of CUDA comes from the pool too,
 * within the share: strict (the default) fails what the pool cannot serve,
 * fallback lets CUDA serve it (docs/interpose.md).
 *
 * plugstack.conf arguments:
 *   default=SIZE     the share of a job that does not ask (none: no limit)
 *   max=SIZE         the largest share a job may ask, checked at submission
 *   interpose=MODE   the interposer for every job that does not ask: off
 *                    (the default), strict or fallback
 *   interposer=PATH  the interposer (default: where the package puts it)
 *   gpupoolctl=PATH  the gpupoolctl to run (default /usr/sbin/gpupoolctl)
 *   proc=PATH        /proc/gpupool (tests)
 *
 * The sizes are gpupoolctl's, the module's and the library's
 * (core/bfc_size.c through tools/ctl_common.c's parse_size, compiled in):
 * decimal bytes with an optional K, M, G or T (or KiB, MiB, GiB, TiB),
 * powers of 1024.
 * slurm/README.md says when each check runs and why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "bfc_size.h"		/* BFC_SIZE_MSG_LEN */
#include "../userlib/bytes.h"	/* the byte formatter the library uses too */
#include "ctl.h"		/* parse_size, CTL_SIZE_MAX */
#include "proc_parse.h"		/* gpctl_parse_proc */

#define EXPORT __attribute__((visibility("default")))

EXPORT const char plugin_name[] = "gpupool";
EXPORT const char plugin_type[] = "spank";
EXPORT const unsigned int plugin_version = SLURM_VERSION_NUMBER;
EXPORT const unsigned int spank_plugin_version = 1;

#define OPT_GPUPOOL	1
#define OPT_INTERPOSE	2
#define DEF_CTL		"/usr/sbin/gpupoolctl"
#define DEF_PROC	"/proc/gpupool"
#ifndef GPUPOOL_INTERPOSER
#define GPUPOOL_INTERPOSER "/usr/local/lib/gpupool/libgpupool-interpose.so"
#endif

/* What plugstack.conf said and what the job asked (per process). */
static struct {
	uint64_t def;		/* default=, 0: none */
	uint64_t max;		/* max=, 0: none */
	char max_text[64];	/* max= as plugstack.conf wrote it */
	const char *ctl;	/* gpupoolctl= */
	const char *proc;	/* proc= */
	const char *interposer;	/* interposer= */
	const char *ip_def;	/* interpose=: "off", "strict", "fallback" */
	const char *ip_req;	/* --gpupool-interpose[=MODE], NULL: not given */
	uint64_t req;		/* --gpupool=, 0: not given */
	char req_text[64];	/* as the user wrote it */
	int set_here;		/* this slurmstepd set the limit */
	char cgroup[PATH_MAX];	/* the job's cgroup, once found */
} gp = { .ctl = DEF_CTL, .proc = DEF_PROC, .interposer = GPUPOOL_INTERPOSER,
	 .ip_def = "off" };

/* ------------------------------------------------------------------------
 * The node's pool
 */

/*
 * What the pool on this host can give one job: the larger of what it holds
 * (PoolTotal) and what it may grow to (PoolLimit, max_size).  0 with
 * *present 0 when there is no /proc/gpupool (module not loaded); 0 with
 * *present 1 when it cannot be read.
 */
static uint64_t pool_capacity(int *present)
{
	struct gpctl_pool p;
	char *buf = NULL;
	size_t cap = 16384, len = 0, n;
	uint64_t total, lim;
	FILE *f = fopen(gp.proc, "r");

	*present = f != NULL || errno != ENOENT;
	if (!f)
		return 0;
	buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return 0;
	if (gpctl_parse_proc(buf, len, &p)) {
		free(buf);
		return 0;
	}
	free(buf);
	total = gpctl_value(&p, "PoolTotal");
	lim = gpctl_value(&p, "PoolLimit");
	gpctl_pool_free(&p);
	return lim > total ? lim : total;
}

/* A figure for a message: the library's and gpupoolctl's formatter
 * ("1.5 GiB"); sizes the user wrote are shown as written.
 */
static const char *human(char *buf, size_t len, uint64_t b)
{
	return gp_bytes_fmt(buf, len, b, GP_BYTES_PROSE);
}

/* ------------------------------------------------------------------------
 * Sizes: gpupoolctl's parser, with the option's words around its reasons
 */

static int size_arg(const char *what, const char *s, uint64_t *out)
{
	char why[BFC_SIZE_MSG_LEN];

	if (!s)
		s = "";
	if (*s && strspn(s, "0") == strspn(s, "0123456789") &&
	    strspn(s, "0123456789") == strlen(s)) {
		slurm_error("gpupool: %s=%s: 0 is not a share (a job's share of the pool is 1 byte or more; leave the option out for the default)",
			    what, s);
		return -1;
	}
	if (parse_size(what, s, out, why, sizeof(why))) {
		slurm_error("gpupool: %s", why);
		return -1;
	}
	return 0;
}

/* The request (text, as written) against max= and this host's pool; 0
 * when it may run.
 */
static int check_fits(uint64_t req, const char *text, const char *where)
{
	char b[32];
	int present;
	uint64_t cap;

	if (gp.max && req > gp.max) {
		slurm_error("gpupool: --gpupool=%s is more than a job may ask here (max=%s in plugstack.conf)",
			    text, gp.max_text);
		return -1;
	}
	cap = pool_capacity(&present);
	if (cap && req > cap) {
		slurm_error("gpupool: --gpupool=%s is more than the pool %s can give (%s: PoolTotal/PoolLimit %s)",
			    text, where, gp.proc, human(b, sizeof(b), cap));
		return -1;
	}
	return 0;
}

/* The option's callback: at submission (srun, sbatch, salloc) and again in
 * slurmstepd, where it only records the value (checked at task start).
 */
static int opt_cb(int val, const char *optarg, int remote)
{
	uint64_t v;

	(void)val;
	if (size_arg("--gpupool", optarg, &v))
		return -1;
	if (!remote && check_fits(v, optarg, "of this host"))
		return -1;
	gp.req = v;
	snprintf(gp.req_text, sizeof(gp.req_text), "%s", optarg);
	return 0;
}

static struct spank_option opt_gpupool = {
	"gpupool", "SIZE",
	"The job's share of each node's gpupool pool (K, M, G, T: powers of 1024): "
	"a limit on the job's cgroup that its gpupool allocations cannot pass.",
	1, OPT_GPUPOOL, opt_cb,
};

/* An interposer mode, or NULL (said, naming where it came from). */
static const char *ip_mode(const char *what, const char *v)
{
	static const char *const modes[] = { "off", "strict", "fallback" };
	unsigned int i;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(v, modes[i]))
			return modes[i];
	slurm_error("gpupool: %s%s: expected strict, fallback or off", what, v);
	return NULL;
}

static int opt_interpose_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	gp.ip_req = optarg && *optarg ?
		    ip_mode("--gpupool-interpose=", optarg) : "strict";
	return gp.ip_req ? 0 : -1;
}

static struct spank_option opt_interpose = {
	"gpupool-interpose", "[strict|fallback]",
	"Serve the pinned host memory the job's programs ask of CUDA (PyTorch, "
	"TensorFlow, JAX...) from the node's gpupool pool, within the job's share: "
	"strict (the default) fails what the pool cannot serve, fallback lets CUDA serve it.",
	2, OPT_INTERPOSE, opt_interpose_cb,
};

/* ------------------------------------------------------------------------
 * plugstack.conf's arguments
 */

static int parse_args(int ac, char **av)
{
	int i;

	for (i = 0; i < ac; i++) {
		if (!strncmp(av[i], "default=", 8)) {
			if (size_arg("plugstack.conf default", av[i] + 8, &gp.def))
				return -1;
		} else if (!strncmp(av[i], "max=", 4)) {
			if (size_arg("plugstack.conf max", av[i] + 4, &gp.max))
				return -1;
			snprintf(gp.max_text, sizeof(gp.max_text), "%s", av[i] + 4);
		} else if (!strncmp(av[i], "interpose=", 10)) {
			gp.ip_def = ip_mode("plugstack.conf interpose=", av[i] + 10);
			if (!gp.ip_def)
				return -1;
		} else if (!strncmp(av[i], "interposer=", 11) && av[i][11] == '/') {
			gp.interposer = av[i] + 11;
		} else if (!strncmp(av[i], "gpupoolctl=", 11) && av[i][11] == '/') {
			gp.ctl = av[i] + 11;
		} else if (!strncmp(av[i], "proc=", 5) && av[i][5] == '/') {
			gp.proc = av[i] + 5;
		} else {
			slurm_error("gpupool: plugstack.conf: unknown argument '%s' (default=SIZE, max=SIZE, interpose=MODE, interposer=/PATH, gpupoolctl=/PATH, proc=/PATH)",
				    av[i]);
			return -1;
		}
	}
	if (gp.def && gp.max && gp.def > gp.max) {
		slurm_error("gpupool: plugstack.conf: default= is more than max=");
		return -1;
	}
	return 0;
}

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av))
		return -1;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
	case S_CTX_ALLOCATOR:
		if (spank_option_register(sp, &opt_gpupool) != ESPANK_SUCCESS ||
		    spank_option_register(sp, &opt_interpose) != ESPANK_SUCCESS) {
			slurm_error("gpupool: cannot register --gpupool and --gpupool-interpose");
			return -1;
		}
		break;
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The compute node: the job's cgroup and gpupoolctl
 */

/*
 * The job's cgroup, from /proc/self/cgroup (the v2 line, "0::/path"): the
 * ancestor whose last component is job_<id>.  0, or -1 (said).
 */
static int job_cgroup(uint32_t jobid, char *out, size_t len)
{
	char line[PATH_MAX + 8], want[32], *p, *end;
	FILE *f = fopen("/proc/self/cgroup", "r");
	size_t wl;

	if (!f) {
		slurm_error("gpupool: /proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	wl = (size_t)snprintf(want, sizeof(want), "/job_%" PRIu32, jobid);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::/", 4))
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (p = line + 3; (p = strstr(p, want)); p++) {
			end = p + wl;
			if (*end == '/' || *end == '\0') {
				*end = '\0';
				fclose(f);
				if ((size_t)snprintf(out, len, "%s", line + 3) >= len)
					break;
				return 0;
			}
		}
		break;
	}
	fclose(f);
	slurm_error("gpupool: no cgroup job_%" PRIu32 " above this task's (/proc/self/cgroup has no such v2 path: is CgroupPlugin=cgroup/v2 in cgroup.conf?)",
		    jobid);
	return -1;
}

/*
 * Run gpupoolctl limit <verb> <cgroup> [size]: its errors to our stderr
 * (the job's, in slurmstepd's task), its stdout to /dev/null.  Its exit
 * status, or -1.
 */
static int run_ctl(const char *verb, const char *cg, const char *size)
{
	char *argv[] = { (char *)gp.ctl, "limit", (char *)verb, (char *)cg,
			 (char *)size, NULL };
	int st;
	pid_t pid, w;

	pid = fork();
	if (pid < 0) {
		slurm_error("gpupool: fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		int fd = open("/dev/null", O_RDONLY);

		/* its errors where the job's go; what it did, nowhere */
		if (fd >= 0) {
			dup2(fd, 0);
			close(fd);
		}
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			close(fd);
		}
		signal(SIGPIPE, SIG_DFL);
		execv(gp.ctl, argv);
		fprintf(stderr, "gpupool: cannot run %s: %s\n", gp.ctl, strerror(errno));
		_exit(127);
	}
	do
		w = waitpid(pid, &st, 0);
	while (w < 0 && errno == EINTR);
	if (w < 0) {
		slurm_error("gpupool: waitpid: %s", strerror(errno));
		return -1;
	}
	if (WIFSIGNALED(st)) {
		slurm_error("gpupool: %s limit %s %s: killed by signal %d",
			    gp.ctl, verb, cg, WTERMSIG(st));
		return -1;
	}
	return WEXITSTATUS(st);
}

static const char *ctl_status(int rc)
{
	switch (rc) {
	case 1: return "error (see above)";
	case 2: return "usage";
	case 3: return "the gpupool module is not loaded on this node";
	case 4: return "no permission";
	case 5: return "ABI mismatch between gpupoolctl and the module";
	case 127: return "gpupoolctl not found (gpupoolctl= in plugstack.conf)";
	default: return "failed";
	}
}

/*
 * In each task, as root, once the task is in the job's cgroup and before
 * it runs the user's program: set the job's limit.  Every task does (the
 * same value again): the tasks of a node start side by side, and none may
 * run its program before the limit is there.
 */
EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	uint32_t jobid = 0;
	uint64_t share = gp.req ? gp.req : gp.def;
	char size[32], a[32], b[32];
	int rc, present;
	uint64_t cap;

	(void)ac;
	(void)av;
	if (!share)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
		slurm_error("gpupool: no job id");
		return -1;
	}
	cap = pool_capacity(&present);
	if (!present) {
		if (!gp.req) {	/* only the default: the node has no pool */
			slurm_info("gpupool: %s: no pool on this node, default share not set",
				   gp.proc);
			return 0;
		}
		slurm_error("gpupool: --gpupool=%s: the gpupool module is not loaded on this node (%s)",
			    gp.req_text, gp.proc);
		return -1;
	}
	if (cap && share > cap) {
		slurm_error("gpupool: a share of %s is more than this node's pool can give (%s: PoolTotal/PoolLimit %s)",
			    human(a, sizeof(a), share), gp.proc,
			    human(b, sizeof(b), cap));
		return -1;
	}
	if (job_cgroup(jobid, gp.cgroup, sizeof(gp.cgroup)))
		return -1;
	snprintf(size, sizeof(size), "%" PRIu64, share);
	rc = run_ctl("set", gp.cgroup, size);
	if (rc) {
		slurm_error("gpupool: %s limit set %s %s: %s (exit status %d)",
			    gp.ctl, gp.cgroup, size,
			    rc < 0 ? "failed" : ctl_status(rc), rc);
		return -1;
	}
	slurm_verbose("gpupool: job %" PRIu32 ": limit %s on %s",
		      jobid, human(a, sizeof(a), share), gp.cgroup);
	return 0;
}

/*
 * In each task, as the job's user, just before it runs the user's
 * program: the interposer into its environment, when the job asked for it
 * or plugstack.conf says so for every job.  LD_PRELOAD keeps what is
 * there first (a sanitizer's runtime must be).  A job that asked, on a
 * node without the interposer, fails saying so.
 */
EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	const char *mode = gp.ip_req ? gp.ip_req : gp.ip_def;
	char old[4096] = "", val[4096 + PATH_MAX + 2];

	(void)ac;
	(void)av;
	if (!strcmp(mode, "off"))
		return 0;
	if (access(gp.interposer, R_OK)) {
		slurm_error("gpupool: --gpupool-interpose: no interposer at %s: %s (install libgpupool1, or interposer= in plugstack.conf)",
			    gp.interposer, strerror(errno));
		return gp.ip_req ? -1 : 0;
	}
	if (spank_getenv(sp, "LD_PRELOAD", old, sizeof(old)) != ESPANK_SUCCESS)
		old[0] = '\0';
	if (strstr(old, gp.interposer))
		snprintf(val, sizeof(val), "%s", old);
	else
		snprintf(val, sizeof(val), "%s%s%s", old, *old ? ":" : "",
			 gp.interposer);
	if (spank_setenv(sp, "LD_PRELOAD", val, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "GPUPOOL_INTERPOSE_MODE", mode, 1) != ESPANK_SUCCESS) {
		slurm_error("gpupool: cannot set the task's LD_PRELOAD");
		return -1;
	}
	return 0;
}

/*
 * In slurmd, as root, when the job ends on this node: clear the limit if
 * the job's cgroup is still there (the module drops a removed cgroup's
 * limit itself, and dmem.max goes with the cgroup).  Never fails the
 * epilog: the job is over either way.
 */
EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	uint32_t jobid = 0;
	char mnt[PATH_MAX], scope[PATH_MAX], cg[PATH_MAX], host[256];
	const char *cands[2];
	struct stat st;
	int i, n = 0;

	(void)ac;
	(void)av;
	/* Whether the job asked is not known here for sure (the option's
	 * callback does not run in the epilog's context): clear whatever
	 * limit the cgroup has, if the cgroup is there.
	 */
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return 0;
	/* The job's cgroup is <mount>/system.slice/<node>_slurmstepd.scope/
	 * job_<id>, or slurmstepd.scope without the node's name.
	 */
	if (!ctl_cgroup_mount(mnt, sizeof(mnt)))
		snprintf(mnt, sizeof(mnt), "/sys/fs/cgroup");
	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	snprintf(scope, sizeof(scope), "/system.slice/%s_slurmstepd.scope", host);
	cands[n++] = scope;
	cands[n++] = "/system.slice/slurmstepd.scope";
	for (i = 0; i < n; i++) {
		char full[PATH_MAX * 2];

		snprintf(cg, sizeof(cg), "%s/job_%" PRIu32, cands[i], jobid);
		snprintf(full, sizeof(full), "%s%s", mnt, cg);
		if (stat(full, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (run_ctl("clear", cg, NULL) == 0)
			slurm_verbose("gpupool: job %" PRIu32 ": limit on %s cleared",
				      jobid, cg);
		/* not there any more, or never set: nothing to do */
	}
	return 0;
}
