/* SPDX-License-Identifier: MIT */
/*
 * interpose.h - what the interposer's files share.
 *
 * libgpupool-interpose.so is loaded with LD_PRELOAD (gpupoolctl run) and
 * serves the pinned host memory that a process asks of CUDA from the pool,
 * whichever way the request reaches CUDA.  entries.h lists every entry
 * point once; runtime.c defines the runtime's by symbol (with the
 * runtime's symbol versions), driver.c the driver's by symbol, by
 * cuGetProcAddress and by the runtime's cudaGetDriverEntryPoint, dlsym.c
 * dlsym() and dlvsym() on a handle.  Whatever the way in, a request ends
 * in serve.c, which says what to do with it: the pool served it (or
 * cache.c, a thread's freed buffers), call the real function, or answer
 * an error (errors.c keeps such an error where cudaGetLastError finds
 * it).  state.c has the settings and the pool (a
 * libgpupool context, opened on first use and again in a child of
 * fork()) and the report; counters.c the figures; inherit.c what a child
 * inherited; objects.c finds the real functions' objects.  A buffer's
 * flags live in its chunk of the pool (a tag), so that a request takes
 * the pools' lock once and nothing else.
 *
 * The rest of libgpupool is compiled in (its objects, hidden): the
 * interposer reaches the host pools through host/host.h and CUDA through
 * cuda.h, like any room of the library.  docs/interpose.md is the user's
 * side of all this.
 */
#ifndef GPUPOOL_USERLIB_INTERPOSE_H
#define GPUPOOL_USERLIB_INTERPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "gpupool_interpose.h"
#include "cuda.h"

#define IP_API __attribute__((visibility("default")))
/* Static TLS: the library is loaded with the program (LD_PRELOAD), and
 * the variables are read on every call.
 */
#define IP_TLS __thread __attribute__((tls_model("initial-exec")))

/* The flags the pool honours: portable and mapped (every segment is
 * registered with both).  The runtime's and the driver's have the same
 * values: cudaHostAllocPortable = CU_MEMHOSTALLOC_PORTABLE = 1,
 * cudaHostAllocMapped = CU_MEMHOSTALLOC_DEVICEMAP = 2.  Write-combined (4)
 * and anything unknown go to CUDA.
 */
#define IP_POOL_FLAGS	0x3u

/* What a wrapper does with a request (serve.c's verdict). */
enum ip_verdict {
	IP_DONE,	/* the pool served, freed or answered it */
	IP_REAL,	/* call the real function */
	IP_NOMEM,	/* strict mode: answer out of memory */
	IP_INVALID,	/* no live buffer there: answer invalid value */
	IP_NOT_INIT,	/* the parent's memory, in a child of fork():
			 * answer as CUDA does there (not initialized) */
};

/* serve.c.  `driver` says which entry points the request came through. */
enum ip_verdict ip_alloc(void **ptr, size_t size, unsigned int flags,
			 int driver);
enum ip_verdict ip_free(void *ptr);
enum ip_verdict ip_get_flags(void *ptr, unsigned int *flags);
enum ip_verdict ip_get_devptr(void *ptr, void **dev);

/*
 * No re-entry, by construction: every wrapper (driver.c, runtime.c, from
 * entries.h) opens with ip_enter() and ends with ip_leave().  Only the
 * outermost wrapper of a thread serves; one entered inside it (the real
 * runtime's cudaHostAlloc reaches the driver's cuMemHostAlloc, which is
 * ours; libgpupool's own CUDA calls, registration, the device-pointer
 * query and the capture-mode exchange among them, reach whatever entry
 * points the runtime took from our cuGetProcAddress) calls the real
 * function and nothing else.
 */
extern IP_TLS unsigned int ip_depth;
/* Non-zero when this is the outermost wrapper, which serves. */
static inline int ip_enter(void)
{
	return ip_depth++ == 0;
}

static inline void ip_leave(void)
{
	ip_depth--;
}

/* state.c */
struct gp_ctx;
/* This process's pool, opened on first use; NULL when it cannot serve
 * (no module, no CUDA, ...: ip_pool_why says why).
 */
