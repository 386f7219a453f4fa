/* SPDX-License-Identifier: MIT */
/*
 * cgroupfs.h - which cgroup's dmem.max refused a chunk (cgroupfs.c).
 *
 * gpupool.ko refuses GPUPOOL_IOC_ALLOC with ENOSPC when a cgroup limit
 * would be exceeded.  With its own limits it names the cgroup; where the
 * limit is the dmem controller's (GPUPOOL_CGROUP_DMEM), the kernel does
 * not say which ancestor refused, and the kernel backend finds it here:
 * from the task's cgroup up to the root, in the cgroup2 mount, the first
 * whose dmem.current + request exceeds its dmem.max for region "gpupool".
 *
 * Everything is read with open(2) and read(2) (no stdio), so that a test
 * can serve the files (tests/fuzz/fuzz_ioctl_reply.c wraps open), and the
 * mountinfo file is a parameter (NULL: /proc/self/mountinfo), so that a
 * test can point the whole walk at a directory of its own
 * (tests/lib/cgroup_limit.c).
 */
#ifndef GPUPOOL_USERLIB_BACKEND_CGROUPFS_H
#define GPUPOOL_USERLIB_BACKEND_CGROUPFS_H

#include <stddef.h>
#include <stdint.h>

#define GP_CG_PATH_MAX		4096	/* PATH_MAX: paths the module gives */
#define GP_CG_MOUNTINFO		"/proc/self/mountinfo"
#define GP_CG_DEFAULT_MOUNT	"/sys/fs/cgroup"
#define GP_CG_DMEM_REGION	"gpupool"	/* the module's dmem region */
/* The walk reads at most this many levels (a deeper path is not one the
 * kernel made; it bounds the work whatever the module says).
 */
#define GP_CG_MAX_DEPTH		256

/* The cgroup2 mount that shows a cgroup. */
struct gp_cg_mount {
	char dir[GP_CG_PATH_MAX];	/* mount point */
	char root[GP_CG_PATH_MAX];	/* the cgroup it shows at dir ("/") */
};

/*
 * The first cgroup2 mount in mountinfo (NULL: /proc/self/mountinfo) whose
 * root holds cgroup `path` (as /proc/self/cgroup names it; NULL: any).
 * 0; -ENOENT when the file lists no cgroup2 mount or cannot be read:
 * then m is GP_CG_DEFAULT_MOUNT showing "/"; -EXDEV when cgroup2 mounts
 * are listed but none shows `path` (m is left as the default then too).
 */
int gp_cg_find_mount(const char *mountinfo, const char *path,
		     struct gp_cg_mount *m);

/*
 * The value of region GP_CG_DMEM_REGION in the text of a dmem file
 * (dmem.max, dmem.current: a line "<region> <bytes>" or "<region> max"
 * per region): 0 and *val (UINT64_MAX for "max"); -ENOENT when no line
 * names the region; -EINVAL when its value is no number of bytes.
 */
int gp_dmem_value(const char *text, uint64_t *val);

/* What gp_dmem_find() found. */
struct gp_dmem_hit {
	char path[GP_CG_PATH_MAX];	/* the cgroup, as /proc/self/cgroup names it */
	char file[GP_CG_PATH_MAX];	/* its dmem.max */
	uint64_t max;			/* bytes */
	uint64_t current;		/* bytes */
	unsigned int levels;		/* cgroups looked at */
	int read_error;			/* the first errno reading a dmem.max, or 0 */
};

/*
 * From cgroup `path` (absolute, as /proc/self/cgroup names it) up to the
 * root of its cgroup2 mount (found in mountinfo, NULL:
 * /proc/self/mountinfo), the first cgroup whose dmem.current + request
 * exceeds its dmem.max for region GP_CG_DMEM_REGION.  0 and *hit;
 * -ENOENT when none does (hit->levels, hit->read_error say how far it
 * got); -EINVAL for a path that is not absolute, has "." or ".."
 * components or is too long; -EXDEV when no cgroup2 mount shows it.
 */
int gp_dmem_find(const char *mountinfo, const char *path, uint64_t request,
		 struct gp_dmem_hit *hit);

#endif /* GPUPOOL_USERLIB_BACKEND_CGROUPFS_H */
