// SPDX-License-Identifier: GPL-2.0
/*
 * dev.c - the /dev/gpupool miscdevice and its ioctls.
 *
 * Each command has one short handler: copy the argument into a zeroed
 * struct, validate (unknown flag bits and non-zero reserved fields give
 * -EINVAL), act, copy back.  Unknown commands give -ENOTTY.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/gpupool.h>

#include "gpupool.h"

static bool gpupool_zeroed(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static long gpupool_ioctl_version(void __user *uarg)
{
	struct gpupool_version v;

	if (copy_from_user(&v, uarg, sizeof(v)))
		return -EFAULT;
	if (v.flags & ~GPUPOOL_VERSION_VALID_FLAGS)
		return -EINVAL;
	if (v.pad || !gpupool_zeroed(v.reserved, sizeof(v.reserved)))
		return -EINVAL;

	memset(&v, 0, sizeof(v));
	v.abi_major = GPUPOOL_ABI_MAJOR;
	v.abi_minor = GPUPOOL_ABI_MINOR;
	v.min_lib_major = GPUPOOL_ABI_MAJOR;
	v.pool_size = gpupool_pool_size();
	v.granularity = PAGE_SIZE;
	v.nr_nodes = 0;
	v.node_mask = 0;

	if (copy_to_user(uarg, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

static long gpupool_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case GPUPOOL_IOC_VERSION:
		return gpupool_ioctl_version(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations gpupool_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= gpupool_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice gpupool_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= GPUPOOL_NAME,
	.fops	= &gpupool_fops,
};

int gpupool_dev_init(umode_t mode)
{
	gpupool_misc.mode = mode;
	return misc_register(&gpupool_misc);
}

void gpupool_dev_exit(void)
{
	misc_deregister(&gpupool_misc);
}
