// SPDX-License-Identifier: MIT
/*
 * cudadrv_double.c - a CUDA driver made of host memory, for the tests (see
 * cudadrv_double.h), built as libcuda.so.1 without symbol versions, as the
 * real driver is.  Pinned host allocations are anonymous mappings kept on a
 * list; registrations are another list; one mutex covers both.
 *
 * As the driver: nothing but cuInit and cuDriverGetVersion works before
 * cuInit (CUDA_ERROR_NOT_INITIALIZED); the first process to call cuInit
 * owns the driver, and in a child of fork() every call answers
 * CUDA_ERROR_NOT_INITIALIZED; cuMemHostGetFlags and
 * cuMemHostGetDevicePointer accept any address inside an allocation;
 * cuGetProcAddress hands out, for a name, the newest version of that entry
 * point that the caller's cudaVersion knows (cuMemAllocHost is _v2 from
 * 3.2, cuGetProcAddress _v2 from 12.0), CU_GET_PROC_ADDRESS_VERSION_NOT_-
 * SUFFICIENT below the first, SYMBOL_NOT_FOUND for a name it lacks; every
 * name asked is logged (cdrv_asked).
 *
 * Stream capture is the driver's (cuStreamBeginCapture and _v2,
 * cuStreamEndCapture, cuStreamGetCaptureInfo,
 * cuThreadExchangeStreamCaptureMode), with CUDA's rule for "potentially
 * unsafe" calls (here: allocating, freeing, registering and unregistering
 * pinned host memory): refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * while a capture in the global mode is under way, or one begun by the
 * calling thread in another mode but relaxed, unless the calling thread's
 * mode is relaxed; the refusal invalidates the capture (its end then
 * answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
 *
 * The types are the driver's ABI, declared here: the double builds without
 * the toolkit, and libcuda's headers would rename the legacy entry points
 * (cuMemAllocHost is a macro for cuMemAllocHost_v2) that it must define.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudadrv_double.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned int CUdeviceptr_v1;
#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED	712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED		713
#define CUDA_ERROR_NOT_FOUND		500
#define CUDA_ERROR_CAPTURE_UNSUPPORTED	900
#define CUDA_ERROR_CAPTURE_INVALIDATED	901
#define CDRV_MODE_GLOBAL		0
#define CDRV_MODE_RELAXED		2
#define CU_MEMHOSTALLOC_ALL		0x07	/* portable, devicemap, writecombined */
#define CDRV_VERSION			13000

#define CDRV_API __attribute__((visibility("default")))
#define CDRV_COUNT(fn) do {						\
	__atomic_fetch_add(&S.c.calls[fn], 1, __ATOMIC_RELAXED);	\
	cdrv_hook();							\
} while (0)
/* At the top of every call that needs an initialized driver. */
#define CDRV_ENTER(fn) do {						\
	CUresult r_;							\
									\
	CDRV_COUNT(fn);							\
	r_ = cdrv_state();						\
	if (r_)								\
		return r_;						\
} while (0)

struct cdrv_mem {
	uintptr_t p;
	size_t n;
	unsigned int flags;
	int registered;		/* cuMemHostRegister'd, not allocated here */
	struct cdrv_mem *next;
};

static pthread_mutex_t cdrv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct cdrv_mem *mems;
	int fail_alloc;
	struct cdrv_counts c;
} S;
static pid_t cdrv_owner;	/* the process that called cuInit */
static void (*cdrv_hook_fn)(void);

