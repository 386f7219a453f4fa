/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cgroup (v2) helpers for the in-VM tests of the module's per-cgroup
 * charging and limits (on top of pool_lib.h): the one place that mounts
 * the hierarchy, makes a test's cgroups and removes them again.
 *
 * The VM guest mounts no cgroup2: cg_setup() mounts it at /sys/fs/cgroup
 * when nothing is there, and it stays mounted (tests/lib/numa.c does the
 * same), so a later test finds it as this one left it.  Each test program
 * works in a subtree of its own, /sys/fs/cgroup/gpt-<name>; cg_setup()
 * first removes what a killed earlier run left there, and cg_teardown()
 * moves the caller back to the root cgroup, kills whatever still runs in
 * the subtree (cgroup.kill), removes it (deepest first) and puts the
 * root's subtree_control back as it found it.
 *
 * With env->dmem, every cgroup made here gets the dmem controller (+dmem
 * in each parent's cgroup.subtree_control, from the root down), so that
 * its dmem.max and dmem.current exist and the module's dmem region
 * ("gpupool") is charged there.  Processes then live only in leaves (the
 * no-internal-process rule); the tests keep to that in both modes.
 *
 * Also here: GPUPOOL_IOC_CGROUP wrappers (0 or -errno), the Cgroup lines
 * of /proc/gpupool, a limit set either way (the module's ioctl or
 * dmem.max), cg_fork_into() (a child born in a cgroup: no migration, which
 * is slow on the debug kernel), and "tenants": processes born in a cgroup
 * of their own, each with its own /dev/gpupool file, driven over a socket.
 */
#ifndef GPUPOOL_TESTS_VM_CGROUP_LIB_H
#define GPUPOOL_TESTS_VM_CGROUP_LIB_H

#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <linux/sched.h>	/* struct clone_args, CLONE_INTO_CGROUP */

#include "pool_lib.h"

#define CG_MNT			"/sys/fs/cgroup"
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif
#define CG_DMEM_REGION		"gpupool"

/* Write a string to a cgroupfs file: 0 or -errno. */
static inline int cg_write(const char *path, const char *val)
{
	return gp_write_file(path, val);
}

/* Is a cgroup2 hierarchy mounted at CG_MNT? */
static inline int cg_mounted(void)
{
	struct statfs s;

	return !statfs(CG_MNT, &s) && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Mount cgroup2 at CG_MNT unless it is there: 0 or -errno.  Left mounted. */
static inline int cg_mount(void)
{
	if (cg_mounted())
		return 0;
	if (mkdir(CG_MNT, 0755) && errno != EEXIST)
		return -errno;
	if (mount("none", CG_MNT, "cgroup2", 0, NULL))
		return -errno;
	return cg_mounted() ? 0 : -ENODEV;
}

/* Does the kernel offer the dmem controller (CONFIG_CGROUP_DMEM)? */
static inline int cg_has_dmem(void)
{
	char buf[512], *p;

	if (gp_read_file(CG_MNT "/cgroup.controllers", buf, sizeof(buf)) < 0)
		return 0;
	for (p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
		if (!strcmp(p, "dmem"))
			return 1;
	return 0;
}

/* Is the word in a cgroup.subtree_control-like file? */
static inline int cg_file_has_word(const char *path, const char *word)
{
	char buf[512], *p;

	if (gp_read_file(path, buf, sizeof(buf)) < 0)
		return 0;
	for (p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
		if (!strcmp(p, word))
			return 1;
	return 0;
}

struct cg_env {
	char base[128];		/* CG_MNT/gpt-<name> */
	char rel[128];		/* the same as /proc shows it: /gpt-<name> */
	int dmem;		/* give every cgroup the dmem controller */
	int dmem_enabled_root;	/* we wrote +dmem in the root's control */
};

/* path of a cgroup: rel NULL is the root, "" the test's base. */
static inline const char *cg_abs(const struct cg_env *env, const char *rel,
				 char *buf, size_t len)
{
	int n;

	if (!rel)
		n = snprintf(buf, len, "%s", CG_MNT);
	else if (!*rel)
		n = snprintf(buf, len, "%s", env->base);
	else
		n = snprintf(buf, len, "%s/%s", env->base, rel);
	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0';		/* too long: names nothing */
	return buf;
}

/* The cgroup's path as /proc/gpupool and /proc/self/cgroup show it. */
static inline const char *cg_rel(const struct cg_env *env, const char *rel,
				 char *buf, size_t len)
{
	if (!rel)
		snprintf(buf, len, "/");
	else if (!*rel)
		snprintf(buf, len, "%s", env->rel);
	else
		snprintf(buf, len, "%s/%s", env->rel, rel);
	return buf;
}

/* Move process pid (0: the caller) into a cgroup: 0 or -errno. */
static inline int cg_move(const struct cg_env *env, const char *rel, pid_t pid)
{
	char path[PATH_MAX], num[32];

	cg_abs(env, rel, path, sizeof(path) - 16);
	strcat(path, "/cgroup.procs");
	snprintf(num, sizeof(num), "%d", pid ? (int)pid : (int)getpid());
	return cg_write(path, num);
}

static inline int cg_enter(const struct cg_env *env, const char *rel)
{
	return cg_move(env, rel, 0);
}

/* Back to the root cgroup. */
static inline int cg_leave(void)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", (int)getpid());
	return cg_write(CG_MNT "/cgroup.procs", num);
}

/* Its id: the inode number of its directory.  0 on error. */
static inline uint64_t cg_id(const struct cg_env *env, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	if (stat(cg_abs(env, rel, path, sizeof(path)), &st))
		return 0;
	return st.st_ino;
}

/* An O_RDONLY | O_DIRECTORY fd of its directory, or -errno. */
static inline int cg_open(const struct cg_env *env, const char *rel)
{
	char path[PATH_MAX];
	int fd = open(cg_abs(env, rel, path, sizeof(path)),
		      O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Is the caller in this cgroup (the "0::PATH" line of /proc/self/cgroup)? */
static inline int cg_self_in(const struct cg_env *env, const char *rel)
{
	char buf[1024], want[300], *line, *save = NULL;

	if (gp_read_file("/proc/self/cgroup", buf, sizeof(buf)) <= 0)
		return 0;
	cg_rel(env, rel, want, sizeof(want));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "0::", 3))
			return !strcmp(line + 3, want);
	return 0;
}

/*
 * fork() straight into a cgroup (clone3() with CLONE_INTO_CGROUP, Linux
 * 5.7): no migration afterwards, which costs a write lock of every
 * thread group's rwsem (an RCU grace period: a second apiece on the debug
 * kernel under TCG).  Where clone3 cannot, fork() and move.  As fork():
 * the child's pid, 0 in the child, or -errno.
 */
static inline pid_t cg_fork_into(const struct cg_env *env, const char *rel)
{
	struct clone_args ca;
	int cgfd = cg_open(env, rel);
	long pid;

	if (cgfd < 0)
		return cgfd;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_INTO_CGROUP;
	ca.exit_signal = SIGCHLD;
	ca.cgroup = (uint64_t)cgfd;
	fflush(NULL);
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && (errno == ENOSYS || errno == E2BIG)) {
		pid = fork();
		if (!pid && cg_enter(env, rel))
			_exit(97);
	}
	close(cgfd);
	return pid < 0 ? -errno : (pid_t)pid;
}

/* cg_fork_into() as a forker of gp_child_start(): arg is a struct cg_in. */
struct cg_in {
	const struct cg_env *env;
	const char *rel;
};

static inline pid_t cg_fork_in(void *arg)
{
	const struct cg_in *c = arg;

	return cg_fork_into(c->env, c->rel);
}

/* Give a cgroup's children the dmem controller. */
static inline int cg_dmem_enable_below(const struct cg_env *env,
				       const char *rel)
{
	char path[PATH_MAX];

	cg_abs(env, rel, path, sizeof(path) - 32);
	strcat(path, "/cgroup.subtree_control");
	if (cg_file_has_word(path, "dmem"))
		return 0;
	return cg_write(path, "+dmem");
}

/*
 * Make a cgroup below the base (its parent must exist): 0 or -errno.  With
 * env->dmem, the parent hands the dmem controller down first.
 */
static inline int cg_make(const struct cg_env *env, const char *rel)
{
	char path[PATH_MAX], parent[PATH_MAX], *slash;
	int ret;

	if (env->dmem) {
		snprintf(parent, sizeof(parent), "%s", rel);
		slash = strrchr(parent, '/');
		if (slash)
			*slash = 0;
		ret = cg_dmem_enable_below(env, slash ? parent : "");
		if (ret)
			return ret;
	}
	if (mkdir(cg_abs(env, rel, path, sizeof(path)), 0755))
		return -errno;
	return 0;
}

/* Is anything running in the subtree (cgroup.events: populated)? */
static inline int cg_populated(const char *abs)
{
	char path[PATH_MAX], buf[256];

	snprintf(path, sizeof(path), "%s/cgroup.events", abs);
	if (gp_read_file(path, buf, sizeof(buf)) < 0)
		return 0;
	return strstr(buf, "populated 1") != NULL;
}

static inline int cg_rmdir_one(const char *path, const struct stat *st,
			       int flag, struct FTW *ftw)
{
	int i;

	(void)st;
	(void)ftw;
	if (flag != FTW_DP)
		return 0;
	/* EBUSY for a moment after the last task of it exits. */
	for (i = 0; i < 500 && rmdir(path) && errno == EBUSY; i++)
		usleep(10000);
	return 0;
}

/* Remove a test subtree: everything in it killed, deepest cgroups first. */
static inline void cg_destroy(const char *abs)
{
	char path[PATH_MAX];
	int i;

	if (access(abs, F_OK))
		return;
	snprintf(path, sizeof(path), "%s/cgroup.kill", abs);
	if (cg_populated(abs)) {
		if (cg_write(path, "1"))	/* before 5.14: none, try anyway */
			fprintf(stderr, "# %s: cannot kill: %s\n", path,
				strerror(errno));
		for (i = 0; i < 500 && cg_populated(abs); i++)
			usleep(10000);
	}
	nftw(abs, cg_rmdir_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Mount the hierarchy, clear what an earlier run of this test left, and
 * make the base cgroup (with the dmem controller down to it when dmem).
 * 0 or -errno.
 */
static inline int cg_setup(struct cg_env *env, const char *name, int dmem)
{
	int ret;

	memset(env, 0, sizeof(*env));
	snprintf(env->base, sizeof(env->base), "%s/gpt-%s", CG_MNT, name);
	snprintf(env->rel, sizeof(env->rel), "/gpt-%s", name);
	env->dmem = dmem;
	ret = cg_mount();
	if (ret)
		return ret;
	cg_leave();
	cg_destroy(env->base);
	if (dmem) {
		if (!cg_file_has_word(CG_MNT "/cgroup.subtree_control",
				      "dmem")) {
			ret = cg_write(CG_MNT "/cgroup.subtree_control",
				       "+dmem");
			if (ret)
				return ret;
			env->dmem_enabled_root = 1;
		}
	}
	if (mkdir(env->base, 0755))
		return -errno;
	return 0;
}

/* Undo cg_setup(): the caller back in the root cgroup, the subtree gone. */
static inline void cg_teardown(struct cg_env *env)
{
	if (!env->base[0])
		return;
	cg_leave();
	cg_destroy(env->base);
	if (env->dmem_enabled_root &&
	    cg_write(CG_MNT "/cgroup.subtree_control", "-dmem"))
		fprintf(stderr, "# cannot take dmem back from the root: %s\n",
			strerror(errno));
	env->base[0] = 0;
}

/*
 * Fixtures that run twice, once per way the module takes a limit: its own
 * table and dmem.  CG_VARIANTS(f) declares the variants; CG_SETUP(name),
 * in FIXTURE_SETUP of a fixture with `struct cg_env env; int fd;`, loads
 * the module for the variant (pool_size=48M), skips the dmem variant on a
 * kernel without the controller, makes the test's subtree and opens the
 * device.
 */
#define CG_VARIANTS(f)							\
	FIXTURE_VARIANT(f) {						\
		int dmem;						\
	};								\
	FIXTURE_VARIANT_ADD(f, module) {				\
		.dmem = 0,						\
	};								\
	FIXTURE_VARIANT_ADD(f, dmem) {					\
		.dmem = 1,						\
	}

#define CG_SETUP(name) do {						\
	char cg_params_[128];						\
	int cg_ret_;							\
									\
	GP_REQUIRE();							\
	cg_ret_ = cg_mount();						\
	if (cg_ret_)							\
		GP_SKIP("cannot mount cgroup2 at %s: %s", CG_MNT,	\
			strerror(-cg_ret_));				\
	if (variant->dmem && !cg_has_dmem())				\
		GP_SKIP("this kernel has no dmem cgroup controller (CONFIG_CGROUP_DMEM, Linux 6.14+; " CG_MNT "/cgroup.controllers lacks dmem): the module variant covers it"); \
	snprintf(cg_params_, sizeof(cg_params_),			\
		 "pool_size=48M cgroup_limits=%s",			\
		 variant->dmem ? "dmem" : "module");			\
	ASSERT_EQ(0, gp_load_1(cg_params_));				\
	ASSERT_EQ(0, cg_setup(&self->env, name, variant->dmem));	\
	self->fd = gp_open_dev();					\
	ASSERT_LE(0, self->fd);						\
} while (0)

/* GPUPOOL_IOC_CGROUP ----------------------------------------------------- */

/* One call: 0 or -errno; *c is the answer (filled in on success). */
static inline int cg_ioc(int devfd, int cgfd, uint32_t flags, uint64_t limit,
			 char *path, uint32_t len, struct gpupool_cgroup *c)
{
	memset(c, 0, sizeof(*c));
	c->flags = flags;
	c->cgroup_fd = cgfd;
	c->limit = limit;
	c->path_ptr = (uintptr_t)path;
	c->path_len = len;
	return gp_ioc(devfd, GPUPOOL_IOC_CGROUP, c);
}

static inline int cg_query(int devfd, int cgfd, struct gpupool_cgroup *c)
{
	return cg_ioc(devfd, cgfd, 0, 0, NULL, 0, c);
}

static inline int cg_set_limit(int devfd, int cgfd, uint64_t limit)
{
	struct gpupool_cgroup c;

	return cg_ioc(devfd, cgfd, GPUPOOL_CGROUP_SET_LIMIT, limit, NULL, 0,
		      &c);
}

static inline int cg_clear_limit(int devfd, int cgfd)
{
	struct gpupool_cgroup c;

	return cg_ioc(devfd, cgfd, GPUPOOL_CGROUP_CLEAR_LIMIT, 0, NULL, 0, &c);
}

/* The file's last refusal, with its path in path[len]. */
static inline int cg_last_denial(int devfd, char *path, uint32_t len,
				 struct gpupool_cgroup *c)
{
	return cg_ioc(devfd, -1, GPUPOOL_CGROUP_LAST_DENIAL, 0, path, len, c);
}

/* A cgroup's figures by name (rel as for cg_abs()): 0 or -errno. */
static inline int cg_figures(int devfd, const struct cg_env *env,
			     const char *rel, struct gpupool_cgroup *c)
{
	int ret, fd = cg_open(env, rel);

	if (fd < 0)
		return fd;
	ret = cg_query(devfd, fd, c);
	close(fd);
	return ret;
}

/* dmem.max / dmem.current / dmem.capacity ------------------------------ */

/*
 * The region's value in a dmem file of a cgroup (or, rel NULL, the root's
 * dmem.capacity): bytes, LLONG_MAX for "max", -1 when the file or the
 * region's line is missing.
 */
static inline long long cg_dmem_value(const struct cg_env *env,
				      const char *rel, const char *file)
{
	char path[PATH_MAX], buf[4096], *line, *save = NULL;
	size_t rlen = strlen(CG_DMEM_REGION);

	cg_abs(env, rel, path, sizeof(path) - 32);
	strcat(path, "/");
	strcat(path, file);
	if (gp_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, CG_DMEM_REGION, rlen) || line[rlen] != ' ')
			continue;
		if (!strcmp(line + rlen + 1, "max"))
			return LLONG_MAX;
		return atoll(line + rlen + 1);
	}
	return -1;
}

/* Set a cgroup's dmem.max for the region (bytes; ~0: "max"). */
static inline int cg_dmem_set_max(const struct cg_env *env, const char *rel,
				  uint64_t bytes)
{
	char path[PATH_MAX], val[64];

	cg_abs(env, rel, path, sizeof(path) - 32);
	strcat(path, "/dmem.max");
	if (bytes == GPUPOOL_NO_LIMIT)
		snprintf(val, sizeof(val), "%s max", CG_DMEM_REGION);
	else
		snprintf(val, sizeof(val), "%s %llu", CG_DMEM_REGION,
			 (unsigned long long)bytes);
	return cg_write(path, val);
}

/*
 * A limit on a cgroup, the way the loaded module takes it: dmem.max with
 * env->dmem, else GPUPOOL_CGROUP_SET_LIMIT (GPUPOOL_NO_LIMIT: cleared).
 */
static inline int cg_limit(int devfd, const struct cg_env *env,
			   const char *rel, uint64_t bytes)
{
	int ret, fd;

	if (env->dmem)
		return cg_dmem_set_max(env, rel, bytes);
	fd = cg_open(env, rel);
	if (fd < 0)
		return fd;
	ret = bytes == GPUPOOL_NO_LIMIT ? cg_clear_limit(devfd, fd) :
	      cg_set_limit(devfd, fd, bytes);
	close(fd);
	return ret;
}

/* /proc/gpupool's Cgroup lines ------------------------------------------ */

/* Cgroup: <kB> <chunks> <limit kB or -> <denials> <path> */
struct cg_line {
	long long kb, chunks;
	long long limit_kb;		/* -1: "-" */
	long long denials;
};

/* The line of a cgroup path in a /proc/gpupool text: 1 found, 0 not. */
static inline int cg_proc_line(const char *text, const char *path,
			       struct cg_line *l)
{
	const char *p = text, *end;
	char lim[32];
	int n;

	for (; (p = strstr(p, "\nCgroup: ")); p++) {
		n = 0;
		if (sscanf(p + 1, "Cgroup: %lld %lld %31s %lld %n", &l->kb,
			   &l->chunks, lim, &l->denials, &n) != 4 || !n)
			continue;
		end = strchr(p + 1 + n, '\n');
		if (!end)
			end = p + 1 + n + strlen(p + 1 + n);
		if ((size_t)(end - (p + 1 + n)) != strlen(path) ||
		    strncmp(p + 1 + n, path, strlen(path)))
			continue;
		l->limit_kb = strcmp(lim, "-") ? atoll(lim) : -1;
		return 1;
	}
	memset(l, 0, sizeof(*l));
	return 0;
}

/* How many Cgroup lines; with_chunks: only those with chunks charged. */
static inline int cg_proc_count(const char *text, int with_chunks)
{
	const char *p = text;
	long long kb, chunks;
	int n = 0;

	for (; (p = strstr(p, "\nCgroup: ")); p++)
		if (sscanf(p + 1, "Cgroup: %lld %lld", &kb, &chunks) == 2 &&
		    (!with_chunks || chunks))
			n++;
	return n;
}

/* A fresh read of /proc/gpupool (static buffer), or NULL. */
static inline const char *cg_proc(void)
{
	static char text[1 << 17];

	return gp_read_file(GP_PROC, text, sizeof(text)) > 0 ? text : NULL;
}

/* Tenants ------------------------------------------------------------------ */

/*
 * A tenant: a forked process that moved itself into a cgroup, opened
 * /dev/gpupool and does what it is told over a SOCK_SEQPACKET socket
 * (chunk fds travel along), one request, one answer.  It keeps up to
 * TN_SLOTS chunks: a handle of its file or an imported chunk fd, each
 * maybe mapped (TN_MAP of a mapped one only fills it again).
 */
#define TN_SLOTS	16

enum tn_op {
	TN_ALLOC,	/* arg: size -> val: slot */
	TN_FREE,	/* slot: GPUPOOL_IOC_FREE (a mapping stays) */
	TN_MAP,		/* slot, arg: byte to fill it with (>255: don't) */
	TN_CHECK,	/* slot, arg: every byte of the mapping equals it? */
	TN_UNMAP,	/* slot */
	TN_EXPORT,	/* slot -> a chunk fd comes back */
	TN_IMPORT,	/* (an fd comes along) -> val: slot */
	TN_CLOSE,	/* slot: close an imported fd */
	TN_DENIAL,	/* -> the file's LAST_DENIAL in c and path */
	TN_EXIT,
};

struct tn_req {
	int op, slot;
	uint64_t arg;
};

struct tn_rep {
	int ret;		/* 0 or -errno */
	int slot;
	uint64_t size;
	struct gpupool_cgroup c;
	char path[256];
};

struct tenant {
	pid_t pid;
	int sock;
};

struct tn_slot {
	int used;
	uint64_t handle;	/* of the tenant's file; 0: imported */
	int fd;			/* imported chunk fd, or -1 */
	uint64_t size;
	unsigned char *map;
};

static inline int tn_free_slot(struct tn_slot *s)
{
	int i;

	for (i = 0; i < TN_SLOTS; i++)
		if (!s[i].used)
			return i;
	return -1;
}

/*
 * Receive one message of len bytes and the fd that may come with it
 * (*fd, else -1): len, 0 at end of file, or -errno.
 */
static inline ssize_t tn_recv(int sock, void *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n && (size_t)n != len) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EBADMSG;
	}
	return n;
}

