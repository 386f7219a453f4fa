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
 *
 * fork() as CUDA has it: the first process to make a call that needs the
 * driver owns the CUDA state, and in a child of fork() such calls fail
 * with cudaErrorInitializationError (queries such as the device count and
 * the versions still answer).
 *
 * The driver's virtual memory management, reached as on CUDA through
 * cudaGetDriverEntryPointByVersion / cudaGetDriverEntryPoint, is checked as
 * its documentation states: sizes and addresses must be multiples of the
 * granularity; a reservation is PROT_NONE address space; cuMemMap puts
 * fresh PROT_NONE pages there (so touching them before cuMemSetAccess
 * faults, as a GPU's illegal address would), only inside a reservation and
 * never over a mapping; cuMemSetAccess needs the whole range mapped;
 * cuMemUnmap takes whole mappings only; cuMemRelease of a mapped handle
 * succeeds and the memory lives until its last mapping goes;
 * cuMemAddressFree of a range still mapped is refused.  Every misuse is a
 * violation.  (Two mappings of one handle do not share their bytes here;
 * libgpupool maps each handle once.)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cudart_double_internal.h"

#if !GP_HAVE_CUDA_HEADERS
#define cdd_kind_t int
#define cdd_qres_t int
#define cudaErrorInvalidValue			1
#define cudaErrorInitializationError		3
#define cudaErrorInvalidDevice			101
#define cudaErrorInvalidResourceHandle		400
#define cudaErrorHostMemoryAlreadyRegistered	712
#define cudaErrorHostMemoryNotRegistered	713
#define cudaErrorStreamCaptureUnsupported	900
#else
#define cdd_kind_t enum cudaMemcpyKind
#define cdd_qres_t enum cudaDriverEntryPointQueryResult
#endif

#define CDD_MAX_DEV 8
/* Some calls count outside the lock (threads call them at once). */
#define CDD_COUNT(fn) cdd_count(fn)

struct cdd_reg { uintptr_t p; size_t n; struct cdd_reg *next; };
struct cdd_blk { uintptr_t p; size_t n; int dev; struct cdd_blk *next; };
struct cdd_ev { uint32_t magic; int pending; void *stream; struct cdd_ev *next; };
struct cdd_res { uintptr_t p; size_t n; struct cdd_res *next; };
struct cdd_mh { uint32_t magic; int released, dev; size_t n; uint64_t maps; struct cdd_mh *next; };
struct cdd_mapping { uintptr_t p; size_t n; struct cdd_mh *h; struct cdd_mapping *next; };
#define CDD_MH_MAGIC 0x6d656d68u
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
	struct cdd_res *res;
	struct cdd_mh *mhs;
	struct cdd_mapping *maps;
	int vmm;
	size_t gran;
	long create_left;		/* -1: no refusal */
	int rt_version;
	size_t dev_bytes[CDD_MAX_DEV];
	struct cdd_counts c;
	char violation[256];
} S = { .devices = 1, .mem_total = 1ull << 30, .bus_id = "0000:00:00.0",
	.vmm = 1, .gran = 2ull << 20, .create_left = -1, .rt_version = 13000 };

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

void cdd_count(enum cdd_fn fn)
{
	__atomic_fetch_add(&S.c.calls[fn], 1, __ATOMIC_RELAXED);
	if (cdd_capture_active())
		__atomic_fetch_add(&S.c.calls_in_capture, 1, __ATOMIC_RELAXED);
}

int cdd_runtime_version(void)
{
	return S.rt_version;
}