struct gp_ctx *ip_pool(void);
/* The pool if this process has opened one, without opening it. */
struct gp_ctx *ip_pool_opened(void);
const char *ip_pool_why(void);
int ip_mode(void);			/* GP_INTERPOSE_FALLBACK, ... */
/* The figures (counters.c): what the pool served and freed (in a slot
 * of the calling thread's), what it passed to CUDA or refused, by why,
 * and the rest; and the once-per-reason message.
 */
enum ip_event { IP_REAL_FREE, IP_BAD_FREE, IP_INHERITED, IP_NR_EVENTS };
void ip_count_served(size_t size, int driver);
void ip_count_freed(uint64_t size);
void ip_count_fallback(int why, size_t size);
void ip_count_refused(int why);
void ip_count(enum ip_event ev);
/* The counters into st (the rest of it is state.c's). */
void ip_counters_snapshot(struct gp_interpose_stats *st);
/* In a child of fork(): from zero. */
void ip_counters_reset(void);
void ip_say_once(int why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* cache.c: a thread's freed pool buffers, served again without the pools'
 * lock, kept a short while.  take: one of the calling thread's for size
 * and flags (1), made live.  track: a buffer the pool served, live.  put:
 * a free, with its size when freed or refused (IP_FREED: kept, or given
 * back to ctx's pool), holds: is ptr a cached (freed) buffer.  flush:
 * every thread's back to ctx's pool (how many).  Around fork() (ip_lock
 * held, before the pools' lock): the child forgets them all (they are the
 * parent's).
 */
enum ip_cached { IP_NOT_CACHED, IP_FREED, IP_FREED_TWICE };
int ip_cache_take(size_t size, unsigned int flags, void **ptr);
void ip_cache_track(void *ptr, size_t size, unsigned int flags);
enum ip_cached ip_cache_put(struct gp_ctx *ctx, void *ptr, uint64_t *size);
int ip_cache_holds(const void *ptr);
unsigned int ip_cache_flush(struct gp_ctx *ctx);
void ip_cache_fork_prepare(void);
void ip_cache_fork_parent(void);
void ip_cache_fork_child(void);

/* Every pool buffer's tag (gp_host_alloc_tagged): this bit and its flags. */
#define IP_TAG_MARK	0x100u

/* inherit.c: around fork() (ip_lock held), with this process's pool or
 * NULL; and is addr inside the pool of a parent (before a fork())?
 */
void ip_inherit_prepare(struct gp_ctx *ctx);
void ip_inherit_parent(struct gp_ctx *ctx);
void ip_inherit_child(struct gp_ctx *ctx);
int ip_inherited(const void *addr);

/* errors.c: e kept as this thread's pending error (after taking the
 * runtime's own, with its cudaGetLastError when there is a runtime);
 * returns e.  The last error for cudaGetLastError (clear) and
 * cudaPeekAtLastError, given the runtime's own (NULL: none).
 */
cudaError_t ip_error_set(cudaError_t (*runtime_get_last)(void), cudaError_t e);
cudaError_t ip_last_error(cudaError_t (*real)(void), int clear);

/* driver.c: the wrapper of a driver entry point, for the real function
 * fn (from cuGetProcAddress, cudaGetDriverEntryPoint or dlsym); fn when
 * it is none we wrap.
 */
void *ip_driver_swap(void *fn);
int ip_driver_wraps(const char *name);
/* runtime.c: the same for a runtime entry point that dlsym() found. */
void *ip_runtime_swap(void *fn, const char *name);
/* objects.c: is addr inside this library; the loaded object holding
 * addr, opened (dlclose it), unless it is this library or the program;
 * name@version (any version when NULL) in a loaded object but this one.
 */
int ip_is_self(const void *addr);
void *ip_object_of(const void *addr);
void *ip_find_in_objects(const char *name, const char *version);
/* objects.c: *slot, found by find(arg) on first use and kept (threads
 * that race find the same); NULL while find finds nothing.  The one way
 * the interposer binds anything lazily.
 */
void *ip_bind(void **slot, void *(*find)(const void *arg), const void *arg);
/* Is name one of the entry points we wrap (runtime or driver)? */
int ip_wraps(const char *name);

#endif /* GPUPOOL_USERLIB_INTERPOSE_H */
