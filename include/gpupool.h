/* SPDX-License-Identifier: MIT */
/*
 * gpupool.h - libgpupool, pinned host memory and a device memory pool.
 *
 * Conventions (as in liburing):
 *  - Every function that can fail returns 0 or a negative errno value, and
 *    hands results back through out-parameters.  On failure the out-
 *    parameters are left untouched and gp_last_error() says, in words, what
 *    went wrong and what to do (which limit, how to raise it, which side is
 *    too old).
 *  - Ownership is stated for every result: "owned by the caller" means the
 *    caller releases it with the function named there.
 *  - A struct gp_ctx is thread-safe: any number of threads may call any
 *    function on it at once, except gp_close(), which must be the last call.
 *    A context must not be used in a child after fork(); open a new one
 *    there (an exported buffer crosses fork() as a file descriptor).
 *
 * Environment variables (read by gp_open(); see docs/library.md):
 *   GPUPOOL_BACKEND=kernel|user   force a host backend
 *   GPUPOOL_REQUIRE_CUDA=1        fail gp_open() when CUDA is not usable
 *   GPUPOOL_DEBUG=1               debug lines on stderr
 *   GPUPOOL_CUDART=/path/lib.so   the CUDA runtime to load
 *   GPUPOOL_HOST_LIMIT, GPUPOOL_DEV_LIMIT   defaults for the limits below
 *   GPUPOOL_DEV_MODE=segments|auto  device pools on cudaMalloc segments
 *                                 (GP_OPEN_DEV_SEGMENTS), or the default
 *   GPUPOOL_DEV_HEADROOM=P|none   virtual mode: idle mapped bytes kept,
 *                                 in percent of the most in use (9.09)
 */
#ifndef GPUPOOL_H
#define GPUPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GP_VERSION_MAJOR	1
#define GP_VERSION_MINOR	0

/* The same type as the CUDA runtime's cudaStream_t (struct CUstream_st *),
 * so either may be passed without a cast; NULL is the legacy default stream.
 */
typedef struct CUstream_st *gp_stream_t;

struct gp_ctx;

/* Opening ------------------------------------------------------------------ */

enum gp_backend {
	GP_BACKEND_AUTO = 0,	/* kernel when /dev/gpupool is usable, else user */
	GP_BACKEND_KERNEL = 1,	/* chunks from gpupool.ko through /dev/gpupool */
	GP_BACKEND_USER = 2,	/* memfd + mmap + mlock in this process */
};

#define GP_NUMA_ANY		(-1)	/* no placement */
#define GP_NUMA_NEAR_GPU	(-2)	/* the node of GPU gp_options.numa_device */

/* gp_options.flags */
#define GP_OPEN_REQUIRE_CUDA	(1u << 0)	/* CUDA unusable -> gp_open fails */
#define GP_OPEN_NO_CUDA		(1u << 1)	/* never load the CUDA runtime */
#define GP_OPEN_HOST_MAPPED	(1u << 2)	/* register with cudaHostRegisterMapped */
#define GP_OPEN_NUMA_STRICT	(1u << 3)	/* bind to the node (default: prefer it) */
#define GP_OPEN_NO_HUGEPAGES	(1u << 4)	/* never use huge pages */
#define GP_OPEN_DEV_SEGMENTS	(1u << 5)	/* device pools: cudaMalloc
						 * segments even where the
						 * virtual mode works */
#define GP_OPEN_VALID_FLAGS	(0x3fu)

/* Placement policies of the allocators (the BFC core's, docs/placement.md).
 * DEFAULT is TF, TensorFlow's BFC placement exactly.
 */
enum gp_placement {
	GP_PLACEMENT_DEFAULT = 0,
	GP_PLACEMENT_TF = 1,
	GP_PLACEMENT_EXACT = 2,
	GP_PLACEMENT_SEG = 3,
	GP_PLACEMENT_HALF = 4,
	GP_PLACEMENT_AGE = 5,
};

