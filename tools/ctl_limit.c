// SPDX-License-Identifier: MIT
/*
 * ctl_limit.c - gpupoolctl limit: per-cgroup limits on the pool.
 *
 *   gpupoolctl limit set CGROUP SIZE
 *   gpupoolctl limit clear CGROUP
 *   gpupoolctl limit show [CGROUP]
 *
 * Where a limit lives depends on the loaded module (GPUPOOL_IOC_VERSION's
 * features; /proc/gpupool's CgroupLimits says the same to anyone):
 *
 *  - the module's own table (GPUPOOL_FEATURE_CGROUP): set and cleared with
 *    GPUPOOL_IOC_CGROUP, which takes CAP_SYS_ADMIN in the initial user
 *    namespace; one cgroup's figures come from the same ioctl (anyone who
 *    can open /dev/gpupool), every limited cgroup from /proc/gpupool;
 *  - the dmem controller (GPUPOOL_FEATURE_DMEM, Linux 6.14+): the limit is
 *    the line "gpupool <bytes>|max" of the cgroup's dmem.max, written and
 *    read here; the module has nothing to set.
 *
 * A size is checked first, then the cgroup (ctl_cgroup.c: a directory of a
 * cgroup2 file system), then which limits the module has; nothing changes
 * unless all three are right.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/gpupool.h>

#include "bfc_size.h"
#include "ctl.h"

/* A figure dmem does not keep (chunks, denials): shown as "-". */
#define UNKNOWN		UINT64_MAX

/* Which limits: the module's table or dmem -------------------------------- */

static int too_old(const char *abi)
{
	fprintf(stderr, "gpupoolctl: the loaded gpupool module (ABI %s) does not charge cgroups:\n"
		"  per-cgroup limits need ABI 1.1 or later. Upgrade the gpupool module.\n", abi);
	return EX_ABI;
}

/*
 * EX_OK and *dmem; *devfd is /dev/gpupool open (the caller closes it), or
 * -1 when it cannot be opened by us (then /proc/gpupool told, and *dev_err
 * is why).  Any other failure: its exit code, said.
 */
static int limits_mode(bool *dmem, int *devfd, int *dev_err)
{
	struct gpupool_version v;
	const struct gpctl_field *f;
	struct gpctl_pool p;
	char abi[32];
	int fd = open(dev_path, O_RDWR | O_CLOEXEC), ret;

	*devfd = -1;
	if (fd < 0) {
		*dev_err = errno;
		if (errno != EACCES && errno != EPERM)
			return explain_open_error(dev_path, errno);
		/* Not ours to open: /proc/gpupool says the same to anyone. */
		ret = read_pool(&p);
		if (ret)
			return ret;
		f = gpctl_field(&p, "CgroupLimits");
		snprintf(abi, sizeof(abi), "%s", gpctl_field(&p, "AbiVersion")->text);
		*dmem = f && !strcmp(f->text, "dmem");
		gpctl_pool_free(&p);
		return f ? EX_OK : too_old(abi);
	}
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, GPUPOOL_IOC_VERSION, &v) < 0) {
		fprintf(stderr, "gpupoolctl: GPUPOOL_IOC_VERSION: %s\n", strerror(errno));
		close(fd);
		return EX_FAIL;
	}
	if (v.abi_major != GPUPOOL_ABI_MAJOR) {
		fprintf(stderr, "gpupoolctl: the module speaks ABI %u.%u, these tools %u.%u: upgrade the %s\n",
			v.abi_major, v.abi_minor, GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR,
			v.abi_major > GPUPOOL_ABI_MAJOR ? "gpupool tools (and libgpupool)" :
			"gpupool module");
		close(fd);
		return EX_ABI;
	}
	if (v.abi_minor < 1 || !(v.features & GPUPOOL_FEATURE_CGROUP)) {
		snprintf(abi, sizeof(abi), "%u.%u", v.abi_major, v.abi_minor);
		close(fd);
		return too_old(abi);
	}
	*dmem = v.features & GPUPOOL_FEATURE_DMEM;
	*devfd = fd;
	return EX_OK;
}

