// SPDX-License-Identifier: MIT
/*
 * driver.c - the CUDA driver's pinned host entry points: cuMemHostAlloc,
 * cuMemAllocHost(_v2), cuMemFreeHost, cuMemHostGetFlags,
 * cuMemHostGetDevicePointer(_v2), by symbol (a program linked with -lcuda)
 * and as pointers: from cuGetProcAddress(_v2), which is wrapped too (the
 * runtime, static or not, takes every driver function from it), from the
 * runtime's cudaGetDriverEntryPoint (runtime.c) and from dlsym() on the
 * driver (dlsym.c).
 *
 * A pointer is swapped for ours only when it is the real address of a
 * function we wrap: we ask the driver first and compare, and never build
 * a versioned name ourselves (cuGetProcAddress("cuMemAllocHost", 3020)
 * gives cuMemAllocHost_v2's address, which is what we compare with).  The
 * real addresses are the driver's exported symbols, looked up once in the
 * first driver seen (the object that handed out such a pointer, or else
 * the libcuda.so.1 the process has loaded).
 *
 * The driver's types are its ABI (CUresult an int, CUdeviceptr 64 bits,
 * CUdeviceptr_v1 32), declared here: its header renames the legacy entry
 * points that we must define under their own names.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "interpose.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define CU_SUCCESS		0
#define CU_INVALID_VALUE	1
#define CU_OUT_OF_MEMORY	2
#define CU_NOT_INITIALIZED	3

enum ip_drv_fn {
	DRV_HOST_ALLOC, DRV_ALLOC_HOST, DRV_ALLOC_HOST_V2, DRV_FREE_HOST,
	DRV_GET_FLAGS, DRV_GET_DEVPTR, DRV_GET_DEVPTR_V2, DRV_GPA, DRV_GPA_V2,
	DRV_NR
};

static const char *const ip_drv_names[DRV_NR] = {
	"cuMemHostAlloc", "cuMemAllocHost", "cuMemAllocHost_v2",
	"cuMemFreeHost", "cuMemHostGetFlags", "cuMemHostGetDevicePointer",
	"cuMemHostGetDevicePointer_v2", "cuGetProcAddress",
	"cuGetProcAddress_v2",
};

static pthread_mutex_t ip_drv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int bound;		/* real[] looked up in a driver */
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

/* ip_drv_lock held: the real addresses, from the driver dl. */
static void ip_drv_bind(void *dl)
{
	int i;

	for (i = 0; i < DRV_NR; i++)
		D.real[i] = dlsym(dl, ip_drv_names[i]);
	__atomic_store_n(&D.bound, 1, __ATOMIC_RELEASE);
}

/* Bind to the driver holding fn (when it is one), or to the driver this
 * process links or has loaded (fn NULL).
 */
static void ip_drv_bind_from(const void *fn)
{
	void *dl = NULL, *sym;

	if (!fn) {
		sym = dlsym(RTLD_NEXT, "cuMemHostAlloc");
		dl = sym ? ip_drv_object(sym) : NULL;
		if (!dl)
			dl = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	} else {
		dl = ip_drv_object(fn);
	}
	if (!dl)
		return;
	pthread_mutex_lock(&ip_drv_lock);
	if (!D.bound)
		ip_drv_bind(dl);
	pthread_mutex_unlock(&ip_drv_lock);
	dlclose(dl);	/* the process keeps its own reference */
}

static void *ip_drv_real(int fn)
{
	if (!__atomic_load_n(&D.bound, __ATOMIC_ACQUIRE))
		ip_drv_bind_from(NULL);
	return __atomic_load_n(&D.bound, __ATOMIC_ACQUIRE) ? D.real[fn] : NULL;
}

#define IP_DRV_CALL(fn, type, args) __extension__({			\
	type ip_f_ = (type)ip_drv_real(fn);				\
	ip_f_ ? IP_REAL_CALL(ip_f_ args) : CU_NOT_INITIALIZED;		\
})

static CUresult ip_drv_answer(enum ip_verdict v)
{
	static const CUresult answer[] = {
		[IP_DONE] = CU_SUCCESS, [IP_NOMEM] = CU_OUT_OF_MEMORY,
		[IP_INVALID] = CU_INVALID_VALUE, [IP_NOT_INIT] = CU_NOT_INITIALIZED,
	};

	return answer[v];
}

/* The entry points ---------------------------------------------------------------- */

typedef CUresult (*ip_cu_host_alloc_fn)(void **, size_t, unsigned int);
typedef CUresult (*ip_cu_alloc_host_fn)(void **, unsigned int);
typedef CUresult (*ip_cu_alloc_host_v2_fn)(void **, size_t);
typedef CUresult (*ip_cu_free_host_fn)(void *);
typedef CUresult (*ip_cu_get_flags_fn)(unsigned int *, void *);
typedef CUresult (*ip_cu_devptr_fn)(unsigned int *, void *, unsigned int);
typedef CUresult (*ip_cu_devptr_v2_fn)(CUdeviceptr *, void *, unsigned int);
typedef CUresult (*ip_cu_gpa_fn)(const char *, void **, int,
				 unsigned long long);
