// SPDX-License-Identifier: MIT
/*
 * cgroupfs.c - the cgroup whose dmem.max refused a chunk of gpupool.ko
 * (see cgroupfs.h): the cgroup2 mount from mountinfo, then dmem.max and
 * dmem.current from the task's cgroup up.
 *
 * What it reads comes from the kernel, but is treated as untrusted text:
 * any bytes, any length (files are read up to a cap), lines that do not
 * parse are skipped, numbers that overflow are refused, and no path with
 * "." or ".." components is followed, so that the walk only ever opens
 * files named dmem.max or dmem.current under the mount point.  Only
 * regular files are read (never a FIFO or a device that could block).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs.h"

#define GP_CG_MOUNTINFO_CAP	(4u << 20)	/* mountinfo read up to this */
#define GP_CG_DMEM_CAP		(64u << 10)	/* a dmem file, up to this */

/*
 * A file's text, NUL-terminated (a NUL inside ends it), at most cap - 1
 * bytes of it; NULL with errno set when it cannot be read or is not a
 * regular file.  The caller frees it.
 */
static char *gp_cg_slurp(const char *path, size_t cap)
{
	size_t len = 0, size = 4096;
	struct stat st;
	char *buf, *p;
	ssize_t n;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = malloc(size);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	for (;;) {
		if (len + 1 == size) {
			if (size >= cap)
				break;		/* the first cap - 1 bytes */
			size = size * 2 > cap ? cap : size * 2;
			p = realloc(buf, size);
			if (!p) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = p;
		}
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/* A mountinfo field with its \ooo escapes undone, into out (len bytes);
 * false when it does not fit.
 */
static bool gp_cg_unescape(const char *f, size_t flen, char *out, size_t len)
{
	size_t i, o = 0;
	unsigned int v;

	for (i = 0; i < flen; i++) {
		if (o + 1 >= len)
			return false;
		v = (unsigned char)f[i];
		if (f[i] == '\\' && i + 3 < flen &&
		    f[i + 1] >= '0' && f[i + 1] <= '3' &&
		    f[i + 2] >= '0' && f[i + 2] <= '7' &&
		    f[i + 3] >= '0' && f[i + 3] <= '7') {
			v = (unsigned int)(f[i + 1] - '0') << 6 |
			    (unsigned int)(f[i + 2] - '0') << 3 |
			    (unsigned int)(f[i + 3] - '0');
			if (v) {
				i += 3;
			} else {
				v = '\\';	/* \000: not a byte a path holds */
			}
		}
		out[o++] = (char)v;
	}
	out[o] = 0;
	return true;
}

/* Whether the cgroup at `root` holds cgroup `path` (itself or below). */
static bool gp_cg_holds(const char *root, const char *path)
{
	size_t n = strlen(root);

	if (!path || !strcmp(root, "/"))
		return true;
	while (n > 1 && root[n - 1] == '/')
		n--;
	return !strncmp(root, path, n) && (path[n] == 0 || path[n] == '/');
}

#define GP_CG_MAX_FIELDS	64

/*
 * One mountinfo line (NUL-terminated, no newline):
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
 * ID, parent, dev, root, mount point, options, optional fields, "-",
 * type, source, super options.  1 when it is a cgroup2 mount (m filled),
 * 0 when not, or when a field does not fit.
 */
static int gp_cg_mount_line(char *line, struct gp_cg_mount *m)
{
	const char *f[GP_CG_MAX_FIELDS];
	size_t flen[GP_CG_MAX_FIELDS];
	unsigned int n = 0, i, sep = 0;
	char *p = line;

	while (*p && n < GP_CG_MAX_FIELDS) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		f[n] = p;
		while (*p && *p != ' ')
			p++;
		flen[n] = (size_t)(p - f[n]);
		n++;
	}
	for (i = 6; i < n; i++)
		if (flen[i] == 1 && f[i][0] == '-') {
			sep = i;
			break;
		}
	/* "-", the type, the source, the super options */
	if (!sep || sep + 4 > n || flen[sep + 1] != 7 ||
	    strncmp(f[sep + 1], "cgroup2", 7))
		return 0;
	if (!gp_cg_unescape(f[3], flen[3], m->root, sizeof(m->root)) ||
	    !gp_cg_unescape(f[4], flen[4], m->dir, sizeof(m->dir)))
		return 0;
	return m->root[0] == '/' && m->dir[0] == '/';
}

static void gp_cg_default_mount(struct gp_cg_mount *m)
{
	snprintf(m->dir, sizeof(m->dir), "%s", GP_CG_DEFAULT_MOUNT);
	snprintf(m->root, sizeof(m->root), "/");
}

int gp_cg_find_mount(const char *mountinfo, const char *path,
		     struct gp_cg_mount *m)
{
	char *text = gp_cg_slurp(mountinfo ? mountinfo : GP_CG_MOUNTINFO,
				 GP_CG_MOUNTINFO_CAP);
	char *line, *next;
	bool listed = false;

	if (text) {
		for (line = text; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			if (!gp_cg_mount_line(line, m))
				continue;
			listed = true;
			if (gp_cg_holds(m->root, path)) {
				free(text);
				return 0;
			}
		}
		free(text);
	}
	gp_cg_default_mount(m);
	return listed ? -EXDEV : -ENOENT;
}

int gp_dmem_value(const char *text, uint64_t *val)
{
	const size_t rlen = sizeof(GP_CG_DMEM_REGION) - 1;
	const char *line, *p, *end;
	uint64_t v;

	for (line = text; line && *line; line = end ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (strncmp(line, GP_CG_DMEM_REGION, rlen) ||
		    (line[rlen] != ' ' && line[rlen] != '\t'))
			continue;
		p = line + rlen;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, "max", 3) && (p[3] == 0 || p[3] == '\n' ||
					      p[3] == ' ' || p[3] == '\t')) {
			*val = UINT64_MAX;
			return 0;
		}
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (v = 0; *p >= '0' && *p <= '9'; p++) {
			if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
				return -EINVAL;
			v = v * 10 + (uint64_t)(*p - '0');
		}
		if (*p && *p != '\n' && *p != ' ' && *p != '\t')
			return -EINVAL;
		*val = v;
		return 0;
	}
	return -ENOENT;
}

