/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpupool.h - what the parts of gpupool.ko share.
 */
#ifndef GPUPOOL_KMOD_H
#define GPUPOOL_KMOD_H

#include <linux/types.h>

#define GPUPOOL_NAME	"gpupool"

/* dev.c: the /dev/gpupool miscdevice. */
int gpupool_dev_init(umode_t mode);
void gpupool_dev_exit(void);

/* proc.c: /proc/gpupool. */
int gpupool_proc_init(void);
void gpupool_proc_exit(void);

/* The pool as the ABI reports it. */
u64 gpupool_pool_size(void);

#endif /* GPUPOOL_KMOD_H */