/* GPUPOOL_IOC_CGROUP on cg: 0 or -errno; the kernel's path in path. */
static int cg_ioctl(int devfd, const struct ctl_cgroup *cg, uint32_t flags,
		    uint64_t limit, struct gpupool_cgroup *out, char *path,
		    size_t len)
{
	memset(out, 0, sizeof(*out));
	out->flags = flags;
	out->cgroup_fd = cg->fd;
	out->limit = limit;
	out->path_ptr = (uintptr_t)path;
	out->path_len = (uint32_t)len;
	path[0] = 0;
	if (ioctl(devfd, GPUPOOL_IOC_CGROUP, out))
		return -errno;
	if (!path[0])
		snprintf(path, len, "%s", cg->name);
	return 0;
}

static int explain_ioctl_error(const struct ctl_cgroup *cg, const char *what, int err)
{
	fprintf(stderr, "gpupoolctl: %s %s: %s\n", what, cg->name, strerror(err));
	switch (err) {
	case EPERM:
		fprintf(stderr, "  Changing a limit needs CAP_SYS_ADMIN in the initial user namespace:\n"
			"  run it as root on the host (root in a container's user namespace is not).\n");
		return EX_ACCESS;
	case EOPNOTSUPP:
		fprintf(stderr, "  The module's limits are the dmem controller's: dmem.max of the cgroup.\n");
		break;
	case EBADF:
		fprintf(stderr, "  The module does not take %s for a cgroup v2 directory.\n", cg->path);
		break;
	}
	return EX_FAIL;
}

/* Showing ---------------------------------------------------------------- */

struct limit_row {
	char *cgroup;
	uint64_t limit, bytes, chunks, denials;	/* UNKNOWN: not kept */
};

/* ", \"key\": N", or null for UNKNOWN (= GPCTL_NO_LIMIT: no limit). */
static void json_figure(const char *key, uint64_t v)
{
	if (v == UNKNOWN)
		printf(", \"%s\": null", key);
	else
		printf(", \"%s\": %llu", key, (unsigned long long)v);
}

static void show_rows(const struct opts *o, bool dmem, const struct limit_row *r,
		      size_t nr, bool all)
{
	char b1[32], b2[32], b3[32];
	size_t i;

	if (o->json) {
		printf("{\"limits\": \"%s\", \"cgroups\": [", dmem ? "dmem" : "module");
		for (i = 0; i < nr; i++) {
			printf("%s{\"cgroup\": ", i ? ", " : "");
			json_str(r[i].cgroup);
			json_figure("limit", r[i].limit);
			json_figure("bytes", r[i].bytes);
			json_figure("chunks", r[i].chunks);
			json_figure("denials", r[i].denials);
			putchar('}');
		}
		printf("]}\n");
		return;
	}
	printf("limits: %s\n", dmem ? "dmem.max of region " DMEM_REGION " (the dmem controller)" :
	       "the module's own (gpupoolctl limit set)");
	if (!nr) {
		printf(all ? "  (no cgroup has a limit)\n" : "  (none)\n");
		return;
	}
	printf("%12s %12s %8s %8s  %s\n", "LIMIT", "USED", "CHUNKS", "DENIALS", "CGROUP");
	for (i = 0; i < nr; i++) {
		snprintf(b3, sizeof(b3), "%llu", (unsigned long long)r[i].chunks);
		printf("%12s %12s %8s ",
		       r[i].limit == GPCTL_NO_LIMIT ? "-" : fmt_size(b1, sizeof(b1), r[i].limit, o->unit),
		       r[i].bytes == UNKNOWN ? "-" : fmt_size(b2, sizeof(b2), r[i].bytes, o->unit),
		       r[i].chunks == UNKNOWN ? "-" : b3);
		if (r[i].denials == UNKNOWN)
			printf("%8s  ", "-");
		else
			printf("%8llu  ", (unsigned long long)r[i].denials);
		text_name(r[i].cgroup);
		putchar('\n');
	}
}

