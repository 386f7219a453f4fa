// SPDX-License-Identifier: MIT
/*
 * runtime.c - the CUDA runtime's pinned host entry points, by symbol:
 * cudaHostAlloc, cudaMallocHost, cudaFreeHost, cudaHostGetFlags,
 * cudaHostGetDevicePointer, and cudaGetDriverEntryPoint(ByVersion)(_ptsz),
 * whose answers go through driver.c's swap.
 *
 * The runtime versions its symbols: every one of libcudart.so.13 is
 * "cudaHostAlloc@@libcudart.so.13", of 12 "@@libcudart.so.12", of 11
 * "@@libcudart.so.11.0", and a program binds the version it was linked
 * against.  So each entry point is here once per version (a thunk with
 * that version, 13's the default), and each thunk's real function is that
 * version's, found by dlvsym() after this library or, for a runtime loaded
 * with RTLD_LOCAL (a Python extension's), in the runtime objects loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "internal.h"
#include "interpose.h"

enum ip_rt_fn {
	RT_HOST_ALLOC, RT_MALLOC_HOST, RT_FREE_HOST, RT_GET_FLAGS,
	RT_GET_DEVPTR, RT_ENTRY, RT_ENTRY_PTSZ, RT_ENTRY_BYVER,
	RT_ENTRY_BYVER_PTSZ, RT_NR
};

static const char *const ip_rt_names[RT_NR] = {
	"cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostGetFlags",
	"cudaHostGetDevicePointer", "cudaGetDriverEntryPoint",
	"cudaGetDriverEntryPoint_ptsz", "cudaGetDriverEntryPointByVersion",
	"cudaGetDriverEntryPointByVersion_ptsz",
};

struct ip_rt {
	const char *version;
	void *real[RT_NR];	/* resolved on first use */
};

enum { IP_RT11, IP_RT12, IP_RT13, IP_NR_RT };
static struct ip_rt ip_rts[IP_NR_RT] = {
	{ .version = "libcudart.so.11.0" }, { .version = "libcudart.so.12" },
	{ .version = "libcudart.so.13" },
};

/* The runtime's error numbers these entry points answer with. */
#define RT_SUCCESS		0
#define RT_INVALID_VALUE	1
#define RT_MEMORY_ALLOCATION	2
#define RT_INITIALIZATION	3

/* Finding the real functions ------------------------------------------------ */

static void *ip_rt_real(struct ip_rt *rt, int fn)
{
	void *p = __atomic_load_n(&rt->real[fn], __ATOMIC_ACQUIRE);

	if (p)
		return p;
	p = dlvsym(RTLD_NEXT, ip_rt_names[fn], rt->version);
	if (!p)		/* a runtime loaded with RTLD_LOCAL */
		p = ip_find_in_objects(ip_rt_names[fn], rt->version);
	if (!p)		/* an unversioned runtime, or another version */
		p = dlsym(RTLD_NEXT, ip_rt_names[fn]);
	if (p)
		__atomic_store_n(&rt->real[fn], p, __ATOMIC_RELEASE);
	return p;
}

/* The entry points ------------------------------------------------------------ */

static cudaError_t ip_rt_answer(enum ip_verdict v)
{
	static const int answer[] = {
		[IP_DONE] = RT_SUCCESS, [IP_NOMEM] = RT_MEMORY_ALLOCATION,
		[IP_INVALID] = RT_INVALID_VALUE, [IP_NOT_INIT] = RT_INITIALIZATION,
	};

	return (cudaError_t)answer[v];
}

/* The real function of rt, called as typed; an initialization error when
 * the process has no such runtime (it could not have called us then).
 */
#define IP_RT_CALL(rt, fn, type, args) __extension__({			\
	type ip_f_ = (type)ip_rt_real(rt, fn);				\
	ip_f_ ? IP_REAL_CALL(ip_f_ args) : (cudaError_t)RT_INITIALIZATION;	\
})

typedef cudaError_t (*ip_host_alloc_fn)(void **, size_t, unsigned int);
typedef cudaError_t (*ip_malloc_host_fn)(void **, size_t);
typedef cudaError_t (*ip_free_host_fn)(void *);
typedef cudaError_t (*ip_get_flags_fn)(unsigned int *, void *);
typedef cudaError_t (*ip_get_devptr_fn)(void **, void *, unsigned int);
typedef cudaError_t (*ip_entry_fn)(const char *, void **, unsigned long long,
				   int *);
typedef cudaError_t (*ip_entry_byver_fn)(const char *, void **, unsigned int,
					 unsigned long long, int *);

static cudaError_t ip_rt_cudaHostAlloc(struct ip_rt *rt, void **p, size_t n,
				       unsigned int flags)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_alloc(p, n, flags, 0);

	if (v != IP_REAL)
		return ip_rt_answer(v);
	return IP_RT_CALL(rt, RT_HOST_ALLOC, ip_host_alloc_fn, (p, n, flags));
}

static cudaError_t ip_rt_cudaMallocHost(struct ip_rt *rt, void **p, size_t n)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_alloc(p, n, 0, 0);

	if (v != IP_REAL)
		return ip_rt_answer(v);
	return IP_RT_CALL(rt, RT_MALLOC_HOST, ip_malloc_host_fn, (p, n));
}

static cudaError_t ip_rt_cudaFreeHost(struct ip_rt *rt, void *p)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_free(p);

	if (v != IP_REAL)
		return ip_rt_answer(v);
	return IP_RT_CALL(rt, RT_FREE_HOST, ip_free_host_fn, (p));
}

