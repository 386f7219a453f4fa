/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfc_env.h - what the BFC allocator core (core/bfc*.c) gets from the
 * kernel.  The userspace build provides the same names in
 * userlib/bfc_env.h, which lists them.
 *
 * The core is compiled unchanged inside the module, so every kernel name a
 * header here declares is a name the core cannot use for itself: keep the
 * includes to the very few below (no slab.h, mm.h: they pull in rbtree.h,
 * list.h and much more).  Metadata memory therefore comes through two
 * out-of-line functions (kmod/bfc_env.c).
 */
#ifndef GPUPOOL_BFC_ENV_H
#define GPUPOOL_BFC_ENV_H

#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/string.h>
#include <linux/types.h>

/* Names the core uses that the kernel spells differently. */
#ifndef UINT32_MAX
#define UINT32_MAX	U32_MAX
#endif
#ifndef UINT64_MAX
#define UINT64_MAX	U64_MAX
#endif

/* A broken invariant is a bug in the core: warn once, keep running. */
#define BFC_ASSERT(cond, msg)	WARN_ONCE(!(cond), "bfc: %s", msg)

/* Metadata memory: kvzalloc(GFP_KERNEL) / kvfree().  May sleep: callers
 * hold a mutex, never a spinlock.
 */
void *gp_bfc_env_alloc(size_t size);
void gp_bfc_env_free(void *ptr);

#define bfc_env_alloc(size)		gp_bfc_env_alloc(size)
#define bfc_env_free(ptr, size)		gp_bfc_env_free(ptr)
#define bfc_memcpy(d, s, n)		memcpy(d, s, n)
#define bfc_memset(d, c, n)		memset(d, c, n)
#define bfc_snprintf			snprintf

#endif /* GPUPOOL_BFC_ENV_H */
