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

#endif /* _UAPI_LINUX_GPUPOOL_H */