struct gp_options {
	uint32_t size;		/* sizeof(struct gp_options); set by gp_options_init */
	uint32_t flags;		/* GP_OPEN_* */
	int32_t backend;	/* enum gp_backend */
	int32_t numa_node;	/* node number, GP_NUMA_ANY or GP_NUMA_NEAR_GPU */
	int32_t numa_device;	/* the GPU that GP_NUMA_NEAR_GPU refers to */
	int32_t placement;	/* enum gp_placement: how the host and device
				 * pools place chunks [GP_PLACEMENT_DEFAULT,
				 * or $GPUPOOL_POLICY] */
	/* Host side.  0 means the default in brackets. */
	uint64_t host_limit;		/* bytes mapped at most [no limit] */
	uint64_t host_cache_max;	/* idle cached bytes kept at most [no cap] */
	uint64_t host_gc_idle_ms;	/* release segments idle this long [10000;
					 * GP_HOST_GC_NEVER: never] */
	uint64_t host_small_segment;	/* segment for requests <= 1 MiB, at
					 * least 1 MiB [2 MiB] */
	/* Device side. */
	uint64_t dev_limit;		/* bytes per device [none] */
	double dev_limit_fraction;	/* of cudaMemGetInfo total, (0, 1] [none] */
	uint64_t dev_initial_segment;	/* first segment size, a multiple of 256,
					 * at most 64 TiB [2 MiB] */
	const char *cudart;		/* runtime path [$GPUPOOL_CUDART or
					 * libcudart.so.13] (copied) */
	uint64_t reserved[8];		/* must be 0 */
};

/* host_gc_idle_ms: idle segments go back only when asked, trimmed or
 * over a limit, never for their age (what 0 meant before ABI 1.2).
 */
#define GP_HOST_GC_NEVER	UINT64_MAX

/* Defaults: everything 0, backend AUTO, numa_node GP_NUMA_ANY. */
void gp_options_init(struct gp_options *opts);

/* Open a context.  opts may be NULL (defaults).  *ctx is owned by the caller
 * and released with gp_close().  Errors: -EINVAL (bad options), -ENODEV
 * (forced kernel backend without /dev/gpupool, CUDA required and not
 * usable, or GP_OPEN_NUMA_STRICT to a node that cannot serve: no memory
 * there, not in this process's cpuset (user backend), or no gpupool.ko
 * sub-pool there), -EPROTO (module ABI
 * incompatible), -EACCES, -ENOMEM.  The message
 * of a failed gp_open() is read with gp_last_error(NULL) on the same thread.
 */
int gp_open(const struct gp_options *opts, struct gp_ctx **ctx);

/* Release everything the context holds: every host buffer and device block
 * (still allocated or not), unregistering each chunk from CUDA before it is
 * unmapped, and waiting for pending device frees.  Pointers from the context
 * are invalid afterwards.
 */
void gp_close(struct gp_ctx *ctx);

/* The message of the last failure on this context (any thread), or of the
 * last failed gp_open() on this thread when ctx is NULL.  The string belongs
 * to the calling thread and stays valid until its next gp_last_error() call.
 * "" when nothing failed.
 */
const char *gp_last_error(struct gp_ctx *ctx);
/* A static description of a negative errno value returned by this library. */
const char *gp_strerror(int err);

/* How a device pool gets its memory (see docs/library.md). */
enum gp_dev_mode {
	/* One cudaMalloc segment per growth, sizes doubling; blocks never
	 * span two segments, a segment is freed only when wholly free.
	 */
	GP_DEV_SEGMENTS = 0,
	/* One reserved virtual range per pool, physical memory mapped in the
	 * driver's granularity as far as the pool needs (CUDA virtual memory
	 * management); free granules anywhere are given back by a trim.  The
	 * default where the device supports it.
	 */
	GP_DEV_VIRTUAL = 1,
};

