// SPDX-License-Identifier: MIT
/*
 * fuzz_ioctl_reply.c - libFuzzer harness for libgpupool's kernel backend
 * (userlib/backend/kernel.c): what the library does with the module's
 * replies, when the module says anything at all.
 *
 * The seam: the library's objects are linked into this program with
 * -Wl,--wrap=open,--wrap=open64,--wrap=ioctl,--wrap=mmap,--wrap=munmap,
 * --wrap=close (tests/fuzz/Makefile), so its calls reach the __wrap_*
 * functions below, which play a gpupool.ko whose every answer the input
 * chooses; any other file goes through to the real call (__real_*).
 *  - open("/dev/gpupool"): fails (ENOENT, EACCES, ...) or gives a memfd,
 *    which stands for the device file (so that close() is real).
 *  - VERSION: fails, or any ABI numbers, granularity, pool size, nodes.
 *  - ALLOC: fails with any errno (writing into the struct or not), or
 *    succeeds with a handle (fresh, or any 64-bit value) and a chunk_size
 *    that is right (the request rounded to pages), larger, smaller, 0, the
 *    bare request or any value; other fields of the reply scribbled.
 *  - mmap of the device: like the module, only MAP_SHARED, at offset = a
 *    handle it gave, of length = the chunk_size it said (so a module that
 *    lies about sizes lies consistently); fails when the input says so or
 *    above 1 GiB; otherwise real (anonymous) memory of that length.
 *  - ALLOC failing with ENOSPC is a cgroup limit: the library must then ask
 *    GPUPOOL_IOC_CGROUP (GPUPOOL_CGROUP_LAST_DENIAL, cgroup_fd -1, a path
 *    buffer), and only then; the reply fails (ENOTTY as from a module of
 *    ABI 1.0, ENOENT, ENAMETOOLONG, ...) or gives any path (honest, or
 *    filling the whole buffer without a NUL; any bytes: "..", "%n",
 *    newlines, 4 KiB long, 300 levels deep), any limit and use, the
 *    GPUPOOL_CGROUP_DMEM flag or not.  With DMEM the library walks cgroupfs
 *    itself: the open wrapper serves /proc/self/mountinfo (cgroup2 mounts
 *    at several places, shown roots, escapes, none, junk, unreadable) and
 *    every dmem.max and dmem.current (values around the request, "max",
 *    other regions, junk, unreadable) from the input.
 *  - FREE, EXPORT: must name a handle the module gave and nobody freed
 *    (else the library freed twice or made a handle up); EXPORT fails or
 *    gives a chunk descriptor (a memfd of the chunk's size), or a number
 *    that is no descriptor (>= 2^31).  CHUNK_INFO on such a descriptor
 *    fails or says a size, right or not; its mmap, like the module's, only
 *    at offset 0 for the chunk's real size.
 * The program then opens a context on the kernel backend (options from the
 * input, CUDA off) and runs host allocations (pool, GP_HOST_SHARED, sizes
 * up to 2^64 - 1), frees (held and bogus pointers), exports, imports (of
 * exported descriptors, of descriptors "from another process", of bogus
 * ones), statistics, trims, gp_info, then gp_close.
 *
 * What must hold: no crash, no sanitizer report, no leak (LeakSanitizer
 * for memory; the wrappers for mappings and descriptors: after gp_close
 * every mapping the library got is unmapped, exactly as mapped, and the
 * device file is closed); every buffer the library hands out lies wholly
 * inside memory the module mapped for it (its first and last bytes are
 * written too); the library frees only live handles, once; an exported
 * descriptor is one the module gave; gp_host_stats' reserved bytes and
 * segment count are what is mapped.  After an allocation the module
 * refused with ENOSPC, gp_host_alloc() returns -ENOSPC and gp_last_error()
 * is a printable message under 512 bytes naming gpupool.ko's refusal and a
 * cgroup: with the module's figures when it gave them, with the walk's
 * first cgroup over its dmem.max when there is one (else saying cgroupfs
 * did not tell), without figures when the ioctl failed.  The walk (also
 * driven alone, through the library's gp_dmem_find()) opens only files
 * named dmem.max or dmem.current, under the mount point mountinfo gave,
 * never through a "." or ".." component, and closes every one; what it
 * names is the first cgroup, from the bottom, whose served dmem.current +
 * request exceeds its served dmem.max.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/gpupool.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpupool.h"
#include "backend/cgroupfs.h"	/* the library's walk (internal) */
#include "fuzz.h"

/* The library's byte formatter (log.c, internal): the figures a message
 * must show, formatted the same way.
 */
const char *gp_fmt_bytes(char *buf, size_t len, uint64_t bytes);

#define DEV_PATH	"/dev/gpupool"
#define PAGE		4096ull
#define MAX_MAP_LEN	(1ull << 30)	/* the fake module maps at most this */
#define MAX_CHUNKS	256
#define MAX_MAPS	256
#define MAX_FDS		64
#define MAX_BUFS	64
#define MAX_OPS		48
#define MAX_SERVED	600	/* cgroupfs files served in one walk */
#define MOUNTINFO	"/proc/self/mountinfo"

