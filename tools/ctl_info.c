// SPDX-License-Identifier: MIT
/*
 * ctl_info.c - gpupoolctl info: what the loaded module speaks and serves,
 * from /dev/gpupool (GPUPOOL_IOC_VERSION): its ABI and the oldest library
 * ABI it accepts, the pool's size and granularity, its NUMA nodes and
 * which cgroup limits it has.  An ABI other than these tools' is said,
 * with which side to upgrade (exit 5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/gpupool.h>

#include "ctl.h"

int cmd_info(const struct opts *o)
{
	struct gpupool_version v;
	int fd = open(dev_path, O_RDWR | O_CLOEXEC), ret = EX_OK;

	if (fd < 0)
		return explain_open_error(dev_path, errno);
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, GPUPOOL_IOC_VERSION, &v) < 0) {
		fprintf(stderr, "gpupoolctl: GPUPOOL_IOC_VERSION: %s\n",
			strerror(errno));
		close(fd);
		return EX_FAIL;
	}
	close(fd);
	if (v.abi_major != GPUPOOL_ABI_MAJOR) {
		fprintf(stderr, "gpupoolctl: the module speaks ABI %u.%u, these tools %u.%u: upgrade the %s\n",
			v.abi_major, v.abi_minor, GPUPOOL_ABI_MAJOR,
			GPUPOOL_ABI_MINOR,
			v.abi_major > GPUPOOL_ABI_MAJOR ? "gpupool tools (and libgpupool)" :
			"gpupool module");
		ret = EX_ABI;
	}
	if (o->json) {
		printf("{\"abi_major\": %u, \"abi_minor\": %u, \"min_lib_major\": %u, "
		       "\"tools_abi_major\": %u, \"tools_abi_minor\": %u, "
		       "\"pool_size\": %llu, \"granularity\": %llu, "
		       "\"nr_nodes\": %u, \"node_mask\": %llu, \"features\": %llu}\n",
		       v.abi_major, v.abi_minor, v.min_lib_major,
		       GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR,
		       (unsigned long long)v.pool_size,
		       (unsigned long long)v.granularity, v.nr_nodes,
		       (unsigned long long)v.node_mask,
		       (unsigned long long)v.features);
		return ret;
	}
	printf("module ABI:     %u.%u (accepts libraries from ABI %u)\n",
	       v.abi_major, v.abi_minor, v.min_lib_major);
	printf("gpupoolctl ABI: %u.%u\n", GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
	printf("pool size:      %llu bytes\n", (unsigned long long)v.pool_size);
	printf("granularity:    %llu bytes\n", (unsigned long long)v.granularity);
	printf("NUMA nodes:     %u (mask %#llx)\n", v.nr_nodes,
	       (unsigned long long)v.node_mask);
	printf("cgroup limits:  %s\n",
	       !(v.features & GPUPOOL_FEATURE_CGROUP) ? "none (module before ABI 1.1)" :
	       v.features & GPUPOOL_FEATURE_DMEM ? "dmem.max (dmem controller), region gpupool" :
	       "the module's own (gpupoolctl limit)");
	printf("idle memory:    %s\n",
	       v.features & GPUPOOL_FEATURE_RECLAIM ?
	       "asked back when needed (reclaim_wait_ms, reclaim_rate)" :
	       "never asked back (module before ABI 1.2)");
	return ret;
}
