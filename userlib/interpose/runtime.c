// SPDX-License-Identifier: MIT
/*
 * runtime.c - the CUDA runtime's entry points (entries.h,
 * IP_RUNTIME_ENTRIES) by symbol: the pinned host calls, which serve.c
 * serves; cudaGetDriverEntryPoint(ByVersion)(_ptsz), whose answers go
 * through driver.c's swap; and cudaGetLastError / cudaPeekAtLastError,
 * which add the interposer's own errors to the runtime's (errors.c).
 *
 * The runtime versions its symbols: every one of libcudart.so.13 is
 * "cudaHostAlloc@@libcudart.so.13", of 12 "@@libcudart.so.12", of 11
 * "@@libcudart.so.11.0", and a program binds the version it was linked
 * against.  So each entry point is here once per version it exists in (a
 * thunk with that version, 13's the default), and each thunk's real
 * function is that version's, found by dlvsym() after this library or,
 * for a runtime loaded with RTLD_LOCAL (a Python extension's), in the
 * runtime objects loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "internal.h"
#include "interpose.h"
#include "entries.h"

#define IP_RT_ENUM(name, kind, versions, params, args) RT_##name,
enum ip_rt_fn { IP_RUNTIME_ENTRIES(IP_RT_ENUM) RT_NR };

#define IP_RT_NAME(name, kind, versions, params, args) #name,
static const char *const ip_rt_names[RT_NR] = {
	IP_RUNTIME_ENTRIES(IP_RT_NAME)
};

#define IP_RT_TYPE(name, kind, versions, params, args)			\
	typedef cudaError_t (*ip_##name##_fn) IP_PROTO(params);
IP_RUNTIME_ENTRIES(IP_RT_TYPE)

struct ip_rt {
	const char *version;
	void *real[RT_NR];	/* resolved on first use */
};

#define IP_RT_STRUCT(i) { .version = IP_RT_VERSION_##i },
static struct ip_rt ip_rts[] = { IP_RUNTIME_VERSIONS(IP_RT_STRUCT) };
#define IP_NR_RT	((int)(sizeof(ip_rts) / sizeof(ip_rts[0])))

/* The runtime's error numbers these entry points answer with. */
#define RT_SUCCESS		0
#define RT_INVALID_VALUE	1
#define RT_MEMORY_ALLOCATION	2
#define RT_INITIALIZATION	3

/* Finding the real functions ------------------------------------------------ */

struct ip_rt_want {
	const char *name, *version;
};

static void *ip_rt_lookup(const void *arg)
{
	const struct ip_rt_want *w = arg;
	void *p = dlvsym(RTLD_NEXT, w->name, w->version);

	if (!p)		/* a runtime loaded with RTLD_LOCAL */
		p = ip_find_in_objects(w->name, w->version);
	if (!p)		/* an unversioned runtime, or another version */
		p = dlsym(RTLD_NEXT, w->name);
	return p;
}

static void *ip_rt_real(struct ip_rt *rt, int fn)
{
	struct ip_rt_want w = { ip_rt_names[fn], rt->version };

	return ip_bind(&rt->real[fn], ip_rt_lookup, &w);
}

/* The wrappers ------------------------------------------------------------------ */

/* The interposer's answer, an error of it left pending as the runtime
 * leaves its own (errors.c).
 */
static cudaError_t ip_rt_answer(struct ip_rt *rt, enum ip_verdict v)
{
	static const int answer[] = {
		[IP_DONE] = RT_SUCCESS, [IP_NOMEM] = RT_MEMORY_ALLOCATION,
		[IP_INVALID] = RT_INVALID_VALUE, [IP_NOT_INIT] = RT_INITIALIZATION,
	};

	if (v == IP_DONE)
		return RT_SUCCESS;
	return ip_error_set((ip_cudaGetLastError_fn)ip_rt_real(rt, RT_cudaGetLastError),
			    (cudaError_t)answer[v]);
}

/* The _ptsz twins are served as the others (the same signature). */
#define ip_rt_cudaGetDriverEntryPoint_ptsz	ip_rt_cudaGetDriverEntryPoint
#define ip_rt_cudaGetDriverEntryPointByVersion_ptsz \
	ip_rt_cudaGetDriverEntryPointByVersion

