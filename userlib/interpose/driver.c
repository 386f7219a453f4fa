// SPDX-License-Identifier: MIT
/*
 * driver.c - the CUDA driver's pinned host entry points (entries.h,
 * IP_DRIVER_ENTRIES), by symbol (a program linked with -lcuda) and as
 * pointers: from cuGetProcAddress(_v2), which is wrapped too (the
 * runtime, static or not, takes every driver function from it), from the
 * runtime's cudaGetDriverEntryPoint (runtime.c) and from dlsym() on the
 * driver (dlsym.c).
 *
 * A pointer is swapped for ours only when it is the real address of a
 * function we wrap: we ask the driver first and compare, and never build
 * a versioned name ourselves (cuGetProcAddress("cuMemAllocHost", 3020)
 * gives cuMemAllocHost_v2's address, which is what we compare with).  The
 * real addresses are the driver's exported symbols, looked up in the
 * first driver seen (the object that handed out such a pointer, or else
 * the libcuda.so.1 the process has loaded).
 *
 * The driver's types are its ABI (CUresult an int, CUdeviceptr 64 bits),
 * declared here: its header renames the legacy entry points that we must
 * define under their own names.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "internal.h"
#include "interpose.h"
#include "entries.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define CU_SUCCESS		0
#define CU_INVALID_VALUE	1
#define CU_OUT_OF_MEMORY	2
#define CU_NOT_INITIALIZED	3

#define IP_DRV_ENUM(name, kind, params, args) DRV_##name,
enum ip_drv_fn { IP_DRIVER_ENTRIES(IP_DRV_ENUM) DRV_NR };

#define IP_DRV_NAME(name, kind, params, args) #name,
static const char *const ip_drv_names[DRV_NR] = {
	IP_DRIVER_ENTRIES(IP_DRV_NAME)
};

#define IP_DRV_TYPE(name, kind, params, args)				\
	typedef CUresult (*ip_##name##_fn) IP_PROTO(params);
IP_DRIVER_ENTRIES(IP_DRV_TYPE)

static struct {
	void *dl;		/* the driver the addresses come from, kept */
	void *real[DRV_NR];
} D;

/* Finding the driver ------------------------------------------------------------ */

/* The loaded object holding addr, opened (a reference to drop), if it is
 * a driver: it has cuGetProcAddress and cuMemHostAlloc.
 */
static void *ip_drv_object(const void *addr)
{
	void *dl = ip_object_of(addr);

	if (dl && (!dlsym(dl, "cuGetProcAddress") || !dlsym(dl, "cuMemHostAlloc"))) {
		dlclose(dl);
		dl = NULL;
	}
	return dl;
}

/* The driver holding fn when it is one, or (fn NULL) the one this process
 * links or has loaded; NULL when there is none yet.
 */
static void *ip_drv_find(const void *fn)
{
	void *sym;

	if (fn)
		return ip_drv_object(fn);
	sym = dlsym(RTLD_NEXT, "cuMemHostAlloc");
	return (sym ? ip_drv_object(sym) : NULL) ?:
	       dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
}

static void *ip_drv_sym(const void *name)
{
	return dlsym(D.dl, name);
}

/* The real function i, from the driver holding hint (a pointer that may
 * be one of its functions), or the one the process has, or NULL while
 * there is none.
 */
static void *ip_drv_real(int i, const void *hint)
{
	return ip_bind(&D.dl, ip_drv_find, hint) ?
	       ip_bind(&D.real[i], ip_drv_sym, ip_drv_names[i]) : NULL;
}

static CUresult ip_drv_answer(enum ip_verdict v)
{
	static const CUresult answer[] = {
		[IP_DONE] = CU_SUCCESS, [IP_NOMEM] = CU_OUT_OF_MEMORY,
		[IP_INVALID] = CU_INVALID_VALUE, [IP_NOT_INIT] = CU_NOT_INITIALIZED,
	};

	return answer[v];
}

/* The wrappers --------------------------------------------------------------------- */

/*
 * Each entry point: the outermost wrapper of a thread serves (its
 * ip_drv_<name>, given the real function, which may be NULL when no
 * driver is loaded); one entered inside another, or inside libgpupool's
 * own CUDA calls, calls the real function and nothing else
 * (interpose.h, ip_enter).  Exported under the interposer's version node
 * (the version script's lines come from entries.h too); ip_self_<name>
 * is its address in this library, whatever a program defines.
 */