int __real_open(const char *path, int flags, ...);
int __real_open64(const char *path, int flags, ...);
int __real_ioctl(int fd, unsigned long req, ...);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
int __real_close(int fd);
int __wrap_open(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);
int __wrap_close(int fd);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake module's state, for one input. */
static struct {
	struct fz f;
	bool active;			/* between the start and end of an input */
	int dev_fd;			/* the device file, -1 when closed */
	uint64_t next_handle;
	struct chunk {
		uint64_t handle, size;	/* size: the chunk_size it said */
		bool live;		/* not freed (the device file is open) */
	} chunk[MAX_CHUNKS];
	unsigned int nr_chunks;
	struct map {
		uint8_t *addr;
		size_t len;
	} map[MAX_MAPS];		/* what the library has mapped of ours */
	unsigned int nr_maps;
	struct cfd {
		int fd;
		uint64_t size;		/* the chunk's real size */
		bool ours;		/* the harness holds it (closes it) */
	} fd[MAX_FDS];			/* chunk descriptors, open */
	unsigned int nr_fds;
	/* Cgroup refusals. */
	bool enospc_last;		/* the last device call: ALLOC -> ENOSPC
					 * (and the CGROUP query after it) */
	uint64_t alloc_size;		/* what that ALLOC asked for */
	uint64_t retry_size;		/* the last device call: an ALLOC on a
					 * node refused with ENODEV or ENOMEM,
					 * for this size (0: none) */
	int cg_rc;			/* the CGROUP reply: 0 or its errno */
	bool cg_asked;			/* since that ALLOC */
	bool cg_dmem;
	uint64_t cg_limit, cg_usage;
	char cg_path[GP_CG_PATH_MAX + 1];	/* as the library must read it */
	const char *mnt;		/* mountinfo's cgroup2 mount, when known */
	unsigned int cgfs_open;		/* served files the library holds */
	int cgfs_fd[MAX_SERVED];
} M;

/* The cgroupfs files served since the last reset (kept apart from M,
 * which is cleared for every input): path, what it said.
 */
static struct served {
	char *path;
	bool max;			/* dmem.max, else dmem.current */
	int rc;				/* gp_dmem_value() of the text, or -errno */
	uint64_t val;
} served[MAX_SERVED];
static unsigned int nr_served;

static void served_reset(void)
{
	while (nr_served)
		free(served[--nr_served].path);
}

/* fd is the fake device file (which is not always open). */
static bool is_dev(int fd)
{
	return M.active && M.dev_fd >= 0 && fd == M.dev_fd;
}

static int fail_with(int e)
{
	errno = e;
	return -1;
}

static int pick_errno(void)
{
	const int e[] = { EINVAL, ENOMEM, EDQUOT, ENODEV, EINTR, EFAULT, EIO,
			  ENOTTY, EPERM, EACCES, ENXIO, ENOENT, EAGAIN, ENOSPC,
			  ENAMETOOLONG };

	return FZ_PICK(&M.f, e);
}

static struct chunk *chunk_of(uint64_t handle)
{
	unsigned int i;

	for (i = 0; i < M.nr_chunks; i++)
		if (M.chunk[i].live && M.chunk[i].handle == handle)
			return &M.chunk[i];
	return NULL;
}

static struct cfd *cfd_of(int fd)
{
	unsigned int i;

	for (i = 0; i < M.nr_fds; i++)
		if (M.fd[i].fd == fd)
			return &M.fd[i];
	return NULL;
}

/* A chunk descriptor of `size` bytes: a memfd (sparse), or -1. */
static int cfd_new(uint64_t size, bool ours)
{
	int fd;

	if (M.nr_fds == MAX_FDS || size > MAX_MAP_LEN)
		return -1;
	fd = memfd_create("fake-gpupool-chunk", MFD_CLOEXEC);
	FZ_ASSERT(fd >= 0, "memfd_create: %s", strerror(errno));
	FZ_ASSERT(ftruncate(fd, (off_t)size) == 0, "ftruncate: %s", strerror(errno));
	M.fd[M.nr_fds].fd = fd;
	M.fd[M.nr_fds].size = size;
	M.fd[M.nr_fds++].ours = ours;
	return fd;
}

static struct map *map_at(const void *addr)
{
	unsigned int i;

	for (i = 0; i < M.nr_maps; i++)
		if (M.map[i].addr == addr)
			return &M.map[i];
	return NULL;
}

/* The mapping of ours that holds [p, p + len), or NULL. */
static struct map *map_holding(const uint8_t *p, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < M.nr_maps; i++)
		if (p >= M.map[i].addr && (uint64_t)(p - M.map[i].addr) <= M.map[i].len &&
		    len <= M.map[i].len - (uint64_t)(p - M.map[i].addr))
			return &M.map[i];
	return NULL;
}

static void *map_add(void *addr, size_t len)
{
	FZ_ASSERT(M.nr_maps < MAX_MAPS, "more than %d mappings", MAX_MAPS);
	M.map[M.nr_maps].addr = addr;
	M.map[M.nr_maps++].len = len;
	return addr;
}

/* The wrapped calls ----------------------------------------------------------- */

static int dev_open(void)
{
	if (!M.active)
		return fail_with(ENOENT);
	FZ_ASSERT(M.dev_fd < 0, "the library opened %s twice", DEV_PATH);
	if (fz_pick(&M.f, 8) == 0)
		return fail_with(pick_errno());
	M.dev_fd = memfd_create("fake-gpupool", MFD_CLOEXEC);
	FZ_ASSERT(M.dev_fd >= 0, "memfd_create: %s", strerror(errno));
	return M.dev_fd;
}

/* cgroupfs, served ------------------------------------------------------------ */

/* A served file: a memfd holding text, read from its start.  The library
 * reads one at a time and closes it before the next.
 */
static int serve_text(const char *text, size_t len)
{
	int fd;

	FZ_ASSERT(M.cgfs_open == 0,
		  "a cgroupfs file opened while another is still open");
	fd = memfd_create("fake-cgroupfs", MFD_CLOEXEC);
	FZ_ASSERT(fd >= 0, "memfd_create: %s", strerror(errno));
	FZ_ASSERT(!len || write(fd, text, len) == (ssize_t)len, "write: %s",
		  strerror(errno));
	FZ_ASSERT(lseek(fd, 0, SEEK_SET) == 0, "lseek");
	M.cgfs_fd[M.cgfs_open++] = fd;
	return fd;
}