/* The chunks /proc/gpupool counts for cgroup name (dmem keeps none). */
static uint64_t proc_chunks(const struct gpctl_pool *p, const char *name)
{
	size_t i;

	for (i = 0; p && i < p->nr_cgroups; i++)
		if (!strcmp(p->cgroups[i].path, name))
			return p->cgroups[i].chunks;
	return UNKNOWN;
}

struct dmem_walk {
	struct limit_row *rows;
	size_t nr, cap;
	size_t files;		/* dmem.max files seen */
	const struct gpctl_pool *pool;
	const char *mnt;
	bool oom;
};

static int dir_only(const struct dirent *e)
{
	return e->d_name[0] != '.' &&
	       (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN);
}

/* Room for one more row at w->rows[w->nr], or NULL. */
static struct limit_row *new_row(struct dmem_walk *w)
{
	size_t cap = w->cap ? w->cap * 2 : 16;
	struct limit_row *rows;

	if (w->nr == w->cap) {
		rows = realloc(w->rows, cap * sizeof(*rows));
		if (!rows)
			return NULL;
		w->rows = rows;
		w->cap = cap;
	}
	return &w->rows[w->nr];
}

/* Every cgroup at and below path whose dmem.max for gpupool is not max. */
static void walk_dmem(struct dmem_walk *w, char *path, int depth)
{
	struct dirent **ents = NULL;
	uint64_t lim, cur;
	size_t len = strlen(path);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n, i, r;

	if (fd < 0)
		return;
	r = ctl_dmem_read(fd, "dmem.max", &lim);
	w->files += r != -ENOENT;
	if (!r && lim != GPCTL_NO_LIMIT) {
		struct limit_row *row = new_row(w);
		char name[PATH_MAX], *copy;

		ctl_cgroup_name(path, w->mnt, name, sizeof(name));
		copy = row ? strdup(name) : NULL;
		if (!copy) {
			w->oom = true;
		} else {
			row->cgroup = copy;
			row->limit = lim;
			row->bytes = ctl_dmem_read(fd, "dmem.current", &cur) ? UNKNOWN : cur;
			row->chunks = proc_chunks(w->pool, name);
			row->denials = UNKNOWN;
			w->nr++;
		}
	}
	close(fd);
	if (depth >= 64)
		return;
	n = scandir(path, &ents, dir_only, alphasort);
	for (i = 0; i < n; i++) {
		struct stat st;

		if (len + 1 + strlen(ents[i]->d_name) < PATH_MAX) {
			snprintf(path + len, PATH_MAX - len, "%s%s",
				 path[len - 1] == '/' ? "" : "/", ents[i]->d_name);
			if (!lstat(path, &st) && S_ISDIR(st.st_mode))
				walk_dmem(w, path, depth + 1);
			path[len] = 0;
		}
		free(ents[i]);
	}
	free(ents);
}

