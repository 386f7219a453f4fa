/* SPDX-License-Identifier: MIT */
/*
 * cuda.h - the CUDA runtime as libgpupool sees it: a table of the entry
 * points it calls, resolved with dlsym() from a runtime opened with dlopen()
 * (never linked, so that the library loads on machines without CUDA and the
 * tests can point it at a test double).
 *
 * With the toolkit present the types come from cuda_runtime_api.h and every
 * table entry is checked against the real prototype; without it, the few
 * types and constants used are defined here with the runtime's values.
 */
#ifndef GPUPOOL_USERLIB_CUDA_H
#define GPUPOOL_USERLIB_CUDA_H

#include <stddef.h>

#if GP_HAVE_CUDA_HEADERS
#include <cuda_runtime_api.h>
#else
typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#define cudaSuccess			0
#define cudaErrorMemoryAllocation	2
#define cudaErrorNoDevice		100
#define cudaErrorNotReady		600
#define cudaHostRegisterPortable	0x01
#define cudaHostRegisterMapped		0x02
#define cudaEventDisableTiming		0x02
#endif

/* X(return, name, parameters): every entry point the library calls. */
#define GP_CUDA_FUNCS(X)							\
	X(cudaError_t, cudaGetDeviceCount, (int *))				\
	X(cudaError_t, cudaGetDevice, (int *))					\
	X(cudaError_t, cudaSetDevice, (int))					\
	X(cudaError_t, cudaRuntimeGetVersion, (int *))				\
	X(cudaError_t, cudaDriverGetVersion, (int *))				\
	X(const char *, cudaGetErrorString, (cudaError_t))			\
	X(cudaError_t, cudaGetLastError, (void))				\
	X(cudaError_t, cudaDeviceGetPCIBusId, (char *, int, int))		\
	X(cudaError_t, cudaMemGetInfo, (size_t *, size_t *))			\
	X(cudaError_t, cudaHostRegister, (void *, size_t, unsigned int))	\
	X(cudaError_t, cudaHostUnregister, (void *))				\
	X(cudaError_t, cudaMalloc, (void **, size_t))				\
	X(cudaError_t, cudaFree, (void *))					\
	X(cudaError_t, cudaEventCreateWithFlags, (cudaEvent_t *, unsigned int))	\
	X(cudaError_t, cudaEventRecord, (cudaEvent_t, cudaStream_t))		\
	X(cudaError_t, cudaEventQuery, (cudaEvent_t))				\
	X(cudaError_t, cudaEventSynchronize, (cudaEvent_t))			\
	X(cudaError_t, cudaEventDestroy, (cudaEvent_t))			\
	X(cudaError_t, cudaStreamSynchronize, (cudaStream_t))

struct gp_cuda {
	void *dl;		/* dlopen handle, NULL when off */
	int usable;		/* loaded and at least one device */
	int device_count;
	int runtime_version;
	int driver_version;
	char path[128];
#define GP_CUDA_MEMBER(ret, name, args) ret (*name) args;
	GP_CUDA_FUNCS(GP_CUDA_MEMBER)
#undef GP_CUDA_MEMBER
};

struct gp_ctx;

/* Load the runtime named by path (NULL: $GPUPOOL_CUDART, else
 * libcudart.so.13) into ctx->cuda.  Never fails: when the runtime is missing
 * or sees no device, cuda.usable stays 0 and why (len bytes) says why.
 */
void gp_cuda_load(struct gp_ctx *ctx, const char *path, char *why, size_t len);
void gp_cuda_unload(struct gp_ctx *ctx);
/* The NUMA node of a GPU's PCI device, -1 when unknown. */
int gp_cuda_numa_node(struct gp_ctx *ctx, int device);
/* The runtime's words for an error. */
const char *gp_cuda_errstr(struct gp_ctx *ctx, cudaError_t e);

/* Make `device` current, remembering the previous one; restore it. */
int gp_cuda_enter(struct gp_ctx *ctx, int device, int *saved);
void gp_cuda_leave(struct gp_ctx *ctx, int saved);

#endif /* GPUPOOL_USERLIB_CUDA_H */