enum gp_cuda_state {
	GP_CUDA_OFF = 0,	/* runtime not loaded (missing, no device, disabled) */
	GP_CUDA_REGISTERED = 1,	/* host chunks are registered with cudaHostRegister */
};

struct gp_info {
	int32_t backend;		/* GP_BACKEND_KERNEL or GP_BACKEND_USER */
	int32_t cuda_state;		/* enum gp_cuda_state */
	int32_t device_count;		/* CUDA devices (0 when off) */
	int32_t cuda_runtime_version;	/* cudaRuntimeGetVersion, 0 when off */
	int32_t cuda_driver_version;	/* cudaDriverGetVersion, 0 when off */
	int32_t numa_node;		/* node host memory is placed on, or -1 */
	uint32_t lib_major, lib_minor;	/* GP_VERSION_* of the library */
	uint32_t abi_major, abi_minor;	/* kernel ABI the library speaks */
	uint32_t kmod_abi_major;	/* what the module speaks (kernel backend; */
	uint32_t kmod_abi_minor;	/* 0 on the user backend) */
	uint64_t host_granularity;	/* page size of host segments */
	uint32_t hugepages;		/* 1 if some segment is on huge pages now */
	uint32_t io_fixed;		/* enum gp_io_fixed: gp_read's fixed buffers */
	int32_t dev_mode;		/* enum gp_dev_mode of device 0's pool */
	char backend_name[16];		/* "kernel" / "user" */
	char cudart[128];		/* the runtime loaded, or "" */
	char why[192];			/* why the backend / CUDA state is what it is */
};
int gp_info(struct gp_ctx *ctx, struct gp_info *info);

/* Host memory ---------------------------------------------------------------- */

/* gp_host_alloc flags */
/* The buffer gets a chunk of its own (page-rounded) so that it can be
 * exported with gp_host_export(); it is never cached after it is freed.
 */
#define GP_HOST_SHARED		(1u << 0)
#define GP_HOST_VALID_FLAGS	(GP_HOST_SHARED)

/* Pinned host memory of at least size bytes, 512-byte aligned (page-aligned
 * for GP_HOST_SHARED and for requests over 1 MiB), registered with CUDA when
 * CUDA is usable.  The contents are not zeroed on reuse.  *ptr is owned by
 * the caller and released with gp_host_free().  Errors: -EINVAL (size 0,
 * unknown flags), -ENOMEM (limit reached or the system refused: see
 * gp_last_error()), -ENOSPC (kernel backend: a cgroup's limit on the
 * pool; gp_last_error() names the cgroup, its limit and its use), -EIO
 * (cudaHostRegister failed).
 */
int gp_host_alloc(struct gp_ctx *ctx, size_t size, unsigned int flags,
		  void **ptr);
/* Release a buffer from gp_host_alloc() or gp_host_import().  It goes back
 * to the cache (still mapped and registered) unless it was shared or
 * imported.  -EINVAL if ptr did not come from this context.
 */
int gp_host_free(struct gp_ctx *ctx, void *ptr);

/* A new file descriptor describing a GP_HOST_SHARED buffer, to pass to
 * another process (SCM_RIGHTS or fork) that calls gp_host_import().  *fd is
 * owned by the caller (close it); the buffer may be freed independently.
 * -EINVAL if ptr is not the start of a GP_HOST_SHARED buffer of this context
 * (on either backend: a buffer without GP_HOST_SHARED, or an imported one,
 * whose descriptor is to be passed on instead).
 */
int gp_host_export(struct gp_ctx *ctx, void *ptr, int *fd);
/* Map a buffer exported by gp_host_export() in any process (either backend
 * imports either kind of descriptor).  fd stays owned by the caller.  *ptr
 * (the same bytes) is owned by the caller and released with gp_host_free();
 * *size (may be NULL) is its length.  It counts against host_limit like a
 * segment: -ENOMEM when it does not fit even after releasing idle segments.
 * -EINVAL for a descriptor that is no gpupool buffer, including a file not
 * sealed against shrinking (F_SEAL_SHRINK: gp_host_export's are), which its
 * holder could truncate under the mapping.
 */