/* limit show, no cgroup: every limited cgroup (anyone: /proc, cgroupfs). */
static int show_all(const struct opts *o)
{
	const struct gpctl_field *f;
	struct limit_row *rows;
	struct gpctl_pool p;
	size_t i, nr = 0;
	int ret = read_pool(&p);

	if (ret)
		return ret;
	f = gpctl_field(&p, "CgroupLimits");
	if (!f) {
		ret = too_old(gpctl_field(&p, "AbiVersion")->text);
	} else if (!strcmp(f->text, "dmem")) {
		struct dmem_walk w = { .pool = &p };
		char mnt[PATH_MAX], path[PATH_MAX];

		ctl_cgroup_mount(mnt, sizeof(mnt));
		w.mnt = mnt;
		snprintf(path, sizeof(path), "%s", mnt);
		walk_dmem(&w, path, 0);
		if (w.oom)
			fprintf(stderr, "gpupoolctl: out of memory: not every cgroup is listed\n");
		show_rows(o, true, w.rows, w.nr, true);
		if (!w.files && !o->json)
			printf("  (no cgroup under %s has dmem.max: enable the controller with\n"
			       "   echo +dmem > %s/cgroup.subtree_control)\n", mnt, mnt);
		for (i = 0; i < w.nr; i++)
			free(w.rows[i].cgroup);
		free(w.rows);
	} else {
		rows = calloc(p.nr_cgroups + 1, sizeof(*rows));
		if (!rows) {
			fprintf(stderr, "gpupoolctl: out of memory\n");
			gpctl_pool_free(&p);
			return EX_FAIL;
		}
		for (i = 0; i < p.nr_cgroups; i++) {
			const struct gpctl_cgroup *c = &p.cgroups[i];

			if (c->limit == GPCTL_NO_LIMIT)
				continue;
			rows[nr].cgroup = c->path;
			rows[nr].limit = c->limit;
			rows[nr].bytes = c->bytes;
			rows[nr].chunks = c->chunks;
			rows[nr].denials = c->denials;
			nr++;
		}
		show_rows(o, false, rows, nr, true);
		free(rows);
	}
	gpctl_pool_free(&p);
	return ret;
}

/* limit show CGROUP */
static int show_one(const struct opts *o, const struct ctl_cgroup *cg, bool dmem,
		    int devfd)
{
	struct limit_row r = { .cgroup = (char *)cg->name, .chunks = UNKNOWN,
			       .denials = UNKNOWN };
	struct gpupool_cgroup q;
	char path[PATH_MAX];
	int err;

	if (dmem) {
		struct gpctl_pool p;
		bool have_pool = !read_pool(&p);

		err = -ctl_dmem_read(cg->fd, "dmem.max", &r.limit);
		if (err) {
			ctl_dmem_explain(cg, "dmem.max", err);
			if (have_pool)
				gpctl_pool_free(&p);
			return EX_FAIL;
		}
		if (ctl_dmem_read(cg->fd, "dmem.current", &r.bytes))
			r.bytes = UNKNOWN;
		r.chunks = proc_chunks(have_pool ? &p : NULL, cg->name);
		show_rows(o, true, &r, 1, false);
		if (have_pool)
			gpctl_pool_free(&p);
		return EX_OK;
	}
	err = -cg_ioctl(devfd, cg, 0, 0, &q, path, sizeof(path));
	if (err)
		return explain_ioctl_error(cg, "query", err);
	r.cgroup = path;
	r.limit = q.limit;
	r.bytes = q.usage;
	r.chunks = q.chunks;
	r.denials = q.denials;
	show_rows(o, false, &r, 1, false);
	return EX_OK;
}

