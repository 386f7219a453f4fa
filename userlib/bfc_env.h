/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_env.h - the userspace environment of the BFC core (core/bfc*.c).
 *
 * The core includes nothing but "bfc.h" (which includes this file) and its
 * private header.  This file is the whole list of what it needs from its
 * host; kmod/bfc_env.h maps the same names for the kernel build:
 *
 *   uint8_t uint16_t uint32_t uint64_t int64_t uintptr_t size_t
 *   bool true false NULL UINT32_MAX UINT64_MAX
 *                          <stdint.h> <stddef.h> <stdbool.h>
 *                          (kernel: <linux/types.h>, <linux/limits.h>)
 *   BFC_ASSERT(cond, msg)  internal invariant; cond has no side effects
 *                          (userspace: assert; kernel: WARN_ON_ONCE(!(cond)))
 *   bfc_env_alloc(size)    zeroed memory for metadata, NULL on failure; may
 *                          sleep (kernel: kvzalloc(size, GFP_KERNEL))
 *   bfc_env_free(p, size)  releases bfc_env_alloc() memory (size is what
 *                          was asked for; kernel: kvfree(p))
 *   bfc_memcpy(d, s, n)    memcpy
 *   bfc_memset(d, c, n)    memset
 *   bfc_snprintf(buf, len, fmt, ...)
 *                          C semantics: returns the length the full text
 *                          needs, writes at most len bytes incl. the NUL;
 *                          buf may be NULL when len is 0.  Formats used:
 *                          %llu %llx %u %x %d %s, with explicit casts.
 *
 *   __always_inline noinline
 *                          the kernel's function attributes
 *                          (<linux/compiler_types.h>, always there);
 *                          defined below unless the C library has them
 *   likely(x) unlikely(x)  the kernel's branch hints (<linux/compiler.h>)
 *
 * The compiler builtins __builtin_ctzll/__builtin_clzll/__builtin_ctz/
 * __builtin_clz and __builtin_mul_overflow are used directly (gcc, clang).
 */
#ifndef GPUPOOL_USERLIB_BFC_ENV_H
#define GPUPOOL_USERLIB_BFC_ENV_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NDEBUG
#define BFC_ASSERT(cond, msg)	((void)sizeof((cond) && (msg)))
#else
#define BFC_ASSERT(cond, msg)	assert((cond) && (msg))
#endif

static inline void *bfc_env_alloc(size_t size)
{
	return calloc(1, size);
}

static inline void bfc_env_free(void *p, size_t size)
{
	(void)size;
	free(p);
}

#ifndef __always_inline
#define __always_inline		inline __attribute__((__always_inline__))
#endif
#ifndef noinline
#define noinline		__attribute__((__noinline__))
#endif

#ifndef likely
#define likely(x)		__builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x)		__builtin_expect(!!(x), 0)
#endif

#define bfc_memcpy(d, s, n)	memcpy((d), (s), (n))
#define bfc_memset(d, c, n)	memset((d), (c), (n))
#define bfc_snprintf(...)	snprintf(__VA_ARGS__)

#endif /* GPUPOOL_USERLIB_BFC_ENV_H */
