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
#define GPUPOOL_ABI_MINOR	2

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
	__u64 features;			/* out: GPUPOOL_FEATURE_* (1.1) */
	__u64 reserved[3];		/* must be 0 */
};

#define GPUPOOL_VERSION_VALID_FLAGS	0u

/* Chunks are charged to cgroups; GPUPOOL_IOC_CGROUP answers (ABI 1.1). */
#define GPUPOOL_FEATURE_CGROUP		(1ull << 0)
/*
 * Cgroup limits are the kernel's dmem controller's: `dmem.max` of region
 * "gpupool" in cgroupfs (Linux 6.14+ with CONFIG_CGROUP_DMEM).  Without
 * this bit, limits are the module's own (GPUPOOL_CGROUP_SET_LIMIT).
 */
#define GPUPOOL_FEATURE_DMEM		(1ull << 1)
/*
 * Idle memory circulates (ABI 1.2): holders mark idle chunks
 * (GPUPOOL_IOC_IDLE), an ALLOC the pool or a cgroup limit refuses asks
 * them for some back and waits, and a holder learns what it is asked
 * for by poll() (POLLPRI) and GPUPOOL_IOC_ASKED.
 */
#define GPUPOOL_FEATURE_RECLAIM		(1ull << 2)

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
 * The chunk is charged to the allocating task's cgroup (v2) and to each of
 * its ancestors until its last reference is gone, wherever the task, the
 * mappings or exported fds go meanwhile (see GPUPOOL_IOC_CGROUP).
 *
 * When the pool (or `node`'s sub-pool) is full, or a cgroup limit would
 * refuse it, and other files hold chunks they marked idle
 * (GPUPOOL_IOC_IDLE, ABI 1.2), the ALLOC asks them for some back and
 * waits, at most the reclaim_wait_ms module parameter, until what it
 * asked for is given back; then it tries once more.  Which chunks, and
 * what the ask came to: GPUPOOL_IOC_ASK_REPORT.  GPUPOOL_ALLOC_NO_RECLAIM
 * fails at once instead (a caller that will first give back idle chunks
 * of its own).
 *
 * Errors: -EINVAL (size 0, bad flags, non-zero node without
 * GPUPOOL_ALLOC_NODE, non-zero pad/reserved), -ENODEV (no sub-pool on
 * `node`), -ENOMEM (the pool cannot serve it, even after waiting for freed
 * chunks to be zeroed, trying to grow and asking holders of idle chunks),
 * -EDQUOT (the process would exceed the per_process_limit module
 * parameter), -ENOSPC (the task's cgroup or one of its ancestors would
 * exceed its limit: which one, GPUPOOL_IOC_CGROUP with
 * GPUPOOL_CGROUP_LAST_DENIAL tells), -EINTR (killed while waiting).
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
/* Ask no one for idle chunks: refuse at once (ABI 1.2, FEATURE_RECLAIM). */
#define GPUPOOL_ALLOC_NO_RECLAIM	(1u << 1)
#define GPUPOOL_ALLOC_VALID_FLAGS	(GPUPOOL_ALLOC_NODE | \
					 GPUPOOL_ALLOC_NO_RECLAIM)

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

/*
 * GPUPOOL_IOC_CGROUP (ABI 1.1): a cgroup's share of the pool.
 *
 * Every chunk is charged to a cgroup of the default (v2) hierarchy and to
 * its ancestors; `usage` and `chunks` count a cgroup and its descendants.
 * A limit bounds the same sum: an ALLOC that would take any cgroup on the
 * allocating task's path above its limit fails with -ENOSPC.
 *
 * The cgroup is named by cgroup_fd, an open file descriptor of its
 * directory in a cgroup2 mount (O_RDONLY | O_DIRECTORY), or, with
 * GPUPOOL_CGROUP_LAST_DENIAL, it is the one whose limit refused this
 * file's last ALLOC that failed with -ENOSPC (cgroup_fd must be -1).
 *
 *  - no flag: the cgroup's figures (anyone who can open /dev/gpupool);
 *  - GPUPOOL_CGROUP_SET_LIMIT: set its limit to `limit` bytes (> 0; it may
 *    be below the current usage: live chunks stay, new ALLOCs fail);
 *  - GPUPOOL_CGROUP_CLEAR_LIMIT: no limit.
 * Setting or clearing needs CAP_SYS_ADMIN in the initial user namespace,
 * and fails with -EOPNOTSUPP where GPUPOOL_FEATURE_DMEM is set: there the
 * limit is dmem.max in cgroupfs.
 *
 * Out: `limit` (GPUPOOL_NO_LIMIT when none; with GPUPOOL_FEATURE_DMEM,
 * GPUPOOL_NO_LIMIT and flags has GPUPOOL_CGROUP_DMEM: read dmem.max),
 * `usage`, `chunks`, `cgroup_id` (the inode number of its directory), and,
 * when path_ptr is not 0, the cgroup's path relative to the caller's cgroup
 * namespace root, NUL-terminated, in the path_len bytes at path_ptr (the
 * same path /proc/self/cgroup shows; -ENAMETOOLONG when it does not fit).
 * For GPUPOOL_CGROUP_LAST_DENIAL, limit and usage are those at the
 * refusal (the figures of the cgroup whose limit refused it); -ENOENT when
 * no ALLOC of this file was refused by a cgroup limit.
 *
 * Errors: -EINVAL (bad flags, SET_LIMIT with CLEAR_LIMIT, limit 0 or
 * GPUPOOL_NO_LIMIT with SET_LIMIT, limit with other flags, non-zero
 * pad/reserved), -EBADF (cgroup_fd is not a cgroup v2 directory), -EPERM,
 * -EOPNOTSUPP (above), -ENOENT, -ENAMETOOLONG, -EFAULT.
 */
