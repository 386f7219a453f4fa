// SPDX-License-Identifier: MIT
/*
 * user.c - host segments from the system, for when gpupool.ko is
 * not loaded: memfd_create + mmap(MAP_SHARED) + mbind + mlock.
 *
 *  - memfd, MAP_SHARED: the memory can be exported (the descriptor crosses
 *    processes), and fork() never turns registered pages copy-on-write.
 *  - Huge pages: segments that are a multiple of 2 MiB first try
 *    MFD_HUGETLB; once that fails (no huge pages reserved) the context stops
 *    trying and asks for transparent huge pages with MADV_HUGEPAGE instead.
 *    A segment whose huge pages map but cannot be faulted in (reserved on
 *    nodes that mbind does not allow) is made again of normal pages.
 *  - NUMA: mbind() through the raw system call (no libnuma), before any page
 *    exists, so that the pages are born on the node (user_node.c).
 *  - Pinning and faulting in, after mbind: mlock2(MLOCK_ONFAULT) first, where
 *    the kernel checks RLIMIT_MEMLOCK for the whole segment before any page
 *    exists (an over-limit request fails at once, with a message saying how
 *    to raise it), then the pages are made, each locked as it is mapped.
 *    With shmem THP off (Debian's default), zeros are written into the
 *    memfd (pwritev: the file allocates its pages without a page fault each,
 *    on the node mbind asked for: the policy is the file's) and
 *    MADV_POPULATE_READ maps them, 16 pages a fault (fault-around; the
 *    mapping is writable at once, shmem keeps no dirty accounting).  With
 *    shmem THP allowed (/sys/kernel/mm/transparent_hugepage/shmem_enabled
 *    advise, within_size or always), MADV_POPULATE_WRITE faults in the
 *    2 MiB pages MADV_HUGEPAGE above asks for.  Kernels before 5.14 (no
 *    MADV_POPULATE_*) touch a byte a page instead.  A pool segment of
 *    2 MiB or more is made by several threads, a memfd each mapped side by
 *    side (gp_user_map_parts(); GPUPOOL_POPULATE_THREADS, default the CPUs
 *    this process may run on that nothing else is running on).  Hugetlb
 *    segments (and kernels without mlock2) are faulted by a plain mlock(),
 *    as before.
 *  - mlock() is called through syscall(): AddressSanitizer's interceptor
 *    turns mlock() into a no-op, which would hide the limit from the tests.
 *  - Descriptors of segments that are not shared are closed right after
 *    mmap: a process may hold many segments, and descriptors are scarce.
 *  - Under RLIMIT_FSIZE smaller than a segment (sizing or writing a memfd
 *    past it raises SIGXFSZ), a pool segment is MAP_SHARED | MAP_ANONYMOUS
 *    (shmem, sized by the kernel) and a shareable one is refused.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "user.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB	(21u << 26)
#endif


static int gp_user_open(struct gp_ctx *ctx)
{
	struct gp_user *u;
	struct rlimit rl;
	int ret;

	ret = gp_user_node_check(ctx);
	if (ret)
		return ret;
	u = calloc(1, sizeof(*u));
	if (!u)
		return gp_err(ctx, -ENOMEM, "gp_open: out of memory");
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
		u->memlock_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX :
				   rl.rlim_cur;
	u->hugetlb_ok = !(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES);
	ret = gp_populate_threads_setting(ctx, &u->populate_threads);
	if (ret < 0) {
		free(u);
		return ret;
	}
	u->populate_threads_set = ret > 0;
	if (!ret)
		u->populate_threads = gp_populate_threads_default();
	u->shmem_thp = !(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES) &&
		       gp_shmem_thp_allowed();
	ctx->backend_data = u;
	return 0;
}

static uint64_t gp_user_granularity(const struct gp_ctx *ctx)
{
	return ctx->page_size;
}

static uint64_t gp_user_memlock_limit(const struct gp_ctx *ctx)
{
	return gp_user_of(ctx)->memlock_limit;
}

static void gp_user_close(struct gp_ctx *ctx)
{
	free(ctx->backend_data);
	ctx->backend_data = NULL;
}

/*
 * Pin a segment whose pages are not locked yet: 0, or 1 when they are
 * huge pages that could not be faulted in (the caller tries normal
 * pages), or an error with its message.
 */
