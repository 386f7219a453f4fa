// SPDX-License-Identifier: MIT
/*
 * kernel.c - host segments from gpupool.ko: each segment is one
 * chunk (GPUPOOL_IOC_ALLOC), mapped with mmap(fd, handle) and given back
 * with munmap + GPUPOOL_IOC_FREE.  The module's pages are pinned already, so
 * nothing counts against RLIMIT_MEMLOCK; the module enforces its own
 * per-process limit (-EDQUOT).
 *
 * A cgroup limit that refuses a chunk (-ENOSPC, ABI 1.1) is named with the
 * module's record of the refusal (GPUPOOL_IOC_CGROUP, LAST_DENIAL), or,
 * where the limit is the dmem controller's, by reading dmem.max and
 * dmem.current up from the task's cgroup (cgroupfs.c).
 *
 * With a module of ABI 1.2 (GPUPOOL_FEATURE_RECLAIM) the library's idle
 * segments circulate: kernel_reclaim.c tells the module which are idle
 * and hears which it asks back, and a refusal's message says what was
 * idle where.
 *
 * On open the library asks GPUPOOL_IOC_VERSION and refuses a module it
 * cannot talk to, saying which side is too old.  Exported chunks are
 * descriptors of their own (GPUPOOL_IOC_EXPORT); an importer sizes them with
 * GPUPOOL_IOC_CHUNK_INFO, on either backend (host/share.c decides).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <linux/gpupool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "backend/backend.h"
#include "backend/cgroupfs.h"
#include "backend/kernel.h"
#include "host/seg.h"

/*
 * Does the module map a chunk's whole 2 MiB blocks with 2 MiB entries
 * (/proc/gpupool's HugeMaps: 1)?  A module without the field does not.
 */
static bool gp_kernel_read_huge_maps(void)
{
	char text[4096];
	const char *p;
	size_t n = 0;
	FILE *f = fopen("/proc/gpupool", "re");

	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	text[n] = 0;
	p = strstr(text, "\nHugeMaps:");
	return p && strtoul(p + strlen("\nHugeMaps:"), NULL, 10) == 1;
}

/*
 * A chunk just mapped at seg: in part on 2 MiB entries where the module
 * maps so and the chunk holds a whole 2 MiB-aligned block (the module
 * places a mapping so that the chunk's whole blocks are aligned), which
 * gp_info's hugepages and gp_host_stats' segments_huge count.  A context
 * that never uses huge pages (GP_OPEN_NO_HUGEPAGES) turns them off for the
 * mapping: MADV_NOHUGEPAGE, 4 KiB entries.
 */
static void gp_kernel_seg_pages(struct gp_ctx *ctx, struct gp_seg *seg)
{
	uint64_t first = (seg->addr + GP_HUGE_PAGE - 1) &
			 ~(uint64_t)(GP_HUGE_PAGE - 1);
	bool huge = ctx->ops == &gp_backend_kernel ?
		    gp_kernel_of(ctx)->huge_maps : gp_kernel_read_huge_maps();

	seg->huge = false;
	if (!huge || first + GP_HUGE_PAGE > seg->addr + seg->size)
		return;
	if (ctx->opt.flags & GP_OPEN_NO_HUGEPAGES) {
		if (madvise((void *)(uintptr_t)seg->addr, seg->size,
			    MADV_NOHUGEPAGE))
			gp_debug(ctx, "MADV_NOHUGEPAGE on a gpupool chunk: %s",
				 strerror(errno));
		return;
	}
	seg->huge = true;
}

/*
 * /dev/gpupool opened: its descriptor; else -errno, why (len bytes) says
 * what was wrong and, when the kernel backend was asked for (forced), the
 * context's message too.
 */
