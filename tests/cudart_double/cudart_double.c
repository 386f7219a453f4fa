// SPDX-License-Identifier: MIT
/*
 * cudart_double.c - a CUDA runtime made of host memory, for the tests (see
 * cudart_double.h).  Device memory is anonymous mmap (never touched unless
 * written), streams and events are small heap objects, one mutex covers
 * everything.  With the toolkit present every entry point is compiled
 * against cuda_runtime_api.h, so its prototype is the real one.
 *
 * Misuse it detects (each a "violation", cdd_last_violation() says which):
 * registering memory that is not mapped or is registered already,
 * unregistering what is not registered or is no longer mapped (that is: the
 * library unmapped before it unregistered), a live registration whose
 * memory is gone (cdd_check), freeing an unknown device pointer, using an
 * unknown event.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda.h"		/* userlib/cuda.h: the runtime's types */
#include "cudart_double.h"

#if !GP_HAVE_CUDA_HEADERS
#define cdd_kind_t int
#define cudaErrorInvalidValue			1
#define cudaErrorInvalidDevice			101
#define cudaErrorInvalidResourceHandle		400
#define cudaErrorHostMemoryAlreadyRegistered	712
#define cudaErrorHostMemoryNotRegistered	713
#else
#define cdd_kind_t enum cudaMemcpyKind
#endif

#define CDD_API __attribute__((visibility("default")))
#define CDD_MAX_DEV 8
/* Some calls count outside the lock (threads call them at once). */
#define CDD_COUNT(fn) __atomic_fetch_add(&S.c.calls[fn], 1, __ATOMIC_RELAXED)

struct cdd_reg { uintptr_t p; size_t n; struct cdd_reg *next; };
struct cdd_blk { uintptr_t p; size_t n; int dev; struct cdd_blk *next; };
struct cdd_ev { uint32_t magic; int pending; void *stream; struct cdd_ev *next; };
#define CDD_EV_MAGIC 0xe7e7e7e7u

static pthread_mutex_t cdd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int devices;
	size_t mem_total;
	size_t fail_above;
	int fail_register;
	int fail_malloc_n;		/* cdd_fail_malloc_error */
	cudaError_t fail_malloc_err;
	int hold;
	char bus_id[32];
	struct cdd_reg *regs;
	struct cdd_blk *blks;
	struct cdd_ev *evs;
	size_t dev_bytes[CDD_MAX_DEV];
	struct cdd_counts c;
	char violation[256];
} S = { .devices = 1, .mem_total = 1ull << 30, .bus_id = "0000:00:00.0" };

/* Initial-exec: the double is dlopen()ed, and dynamic TLS would go through
 * __tls_get_addr.  Under gcc 12's ThreadSanitizer that path guesses a
 * block's bounds from a "glibc 2.19 header" whenever the block starts 16
 * bytes into a page; glibc 2.36 has no such header, TSan reads garbage and
 * dies trying to map terabytes of shadow ("ThreadSanitizer failed to
 * allocate 0x1ec2... bytes", tests/tsan, about one run in five).  Eight
 * bytes fit in the static TLS that glibc keeps for dlopen()ed libraries.
 */
#define CDD_TLS __thread __attribute__((tls_model("initial-exec")))
static CDD_TLS int cdd_cur_dev;
static CDD_TLS cudaError_t cdd_last;

static void cdd_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cdd_violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(S.violation, sizeof(S.violation), fmt, ap);
	va_end(ap);
	S.c.violations++;
	fprintf(stderr, "cudart_double: violation: %s\n", S.violation);
}

static cudaError_t cdd_ret(cudaError_t e)
{
	if (e != cudaSuccess)
		cdd_last = e;
	return e;
}

/* Is [p, p + n) wholly mapped? */
static int cdd_mapped(uintptr_t p, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = p & ~(pg - 1);
	size_t len = ((p + n + pg - 1) & ~(pg - 1)) - a;
	unsigned char *vec = malloc(len / pg + 1);
	int r;

	if (!vec)
		return 1;
	r = mincore((void *)a, len, vec) == 0;
	free(vec);
	return r;
}

/* Control API ------------------------------------------------------------------ */