static inline void tn_serve(int sock, int devfd)
{
	struct tn_slot s[TN_SLOTS];
	struct gpupool_chunk_info ci;
	struct gpupool_alloc a;
	struct tn_req rq;
	struct tn_rep rp;
	int i, fd;

	memset(s, 0, sizeof(s));
	for (;;) {
		if (tn_recv(sock, &rq, sizeof(rq), &fd) <= 0)
			_exit(0);	/* the test is gone */
		memset(&rp, 0, sizeof(rp));
		i = rq.slot;
		if (rq.op != TN_ALLOC && rq.op != TN_IMPORT &&
		    rq.op != TN_DENIAL && rq.op != TN_EXIT &&
		    (i < 0 || i >= TN_SLOTS || !s[i].used)) {
			rp.ret = -EBADSLT;
			goto answer;
		}
		switch (rq.op) {
		case TN_ALLOC:
			i = tn_free_slot(s);
			if (i < 0) {
				rp.ret = -EMFILE;
				break;
			}
			rp.ret = gp_alloc_ex(devfd, rq.arg, 0, 0, &a);
			if (rp.ret)
				break;
			s[i].used = 1;
			s[i].handle = a.handle;
			s[i].fd = -1;
			s[i].size = a.chunk_size;
			rp.slot = i;
			rp.size = a.chunk_size;
			break;
		case TN_FREE:
			rp.ret = s[i].handle ? gp_free(devfd, s[i].handle) :
				 -EINVAL;
			if (!rp.ret) {
				s[i].handle = 0;
				if (!s[i].map)
					s[i].used = 0;
			}
			break;
		case TN_MAP:
			if (s[i].map) {
				if (rq.arg < 256)
					memset(s[i].map, (int)rq.arg, s[i].size);
				break;
			}
			s[i].map = mmap(NULL, s[i].size, PROT_READ | PROT_WRITE,
					MAP_SHARED, s[i].fd >= 0 ? s[i].fd : devfd,
					s[i].fd >= 0 ? 0 : (off_t)s[i].handle);
			if (s[i].map == MAP_FAILED) {
				s[i].map = NULL;
				rp.ret = -errno;
			} else if (rq.arg < 256) {
				memset(s[i].map, (int)rq.arg, s[i].size);
			}
			break;
		case TN_CHECK:
			rp.ret = s[i].map && gp_all_bytes(s[i].map, s[i].size,
					(unsigned char)rq.arg) ? 0 : -EILSEQ;
			break;
		case TN_UNMAP:
			if (!s[i].map || munmap(s[i].map, s[i].size)) {
				rp.ret = -EINVAL;
				break;
			}
			s[i].map = NULL;
			if (!s[i].handle && s[i].fd < 0)
				s[i].used = 0;
			break;
		case TN_EXPORT:
			fd = gp_export(devfd, s[i].handle, GPUPOOL_EXPORT_CLOEXEC);
			if (fd < 0) {
				rp.ret = fd;
				break;
			}
			rp.ret = gp_send_fd(sock, fd, &rp, sizeof(rp), 0);
			close(fd);
			if (rp.ret)
				_exit(3);
			continue;	/* answered with the fd */
		case TN_IMPORT:
			i = tn_free_slot(s);
			if (i < 0 || fd < 0) {
				rp.ret = fd < 0 ? -EBADMSG : -EMFILE;
				break;
			}
			memset(&ci, 0, sizeof(ci));
			rp.ret = gp_ioc(fd, GPUPOOL_IOC_CHUNK_INFO, &ci);
			if (rp.ret)
				break;
			s[i].used = 1;
			s[i].handle = 0;
			s[i].fd = fd;
			s[i].size = ci.size;
			rp.slot = i;
			rp.size = ci.size;
			fd = -1;
			break;
		case TN_CLOSE:
			if (s[i].fd < 0) {
				rp.ret = -EINVAL;
				break;
			}
			close(s[i].fd);
			s[i].fd = -1;
			if (!s[i].map && !s[i].handle)
				s[i].used = 0;
			break;
		case TN_DENIAL:
			rp.ret = cg_last_denial(devfd, rp.path,
						sizeof(rp.path), &rp.c);
			break;
		case TN_EXIT:
			_exit(0);
		default:
			rp.ret = -EINVAL;
		}
answer:
		if (fd >= 0)
			close(fd);
		if (send(sock, &rp, sizeof(rp), 0) != sizeof(rp))
			_exit(4);
	}
}