typedef CUresult (*ip_cu_gpa_v2_fn)(const char *, void **, int,
				    unsigned long long, int *);

IP_API CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_alloc(pp, n, flags, 1);

	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_HOST_ALLOC, ip_cu_host_alloc_fn, (pp, n, flags));
}

/* The first version: a 32-bit size. */
IP_API CUresult cuMemAllocHost(void **pp, unsigned int n)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_alloc(pp, n, 0, 1);

	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_ALLOC_HOST, ip_cu_alloc_host_fn, (pp, n));
}

IP_API CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_alloc(pp, n, 0, 1);

	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_ALLOC_HOST_V2, ip_cu_alloc_host_v2_fn, (pp, n));
}

IP_API CUresult cuMemFreeHost(void *p)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_free(p);

	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_FREE_HOST, ip_cu_free_host_fn, (p));
}

IP_API CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
	enum ip_verdict v = ip_in_real ? IP_REAL : ip_get_flags(p, flags);

	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_GET_FLAGS, ip_cu_get_flags_fn, (flags, p));
}

/* The first version: 32-bit device addresses. */
IP_API CUresult cuMemHostGetDevicePointer(unsigned int *d, void *p,
					  unsigned int flags)
{
	enum ip_verdict v = IP_REAL;
	void *wide = NULL;

	if (!ip_in_real && !flags && d)
		v = ip_get_devptr(p, &wide);
	if (v == IP_DONE && (uintptr_t)wide >> 32)
		v = IP_INVALID;
	if (v == IP_DONE)
		*d = (unsigned int)(uintptr_t)wide;
	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_GET_DEVPTR, ip_cu_devptr_fn, (d, p, flags));
}

IP_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p,
					     unsigned int flags)
{
	enum ip_verdict v = IP_REAL;
	void *dev = NULL;

	if (!ip_in_real && !flags && d)
		v = ip_get_devptr(p, &dev);
	if (v == IP_DONE)
		*d = (CUdeviceptr)(uintptr_t)dev;
	if (v != IP_REAL)
		return ip_drv_answer(v);
	return IP_DRV_CALL(DRV_GET_DEVPTR_V2, ip_cu_devptr_v2_fn, (d, p, flags));
}

IP_API CUresult cuGetProcAddress(const char *sym, void **pfn, int version,
				 unsigned long long flags)
{
	CUresult r = IP_DRV_CALL(DRV_GPA, ip_cu_gpa_fn,
				 (sym, pfn, version, flags));

	if (r == CU_SUCCESS && pfn)
		*pfn = ip_driver_swap(*pfn);
	return r;
}

IP_API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
				    unsigned long long flags, int *status)
{
	CUresult r = IP_DRV_CALL(DRV_GPA_V2, ip_cu_gpa_v2_fn,
				 (sym, pfn, version, flags, status));

	if (r == CU_SUCCESS && pfn)
		*pfn = ip_driver_swap(*pfn);
	return r;
}

/* Swapping -------------------------------------------------------------------------- */

/* Our entry points, by this library's own addresses (hidden aliases: a
 * program that defined these names itself would not change them).
 */
#define IP_SELF(name) \
	extern __typeof__(name) ip_self_##name \
		__attribute__((alias(#name), visibility("hidden")));
IP_SELF(cuMemHostAlloc)
IP_SELF(cuMemAllocHost)
IP_SELF(cuMemAllocHost_v2)
IP_SELF(cuMemFreeHost)
IP_SELF(cuMemHostGetFlags)
IP_SELF(cuMemHostGetDevicePointer)
IP_SELF(cuMemHostGetDevicePointer_v2)
IP_SELF(cuGetProcAddress)
IP_SELF(cuGetProcAddress_v2)

static void *const ip_drv_wrappers[DRV_NR] = {
	(void *)ip_self_cuMemHostAlloc, (void *)ip_self_cuMemAllocHost,
	(void *)ip_self_cuMemAllocHost_v2, (void *)ip_self_cuMemFreeHost,
	(void *)ip_self_cuMemHostGetFlags,
	(void *)ip_self_cuMemHostGetDevicePointer,
	(void *)ip_self_cuMemHostGetDevicePointer_v2,
	(void *)ip_self_cuGetProcAddress, (void *)ip_self_cuGetProcAddress_v2,
};

void *ip_driver_swap(void *fn)
{
	int i;

	if (!fn)
		return fn;
	if (!__atomic_load_n(&D.bound, __ATOMIC_ACQUIRE))
		ip_drv_bind_from(fn);
	if (!__atomic_load_n(&D.bound, __ATOMIC_ACQUIRE))
		return fn;
	for (i = 0; i < DRV_NR; i++)
		if (D.real[i] == fn)
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
