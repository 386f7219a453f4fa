/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * gpupool ABI: ioctls on /dev/gpupool.  Shared, unchanged, by gpupool.ko and
 * libgpupool.
 *
 * Rules (as for every kernel uapi): only __u32/__u64 fields, explicit
 * padding, pointers as __u64.  Every struct has a flags word checked against
 * a VALID_FLAGS mask and reserved fields that must be zero: unknown flag bits
 * or non-zero reserved fields give -EINVAL, an unknown command -ENOTTY.  New
 * behaviour gets a new command number and a minor version bump; an
 * incompatible change bumps the major version.
 */
#ifndef _UAPI_LINUX_GPUPOOL_H
#define _UAPI_LINUX_GPUPOOL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GPUPOOL_ABI_MAJOR	1
#define GPUPOOL_ABI_MINOR	0

#define GPUPOOL_IOC_MAGIC	'G'

/* GPUPOOL_IOC_VERSION: what the loaded module speaks and serves. */
struct gpupool_version {
	__u32 abi_major;		/* out */
	__u32 abi_minor;		/* out */
	__u32 min_lib_major;		/* out: oldest library major accepted */
	__u32 flags;			/* in: must be 0 */
	__u64 pool_size;		/* out: bytes reserved in all nodes */
	__u64 granularity;		/* out: chunk granularity (page size) */
	__u32 nr_nodes;			/* out: NUMA sub-pools */
	__u32 pad;			/* must be 0 */
	__u64 node_mask;		/* out: bit n set = sub-pool on node n */
	__u64 reserved[4];		/* must be 0 */
};

#define GPUPOOL_VERSION_VALID_FLAGS	0u

#define GPUPOOL_IOC_VERSION	_IOWR(GPUPOOL_IOC_MAGIC, 0x00, struct gpupool_version)

/*
 * GPUPOOL_IOC_ALLOC: a chunk of at least `size` bytes, zeroed, belonging to
 * this open file.  The chunk is mapped with
 *	mmap(NULL, chunk_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, handle)
 * (MAP_SHARED only; the length must be chunk_size, the offset the handle).
 * A handle means something only in the file that allocated it.  The chunk
 * lives until it is freed (GPUPOOL_IOC_FREE or closing the file) and no
 * mapping or exported fd refers to it any more.
 *
 * Without GPUPOOL_ALLOC_NODE the chunk comes from the caller's NUMA node
 * when that node has a sub-pool and room, else from another node; with it,
 * only from `node`.
 *
 * Errors: -EINVAL (size 0, bad flags, non-zero node without
 * GPUPOOL_ALLOC_NODE, non-zero pad/reserved), -ENODEV (no sub-pool on
 * `node`), -ENOMEM (the pool cannot serve it, even after waiting for freed
 * chunks to be zeroed and trying to grow), -EDQUOT (the process would
 * exceed the per_process_limit module parameter), -EINTR (killed while
 * waiting).
 */
struct gpupool_alloc {
	__u64 size;			/* in: bytes wanted, > 0 */
	__u32 flags;			/* in: GPUPOOL_ALLOC_* */
	__u32 node;			/* in: with GPUPOOL_ALLOC_NODE; else 0 */
	__u64 handle;			/* out: mmap offset naming the chunk */
	__u64 chunk_size;		/* out: real size (page-rounded) */
	__u32 chunk_node;		/* out: node the pages are on */
	__u32 pad;			/* must be 0 */
	__u64 reserved[4];		/* must be 0 */
};

#define GPUPOOL_ALLOC_NODE		(1u << 0)	/* node is valid: strict */
#define GPUPOOL_ALLOC_VALID_FLAGS	(GPUPOOL_ALLOC_NODE)

#define GPUPOOL_IOC_ALLOC	_IOWR(GPUPOOL_IOC_MAGIC, 0x01, struct gpupool_alloc)

/*
 * GPUPOOL_IOC_FREE: give up this file's reference to a chunk; the handle is
 * dead at once.  Mappings and exported fds keep the memory until they go.
 * -EINVAL for a handle this file does not hold (never held, or freed).
 */
struct gpupool_free {
	__u64 handle;			/* in */
	__u32 flags;			/* in: must be 0 */
	__u32 pad;			/* must be 0 */
	__u64 reserved[2];		/* must be 0 */
};

