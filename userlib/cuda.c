// SPDX-License-Identifier: MIT
/*
 * cuda.c - the CUDA runtime binding: dlopen() at gp_open() time, a table of
 * the entry points libgpupool calls, device count and versions, and the
 * NUMA node of a GPU.
 *
 * The runtime is never linked: a machine without CUDA can load libgpupool,
 * and GPUPOOL_CUDART points it at another runtime (the tests use a double).
 * The handle is not dlclose()d at gp_close(): the real runtime registers
 * exit handlers and does not support being unloaded.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "env.h"

#define GP_CUDART_DEFAULT	"libcudart.so.13"

#if GP_HAVE_CUDA_HEADERS
/* Every table entry has the type of the real prototype. */
#define GP_CUDA_CHECK(ret, name, args)					\
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name),	\
						    ret (*) args),	\
		       #name " does not match cuda_runtime_api.h");
GP_CUDA_FUNCS(GP_CUDA_CHECK)
#undef GP_CUDA_CHECK

/* The driver's types, declared in cuda.h without the toolkit: same ABI.
 * The toolkit's cuda.h by a path that skips ours (userlib/ is first on the
 * include path and has a cuda.h): ../include/ from the toolkit's directory.
 */
#include <../include/cuda.h>
#include <stddef.h>
_Static_assert(sizeof(struct gp_cu_prop) == sizeof(CUmemAllocationProp) &&
	       offsetof(struct gp_cu_prop, location) ==
	       offsetof(CUmemAllocationProp, location) &&
	       offsetof(struct gp_cu_prop, usage) ==
	       offsetof(CUmemAllocationProp, allocFlags.usage),
	       "struct gp_cu_prop does not match CUmemAllocationProp");
_Static_assert(sizeof(struct gp_cu_access) == sizeof(CUmemAccessDesc) &&
	       offsetof(struct gp_cu_access, flags) ==
	       offsetof(CUmemAccessDesc, flags),
	       "struct gp_cu_access does not match CUmemAccessDesc");
_Static_assert(sizeof(gp_cu_ptr) == sizeof(CUdeviceptr) &&
	       sizeof(gp_cu_mem) == sizeof(CUmemGenericAllocationHandle) &&
	       GP_CU_VMM_SUPPORTED_ATTR ==
	       CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED &&
	       GP_CU_ERROR_OUT_OF_MEMORY == CUDA_ERROR_OUT_OF_MEMORY &&
	       GP_CU_MEM_ACCESS_FLAGS_PROT_READWRITE ==
	       CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	       "driver constants differ from cuda.h");
#endif

/* The runtime's two ways to the driver's entry points (the last argument,
 * a query result, is written when not NULL; runtimes before 12.0 take
 * three arguments and ignore a fourth).
 */
typedef int (*gp_entry_by_version_fn)(const char *, void **, unsigned int,
				      unsigned long long, int *);
typedef int (*gp_entry_fn)(const char *, void **, unsigned long long, int *);

/* The driver version whose signatures GP_CU_FUNCS has (all unchanged
 * since 10.2; asked as 12.0, the oldest the by-version call accepts).
 */
#define GP_CU_API_VERSION	12000