static int serve_mountinfo(void)
{
	static const struct {
		const char *text;
		const char *mnt;	/* where the walk must read; NULL: either */
	} t[] = {
		{ "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
		  "30 25 0:26 / /fake/cg rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		  "/fake/cg" },
		{ "31 25 0:26 /a /fake/sub rw - cgroup2 cgroup2 rw\n", "/fake/sub" },
		{ "32 25 0:26 / /fake/c\\040g rw shared:1 - cgroup2 none rw\n", "/fake/c g" },
		{ "33 1 0:26 / / rw - cgroup2 cgroup2 rw\n", "/" },
		{ "22 1 0:21 / /proc rw - proc proc rw\n"
		  "40 25 0:40 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
		  GP_CG_DEFAULT_MOUNT },
		{ "34 25 0:26 /tenants /fake/t rw - cgroup2 cgroup2 rw\n"
		  "30 25 0:26 / /fake/cg rw - cgroup2 cgroup2 rw\n", NULL },
	};
	char junk[256];
	unsigned int k = fz_pick(&M.f, FZ_N(t) + 2), n, i;

	if (k < FZ_N(t)) {
		M.mnt = t[k].mnt;
		return serve_text(t[k].text, strlen(t[k].text));
	}
	M.mnt = NULL;
	if (k == FZ_N(t)) {
		M.mnt = GP_CG_DEFAULT_MOUNT;	/* unreadable: the default */
		return fail_with(fz_u8(&M.f) & 1 ? EACCES : ENOENT);
	}
	n = fz_u8(&M.f);			/* junk, any bytes */
	for (i = 0; i < n && i < sizeof(junk); i++)
		junk[i] = (char)fz_u8(&M.f);
	return serve_text(junk, i);
}

/* Whether path has a "." or ".." component after its first skip bytes. */
static bool dot_component(const char *path, size_t skip)
{
	const char *c = path + skip, *e;

	while (*c) {
		while (*c == '/')
			c++;
		e = strchrnul(c, '/');
		if ((e - c == 1 && c[0] == '.') ||
		    (e - c == 2 && c[0] == '.' && c[1] == '.'))
			return true;
		c = e;
	}
	return false;
}

static uint64_t walk_req;		/* what the walk is asked about */

static int serve_dmem(const char *path, bool max)
{
	const uint64_t r = walk_req;
	const uint64_t vals[] = { 0, r, r - 1, r + 1, 32 << 20, (32 << 20) - r,
				  256 << 20, UINT64_MAX, UINT64_MAX - 1 };
	char text[320];
	size_t mlen = M.mnt ? strlen(M.mnt) : 0, len;
	unsigned long long v;
	struct served *sv;
	unsigned int i, n;

	if (M.mnt) {
		FZ_ASSERT(!strncmp(path, M.mnt, mlen) &&
			  (path[mlen] == '/' || !strcmp(M.mnt, "/")),
			  "cgroupfs file %s is not under the mount %s", path, M.mnt);
		FZ_ASSERT(!dot_component(path, mlen),
			  "the walk follows a dot component: %s", path);
	}
	FZ_ASSERT(nr_served < MAX_SERVED, "more than %d cgroupfs files in a walk",
		  MAX_SERVED);
	sv = &served[nr_served++];
	sv->path = strdup(path);
	FZ_ASSERT(sv->path, "strdup");
	sv->max = max;
	sv->val = 0;
	switch (fz_pick(&M.f, 12)) {
	case 0: case 1:
		sv->rc = -ENOENT;
		return fail_with(ENOENT);
	case 2:
		sv->rc = -EACCES;
		return fail_with(EACCES);
	case 3:
		len = (size_t)snprintf(text, sizeof(text), "gpupool max\n");
		break;
	case 4:
		len = (size_t)snprintf(text, sizeof(text), "drm/0000:01:00.0/vram0 %llu\n"
				       "gpupool %llu", (unsigned long long)fz_u64(&M.f),
				       (unsigned long long)FZ_PICK_OR_ANY(&M.f, vals));
		break;
	case 5:			/* junk, any bytes */
		n = fz_u8(&M.f) % 64;
		for (i = 0; i < n; i++)
			text[i] = (char)fz_u8(&M.f);
		len = n;
		break;
	case 6:			/* a number and then something */
		len = (size_t)snprintf(text, sizeof(text), "gpupool%c%llu%c\n",
				       fz_u8(&M.f) & 1 ? '\t' : ' ',
				       (unsigned long long)FZ_PICK_OR_ANY(&M.f, vals),
				       (char)(fz_u8(&M.f) | 1));
		break;
	case 7:
		len = 0;
		break;
	default:
		v = FZ_PICK_OR_ANY(&M.f, vals);
		len = (size_t)snprintf(text, sizeof(text), "gpupool %llu\n", v);
		break;
	}
	text[len < sizeof(text) ? len : sizeof(text) - 1] = 0;
	/* What the library must make of it: its own parser, on the text up to
	 * a NUL as it reads it (the walk's logic is what is checked here).
	 */
	sv->rc = gp_dmem_value(text, &sv->val);
	return serve_text(text, len);
}

static bool ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), m = strlen(end);

	return n >= m && !strcmp(s + n - m, end);
}

#define OPEN_WRAPPER(name, real)					\
	int name(const char *path, int flags, ...)			\
	{								\
		mode_t mode = 0;					\
		va_list ap;						\
									\
		if (!strcmp(path, DEV_PATH))				\
			return dev_open();				\
		if (M.active && !strcmp(path, MOUNTINFO))		\
			return serve_mountinfo();			\
		if (M.active && ends_with(path, "/dmem.max"))		\
			return serve_dmem(path, true);			\
		if (M.active && ends_with(path, "/dmem.current"))	\
			return serve_dmem(path, false);			\
		if (flags & (O_CREAT | O_TMPFILE)) {			\
			va_start(ap, flags);				\
			mode = va_arg(ap, mode_t);			\
			va_end(ap);					\
		}							\
		return real(path, flags, mode);				\
	}

OPEN_WRAPPER(__wrap_open, __real_open)
OPEN_WRAPPER(__wrap_open64, __real_open64)