int gp_host_import(struct gp_ctx *ctx, int fd, void **ptr, size_t *size);

/* Give back every cached segment that holds no buffer (unregistered, then
 * unmapped).  *released (may be NULL) receives the byte count.
 */
int gp_host_trim(struct gp_ctx *ctx, uint64_t *released);

struct gp_host_stats {
	uint64_t in_use;		/* bytes in buffers (rounded) */
	uint64_t requested;		/* bytes asked for by live buffers */
	uint64_t reserved;		/* bytes mapped (segments + imports) */
	uint64_t peak_reserved;
	uint64_t cached;		/* reserved - in_use */
	uint64_t idle;			/* bytes in segments holding no buffer */
	uint64_t limit;			/* host_limit, 0 = none */
	uint64_t memlock_limit;		/* RLIMIT_MEMLOCK (user backend), or 0 */
	uint64_t segments;		/* segments mapped now */
	uint64_t segments_huge;		/* of which on huge pages */
	/* gp_host_alloc / gp_host_free calls that succeeded; gp_host_free
	 * also frees imports: live buffers = allocs + imports - frees.
	 */
	uint64_t allocs, frees;
	uint64_t cache_hits;		/* allocations served without mapping */
	uint64_t map_calls;		/* segments mapped (mmap / ALLOC), ever */
	uint64_t unmap_calls;		/* segments unmapped, ever */
	uint64_t register_calls;	/* cudaHostRegister calls, ever */
	uint64_t unregister_calls;	/* cudaHostUnregister calls, ever */
	uint64_t registered;		/* segments registered now */
	uint64_t exports, imports;	/* successful calls, ever */
	uint64_t trimmed;		/* bytes given back by trim/cap/gc/asks, ever */
	uint64_t failed;		/* allocations that failed */
};
int gp_host_stats(struct gp_ctx *ctx, struct gp_host_stats *stats);

/* Device memory --------------------------------------------------------------- */

/* size bytes (rounded up to 256) of memory on CUDA device `device`, for use
 * on `stream`.  One pool per device; per stream inside it.  *ptr is owned by
 * the caller and released with gp_dev_free().  Errors: -ENODEV (CUDA off, no
 * such device, or no host memory for the device's pool), -EINVAL (size 0),
 * -ENOMEM (out of memory after releasing cached segments; with GPUPOOL_DEBUG
 * the memory map goes to stderr), -EIO (cudaMalloc failed for a reason other
 * than memory, e.g. a broken context: gp_last_error says which).
 */
int gp_dev_alloc(struct gp_ctx *ctx, int device, size_t size,
		 gp_stream_t stream, void **ptr);
/* Free ptr, ordered on `stream` (normally its allocation stream).  Work
 * already queued on that stream may still use it: it is reused on the same
 * stream at once and on other streams only after events recorded now on
 * every other stream that used it (gp_dev_record_stream, or a different
 * free stream) have completed.  -EINVAL for an unknown pointer.
 */
int gp_dev_free(struct gp_ctx *ctx, void *ptr, gp_stream_t stream);
/* Say that ptr is used on `stream` as well as on its allocation stream.
 * -EINVAL for an unknown pointer or one already freed.
 */
int gp_dev_record_stream(struct gp_ctx *ctx, void *ptr, gp_stream_t stream);
/* Release every wholly free segment of `device` (-1: all) with cudaFree;
 * in the virtual mode, unmap and release every granule that no block uses.
 * *released (may be NULL) receives the byte count.
 */
int gp_dev_trim(struct gp_ctx *ctx, int device, uint64_t *released);