static int gp_user_mlock(struct gp_ctx *ctx, void *addr, uint64_t size,
			 bool huge)
{
	int e;

	if (!gp_mlock(addr, size))
		return 0;
	e = errno;
	if (huge && (e == ENOMEM || e == EAGAIN)) {
		/* Huge pages are reserved when mapped but taken when
		 * faulted, and mbind may allow only nodes that have none
		 * left (GP_OPEN_NUMA_STRICT): the fault fails (SIGBUS: mlock
		 * says ENOMEM; out of memory: EAGAIN).  Normal pages are
		 * tried (if RLIMIT_MEMLOCK was the reason, they fail too,
		 * and say so).
		 */
		gp_debug(ctx, "huge pages of %llu bytes not faulted in (%s); using normal pages",
			 (unsigned long long)size, strerror(e));
		return 1;
	}
	return (e == ENOMEM || e == EPERM || e == EAGAIN) ?
	       gp_memlock_error(ctx, e, size) :
	       gp_err(ctx, -e, "mlock: %s", strerror(e));
}

/* seg describes a fresh mapping of this backend's, not pinned yet. */
static void gp_user_seg_set(struct gp_seg *seg, void *addr, uint64_t size,
			    bool huge, int fd)
{
	seg->addr = (uint64_t)(uintptr_t)addr;
	seg->size = size;
	seg->huge = huge;
	seg->locked = false;
	seg->fd = fd;
}

/* One part of a segment to unmap, by a thread of its own. */
struct gp_unmapper {
	char *addr;
	uint64_t size;
	pthread_t thread;
	bool started;
};

static void *gp_unmap_part(void *arg)
{
	struct gp_unmapper *u = arg;

	munmap(u->addr, u->size);
	return NULL;
}

/*
 * A segment of several memfds (gp_user_map_parts()): a thread a part, as
 * it was made, each freeing its file's pages (the last reference to a
 * file goes with its mapping, and its pages with it).
 */
static void gp_user_unmap_parts(struct gp_seg *seg)
{
	struct gp_unmapper u[GP_POPULATE_MAX_THREADS];
	uint64_t off = 0;
	unsigned int i;

	for (i = 0; i < seg->parts; i++, off += seg->part_size) {
		u[i].addr = (char *)(uintptr_t)seg->addr + off;
		u[i].size = seg->size - off < seg->part_size ?
			    seg->size - off : seg->part_size;
		u[i].started = i && !pthread_create(&u[i].thread, NULL,
						    gp_unmap_part, &u[i]);
	}
	for (i = 0; i < seg->parts; i++)
		if (!u[i].started)
			gp_unmap_part(&u[i]);
	for (i = 1; i < seg->parts; i++)
		if (u[i].started)
			pthread_join(u[i].thread, NULL);
}

/* The mapping seg describes goes, with its descriptor (seg keeps its
 * address and size, for the host pools' figures).
 */
static void gp_user_seg_drop(struct gp_seg *seg)
{
	if (seg->parts > 1)
		gp_user_unmap_parts(seg);
	else
		munmap((void *)(uintptr_t)seg->addr, seg->size);
	if (seg->fd >= 0)
		close(seg->fd);
	seg->fd = -1;
}

/*
 * The end of making the segment seg describes (gp_user_seg_set()): ret is
 * the pinning's so far (1: not pinned yet, mlock it here).  On failure
 * the mapping goes and ret is returned (1: huge pages that could not be
 * faulted in, the caller tries normal ones); else the segment is locked,
 * its descriptor kept only when keep_fd.
 */
static int gp_user_settle(struct gp_ctx *ctx, struct gp_seg *seg, int ret,
			  bool keep_fd)
{
	if (ret > 0)
		ret = gp_user_mlock(ctx, (void *)(uintptr_t)seg->addr, seg->size,
				    seg->huge);
	if (ret) {
		gp_user_seg_drop(seg);
		return ret;
	}
	seg->locked = true;
	if (!keep_fd && seg->fd >= 0) {
		close(seg->fd);
		seg->fd = -1;
	}
	return 0;
}

/*
 * Reserves size bytes of address space (PROT_NONE) from a 2 MiB boundary,
 * for a segment's mappings to replace: where shmem THP can map huge pages
 * (the address and the file offset agree), and a whole number of pages on
 * every page size, whatever mmap aligns a file's mapping to by itself.
 * NULL, errno set, on failure.
 */