struct gpupool_cgroup {
	__u32 flags;			/* in: GPUPOOL_CGROUP_*; out: + DMEM */
	__s32 cgroup_fd;		/* in: cgroup v2 directory, or -1 */
	__u64 limit;			/* in: with SET_LIMIT; out */
	__u64 usage;			/* out: bytes charged, descendants too */
	__u64 chunks;			/* out: chunks charged, descendants too */
	__u64 cgroup_id;		/* out */
	__u64 denials;			/* out: ALLOCs its limit refused */
	__u64 path_ptr;			/* in: buffer for the path, or 0 */
	__u32 path_len;			/* in: its size in bytes */
	__u32 pad;			/* must be 0 */
	__u64 reserved[4];		/* must be 0 */
};

#define GPUPOOL_CGROUP_SET_LIMIT	(1u << 0)
#define GPUPOOL_CGROUP_CLEAR_LIMIT	(1u << 1)
#define GPUPOOL_CGROUP_LAST_DENIAL	(1u << 2)
#define GPUPOOL_CGROUP_VALID_FLAGS	(GPUPOOL_CGROUP_SET_LIMIT | \
					 GPUPOOL_CGROUP_CLEAR_LIMIT | \
					 GPUPOOL_CGROUP_LAST_DENIAL)
/* out only: the limit is the dmem controller's (GPUPOOL_FEATURE_DMEM). */
#define GPUPOOL_CGROUP_DMEM		(1u << 31)

#define GPUPOOL_NO_LIMIT		(~0ull)

#define GPUPOOL_IOC_CGROUP	_IOWR(GPUPOOL_IOC_MAGIC, 0x05, struct gpupool_cgroup)

/*
 * Reclaim of idle memory (ABI 1.2, GPUPOOL_FEATURE_RECLAIM).
 *
 * A holder that keeps freed chunks mapped for reuse (a cache) tells the
 * module which of them hold nothing in use: GPUPOOL_IOC_IDLE marks a
 * chunk of this file idle, or busy again (GPUPOOL_IDLE_BUSY).  Only
 * those transitions are told; a chunk is busy until marked idle, and
 * idle until marked busy, freed or its file closed.  Memory in use is
 * never asked for.
 *
 * An ALLOC that is refused (pool full; a cgroup limit) asks for idle
 * chunks of other files, oldest idle first, only as many bytes as it
 * lacks: any file's for a full pool (only chunks on `node` for a strict
 * ALLOC), only chunks charged inside the limiting cgroup's subtree for a
 * cgroup limit.  A process is asked for no more than the reclaim_rate
 * module parameter allows (bytes per second, sustained).  The asked file
 * polls POLLPRI (poll(), epoll): GPUPOOL_IOC_ASKED lists the handles
 * asked for; it gives each back (unmap, GPUPOOL_IOC_FREE) or marks it
 * busy.  The ALLOC waits until every asked chunk is freed or busy again,
 * or reclaim_wait_ms has passed, then tries once more; its ask ends then
 * (what was not given back is no longer asked for).
 */

/*
 * GPUPOOL_IOC_IDLE: mark this file's chunk `handle` idle (flags 0) or busy
 * again (GPUPOOL_IDLE_BUSY).  Marking it as it is already changes
 * nothing (an idle chunk keeps its age).  Errors: -EINVAL (a handle this
 * file does not hold, bad flags, non-zero pad/reserved), -ENOMEM.
 */