cudaError_t cdd_ret(cudaError_t e)
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
	while (S.maps) { struct cdd_mapping *m = S.maps; S.maps = m->next; free(m); }
	while (S.mhs) { struct cdd_mh *h = S.mhs; S.mhs = h->next; h->magic = 0; free(h); }
	while (S.res) { struct cdd_res *r = S.res; S.res = r->next; munmap((void *)r->p, r->n); free(r); }
	S.vmm = 1;
	S.gran = 2ull << 20;
	S.create_left = -1;
	S.rt_version = 13000;
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
	cdd_driver_forget();
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
CDD_API void cdd_set_vmm(int supported, size_t gran)
{
	S.vmm = supported;
	if (gran)
		S.gran = gran;
}
CDD_API void cdd_fail_create_after(long n) { S.create_left = n; }
CDD_API void cdd_set_runtime_version(int v) { S.rt_version = v; }
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
	cdd_capture_counts(c);
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

/* The owner of the CUDA state: the first process to need the driver (see
 * the top of this file).  Not reset by cdd_reset(): CUDA cannot be reset.
 */
static pid_t cdd_owner;

int cdd_forked(void)
{
	pid_t me = getpid(), was = 0;

	if (__atomic_compare_exchange_n(&cdd_owner, &was, me, 0,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
	return was != me;
}

/* At the top of every call that needs the driver. */
#define CDD_NEEDS_DRIVER() do {						\
	if (cdd_forked())						\
		return cdd_ret(cudaErrorInitializationError);		\
} while (0)

/* Devices -------------------------------------------------------------------- */

CDD_API cudaError_t cudaGetDeviceCount(int *n)
{
	cdd_hook();
	CDD_COUNT(CDD_GET_DEVICE_COUNT);
	*n = S.devices;
	return S.devices > 0 ? cudaSuccess : cdd_ret(cudaErrorNoDevice);
}

CDD_API cudaError_t cudaGetDevice(int *d)
{
	cdd_hook();
	CDD_COUNT(CDD_GET_DEVICE);
	*d = cdd_cur_dev;
	return cudaSuccess;
}

CDD_API cudaError_t cudaSetDevice(int d)
{
	cdd_hook();
	CDD_COUNT(CDD_SET_DEVICE);
	if (d < 0 || d >= S.devices)
		return cdd_ret(cudaErrorInvalidDevice);
	cdd_cur_dev = d;
	return cudaSuccess;
}

CDD_API cudaError_t cudaRuntimeGetVersion(int *v)
{
	cdd_hook();
	*v = S.rt_version;
	return cudaSuccess;
}

CDD_API cudaError_t cudaDriverGetVersion(int *v)
{
	cdd_hook();
	*v = 13000;
	return cudaSuccess;
}

/* CUDA's error state: a thread's last error, set by every call that
 * fails (cdd_ret) and kept until cudaGetLastError returns it; a call that
 * succeeds leaves it.
 */
CDD_API cudaError_t cudaGetLastError(void)
{
	cudaError_t e = cdd_last;

	cdd_hook();
	cdd_last = cudaSuccess;
	return e;
}

CDD_API int cdd_swap_last_error(int e)
{
	cudaError_t was = cdd_last;

	cdd_last = (cudaError_t)e;
	return (int)was;
}

CDD_API cudaError_t cudaPeekAtLastError(void)
{
	cdd_hook();
	return cdd_last;
}

CDD_API const char *cudaGetErrorString(cudaError_t e)
{
	switch ((int)e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorInitializationError: return "initialization error";
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
	cdd_hook();
	CDD_COUNT(CDD_PCI_BUS_ID);
	if (d < 0 || d >= S.devices)
		return cdd_ret(cudaErrorInvalidDevice);
	snprintf(buf, (size_t)len, "%s", S.bus_id);
	return cudaSuccess;
}

CDD_API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
	cdd_hook();
	CDD_NEEDS_DRIVER();
	CDD_COUNT(CDD_MEM_GET_INFO);
	pthread_mutex_lock(&cdd_lock);
	*total = S.mem_total;
	*free_b = S.mem_total - S.dev_bytes[cdd_cur_dev];
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

CDD_API cudaError_t cudaDeviceSynchronize(void)
{
	CDD_NEEDS_DRIVER();
	cdd_complete_events();
	return cudaSuccess;
}

/* Host registration ------------------------------------------------------------ */

/* Lock held.  The misuse the double catches before the driver is asked
 * (a violation each), or an injected failure; cudaSuccess otherwise.
 */
static cudaError_t cdd_register_check(uintptr_t p, size_t size)
{
	struct cdd_reg *r;

	if (S.fail_register) {
		if (S.fail_register > 0)
			S.fail_register--;
		return cudaErrorMemoryAllocation;
	}
	if (!size || !cdd_mapped(p, size)) {
		cdd_violation("cudaHostRegister(%#lx, %zu): not mapped", (unsigned long)p, size);
		return cudaErrorInvalidValue;
	}
	for (r = S.regs; r; r = r->next)
		if (p < r->p + r->n && r->p < p + size) {
			cdd_violation("cudaHostRegister(%#lx, %zu): overlaps a registration",
				      (unsigned long)p, size);
			return cudaErrorHostMemoryAlreadyRegistered;
		}
	return cudaSuccess;
}

/* Registered in the driver (cuMemHostRegister), as the runtime does; the
 * double keeps its own list beside, for its checks and counts.
 */
CDD_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	uintptr_t p = (uintptr_t)ptr;
	struct cdd_reg *r;
	cudaError_t ret;

	cdd_hook();
	CDD_NEEDS_DRIVER();
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_HOST_REGISTER);
	ret = cdd_register_check(p, size);
	pthread_mutex_unlock(&cdd_lock);
	if (!ret)
		ret = cdd_driver_register(ptr, size, flags);
	r = ret ? NULL : calloc(1, sizeof(*r));
	if (!r)
		return cdd_ret(ret ? ret : cudaErrorMemoryAllocation);
	r->p = p;
	r->n = size;
	pthread_mutex_lock(&cdd_lock);
	r->next = S.regs;
	S.regs = r;
	S.c.registered++;
	S.c.registered_bytes += size;
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

/* Unregistered in the driver first: a refusal there (a capture) leaves
 * the double's list as the driver's.
 */
CDD_API cudaError_t cudaHostUnregister(void *ptr)
{
	struct cdd_reg **pp, *r;
	cudaError_t ret;

	cdd_hook();
	CDD_NEEDS_DRIVER();
	CDD_COUNT(CDD_HOST_UNREGISTER);
	pthread_mutex_lock(&cdd_lock);
	for (r = S.regs; r && r->p != (uintptr_t)ptr; r = r->next)
		;
	if (!r)
		cdd_violation("cudaHostUnregister(%p): not registered", ptr);
	else if (!cdd_mapped(r->p, r->n))
		cdd_violation("cudaHostUnregister(%p): memory unmapped before it was unregistered",
			      ptr);
	pthread_mutex_unlock(&cdd_lock);
	ret = cdd_driver_unregister(ptr);
	if (ret)
		return ret;
	pthread_mutex_lock(&cdd_lock);
	for (pp = &S.regs; (r = *pp); pp = &r->next)
		if (r->p == (uintptr_t)ptr) {
			*pp = r->next;
			S.c.registered--;
			S.c.registered_bytes -= r->n;
			free(r);
			break;
		}
	pthread_mutex_unlock(&cdd_lock);
	return cudaSuccess;
}

/* Device memory -------------------------------------------------------------- */

CDD_API cudaError_t cudaMalloc(void **ptr, size_t size)
{
	struct cdd_blk *b;
	int d = cdd_cur_dev;
	void *p;

	CDD_NEEDS_DRIVER();
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

	CDD_NEEDS_DRIVER();
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
	CDD_NEEDS_DRIVER();
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

	CDD_NEEDS_DRIVER();
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
	struct cdd_ev *e;

	CDD_NEEDS_DRIVER();
	(void)f;
	e = calloc(1, sizeof(*e));
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

/* The driver's virtual memory management ------------------------------------- */

/* Driver results (CUresult), as in cuda.h. */
#define CDD_CU_OK		0
#define CDD_CU_INVALID_VALUE	1
#define CDD_CU_OUT_OF_MEMORY	2
#define CDD_CU_INVALID_DEVICE	101
#define CDD_CU_NOT_SUPPORTED	801

static int cdd_aligned(uintptr_t p, size_t n)
{
	return n && !(p % S.gran) && !(n % S.gran);
}

static struct cdd_res *cdd_res_of(uintptr_t p, size_t n)
{
	struct cdd_res *r;

	for (r = S.res; r; r = r->next)
		if (p >= r->p && p + n <= r->p + r->n && p + n > p)
			return r;
	return NULL;
}

static struct cdd_mh *cdd_mh_find(gp_cu_mem h)
{
	struct cdd_mh *m;

	for (m = S.mhs; m; m = m->next)
		if ((uintptr_t)m == (uintptr_t)h && m->magic == CDD_MH_MAGIC)
			return m;
	return NULL;
}

/* Bytes of [p, p + n) covered by mappings; *partial when one sticks out. */
static size_t cdd_covered(uintptr_t p, size_t n, int *partial)
{
	struct cdd_mapping *m;
	size_t c = 0;

	*partial = 0;
	for (m = S.maps; m; m = m->next) {
		if (m->p >= p + n || m->p + m->n <= p)
			continue;
		if (m->p < p || m->p + m->n > p + n)
			*partial = 1;
		c += (m->p + m->n < p + n ? m->p + m->n : p + n) -
		     (m->p > p ? m->p : p);
	}
	return c;
}

static void cdd_mh_drop(struct cdd_mh *h)
{
	struct cdd_mh **pp;

	for (pp = &S.mhs; *pp; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	S.dev_bytes[h->dev] -= h->n;
	S.c.handles--;
	S.c.phys_bytes -= h->n;
	h->magic = 0;
	free(h);
}

static gp_cu_result cdd_cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal < 0 || ordinal >= S.devices)
		return CDD_CU_INVALID_DEVICE;
	*dev = ordinal;
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuDeviceGetAttribute(int *v, int attr, int dev)
{
	if (dev < 0 || dev >= S.devices)
		return CDD_CU_INVALID_DEVICE;
	*v = attr == GP_CU_VMM_SUPPORTED_ATTR ? S.vmm : 0;
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemGetAllocationGranularity(size_t *g,
						      const struct gp_cu_prop *prop,
						      int option)
{
	(void)option;
	if (!g || !prop || prop->location.type != GP_CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= S.devices)
		return CDD_CU_INVALID_VALUE;
	*g = S.gran;
	return S.vmm ? CDD_CU_OK : CDD_CU_NOT_SUPPORTED;
}

static gp_cu_result cdd_cuMemAddressReserve(gp_cu_ptr *ptr, size_t size,
					    size_t align, gp_cu_ptr addr,
					    unsigned long long flags)
{
	struct cdd_res *r;
	uintptr_t a;
	size_t extra;
	void *p;

	(void)addr;	/* a hint only */
	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_ADDRESS_RESERVE);
	if (!cdd_aligned(0, size) || (align & (align - 1)) || flags) {
		cdd_violation("cuMemAddressReserve(%zu, align %zu): not a multiple of the granularity",
			      size, align);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	extra = align > S.gran ? align : S.gran;
	p = mmap(NULL, size + extra, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r = calloc(1, sizeof(*r));
	if (p == MAP_FAILED || !r) {
		if (p != MAP_FAILED)
			munmap(p, size + extra);
		free(r);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_OUT_OF_MEMORY;
	}
	a = ((uintptr_t)p + extra - 1) & ~(uintptr_t)(extra - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((uintptr_t)p + size + extra > a + size)
		munmap((void *)(a + size), (uintptr_t)p + size + extra - (a + size));
	r->p = a;
	r->n = size;
	r->next = S.res;
	S.res = r;
	S.c.reservations++;
	S.c.reserved_bytes += size;
	*ptr = a;
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemAddressFree(gp_cu_ptr ptr, size_t size)
{
	struct cdd_res **pp, *r;
	gp_cu_result ret = CDD_CU_INVALID_VALUE;
	int partial;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_ADDRESS_FREE);
	for (pp = &S.res; (r = *pp); pp = &r->next) {
		if (r->p != ptr || r->n != size)
			continue;
		if (cdd_covered(r->p, r->n, &partial)) {
			cdd_violation("cuMemAddressFree(%#llx): range still mapped", ptr);
			break;
		}
		*pp = r->next;
		munmap((void *)r->p, r->n);
		S.c.reservations--;
		S.c.reserved_bytes -= r->n;
		free(r);
		ret = CDD_CU_OK;
		break;
	}
	if (!r)
		cdd_violation("cuMemAddressFree(%#llx, %zu): not a reservation", ptr, size);
	pthread_mutex_unlock(&cdd_lock);
	return ret;
}

static gp_cu_result cdd_cuMemCreate(gp_cu_mem *out, size_t size,
				    const struct gp_cu_prop *prop,
				    unsigned long long flags)
{
	struct cdd_mh *h;
	int d;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MEM_CREATE);
	if (!cdd_aligned(0, size) || !prop || flags ||
	    prop->type != GP_CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != GP_CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= S.devices) {
		cdd_violation("cuMemCreate(%zu): bad size or properties", size);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	d = prop->location.id;
	if (S.create_left == 0 || S.dev_bytes[d] + size > S.mem_total) {
		S.c.create_refused++;
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_OUT_OF_MEMORY;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_OUT_OF_MEMORY;
	}
	if (S.create_left > 0)
		S.create_left--;
	h->magic = CDD_MH_MAGIC;
	h->dev = d;
	h->n = size;
	h->next = S.mhs;
	S.mhs = h;
	S.dev_bytes[d] += size;
	S.c.handles++;
	S.c.phys_bytes += size;
	*out = (gp_cu_mem)(uintptr_t)h;
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemRelease(gp_cu_mem handle)
{
	struct cdd_mh *h;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MEM_RELEASE);
	h = cdd_mh_find(handle);
	if (!h || h->released) {
		cdd_violation("cuMemRelease(%#llx): %s", handle,
			      h ? "released twice" : "not a handle");
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	h->released = 1;
	if (!h->maps)		/* else it lives until its last unmap */
		cdd_mh_drop(h);
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemMap(gp_cu_ptr ptr, size_t size, size_t offset,
				 gp_cu_mem handle, unsigned long long flags)
{
	struct cdd_mapping *m;
	struct cdd_mh *h;
	const char *why = NULL;
	int partial;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MEM_MAP);
	h = cdd_mh_find(handle);
	if (!cdd_aligned(ptr, size) || offset || flags)
		why = "not a multiple of the granularity (or offset, flags not 0)";
	else if (!h || h->released)
		why = "not a live handle";
	else if (size > h->n)
		why = "larger than the handle";
	else if (!cdd_res_of(ptr, size))
		why = "outside every reservation";
	else if (cdd_covered(ptr, size, &partial))
		why = "over a mapping";
	if (why) {
		cdd_violation("cuMemMap(%#llx, %zu): %s", ptr, size, why);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	m = calloc(1, sizeof(*m));
	if (!m || mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0) == MAP_FAILED) {
		free(m);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_OUT_OF_MEMORY;
	}
	m->p = ptr;
	m->n = size;
	m->h = h;
	m->next = S.maps;
	S.maps = m;
	h->maps++;
	S.c.mapped++;
	S.c.mapped_bytes += size;
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemUnmap(gp_cu_ptr ptr, size_t size)
{
	struct cdd_mapping **pp, *m;
	int partial;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MEM_UNMAP);
	if (!cdd_aligned(ptr, size) || cdd_covered(ptr, size, &partial) != size ||
	    partial) {
		cdd_violation("cuMemUnmap(%#llx, %zu): not whole mappings", ptr, size);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	for (pp = &S.maps; (m = *pp); ) {
		if (m->p < ptr || m->p >= ptr + size) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		S.c.mapped--;
		S.c.mapped_bytes -= m->n;
		if (!--m->h->maps && m->h->released)
			cdd_mh_drop(m->h);
		free(m);
	}
	/* Back to reserved address space: the bytes are gone. */
	mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
	     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static gp_cu_result cdd_cuMemSetAccess(gp_cu_ptr ptr, size_t size,
				       const struct gp_cu_access *desc,
				       size_t count)
{
	int partial, prot;

	pthread_mutex_lock(&cdd_lock);
	CDD_COUNT(CDD_MEM_SET_ACCESS);
	if (!cdd_aligned(ptr, size) || !desc || count != 1 ||
	    desc->location.type != GP_CU_MEM_LOCATION_TYPE_DEVICE ||
	    desc->location.id < 0 || desc->location.id >= S.devices ||
	    cdd_covered(ptr, size, &partial) != size) {
		cdd_violation("cuMemSetAccess(%#llx, %zu): range not wholly mapped, or bad descriptor",
			      ptr, size);
		pthread_mutex_unlock(&cdd_lock);
		return CDD_CU_INVALID_VALUE;
	}
	prot = desc->flags == GP_CU_MEM_ACCESS_FLAGS_PROT_READWRITE ?
	       PROT_READ | PROT_WRITE : desc->flags == 1 ? PROT_READ : PROT_NONE;
	mprotect((void *)(uintptr_t)ptr, size, prot);
	pthread_mutex_unlock(&cdd_lock);
	return CDD_CU_OK;
}

static const struct { const char *name; void *fn; } cdd_driver[] = {
#define CDD_DRV(f) { #f, (void *)cdd_##f }
	CDD_DRV(cuDeviceGet), CDD_DRV(cuDeviceGetAttribute),
	CDD_DRV(cuMemGetAllocationGranularity), CDD_DRV(cuMemAddressReserve),
	CDD_DRV(cuMemAddressFree), CDD_DRV(cuMemCreate), CDD_DRV(cuMemRelease),
	CDD_DRV(cuMemMap), CDD_DRV(cuMemUnmap), CDD_DRV(cuMemSetAccess),
#undef CDD_DRV
};

/* cudaDriverEntryPointSuccess / SymbolNotFound / VersionNotSufficent: the
 * double's own entry points, or else the driver's (host_alloc.c).
 */
static cudaError_t cdd_entry(const char *sym, void **fp, int version,
			     unsigned long long flags, cdd_qres_t *status)
{
	unsigned int i;
	int st;

	*fp = NULL;
	for (i = 0; i < sizeof(cdd_driver) / sizeof(cdd_driver[0]); i++)
		if (!strcmp(sym, cdd_driver[i].name)) {
			*fp = cdd_driver[i].fn;
			if (status)
				*status = (cdd_qres_t)0;
			return cudaSuccess;
		}
	cdd_driver_entry(sym, fp, version, flags, &st);
	if (status)
		*status = (cdd_qres_t)st;
	return cudaSuccess;
}

CDD_API cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fp,
						     unsigned int version,
						     unsigned long long flags,
						     cdd_qres_t *status)
{
	cdd_hook();
	if (S.rt_version < 12050) {
		cdd_violation("cudaGetDriverEntryPointByVersion on a runtime %d", S.rt_version);
		return cdd_ret(cudaErrorInvalidValue);
	}
	if (version < 12000 || !sym || !fp)
		return cdd_ret(cudaErrorInvalidValue);
	return cdd_entry(sym, fp, (int)version, flags, status);
}

CDD_API cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fp,
					    unsigned long long flags,
					    cdd_qres_t *status)
{
	cdd_hook();
	if (!sym || !fp)
		return cdd_ret(cudaErrorInvalidValue);
	return cdd_entry(sym, fp, S.rt_version, flags, status);
}