/*
 * Start a tenant in cgroup rel (rel as for cg_abs()): 0 or -errno.  It is
 * in the cgroup, with its file open, when this returns.
 */
static inline int tn_start(struct tenant *t, const struct cg_env *env,
			   const char *rel)
{
	int sv[2], devfd;
	struct tn_rep rp;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	t->pid = cg_fork_into(env, rel);
	if (t->pid < 0)
		return t->pid;
	if (!t->pid) {
		/* Nothing of the test's: no other tenant's socket, no file. */
		for (devfd = 3; devfd < 1024; devfd++)
			if (devfd != sv[1])
				close(devfd);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(&rp, 0, sizeof(rp));
		rp.ret = cg_self_in(env, rel) ? 0 : -ESRCH;
		devfd = gp_open_dev();
		if (!rp.ret && devfd < 0)
			rp.ret = -errno;
		if (send(sv[1], &rp, sizeof(rp), 0) != sizeof(rp) || rp.ret)
			_exit(2);
		tn_serve(sv[1], devfd);
		_exit(0);
	}
	close(sv[1]);
	t->sock = sv[0];
	if (recv(t->sock, &rp, sizeof(rp), 0) != sizeof(rp))
		return -EPIPE;
	return rp.ret;
}

/*
 * One request (fd: one to pass along, or -1); the answer in *rp (may be
 * NULL), the fd that came back (TN_EXPORT) in *out_fd.  Returns rp->ret,
 * or -EPIPE when the tenant is gone.
 */