static int gp_kernel_open_dev(struct gp_ctx *ctx, bool forced, char *why,
			      size_t len)
{
	int fd = open(GP_DEV_PATH, O_RDWR | O_CLOEXEC), e;

	if (fd >= 0)
		return fd;
	e = errno;
	snprintf(why, len, "%s: %s", GP_DEV_PATH,
		 e == ENOENT ? "absent (gpupool.ko not loaded)" : strerror(e));
	if (!forced) {
		gp_debug(ctx, "%s; using the user backend", why);
		return -ENODEV;
	}
	if (e == ENOENT || e == ENXIO || e == ENODEV)
		return gp_err(ctx, -ENODEV,
			      "GPUPOOL_BACKEND=kernel but %s is absent: load the "
			      "module (modprobe gpupool) or unset GPUPOOL_BACKEND",
			      GP_DEV_PATH);
	return gp_err(ctx, -e,
		      "cannot open %s: %s (the udev rule decides who may open it; "
		      "see packaging/70-gpupool.rules)", GP_DEV_PATH, strerror(e));
}

/* The module's GPUPOOL_IOC_VERSION into v: 0 when the two can talk, else
 * -EPROTO, saying which side is too old (why, and the message).
 */
static int gp_kernel_version(struct gp_ctx *ctx, int fd,
			     struct gpupool_version *v, char *why, size_t len)
{
	memset(v, 0, sizeof(*v));
	if (ioctl(fd, GPUPOOL_IOC_VERSION, v)) {
		int e = errno;

		snprintf(why, len, "%s: VERSION failed", GP_DEV_PATH);
		return gp_err(ctx, -EPROTO, "%s: GPUPOOL_IOC_VERSION failed: %s",
			      GP_DEV_PATH, strerror(e));
	}
	if (v->abi_major < GPUPOOL_ABI_MAJOR) {
		snprintf(why, len,
			 "gpupool.ko ABI %u.%u is older than the library's %u.%u",
			 v->abi_major, v->abi_minor, GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
		return gp_err(ctx, -EPROTO,
			      "the module is too old: gpupool.ko speaks ABI %u.%u, this "
			      "libgpupool needs %u.x; upgrade the module (dkms install)",
			      v->abi_major, v->abi_minor, GPUPOOL_ABI_MAJOR);
	}
	if (v->min_lib_major > GPUPOOL_ABI_MAJOR) {
		snprintf(why, len,
			 "gpupool.ko needs library ABI %u, the library is %u.%u",
			 v->min_lib_major, GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
		return gp_err(ctx, -EPROTO,
			      "the library is too old: gpupool.ko (ABI %u.%u) accepts "
			      "libraries of ABI %u or newer, this libgpupool is %u.%u; "
			      "upgrade libgpupool",
			      v->abi_major, v->abi_minor, v->min_lib_major,
			      GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
	}
	return 0;
}

int gp_kernel_probe(struct gp_ctx *ctx, bool forced, char *why, size_t len)
{
	struct gpupool_version v;
	struct gp_kernel *k;
	int fd, ret;

	fd = gp_kernel_open_dev(ctx, forced, why, len);
	if (fd < 0)
		return fd;
	ret = gp_kernel_version(ctx, fd, &v, why, len);
	k = ret ? NULL : calloc(1, sizeof(*k));
	if (!k) {
		close(fd);
		return ret ? ret : gp_err(ctx, -ENOMEM, "gp_open: out of memory");
	}
	k->fd = fd;
	k->abi_major = v.abi_major;
	k->abi_minor = v.abi_minor;
	k->node_mask = v.node_mask;
	k->huge_maps = gp_kernel_read_huge_maps();
	k->reclaim = v.features & GPUPOOL_FEATURE_RECLAIM;
	k->gran = v.granularity > ctx->page_size ? v.granularity : ctx->page_size;
	ctx->backend_data = k;
	snprintf(k->why, sizeof(k->why),
		 "gpupool.ko ABI %u.%u, pool %llu bytes on %u node(s)%s",
		 v.abi_major, v.abi_minor, (unsigned long long)v.pool_size,
		 v.nr_nodes, k->huge_maps ? ", 2 MiB mappings" : "");
	return 0;
}

static void gp_kernel_close(struct gp_ctx *ctx)
{
	struct gp_kernel *k = gp_kernel_of(ctx);

	if (!k)
		return;
	close(k->fd);
	free(k);
	ctx->backend_data = NULL;
}

/* The probe has opened the device; a strict node must have a sub-pool. */
static int gp_kernel_open(struct gp_ctx *ctx)
{
	char nodes[64 * 3] = "";
	size_t len = 0;
	int node = ctx->numa_node, i;

	uint64_t mask = gp_kernel_of(ctx)->node_mask;

	if (node < 0 || !(ctx->opt.flags & GP_OPEN_NUMA_STRICT) ||
	    (node < 64 && (mask >> node) & 1))
		return 0;
	for (i = 0; i < 64; i++)
		if ((mask >> i) & 1)
			len += (size_t)snprintf(nodes + len, sizeof(nodes) - len,
						"%s%d", len ? "," : "", i);
	gp_kernel_close(ctx);
	return gp_strict_node_error(ctx, "gpupool.ko has no sub-pool", nodes);
}

static uint64_t gp_kernel_granularity(const struct gp_ctx *ctx)
{
	return gp_kernel_of(ctx)->gran;
}

static void gp_kernel_info(struct gp_ctx *ctx, struct gp_info *info)
{
	info->kmod_abi_major = gp_kernel_of(ctx)->abi_major;
	info->kmod_abi_minor = gp_kernel_of(ctx)->abi_minor;
}

static const char *gp_kernel_why(const struct gp_ctx *ctx)
{
	return gp_kernel_of(ctx)->why;
}

static void gp_kernel_free_handle(struct gp_ctx *ctx, uint64_t handle)
{
	struct gpupool_free f;

	memset(&f, 0, sizeof(f));
	f.handle = handle;
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_FREE, &f))
		gp_debug(ctx, "GPUPOOL_IOC_FREE(%#llx): %s",
			 (unsigned long long)handle, strerror(errno));
}

/* A cgroup path as a message shows it: at most GP_CG_SHOW bytes of it
 * ("..." after a longer one's first ones), control bytes as '?', so that
 * the figures after it always fit in the message.
 */
#define GP_CG_SHOW	150

static const char *gp_cg_show(char *out, size_t len, const char *path)
{
	size_t i, n, keep;

	if (!path[0])
		path = "(no path)";
	n = strlen(path);
	keep = n > GP_CG_SHOW ? GP_CG_SHOW - 3 : n;
	if (keep >= len)
		keep = len - 1;
	for (i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)path[i];

		out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[i] = 0;
	if (keep < n && i + 3 < len)
		memcpy(out + i, "...", 4);
	return out;
}

#define GP_CG_RAISE	"gpupoolctl limit set"
#define GP_CG_OR_DMEM	"(or dmem.max where the kernel has dmem)"

/* dmem refused and did not say which cgroup: find it (cgroupfs.c). */
static int gp_kernel_dmem_refused(struct gp_ctx *ctx, const char *a,
				  const char *path, uint64_t size)
{
	char p[GP_CG_SHOW + 1], f[GP_CG_SHOW + 1], l[32], u[32], e[80];
	struct gp_dmem_hit *hit = malloc(sizeof(*hit));
	const char *why;
	int ret;

	if (!hit)
		return gp_err(ctx, -ENOSPC,
			      "gpupool.ko refused %s: dmem.max (region %s) of "
			      "cgroup %s or of an ancestor would be exceeded; "
			      "raise that cgroup's dmem.max", a,
			      GP_CG_DMEM_REGION, gp_cg_show(p, sizeof(p), path));
	ret = gp_dmem_find(NULL, path, size, hit);
	if (!ret) {
		gp_debug(ctx, "dmem: %s: max %llu, current %llu (%u levels)",
			 hit->file, (unsigned long long)hit->max,
			 (unsigned long long)hit->current, hit->levels);
		ret = gp_err(ctx, -ENOSPC,
			     "gpupool.ko refused %s: cgroup %s would exceed its "
			     "limit of %s (%s in use; dmem.max, region %s); raise "
			     "it in %s (a line \"%s SIZE\")", a,
			     gp_cg_show(p, sizeof(p), hit->path),
			     gp_fmt_bytes(l, sizeof(l), hit->max),
			     gp_fmt_bytes(u, sizeof(u), hit->current),
			     GP_CG_DMEM_REGION, gp_cg_show(f, sizeof(f), hit->file),
			     GP_CG_DMEM_REGION);
		free(hit);
		return ret;
	}
	switch (ret) {
	case -EINVAL:
		why = "the module named no usable cgroup path";
		break;
	case -EXDEV:
		why = "no cgroup2 mount here shows that cgroup";
		break;
	case -ENOMEM:
		why = "out of memory reading cgroupfs";
		break;
	default:
		why = "none of them is over it now";
		if (hit->read_error) {
			snprintf(e, sizeof(e), "reading dmem.max: %s",
				 strerror(hit->read_error));
			why = e;
		}
		break;
	}
	gp_debug(ctx, "dmem: no cgroup over its dmem.max from %s up (%d, %u "
		 "levels): %s", path, ret, hit->levels, why);
	ret = gp_err(ctx, -ENOSPC,
		     "gpupool.ko refused %s: dmem.max (region %s) of cgroup %s "
		     "or of an ancestor would be exceeded (which one, cgroupfs "
		     "did not tell: %s); raise that cgroup's dmem.max", a,
		     GP_CG_DMEM_REGION, gp_cg_show(p, sizeof(p), path), why);
	free(hit);
	return ret;
}

/* The module did not say which cgroup refused (GPUPOOL_IOC_CGROUP failed
 * with e): -ENOSPC, saying so.
 */
static int gp_kernel_cgroup_unsaid(struct gp_ctx *ctx, const char *a, int e)
{
	const char *why;

	switch (e) {
	case ENOTTY:
	case EINVAL:
		why = "this gpupool.ko is older than ABI 1.1";
		break;
	case ENOENT:
		why = "the module kept no record of the refusal";
		break;
	default:
		why = strerror(e);
		break;
	}
	gp_debug(ctx, "GPUPOOL_IOC_CGROUP (LAST_DENIAL): %s", strerror(e));
	return gp_err(ctx, -ENOSPC,
		      "gpupool.ko refused %s: a cgroup limit (of this "
		      "task's cgroup or an ancestor) would be exceeded, "
		      "which one the module did not say (%s); the Cgroup "
		      "lines of /proc/gpupool show each limit; raise it "
		      "with " GP_CG_RAISE " CGROUP SIZE " GP_CG_OR_DMEM,
		      a, why);
}

/*
 * ALLOC failed with ENOSPC: a cgroup limit.  Which cgroup, its limit and
 * its use at the refusal come from the module (GPUPOOL_CGROUP_LAST_DENIAL);
 * a module without it (ABI 1.0: ENOTTY) or without a record (ENOENT)
 * still gets a message, without the figures.  Always -ENOSPC.
 */
static int gp_kernel_cgroup_refused(struct gp_ctx *ctx, const char *a,
				    uint64_t size)
{
	char p[GP_CG_SHOW + 1], l[32], u[32];
	struct gpupool_cgroup cg;
	char *path = malloc(GP_CG_PATH_MAX);
	int ret;

	if (!path)
		return gp_err(ctx, -ENOSPC,
			      "gpupool.ko refused %s: a cgroup limit (of this "
			      "task's cgroup or an ancestor) would be exceeded; "
			      "raise it with " GP_CG_RAISE " CGROUP SIZE "
			      GP_CG_OR_DMEM, a);
	memset(&cg, 0, sizeof(cg));
	cg.flags = GPUPOOL_CGROUP_LAST_DENIAL;
	cg.cgroup_fd = -1;
	cg.path_ptr = (uint64_t)(uintptr_t)path;
	cg.path_len = GP_CG_PATH_MAX;
	path[0] = 0;
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_CGROUP, &cg)) {
		ret = gp_kernel_cgroup_unsaid(ctx, a, errno);
		free(path);
		return ret;
	}
	/* The module NUL-terminates it; one that does not is cut short. */
	path[GP_CG_PATH_MAX - 1] = 0;
	gp_debug(ctx, "cgroup refusal: %s, limit %llu, usage %llu, flags %#x",
		 path, (unsigned long long)cg.limit,
		 (unsigned long long)cg.usage, cg.flags);
	if (cg.flags & GPUPOOL_CGROUP_DMEM)
		ret = gp_kernel_dmem_refused(ctx, a, path, size);
	else if (cg.limit == GPUPOOL_NO_LIMIT)
		ret = gp_err(ctx, -ENOSPC,
			     "gpupool.ko refused %s: cgroup %s would exceed its "
			     "limit (%s in use); raise it with " GP_CG_RAISE
			     " %s SIZE " GP_CG_OR_DMEM, a,
			     gp_cg_show(p, sizeof(p), path),
			     gp_fmt_bytes(u, sizeof(u), cg.usage), p);
	else
		ret = gp_err(ctx, -ENOSPC,
			     "gpupool.ko refused %s: cgroup %s would exceed its "
			     "limit of %s (%s in use); raise it with " GP_CG_RAISE
			     " %s SIZE " GP_CG_OR_DMEM, a,
			     gp_cg_show(p, sizeof(p), path),
			     gp_fmt_bytes(l, sizeof(l), cg.limit),
			     gp_fmt_bytes(u, sizeof(u), cg.usage), p);
	free(path);
	return ret;
}

