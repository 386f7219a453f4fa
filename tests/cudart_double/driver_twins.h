/* SPDX-License-Identifier: MIT */
/*
 * driver_twins.h - the driver's entry points the runtime double takes
 * from cuGetProcAddress_v2, once, at the runtime's version (host_alloc.c),
 * and the runtime calls that reach each: every runtime call of the double
 * whose work is the driver's in CUDA.  The double answers none of them
 * itself: the driver double does (tests/cudadrv_double).
 *
 * How the list was made: the real runtime takes every driver function
 * from cuGetProcAddress_v2, by a name that is a string of its own, so the
 * names libcudart.so.13 can ask for are
 *
 *	strings -a /usr/local/cuda/lib64/libcudart.so.13 |
 *		grep -x 'cu[A-Z][A-Za-z0-9_]*' | sort -u
 *
 * (481 with CUDA 13.0).  Among them, those of the runtime calls the
 * double has: cuMemHostAlloc (cudaHostAlloc, and cudaMallocHost: the
 * runtime never asks for cuMemAllocHost), cuMemFreeHost,
 * cuMemHostGetFlags, cuMemHostGetDevicePointer, cuMemHostRegister,
 * cuMemHostUnregister, cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamGetCaptureInfo (the runtime's cudaStreamIsCapturing: there is
 * no cuStreamIsCapturing among its strings), and
 * cuThreadExchangeStreamCaptureMode; cuInit besides.  The runtime asks by
 * these names and the driver picks the version (cuMemHostRegister_v2 at
 * 6.5 and later, cuStreamBeginCapture_v2 at 10.1...), as the double's
 * driver does.  tests/interpose/rt_doubles checks that every name is still
 * one of the toolkit runtime's strings and that the double asks for each,
 * once.
 *
 * X(member, name, parameters, runtime calls)
 */
#ifndef CUDART_DOUBLE_DRIVER_TWINS_H
#define CUDART_DOUBLE_DRIVER_TWINS_H

#define CDD_DRIVER_TWINS(X)						\
	X(init, cuInit, (unsigned int), "")				\
	X(host_alloc, cuMemHostAlloc, (void **, size_t, unsigned int),	\
	  "cudaHostAlloc cudaMallocHost")				\
	X(free_host, cuMemFreeHost, (void *), "cudaFreeHost")		\
	X(get_flags, cuMemHostGetFlags, (unsigned int *, void *),	\
	  "cudaHostGetFlags")						\
	X(get_devptr, cuMemHostGetDevicePointer,			\
	  (unsigned long long *, void *, unsigned int),			\
	  "cudaHostGetDevicePointer")					\
	X(host_register, cuMemHostRegister, (void *, size_t, unsigned int), \
	  "cudaHostRegister")						\
	X(host_unregister, cuMemHostUnregister, (void *), "cudaHostUnregister") \
	X(begin_capture, cuStreamBeginCapture, (void *, int),		\
	  "cudaStreamBeginCapture")					\
	X(end_capture, cuStreamEndCapture, (void *, void **),		\
	  "cudaStreamEndCapture")					\
	X(capture_info, cuStreamGetCaptureInfo,				\
	  (void *, int *, unsigned long long *), "cudaStreamIsCapturing")	\
	X(exchange_mode, cuThreadExchangeStreamCaptureMode, (int *),	\
	  "cudaThreadExchangeStreamCaptureMode")

#endif /* CUDART_DOUBLE_DRIVER_TWINS_H */
