/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfc_env.h - what the BFC allocator core (core/bfc.c) gets from the kernel.
 * The userspace build provides the same names in userlib/bfc_env.h.
 */
#ifndef GPUPOOL_BFC_ENV_H
#define GPUPOOL_BFC_ENV_H

#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/types.h>

/* A broken invariant is a bug in the core: warn once, keep running. */
#define BFC_ASSERT(cond, msg)	WARN_ONCE(!(cond), "bfc: %s", msg)

/* Metadata memory.  May sleep: callers hold a mutex, never a spinlock. */
#define bfc_env_alloc(size)		kvzalloc(size, GFP_KERNEL)
#define bfc_env_free(ptr, size)		kvfree(ptr)
#define bfc_memcpy(d, s, n)		memcpy(d, s, n)
#define bfc_memset(d, c, n)		memset(d, c, n)
#define bfc_snprintf			snprintf

#endif /* GPUPOOL_BFC_ENV_H */
