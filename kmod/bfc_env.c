// SPDX-License-Identifier: GPL-2.0
/*
 * bfc_env.c - the BFC core's metadata memory (see bfc_env.h for why this is
 * not inline).
 */
#include <linux/mm.h>		/* kvzalloc(), kvfree() (slab.h since 5.16) */
#include <linux/slab.h>

#include "bfc_env.h"

void *gp_bfc_env_alloc(size_t size)
{
	/* kvmalloc refuses more than INT_MAX bytes with a WARN: a chunk array
	 * of 2^25 slots (16 million chunks on one node) would ask for that.
	 * The core takes NULL as -ENOMEM, before changing anything.
	 */
	if (size > INT_MAX)
		return NULL;
	return kvzalloc(size, GFP_KERNEL);
}

void gp_bfc_env_free(void *ptr)
{
	kvfree(ptr);
}