static inline int tn_call(struct tenant *t, int op, int slot, uint64_t arg,
			  int fd, struct tn_rep *rp, int *out_fd)
{
	struct tn_req rq = { .op = op, .slot = slot, .arg = arg };
	struct tn_rep tmp;
	int ret;

	if (!rp)
		rp = &tmp;
	if (fd >= 0)
		ret = gp_send_fd(t->sock, fd, &rq, sizeof(rq), 0);
	else
		ret = send(t->sock, &rq, sizeof(rq), MSG_NOSIGNAL) == sizeof(rq) ?
		      0 : -EPIPE;
	if (ret)
		return -EPIPE;
	if (tn_recv(t->sock, rp, sizeof(*rp), &fd) != sizeof(*rp))
		return -EPIPE;
	if (fd >= 0) {
		if (out_fd)
			*out_fd = fd;
		else
			close(fd);
	}
	return rp->ret;
}

/* ALLOC in the tenant: the slot, or -errno. */
static inline int tn_alloc(struct tenant *t, uint64_t size)
{
	struct tn_rep rp;
	int ret = tn_call(t, TN_ALLOC, 0, size, -1, &rp, NULL);

	return ret ? ret : rp.slot;
}

/*
 * Stop a tenant (whatever it holds goes with it) and reap it: its exit
 * status (0: it exited as told), 128 + signal, or -errno.
 */
static inline int tn_stop(struct tenant *t)
{
	struct tn_req rq = { .op = TN_EXIT };
	int st = 0;

	if (t->pid <= 0)
		return 0;
	if (send(t->sock, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq))
		kill(t->pid, SIGKILL);
	close(t->sock);
	if (waitpid(t->pid, &st, 0) != t->pid)
		return -errno;
	t->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* GPUPOOL_TESTS_VM_CGROUP_LIB_H */
