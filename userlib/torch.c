// SPDX-License-Identifier: MIT
/*
 * torch.c - the two functions torch.cuda.memory.CUDAPluggableAllocator
 * loads from a shared library:
 *
 *	void *alloc(ssize_t size, int device, cudaStream_t stream);
 *	void free(void *ptr, ssize_t size, int device, cudaStream_t stream);
 *
 * They use a process-wide default context, opened from the environment on
 * first use and never closed (PyTorch may free blocks during exit, after
 * any destructor of ours would have run).  PyTorch can only be told NULL on
 * failure, so the reason goes to stderr, once.
 */
#include <pthread.h>
#include <stdio.h>

#include "internal.h"
#include "dev/devpools.h"

static pthread_once_t gp_torch_once = PTHREAD_ONCE_INIT;
static struct gp_ctx *gp_torch_ctx;
static int gp_torch_warned;

static void gp_torch_open(void)
{
	if (gp_open(NULL, &gp_torch_ctx))
		fprintf(stderr, "gpupool: cannot open the default context: %s\n",
			gp_last_error(NULL));
}

static struct gp_ctx *gp_torch_get(void)
{
	pthread_once(&gp_torch_once, gp_torch_open);
	return gp_torch_ctx;
}

GP_API void *gp_torch_alloc(ssize_t size, int device, gp_stream_t stream)
{
	struct gp_ctx *ctx = gp_torch_get();
	void *p = NULL;

	if (!ctx || size <= 0)
		return NULL;
	if (gp_dev_alloc(ctx, device, (size_t)size, stream, &p)) {
		if (!__atomic_exchange_n(&gp_torch_warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "gpupool: %s\n", gp_last_error(ctx));
		return NULL;
	}
	return p;
}

GP_API void gp_torch_free(void *ptr, ssize_t size, int device, gp_stream_t stream)
{
	struct gp_ctx *ctx = gp_torch_get();

	(void)size;
	if (ctx && ptr && gp_dev_free_on(ctx, device, ptr, stream))
		fprintf(stderr, "gpupool: %s\n", gp_last_error(ctx));
}
