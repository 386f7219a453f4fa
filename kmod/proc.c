// SPDX-License-Identifier: GPL-2.0
/*
 * proc.c - /proc/gpupool: the pool's state for anyone to read, in the style
 * of /proc/meminfo (`Key: value`, sizes in kB).  Field names are ABI: add,
 * never rename.
 */
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/gpupool.h>

#include "gpupool.h"

static int gpupool_proc_show(struct seq_file *m, void *v)
{
	seq_printf(m, "AbiVersion:     %u.%u\n", GPUPOOL_ABI_MAJOR,
		   GPUPOOL_ABI_MINOR);
	seq_printf(m, "PoolTotal:      %llu kB\n", gpupool_pool_size() >> 10);
	return 0;
}

int gpupool_proc_init(void)
{
	if (!proc_create_single(GPUPOOL_NAME, 0444, NULL, gpupool_proc_show))
		return -ENOMEM;
	return 0;
}

void gpupool_proc_exit(void)
{
	remove_proc_entry(GPUPOOL_NAME, NULL);
}
