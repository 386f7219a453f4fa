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

#include <stdbool.h>
#include <stddef.h>

#if GP_HAVE_CUDA_HEADERS
#include <cuda_runtime_api.h>
#else
typedef int cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#define cudaSuccess			0
#define cudaErrorMemoryAllocation	2
#define cudaErrorInitializationError	3
#define cudaErrorNoDevice		100
#define cudaErrorNotReady		600
#define cudaHostRegisterPortable	0x01
#define cudaHostRegisterMapped		0x02
#define cudaEventDisableTiming		0x02
#define cudaStreamCaptureModeRelaxed	2
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
	X(cudaError_t, cudaHostGetDevicePointer, (void **, void *, unsigned int))	\
	X(cudaError_t, cudaMalloc, (void **, size_t))				\
	X(cudaError_t, cudaFree, (void *))					\
	X(cudaError_t, cudaEventCreateWithFlags, (cudaEvent_t *, unsigned int))	\
	X(cudaError_t, cudaEventRecord, (cudaEvent_t, cudaStream_t))		\
	X(cudaError_t, cudaEventQuery, (cudaEvent_t))				\
	X(cudaError_t, cudaEventSynchronize, (cudaEvent_t))			\
	X(cudaError_t, cudaEventDestroy, (cudaEvent_t))			\
	X(cudaError_t, cudaStreamSynchronize, (cudaStream_t))		\
	X(cudaError_t, cudaDeviceSynchronize, (void))

/*
 * The driver's virtual memory management, for the device pool's virtual
 * mode.  libcuda is never linked or opened: the entry points come from the
 * runtime (cudaGetDriverEntryPointByVersion, or cudaGetDriverEntryPoint
 * before 12.5).  The types are the driver's ABI, declared here so that the
 * library builds without the toolkit (checked against cuda.h with it).
 */
typedef int gp_cu_result;			/* CUresult */
typedef unsigned long long gp_cu_ptr;		/* CUdeviceptr */
typedef unsigned long long gp_cu_mem;		/* CUmemGenericAllocationHandle */
struct gp_cu_location { int type; int id; };	/* CUmemLocation */
struct gp_cu_prop {				/* CUmemAllocationProp */
	int type;
	int requested_handle_types;
	struct gp_cu_location location;
	void *win32_metadata;
	unsigned char compression_type;
	unsigned char gpu_direct_rdma;
	unsigned short usage;
	unsigned char reserved[4];
};
struct gp_cu_access {				/* CUmemAccessDesc */
	struct gp_cu_location location;
	int flags;
};
#define GP_CU_SUCCESS			0
#define GP_CU_ERROR_OUT_OF_MEMORY	2
#define GP_CU_VMM_SUPPORTED_ATTR	102	/* ..._VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
#define GP_CU_MEM_ALLOCATION_TYPE_PINNED	1
#define GP_CU_MEM_LOCATION_TYPE_DEVICE		1
#define GP_CU_MEM_ACCESS_FLAGS_PROT_READWRITE	3
#define GP_CU_MEM_ALLOC_GRANULARITY_MINIMUM	0

/* X(name, parameters): the driver entry points of the virtual mode. */
#define GP_CU_FUNCS(X)								\
	X(cuDeviceGet, (int *, int))						\
	X(cuDeviceGetAttribute, (int *, int, int))				\
	X(cuMemGetAllocationGranularity, (size_t *, const struct gp_cu_prop *,	\
					  int))					\
	X(cuMemAddressReserve, (gp_cu_ptr *, size_t, size_t, gp_cu_ptr,	\
				unsigned long long))				\
	X(cuMemAddressFree, (gp_cu_ptr, size_t))				\
	X(cuMemCreate, (gp_cu_mem *, size_t, const struct gp_cu_prop *,		\
			unsigned long long))					\
	X(cuMemRelease, (gp_cu_mem))						\
	X(cuMemMap, (gp_cu_ptr, size_t, size_t, gp_cu_mem, unsigned long long))	\
	X(cuMemUnmap, (gp_cu_ptr, size_t))					\
	X(cuMemSetAccess, (gp_cu_ptr, size_t, const struct gp_cu_access *,	\
			   size_t))

struct gp_cu {
	int usable;		/* every entry point resolved */
	char why[96];		/* why not, or through which call */
#define GP_CU_MEMBER(name, args) gp_cu_result (*name) args;
	GP_CU_FUNCS(GP_CU_MEMBER)
#undef GP_CU_MEMBER
};

/* cudaThreadExchangeStreamCaptureMode (CUDA 10.1 and later; optional). */
typedef cudaError_t (*gp_capture_mode_fn)(void *mode);

struct gp_cuda {
	void *dl;		/* dlopen handle, NULL when off */
	int usable;		/* loaded and at least one device */
	int device_count;
	int runtime_version;
	int driver_version;
	char path[128];
	char why[192];		/* for gp_info: why CUDA is what it is */
#define GP_CUDA_MEMBER(ret, name, args) ret (*name) args;
	GP_CUDA_FUNCS(GP_CUDA_MEMBER)
#undef GP_CUDA_MEMBER
	gp_capture_mode_fn exchange_capture_mode;	/* NULL if absent */
	struct gp_cu cu;	/* the driver's, for the virtual mode */
};

struct gp_ctx;