/*
 * Each entry point, for the runtime version rt: the outermost wrapper of
 * a thread serves (its ip_rt_<name>, given rt and the real function,
 * which may be NULL when the process has no such runtime); one entered
 * inside another, or inside libgpupool's own CUDA calls, calls the real
 * function and nothing else (interpose.h, ip_enter).
 */
#define IP_RT_WRAPPER(name, kind, versions, params, args)			\
	static cudaError_t ip_rt_##name					\
		IP_WITH(struct ip_rt *rt, IP_WITH(ip_##name##_fn real, params)); \
	static cudaError_t ip_rt_wrap_##name IP_WITH(struct ip_rt *rt, params) \
	{								\
		ip_##name##_fn real = (ip_##name##_fn)ip_rt_real(rt, RT_##name); \
		cudaError_t r;						\
									\
		if (IP_SERVES(kind, ip_enter()))			\
			r = ip_rt_##name IP_WITH(rt, IP_WITH(real, args)); \
		else							\
			r = real ? real args :				\
			    (cudaError_t)RT_INITIALIZATION;		\
		ip_leave();						\
		return r;						\
	}
IP_RUNTIME_ENTRIES(IP_RT_WRAPPER)

/* The real function's answer, or an initialization error when the
 * process has no such runtime (it could not have called us then).
 */
#define IP_RT_PASS(real, args)						\
	((real) ? (real) args : (cudaError_t)RT_INITIALIZATION)

#define IP_RT_SERVE(rt, verdict, real, args) __extension__({		\
	enum ip_verdict v_ = (verdict);					\
	v_ == IP_REAL ? IP_RT_PASS(real, args) : ip_rt_answer(rt, v_);	\
})

static cudaError_t ip_rt_cudaHostAlloc(struct ip_rt *rt, ip_cudaHostAlloc_fn real,
				       void **p, size_t n, unsigned int flags)
{
	return IP_RT_SERVE(rt, ip_alloc(p, n, flags, 0), real, (p, n, flags));
}

static cudaError_t ip_rt_cudaMallocHost(struct ip_rt *rt,
					ip_cudaMallocHost_fn real, void **p,
					size_t n)
{
	return IP_RT_SERVE(rt, ip_alloc(p, n, 0, 0), real, (p, n));
}

static cudaError_t ip_rt_cudaFreeHost(struct ip_rt *rt, ip_cudaFreeHost_fn real,
				      void *p)
{
	return IP_RT_SERVE(rt, ip_free(p), real, (p));
}

static cudaError_t ip_rt_cudaHostGetFlags(struct ip_rt *rt,
					  ip_cudaHostGetFlags_fn real,
					  unsigned int *flags, void *p)
{
	return IP_RT_SERVE(rt, ip_get_flags(p, flags), real, (flags, p));
}

static cudaError_t ip_rt_cudaHostGetDevicePointer(struct ip_rt *rt,
						  ip_cudaHostGetDevicePointer_fn real,
						  void **d, void *p,
						  unsigned int flags)
{
	return IP_RT_SERVE(rt, flags ? IP_REAL : ip_get_devptr(p, d), real,
			   (d, p, flags));
}

/* The driver's entry points, as the runtime hands them out: ours where
 * the real one is a function we wrap.  Runtimes before 12.0 take three
 * arguments here: the fourth is passed on and never written by us.
 */
#define IP_RT_ENTRY(real, fp, args) __extension__({			\
	cudaError_t e_ = IP_RT_PASS(real, args);			\
									\
	if (e_ == RT_SUCCESS && (fp))					\
		*(fp) = ip_driver_swap(*(fp));				\
	e_;								\
})

static cudaError_t ip_rt_cudaGetDriverEntryPoint(struct ip_rt *rt,
						 ip_cudaGetDriverEntryPoint_fn real,
						 const char *sym, void **fp,
						 unsigned long long flags, int *st)
{
	(void)rt;
	return IP_RT_ENTRY(real, fp, (sym, fp, flags, st));
}