/* The test's hook (cdrv_set_hook), at the entry of every counted call. */
static void cdrv_hook(void)
{
	void (*fn)(void) = __atomic_load_n(&cdrv_hook_fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn();
}

static int cdrv_capture_refuses(void);

/* 0, or the answer of a call that the driver cannot take now. */
static CUresult cdrv_state(void)
{
	pid_t owner = __atomic_load_n(&cdrv_owner, __ATOMIC_ACQUIRE);

	return owner && owner == getpid() ? CUDA_SUCCESS :
	       CUDA_ERROR_NOT_INITIALIZED;
}

/* Lock held.  The allocation or registration holding p, or NULL. */
static struct cdrv_mem *cdrv_find(uintptr_t p, int inside)
{
	struct cdrv_mem *m;

	for (m = S.mems; m; m = m->next)
		if (inside ? p - m->p < m->n : p == m->p)
			return m;
	return NULL;
}

/* Lock held.  Take the allocation (registration) starting at p off the
 * list; NULL if there is none.
 */
static struct cdrv_mem *cdrv_unlink(uintptr_t p, int registered)
{
	struct cdrv_mem **pp, *m;

	for (pp = &S.mems; (m = *pp); pp = &m->next)
		if (m->p == p && m->registered == registered) {
			*pp = m->next;
			return m;
		}
	return NULL;
}

/* Controls ------------------------------------------------------------------- */

CDRV_API void cdrv_reset(void)
{
	pthread_mutex_lock(&cdrv_lock);
	memset(S.c.calls, 0, sizeof(S.c.calls));
	S.c.bad_frees = S.c.refused = 0;
	S.fail_alloc = 0;
	pthread_mutex_unlock(&cdrv_lock);
}

CDRV_API void cdrv_get_counts(struct cdrv_counts *c)
{
	pthread_mutex_lock(&cdrv_lock);
	*c = S.c;
	pthread_mutex_unlock(&cdrv_lock);
}

CDRV_API size_t cdrv_live_size(const void *p, unsigned int *flags)
{
	struct cdrv_mem *m;
	size_t n = 0;

	pthread_mutex_lock(&cdrv_lock);
	m = cdrv_find((uintptr_t)p, 0);
	if (m && !m->registered) {
		n = m->n;
		if (flags)
			*flags = m->flags;
	}
	pthread_mutex_unlock(&cdrv_lock);
	return n;
}

static void cdrv_capture_forget(void);

CDRV_API void cdrv_forget(void)
{
	struct cdrv_mem **pp, *m;

	pthread_mutex_lock(&cdrv_lock);
	for (pp = &S.mems; (m = *pp);) {
		if (!m->registered) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		free(m);
	}
	pthread_mutex_unlock(&cdrv_lock);
	cdrv_capture_forget();
}

CDRV_API void cdrv_set_hook(void (*fn)(void))
{
	__atomic_store_n(&cdrv_hook_fn, fn, __ATOMIC_RELEASE);
}

CDRV_API CUresult cuMemFreeHost(void *p);
CDRV_API int cdrv_free(void *p)
{
	return cuMemFreeHost(p);
}

CDRV_API void cdrv_fail_alloc(int n)
{
	pthread_mutex_lock(&cdrv_lock);
	S.fail_alloc = n;
	pthread_mutex_unlock(&cdrv_lock);
}

/* Initialization ---------------------------------------------------------- */

CDRV_API CUresult cuInit(unsigned int flags)
{
	pid_t was = 0;

	CDRV_COUNT(CDRV_INIT);
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (__atomic_compare_exchange_n(&cdrv_owner, &was, getpid(), 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return CUDA_SUCCESS;
	return was == getpid() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CDRV_API CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = CDRV_VERSION;
	return CUDA_SUCCESS;
}

/* Stream capture ------------------------------------------------------------ */

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int active;		/* a capture under way */
	int mode;		/* its mode */
	int invalidated;
	void *stream;
	uint64_t begun;
} C;
/* This thread's capture mode, and whether it began the capture (bit 8).
 * Initial-exec: the double is dlopen()ed, and TSan mishandles dynamic
 * TLS there (tests/cudart_double/cudart_double.c says how).
 */
static __thread __attribute__((tls_model("initial-exec"))) int cap_thread;

CDRV_API int cdrv_capturing(void)
{
	return __atomic_load_n(&C.active, __ATOMIC_RELAXED);
}

CDRV_API uint64_t cdrv_capture_refusals(void)
{
	return __atomic_load_n(&S.c.capture_refusals, __ATOMIC_RELAXED);
}

/* A potentially unsafe call now is refused, and invalidates the capture. */
static int cdrv_capture_refuses(void)
{
	int me = cap_thread, refused;

	if (!cdrv_capturing() || (me & 0xff) == CDRV_MODE_RELAXED)
		return 0;
	pthread_mutex_lock(&cap_lock);
	refused = C.active && (C.mode == CDRV_MODE_GLOBAL ||
			       ((me & 0x100) && C.mode != CDRV_MODE_RELAXED));
	if (refused)
		C.invalidated = 1;
	pthread_mutex_unlock(&cap_lock);
	if (refused)
		__atomic_fetch_add(&S.c.capture_refusals, 1, __ATOMIC_RELAXED);
	return refused;
}

static void cdrv_capture_forget(void)
{
	pthread_mutex_lock(&cap_lock);
	C.active = 0;
	C.invalidated = 0;
	pthread_mutex_unlock(&cap_lock);
	__atomic_store_n(&S.c.capture_refusals, 0, __ATOMIC_RELAXED);
}

CDRV_API CUresult cuStreamBeginCapture_v2(void *s, int mode)
{
	CUresult r = CUDA_SUCCESS;

	CDRV_ENTER(CDRV_CAPTURE_BEGIN);
	if (!s)		/* the legacy stream cannot be captured */
		return CUDA_ERROR_CAPTURE_UNSUPPORTED;
	if (mode < CDRV_MODE_GLOBAL || mode > CDRV_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cap_lock);
	if (C.active) {		/* one capture at a time, here */
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		C.active = 1;
		C.mode = mode;
		C.invalidated = 0;
		C.stream = s;
		C.begun++;
		cap_thread |= 0x100;
	}
	pthread_mutex_unlock(&cap_lock);
	return r;
}

/* The first version: the global mode. */
CDRV_API CUresult cuStreamBeginCapture(void *s)
{
	return cuStreamBeginCapture_v2(s, CDRV_MODE_GLOBAL);
}

CDRV_API CUresult cuStreamEndCapture(void *s, void **graph)
{
	CUresult r;

	CDRV_ENTER(CDRV_CAPTURE_END);
	if (!graph)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cap_lock);
	if (!C.active || C.stream != s) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		r = C.invalidated ? CUDA_ERROR_CAPTURE_INVALIDATED : CUDA_SUCCESS;
		*graph = r ? NULL : (void *)(uintptr_t)C.begun;
		C.active = 0;
		cap_thread &= 0xff;
	}
	pthread_mutex_unlock(&cap_lock);
	return r;
}