struct gp_dev_stats {
	uint64_t in_use;		/* bytes in blocks handed out (rounded) */
	uint64_t requested;
	uint64_t peak_in_use;
	uint64_t reserved;		/* bytes in cudaMalloc segments */
	uint64_t peak_reserved;
	uint64_t limit;			/* effective limit, 0 = none */
	uint64_t segments;
	uint64_t streams;		/* streams with a sub-pool */
	uint64_t pending_blocks;	/* freed, waiting for events */
	uint64_t pending_bytes;
	uint64_t allocs, frees;
	uint64_t cuda_mallocs;		/* successful cudaMalloc calls, ever */
	uint64_t cuda_frees;
	uint64_t malloc_refusals;	/* cudaMalloc failures, ever */
	uint64_t backpedals;		/* retries at 90% */
	uint64_t ooms;			/* -ENOMEM returned */
	uint64_t event_syncs;		/* cudaEventSynchronize before an OOM */
	uint64_t next_segment;		/* size the next growth starts from */
	/* The pool's mode (enum gp_dev_mode) and, in the virtual mode, its
	 * physical memory: reserved and peak_reserved above are then the
	 * mapped bytes too, segments and streams count sub-pools (two per
	 * stream: blocks up to 1 MiB apart), segments those holding a region.
	 */
	uint64_t mode;
	uint64_t granularity;		/* the driver's (virtual mode), else 256 */
	uint64_t mapped;		/* bytes mapped now (virtual mode) */
	uint64_t peak_mapped;
	uint64_t va_reserved;		/* virtual address space reserved */
	uint64_t map_calls;		/* granules created and mapped, ever */
	uint64_t unmap_calls;		/* granules unmapped and released, ever */
	uint64_t growth_trims;		/* trims before a new mapping (growth or hole) */
};
int gp_dev_stats(struct gp_ctx *ctx, int device, struct gp_dev_stats *stats);

/* A JSON document of every device pool: its segments and their blocks
 * (address, size, requested, state, stream).  *json (NUL-terminated) is owned
 * by the caller and released with free(); *len (may be NULL) is its length.
 * device -1: all devices.
 */
int gp_dev_snapshot(struct gp_ctx *ctx, int device, char **json, size_t *len);

/* Reading files into host memory -------------------------------------------- */

/* gp_read flags */
#define GP_READ_NO_CACHE	(1u << 0)	/* never the page cache: -EINVAL instead */
#define GP_READ_BUFFERED	(1u << 1)	/* through the page cache (plain pread) */
#define GP_READ_VALID_FLAGS	(GP_READ_NO_CACHE | GP_READ_BUFFERED)

/* gp_info.io_fixed: can pool memory be an io_uring fixed buffer here? */
enum gp_io_fixed {
	GP_IO_FIXED_UNKNOWN = 0,	/* not tried yet: no gp_read so far */
	GP_IO_FIXED_OK = 1,		/* yes: reads use READ_FIXED */
	GP_IO_FIXED_REFUSED = 2,	/* the kernel refuses these pages (6.1
					 * for gpupool.ko's chunks; 6.12 takes
					 * them): O_DIRECT without fixed buffers */
	GP_IO_FIXED_NO_RING = 3,	/* io_uring unavailable: pread */
	GP_IO_FIXED_NO_TABLE = 4,	/* io_uring without sparse buffer
					 * tables (before 5.19): O_DIRECT
					 * through the ring's plain READ */
};

/* Read len bytes of fd at offset into dst, which must lie inside one buffer
 * of this context (gp_host_alloc / gp_host_import); fd must be open for
 * reading (its offset and flags are not used or changed).  Best path first:
 * io_uring READ_FIXED with O_DIRECT, O_DIRECT, the page cache (see
 * docs/library.md); gp_read_stats() counts each.  *done (may be NULL)
 * receives the bytes read: less than len only at the end of the file
 * (0 at or past it).  Errors: -EINVAL (len 0 or overflowing, dst outside
 * the pool, bad flags, or GP_READ_NO_CACHE where O_DIRECT is impossible),
 * -EBADF (fd not readable), -EISDIR, or the file's I/O error; the bytes of
 * dst up to the error are the file's, the rest are unchanged or the file's.
 */