#define IP_DRV_WRAPPER(name, kind, params, args)				\
	static CUresult ip_drv_##name IP_WITH(ip_##name##_fn real, params); \
	IP_API CUresult name IP_PROTO(params);				\
	IP_API CUresult name IP_PROTO(params)				\
	{								\
		ip_##name##_fn real =					\
			(ip_##name##_fn)ip_drv_real(DRV_##name, NULL);	\
		CUresult r;						\
									\
		if (IP_SERVES(kind, ip_enter()))			\
			r = ip_drv_##name IP_WITH(real, args);		\
		else							\
			r = real ? real args : CU_NOT_INITIALIZED;	\
		ip_leave();						\
		return r;						\
	}								\
	extern __typeof__(name) ip_self_##name				\
		__attribute__((alias(#name), visibility("hidden")));
IP_DRIVER_ENTRIES(IP_DRV_WRAPPER)

/* The real function's answer, or the driver's for no driver. */
#define IP_DRV_PASS(real, args) ((real) ? (real) args : CU_NOT_INITIALIZED)

/* The serving, by verdict: the pool's answer, or the real function's. */
#define IP_DRV_SERVE(verdict, real, args) __extension__({		\
	enum ip_verdict v_ = (verdict);					\
	v_ == IP_REAL ? IP_DRV_PASS(real, args) : ip_drv_answer(v_);	\
})

static CUresult ip_drv_cuMemHostAlloc(ip_cuMemHostAlloc_fn real, void **pp,
				      size_t n, unsigned int flags)
{
	return IP_DRV_SERVE(ip_alloc(pp, n, flags, 1), real, (pp, n, flags));
}

/* The first version: a 32-bit size. */
static CUresult ip_drv_cuMemAllocHost(ip_cuMemAllocHost_fn real, void **pp,
				      unsigned int n)
{
	return IP_DRV_SERVE(ip_alloc(pp, n, 0, 1), real, (pp, n));
}

static CUresult ip_drv_cuMemAllocHost_v2(ip_cuMemAllocHost_v2_fn real,
					 void **pp, size_t n)
{
	return IP_DRV_SERVE(ip_alloc(pp, n, 0, 1), real, (pp, n));
}

static CUresult ip_drv_cuMemFreeHost(ip_cuMemFreeHost_fn real, void *p)
{
	return IP_DRV_SERVE(ip_free(p), real, (p));
}

static CUresult ip_drv_cuMemHostGetFlags(ip_cuMemHostGetFlags_fn real,
					 unsigned int *flags, void *p)
{
	return IP_DRV_SERVE(ip_get_flags(p, flags), real, (flags, p));
}

/* The first version: 32-bit device addresses. */
static CUresult ip_drv_cuMemHostGetDevicePointer(ip_cuMemHostGetDevicePointer_fn real,
						 unsigned int *d, void *p,
						 unsigned int flags)
{
	enum ip_verdict v = IP_REAL;
	void *wide = NULL;

	if (!flags && d)
		v = ip_get_devptr(p, &wide);
	if (v == IP_DONE && (uintptr_t)wide >> 32)
		v = IP_INVALID;
	if (v == IP_DONE)
		*d = (unsigned int)(uintptr_t)wide;
	return IP_DRV_SERVE(v, real, (d, p, flags));
}

static CUresult ip_drv_cuMemHostGetDevicePointer_v2(ip_cuMemHostGetDevicePointer_v2_fn real,
						    CUdeviceptr *d, void *p,
						    unsigned int flags)
{
	enum ip_verdict v = IP_REAL;
	void *dev = NULL;

	if (!flags && d)
		v = ip_get_devptr(p, &dev);
	if (v == IP_DONE)
		*d = (CUdeviceptr)(uintptr_t)dev;
	return IP_DRV_SERVE(v, real, (d, p, flags));
}

static CUresult ip_drv_cuGetProcAddress(ip_cuGetProcAddress_fn real,
					const char *sym, void **pfn, int version,
					unsigned long long flags)
{
	CUresult r = IP_DRV_PASS(real, (sym, pfn, version, flags));

	if (r == CU_SUCCESS && pfn)
		*pfn = ip_driver_swap(*pfn);
	return r;
}

static CUresult ip_drv_cuGetProcAddress_v2(ip_cuGetProcAddress_v2_fn real,
					   const char *sym, void **pfn,
					   int version, unsigned long long flags,
					   int *status)
{
	CUresult r = IP_DRV_PASS(real, (sym, pfn, version, flags, status));

	if (r == CU_SUCCESS && pfn)
		*pfn = ip_driver_swap(*pfn);
	return r;
}

/* Swapping -------------------------------------------------------------------------- */

/* Our entry points, by this library's own addresses (a program that
 * defined these names itself would not change them).
 */
#define IP_DRV_SELF(name, kind, params, args) (void *)ip_self_##name,
static void *const ip_drv_wrappers[DRV_NR] = {
	IP_DRIVER_ENTRIES(IP_DRV_SELF)
};

void *ip_driver_swap(void *fn)
{
	int i;

	if (!fn)
		return fn;
	for (i = 0; i < DRV_NR; i++)
		if (ip_drv_real(i, fn) == fn)
			return ip_drv_wrappers[i];
	return fn;
}

int ip_driver_wraps(const char *name)
{
	int i;

	for (i = 0; i < DRV_NR; i++)
		if (!strcmp(name, ip_drv_names[i]))
			return 1;
	return 0;
}