/* ALLOC of size refused with errno e: -errno, with the message. */
static int gp_kernel_alloc_error(struct gp_ctx *ctx, int e, uint64_t size)
{
	char a[32], idle[256];
	int ret;

	gp_fmt_bytes(a, sizeof(a), size);
	switch (e) {
	case ENOSPC:
		ret = gp_kernel_cgroup_refused(ctx, a, size);
		gp_kernel_idle_words(ctx, idle, sizeof(idle));
		return idle[0] ? gp_err(ctx, ret, "%s%s", gp_last_error(ctx), idle) :
		       ret;
	case EDQUOT:
		return gp_err(ctx, -ENOMEM,
			      "gpupool.ko refused %s: this process would exceed the "
			      "module's per_process_limit parameter (raise it in "
			      "/sys/module/gpupool/parameters or at modprobe)", a);
	case ENOMEM:
		gp_kernel_idle_words(ctx, idle, sizeof(idle));
		return gp_err(ctx, -ENOMEM,
			      "gpupool.ko cannot serve %s: the pool is full%s (see "
			      "/proc/gpupool; load the module with a larger pool)",
			      a, idle);
	case ENODEV:
		return gp_err(ctx, -ENODEV,
			      "gpupool.ko has no sub-pool on NUMA node %d", ctx->numa_node);
	default:
		return gp_err(ctx, -e, "GPUPOOL_IOC_ALLOC of %s: %s", a, strerror(e));
	}
}

