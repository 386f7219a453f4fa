// SPDX-License-Identifier: MIT
/*
 * deep.c - libdeep.so, a library that allocates pinned memory through the
 * CUDA runtime it links (the runtime double, as libcudart.so.13), for the
 * tests that open it with RTLD_DEEPBIND: its own dependencies then come
 * before the interposer in its lookups.
 */
#include <stddef.h>

int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaFreeHost(void *p);

__attribute__((visibility("default"))) int deep_alloc(void **p, size_t n)
{
	return cudaHostAlloc(p, n, 0);
}

__attribute__((visibility("default"))) int deep_free(void *p)
{
	return cudaFreeHost(p);
}
