// SPDX-License-Identifier: MIT
/*
 * host_alloc.c - the runtime double's pinned host memory and stream
 * capture (cudart_double.h says what each does): the runtime calls whose
 * work is the driver's in CUDA (driver_twins.h lists them and says how the
 * list was made).
 *
 * They go to the driver, as in the real runtime: libcuda.so.1 is opened
 * on first use and its entry points taken, once, from cuGetProcAddress_v2,
 * itself found with dlsym() (the real runtime's way, which a process's
 * interposer of dlsym and cuGetProcAddress sees as it would there).  The
 * answers are the driver's, in the runtime's words.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "cudart_double_internal.h"
#include "driver_twins.h"

#if !GP_HAVE_CUDA_HEADERS
#define cudaErrorInvalidValue			1
#define cudaErrorInitializationError		3
#define cudaErrorInsufficientDriver		35
#define cudaErrorUnknown			999
#define cdd_mode_t int
#define cdd_cstatus_t int
typedef void *cudaGraph_t;
#else
#define cdd_mode_t enum cudaStreamCaptureMode
#define cdd_cstatus_t enum cudaStreamCaptureStatus
#endif
/* The driver: the driver double, by its path in the build tree (the
 * Makefile's), or else whichever libcuda.so.1 the process finds.
 */
#ifndef CDD_DRIVER_PATH
#define CDD_DRIVER_PATH		"libcuda.so.1"
#endif

typedef int cu_result;
static struct {
	pthread_once_t once;
	int usable;
	void *dl;
	cu_result (*gpa)(const char *, void **, int, unsigned long long, int *);
#define CDD_TWIN_MEMBER(member, name, params, calls) cu_result (*member) params;
	CDD_DRIVER_TWINS(CDD_TWIN_MEMBER)
	/* The driver double's controls, when it is the double. */
	int (*capturing)(void);
	uint64_t (*capture_refusals)(void);
} D = { .once = PTHREAD_ONCE_INIT };

static void cdd_driver_open(void)
{
	void *dl = dlopen(CDD_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
	int v = cdd_runtime_version(), st;

	if (!dl)
		return;
	*(void **)&D.gpa = dlsym(dl, "cuGetProcAddress_v2");
	if (!D.gpa)
		return;
#define CDD_TWIN_TAKE(member, name, params, calls)			\
	if (D.gpa(#name, (void **)&D.member, v, 0, &st) || !D.member)	\
		return;
	CDD_DRIVER_TWINS(CDD_TWIN_TAKE)
	*(void **)&D.capturing = dlsym(dl, "cdrv_capturing");
	*(void **)&D.capture_refusals = dlsym(dl, "cdrv_capture_refusals");
	D.dl = dl;
	__atomic_store_n(&D.usable, D.init(0) == 0, __ATOMIC_RELEASE);
}

/* 0 when the driver can be used; otherwise the error to answer. */
static cudaError_t cdd_driver(void)
{
	if (cdd_forked())
		return cudaErrorInitializationError;
	pthread_once(&D.once, cdd_driver_open);
	return D.usable ? cudaSuccess : cudaErrorInsufficientDriver;
}

/* Has the driver been opened (without opening it)? */
static int cdd_driver_opened(void)
{
	return __atomic_load_n(&D.usable, __ATOMIC_ACQUIRE);
}

/* The driver's answers in the runtime's words: the same numbers for the
 * ones these calls give (invalid value, out of memory, not initialized,
 * memory already registered or not, stream capture's two).
 */
static cudaError_t cdd_from_cu(cu_result r)
{
	switch (r) {
	case 0: case 1: case 2: case 3: case 712: case 713: case 900: case 901:
		return cdd_ret((cudaError_t)r);
	default:
		return cdd_ret(cudaErrorUnknown);
	}
}

/* The driver's answer to call, in the runtime's words; the error of a
 * driver that cannot be used, before it.
 */
#define CDD_DRIVER_CALL(call) __extension__({				\
	cudaError_t e_ = cdd_driver();					\
									\
	e_ ? cdd_ret(e_) : cdd_from_cu(call);				\
})

cudaError_t cdd_driver_register(void *p, size_t n, unsigned int flags)
{
	return CDD_DRIVER_CALL(D.host_register(p, n, flags));
}

cudaError_t cdd_driver_unregister(void *p)
{
	return CDD_DRIVER_CALL(D.host_unregister(p));
}

void cdd_driver_forget(void)
{
	void (*forget)(void);

	if (!cdd_driver_opened())
		return;
	*(void **)&forget = dlsym(D.dl, "cdrv_forget");
	if (forget)
		forget();
}

cudaError_t cdd_driver_entry(const char *sym, void **fp, int version,
			     unsigned long long flags, int *status)
{
	int st = 1;	/* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */

	*fp = NULL;
	if (!cdd_driver())
		D.gpa(sym, fp, version, flags, &st);
	if (status)
		*status = st;
	return cudaSuccess;
}

/* A call's argument is wrong: the driver's state first, as CUDA checks it. */
static cudaError_t cdd_bad_argument(void)
{
	cudaError_t e = cdd_driver();

	return cdd_ret(e ? e : cudaErrorInvalidValue);
}

/* The test's hook: called at the entry of the runtime calls libgpupool
 * and the interposer make (tests/interpose/rt_reentry).
 */
static void (*cdd_hook_fn)(void);

CDD_API void cdd_set_hook(void (*fn)(void))
{
	__atomic_store_n(&cdd_hook_fn, fn, __ATOMIC_RELEASE);
}

void cdd_hook(void)
{
	void (*fn)(void) = __atomic_load_n(&cdd_hook_fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn();
}

/* Stream capture: the driver's -------------------------------------------------- */

int cdd_capture_active(void)
{
	return cdd_driver_opened() && D.capturing && D.capturing();
}

void cdd_capture_counts(struct cdd_counts *c)
{
	c->capturing = (uint64_t)cdd_capture_active();
	c->capture_refusals = cdd_driver_opened() && D.capture_refusals ?
			      D.capture_refusals() : 0;
}

CDD_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, cdd_mode_t mode)
{
	cdd_hook();
	cdd_count(CDD_CAPTURE_BEGIN);
	return CDD_DRIVER_CALL(D.begin_capture((void *)s, (int)mode));
}

CDD_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
	cdd_hook();
	cdd_count(CDD_CAPTURE_END);
	return CDD_DRIVER_CALL(D.end_capture((void *)s, (void **)graph));
}