static int dev_version(struct gpupool_version *v)
{
	const uint32_t majors[] = { GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MAJOR,
				    GPUPOOL_ABI_MAJOR, 0, GPUPOOL_ABI_MAJOR + 1,
				    UINT32_MAX };
	const uint64_t grans[] = { PAGE, PAGE, PAGE, 0, 1, 512, 2 * PAGE,
				   3 * PAGE, 2ull << 20, 1ull << 40, 1ull << 63,
				   UINT64_MAX };

	if (fz_pick(&M.f, 16) == 0)
		return fail_with(pick_errno());
	v->abi_major = FZ_PICK(&M.f, majors);
	v->abi_minor = fz_u8(&M.f) & 1 ? fz_u32(&M.f) : GPUPOOL_ABI_MINOR;
	v->min_lib_major = fz_u8(&M.f) % 4 ? GPUPOOL_ABI_MAJOR :
			   FZ_PICK(&M.f, majors);
	v->pool_size = fz_u64(&M.f);
	v->granularity = FZ_PICK_OR_ANY(&M.f, grans);
	v->nr_nodes = fz_u32(&M.f);
	v->node_mask = fz_u64(&M.f);
	return 0;
}

static int dev_alloc(struct gpupool_alloc *a, uint64_t retry)
{
	uint64_t rounded = (a->size + PAGE - 1) & ~(PAGE - 1);
	const uint64_t sizes[] = { rounded, rounded, rounded, rounded + PAGE,
				   rounded - PAGE, 0, a->size, a->size - 1 };
	struct chunk *c;
	uint8_t k;

	FZ_ASSERT(!(a->flags & ~GPUPOOL_ALLOC_VALID_FLAGS) && !a->pad &&
		  !a->reserved[0] && !a->reserved[1] && !a->reserved[2] &&
		  !a->reserved[3] && (a->flags || !a->node),
		  "ALLOC: flags %#x node %u", a->flags, a->node);
	/* Retried on any node: the same size, whatever the refusal wrote. */
	FZ_ASSERT(!retry || a->flags || a->size == retry,
		  "ALLOC of %llu on a node refused, retried on any node for %llu",
		  (unsigned long long)retry, (unsigned long long)a->size);
	M.enospc_last = false;
	M.cg_asked = false;
	M.alloc_size = a->size;
	if (fz_pick(&M.f, 6) == 0) {
		/* A cgroup limit, one time in three; else any errno. */
		int e = fz_pick(&M.f, 3) == 0 ? ENOSPC : pick_errno();

		if ((a->flags & GPUPOOL_ALLOC_NODE) && (e == ENODEV || e == ENOMEM))
			M.retry_size = a->size;

		k = fz_u8(&M.f);	/* a module that writes on failure */
		if (k & 1)
			a->flags = fz_u32(&M.f);
		if (k & 2)
			a->size = fz_u64(&M.f);
		M.enospc_last = e == ENOSPC;
		return fail_with(e);
	}
	if (M.nr_chunks == MAX_CHUNKS)
		return fail_with(ENOMEM);
	c = &M.chunk[M.nr_chunks++];
	c->handle = fz_pick(&M.f, 8) ? M.next_handle : fz_u64(&M.f);
	if (chunk_of(c->handle))	/* two live chunks, one handle: no */
		c->handle = M.next_handle;
	M.next_handle += PAGE;
	c->size = FZ_PICK_OR_ANY(&M.f, sizes);
	c->live = true;
	a->handle = c->handle;
	a->chunk_size = c->size;
	a->chunk_node = fz_u32(&M.f);
	if (fz_pick(&M.f, 8) == 0)
		a->size = fz_u64(&M.f);
	return 0;
}

/* A cgroup path as a module might give it, into p (GP_CG_PATH_MAX + 1024
 * bytes); its length (NULs inside possible).
 */
static size_t make_path(char *p)
{
	static const char *const fixed[] = {
		"/", "/tenants/a", "/a/b/c", "", "/a/../b", "a/b", "/a//b/",
		"/%s%n%x", "/tenants", "/a/./b", "/a/b/c/",
	};
	static const char *const names[] = {
		"a", "b", "c", "tenants", "..", ".", "%n", "x y", "\n", "\\040",
		"d\x7f", "\xff\xfe",
	};
	const size_t cap = GP_CG_PATH_MAX + 1000;
	size_t len = 0, n, i;
	unsigned int k = fz_pick(&M.f, FZ_N(fixed) + 4);

	if (k < FZ_N(fixed)) {
		len = strlen(fixed[k]);
		memcpy(p, fixed[k], len + 1);
		return len;
	}
	switch (k - FZ_N(fixed)) {
	case 0:			/* components */
		n = fz_pick(&M.f, 8) + 1;
		for (i = 0; i < n; i++) {
			const char *c = FZ_PICK(&M.f, names);

			p[len++] = '/';
			memcpy(p + len, c, strlen(c));
			len += strlen(c);
		}
		break;
	case 1:			/* any bytes */
		n = fz_u8(&M.f);
		for (i = 0; i < n; i++)
			p[len++] = (char)fz_u8(&M.f);
		break;
	case 2:			/* long: around the buffer's size */
		n = (GP_CG_PATH_MAX - 8 + fz_pick(&M.f, 16)) >> (fz_u8(&M.f) & 3);
		p[len++] = '/';
		memset(p + len, 'x', n);
		len += n;
		break;
	default:		/* deep: past the walk's limit, sometimes */
		n = fz_u8(&M.f) + (fz_u8(&M.f) & 1 ? 100 : 0);
		for (i = 0; i < n && len + 2 < cap; i++) {
			p[len++] = '/';
			p[len++] = 'd';
		}
		break;
	}
	p[len] = 0;
	return len;
}

