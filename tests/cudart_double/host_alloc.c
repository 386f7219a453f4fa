// SPDX-License-Identifier: MIT
/*
 * host_alloc.c - the runtime double's pinned host allocations and stream
 * capture (cudart_double.h says what each does).
 *
 * Allocations go to the driver, as in the real runtime: libcuda.so.1 is
 * opened on first use and its entry points taken from cuGetProcAddress_v2,
 * itself found with dlsym() (the real runtime's way, which a process's
 * interposer of dlsym and cuGetProcAddress sees as it would there).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "cudart_double_internal.h"

#if !GP_HAVE_CUDA_HEADERS
#define cudaErrorInvalidValue			1
#define cudaErrorInitializationError		3
#define cudaErrorInsufficientDriver		35
#define cudaErrorStreamCaptureUnsupported	900
#define cudaErrorStreamCaptureInvalidated	901
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
#define CDD_MODE_GLOBAL		0
#define CDD_MODE_RELAXED	2
#define CDD_CAPTURE_NONE	0
#define CDD_CAPTURE_ACTIVE	1
#define CDD_CAPTURE_INVALIDATED	2

typedef int cu_result;
static struct {
	pthread_once_t once;
	int usable;
	void *dl;
	cu_result (*gpa)(const char *, void **, int, unsigned long long, int *);
	cu_result (*host_alloc)(void **, size_t, unsigned int);
	cu_result (*free_host)(void *);
	cu_result (*get_flags)(unsigned int *, void *);
	cu_result (*get_devptr)(unsigned long long *, void *, unsigned int);
	cu_result (*host_register)(void *, size_t, unsigned int);
	cu_result (*host_unregister)(void *);
} D = { .once = PTHREAD_ONCE_INIT };

static void cdd_driver_open(void)
{
	cu_result (*gpa)(const char *, void **, int, unsigned long long, int *);
	cu_result (*init)(unsigned int) = NULL;

	void *dl = dlopen(CDD_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
	int v = cdd_runtime_version(), st;

	if (!dl)
		return;
	*(void **)&gpa = dlsym(dl, "cuGetProcAddress_v2");
	if (!gpa ||
	    gpa("cuInit", (void **)&init, v, 0, &st) ||
	    gpa("cuMemHostAlloc", (void **)&D.host_alloc, v, 0, &st) ||
	    gpa("cuMemFreeHost", (void **)&D.free_host, v, 0, &st) ||
	    gpa("cuMemHostGetFlags", (void **)&D.get_flags, v, 0, &st) ||
	    gpa("cuMemHostGetDevicePointer", (void **)&D.get_devptr, v, 0, &st) ||
	    gpa("cuMemHostRegister", (void **)&D.host_register, v, 0, &st) ||
	    gpa("cuMemHostUnregister", (void **)&D.host_unregister, v, 0, &st))
		return;
	D.gpa = gpa;
	D.dl = dl;
	__atomic_store_n(&D.usable, init(0) == 0, __ATOMIC_RELEASE);
}

/* 0 when the driver can be used; otherwise the error to answer. */
static cudaError_t cdd_driver(void)
{
	if (cdd_forked())
		return cudaErrorInitializationError;
	pthread_once(&D.once, cdd_driver_open);
	return D.usable ? cudaSuccess : cudaErrorInsufficientDriver;
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

cudaError_t cdd_driver_register(void *p, size_t n, unsigned int flags)
{
	cudaError_t e = cdd_driver();

	return e ? e : cdd_from_cu(D.host_register(p, n, flags));
}

cudaError_t cdd_driver_unregister(void *p)
{
	cudaError_t e = cdd_driver();

	return e ? e : cdd_from_cu(D.host_unregister(p));
}

void cdd_driver_forget(void)
{
	void (*forget)(void);

	if (!__atomic_load_n(&D.usable, __ATOMIC_ACQUIRE))
		return;
	*(void **)&forget = dlsym(D.dl, "cdrv_forget_registrations");
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

/* Stream capture -------------------------------------------------------------- */

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int active;		/* a capture under way */
	int mode;		/* its mode */
	int invalidated;
	cudaStream_t stream;
	uint64_t begun, refusals;
} C;
/* This thread's capture mode, and whether it began the capture (bit 8);
 * initial-exec, as cudart_double.c's (the reason is there).
 */
static __thread __attribute__((tls_model("initial-exec"))) int cap_thread;

int cdd_capture_active(void)
{
	return __atomic_load_n(&C.active, __ATOMIC_RELAXED);
}

int cdd_capture_refuses(void)
{
	int me = cap_thread, refused;

	if (!cdd_capture_active() || (me & 0xff) == CDD_MODE_RELAXED)
		return 0;
	pthread_mutex_lock(&cap_lock);
	refused = C.active && (C.mode == CDD_MODE_GLOBAL ||
			       ((me & 0x100) && C.mode != CDD_MODE_RELAXED));
	if (refused) {
		C.invalidated = 1;
		C.refusals++;
	}
	pthread_mutex_unlock(&cap_lock);
	return refused;
}

void cdd_capture_counts(struct cdd_counts *c)
{
	pthread_mutex_lock(&cap_lock);
	c->capturing = (uint64_t)C.active;
	c->capture_refusals = C.refusals;
	pthread_mutex_unlock(&cap_lock);
}

void cdd_capture_reset(void)
{
	pthread_mutex_lock(&cap_lock);
	C.active = 0;
	C.invalidated = 0;
	C.refusals = 0;
	pthread_mutex_unlock(&cap_lock);
}

CDD_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, cdd_mode_t mode)
{
	cudaError_t ret = cudaSuccess;

	cdd_hook();
	cdd_count(CDD_CAPTURE_BEGIN);
	if (!s || (int)mode < 0 || (int)mode > CDD_MODE_RELAXED)
		return cdd_ret(!s ? cudaErrorStreamCaptureUnsupported :
			       cudaErrorInvalidValue);
	pthread_mutex_lock(&cap_lock);
	if (C.active) {		/* one capture at a time, here */
		ret = cudaErrorInvalidValue;
	} else {
		C.active = 1;
		C.mode = (int)mode;
		C.invalidated = 0;
		C.stream = s;
		C.begun++;
		cap_thread |= 0x100;
	}
	pthread_mutex_unlock(&cap_lock);
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
	cudaError_t ret;

	cdd_hook();
	cdd_count(CDD_CAPTURE_END);
	if (!graph)
		return cdd_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&cap_lock);
	if (!C.active || C.stream != s) {
		ret = cudaErrorInvalidValue;
	} else {
		ret = C.invalidated ? cudaErrorStreamCaptureInvalidated :
		      cudaSuccess;
		*graph = ret ? NULL : (cudaGraph_t)(uintptr_t)C.begun;
		C.active = 0;
		cap_thread &= 0xff;
	}
	pthread_mutex_unlock(&cap_lock);
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, cdd_cstatus_t *st)
{
	cdd_hook();
	if (!st)
		return cdd_ret(cudaErrorInvalidValue);
	pthread_mutex_lock(&cap_lock);
	*st = (cdd_cstatus_t)(!C.active || C.stream != s ? CDD_CAPTURE_NONE :
			      C.invalidated ? CDD_CAPTURE_INVALIDATED :
			      CDD_CAPTURE_ACTIVE);
	pthread_mutex_unlock(&cap_lock);
	return cudaSuccess;
}