CDD_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, cdd_cstatus_t *st)
{
	cudaError_t e;
	int status = 0;

	cdd_hook();
	if (!st)
		return cdd_ret(cudaErrorInvalidValue);
	e = CDD_DRIVER_CALL(D.capture_info((void *)s, &status, NULL));
	if (!e)
		*st = (cdd_cstatus_t)status;
	return e;
}

CDD_API cudaError_t cudaThreadExchangeStreamCaptureMode(cdd_mode_t *mode)
{
	int m;
	cudaError_t e;

	cdd_hook();
	cdd_count(CDD_CAPTURE_MODE);
	if (!mode)
		return cdd_ret(cudaErrorInvalidValue);
	m = (int)*mode;
	e = CDD_DRIVER_CALL(D.exchange_mode(&m));
	if (!e)
		*mode = (cdd_mode_t)m;
	return e;
}

/* Pinned host memory ---------------------------------------------------------- */

CDD_API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	cdd_hook();
	cdd_count(CDD_HOST_ALLOC);
	if (!p)
		return cdd_bad_argument();
	return CDD_DRIVER_CALL(D.host_alloc(p, n, flags));
}

CDD_API cudaError_t cudaMallocHost(void **p, size_t n)
{
	return cudaHostAlloc(p, n, 0);
}

CDD_API cudaError_t cudaFreeHost(void *p)
{
	cdd_hook();
	cdd_count(CDD_FREE_HOST);
	if (!p)
		return cudaSuccess;
	return CDD_DRIVER_CALL(D.free_host(p));
}

CDD_API cudaError_t cudaHostGetFlags(unsigned int *flags, void *p)
{
	cdd_hook();
	cdd_count(CDD_HOST_GET_FLAGS);
	if (!flags)
		return cdd_bad_argument();
	return CDD_DRIVER_CALL(D.get_flags(flags, p));
}

/* The driver's answer, for registered memory (libgpupool's segments) as
 * for allocated, as the runtime's is.
 */
CDD_API cudaError_t cudaHostGetDevicePointer(void **dev, void *p,
					     unsigned int flags)
{
	unsigned long long d;
	cudaError_t e;

	cdd_hook();
	cdd_count(CDD_HOST_GET_DEVPTR);
	if (!dev)
		return cdd_bad_argument();
	e = CDD_DRIVER_CALL(D.get_devptr(&d, p, flags));
	if (!e)
		*dev = (void *)(uintptr_t)d;
	return e;
}