/* Load the runtime named by path (NULL: $GPUPOOL_CUDART, else
 * libcudart.so.13) into ctx->cuda.  Never fails: when the runtime is missing
 * or sees no device, cuda.usable stays 0 and gp_cuda_why() says why.
 */
void gp_cuda_load(struct gp_ctx *ctx, const char *path);
/* Leave CUDA off, for the reason given (GP_OPEN_NO_CUDA). */
void gp_cuda_off(struct gp_ctx *ctx, const char *reason);
void gp_cuda_unload(struct gp_ctx *ctx);
/* What the runtime is, or why there is none ("" before any load). */
const char *gp_cuda_why(const struct gp_ctx *ctx);
/* Resolve ctx->cuda.cu (after gp_cuda_load; cu.usable says if it worked). */
void gp_cuda_load_driver(struct gp_ctx *ctx);
/* The NUMA node of a GPU's PCI device, -1 when unknown. */
int gp_cuda_numa_node(struct gp_ctx *ctx, int device);
/* The runtime's words for an error. */
const char *gp_cuda_errstr(struct gp_ctx *ctx, cudaError_t e);

/* Make `device` current, remembering the previous one; restore it. */
int gp_cuda_enter(struct gp_ctx *ctx, int device, int *saved);
void gp_cuda_leave(struct gp_ctx *ctx, int saved);

/*
 * What the other rooms call: none of them reads ctx->cuda.  A call that
 * fails clears the runtime's last error (ours, not the application's) and
 * returns the error.
 */
struct gp_info;
bool gp_cuda_usable(const struct gp_ctx *ctx);
/* CUDA devices; 0 when CUDA is not usable. */
int gp_cuda_device_count(const struct gp_ctx *ctx);
/* gp_info's CUDA part: device count, versions, the runtime's path. */
void gp_cuda_info(const struct gp_ctx *ctx, struct gp_info *info);

/*
 * host/: a segment registered with the runtime, and unregistered.  Both
 * run with this thread's stream-capture mode relaxed for the call: a
 * registration is a "potentially unsafe" call, which CUDA refuses while
 * any thread captures a graph in the global mode
 * (cudaErrorStreamCaptureUnsupported), and the refusal invalidates that
 * capture.  A pool that grows while its caller captures (pin_memory() in
 * a captured region) must neither fail nor break the capture.
 */
cudaError_t gp_cuda_host_register(struct gp_ctx *ctx, void *addr, size_t size,
				  unsigned int flags);
cudaError_t gp_cuda_host_unregister(struct gp_ctx *ctx, void *addr);
/* The device address of registered host memory (cudaHostGetDevicePointer;
 * the interposer's answer for pool memory).
 */
cudaError_t gp_cuda_host_devptr(struct gp_ctx *ctx, void *addr, void **dev);

/* dev/: device memory, events and streams, on the current device. */
cudaError_t gp_cuda_mem_total(struct gp_ctx *ctx, size_t *total);
cudaError_t gp_cuda_malloc(struct gp_ctx *ctx, void **ptr, size_t size);
cudaError_t gp_cuda_free(struct gp_ctx *ctx, void *ptr);
/* Events without timing. */
cudaError_t gp_cuda_event_create(struct gp_ctx *ctx, cudaEvent_t *ev);
void gp_cuda_event_destroy(struct gp_ctx *ctx, cudaEvent_t ev);
cudaError_t gp_cuda_event_record(struct gp_ctx *ctx, cudaEvent_t ev,
				 cudaStream_t stream);
/* Has ev completed (wait: after waiting for it)?  cudaSuccess,
 * cudaErrorNotReady, or an error.
 */
cudaError_t gp_cuda_event_done(struct gp_ctx *ctx, cudaEvent_t ev, bool wait);
cudaError_t gp_cuda_stream_sync(struct gp_ctx *ctx, cudaStream_t stream);
cudaError_t gp_cuda_device_sync(struct gp_ctx *ctx);

/* dev/: the driver's virtual memory management (ctx->cuda.cu). */
/* Why the virtual mode cannot be had at all; NULL when it can. */
const char *gp_cuda_vmm_why_not(const struct gp_ctx *ctx);
/* The granularity of pinned memory on device (0: the driver did not say);
 * -ENODEV when the device has no virtual memory management.
 */
int gp_cuda_vmm_granularity(struct gp_ctx *ctx, int device, size_t *gran);
gp_cu_result gp_cuda_va_reserve(struct gp_ctx *ctx, gp_cu_ptr *base,
				size_t size, size_t align);
gp_cu_result gp_cuda_va_free(struct gp_ctx *ctx, gp_cu_ptr base, size_t size);
/* A new allocation of size bytes on device, mapped at va: *h; on failure
 * nothing is left and *what names the driver call that failed.
 */
gp_cu_result gp_cuda_granule_map(struct gp_ctx *ctx, int device, gp_cu_ptr va,
				 size_t size, gp_cu_mem *h, const char **what);
/* Unmap va and release h. */
gp_cu_result gp_cuda_granule_unmap(struct gp_ctx *ctx, gp_cu_ptr va,
				   size_t size, gp_cu_mem h);
/* Read and write access for device to [va, va + size). */
gp_cu_result gp_cuda_va_set_access(struct gp_ctx *ctx, int device,
				   gp_cu_ptr va, size_t size);

#endif /* GPUPOOL_USERLIB_CUDA_H */