/*
 * The ALLOC of a segment: from node (-1: any), asking no other process
 * for idle memory when another node will be tried after this one
 * (then_any) or the host pools will give back idle segments of their own
 * first (seg->no_ask).
 */
static void gp_kernel_alloc_arg(struct gp_ctx *ctx, const struct gp_seg *seg,
				uint64_t size, int node, bool then_any,
				struct gpupool_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	if (node >= 0) {
		a->flags = GPUPOOL_ALLOC_NODE;
		a->node = (uint32_t)node;
	}
	if (gp_kernel_of(ctx)->reclaim && (seg->no_ask || then_any))
		a->flags |= GPUPOOL_ALLOC_NO_RECLAIM;
}

static int gp_kernel_map(struct gp_ctx *ctx, struct gp_seg *seg, uint64_t size,
			 bool keep_fd)
{
	bool preferred = ctx->numa_node >= 0 &&
			 !(ctx->opt.flags & GP_OPEN_NUMA_STRICT);
	struct gpupool_alloc a;
	void *addr;
	int e;

	(void)keep_fd;	/* the handle stands for the chunk; EXPORT makes fds */
	gp_kernel_alloc_arg(ctx, seg, size, ctx->numa_node, preferred, &a);
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_ALLOC, &a)) {
		e = errno;
		if (!(e == ENODEV || e == ENOMEM) || !preferred)
			return gp_kernel_alloc_error(ctx, e, size);
		/* Preferred, not strict: any node will do.  The request is
		 * written afresh: what a refused ioctl left in it is not ours.
		 */
		gp_debug(ctx, "node %d cannot serve %llu bytes; any node",
			 ctx->numa_node, (unsigned long long)size);
		gp_kernel_alloc_arg(ctx, seg, size, -1, false, &a);
		if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_ALLOC, &a))
			return gp_kernel_alloc_error(ctx, errno, size);
	}
	/* The buffer handed out is `size` bytes of this mapping: a module
	 * that says less (or not in whole pages) disagrees with this library.
	 */
	if (a.chunk_size < size || (a.chunk_size & (ctx->page_size - 1))) {
		gp_kernel_free_handle(ctx, a.handle);
		return gp_err(ctx, -EPROTO,
			      "gpupool.ko answered GPUPOOL_IOC_ALLOC of %llu bytes with a "
			      "chunk of %llu bytes: the module and the library disagree "
			      "(reinstall both from one release)",
			      (unsigned long long)size,
			      (unsigned long long)a.chunk_size);
	}
	addr = mmap(NULL, a.chunk_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    gp_kernel_of(ctx)->fd, (off_t)a.handle);
	if (addr == MAP_FAILED) {
		e = errno;
		gp_kernel_free_handle(ctx, a.handle);
		return gp_err(ctx, -e, "mmap of a gpupool chunk: %s", strerror(e));
	}
	seg->addr = (uint64_t)(uintptr_t)addr;
	seg->size = a.chunk_size;
	seg->khandle = a.handle;
	seg->fd = -1;
	gp_kernel_seg_pages(ctx, seg);
	return 0;
}

