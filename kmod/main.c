// SPDX-License-Identifier: GPL-2.0
/*
 * gpupool - a reserved pool of pinned host pages served as exact-size chunks
 * by a best-fit-with-coalescing allocator, through /dev/gpupool.
 *
 * main.c: module parameters, load and unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/stat.h>

#include "gpupool.h"

static ushort dev_mode = 0660;
module_param(dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "Permissions of /dev/gpupool (default 0660)");

u64 gpupool_pool_size(void)
{
	return 0;
}

static int __init gpupool_init(void)
{
	int ret;

	if (dev_mode & ~0777) {
		pr_err("dev_mode=%#o: only permission bits (0777) allowed\n",
		       dev_mode);
		return -EINVAL;
	}

	ret = gpupool_proc_init();
	if (ret)
		return ret;

	ret = gpupool_dev_init(dev_mode);
	if (ret)
		goto out_proc;

	pr_info("loaded\n");
	return 0;

out_proc:
	gpupool_proc_exit();
	return ret;
}

static void __exit gpupool_exit(void)
{
	gpupool_dev_exit();
	gpupool_proc_exit();
	pr_info("unloaded\n");
}

module_init(gpupool_init);
module_exit(gpupool_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Pinned host memory pool for GPU data pipelines");
MODULE_VERSION(GPUPOOL_VERSION);