void gp_cuda_load_driver(struct gp_ctx *ctx)
{
	struct gp_cuda *c = &ctx->cuda;
	struct gp_cu *cu = &c->cu;
	gp_entry_by_version_fn by_version = NULL;
	gp_entry_fn plain = NULL;
	const char *how;

	memset(cu, 0, sizeof(*cu));
	if (!c->dl)
		return;
	if (c->runtime_version >= 12050)
		*(void **)&by_version = dlsym(c->dl,
					      "cudaGetDriverEntryPointByVersion");
	if (!by_version)
		*(void **)&plain = dlsym(c->dl, "cudaGetDriverEntryPoint");
	how = by_version ? "cudaGetDriverEntryPointByVersion" :
	      "cudaGetDriverEntryPoint";
	if (!by_version && !plain) {
		snprintf(cu->why, sizeof(cu->why), "the runtime has no %s", how);
		return;
	}
#define GP_CU_RESOLVE(name, args)					\
	do {								\
		void *fp = NULL;					\
		int st = 0, e = by_version ?				\
			by_version(#name, &fp, GP_CU_API_VERSION, 0, &st) :	\
			plain(#name, &fp, 0, &st);			\
		if (e || !fp) {						\
			c->cudaGetLastError();				\
			snprintf(cu->why, sizeof(cu->why),		\
				 "%s(%s) found nothing", how, #name);	\
			return;	/* cu->usable stays 0 */		\
		}							\
		*(void **)&cu->name = fp;				\
	} while (0);
	GP_CU_FUNCS(GP_CU_RESOLVE)
#undef GP_CU_RESOLVE
	snprintf(cu->why, sizeof(cu->why), "driver entry points from %s", how);
	cu->usable = 1;
}

/* No runtime after all: keep the path and the reason for gp_info, forget
 * the functions.
 */
static void gp_cuda_forget(struct gp_cuda *c)
{
	char keep[sizeof(c->path)], reason[sizeof(c->why)];

	memcpy(keep, c->path, sizeof(keep));
	memcpy(reason, c->why, sizeof(reason));
	memset(c, 0, sizeof(*c));
	memcpy(c->path, keep, sizeof(keep));
	memcpy(c->why, reason, sizeof(reason));
}

void gp_cuda_load(struct gp_ctx *ctx, const char *path)
{
	struct gp_cuda *c = &ctx->cuda;
	char *why = c->why;
	size_t len = sizeof(c->why);
	cudaError_t e;
	void *dl;

	memset(c, 0, sizeof(*c));
	if (!path || !*path)
		path = gp_env("GPUPOOL_CUDART");
	if (!path)
		path = GP_CUDART_DEFAULT;
	snprintf(c->path, sizeof(c->path), "%s", path);

	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(why, len, "host memory is not registered: CUDA runtime "
			 "not loaded (%s)", dlerror());
		return;
	}
#define GP_CUDA_RESOLVE(ret, name, args)				\
	do {								\
		*(void **)&c->name = dlsym(dl, #name);			\
		if (!c->name) {						\
			snprintf(why, len, "host memory is not registered: "\
				 "%s lacks %s", path, #name);		\
			goto out_off;					\
		}							\
	} while (0);
	GP_CUDA_FUNCS(GP_CUDA_RESOLVE)
#undef GP_CUDA_RESOLVE
	*(void **)&c->exchange_capture_mode =
		dlsym(dl, "cudaThreadExchangeStreamCaptureMode");
	c->dl = dl;

	e = c->cudaGetDeviceCount(&c->device_count);
	if (e != cudaSuccess || c->device_count <= 0) {
		snprintf(why, len, "host memory is not registered: no CUDA device "
			 "(%s) in %s",
			 e != cudaSuccess ? c->cudaGetErrorString(e) : "count 0", path);
		c->cudaGetLastError();	/* clear the sticky error */
		c->device_count = 0;
		c->dl = NULL;
		goto out_off;
	}
	c->cudaRuntimeGetVersion(&c->runtime_version);
	c->cudaDriverGetVersion(&c->driver_version);
	c->usable = 1;
	gp_cuda_load_driver(ctx);
	snprintf(why, len, "%s: %d device(s), runtime %d, driver %d", path,
		 c->device_count, c->runtime_version, c->driver_version);
	return;

out_off:
	gp_cuda_forget(c);
}

void gp_cuda_off(struct gp_ctx *ctx, const char *reason)
{
	memset(&ctx->cuda, 0, sizeof(ctx->cuda));
	snprintf(ctx->cuda.why, sizeof(ctx->cuda.why),
		 "host memory is not registered: %s", reason);
}

void gp_cuda_unload(struct gp_ctx *ctx)
{
	/* See the top of this file: the handle is deliberately kept. */
	ctx->cuda.usable = 0;
}

const char *gp_cuda_why(const struct gp_ctx *ctx)
{
	return ctx->cuda.why;
}

const char *gp_cuda_errstr(struct gp_ctx *ctx, cudaError_t e)
{
	const char *s = ctx->cuda.cudaGetErrorString ?
			ctx->cuda.cudaGetErrorString(e) : NULL;

	return s ? s : "unknown CUDA error";
}

/* This thread's capture mode relaxed around one call (cuda.h says why). */
static int gp_capture_relax(struct gp_ctx *ctx)
{
	int mode = cudaStreamCaptureModeRelaxed;

	if (!ctx->cuda.exchange_capture_mode ||
	    ctx->cuda.exchange_capture_mode(&mode) != cudaSuccess) {
		if (ctx->cuda.exchange_capture_mode)
			ctx->cuda.cudaGetLastError();
		return -1;
	}
	return mode;
}

static void gp_capture_restore(struct gp_ctx *ctx, int mode)
{
	if (mode >= 0 && ctx->cuda.exchange_capture_mode(&mode) != cudaSuccess)
		ctx->cuda.cudaGetLastError();
}

int gp_cuda_numa_node(struct gp_ctx *ctx, int device)
{
	char bus[64], path[160], buf[16];
	cudaError_t e;
	ssize_t n;
	int fd, node;
	char *p;

	if (!ctx->cuda.usable)
		return -1;
	e = ctx->cuda.cudaDeviceGetPCIBusId(bus, sizeof(bus), device);
	if (e != cudaSuccess) {
		ctx->cuda.cudaGetLastError();	/* ours, not the application's */
		gp_debug(ctx, "cudaDeviceGetPCIBusId(%d): %s", device,
			 gp_cuda_errstr(ctx, e));
		return -1;
	}
	bus[sizeof(bus) - 1] = 0;
	for (p = bus; *p; p++)	/* the runtime says "0000:3B:00.0" */
		*p = (char)tolower((unsigned char)*p);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bus);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		gp_debug(ctx, "GPU %d: cannot read %s", device, path);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	node = atoi(buf);
	gp_debug(ctx, "GPU %d is %s on NUMA node %d", device, bus, node);
	return node < 0 ? -1 : node;
}

int gp_cuda_enter(struct gp_ctx *ctx, int device, int *saved)
{
	cudaError_t e;

	*saved = -1;
	if (ctx->cuda.cudaGetDevice(saved) != cudaSuccess) {
		ctx->cuda.cudaGetLastError();
		*saved = -1;
	}
	if (*saved == device)
		return 0;
	e = ctx->cuda.cudaSetDevice(device);
	if (e != cudaSuccess) {
		ctx->cuda.cudaGetLastError();	/* ours, not the application's */
		return gp_err(ctx, -ENODEV, "cudaSetDevice(%d): %s", device,
			      gp_cuda_errstr(ctx, e));
	}
	return 0;
}

void gp_cuda_leave(struct gp_ctx *ctx, int saved)
{
	int cur;

	if (saved < 0)
		return;
	if (ctx->cuda.cudaGetDevice(&cur) == cudaSuccess && cur == saved)
		return;
	if (ctx->cuda.cudaSetDevice(saved) != cudaSuccess)
		ctx->cuda.cudaGetLastError();
}

/* What the other rooms call ------------------------------------------------- */

/*
 * The other rooms reach the runtime through these, never through the table:
 * each call that fails clears the runtime's last error (the error is ours,
 * not the application's, whose next cudaGetLastError() would report it)
 * and returns it.
 */
static cudaError_t gp_cuda_ours(struct gp_ctx *ctx, cudaError_t e)
{
	if (e != cudaSuccess)
		ctx->cuda.cudaGetLastError();
	return e;
}

bool gp_cuda_usable(const struct gp_ctx *ctx)
{
	return ctx->cuda.usable;
}

int gp_cuda_device_count(const struct gp_ctx *ctx)
{
	return ctx->cuda.usable ? ctx->cuda.device_count : 0;
}

void gp_cuda_info(const struct gp_ctx *ctx, struct gp_info *info)
{
	info->device_count = ctx->cuda.device_count;
	info->cuda_runtime_version = ctx->cuda.runtime_version;
	info->cuda_driver_version = ctx->cuda.driver_version;
	if (ctx->cuda.usable)
		snprintf(info->cudart, sizeof(info->cudart), "%s", ctx->cuda.path);
}

cudaError_t gp_cuda_host_register(struct gp_ctx *ctx, void *addr, size_t size,
				  unsigned int flags)
{
	int mode = gp_capture_relax(ctx);
	cudaError_t e = ctx->cuda.cudaHostRegister(addr, size, flags);

	gp_capture_restore(ctx, mode);
	return gp_cuda_ours(ctx, e);
}

cudaError_t gp_cuda_host_unregister(struct gp_ctx *ctx, void *addr)
{
	int mode = gp_capture_relax(ctx);
	cudaError_t e = ctx->cuda.cudaHostUnregister(addr);

	gp_capture_restore(ctx, mode);
	return gp_cuda_ours(ctx, e);
}

cudaError_t gp_cuda_host_devptr(struct gp_ctx *ctx, void *addr, void **dev)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaHostGetDevicePointer(dev, addr, 0));
}

cudaError_t gp_cuda_mem_total(struct gp_ctx *ctx, size_t *total)
{
	size_t free_b = 0;

	return gp_cuda_ours(ctx, ctx->cuda.cudaMemGetInfo(&free_b, total));
}

cudaError_t gp_cuda_malloc(struct gp_ctx *ctx, void **ptr, size_t size)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaMalloc(ptr, size));
}

