/* SPDX-License-Identifier: MIT */
/*
 * cudart_double_internal.h - what the runtime double's two files share:
 * cudart_double.c (devices, registration, device memory, streams, events,
 * the driver's virtual memory) and host_alloc.c (pinned host allocations
 * through the driver, stream capture).
 */
#ifndef CUDART_DOUBLE_INTERNAL_H
#define CUDART_DOUBLE_INTERNAL_H

#include <stdint.h>

#include "cuda.h"		/* userlib/cuda.h: the runtime's types */
#include "cudart_double.h"

/* Exported; tests/interpose builds the double into a library of its own
 * with CDD_API hidden, as a runtime linked statically is.
 */
#ifndef CDD_API
#define CDD_API __attribute__((visibility("default")))
#endif

/* Record e as the last error when it is one; returns e. */
cudaError_t cdd_ret(cudaError_t e);
/* Non-zero in a child of fork() of the process that owns CUDA. */
int cdd_forked(void);
int cdd_runtime_version(void);
/* Count a call (and whether it came during a capture). */
void cdd_count(enum cdd_fn fn);

/* host_alloc.c: the test's hook (cdd_set_hook), at a call's entry. */
void cdd_hook(void);
/* host_alloc.c: a driver entry point from the driver's cuGetProcAddress
 * (what the runtime hands out for a name it has no double of); always
 * cudaSuccess, *status saying whether it was found, as the runtime does.
 */
cudaError_t cdd_driver_entry(const char *sym, void **fp, int version,
			     unsigned long long flags, int *status);
/* host_alloc.c: registration as the runtime does it, in the driver
 * (cuMemHostRegister, cuMemHostUnregister: the runtime's error for the
 * driver's answer); and the driver told to forget every registration
 * (cdd_reset), when it has been opened.
 */
cudaError_t cdd_driver_register(void *p, size_t n, unsigned int flags);
cudaError_t cdd_driver_unregister(void *p);
void cdd_driver_forget(void);
/* host_alloc.c: is a stream capture under way (in the driver)?  Its
 * figures into c.
 */
int cdd_capture_active(void);
void cdd_capture_counts(struct cdd_counts *c);

#endif /* CUDART_DOUBLE_INTERNAL_H */
