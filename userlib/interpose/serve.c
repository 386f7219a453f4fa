// SPDX-License-Identifier: MIT
/*
 * serve.c - what becomes of a pinned host request, whichever entry point
 * it came through (interpose.h): the pool serves it, CUDA does (the real
 * function), or it gets CUDA's error.
 *
 * - A request is served at its own size by the host pools (gp_host_alloc:
 *   512-byte blocks up to 1 MiB, pages above, never a power of two), from
 *   segments registered portable and mapped, so that every flag the pool
 *   honours holds.  Size 0, write-combined and unknown flags go to CUDA
 *   (counted as flags), as does a NULL result pointer (not counted: there
 *   is no request).
 * - What the pool cannot serve (no pool, full, a limit, a registration
 *   CUDA refused) goes to CUDA in fallback mode, counted by why and said
 *   once; in strict mode it fails as an allocation CUDA cannot make does.
 * - A free of a pool buffer gives it back to the pool; of a pointer inside
 *   the pool that is no live buffer (a double free, an inner pointer) is
 *   refused as CUDA refuses a bad pointer; of anything else goes to CUDA,
 *   which allocated it or will say it did not.
 * - Queries answer as CUDA does: the flags a buffer was allocated with
 *   (for any address inside it), its device address from CUDA's own
 *   answer for the registered segment.
 *
 * The hot path, a request that fits a cached segment, makes no CUDA call
 * and no system call, and takes the pools' lock once: a buffer's flags are
 * its chunk's tag.  A thread's request of the size and flags of a buffer
 * it freed a short while before takes none (cache.c).
 */
#include <errno.h>
#include <stdio.h>

#include "internal.h"
#include "host/host.h"
#include "interpose.h"

static int ip_why_of(int err)
{
	switch (err) {
	case -ENOMEM:
		return GP_INTERPOSE_POOL_FULL;
	case -ENOSPC:
	case -EDQUOT:
		return GP_INTERPOSE_LIMIT;
	case -EIO:
		return GP_INTERPOSE_CUDA;
	default:
		return GP_INTERPOSE_OTHER;
	}
}

static const char *const ip_why_text[GP_INTERPOSE_NR_WHY] = {
	"the pool is unavailable", "the pool is full", "a limit refused it",
	"CUDA refused to register a new segment", "its flags",
	"an error",
};

/* What the pool could not serve: the mode decides. */
static enum ip_verdict ip_cannot(int why, size_t size, const char *detail)
{
	if (ip_mode() == GP_INTERPOSE_STRICT) {
		ip_count_refused(why);
		ip_say_once(why, "a request of %zu bytes fails (strict mode): "
			    "%s: %s", size, ip_why_text[why], detail);
		return IP_NOMEM;
	}
	ip_count_fallback(why, size);
	ip_say_once(why, "a request of %zu bytes goes to CUDA (fallback mode; "
		    "later ones that fail so are only counted): %s: %s",
		    size, ip_why_text[why], detail);
	return IP_REAL;
}

enum ip_verdict ip_alloc(void **ptr, size_t size, unsigned int flags,
			 int driver)
{
	struct gp_ctx *ctx;
	void *p;
	int ret;

	if (ip_mode() == GP_INTERPOSE_OFF || !ptr)
		return IP_REAL;
	if (!size || (flags & ~IP_POOL_FLAGS)) {
		ip_count_fallback(GP_INTERPOSE_FLAGS, size);
		return IP_REAL;
	}
	ctx = ip_pool();
	if (!ctx)
		return ip_cannot(GP_INTERPOSE_UNAVAILABLE, size, ip_pool_why());
	if (!ip_cache_take(size, flags, &p)) {
		ret = gp_host_alloc_tagged(ctx, size, IP_TAG_MARK | flags, &p);
		/* Full or at a limit: the threads' cached buffers first. */
		if ((ip_why_of(ret) == GP_INTERPOSE_POOL_FULL ||
		     ip_why_of(ret) == GP_INTERPOSE_LIMIT) && ip_cache_flush(ctx))
			ret = gp_host_alloc_tagged(ctx, size, IP_TAG_MARK | flags, &p);
		if (ret)
			return ip_cannot(ip_why_of(ret), size, gp_last_error(ctx));
		ip_cache_track(p, size, flags);
	}
	ip_count_served(size, driver);
	*ptr = p;
	return IP_DONE;
}