cudaError_t gp_cuda_free(struct gp_ctx *ctx, void *ptr)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaFree(ptr));
}

cudaError_t gp_cuda_event_create(struct gp_ctx *ctx, cudaEvent_t *ev)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaEventCreateWithFlags(ev,
						cudaEventDisableTiming));
}

void gp_cuda_event_destroy(struct gp_ctx *ctx, cudaEvent_t ev)
{
	gp_cuda_ours(ctx, ctx->cuda.cudaEventDestroy(ev));
}

cudaError_t gp_cuda_event_record(struct gp_ctx *ctx, cudaEvent_t ev,
				 cudaStream_t stream)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaEventRecord(ev, stream));
}

cudaError_t gp_cuda_event_done(struct gp_ctx *ctx, cudaEvent_t ev, bool wait)
{
	return gp_cuda_ours(ctx, wait ? ctx->cuda.cudaEventSynchronize(ev) :
				 ctx->cuda.cudaEventQuery(ev));
}

cudaError_t gp_cuda_stream_sync(struct gp_ctx *ctx, cudaStream_t stream)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaStreamSynchronize(stream));
}

cudaError_t gp_cuda_device_sync(struct gp_ctx *ctx)
{
	return gp_cuda_ours(ctx, ctx->cuda.cudaDeviceSynchronize());
}