struct gpupool_idle {
	__u64 handle;			/* in */
	__u32 flags;			/* in: GPUPOOL_IDLE_* */
	__u32 pad;			/* must be 0 */
	__u64 reserved[2];		/* must be 0 */
};

#define GPUPOOL_IDLE_BUSY		(1u << 0)
#define GPUPOOL_IDLE_VALID_FLAGS	(GPUPOOL_IDLE_BUSY)

#define GPUPOOL_IOC_IDLE	_IOW(GPUPOOL_IOC_MAGIC, 0x06, struct gpupool_idle)

/*
 * GPUPOOL_IOC_ASKED: the chunks of this file the module asks back, oldest
 * idle first: up to `nr` handles into the __u64 array at handles_ptr
 * (may be 0 with nr 0).  Out: nr, how many are asked (more than fit, at
 * most); bytes, their bytes.  While nr is not 0 the file polls POLLPRI.
 */
struct gpupool_asked {
	__u32 flags;			/* in: must be 0 */
	__u32 nr;			/* in: room at handles_ptr; out: asked */
	__u64 handles_ptr;		/* in: user address of nr __u64 */
	__u64 bytes;			/* out */
	__u64 reserved[3];		/* must be 0 */
};

#define GPUPOOL_ASKED_VALID_FLAGS	0u

#define GPUPOOL_IOC_ASKED	_IOWR(GPUPOOL_IOC_MAGIC, 0x07, struct gpupool_asked)

/*
 * GPUPOOL_IOC_ASK_REPORT: what the last ALLOC of this file that was
 * refused (-ENOMEM or -ENOSPC before asking) found and asked: the
 * processes holding idle chunks (up to GPUPOOL_ASK_MAX_HOLDERS, most idle
 * bytes first; `more` counts the others) and what each gave back by the
 * end of the wait.  A holder running under another effective uid than
 * this file's opener is shown without pid or command (GPUPOOL_ASK_HIDDEN)
 * unless the file was opened with CAP_SYS_ADMIN, as /proc/gpupool shows
 * holders.  -ENOENT when no ALLOC of this file was refused so.
 */
#define GPUPOOL_ASK_MAX_HOLDERS		8

struct gpupool_ask_holder {
	__s32 pid;			/* in the caller's pid namespace; 0: not shown */
	__u32 flags;			/* GPUPOOL_ASK_* */
	__u64 idle;			/* bytes it had idle (those this file saw) */
	__u64 asked;			/* bytes asked of it */
	__u64 given;			/* of those, freed by the end of the wait */
	__u64 busy;			/* of those, marked busy again instead */
	__u8 comm[16];			/* its command, NUL-terminated */
	__u64 reserved[2];		/* 0 */
};

/* Asked for some of its idle chunks. */
#define GPUPOOL_ASK_ASKED		(1u << 0)
/* Not asked (or asked less): the reclaim_rate allowance spent. */
#define GPUPOOL_ASK_THROTTLED		(1u << 1)
/* Some of its idle chunks could not help: another cgroup's (a cgroup
 * limit), another node's (a strict ALLOC), or asked by another ALLOC.
 */
#define GPUPOOL_ASK_ELSEWHERE		(1u << 2)
/* Another user's process: pid 0, comm empty. */
#define GPUPOOL_ASK_HIDDEN		(1u << 3)

struct gpupool_ask_report {
	__u32 flags;			/* in: must be 0 */
	__u32 nr;			/* in: room at holders_ptr; out: entries */
	__u64 holders_ptr;		/* in: user address of nr entries (or 0) */
	__u64 size;			/* out: the ALLOC's size */
	__u64 need;			/* out: bytes it looked for */
	__u64 asked;			/* out: bytes asked, all holders */
	__u64 given;			/* out: of those, freed by the end */
	__u64 idle;			/* out: bytes idle in other files */
	__u64 wait_ns;			/* out: time it waited */
	__s32 refusal;			/* out: -ENOMEM (pool) or -ENOSPC */
	__s32 result;			/* out: 0 served after the wait, or -errno */
	__u32 more;			/* out: holders with idle memory not listed */
	__u32 timed_out;		/* out: 1 when the wait ended at its bound */
	__u64 reserved[4];		/* must be 0 */
};

#define GPUPOOL_ASK_REPORT_VALID_FLAGS	0u

#define GPUPOOL_IOC_ASK_REPORT	_IOWR(GPUPOOL_IOC_MAGIC, 0x08, struct gpupool_ask_report)

#endif /* _UAPI_LINUX_GPUPOOL_H */