static char *gp_user_reserve(uint64_t size)
{
	char *raw, *base;

	raw = mmap(NULL, size + GP_HUGE_PAGE, PROT_NONE, MAP_PRIVATE |
		   MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	base = (char *)(((uintptr_t)raw + GP_HUGE_PAGE - 1) &
			~(uintptr_t)(GP_HUGE_PAGE - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	munmap(base + size, (size_t)(raw + GP_HUGE_PAGE - base));
	return base;
}

/*
 * A pool segment of normal pages for several threads: a memfd per thread,
 * mapped side by side in a range reserved first, so that each thread
 * writes a file of its own (a file's writes take turns on its lock) and
 * unmapping frees the files in parallel too (see gp_user_unmap()).  Never
 * exported, so no descriptor is kept.
 */
static int gp_user_map_parts(struct gp_ctx *ctx, struct gp_seg *seg,
			     uint64_t size, unsigned int threads)
{
	uint64_t part = gp_part_size(ctx, size, threads), off, len;
	unsigned int parts = (unsigned int)((size + part - 1) / part), i, nfd = 0;
	int fds[GP_POPULATE_MAX_THREADS];
	char *base;
	int e, ret;

	base = gp_user_reserve(size);
	if (!base)
		return gp_err(ctx, -errno, "reserving %llu bytes: %s",
			      (unsigned long long)size, strerror(errno));
	for (i = 0, off = 0; i < parts; i++, off += part) {
		len = size - off < part ? size - off : part;
		fds[i] = memfd_create("gpupool", MFD_CLOEXEC);
		if (fds[i] < 0) {
			e = errno;
			goto fail;
		}
		nfd++;
		if (ftruncate(fds[i], (off_t)len) ||
		    mmap(base + off, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fds[i], 0) == MAP_FAILED) {
			e = errno;
			goto fail;
		}
	}
	gp_user_seg_set(seg, base, size, false, -1);
	if (!(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES))
		madvise(base, size, MADV_HUGEPAGE);	/* transparent ones */
	ret = gp_user_bind(ctx, base, size);
	if (!ret)
		ret = gp_lock_populate(ctx, base, size, fds, parts, part, threads);
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	ret = gp_user_settle(ctx, seg, ret, false);
	if (!ret) {
		seg->parts = (uint16_t)parts;
		seg->part_size = part;
	}
	return ret;

fail:
	while (nfd)
		close(fds[--nfd]);
	munmap(base, size);
	return gp_err(ctx, -e, "mapping %llu bytes of memfd: %s",
		      (unsigned long long)size, strerror(e));
}

/* Whether a file of size bytes is over RLIMIT_FSIZE (ulimit -f): sizing
 * or writing it would raise SIGXFSZ, which kills by default.
 */
static bool gp_over_fsize(uint64_t size)
{
	struct rlimit rl;

	return !getrlimit(RLIMIT_FSIZE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	       rl.rlim_cur < size;
}

/*
 * A pool segment under a file size limit smaller than it: shared anonymous
 * memory (shmem too, shared with a child after fork(), sized by the kernel
 * without the limit), faulted in page by page.  No descriptor to export.
 */
static int gp_user_map_anon(struct gp_ctx *ctx, struct gp_seg *seg,
			    uint64_t size)
{
	int ret, nofd = -1;
	void *addr;

	addr = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED)
		return gp_err(ctx, -errno, "mapping %llu bytes of shared memory: %s",
			      (unsigned long long)size, strerror(errno));
	gp_user_seg_set(seg, addr, size, false, -1);
	if (!(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES))
		madvise(addr, size, MADV_HUGEPAGE);
	ret = gp_user_bind(ctx, addr, size);
	if (!ret)
		ret = gp_lock_populate(ctx, addr, size, &nofd, 1, size,
				       gp_populate_threads(ctx, size));
	return gp_user_settle(ctx, seg, ret, false);
}

/* A memfd of size bytes (of 2 MiB hugetlb pages when huge), sealable,
 * mapped shared: 0 or -errno, nothing left on failure.
 */
static int gp_user_memfd(uint64_t size, bool huge, int *fd, void **addr)
{
	unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
	int e;

	*addr = NULL;
	if (huge)
		flags |= MFD_HUGETLB | MFD_HUGE_2MB;
	*fd = memfd_create("gpupool", flags);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, (off_t)size) == 0) {
		*addr = gp_user_reserve(size);
		if (*addr && mmap(*addr, size, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_FIXED, *fd, 0) != MAP_FAILED)
			return 0;
	}
	e = errno;
	if (*addr)
		munmap(*addr, size);
	close(*fd);
	return -e;
}

/*
 * A segment of one memfd, of hugetlb pages when huge (faulted in by
 * mlock) or of normal ones (by gp_lock_populate() from `threads`
 * threads): 0, or 1 when huge pages could not be had (the caller tries
 * normal pages; nothing is left), or an error with its message.
 */
static int gp_user_map_memfd(struct gp_ctx *ctx, struct gp_seg *seg,
			     uint64_t size, bool huge, bool keep_fd,
			     unsigned int threads)
{
	void *addr;
	int fd, ret;

	ret = gp_user_memfd(size, huge, &fd, &addr);
	if (ret && !huge)
		return gp_err(ctx, ret, "mapping %llu bytes of memfd: %s",
			      (unsigned long long)size, strerror(-ret));
	if (ret) {
		gp_debug(ctx, "no hugetlb pages (%s); using normal pages",
			 strerror(-ret));
		gp_user_of(ctx)->hugetlb_ok = false;
		return 1;
	}
	gp_user_seg_set(seg, addr, size, huge, fd);
	/* The size can never change under a mapping (an importer could
	 * otherwise truncate it and make us fault).
	 */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	if (!huge && !(ctx->opt.flags & GP_OPEN_NO_HUGEPAGES))
		madvise(addr, size, MADV_HUGEPAGE);	/* transparent ones */
	ret = gp_user_bind(ctx, addr, size);
	if (!ret)
		ret = huge ? 1 : gp_lock_populate(ctx, addr, size, &fd, 1, size,
						  threads);
	return gp_user_settle(ctx, seg, ret, keep_fd);
}

static int gp_user_map(struct gp_ctx *ctx, struct gp_seg *seg, uint64_t size,
		       bool keep_fd)
{
	unsigned int threads;
	int ret;

	if (gp_over_fsize(size)) {
		if (!keep_fd)
			return gp_user_map_anon(ctx, seg, size);
		return gp_err(ctx, -EFBIG,
			      "a shareable buffer of %llu bytes is a file over this process's file size limit (RLIMIT_FSIZE, ulimit -f)",
			      (unsigned long long)size);
	}
	/* Hugetlb pages first, for whole 2 MiB pages, until they fail. */
	if (gp_user_of(ctx)->hugetlb_ok && size % GP_HUGE_PAGE == 0) {
		ret = gp_user_map_memfd(ctx, seg, size, true, keep_fd, 1);
		if (ret <= 0)
			return ret;
	}
	threads = gp_populate_threads(ctx, size);
	if (threads > 1 && !keep_fd)
		return gp_user_map_parts(ctx, seg, size, threads);
	return gp_user_map_memfd(ctx, seg, size, false, keep_fd, threads);
}

static void gp_user_unmap(struct gp_ctx *ctx, struct gp_seg *seg)
{
	(void)ctx;
	gp_user_seg_drop(seg);
}

static int gp_user_export(struct gp_ctx *ctx, struct gp_seg *seg, int *fd)
{
	int nfd = fcntl(seg->fd, F_DUPFD_CLOEXEC, 0);

	if (nfd < 0)
		return gp_err(ctx, -errno, "dup of the buffer's memfd: %s",
			      strerror(errno));
	*fd = nfd;
	return 0;
}

/* Map a memfd another process exported, whichever backend is open: one
 * sealed against shrinking, mapped and mlocked.
 */
static int gp_user_import_memfd(struct gp_ctx *ctx, int fd, struct gp_seg *seg)
{
	struct stat st;
	void *addr;
	int e, seals;

	if (fstat(fd, &st))
		return gp_err(ctx, -errno, "import: fstat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size <= 0)
		return gp_err(ctx, -EINVAL,
			      "import: descriptor %d is not a gpupool buffer",
			      fd);
	/* Whoever else holds the file could shrink it under our mapping and
	 * make every access past the new end fault: only a file sealed
	 * against that (as gp_host_export's memfds are) is mapped.
	 */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return gp_err(ctx, -EINVAL,
			      "import: descriptor %d is not a gpupool buffer: a file "
			      "not sealed against shrinking (F_SEAL_SHRINK) could be "
			      "truncated under the mapping", fd);
	addr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	if (addr == MAP_FAILED)
		return gp_err(ctx, -errno, "import: mmap: %s", strerror(errno));
	gp_user_seg_set(seg, addr, (uint64_t)st.st_size,
			st.st_blksize >= (blksize_t)GP_HUGE_PAGE, -1);
	if (gp_mlock(addr, seg->size)) {
		e = errno;
		gp_user_seg_drop(seg);
		return gp_memlock_error(ctx, e, (uint64_t)st.st_size);
	}
	seg->locked = true;
	return 0;
}

const struct gp_backend_ops gp_backend_user = {
	.name = "user",
	.open = gp_user_open,
	.close = gp_user_close,
	.map = gp_user_map,
	.unmap = gp_user_unmap,
	.export_fd = gp_user_export,
	.import_fd = gp_user_import_memfd,
	.granularity = gp_user_granularity,
	.memlock_limit = gp_user_memlock_limit,
};
