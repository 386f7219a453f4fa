/* SPDX-License-Identifier: MIT */
/*
 * cudart_double.h - the test double of the CUDA runtime: the entry points
 * libgpupool calls, backed by host memory, recording every call, with
 * failure injection and events that stay incomplete until the test says so.
 *
 * Tests reach these functions with dlsym() on the same library that
 * libgpupool loaded through GPUPOOL_CUDART (dlopen of the same path returns
 * the same object); see tests/lib/helpers.h.
 */
#ifndef CUDART_DOUBLE_H
#define CUDART_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

enum cdd_fn {
	CDD_GET_DEVICE_COUNT, CDD_SET_DEVICE, CDD_GET_DEVICE, CDD_HOST_REGISTER,
	CDD_HOST_UNREGISTER, CDD_MALLOC, CDD_FREE, CDD_EVENT_CREATE,
	CDD_EVENT_RECORD, CDD_EVENT_QUERY, CDD_EVENT_SYNC, CDD_EVENT_DESTROY,
	CDD_STREAM_CREATE, CDD_STREAM_DESTROY, CDD_STREAM_SYNC, CDD_MEM_GET_INFO,
	CDD_PCI_BUS_ID, CDD_MEMCPY,
	/* The driver's virtual memory management (through the entry points). */
	CDD_MEM_CREATE, CDD_MEM_RELEASE, CDD_MEM_MAP, CDD_MEM_UNMAP,
	CDD_MEM_SET_ACCESS, CDD_ADDRESS_RESERVE, CDD_ADDRESS_FREE,
	/* Pinned host allocations (through the driver, host_alloc.c) and
	 * stream capture.
	 */
	CDD_HOST_ALLOC, CDD_FREE_HOST, CDD_HOST_GET_FLAGS, CDD_HOST_GET_DEVPTR,
	CDD_CAPTURE_BEGIN, CDD_CAPTURE_END, CDD_CAPTURE_MODE,
	CDD_NR_FNS
};

struct cdd_counts {
	uint64_t calls[CDD_NR_FNS];	/* every call, failed or not */
	uint64_t registered;		/* host ranges registered now */
	uint64_t registered_bytes;
	uint64_t dev_live;		/* cudaMalloc blocks live now */
	uint64_t dev_live_bytes;
	uint64_t events_live;		/* created, not destroyed */
	uint64_t events_pending;	/* recorded, not complete */
	uint64_t streams_live;
	uint64_t violations;		/* misuse seen (see cdd_last_violation) */
	uint64_t malloc_refused;	/* cudaMalloc failures injected */
	/* Virtual memory management. */
	uint64_t handles;		/* cuMemCreate'd, not yet gone (released
					 * and unmapped) */
	uint64_t phys_bytes;		/* their bytes */
	uint64_t mapped;		/* mappings now */
	uint64_t mapped_bytes;
	uint64_t reservations;		/* cuMemAddressReserve'd ranges now */
	uint64_t reserved_bytes;
	uint64_t create_refused;	/* cuMemCreate out-of-memory answers */
	/* Stream capture. */
	uint64_t capturing;		/* captures begun, not ended */
	uint64_t calls_in_capture;	/* calls made while one was */
	uint64_t capture_refusals;	/* calls refused as unsafe in a capture
					 * (each invalidates it) */
};

/* The device address the double reports for registered host memory (and
 * the driver double for its allocations): the host address plus this, so
 * that a test can tell an answer from CUDA from one its caller made up.
 */
#define CDD_DEVPTR_DELTA	0x100000000000ull

/* Back to the defaults: 1 device, 1 GiB, nothing injected.  Live
 * registrations, blocks and events are forgotten (not freed).
 */
void cdd_reset(void);
void cdd_set_device_count(int n);		/* 0: cudaErrorNoDevice */
void cdd_set_mem_total(size_t bytes);		/* per device; cudaMalloc beyond fails */
void cdd_fail_malloc_above(size_t bytes);	/* refuse larger requests; 0 = off */
void cdd_fail_register(int n);			/* next n registrations fail; -1 all */
/* The next n cudaMalloc calls fail with err (a cudaError_t other than out of
 * memory, say cudaErrorIllegalAddress), which also becomes the last error.
 */
void cdd_fail_malloc_error(int n, int err);
void cdd_hold_events(int on);			/* recorded events stay pending */
void cdd_complete_events(void);			/* complete every pending event */
void cdd_set_pci_bus_id(const char *id);
/* Virtual memory management: whether the device reports it (default 1)
 * and its granularity (default 2 MiB; 0 keeps it).
 */
void cdd_set_vmm(int supported, size_t granularity);
/* cuMemCreate succeeds n more times, then answers out of memory until
 * called again; -1: never refused (the default).
 */
void cdd_fail_create_after(long n);
/* What cudaRuntimeGetVersion reports (default 13000; below 12050 the
 * library must use cudaGetDriverEntryPoint).
 */
void cdd_set_runtime_version(int v);
void cdd_get_counts(struct cdd_counts *c);
/* Is a registration starting at p live?  Its size (0 if none). */
size_t cdd_registered_size(const void *p);
/* Check every live registration is still mapped (a violation otherwise);
 * returns the number of violations so far.
 */
uint64_t cdd_check(void);
const char *cdd_last_violation(void);
/* fn is called at the entry of the runtime calls that libgpupool and the
 * interposer make (device count and versions, registration, pinned
 * memory and its queries, stream capture, the driver's entry points, the
 * last error); NULL: none.  The calling thread's last error set to e,
 * the one it had returned (the runtime's error state, as a test sees and
 * restores it).
 */
void cdd_set_hook(void (*fn)(void));
int cdd_swap_last_error(int e);
/*
 * Pinned host memory (cudaHostAlloc, cudaMallocHost, cudaFreeHost,
 * cudaHostGetFlags, cudaHostGetDevicePointer, cudaHostRegister and
 * cudaHostUnregister) goes to the driver, as the real runtime's does: the
 * driver double is opened, and its entry points taken from
 * cuGetProcAddress_v2 at the runtime's version (tests/cudadrv_double);
 * the answers are the driver's.  Without a driver they answer
 * cudaErrorInsufficientDriver.
 *
 * Stream capture: cudaStreamBeginCapture / EndCapture / IsCapturing and
 * cudaThreadExchangeStreamCaptureMode go to the driver too, which has
 * CUDA's rule for "potentially unsafe" calls (tests/cudadrv_double; the
 * counts' capture figures are its).  driver_twins.h lists every driver
 * entry point these calls take, and says how the list was made.
 */

#endif /* CUDART_DOUBLE_H */