/* GPUPOOL_IOC_CGROUP: the library asks which cgroup refused. */
static int dev_cgroup(struct gpupool_cgroup *c)
{
	const uint64_t limits[] = { GPUPOOL_NO_LIMIT, 32 << 20, 256 << 20, 0, 1,
				    M.alloc_size, 1ull << 40 };
	const int errs[] = { ENOTTY, ENOENT, ENOENT, EINVAL, ENAMETOOLONG,
			     EFAULT, EPERM, ENOMEM, EINTR };
	char *buf = (char *)(uintptr_t)c->path_ptr;
	uint32_t len = c->path_len;
	static char p[GP_CG_PATH_MAX + 1024];
	size_t plen, n;

	FZ_ASSERT(M.enospc_last && !M.cg_asked,
		  "GPUPOOL_IOC_CGROUP asked, but not right after an ALLOC refused with ENOSPC");
	FZ_ASSERT(c->flags == GPUPOOL_CGROUP_LAST_DENIAL && c->cgroup_fd == -1 &&
		  !c->limit && !c->usage && !c->chunks && !c->cgroup_id &&
		  !c->denials && !c->pad && !c->reserved[0] && !c->reserved[1] &&
		  !c->reserved[2] && !c->reserved[3] && buf && len,
		  "CGROUP: flags %#x fd %d path %p/%u", c->flags, c->cgroup_fd,
		  (void *)buf, len);
	M.cg_asked = true;
	served_reset();
	walk_req = M.alloc_size;
	M.mnt = NULL;
	if (fz_pick(&M.f, 5) == 0) {
		/* Refused; a module that scribbles on the way. */
		if (fz_u8(&M.f) & 1) {
			memset(buf, 'Z', fz_u8(&M.f) % len + 1);
			c->flags |= GPUPOOL_CGROUP_DMEM;
			c->limit = fz_u64(&M.f);
		}
		M.cg_rc = FZ_PICK(&M.f, errs);
		return fail_with(M.cg_rc);
	}
	plen = make_path(p);
	if (fz_pick(&M.f, 4)) {		/* as the module: NUL-terminated */
		if (plen + 1 > len) {
			M.cg_rc = ENAMETOOLONG;
			return fail_with(M.cg_rc);
		}
		memcpy(buf, p, plen + 1);
	} else {			/* no NUL: the buffer full */
		n = plen < len ? plen : len;
		memcpy(buf, p, n);
		memset(buf + n, 'L', len - n);
	}
	/* What the library reads: up to a NUL, the buffer's last byte at most. */
	n = strnlen(buf, len - 1);
	n = n < sizeof(M.cg_path) - 1 ? n : sizeof(M.cg_path) - 1;
	memcpy(M.cg_path, buf, n);
	M.cg_path[n] = 0;
	M.cg_dmem = fz_u8(&M.f) & 1;
	c->flags = GPUPOOL_CGROUP_LAST_DENIAL | (M.cg_dmem ? GPUPOOL_CGROUP_DMEM : 0) |
		   (fz_u8(&M.f) & 1 ? 1u << 9 : 0);	/* a flag of the future */
	c->limit = M.cg_dmem && fz_pick(&M.f, 4) ? GPUPOOL_NO_LIMIT :
		   FZ_PICK_OR_ANY(&M.f, limits);
	c->usage = fz_pick(&M.f, 3) ? c->limit - M.alloc_size / 2 : fz_u64(&M.f);
	c->chunks = fz_u64(&M.f);
	c->cgroup_id = fz_u64(&M.f);
	c->denials = fz_u64(&M.f);
	if (fz_pick(&M.f, 8) == 0)
		c->reserved[fz_pick(&M.f, 4)] = fz_u64(&M.f);
	M.cg_limit = c->limit;
	M.cg_usage = c->usage;
	M.cg_rc = 0;
	return 0;
}

static int dev_free(const struct gpupool_free *fr)
{
	struct chunk *c = chunk_of(fr->handle);

	FZ_ASSERT(c, "FREE of handle %#llx, which is not live",
		  (unsigned long long)fr->handle);
	M.enospc_last = false;
	c->live = false;
	return fz_pick(&M.f, 8) ? 0 : fail_with(pick_errno());
}

static int dev_export(struct gpupool_export *x)
{
	struct chunk *c = chunk_of(x->handle);
	int fd;

	FZ_ASSERT(c, "EXPORT of handle %#llx, which is not live",
		  (unsigned long long)x->handle);
	M.enospc_last = false;
	switch (fz_pick(&M.f, 6)) {
	case 0:
		return fail_with(pick_errno());
	case 1:
		x->fd = 0x80000000u | fz_u32(&M.f);	/* no descriptor */
		return 0;
	default:
		fd = cfd_new(c->size, false);
		if (fd < 0)
			return fail_with(EMFILE);
		x->fd = (uint32_t)fd;
		return 0;
	}
}

static int chunk_info(const struct cfd *cf, struct gpupool_chunk_info *ci)
{
	const uint64_t sizes[] = { cf->size, cf->size, cf->size, 0,
				   cf->size + PAGE, cf->size - PAGE };

	if (fz_pick(&M.f, 5) == 0)
		return fail_with(fz_u8(&M.f) & 1 ? ENOTTY : pick_errno());
	ci->size = FZ_PICK_OR_ANY(&M.f, sizes);
	ci->node = fz_u32(&M.f);
	return 0;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	struct cfd *cf = M.active ? cfd_of(fd) : NULL;
	uint64_t retry;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (cf)
		return req == GPUPOOL_IOC_CHUNK_INFO ? chunk_info(cf, arg) :
		       fail_with(ENOTTY);
	if (!is_dev(fd))
		return __real_ioctl(fd, req, arg);
	retry = M.retry_size;		/* only for the call right after */
	M.retry_size = 0;
	switch (req) {
	case GPUPOOL_IOC_VERSION: return dev_version(arg);
	case GPUPOOL_IOC_ALLOC: return dev_alloc(arg, retry);
	case GPUPOOL_IOC_FREE: return dev_free(arg);
	case GPUPOOL_IOC_EXPORT: return dev_export(arg);
	case GPUPOOL_IOC_CGROUP: return dev_cgroup(arg);
	default: return fail_with(ENOTTY);	/* STATS: the library never asks */
	}
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct cfd *cf = M.active ? cfd_of(fd) : NULL;
	struct chunk *c;
	void *p;

	if (!is_dev(fd) && !cf)
		return __real_mmap(addr, len, prot, flags, fd, off);
	M.enospc_last = false;
	if (!(flags & MAP_SHARED) || fz_pick(&M.f, 10) == 0) {
		errno = fz_u8(&M.f) & 1 ? ENOMEM : EINVAL;
		return MAP_FAILED;
	}
	if (cf) {
		if (off || len != cf->size) {
			errno = EINVAL;
			return MAP_FAILED;
		}
		p = __real_mmap(addr, len, prot, flags, fd, 0);
		return p == MAP_FAILED ? p : map_add(p, len);
	}
	c = chunk_of((uint64_t)off);
	if (!c || len != c->size || !len || len > MAX_MAP_LEN) {
		errno = !c || len != c->size ? EINVAL : ENOMEM;
		return MAP_FAILED;
	}
	p = __real_mmap(addr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			-1, 0);
	return p == MAP_FAILED ? p : map_add(p, len);
}