/* The first version: the status (none 0, active 1, invalidated 2) and
 * the capture's id.
 */
CDRV_API CUresult cuStreamGetCaptureInfo(void *s, int *status,
					 unsigned long long *id)
{
	CDRV_ENTER(CDRV_CAPTURE_INFO);
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cap_lock);
	*status = !C.active || C.stream != s ? 0 : C.invalidated ? 2 : 1;
	if (id)
		*id = *status ? C.begun : 0;
	pthread_mutex_unlock(&cap_lock);
	return CUDA_SUCCESS;
}

CDRV_API CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
	int was = cap_thread & 0xff;

	CDRV_ENTER(CDRV_CAPTURE_MODE);
	if (!mode || *mode < CDRV_MODE_GLOBAL || *mode > CDRV_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	cap_thread = (cap_thread & 0x100) | *mode;
	*mode = was;
	return CUDA_SUCCESS;
}

/* Pinned host memory ------------------------------------------------------ */

/* Lock held.  A new entry for [p, p + n) on the list; 0, or -1 when out of
 * memory.
 */
static int cdrv_link(void *p, size_t n, unsigned int flags, int registered)
{
	struct cdrv_mem *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	m->p = (uintptr_t)p;
	m->n = n;
	m->flags = flags;
	m->registered = registered;
	m->next = S.mems;
	S.mems = m;
	return 0;
}