int gp_read(struct gp_ctx *ctx, int fd, uint64_t offset, void *dst,
	    size_t len, unsigned int flags, size_t *done);

/* Many reads in flight: a reader owns an io_uring ring.  One thread uses a
 * reader at a time; open one per worker.
 */
struct gp_reader;

struct gp_read_req {
	int fd;			/* in: as for gp_read() */
	unsigned int flags;	/* in: GP_READ_* */
	uint64_t offset;	/* in */
	void *dst;		/* in */
	size_t len;		/* in */
	uint64_t user_data;	/* the caller's, untouched */
	int64_t result;		/* out: bytes read (short only at EOF) or -errno */
	uint64_t internal[8];	/* the library's while in flight */
};

/* depth: requests pending at most (0: 64; at most 4096).  *r is owned by the
 * caller and released with gp_reader_close() (or by gp_close()).
 */
int gp_reader_open(struct gp_ctx *ctx, unsigned int depth,
		   struct gp_reader **r);
/* Waits for every request in flight, then releases the reader. */
void gp_reader_close(struct gp_reader *r);
/* Start n requests; the array must stay in place until each is returned by
 * gp_reader_wait().  Unaligned heads and tails (and bodies whose memory and
 * file offsets disagree on alignment) are read before this returns; the
 * aligned bodies are in flight.  Bad requests complete at once with a
 * negative result.  -EBUSY when more than depth would be pending.
 */
int gp_reader_submit(struct gp_reader *r, struct gp_read_req *reqs,
		     unsigned int n);
/* Wait until min requests (clamped to those pending) have completed, then
 * hand back up to max completed ones in done[] (*ndone of them, may be 0
 * with min 0: a poll).  Returns 0 or -errno from io_uring_enter.
 */
int gp_reader_wait(struct gp_reader *r, unsigned int min,
		   struct gp_read_req **done, unsigned int max,
		   unsigned int *ndone);
/* Requests submitted and not yet handed back. */
unsigned int gp_reader_pending(struct gp_reader *r);

/* Pieces read on each path and their bytes, since the context opened. */
struct gp_read_stats {
	uint64_t requests;		/* gp_read calls + batch requests */
	uint64_t bytes;			/* bytes read into pool memory */
	uint64_t errors;		/* requests that ended in an error */
	uint64_t short_reads;		/* requests that ended at end of file */
	uint64_t fixed, fixed_bytes;	/* io_uring READ_FIXED, O_DIRECT */
	uint64_t direct, direct_bytes;	/* O_DIRECT into the buffer (io_uring, pread) */
	uint64_t bounce, bounce_bytes;	/* O_DIRECT via a bounce block (unaligned) */
	uint64_t buffered, buffered_bytes; /* through the page cache */
	uint64_t fixed_registered;	/* segment registrations held by rings now */
	uint64_t fixed_refusals;	/* registrations the kernel refused */
	uint64_t readers;		/* readers open now (gp_read's pool too) */
	uint32_t fixed_state;		/* enum gp_io_fixed */
	uint32_t pad;
};
int gp_read_stats(struct gp_ctx *ctx, struct gp_read_stats *stats);

/* PyTorch (torch.cuda.memory.CUDAPluggableAllocator) --------------------------- */

/* Allocation through a process-wide default context, opened on first use
 * from the environment.  They return NULL / do nothing on failure (the
 * message goes to stderr once).  See docs/library.md.
 */
void *gp_torch_alloc(ssize_t size, int device, gp_stream_t stream);
void gp_torch_free(void *ptr, ssize_t size, int device, gp_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GPUPOOL_H */