static void gp_kernel_unmap(struct gp_ctx *ctx, struct gp_seg *seg)
{
	munmap((void *)(uintptr_t)seg->addr, seg->size);
	if (seg->kind != GP_SEG_IMPORT)
		gp_kernel_free_handle(ctx, seg->khandle);
	if (seg->fd >= 0)
		close(seg->fd);
	seg->fd = -1;
}

static int gp_kernel_export(struct gp_ctx *ctx, struct gp_seg *seg, int *fd)
{
	struct gpupool_export x;

	memset(&x, 0, sizeof(x));
	x.handle = seg->khandle;
	x.flags = GPUPOOL_EXPORT_CLOEXEC;
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_EXPORT, &x))
		return gp_err(ctx, -errno, "GPUPOOL_IOC_EXPORT: %s", strerror(errno));
	if (x.fd > INT_MAX)	/* not a descriptor: nothing to close either */
		return gp_err(ctx, -EPROTO,
			      "gpupool.ko answered GPUPOOL_IOC_EXPORT with descriptor "
			      "%u: the module and the library disagree", x.fd);
	*fd = (int)x.fd;
	return 0;
}

/* Map an exported chunk descriptor, whichever backend is open; -ENOTTY
 * (no message) when fd is not one.
 */
static int gp_kernel_import_chunk(struct gp_ctx *ctx, int fd, struct gp_seg *seg)
{
	struct gpupool_chunk_info ci;
	void *addr;

	memset(&ci, 0, sizeof(ci));
	if (ioctl(fd, GPUPOOL_IOC_CHUNK_INFO, &ci))
		return -ENOTTY;
	addr = mmap(NULL, ci.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED)
		return gp_err(ctx, -errno, "import: mmap of a gpupool chunk: %s",
			      strerror(errno));
	seg->addr = (uint64_t)(uintptr_t)addr;
	seg->size = ci.size;
	seg->fd = -1;
	gp_kernel_seg_pages(ctx, seg);
	return 0;
}

const struct gp_backend_ops gp_backend_kernel = {
	.name = "kernel",
	.open = gp_kernel_open,
	.close = gp_kernel_close,
	.map = gp_kernel_map,
	.unmap = gp_kernel_unmap,
	.export_fd = gp_kernel_export,
	.import_fd = gp_kernel_import_chunk,
	.granularity = gp_kernel_granularity,
	.info = gp_kernel_info,
	.why = gp_kernel_why,
	.mark = gp_kernel_mark,
	.asked = gp_kernel_asked,
};