/* Where ptr lies in this process's pool: 0 in a live buffer starting at
 * *base with *tag, -EINVAL elsewhere in the pool, -ENOENT outside it (or
 * no pool).
 */
static int ip_lookup(void *ptr, uint64_t *base, uint64_t *tag)
{
	struct gp_ctx *ctx = ip_pool_opened();

	return ctx ? gp_host_lookup(ctx, (uint64_t)(uintptr_t)ptr, base, tag) :
	       -ENOENT;
}

/* A free: back to the pool, refused (no live buffer of the pool there),
 * the parent's (in a child of fork()), or CUDA's: the pool's lock taken
 * once, whichever.
 */
enum ip_verdict ip_free(void *ptr)
{
	struct gp_ctx *ctx = ip_pool_opened();
	uint64_t tag, size;
	int ret;

	if (!ptr || ip_mode() == GP_INTERPOSE_OFF)
		return IP_REAL;
	switch (ctx ? ip_cache_put(ctx, ptr, &size) : IP_NOT_CACHED) {
	case IP_FREED:
		ip_count_freed(size);
		return IP_DONE;
	case IP_FREED_TWICE:
		ip_count(IP_BAD_FREE);
		return IP_INVALID;
	case IP_NOT_CACHED:
		break;
	}
	ret = ctx ? gp_host_free_tagged(ctx, ptr, &tag, &size) : -ENOENT;
	if (!ret) {
		ip_count_freed(size);
		return IP_DONE;
	}
	if (ret != -ENOENT) {
		ip_count(IP_BAD_FREE);
		return IP_INVALID;
	}
	if (ip_inherited(ptr)) {	/* the parent's: it stays the parent's */
		ip_count(IP_INHERITED);
		return IP_NOT_INIT;
	}
	ip_count(IP_REAL_FREE);
	return IP_REAL;
}

/* The verdict on a query about ptr: IP_DONE with the flags of the live
 * pool buffer holding it, or what to answer instead.
 */
static enum ip_verdict ip_query(void *ptr, unsigned int *flags)
{
	uint64_t base, tag;
	int ret;

	if (ip_mode() == GP_INTERPOSE_OFF)
		return IP_REAL;
	ret = ip_lookup(ptr, &base, &tag);
	if (!ret && ip_cache_holds((void *)(uintptr_t)base))
		return IP_INVALID;	/* freed, kept by a thread's cache */
	if (!ret) {
		*flags = (unsigned int)tag & IP_POOL_FLAGS;
		return IP_DONE;
	}
	if (ret == -EINVAL)
		return IP_INVALID;
	if (ip_inherited(ptr)) {
		ip_count(IP_INHERITED);
		return IP_NOT_INIT;
	}
	return IP_REAL;
}

enum ip_verdict ip_get_flags(void *ptr, unsigned int *flags)
{
	unsigned int f;
	enum ip_verdict v = ip_query(ptr, &f);

	if (v == IP_DONE && !flags)
		return IP_INVALID;
	if (v == IP_DONE)
		*flags = f;
	return v;
}

enum ip_verdict ip_get_devptr(void *ptr, void **dev)
{
	unsigned int f;
	enum ip_verdict v = ip_query(ptr, &f);
	void *d;

	if (v != IP_DONE)
		return v;
	/* CUDA's answer for the registered segment, at this address (the
	 * runtime asks the driver through our wrapper, which passes it on:
	 * interpose.h, ip_enter).
	 */
	if (!dev || gp_cuda_host_devptr(ip_pool_opened(), ptr, &d) != cudaSuccess)
		return IP_INVALID;
	*dev = d;
	return IP_DONE;
}
