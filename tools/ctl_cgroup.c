// SPDX-License-Identifier: MIT
/*
 * ctl_cgroup.c - a cgroup named on gpupoolctl's command line, and the
 * dmem controller's files in it.
 *
 * A cgroup is a directory of the cgroup2 file system, named by its path
 * under the cgroup2 mount (the first in /proc/self/mountinfo), by a path
 * inside that mount, or by fd:N; whatever names it, the directory is
 * opened and its file system checked (statfs: cgroup2, not cgroup v1, not
 * anything else) before anything uses it.  With the dmem controller, a
 * cgroup's limit on the pool is the line "gpupool <bytes>|max" of its
 * dmem.max; dmem.current holds its use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "ctl.h"

/* The cgroup2 mount ------------------------------------------------------ */

/* A mountinfo field's \ooo escapes (space, tab, newline, backslash). */
static void unescape_octal(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = 0;
}

/* "a//b/" -> "a/b"; "/" stays. */
static void tidy_path(char *p)
{
	char *r = p, *w = p;

	for (; *r; r++)
		if (*r != '/' || w == p || w[-1] != '/')
			*w++ = *r;
	while (w > p + 1 && w[-1] == '/')
		w--;
	*w = 0;
}

bool ctl_cgroup_mount(char *buf, size_t len)
{
	const char *env = ctl_env("GPUPOOL_CGROUP_MOUNT");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	if (env) {
		snprintf(buf, len, "%s", env);
		tidy_path(buf);
		return true;
	}
	snprintf(buf, len, "/sys/fs/cgroup");
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	/* id parent maj:min root mount-point options [tags] - type source ... */
	while (!found && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - "), *tok, *save = NULL;
		int n = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		*sep = 0;
		for (tok = strtok_r(line, " ", &save); tok && n < 4;
		     tok = strtok_r(NULL, " ", &save))
			n++;
		if (!tok)
			continue;
		unescape_octal(tok);
		if (strlen(tok) < len) {
			snprintf(buf, len, "%s", tok);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* path is mnt or below it. */
static bool under(const char *path, const char *mnt)
{
	size_t n = strlen(mnt);

	if (!strcmp(mnt, "/"))
		return path[0] == '/';
	return !strncmp(path, mnt, n) && (!path[n] || path[n] == '/');
}

/* The cgroup's name: its path under the mount ("/" for the root). */
void ctl_cgroup_name(const char *path, const char *mnt, char *name, size_t len)
{
	if (!under(path, mnt))
		snprintf(name, len, "%s", path);
	else if (!strcmp(mnt, "/"))
		snprintf(name, len, "%s", path);
	else
		snprintf(name, len, "%s", path[strlen(mnt)] ? path + strlen(mnt) : "/");
}

static const char *fs_name(unsigned long type)
{
	switch (type) {
	case TMPFS_MAGIC:		return "tmpfs";
	case EXT4_SUPER_MAGIC:		return "ext2/3/4";
	case XFS_SUPER_MAGIC:		return "xfs";
	case BTRFS_SUPER_MAGIC:		return "btrfs";
	case PROC_SUPER_MAGIC:		return "proc";
	case SYSFS_MAGIC:		return "sysfs";
	case OVERLAYFS_SUPER_MAGIC:	return "overlay";
	case NFS_SUPER_MAGIC:		return "nfs";
	case V9FS_MAGIC:		return "9p";
	default:			return NULL;
	}
}

/* Opening a cgroup ------------------------------------------------------- */

static void mount_hint(bool have_mnt, const char *mnt)
{
	if (have_mnt)
		fprintf(stderr, "  (a cgroup is a directory under the cgroup2 mount, %s)\n", mnt);
	else
		fprintf(stderr, "  (no cgroup2 file system is mounted; as root: mount -t cgroup2 none %s)\n",
			mnt);
}

/* "fd:N": a fresh O_RDONLY descriptor of that directory, or -1 (said). */
static int open_fd_arg(const char *arg, char *path, size_t len, int *ret)
{
	const char *s = arg + 3;
	char link[64];
	long n = 0;
	ssize_t l;
	int fd;

	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9) {
		fprintf(stderr, "gpupoolctl: '%s': fd:N wants the number of an open directory descriptor\n",
			arg);
		*ret = EX_USAGE;
		return -1;
	}
	n = strtol(s, NULL, 10);
	/* "." of it: a descriptor of our own, readable (an O_PATH one the
	 * module would refuse), and ENOTDIR for anything but a directory.
	 */
	fd = openat((int)n, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*ret = errno == EBADF ? EX_USAGE : EX_FAIL;
		if (errno == EBADF)
			fprintf(stderr, "gpupoolctl: %s: %ld is not an open file descriptor\n",
				arg, n);
		else if (errno == ENOTDIR)
			fprintf(stderr, "gpupoolctl: %s is not a directory: a cgroup is a directory of the cgroup2 file system\n",
				arg);
		else
			fprintf(stderr, "gpupoolctl: %s: %s\n", arg, strerror(errno));
		return -1;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%ld", n);
	l = readlink(link, path, len - 1);
	if (l > 0 && path[0] == '/')
		path[l] = 0;
	else
		snprintf(path, len, "%s", arg);
	return fd;
}

/*
 * A cgroup's name or path: a fresh O_RDONLY descriptor of that directory,
 * its path in path (PATH_MAX), or -1 with *ret (said).
 */
static int open_name_arg(const char *arg, bool have_mnt, const char *mnt,
			 char *path, int *ret)
{
	int fd, err;

	*ret = EX_USAGE;
	if (!*arg) {
		fprintf(stderr, "gpupoolctl: an empty cgroup name (the root is /)\n");
		return -1;
	}
	if (strlen(arg) >= PATH_MAX) {
		fprintf(stderr, "gpupoolctl: a cgroup's path is shorter than %d bytes\n",
			PATH_MAX);
		return -1;
	}
	if (arg[0] == '/' && under(arg, mnt)) {
		snprintf(path, PATH_MAX, "%s", arg);
	} else if (snprintf(path, PATH_MAX, "%s/%s", mnt, arg) >= PATH_MAX) {
		fprintf(stderr, "gpupoolctl: %s: the cgroup's path is too long\n", arg);
		return -1;
	} else if (arg[0] == '/' && access(path, F_OK) && !access(arg, F_OK)) {
		/* Not a cgroup's name, but a path that exists: the caller
		 * says what it is (not a directory, cgroup v1, ...).
		 */
		snprintf(path, PATH_MAX, "%s", arg);
	}
	tidy_path(path);
	*ret = EX_FAIL;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = errno;
	if (err == ENOENT) {
		fprintf(stderr, "gpupoolctl: no such cgroup: %s does not exist\n", path);
		mount_hint(have_mnt, mnt);
	} else if (err == ENOTDIR) {
		fprintf(stderr, "gpupoolctl: %s is not a directory\n", path);
		mount_hint(have_mnt, mnt);
	} else {
		fprintf(stderr, "gpupoolctl: cannot open %s: %s\n", path, strerror(err));
	}
	return -1;
}

/* fd (path) is a directory of a cgroup2 file system: EX_OK, or EX_FAIL
 * after saying what it is instead.
 */
static int check_cgroup2(int fd, const char *path, bool have_mnt, const char *mnt)
{
	struct statfs sfs;
	const char *fs;

	if (fstatfs(fd, &sfs)) {
		fprintf(stderr, "gpupoolctl: %s: %s\n", path, strerror(errno));
		return EX_FAIL;
	}
	if ((unsigned long)sfs.f_type == CGROUP_SUPER_MAGIC) {
		fprintf(stderr, "gpupoolctl: %s is in a cgroup v1 hierarchy: gpupool charges and limits\n"
			"  cgroups of cgroup v2 (the unified hierarchy) only.\n", path);
		if (have_mnt)
			fprintf(stderr, "  Name the cgroup under the cgroup2 mount, %s.\n", mnt);
		else
			mount_hint(have_mnt, mnt);
		return EX_FAIL;
	}
	if ((unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC) {
		fs = fs_name((unsigned long)sfs.f_type);
		if (fs)
			fprintf(stderr, "gpupoolctl: %s is not a cgroup: its file system is %s, not cgroup2\n",
				path, fs);
		else
			fprintf(stderr, "gpupoolctl: %s is not a cgroup: its file system (type %#lx) is not cgroup2\n",
				path, (unsigned long)sfs.f_type);
		mount_hint(have_mnt, mnt);
		return EX_FAIL;
	}
	return EX_OK;
}

int ctl_cgroup_open(const char *arg, struct ctl_cgroup *cg)
{
	char mnt[PATH_MAX], cand[PATH_MAX];
	bool have_mnt = ctl_cgroup_mount(mnt, sizeof(mnt));
	int ret = EX_FAIL, fd;

	memset(cg, 0, sizeof(*cg));
	cg->fd = -1;
	if (!strncmp(arg, "fd:", 3))
		fd = open_fd_arg(arg, cand, sizeof(cand), &ret);
	else
		fd = open_name_arg(arg, have_mnt, mnt, cand, &ret);
	if (fd < 0)
		return ret;
	ret = check_cgroup2(fd, cand, have_mnt, mnt);
	if (ret) {
		close(fd);
		return ret;
	}
	cg->fd = fd;
	snprintf(cg->path, sizeof(cg->path), "%s", cand);
	ctl_cgroup_name(cand, mnt, cg->name, sizeof(cg->name));
	return EX_OK;
}

/* dmem.max and dmem.current ---------------------------------------------- */

/* The whole of a small file under dirfd, NUL-terminated; NULL, errno set. */
static char *read_at(int dirfd, const char *file)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nb;
	ssize_t n;
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0 || !buf) {
		err = fd < 0 ? errno : ENOMEM;
		free(buf);
		if (fd >= 0)
			close(fd);
		errno = err;
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 < cap)
			continue;
		nb = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;
		if (!nb) {
			n = -1;
			errno = cap < (1u << 20) ? ENOMEM : EFBIG;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	err = errno;
	close(fd);
	if (n < 0) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

int ctl_dmem_read(int dirfd, const char *file, uint64_t *v)
{
	char *buf = read_at(dirfd, file), *line, *save = NULL;
	int ret = -ESRCH;

	if (!buf)
		return -errno;
	/* One "<region> <bytes>|max" line per region. */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name = line, *val = strpbrk(line, " \t"), *end;
		unsigned long long x;

		if (!val)
			continue;
		*val++ = 0;
		if (strcmp(name, DMEM_REGION))
			continue;
		val += strspn(val, " \t");
		if (!strcmp(val, "max")) {
			*v = GPCTL_NO_LIMIT;
			ret = 0;
			break;
		}
		errno = 0;
		x = strtoull(val, &end, 10);
		ret = (*val < '0' || *val > '9' || *end || errno) ? -EINVAL : 0;
		*v = x;
		break;
	}
	free(buf);
	return ret;
}

int ctl_dmem_set(const struct ctl_cgroup *cg, uint64_t bytes)
{
	char line[64];
	int fd, len, err;

	if (bytes == GPCTL_NO_LIMIT)
		len = snprintf(line, sizeof(line), DMEM_REGION " max\n");
	else
		len = snprintf(line, sizeof(line), DMEM_REGION " %llu\n",
			       (unsigned long long)bytes);
	fd = openat(cg->fd, "dmem.max", O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, (size_t)len) != len) {
		err = errno ? errno : EIO;
		close(fd);
		return -err;
	}
	return close(fd) ? -errno : 0;
}

/* The file at dir/file lists word (cgroup.controllers, subtree_control). */
static bool lists_word(const char *dir, const char *file, const char *word)
{
	char *buf, *tok, *save = NULL;
	bool found = false;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return false;
	buf = read_at(fd, file);
	close(fd);
	for (tok = buf ? strtok_r(buf, " \t\n", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, " \t\n", &save))
		found = !strcmp(tok, word);
	free(buf);
	return found;
}

/*
 * cg has no dmem.max: the controller is not enabled for it.  Which
 * cgroup.subtree_control files need "+dmem", from the root down (each
 * write needs the one above it done first).
 */
static void explain_no_dmem(const struct ctl_cgroup *cg)
{
	char mnt[PATH_MAX], dir[PATH_MAX];
	const char *rest;
	size_t n;
	int shown = 0;

	ctl_cgroup_mount(mnt, sizeof(mnt));
	fprintf(stderr, "gpupoolctl: %s has no dmem.max: the dmem controller is not enabled for it\n",
		cg->path);
	if (!under(cg->path, mnt)) {
		fprintf(stderr, "  Enable it in its parent: echo +dmem > <parent>/cgroup.subtree_control\n");
		return;
	}
	if (!strcmp(cg->name, "/")) {
		fprintf(stderr, "  The root cgroup has no dmem.max (as it has no memory.max): limits are\n"
			"  set on the cgroups below it.\n");
		return;
	}
	if (!lists_word(mnt, "cgroup.controllers", "dmem")) {
		fprintf(stderr, "  %s/cgroup.controllers has no dmem: this kernel has no dmem controller\n"
			"  (Linux 6.14 or later, CONFIG_CGROUP_DMEM).\n", mnt);
		return;
	}
	fprintf(stderr, "  Enable it from the top down (as root):\n");
	snprintf(dir, sizeof(dir), "%s", mnt);
	rest = cg->path + strlen(mnt);	/* "/a/b/c": ancestors mnt, /a, /a/b */
	if (!strcmp(mnt, "/"))
		rest = cg->path;
	for (;;) {
		if (!lists_word(dir, "cgroup.subtree_control", "dmem")) {
			fprintf(stderr, "    echo +dmem > %s%scgroup.subtree_control\n", dir,
				strcmp(dir, "/") ? "/" : "");
			shown++;
		}
		n = strcspn(rest + 1, "/") + 1;
		if (!rest[n])
			break;	/* rest is the cgroup itself */
		if (strlen(dir) + n >= sizeof(dir))
			break;
		strncat(dir, rest, n);
		tidy_path(dir);
		rest += n;
	}
	if (!shown)
		fprintf(stderr, "    (every ancestor's cgroup.subtree_control has dmem already: a threaded\n"
			"    cgroup, or one made while it was being enabled? look at %s)\n", cg->path);
}

void ctl_dmem_explain(const struct ctl_cgroup *cg, const char *file, int err)
{
	if (err == ENOENT) {
		explain_no_dmem(cg);
		return;
	}
	if (err == ESRCH) {
		fprintf(stderr, "gpupoolctl: %s/%s has no line for region " DMEM_REGION ": is the module\n"
			"  loaded with cgroup_limits=dmem or auto? (dmem.capacity at the root lists the regions)\n",
			cg->path, file);
		return;
	}
	fprintf(stderr, "gpupoolctl: %s/%s: %s\n", cg->path, file, strerror(err));
	if (err == EACCES || err == EPERM)
		fprintf(stderr, "  Writing dmem.max takes root, or a cgroup delegated to you.\n");
	else if (err == EINVAL)
		fprintf(stderr, "  The kernel refused the value (or the region " DMEM_REGION ").\n");
}