/* An absolute path without "." or ".." components, short enough. */
static bool gp_cg_path_ok(const char *path)
{
	const char *c = path, *e;
	size_t n;

	if (path[0] != '/' || strlen(path) >= GP_CG_PATH_MAX)
		return false;
	while (*c) {
		while (*c == '/')
			c++;
		e = strchrnul(c, '/');
		n = (size_t)(e - c);
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = e;
	}
	return true;
}

/* A dmem file of the cgroup whose directory is dir: 0 and *val, or a
 * negative errno (-ENOENT: no line for the region, or no file).
 */
static int gp_cg_read_dmem(const char *dir, const char *name, char *buf,
			   size_t len, uint64_t *val)
{
	char *text;
	int ret;

	if (snprintf(buf, len, "%s%s%s", dir,
		     dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/",
		     name) >= (int)len)
		return -ENAMETOOLONG;
	text = gp_cg_slurp(buf, GP_CG_DMEM_CAP);
	if (!text)
		return -errno;
	ret = gp_dmem_value(text, val);
	free(text);
	return ret;
}

/* The walk's scratch space (too large for a caller's stack). */
struct gp_cg_walk {
	struct gp_cg_mount m;
	char cur[GP_CG_PATH_MAX];	/* the cgroup looked at */
	char dir[GP_CG_PATH_MAX];	/* its directory */
	char file[GP_CG_PATH_MAX];	/* a file in it */
};

/*
 * One level of the walk: is cgroup w->cur (its directory w->dir) over its
 * dmem.max with request more?  0, hit filled in; -ENOENT when it is not,
 * or its files do not tell (the walk goes on up).
 */
static int gp_cg_level(struct gp_cg_walk *w, uint64_t request,
		       struct gp_dmem_hit *hit)
{
	uint64_t max, cur;
	int ret;

	hit->levels++;
	ret = gp_cg_read_dmem(w->dir, "dmem.max", w->file, sizeof(w->file),
			      &max);
	if (ret && ret != -ENOENT && !hit->read_error)
		hit->read_error = -ret;
	if (ret || max == UINT64_MAX)
		return -ENOENT;
	memcpy(hit->file, w->file, sizeof(hit->file));	/* dmem.max */
	ret = gp_cg_read_dmem(w->dir, "dmem.current", w->file, sizeof(w->file),
			      &cur);
	if (ret) {
		hit->file[0] = 0;
		return -ENOENT;
	}
	if (request <= max && cur <= max - request)
		return -ENOENT;
	memcpy(hit->path, w->cur, sizeof(hit->path));
	hit->max = max;
	hit->current = cur;
	return 0;
}

/* The parent cgroup's path in place of cur's; false when there is none
 * above "/" or above the mount's root (rootlen bytes of cur).
 */
static bool gp_cg_up(char *cur, size_t rootlen)
{
	size_t n = strlen(cur);

	if (n <= 1 || n <= rootlen)
		return false;
	while (n > 1 && cur[n - 1] != '/')
		n--;
	while (n > 1 && cur[n - 1] == '/')
		n--;
	cur[n] = 0;
	return n >= rootlen;
}

int gp_dmem_find(const char *mountinfo, const char *path, uint64_t request,
		 struct gp_dmem_hit *hit)
{
	struct gp_cg_walk *w;
	size_t rootlen, n;
	int ret;

	memset(hit, 0, sizeof(*hit));
	if (!path || !gp_cg_path_ok(path))
		return -EINVAL;
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	ret = gp_cg_find_mount(mountinfo, path, &w->m);
	if (ret == -EXDEV)
		goto out;
	/* The part of a path below the mount's root. */
	rootlen = strcmp(w->m.root, "/") ? strlen(w->m.root) : 0;
	while (rootlen > 1 && w->m.root[rootlen - 1] == '/')
		rootlen--;
	snprintf(w->cur, sizeof(w->cur), "%s", path);
	/* Trailing slashes name the same cgroup. */
	n = strlen(w->cur);
	while (n > 1 && w->cur[n - 1] == '/')
		w->cur[--n] = 0;

	ret = -ENOENT;
	while (hit->levels < GP_CG_MAX_DEPTH) {
		/* A cgroup that cannot be named is passed: its parent may be. */
		if (snprintf(w->dir, sizeof(w->dir), "%s%s", w->m.dir,
			     w->cur + rootlen) < (int)sizeof(w->dir)) {
			ret = gp_cg_level(w, request, hit);
			if (!ret)
				break;
		}
		if (!gp_cg_up(w->cur, rootlen))
			break;
	}
out:
	free(w);
	return ret;
}