CDD_API void cdd_reset(void)
{
	pthread_mutex_lock(&cdd_lock);
	while (S.regs) { struct cdd_reg *r = S.regs; S.regs = r->next; free(r); }
	while (S.blks) { struct cdd_blk *b = S.blks; S.blks = b->next; munmap((void *)b->p, b->n); free(b); }
	while (S.evs) { struct cdd_ev *e = S.evs; S.evs = e->next; e->magic = 0; free(e); }
	memset(&S.c, 0, sizeof(S.c));
	memset(S.dev_bytes, 0, sizeof(S.dev_bytes));
	S.devices = 1;
	S.mem_total = 1ull << 30;
	S.fail_above = 0;
	S.fail_register = 0;
	S.hold = 0;
	S.violation[0] = 0;
	snprintf(S.bus_id, sizeof(S.bus_id), "0000:00:00.0");
	pthread_mutex_unlock(&cdd_lock);
}

CDD_API void cdd_set_device_count(int n) { S.devices = n > CDD_MAX_DEV ? CDD_MAX_DEV : n; }
CDD_API void cdd_set_mem_total(size_t bytes) { S.mem_total = bytes; }
CDD_API void cdd_fail_malloc_above(size_t bytes) { S.fail_above = bytes; }
CDD_API void cdd_fail_register(int n) { S.fail_register = n; }
CDD_API void cdd_fail_malloc_error(int n, int err)
{
	pthread_mutex_lock(&cdd_lock);
	S.fail_malloc_n = n;
	S.fail_malloc_err = (cudaError_t)err;
	pthread_mutex_unlock(&cdd_lock);
}
CDD_API void cdd_hold_events(int on) { S.hold = on; }
CDD_API const char *cdd_last_violation(void) { return S.violation; }

CDD_API void cdd_set_pci_bus_id(const char *id)
{
	snprintf(S.bus_id, sizeof(S.bus_id), "%s", id);
}

CDD_API void cdd_complete_events(void)
{
	struct cdd_ev *e;

	pthread_mutex_lock(&cdd_lock);
	for (e = S.evs; e; e = e->next)
		if (e->pending) {
			e->pending = 0;
			S.c.events_pending--;
		}
	pthread_mutex_unlock(&cdd_lock);
}

CDD_API void cdd_get_counts(struct cdd_counts *c)
{
	pthread_mutex_lock(&cdd_lock);
	*c = S.c;
	pthread_mutex_unlock(&cdd_lock);
}

CDD_API size_t cdd_registered_size(const void *p)
{
	struct cdd_reg *r;
	size_t n = 0;

	pthread_mutex_lock(&cdd_lock);
	for (r = S.regs; r; r = r->next)
		if (r->p == (uintptr_t)p)
			n = r->n;
	pthread_mutex_unlock(&cdd_lock);
	return n;
}

CDD_API uint64_t cdd_check(void)
{
	struct cdd_reg *r;
	uint64_t v;

	pthread_mutex_lock(&cdd_lock);
	for (r = S.regs; r; r = r->next)
		if (!cdd_mapped(r->p, r->n))
			cdd_violation("registered range %#lx + %zu is no longer mapped",
				      (unsigned long)r->p, r->n);
	v = S.c.violations;
	pthread_mutex_unlock(&cdd_lock);
	return v;
}

/* Devices -------------------------------------------------------------------- */

CDD_API cudaError_t cudaGetDeviceCount(int *n)
{
	CDD_COUNT(CDD_GET_DEVICE_COUNT);
	*n = S.devices;
	return S.devices > 0 ? cudaSuccess : cdd_ret(cudaErrorNoDevice);
}

CDD_API cudaError_t cudaGetDevice(int *d)
{
	CDD_COUNT(CDD_GET_DEVICE);
	*d = cdd_cur_dev;
	return cudaSuccess;
}

CDD_API cudaError_t cudaSetDevice(int d)
{
	CDD_COUNT(CDD_SET_DEVICE);
	if (d < 0 || d >= S.devices)
		return cdd_ret(cudaErrorInvalidDevice);
	cdd_cur_dev = d;
	return cudaSuccess;
}

CDD_API cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }
CDD_API cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }

CDD_API cudaError_t cudaGetLastError(void)
{
	cudaError_t e = cdd_last;

	cdd_last = cudaSuccess;
	return e;
}

CDD_API const char *cudaGetErrorString(cudaError_t e)
{
	switch ((int)e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorNotReady: return "device not ready";
	case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
	case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
	default: return "unknown error (double)";
	}
}