CDRV_API CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	CUresult r = CUDA_SUCCESS;
	void *p = MAP_FAILED;

	CDRV_ENTER(CDRV_HOST_ALLOC);
	if (cdrv_capture_refuses())
		return CUDA_ERROR_CAPTURE_UNSUPPORTED;
	if (!pp || !n || (flags & ~CU_MEMHOSTALLOC_ALL))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cdrv_lock);
	if (S.fail_alloc) {
		S.fail_alloc -= S.fail_alloc > 0;
		S.c.refused++;
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		p = mmap(NULL, n, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || cdrv_link(p, n, flags, 0))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!r) {
		S.c.live++;
		S.c.live_bytes += n;
	} else if (p != MAP_FAILED) {
		munmap(p, n);
	}
	pthread_mutex_unlock(&cdrv_lock);
	if (!r)
		*pp = p;
	return r;
}

CDRV_API CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
	CDRV_COUNT(CDRV_ALLOC_HOST);
	return cuMemHostAlloc(pp, n, 0);
}

/* The first version: a 32-bit size. */
CDRV_API CUresult cuMemAllocHost(void **pp, unsigned int n)
{
	return cuMemAllocHost_v2(pp, n);
}

CDRV_API CUresult cuMemFreeHost(void *p)
{
	struct cdrv_mem *m;

	CDRV_ENTER(CDRV_FREE_HOST);
	if (cdrv_capture_refuses())
		return CUDA_ERROR_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&cdrv_lock);
	m = cdrv_unlink((uintptr_t)p, 0);
	if (m) {
		S.c.live--;
		S.c.live_bytes -= m->n;
	} else {
		S.c.bad_frees++;
	}
	pthread_mutex_unlock(&cdrv_lock);
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)m->p, m->n);
	free(m);
	return CUDA_SUCCESS;
}

CDRV_API CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
	struct cdrv_mem *m;

	CDRV_ENTER(CDRV_HOST_GET_FLAGS);
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cdrv_lock);
	m = cdrv_find((uintptr_t)p, 1);
	if (m && !m->registered)
		*flags = m->flags;
	pthread_mutex_unlock(&cdrv_lock);
	return m && !m->registered ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CDRV_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p,
					       unsigned int flags)
{
	struct cdrv_mem *m;

	CDRV_ENTER(CDRV_HOST_GET_DEVPTR);
	if (!d || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cdrv_lock);
	m = cdrv_find((uintptr_t)p, 1);
	pthread_mutex_unlock(&cdrv_lock);
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	*d = (CUdeviceptr)(uintptr_t)p + CDRV_DEVPTR_DELTA;
	return CUDA_SUCCESS;
}

/* The first version: 32-bit device addresses, which this one has none of. */
CDRV_API CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *d, void *p,
					    unsigned int flags)
{
	CUdeviceptr wide;
	CUresult r = cuMemHostGetDevicePointer_v2(&wide, p, flags);

	if (r)
		return r;
	if (wide >> 32)
		return CUDA_ERROR_INVALID_VALUE;
	*d = (CUdeviceptr_v1)wide;
	return CUDA_SUCCESS;
}

CDRV_API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	struct cdrv_mem *m;
	CUresult r;

	CDRV_ENTER(CDRV_HOST_REGISTER);
	if (cdrv_capture_refuses())
		return CUDA_ERROR_CAPTURE_UNSUPPORTED;
	if (!p || !n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cdrv_lock);
	for (m = S.mems; m; m = m->next)
		if ((uintptr_t)p < m->p + m->n && m->p < (uintptr_t)p + n)
			break;
	if (m) {
		pthread_mutex_unlock(&cdrv_lock);
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
	r = cdrv_link(p, n, flags, 1) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	pthread_mutex_unlock(&cdrv_lock);
	return r;
}

CDRV_API CUresult cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
	return cuMemHostRegister_v2(p, n, flags);
}

CDRV_API CUresult cuMemHostUnregister(void *p)
{
	struct cdrv_mem *m;

	CDRV_ENTER(CDRV_HOST_UNREGISTER);
	if (cdrv_capture_refuses())
		return CUDA_ERROR_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&cdrv_lock);
	m = cdrv_unlink((uintptr_t)p, 1);
	pthread_mutex_unlock(&cdrv_lock);
	free(m);
	return m ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* cuGetProcAddress ---------------------------------------------------------- */

CDRV_API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
				      unsigned long long flags, int *status);