static cudaError_t ip_rt_cudaGetDriverEntryPointByVersion(struct ip_rt *rt,
							  ip_cudaGetDriverEntryPointByVersion_fn real,
							  const char *sym, void **fp,
							  unsigned int version,
							  unsigned long long flags,
							  int *st)
{
	(void)rt;
	return IP_RT_ENTRY(real, fp, (sym, fp, version, flags, st));
}

static cudaError_t ip_rt_cudaGetLastError(struct ip_rt *rt,
					  ip_cudaGetLastError_fn real)
{
	(void)rt;
	return ip_last_error(real, 1);
}

static cudaError_t ip_rt_cudaPeekAtLastError(struct ip_rt *rt,
					     ip_cudaPeekAtLastError_fn real)
{
	(void)rt;
	return ip_last_error(real, 0);
}

/* The thunks: each entry point once per runtime version it exists in ------- */

#define IP_RT_THUNK(i, name, params, args)				\
	__attribute__((visibility("default")))				\
	cudaError_t ip_rt##i##_##name IP_PROTO(params);			\
	cudaError_t ip_rt##i##_##name IP_PROTO(params)			\
	{								\
		return ip_rt_wrap_##name IP_WITH(&ip_rts[i], args);	\
	}								\
	__asm__(".symver ip_rt" #i "_" #name ", " #name			\
		IP_RT_BIND_##i IP_RT_VERSION_##i);
/* A row's thunk and its address, for the version of index i (a row gives
 * its X no more than itself: one X per version).
 */
#define IP_RT_THUNK_0(name, kind, versions, params, args)			\
	IP_IF_VERSION(0, versions)(IP_RT_THUNK(0, name, params, args))
#define IP_RT_THUNK_1(name, kind, versions, params, args)			\
	IP_IF_VERSION(1, versions)(IP_RT_THUNK(1, name, params, args))
#define IP_RT_THUNK_2(name, kind, versions, params, args)			\
	IP_IF_VERSION(2, versions)(IP_RT_THUNK(2, name, params, args))
#define IP_RT_SELF_0(name, kind, versions, params, args)			\
	IP_IF_VERSION(0, versions)([RT_##name] = (void *)ip_rt0_##name,)
#define IP_RT_SELF_1(name, kind, versions, params, args)			\
	IP_IF_VERSION(1, versions)([RT_##name] = (void *)ip_rt1_##name,)
#define IP_RT_SELF_2(name, kind, versions, params, args)			\
	IP_IF_VERSION(2, versions)([RT_##name] = (void *)ip_rt2_##name,)

#define IP_RT_THUNKS(i)	IP_RUNTIME_ENTRIES(IP_RT_THUNK_##i)
IP_RUNTIME_VERSIONS(IP_RT_THUNKS)

/* Their addresses, by version and entry point (NULL where none). */
#define IP_RT_SELVES(i) { IP_RUNTIME_ENTRIES(IP_RT_SELF_##i) },
static void *const ip_rt_thunks[][RT_NR] = {
	IP_RUNTIME_VERSIONS(IP_RT_SELVES)
};

static int ip_rt_index(const char *name)
{
	int i;

	for (i = 0; i < RT_NR; i++)
		if (!strcmp(name, ip_rt_names[i]))
			return i;
	return -1;
}

/* The version of fn, the runtime's `name` in its own object, taken as
 * that version's real function when none is known yet.
 */
void *ip_runtime_swap(void *fn, const char *name)
{
	int i = ip_rt_index(name), v;
	void *dl, *known;

	dl = i < 0 ? NULL : ip_object_of(fn);
	if (!dl)
		return fn;
	/* Newest first: a runtime without versions answers for any. */
	for (v = IP_NR_RT - 1; v >= 0; v--) {
		if (!ip_rt_thunks[v][i] || dlvsym(dl, name, ip_rts[v].version) != fn)
			continue;
		known = NULL;
		__atomic_compare_exchange_n(&ip_rts[v].real[i], &known, fn, 0,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		if (!known || known == fn)
			break;
	}
	dlclose(dl);
	return v >= 0 ? ip_rt_thunks[v][i] : fn;
}

int ip_wraps(const char *name)
{
	return !strncmp(name, "cu", 2) &&
	       (ip_rt_index(name) >= 0 || ip_driver_wraps(name));
}