CDD_API cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
	CDD_COUNT(CDD_PCI_BUS_ID);
	if (d < 0 || d >= S.devices)
		return cdd_ret(cudaErrorInvalidDevice);
	snprintf(buf, (size_t)len, "%s", S.bus_id);
	return cudaSuccess;
}

CDD_API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	CDD_COUNT(CDD_MEM_GET_INFO);
	pthread_mutex_lock(&cdd_lock);
	*total = S.mem_total;
	*free_b = S.mem_total - S.dev_bytes[cdd_cur_dev];
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

CDD_API cudaError_t cudaDeviceSynchronize(void)
{
	cdd_complete_events();
	return cudaSuccess;
}

/* Host registration ------------------------------------------------------------ */

CDD_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	uintptr_t p = (uintptr_t)ptr;
	struct cdd_reg *r;
	cudaError_t ret = cudaSuccess;

	(void)flags;
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_HOST_REGISTER);
	if (S.fail_register) {
		if (S.fail_register > 0)
			S.fail_register--;
		ret = cudaErrorMemoryAllocation;
		goto out;
	}
	if (!size || !cdd_mapped(p, size)) {
		cdd_violation("cudaHostRegister(%#lx, %zu): not mapped", (unsigned long)p, size);
		ret = cudaErrorInvalidValue;
		goto out;
	}
	for (r = S.regs; r; r = r->next)
		if (p < r->p + r->n && r->p < p + size) {
			cdd_violation("cudaHostRegister(%#lx, %zu): overlaps a registration",
				      (unsigned long)p, size);
			ret = cudaErrorHostMemoryAlreadyRegistered;
			goto out;
		}
	r = calloc(1, sizeof(*r));
	r->p = p;
	r->n = size;
	r->next = S.regs;
	S.regs = r;
	S.c.registered++;
	S.c.registered_bytes += size;
out:
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaHostUnregister(void *ptr)
{
	struct cdd_reg **pp, *r;
	cudaError_t ret = cudaErrorHostMemoryNotRegistered;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_HOST_UNREGISTER);
	for (pp = &S.regs; (r = *pp); pp = &r->next) {
		if (r->p != (uintptr_t)ptr)
			continue;
		if (!cdd_mapped(r->p, r->n))
			cdd_violation("cudaHostUnregister(%p): memory unmapped before it was unregistered",
				      ptr);
		*pp = r->next;
		S.c.registered--;
		S.c.registered_bytes -= r->n;
		free(r);
		ret = cudaSuccess;
		break;
	}
	if (ret != cudaSuccess)
		cdd_violation("cudaHostUnregister(%p): not registered", ptr);
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(ret);
}

/* Device memory -------------------------------------------------------------- */

CDD_API cudaError_t cudaMalloc(void **ptr, size_t size)
{
	struct cdd_blk *b;
	int d = cdd_cur_dev;
	void *p;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MALLOC);
	if (S.fail_malloc_n) {
		cudaError_t e = S.fail_malloc_err;

		S.fail_malloc_n--;
		pthread_mutex_unlock(&cdd_lock);
		return cdd_ret(e);
	}
	if (!size || (S.fail_above && size > S.fail_above) ||
	    S.dev_bytes[d] + size > S.mem_total) {
		S.c.malloc_refused++;
		pthread_mutex_unlock(&cdd_lock);
		return cdd_ret(cudaErrorMemoryAllocation);
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	b = calloc(1, sizeof(*b));
	if (p == MAP_FAILED || !b) {
		if (p != MAP_FAILED)
			munmap(p, size);
		free(b);
		S.c.malloc_refused++;
		pthread_mutex_unlock(&cdd_lock);
		return cdd_ret(cudaErrorMemoryAllocation);
	}
	b->p = (uintptr_t)p;
	b->n = size;
	b->dev = d;
	b->next = S.blks;
	S.blks = b;
	S.dev_bytes[d] += size;
	S.c.dev_live++;
	S.c.dev_live_bytes += size;
	*ptr = p;
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

CDD_API cudaError_t cudaFree(void *ptr)
{
	struct cdd_blk **pp, *b;

	if (!ptr)
		return cudaSuccess;
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_FREE);
	for (pp = &S.blks; (b = *pp); pp = &b->next) {
		if (b->p != (uintptr_t)ptr)
			continue;
		*pp = b->next;
		S.dev_bytes[b->dev] -= b->n;
		S.c.dev_live--;
		S.c.dev_live_bytes -= b->n;
		munmap(ptr, b->n);
		free(b);
		pthread_mutex_unlock(&cdd_lock);
		return cudaSuccess;
	}
	cdd_violation("cudaFree(%p): not a device allocation", ptr);
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(cudaErrorInvalidValue);
}