int __wrap_munmap(void *addr, size_t len)
{
	struct map *m = M.active ? map_at(addr) : NULL;

	if (m) {
		FZ_ASSERT(m->len == len, "munmap(%p, %zu) of a mapping of %zu bytes",
			  addr, len, m->len);
		*m = M.map[--M.nr_maps];
	} else if (M.active) {
		FZ_ASSERT(!map_holding(addr, 1), "munmap(%p) inside a mapping", addr);
	}
	return __real_munmap(addr, len);
}

int __wrap_close(int fd)
{
	struct cfd *cf = M.active ? cfd_of(fd) : NULL;
	unsigned int i;

	if (is_dev(fd)) {
		/* Closing the file frees its chunks (mappings keep memory). */
		M.dev_fd = -1;
		for (i = 0; i < M.nr_chunks; i++)
			M.chunk[i].live = false;
	}
	if (cf)
		*cf = M.fd[--M.nr_fds];
	for (i = 0; M.active && i < M.cgfs_open; i++)
		if (M.cgfs_fd[i] == fd) {
			M.cgfs_fd[i] = M.cgfs_fd[--M.cgfs_open];
			break;
		}
	return __real_close(fd);
}

/* The program ------------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t size;
	bool shared;
};

static struct buf bufs[MAX_BUFS];
static unsigned int nr_bufs;

/* A buffer handed out: wholly inside a mapping of ours, writable. */
static void check_buf(struct gp_ctx *ctx, void *p, size_t size, bool shared)
{
	FZ_ASSERT(p && size, "a buffer at %p of %zu bytes", p, size);
	FZ_ASSERT(map_holding(p, size),
		  "buffer %p of %zu bytes is not inside a mapping of the module's",
		  p, size);
	((uint8_t *)p)[0] = 1;
	((uint8_t *)p)[size - 1] = 2;
	if (nr_bufs == MAX_BUFS) {
		FZ_ASSERT(gp_host_free(ctx, p) == 0, "free of a new buffer");
		return;
	}
	bufs[nr_bufs].p = p;
	bufs[nr_bufs].size = size;
	bufs[nr_bufs++].shared = shared;
}

/*
 * The walk's verdict from what was served: the index of the first
 * dmem.max, from the bottom, that the walk should name (its dmem.current
 * follows it), or -1.  Checks the order too: after a finite dmem.max the
 * walk reads that cgroup's dmem.current at once, and it stops at the
 * first cgroup over its limit.
 */
static int walk_oracle(void)
{
	unsigned int i;
	size_t n;

	for (i = 0; i < nr_served; i++) {
		if (!served[i].max || served[i].rc || served[i].val == UINT64_MAX)
			continue;
		FZ_ASSERT(i + 1 < nr_served && !served[i + 1].max,
			  "%s read, but not the dmem.current beside it", served[i].path);
		n = strlen(served[i].path) - strlen("dmem.max");
		FZ_ASSERT(!strncmp(served[i].path, served[i + 1].path, n),
			  "%s read after %s", served[i + 1].path, served[i].path);
		if (served[i + 1].rc)
			continue;
		if (walk_req > served[i].val ||
		    served[i + 1].val > served[i].val - walk_req) {
			FZ_ASSERT(i + 2 == nr_served,
				  "the walk went on past %s, which is over", served[i].path);
			return (int)i;
		}
	}
	return -1;
}

