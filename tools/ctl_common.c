// SPDX-License-Identifier: MIT
/*
 * ctl_common.c - what gpupoolctl's commands share: reading /proc/gpupool,
 * errors that say what to do, byte counts written (fmt_size) and read
 * (parse_size), the environment (ctl_env), names escaped for a terminal, JSON and Prometheus, and
 * files replaced whole (ctl_atomic_open, ctl_atomic_commit).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/gpupool.h>

#include "bfc_size.h"		/* the size reader the module and the library use */
#include "ctl.h"
#include "../userlib/bytes.h"	/* the byte formatter the library uses too */

const char *proc_path = "/proc/gpupool";
const char *dev_path = "/dev/gpupool";

/* Errors that tell the user what to do -------------------------------------- */

int explain_open_error(const char *path, int err)
{
	struct stat st;

	fprintf(stderr, "gpupoolctl: cannot open %s: %s\n", path, strerror(err));
	if (err == ENOENT) {
		fprintf(stderr,
			"  The gpupool module is not loaded. Load it (as root) with:\n"
			"    modprobe gpupool pool_size=1G     (installed with DKMS)\n"
			"    insmod gpupool.ko pool_size=1G    (from a build tree)\n"
			"  Programs using libgpupool still work without it, on the\n"
			"  user backend (GPUPOOL_BACKEND=user).\n");
		return EX_NOMODULE;
	}
	if (err == EACCES || err == EPERM) {
		struct group *g = NULL;

		if (!stat(path, &st))
			g = getgrgid(st.st_gid);
		fprintf(stderr, "  %s is not accessible to you", path);
		if (g)
			fprintf(stderr, " (group '%s', mode %o).\n"
				"  Ask an administrator to add you to it:\n"
				"    usermod -aG %s $USER   (then log in again)\n",
				g->gr_name, st.st_mode & 0777, g->gr_name);
		else
			fprintf(stderr, ".\n");
		fprintf(stderr,
			"  The udev rule packaging/70-gpupool.rules gives a group access.\n");
		return EX_ACCESS;
	}
	return EX_FAIL;
}

/* Read /proc/gpupool whole and parse it. */
int read_pool(struct gpctl_pool *p)
{
	size_t cap = 16384, len = 0, n;
	char *buf = malloc(cap), *nb;
	FILE *f = fopen(proc_path, "r");
	int ret;

	if (!f) {
		ret = explain_open_error(proc_path, errno);
		free(buf);
		return ret;
	}
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	if (ferror(f)) {	/* not a format problem: say what it was */
		ret = errno;
		fclose(f);
		free(buf);
		fprintf(stderr, "gpupoolctl: reading %s: %s\n", proc_path,
			strerror(ret));
		return EX_FAIL;
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "gpupoolctl: out of memory\n");
		return EX_FAIL;
	}
	ret = gpctl_parse_proc(buf, len, p);
	free(buf);
	if (ret == -EINVAL) {
		fprintf(stderr,
			"gpupoolctl: %s is not in a format this gpupoolctl knows\n"
			"  (ABI %d.%d); the module is probably newer: upgrade the gpupool tools.\n",
			proc_path, GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
		return EX_ABI;
	}
	if (ret) {
		fprintf(stderr, "gpupoolctl: %s: %s\n", proc_path, strerror(-ret));
		return EX_FAIL;
	}
	return EX_OK;
}

int cgroup_by_bytes(const void *a, const void *b)
{
	const struct gpctl_cgroup *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->path, y->path);
}

/* Formatting ------------------------------------------------------------------ */

const char *fmt_size(char *buf, size_t len, uint64_t bytes, char unit)
{
	switch (unit) {
	case 'b': snprintf(buf, len, "%llu", (unsigned long long)bytes); break;
	case 'k': snprintf(buf, len, "%llu", (unsigned long long)(bytes >> 10)); break;
	case 'm': snprintf(buf, len, "%llu", (unsigned long long)(bytes >> 20)); break;
	case 'g': snprintf(buf, len, "%llu", (unsigned long long)(bytes >> 30)); break;
	default: gp_bytes_fmt(buf, len, bytes, GP_BYTES_COLUMN); break;
	}
	return buf;
}

