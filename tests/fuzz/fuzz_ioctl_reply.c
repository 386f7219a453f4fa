// SPDX-License-Identifier: MIT
/*
 * fuzz_ioctl_reply.c - libFuzzer harness for libgpupool's kernel backend
 * (userlib/backend_kernel.c): what the library does with the module's
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
 * segment count are what is mapped.
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
#include "fuzz.h"

#define DEV_PATH	"/dev/gpupool"
#define PAGE		4096ull
#define MAX_MAP_LEN	(1ull << 30)	/* the fake module maps at most this */
#define MAX_CHUNKS	256
#define MAX_MAPS	256
#define MAX_FDS		64
#define MAX_BUFS	64
#define MAX_OPS		48

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
} M;

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
			  ENOTTY, EPERM, EACCES, ENXIO, ENOENT, EAGAIN };

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

#define OPEN_WRAPPER(name, real)					\
	int name(const char *path, int flags, ...)			\
	{								\
		mode_t mode = 0;					\
		va_list ap;						\
									\
		if (!strcmp(path, DEV_PATH))				\
			return dev_open();				\
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

static int dev_alloc(struct gpupool_alloc *a)
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
	if (fz_pick(&M.f, 6) == 0) {
		k = fz_u8(&M.f);	/* a module that writes on failure */
		if (k & 1)
			a->flags = fz_u32(&M.f);
		if (k & 2)
			a->size = fz_u64(&M.f);
		return fail_with(pick_errno());
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

static int dev_free(const struct gpupool_free *fr)
{
	struct chunk *c = chunk_of(fr->handle);

	FZ_ASSERT(c, "FREE of handle %#llx, which is not live",
		  (unsigned long long)fr->handle);
	c->live = false;
	return fz_pick(&M.f, 8) ? 0 : fail_with(pick_errno());
}

static int dev_export(struct gpupool_export *x)
{
	struct chunk *c = chunk_of(x->handle);
	int fd;

	FZ_ASSERT(c, "EXPORT of handle %#llx, which is not live",
		  (unsigned long long)x->handle);
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
	switch (req) {
	case GPUPOOL_IOC_VERSION: return dev_version(arg);
	case GPUPOOL_IOC_ALLOC: return dev_alloc(arg);
	case GPUPOOL_IOC_FREE: return dev_free(arg);
	case GPUPOOL_IOC_EXPORT: return dev_export(arg);
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
		switch (fz_pick(&M.f, 12)) {
		case 0: case 1: case 2: case 3: op_alloc(ctx); break;
		case 4: case 5: op_free(ctx); break;
		case 6: op_export(ctx); break;
		case 7: op_import(ctx); break;
		case 8: op_close_fd(); break;
		case 9: FZ_ASSERT(gp_host_trim(ctx, NULL) == 0, "trim"); break;
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
	M.active = false;
	return 0;
}