CDRV_API CUresult cuGetProcAddress(const char *sym, void **pfn, int version,
				   unsigned long long flags);

/* Each name's versions, oldest first: the CUDA version that introduced it. */
static const struct cdrv_entry {
	const char *name;
	int since;
	void *fn;
} cdrv_entries[] = {
	{ "cuInit", 2000, (void *)cuInit },
	{ "cuDriverGetVersion", 2020, (void *)cuDriverGetVersion },
	{ "cuMemHostAlloc", 2020, (void *)cuMemHostAlloc },
	{ "cuMemAllocHost", 2000, (void *)cuMemAllocHost },
	{ "cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2 },
	{ "cuMemFreeHost", 2000, (void *)cuMemFreeHost },
	{ "cuMemHostGetFlags", 2030, (void *)cuMemHostGetFlags },
	{ "cuMemHostGetDevicePointer", 2020, (void *)cuMemHostGetDevicePointer },
	{ "cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2 },
	{ "cuMemHostRegister", 4000, (void *)cuMemHostRegister },
	{ "cuMemHostRegister", 6050, (void *)cuMemHostRegister_v2 },
	{ "cuMemHostUnregister", 4000, (void *)cuMemHostUnregister },
	{ "cuGetProcAddress", 11030, (void *)cuGetProcAddress },
	{ "cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2 },
	{ "cuStreamBeginCapture", 10000, (void *)cuStreamBeginCapture },
	{ "cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2 },
	{ "cuStreamEndCapture", 10000, (void *)cuStreamEndCapture },
	{ "cuStreamGetCaptureInfo", 10010, (void *)cuStreamGetCaptureInfo },
	{ "cuThreadExchangeStreamCaptureMode", 10010,
	  (void *)cuThreadExchangeStreamCaptureMode },
};

/* Every name cuGetProcAddress was asked for, and how often (the first
 * CDRV_MAX_ASKED names).
 */
#define CDRV_MAX_ASKED	64
static struct {
	char name[64];
	unsigned int n;
} cdrv_asked_names[CDRV_MAX_ASKED];

static void cdrv_ask(const char *sym)
{
	int i;

	pthread_mutex_lock(&cdrv_lock);
	for (i = 0; i < CDRV_MAX_ASKED; i++) {
		if (!cdrv_asked_names[i].name[0])
			snprintf(cdrv_asked_names[i].name,
				 sizeof(cdrv_asked_names[i].name), "%s", sym);
		if (!strcmp(cdrv_asked_names[i].name, sym)) {
			cdrv_asked_names[i].n++;
			break;
		}
	}
	pthread_mutex_unlock(&cdrv_lock);
}

CDRV_API unsigned int cdrv_asked(const char *sym)
{
	unsigned int n = 0;
	int i;

	pthread_mutex_lock(&cdrv_lock);
	for (i = 0; i < CDRV_MAX_ASKED && cdrv_asked_names[i].name[0]; i++)
		if (!strcmp(cdrv_asked_names[i].name, sym))
			n = cdrv_asked_names[i].n;
	pthread_mutex_unlock(&cdrv_lock);
	return n;
}

#define CU_GET_PROC_ADDRESS_SUCCESS			0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND		1
#define CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT	2

CDRV_API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
				      unsigned long long flags, int *status)
{
	int found = 0;
	unsigned int i;

	CDRV_COUNT(CDRV_GET_PROC_ADDRESS);
	if (!sym || !pfn || (flags & ~3ull))
		return CUDA_ERROR_INVALID_VALUE;
	cdrv_ask(sym);
	*pfn = NULL;
	for (i = 0; i < sizeof(cdrv_entries) / sizeof(cdrv_entries[0]); i++) {
		if (strcmp(sym, cdrv_entries[i].name))
			continue;
		found = 1;
		if (cdrv_entries[i].since <= version)
			*pfn = cdrv_entries[i].fn;
	}
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS :
			  found ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
			  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CDRV_API CUresult cuGetProcAddress(const char *sym, void **pfn, int version,
				   unsigned long long flags)
{
	return cuGetProcAddress_v2(sym, pfn, version, flags, NULL);
}