/* A message for gp_last_error(): under 512 bytes, no control characters. */
static void check_message(const char *msg)
{
	size_t i, n = strnlen(msg, 512);

	FZ_ASSERT(n < 512, "a message of %zu bytes", n);
	for (i = 0; i < n; i++)
		FZ_ASSERT((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f,
			  "byte %#x at %zu in: %s", (unsigned char)msg[i], i, msg);
}

static void check_says(const char *msg, const char *what)
{
	FZ_ASSERT(strstr(msg, what), "no \"%s\" in: %s", what, msg);
}

/* gp_host_alloc() failed after the module refused with ENOSPC. */
static void check_cgroup_refusal(struct gp_ctx *ctx, int rc)
{
	const char *msg = gp_last_error(ctx);
	char want[600], l[32], u[32];
	int hit;

	FZ_ASSERT(rc == -ENOSPC, "ALLOC refused with ENOSPC, gp_host_alloc: %d", rc);
	FZ_ASSERT(M.cg_asked, "ENOSPC, and the library did not ask which cgroup");
	FZ_ASSERT(M.cgfs_open == 0, "%u cgroupfs files left open", M.cgfs_open);
	check_message(msg);
	check_says(msg, "gpupool.ko refused ");
	check_says(msg, "cgroup");
	if (M.cg_rc) {
		check_says(msg, "which one the module did not say");
		return;
	}
	if (M.cg_dmem) {
		hit = walk_oracle();
		if (hit < 0) {
			FZ_ASSERT(strstr(msg, "cgroupfs did not tell"),
				  "the walk named a cgroup none was over: %s", msg);
			return;
		}
		snprintf(want, sizeof(want), "would exceed its limit of %s (%s in use; dmem.max",
			 gp_fmt_bytes(l, sizeof(l), served[hit].val),
			 gp_fmt_bytes(u, sizeof(u), served[hit + 1].val));
		check_says(msg, want);
		return;
	}
	if (M.cg_limit == GPUPOOL_NO_LIMIT)
		snprintf(want, sizeof(want), "would exceed its limit (%s in use)",
			 gp_fmt_bytes(u, sizeof(u), M.cg_usage));
	else
		snprintf(want, sizeof(want), "would exceed its limit of %s (%s in use)",
			 gp_fmt_bytes(l, sizeof(l), M.cg_limit),
			 gp_fmt_bytes(u, sizeof(u), M.cg_usage));
	check_says(msg, want);
	/* A plain, short path is shown as it is. */
	if (M.cg_path[0] && strlen(M.cg_path) < 100 &&
	    !strpbrk(M.cg_path, "\n\x7f\x01\x02\x1b")) {
		snprintf(want, sizeof(want), "cgroup %s would exceed", M.cg_path);
		if (strspn(M.cg_path, "/abcdefghijklmnopqrstuvwxyz.% ") ==
		    strlen(M.cg_path))
			check_says(msg, want);
	}
}

static void op_alloc(struct gp_ctx *ctx)
{
	const uint64_t sizes[] = { 1, 100, 512, 4096, 4097, 1 << 20, (1 << 20) + 1,
				   3 << 20, 10 << 20, (10 << 20) + 1, 21 << 20,
				   SIZE_MAX, SIZE_MAX - PAGE + 2, 1ull << 63,
				   (1ull << 63) + 1, 0 };
	const unsigned int flags[] = { 0, 0, GP_HOST_SHARED, GP_HOST_SHARED, 2 };
	size_t size = FZ_PICK_OR_ANY(&M.f, sizes);
	unsigned int fl = FZ_PICK(&M.f, flags);
	void *p = NULL;
	int rc = gp_host_alloc(ctx, size, fl, &p);

	if (!size || (fl & ~GP_HOST_VALID_FLAGS))
		FZ_ASSERT(rc == -EINVAL, "alloc(%zu, %#x): %d", size, fl, rc);
	if (!rc)
		check_buf(ctx, p, size, fl & GP_HOST_SHARED);
	else if (M.enospc_last)
		check_cgroup_refusal(ctx, rc);
	M.enospc_last = false;
	served_reset();
}

/* The walk alone: gp_dmem_find() on a path and a request of the input's. */
static void op_walk(void)
{
	const uint64_t reqs[] = { PAGE, 2 << 20, 32 << 20, 0, UINT64_MAX };
	static char path[GP_CG_PATH_MAX + 1024];
	struct gp_dmem_hit *hit = malloc(sizeof(*hit));
	bool valid;
	size_t hl;
	int rc, i;

	FZ_ASSERT(hit, "malloc");
	make_path(path);	/* what the library sees: up to a NUL */
	valid = path[0] == '/' && strlen(path) < GP_CG_PATH_MAX &&
		!dot_component(path, 0);
	walk_req = FZ_PICK_OR_ANY(&M.f, reqs);
	served_reset();
	M.mnt = NULL;
	rc = gp_dmem_find(NULL, path, walk_req, hit);
	FZ_ASSERT(M.cgfs_open == 0, "%u cgroupfs files left open", M.cgfs_open);
	FZ_ASSERT(valid || rc == -EINVAL, "gp_dmem_find(%s): %d", path, rc);
	FZ_ASSERT(rc != -EINVAL || !nr_served, "an invalid path walked");
	i = walk_oracle();
	switch (rc) {
	case 0:
		FZ_ASSERT(i >= 0, "gp_dmem_find named %s, none is over", hit->path);
		FZ_ASSERT(hit->max == served[i].val && hit->current == served[i + 1].val &&
			  !strcmp(hit->file, served[i].path),
			  "gp_dmem_find: %s %llu/%llu, served %s %llu/%llu", hit->file,
			  (unsigned long long)hit->current, (unsigned long long)hit->max,
			  served[i].path, (unsigned long long)served[i + 1].val,
			  (unsigned long long)served[i].val);
		hl = strlen(hit->path);
		FZ_ASSERT(hit->path[0] == '/' && !strncmp(path, hit->path, hl) &&
			  (hl == 1 || path[hl] == '/' || !path[hl]),
			  "gp_dmem_find named %s, no ancestor of %s", hit->path, path);
		FZ_ASSERT(hit->levels <= GP_CG_MAX_DEPTH, "%u levels", hit->levels);
		break;
	case -ENOENT:
		FZ_ASSERT(i < 0, "gp_dmem_find found none, %s is over", served[i].path);
		FZ_ASSERT(hit->levels <= GP_CG_MAX_DEPTH, "%u levels", hit->levels);
		break;
	case -EINVAL:
	case -EXDEV:
		FZ_ASSERT(!nr_served, "gp_dmem_find: %d after reading files", rc);
		break;
	default:
		FZ_FAIL("gp_dmem_find: %d", rc);
	}
	served_reset();
	free(hit);
}

static void *pick_bogus(void)
{
	static char not_ours;	/* memory the library never gave */
	uint8_t k = fz_u8(&M.f);

	switch (k % 4) {
	case 0: return nr_bufs ? bufs[k % nr_bufs].p + 1 : NULL;
	case 1: return M.nr_maps ? M.map[k % M.nr_maps].addr + M.map[k % M.nr_maps].len : NULL;
	case 2: return (void *)(uintptr_t)fz_u64(&M.f);
	default: return &not_ours;
	}
}

static bool is_buf(const void *p)
{
	unsigned int i;

	for (i = 0; i < nr_bufs; i++)
		if (bufs[i].p == p)
			return true;
	return false;
}

static void op_free(struct gp_ctx *ctx)
{
	unsigned int k;
	void *p;
	int rc;

	if (nr_bufs && fz_pick(&M.f, 4)) {
		k = fz_u8(&M.f) % nr_bufs;
		rc = gp_host_free(ctx, bufs[k].p);
		FZ_ASSERT(rc == 0, "free of a held buffer: %d", rc);
		bufs[k] = bufs[--nr_bufs];
		return;
	}
	p = pick_bogus();
	if (p && !is_buf(p))
		FZ_ASSERT(gp_host_free(ctx, p) == -EINVAL, "free(%p), not a buffer", p);
}

static void op_export(struct gp_ctx *ctx)
{
	void *p = nr_bufs && fz_pick(&M.f, 4) ? bufs[fz_u8(&M.f) % nr_bufs].p :
		  pick_bogus();
	struct cfd *cf;
	int fd = -1, rc = gp_host_export(ctx, p, &fd);

	if (rc)
		return;
	cf = cfd_of(fd);
	FZ_ASSERT(fd >= 0 && cf && !cf->ours,
		  "gp_host_export gave descriptor %d, not one the module made", fd);
	cf->ours = true;
}

static void op_import(struct gp_ctx *ctx)
{
	const uint64_t sizes[] = { PAGE, 2 * PAGE, 0, 100, 1 << 20 };
	int fd = -1, rc, k = fz_pick(&M.f, 6);
	bool want_size = fz_u8(&M.f) & 1;
	const struct cfd *cf;
	size_t size = 0;
	void *p = NULL;
	unsigned int i;

	if (k == 0) {
		for (i = 0; i < M.nr_fds; i++)
			if (M.fd[i].ours)
				fd = M.fd[i].fd;
	} else if (k <= 2) {	/* a chunk made in another process */
		fd = cfd_new(FZ_PICK(&M.f, sizes), true);
	} else if (k == 3) {
		fd = M.dev_fd;
	} else {
		fd = k == 4 ? -1 : 1 << 20;
	}
	rc = gp_host_import(ctx, fd, &p, want_size ? &size : NULL);
	if (rc)
		return;
	cf = cfd_of(fd);
	FZ_ASSERT(cf, "imported descriptor %d, which is not a chunk's", fd);
	FZ_ASSERT(!want_size || size == cf->size, "import: %zu bytes of a %llu-byte chunk",
		  size, (unsigned long long)cf->size);
	check_buf(ctx, p, cf->size, false);
}

static void op_close_fd(void)
{
	unsigned int i;

	for (i = 0; i < M.nr_fds; i++)
		if (M.fd[i].ours) {
			close(M.fd[i].fd);	/* drops it from M.fd */
			return;
		}
}

static void op_stats(struct gp_ctx *ctx)
{
	struct gp_host_stats st;
	struct gp_info info;
	uint64_t mapped = 0;
	unsigned int i;

	FZ_ASSERT(gp_host_stats(ctx, &st) == 0, "gp_host_stats");
	for (i = 0; i < M.nr_maps; i++)
		mapped += M.map[i].len;
	FZ_ASSERT(st.reserved == mapped && st.segments == M.nr_maps &&
		  st.in_use <= st.reserved,
		  "stats: %llu bytes in %llu segments (%llu in use), %llu mapped in %u",
		  (unsigned long long)st.reserved, (unsigned long long)st.segments,
		  (unsigned long long)st.in_use, (unsigned long long)mapped, M.nr_maps);
	FZ_ASSERT(gp_info(ctx, &info) == 0 && info.backend == GP_BACKEND_KERNEL,
		  "gp_info");
}

static void run(void)
{
	const int32_t nodes[] = { GP_NUMA_ANY, GP_NUMA_ANY, 0, 1, 7, GP_NUMA_NEAR_GPU };
	const uint64_t limits[] = { 0, 0, 4 << 20, 64 << 20, 1ull << 40 };
	const uint64_t small[] = { 0, 0, 1 << 20, (1 << 20) + 1, 4 << 20 };
	struct gp_options o;
	struct gp_ctx *ctx = NULL;
	unsigned int n;
	int rc;

	gp_options_init(&o);
	o.backend = GP_BACKEND_KERNEL;
	o.flags = GP_OPEN_NO_CUDA | (fz_u8(&M.f) & (GP_OPEN_HOST_MAPPED |
		  GP_OPEN_NUMA_STRICT | GP_OPEN_NO_HUGEPAGES));
	o.numa_node = FZ_PICK(&M.f, nodes);
	o.host_limit = FZ_PICK(&M.f, limits);
	o.host_cache_max = FZ_PICK(&M.f, limits);
	o.host_small_segment = FZ_PICK(&M.f, small);
	rc = gp_open(&o, &ctx);
	if (rc) {
		FZ_ASSERT(!ctx && M.dev_fd < 0 && !M.nr_maps,
			  "gp_open failed (%d) and left the device open or memory mapped",
			  rc);
		return;
	}
	for (n = 0; n < MAX_OPS && fz_more(&M.f); n++) {
		switch (fz_pick(&M.f, 13)) {
		case 0: case 1: case 2: case 3: op_alloc(ctx); break;
		case 4: case 5: op_free(ctx); break;
		case 6: op_export(ctx); break;
		case 7: op_import(ctx); break;
		case 8: op_close_fd(); break;
		case 9: FZ_ASSERT(gp_host_trim(ctx, NULL) == 0, "trim"); break;
		case 10: op_walk(); break;
		default: op_stats(ctx); break;
		}
		op_stats(ctx);
	}
	gp_close(ctx);
	FZ_ASSERT(M.dev_fd < 0, "gp_close left the device file open");
	FZ_ASSERT(!M.nr_maps, "gp_close left %u mappings", M.nr_maps);
	while (M.nr_fds) {
		FZ_ASSERT(M.fd[0].ours, "descriptor %d left open by the library",
			  M.fd[0].fd);
		close(M.fd[0].fd);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The options say kernel; nothing from the environment may differ. */
	setenv("GPUPOOL_BACKEND", "kernel", 1);
	unsetenv("GPUPOOL_DEBUG");
	unsetenv("GPUPOOL_REQUIRE_CUDA");
	unsetenv("GPUPOOL_HOST_LIMIT");
	unsetenv("GPUPOOL_DEV_LIMIT");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(&M, 0, sizeof(M));
	M.f.p = data;
	M.f.n = size;
	M.dev_fd = -1;
	M.next_handle = 0x100000;
	M.active = true;
	nr_bufs = 0;
	run();
	served_reset();
	M.active = false;
	return 0;
}