#define GPUPOOL_FREE_VALID_FLAGS	0u

#define GPUPOOL_IOC_FREE	_IOW(GPUPOOL_IOC_MAGIC, 0x02, struct gpupool_free)

/*
 * GPUPOOL_IOC_STATS: the figures /proc/gpupool shows (described in
 * docs/proc-gpupool.md), for the whole pool and per NUMA sub-pool.
 * Sizes in bytes.  The pool's bytes always add up:
 *	total == free + in_use + zeroing + quarantined
 */
struct gpupool_pool_stats {
	__u64 total;			/* bytes reserved */
	__u64 free;			/* zeroed, ready to allocate */
	__u64 in_use;			/* in live chunks */
	__u64 peak_in_use;		/* most in_use since load */
	__u64 zeroing;			/* released, waiting to be zeroed */
	__u64 quarantined;		/* released but still pinned */
	__u64 largest_free;		/* largest free chunk */
	__u64 chunks_in_use;
	__u64 chunks_free;
	__u64 chunks_zeroing;
	__u64 chunks_quarantined;
	__u64 allocs;			/* successful GPUPOOL_IOC_ALLOCs */
	__u64 frees;			/* chunks whose last reference went */
	__u64 failed_allocs;		/* ALLOCs refused with -ENOMEM */
	__u64 limit_denials;		/* ALLOCs refused with -EDQUOT */
	__u64 growths;			/* regions added after load */
	__u32 fragmentation_ppm;	/* 1 - largest_free / free, in ppm */
	__u32 node;			/* NUMA node (whole pool: ~0u) */
	__u64 reserved[4];		/* 0 */
};

struct gpupool_stats {
	__u32 flags;			/* in: must be 0 */
	__u32 nr_nodes;			/* in: entries at nodes_ptr;
					 * out: sub-pools in the pool */
	__u64 nodes_ptr;		/* in: user address of nr_nodes
					 * struct gpupool_pool_stats (or 0) */
	__u64 reserve_time_ns;		/* out: time the load's reservation took */
	__u64 max_size;			/* out: growth limit (0: no growth) */
	__u64 reserved[4];		/* must be 0 */
	struct gpupool_pool_stats total;	/* out: the whole pool */
};

#define GPUPOOL_STATS_VALID_FLAGS	0u

#define GPUPOOL_IOC_STATS	_IOWR(GPUPOOL_IOC_MAGIC, 0x03, struct gpupool_stats)

/*
 * GPUPOOL_IOC_EXPORT: a new file descriptor standing for one chunk, to pass
 * to another process (SCM_RIGHTS, fork).  It holds its own reference: the
 * chunk lives while the fd is open, even after GPUPOOL_IOC_FREE or after the
 * allocating process exits.  Map it with
 *	mmap(NULL, size, prot, MAP_SHARED, chunk_fd, 0)
 * and ask its size with GPUPOOL_IOC_CHUNK_INFO.  The fd is opened with the
 * access mode of the /dev/gpupool file it came from.
 */
struct gpupool_export {
	__u64 handle;			/* in */
	__u32 flags;			/* in: GPUPOOL_EXPORT_* */
	__u32 fd;			/* out: the new file descriptor */
	__u64 reserved[2];		/* must be 0 */
};

#define GPUPOOL_EXPORT_CLOEXEC		(1u << 0)	/* O_CLOEXEC on the fd */
#define GPUPOOL_EXPORT_VALID_FLAGS	(GPUPOOL_EXPORT_CLOEXEC)

#define GPUPOOL_IOC_EXPORT	_IOWR(GPUPOOL_IOC_MAGIC, 0x04, struct gpupool_export)

/* GPUPOOL_IOC_CHUNK_INFO: on an exported chunk fd only (-ENOTTY elsewhere). */
struct gpupool_chunk_info {
	__u64 size;			/* out: chunk size in bytes */
	__u32 node;			/* out: NUMA node of its pages */
	__u32 flags;			/* in: must be 0 */
	__u64 reserved[2];		/* must be 0 */
};

#define GPUPOOL_CHUNK_INFO_VALID_FLAGS	0u

#define GPUPOOL_IOC_CHUNK_INFO	_IOWR(GPUPOOL_IOC_MAGIC, 0x10, struct gpupool_chunk_info)

#endif /* _UAPI_LINUX_GPUPOOL_H */