/* limit set CGROUP SIZE, limit clear CGROUP (bytes GPCTL_NO_LIMIT) */
static int set_one(const struct ctl_cgroup *cg, bool dmem, int devfd, uint64_t bytes)
{
	struct gpupool_cgroup q;
	char path[PATH_MAX], b1[32], b2[32];
	bool clear = bytes == GPCTL_NO_LIMIT;
	uint64_t was;
	int err;

	if (dmem) {
		/* What it was, and a clear message when dmem is not on. */
		err = -ctl_dmem_read(cg->fd, "dmem.max", &was);
		if (!err)
			err = -ctl_dmem_set(cg, bytes);
		if (err) {
			ctl_dmem_explain(cg, "dmem.max", err);
			return err == EACCES || err == EPERM ? EX_ACCESS : EX_FAIL;
		}
		if (clear)
			printf("limit of %s cleared: wrote '" DMEM_REGION " max' to %s/dmem.max",
			       cg->name, cg->path);
		else
			printf("limit of %s set to %s (%llu bytes): wrote '" DMEM_REGION " %llu' to %s/dmem.max",
			       cg->name, fmt_size(b1, sizeof(b1), bytes, 'h'),
			       (unsigned long long)bytes, (unsigned long long)bytes, cg->path);
		printf(" (was %s)\n", was == GPCTL_NO_LIMIT ? "max" :
		       fmt_size(b2, sizeof(b2), was, 'h'));
		return EX_OK;
	}
	if (clear) {
		err = -cg_ioctl(devfd, cg, 0, 0, &q, path, sizeof(path));
		was = q.limit;
		if (!err)
			err = -cg_ioctl(devfd, cg, GPUPOOL_CGROUP_CLEAR_LIMIT, 0, &q,
					path, sizeof(path));
	} else {
		err = -cg_ioctl(devfd, cg, GPUPOOL_CGROUP_SET_LIMIT, bytes, &q, path,
				sizeof(path));
		was = 0;
	}
	if (err)
		return explain_ioctl_error(cg, clear ? "limit clear" : "limit set", err);
	if (clear && was == GPUPOOL_NO_LIMIT)
		printf("%s had no limit", path);
	else if (clear)
		printf("limit of %s cleared (was %s)", path, fmt_size(b1, sizeof(b1), was, 'h'));
	else
		printf("limit of %s set to %s (%llu bytes)", path,
		       fmt_size(b1, sizeof(b1), bytes, 'h'), (unsigned long long)bytes);
	printf("; it holds %s in %llu chunks\n", fmt_size(b2, sizeof(b2), q.usage, 'h'),
	       (unsigned long long)q.chunks);
	if (!clear && q.usage > bytes)
		printf("  (more than the new limit already: its chunks stay, and its allocations\n"
		       "  fail with ENOSPC until it holds less)\n");
	return EX_OK;
}

static int limit_usage(const char *why)
{
	fprintf(stderr, "gpupoolctl: limit: %s\n"
		"usage: gpupoolctl limit set CGROUP SIZE\n"
		"       gpupoolctl limit clear CGROUP\n"
		"       gpupoolctl limit show [CGROUP]\n", why);
	return EX_USAGE;
}

int cmd_limit(const struct opts *o)
{
	int argc = o->nargs;
	char **argv = o->args;
	struct ctl_cgroup cg;
	uint64_t bytes = GPCTL_NO_LIMIT;
	char why[BFC_SIZE_MSG_LEN];
	bool dmem = false;
	int ret, devfd = -1, dev_err = 0;

	if (argc < 1)
		return limit_usage("set, clear or show?");
	if (!strcmp(argv[0], "set")) {
		if (argc != 3)
			return limit_usage("set takes a cgroup and a size");
		if (parse_size("SIZE", argv[2], &bytes, why, sizeof(why))) {
			fprintf(stderr, "gpupoolctl: limit set: %s\n", why);
			return EX_USAGE;
		}
	} else if (!strcmp(argv[0], "clear")) {
		if (argc != 2)
			return limit_usage("clear takes a cgroup");
	} else if (!strcmp(argv[0], "show")) {
		if (argc > 2)
			return limit_usage("show takes at most a cgroup");
		if (argc == 1)
			return show_all(o);
	} else {
		snprintf(why, sizeof(why), "unknown subcommand '%.64s'", argv[0]);
		return limit_usage(why);
	}

	ret = ctl_cgroup_open(argv[1], &cg);
	if (ret)
		return ret;
	ret = limits_mode(&dmem, &devfd, &dev_err);
	if (!ret && !dmem && devfd < 0)
		ret = explain_open_error(dev_path, dev_err);
	if (!ret && !strcmp(argv[0], "show"))
		ret = show_one(o, &cg, dmem, devfd);
	else if (!ret)
		ret = set_one(&cg, dmem, devfd, bytes);
	if (devfd >= 0)
		close(devfd);
	close(cg.fd);
	return ret;
}