int parse_size(const char *name, const char *s, uint64_t *out, char *msg,
	       size_t len)
{
	uint64_t v;

	if (bfc_size_parse(name, s, CTL_SIZE_MAX, &v, msg, len))
		return -1;
	if (!v) {
		snprintf(msg, len, "%s=%s: 0 is not a limit (to remove a limit: gpupoolctl limit clear CGROUP)",
			 name, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The variable's value, NULL when it is unset or empty. */
const char *ctl_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/*
 * A JSON string.  Command names may hold any byte: controls and every byte
 * above 0x7f (a name the kernel cut at 15 bytes may end inside a UTF-8
 * character) are written as \u00XX, so the output is valid JSON (ASCII)
 * whatever the name.
 */
void json_str_to(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void json_str(const char *s)
{
	json_str_to(stdout, s);
}

/*
 * A command name for a terminal: printable ASCII as it is, any other byte
 * (escape sequences, carriage returns, C1 controls) and the backslash as
 * \ooo, as the module writes them.  Any user names its own processes, and
 * root's `top` shows them all.
 */
void text_name(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c <= 0x7e && c != '\\')
			putchar(c);
		else
			printf("\\%03o", c);
	}
}

/* A Prometheus label value: only \\, \" and \n are escapes there, and the
 * text must be UTF-8; other bytes outside printable ASCII become the text
 * \ooo (an escaped backslash, then the octal digits).
 */
void prom_label(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c < 0x20 || c > 0x7e)
			fprintf(out, "\\\\%03o", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

/* Files replaced whole ---------------------------------------------------------- */

/* file's directory, made (0755) when missing (one level); 0 or -errno. */
static int make_parent(const char *file)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", file) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int ctl_atomic_open(struct ctl_atomic *w, const char *path, const char *opt,
		    bool make_dir)
{
	const char *base = strrchr(path, '/');
	int fd, err;

	w->f = NULL;
	w->path = path;
	base = base ? base + 1 : path;
	if (!*base) {
		fprintf(stderr, "gpupoolctl: %s %s: not a file name\n", opt, path);
		return EX_USAGE;
	}
	if (snprintf(w->tmp, sizeof(w->tmp), "%.*s.%s.XXXXXX", (int)(base - path),
		     path, base) >= (int)sizeof(w->tmp)) {
		fprintf(stderr, "gpupoolctl: %s: path too long\n", opt);
		return EX_USAGE;
	}
	err = make_dir ? make_parent(path) : 0;
	if (err) {
		fprintf(stderr, "gpupoolctl: %s %s: making its directory: %s\n",
			opt, path, strerror(-err));
		return EX_FAIL;
	}
	fd = mkstemp(w->tmp);
	if (fd < 0) {
		fprintf(stderr, "gpupoolctl: %s %s: %s\n", opt, path, strerror(errno));
		return EX_FAIL;
	}
	/* Readable by its readers (node_exporter, rootless podman), whatever
	 * the umask.
	 */
	if (fchmod(fd, 0644) || !(w->f = fdopen(fd, "w"))) {
		err = errno;
		close(fd);
		unlink(w->tmp);
		fprintf(stderr, "gpupoolctl: writing %s: %s\n", path, strerror(err));
		return EX_FAIL;
	}
	return EX_OK;
}

int ctl_atomic_commit(struct ctl_atomic *w)
{
	int err = 0;

	if (fflush(w->f) || ferror(w->f) || fsync(fileno(w->f)))
		err = errno ? errno : EIO;
	if (fclose(w->f) && !err)
		err = errno;
	w->f = NULL;
	if (!err && rename(w->tmp, w->path))
		err = errno;
	if (!err)
		return EX_OK;
	unlink(w->tmp);
	fprintf(stderr, "gpupoolctl: writing %s: %s\n", w->path, strerror(err));
	return EX_FAIL;
}