CDD_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cdd_kind_t k)
{
	(void)k;
	CDD_COUNT(CDD_MEMCPY);
	memmove(dst, src, n);
	return cudaSuccess;
}

CDD_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
				    cdd_kind_t k, cudaStream_t s)
{
	(void)s;
	return cudaMemcpy(dst, src, n, k);
}

/* Streams and events ------------------------------------------------------------ */

CDD_API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_STREAM_CREATE);
	S.c.streams_live++;
	pthread_mutex_unlock(&cdd_lock);
	*s = (cudaStream_t)malloc(64);
	return *s ? cudaSuccess : cdd_ret(cudaErrorMemoryAllocation);
}

CDD_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int f)
{
	(void)f;
	return cudaStreamCreate(s);
}

CDD_API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_STREAM_DESTROY);
	S.c.streams_live--;
	pthread_mutex_unlock(&cdd_lock);
	free(s);
	return cudaSuccess;
}

CDD_API cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	struct cdd_ev *e;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_STREAM_SYNC);
	for (e = S.evs; e; e = e->next)
		if (e->pending && e->stream == (void *)s) {
			e->pending = 0;
			S.c.events_pending--;
		}
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

static struct cdd_ev *cdd_ev_find(cudaEvent_t ev)
{
	struct cdd_ev *e;

	for (e = S.evs; e; e = e->next)
		if (e == (struct cdd_ev *)ev && e->magic == CDD_EV_MAGIC)
			return e;
	cdd_violation("unknown event %p", (void *)ev);
	return NULL;
}

CDD_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int f)
{
	struct cdd_ev *e = calloc(1, sizeof(*e));

	(void)f;
	if (!e)
		return cdd_ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_EVENT_CREATE);
	e->magic = CDD_EV_MAGIC;
	e->next = S.evs;
	S.evs = e;
	S.c.events_live++;
	pthread_mutex_unlock(&cdd_lock);
	*ev = (cudaEvent_t)e;
	return cudaSuccess;
}

CDD_API cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
	struct cdd_ev *e;
	cudaError_t ret = cudaErrorInvalidResourceHandle;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_EVENT_RECORD);
	e = cdd_ev_find(ev);
	if (e) {
		if (e->pending)
			S.c.events_pending--;
		e->pending = S.hold;
		if (e->pending)
			S.c.events_pending++;
		e->stream = (void *)s;
		ret = cudaSuccess;
	}
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaEventQuery(cudaEvent_t ev)
{
	struct cdd_ev *e;
	cudaError_t ret = cudaErrorInvalidResourceHandle;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_EVENT_QUERY);
	e = cdd_ev_find(ev);
	if (e)
		ret = e->pending ? cudaErrorNotReady : cudaSuccess;
	pthread_mutex_unlock(&cdd_lock);
	/* Recorded as the last error too, as the real runtime has done:
	 * PyTorch's caching allocator clears it after a not-ready query
	 * (pytorch#18584, #61554), or the application's next
	 * cudaGetLastError() would report "device not ready".
	 */
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
	struct cdd_ev *e;
	cudaError_t ret = cudaErrorInvalidResourceHandle;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_EVENT_SYNC);
	e = cdd_ev_find(ev);
	if (e) {
		if (e->pending)
			S.c.events_pending--;
		e->pending = 0;	/* "waits" until the work is done */
		ret = cudaSuccess;
	}
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(ret);
}

CDD_API cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
	struct cdd_ev **pp, *e;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_EVENT_DESTROY);
	for (pp = &S.evs; (e = *pp); pp = &e->next)
		if (e == (struct cdd_ev *)ev) {
			*pp = e->next;
			if (e->pending)
				S.c.events_pending--;
			S.c.events_live--;
			e->magic = 0;
			free(e);
			pthread_mutex_unlock(&cdd_lock);
			return cudaSuccess;
		}
	cdd_violation("cudaEventDestroy(%p): unknown event", (void *)ev);
	pthread_mutex_unlock(&cdd_lock);
	return cdd_ret(cudaErrorInvalidResourceHandle);
}
