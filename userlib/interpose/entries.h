/* SPDX-License-Identifier: MIT */
/*
 * entries.h - every entry point the interposer defines, listed once.
 *
 * IP_DRIVER_ENTRIES(X): X(name, kind, params, args), each returning
 * CUresult, defined under the interposer's own version node
 * (GPUPOOL_INTERPOSE_1, the default: the driver has no symbol versions).
 *
 * IP_RUNTIME_ENTRIES(X): X(name, kind, versions, params, args) (params ()
 * for none: IP_PROTO makes it (void)), each returning cudaError_t,
 * defined once per runtime version it exists in: versions is (11.0, 12,
 * 13), 1 where the runtime of that soname exports it (objdump -T
 * libcudart.so.13: every symbol "libcudart.so.13"; .12 and .11.0
 * likewise), 13's the default version.
 *
 * kind: `serves` when only the outermost wrapper of a thread serves (one
 * entered inside another wrapper or inside libgpupool's own CUDA calls
 * calls the real function and nothing else: interpose.h, ip_enter);
 * `swaps` for the ways to the driver's entry points, which swap the
 * answer for ours at any depth (a runtime that initializes inside
 * libgpupool's first call must get our entry points too) and call
 * nothing but the real function.
 *
 * From these come: the names and the typedefs of the real functions
 * (ip_<name>_fn), the wrappers with their guard against re-entry and their
 * symbol versions, the table of the interposer's own addresses that
 * cuGetProcAddress, cudaGetDriverEntryPoint and dlsym hand out, and the
 * runtime's per-version thunks (driver.c, runtime.c).  Adding an entry
 * point is a line here and its serving function, ip_drv_<name> in
 * driver.c or ip_rt_<name> in runtime.c (docs/interpose.md, "Adding an
 * entry point").  The tests read this list too (tests/interpose).
 */
#ifndef GPUPOOL_USERLIB_INTERPOSE_ENTRIES_H
#define GPUPOOL_USERLIB_INTERPOSE_ENTRIES_H

#define IP_DRIVER_ENTRIES(X)						\
	X(cuMemHostAlloc, serves,					\
	  (void **pp, size_t n, unsigned int flags), (pp, n, flags))	\
	X(cuMemAllocHost, serves, (void **pp, unsigned int n), (pp, n))	\
	X(cuMemAllocHost_v2, serves, (void **pp, size_t n), (pp, n))	\
	X(cuMemFreeHost, serves, (void *p), (p))			\
	X(cuMemHostGetFlags, serves, (unsigned int *flags, void *p),	\
	  (flags, p))							\
	X(cuMemHostGetDevicePointer, serves,				\
	  (unsigned int *d, void *p, unsigned int flags), (d, p, flags))	\
	X(cuMemHostGetDevicePointer_v2, serves,				\
	  (CUdeviceptr *d, void *p, unsigned int flags), (d, p, flags))	\
	X(cuGetProcAddress, swaps,					\
	  (const char *sym, void **pfn, int version, unsigned long long flags), \
	  (sym, pfn, version, flags))					\
	X(cuGetProcAddress_v2, swaps,					\
	  (const char *sym, void **pfn, int version, unsigned long long flags, \
	   int *status), (sym, pfn, version, flags, status))

#define IP_RUNTIME_ENTRIES(X)						\
	X(cudaHostAlloc, serves, (1, 1, 1),				\
	  (void **p, size_t n, unsigned int flags), (p, n, flags))	\
	X(cudaMallocHost, serves, (1, 1, 1), (void **p, size_t n), (p, n)) \
	X(cudaFreeHost, serves, (1, 1, 1), (void *p), (p))		\
	X(cudaHostGetFlags, serves, (1, 1, 1),				\
	  (unsigned int *flags, void *p), (flags, p))			\
	X(cudaHostGetDevicePointer, serves, (1, 1, 1),			\
	  (void **d, void *p, unsigned int flags), (d, p, flags))	\
	X(cudaGetDriverEntryPoint, swaps, (1, 1, 1),			\
	  (const char *sym, void **fp, unsigned long long flags, int *st), \
	  (sym, fp, flags, st))						\
	X(cudaGetDriverEntryPoint_ptsz, swaps, (1, 1, 1),		\
	  (const char *sym, void **fp, unsigned long long flags, int *st), \
	  (sym, fp, flags, st))						\
	X(cudaGetDriverEntryPointByVersion, swaps, (0, 1, 1),		\
	  (const char *sym, void **fp, unsigned int version,		\
	   unsigned long long flags, int *st), (sym, fp, version, flags, st)) \
	X(cudaGetDriverEntryPointByVersion_ptsz, swaps, (0, 1, 1),	\
	  (const char *sym, void **fp, unsigned int version,		\
	   unsigned long long flags, int *st), (sym, fp, version, flags, st)) \
	X(cudaGetLastError, serves, (1, 1, 1), (), ())			\
	X(cudaPeekAtLastError, serves, (1, 1, 1), (), ())

/* The runtime versions, indexed as a row's versions are: the symbol
 * version, and how a thunk binds it ("@@": the default).
 */
#define IP_RT_VERSION_0		"libcudart.so.11.0"
#define IP_RT_VERSION_1		"libcudart.so.12"
#define IP_RT_VERSION_2		"libcudart.so.13"
#define IP_RT_BIND_0		"@"
#define IP_RT_BIND_1		"@"
#define IP_RT_BIND_2		"@@"
#define IP_RUNTIME_VERSIONS(V)	V(0) V(1) V(2)

/* Helpers for the rows: (a, b) as a, b; (first, a, b) from (a, b); a
 * prototype's parameters, (void) from () (a row without any).
 */
#define IP_CAT_(a, b)		a##b
#define IP_CAT(a, b)		IP_CAT_(a, b)
#define IP_UNPAREN(...)		__VA_ARGS__
#define IP_WITH_(first, ...)	(first __VA_OPT__(,) __VA_ARGS__)
#define IP_WITH(first, args)	IP_WITH_(first, IP_UNPAREN args)
#define IP_VOID()		void
#define IP_VOID_X()
#define IP_PROTO_(...)		(__VA_ARGS__ IP_CAT(IP_VOID, __VA_OPT__(_X))())
#define IP_PROTO(params)	IP_PROTO_ params
/* Whether a wrapper of kind serves, outermost or not (see the top). */
#define IP_SERVES_serves(outermost)	(outermost)
#define IP_SERVES_swaps(outermost)	((void)(outermost), 1)
#define IP_SERVES(kind, outermost)	IP_CAT(IP_SERVES_, kind)(outermost)
/* code when versions has a 1 at index i, nothing otherwise. */
#define IP_AT_0(a, b, c)	a
#define IP_AT_1(a, b, c)	b
#define IP_AT_2(a, b, c)	c
#define IP_IF_0(...)
#define IP_IF_1(...)		__VA_ARGS__
#define IP_IF_VERSION(i, versions) \
	IP_CAT(IP_IF_, IP_CAT(IP_AT_, i) versions)

#endif /* GPUPOOL_USERLIB_INTERPOSE_ENTRIES_H */