static cudaError_t ip_rt_cudaHostGetFlags(struct ip_rt *rt,
					  unsigned int *flags, void *p)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_get_flags(p, flags);

	if (v != IP_REAL)
		return ip_rt_answer(v);
	return IP_RT_CALL(rt, RT_GET_FLAGS, ip_get_flags_fn, (flags, p));
}

static cudaError_t ip_rt_cudaHostGetDevicePointer(struct ip_rt *rt, void **d,
						  void *p, unsigned int flags)
{
	enum ip_verdict v = ip_in_real || flags ? IP_REAL : ip_get_devptr(p, d);

	if (v != IP_REAL)
		return ip_rt_answer(v);
	return IP_RT_CALL(rt, RT_GET_DEVPTR, ip_get_devptr_fn, (d, p, flags));
}

/* The driver's entry points, as the runtime hands them out: ours where
 * the real one is a function we wrap.  Runtimes before 12.0 take three
 * arguments here: the fourth is passed on and never written by us.
 */
static cudaError_t ip_rt_entry(struct ip_rt *rt, int fn, const char *sym,
			       void **fp, unsigned long long flags, int *st)
{
	cudaError_t e = IP_RT_CALL(rt, fn, ip_entry_fn, (sym, fp, flags, st));

	if (e == RT_SUCCESS && fp)
		*fp = ip_driver_swap(*fp);
	return e;
}

static cudaError_t ip_rt_entry_byver(struct ip_rt *rt, int fn, const char *sym,
				     void **fp, unsigned int version,
				     unsigned long long flags, int *st)
{
	cudaError_t e = IP_RT_CALL(rt, fn, ip_entry_byver_fn,
				   (sym, fp, version, flags, st));

	if (e == RT_SUCCESS && fp)
		*fp = ip_driver_swap(*fp);
	return e;
}

/* The thunks: each entry point once per runtime version ------------------------ */

#define IP_THUNK(v, tag, bind, ver, name, params, args)			\
	IP_API cudaError_t tag##_##name params;				\
	IP_API cudaError_t tag##_##name params				\
	{								\
		return ip_rt_##name args;				\
	}								\
	__asm__(".symver " #tag "_" #name ", " #name bind ver);

#define IP_RT_VERSION(v, tag, bind, ver)				\
	IP_THUNK(v, tag, bind, ver, cudaHostAlloc,			\
		 (void **p, size_t n, unsigned int f), (&ip_rts[v], p, n, f)) \
	IP_THUNK(v, tag, bind, ver, cudaMallocHost,			\
		 (void **p, size_t n), (&ip_rts[v], p, n))		\
	IP_THUNK(v, tag, bind, ver, cudaFreeHost, (void *p),		\
		 (&ip_rts[v], p))					\
	IP_THUNK(v, tag, bind, ver, cudaHostGetFlags,			\
		 (unsigned int *f, void *p), (&ip_rts[v], f, p))		\
	IP_THUNK(v, tag, bind, ver, cudaHostGetDevicePointer,		\
		 (void **d, void *p, unsigned int f), (&ip_rts[v], d, p, f)) \
	IP_THUNK(v, tag, bind, ver, cudaGetDriverEntryPoint,		\
		 (const char *s, void **fp, unsigned long long f, int *st), \
		 (&ip_rts[v], RT_ENTRY, s, fp, f, st))			\
	IP_THUNK(v, tag, bind, ver, cudaGetDriverEntryPoint_ptsz,	\
		 (const char *s, void **fp, unsigned long long f, int *st), \
		 (&ip_rts[v], RT_ENTRY_PTSZ, s, fp, f, st))		\
	IP_THUNK(v, tag, bind, ver, cudaGetDriverEntryPointByVersion,	\
		 (const char *s, void **fp, unsigned int cv,		\
		  unsigned long long f, int *st),			\
		 (&ip_rts[v], RT_ENTRY_BYVER, s, fp, cv, f, st))		\
	IP_THUNK(v, tag, bind, ver, cudaGetDriverEntryPointByVersion_ptsz, \
		 (const char *s, void **fp, unsigned int cv,		\
		  unsigned long long f, int *st),			\
		 (&ip_rts[v], RT_ENTRY_BYVER_PTSZ, s, fp, cv, f, st))

/* The thunks' generic entries, named by what they forward to. */
#define ip_rt_cudaGetDriverEntryPoint		ip_rt_entry
#define ip_rt_cudaGetDriverEntryPoint_ptsz	ip_rt_entry
#define ip_rt_cudaGetDriverEntryPointByVersion	ip_rt_entry_byver
#define ip_rt_cudaGetDriverEntryPointByVersion_ptsz ip_rt_entry_byver

IP_RT_VERSION(IP_RT11, ip_rt11, "@", "libcudart.so.11.0")
IP_RT_VERSION(IP_RT12, ip_rt12, "@", "libcudart.so.12")
IP_RT_VERSION(IP_RT13, ip_rt13, "@@", "libcudart.so.13")

#define IP_THUNKS(tag) {						\
	(void *)tag##_cudaHostAlloc, (void *)tag##_cudaMallocHost,	\
	(void *)tag##_cudaFreeHost, (void *)tag##_cudaHostGetFlags,	\
	(void *)tag##_cudaHostGetDevicePointer,				\
	(void *)tag##_cudaGetDriverEntryPoint,				\
	(void *)tag##_cudaGetDriverEntryPoint_ptsz,			\
	(void *)tag##_cudaGetDriverEntryPointByVersion,			\
	(void *)tag##_cudaGetDriverEntryPointByVersion_ptsz }

static void *const ip_rt_thunks[IP_NR_RT][RT_NR] = {
	IP_THUNKS(ip_rt11), IP_THUNKS(ip_rt12), IP_THUNKS(ip_rt13),
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
		if (dlvsym(dl, name, ip_rts[v].version) != fn)
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