CDD_API cudaError_t cudaThreadExchangeStreamCaptureMode(cdd_mode_t *mode)
{
	int was = cap_thread & 0xff;

	cdd_hook();
	cdd_count(CDD_CAPTURE_MODE);
	if (!mode || (int)*mode < 0 || (int)*mode > CDD_MODE_RELAXED)
		return cdd_ret(cudaErrorInvalidValue);
	cap_thread = (cap_thread & 0x100) | (int)*mode;
	*mode = (cdd_mode_t)was;
	return cudaSuccess;
}

/* Pinned host memory ---------------------------------------------------------- */

CDD_API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
	cudaError_t e;

	cdd_hook();
	cdd_count(CDD_HOST_ALLOC);
	e = cdd_driver();
	if (e)
		return cdd_ret(e);
	if (cdd_capture_refuses())
		return cdd_ret(cudaErrorStreamCaptureUnsupported);
	if (!p)
		return cdd_ret(cudaErrorInvalidValue);
	return cdd_from_cu(D.host_alloc(p, n, flags));
}

CDD_API cudaError_t cudaMallocHost(void **p, size_t n)
{
	return cudaHostAlloc(p, n, 0);
}

CDD_API cudaError_t cudaFreeHost(void *p)
{
	cudaError_t e;

	cdd_hook();
	cdd_count(CDD_FREE_HOST);
	if (!p)
		return cudaSuccess;
	e = cdd_driver();
	if (e)
		return cdd_ret(e);
	if (cdd_capture_refuses())
		return cdd_ret(cudaErrorStreamCaptureUnsupported);
	return cdd_from_cu(D.free_host(p));
}

CDD_API cudaError_t cudaHostGetFlags(unsigned int *flags, void *p)
{
	cudaError_t e;

	cdd_hook();
	cdd_count(CDD_HOST_GET_FLAGS);
	e = cdd_driver();
	if (e)
		return cdd_ret(e);
	if (!flags)
		return cdd_ret(cudaErrorInvalidValue);
	return cdd_from_cu(D.get_flags(flags, p));
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
	e = cdd_driver();
	if (e)
		return cdd_ret(e);
	if (!dev)
		return cdd_ret(cudaErrorInvalidValue);
	e = cdd_from_cu(D.get_devptr(&d, p, flags));
	if (!e)
		*dev = (void *)(uintptr_t)d;
	return e;
}
