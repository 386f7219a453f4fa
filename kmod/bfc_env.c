// SPDX-License-Identifier: GPL-2.0
/*
 * bfc_env.c - the BFC core's metadata memory (see bfc_env.h for why this is
 * not inline).
 */
#include <linux/slab.h>

#include "bfc_env.h"

void *gp_bfc_env_alloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

void gp_bfc_env_free(void *ptr)
{
	kvfree(ptr);
}