/* The driver's virtual memory management ------------------------------------ */

const char *gp_cuda_vmm_why_not(const struct gp_ctx *ctx)
{
	return ctx->cuda.cu.usable ? NULL : ctx->cuda.cu.why;
}

/* Pinned device memory of `device` (the driver's ordinal). */
static void gp_cuda_vmm_prop(struct gp_cu_prop *prop, int device)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = GP_CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = GP_CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = device;
}

int gp_cuda_vmm_granularity(struct gp_ctx *ctx, int device, size_t *gran)
{
	struct gp_cu *cu = &ctx->cuda.cu;
	struct gp_cu_prop prop;
	int dev = -1, vmm = 0;

	*gran = 0;
	if (cu->cuDeviceGet(&dev, device) != GP_CU_SUCCESS ||
	    cu->cuDeviceGetAttribute(&vmm, GP_CU_VMM_SUPPORTED_ATTR, dev) !=
	    GP_CU_SUCCESS || !vmm)
		return -ENODEV;
	gp_cuda_vmm_prop(&prop, dev);
	if (cu->cuMemGetAllocationGranularity(gran, &prop,
					      GP_CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
	    GP_CU_SUCCESS)
		*gran = 0;
	return 0;
}

gp_cu_result gp_cuda_va_reserve(struct gp_ctx *ctx, gp_cu_ptr *base,
				size_t size, size_t align)
{
	return ctx->cuda.cu.cuMemAddressReserve(base, size, align, 0, 0);
}

gp_cu_result gp_cuda_va_free(struct gp_ctx *ctx, gp_cu_ptr base, size_t size)
{
	return ctx->cuda.cu.cuMemAddressFree(base, size);
}

gp_cu_result gp_cuda_granule_map(struct gp_ctx *ctx, int device, gp_cu_ptr va,
				 size_t size, gp_cu_mem *h, const char **what)
{
	struct gp_cu *cu = &ctx->cuda.cu;
	struct gp_cu_prop prop;
	gp_cu_result e;

	gp_cuda_vmm_prop(&prop, device);
	*h = 0;
	*what = "cuMemCreate";
	e = cu->cuMemCreate(h, size, &prop, 0);
	if (e != GP_CU_SUCCESS)
		return e;
	*what = "cuMemMap";
	e = cu->cuMemMap(va, size, 0, *h, 0);
	if (e != GP_CU_SUCCESS) {
		cu->cuMemRelease(*h);
		*h = 0;
	}
	return e;
}

gp_cu_result gp_cuda_granule_unmap(struct gp_ctx *ctx, gp_cu_ptr va,
				   size_t size, gp_cu_mem h)
{
	struct gp_cu *cu = &ctx->cuda.cu;
	gp_cu_result e = cu->cuMemUnmap(va, size);

	return e == GP_CU_SUCCESS ? cu->cuMemRelease(h) : e;
}

gp_cu_result gp_cuda_va_set_access(struct gp_ctx *ctx, int device,
				   gp_cu_ptr va, size_t size)
{
	struct gp_cu_access acc;

	memset(&acc, 0, sizeof(acc));
	acc.location.type = GP_CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = device;
	acc.flags = GP_CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return ctx->cuda.cu.cuMemSetAccess(va, size, &acc, 1);
}
