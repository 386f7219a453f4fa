/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - what the library tests share.
 *
 * The runtime: by default the tests load the CUDA runtime test double
 * (tests_cudart_double, paths.h, built in tests/cudart_double) and point libgpupool at it with
 * GPUPOOL_CUDART.  With GPUPOOL_TEST_CUDART=real they use the real runtime
 * ($GPUPOOL_CUDART or libcudart.so.13) instead: tests that need the double's
 * failure injection or event control skip, the rest run unchanged, and
 * device tests skip when it sees no device.
 *
 * The backend: GPUPOOL_BACKEND picks it as for any program; a test that
 * cannot open its context because /dev/gpupool is absent while
 * GPUPOOL_BACKEND=kernel skips, saying so.
 */
#ifndef GPUPOOL_TESTS_LIB_HELPERS_H
#define GPUPOOL_TESTS_LIB_HELPERS_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpupool.h>

#include "cudart_double.h"
#include "paths.h"
#include "kselftest_harness.h"

typedef int rt_err_t;	/* cudaError_t: 0 = success */

struct rt {
	void *dl;
	int is_double;
	int devices;
	rt_err_t (*StreamCreate)(gp_stream_t *);
	rt_err_t (*StreamDestroy)(gp_stream_t);
	rt_err_t (*StreamSynchronize)(gp_stream_t);
	rt_err_t (*GetLastError)(void);
	/* The double's controls (NULL on the real runtime). */
	void (*reset)(void);
	void (*set_device_count)(int);
	void (*set_mem_total)(size_t);
	void (*fail_malloc_above)(size_t);
	void (*fail_register)(int);
	void (*fail_malloc_error)(int, int);
	void (*hold_events)(int);
	void (*complete_events)(void);
	void (*set_pci_bus_id)(const char *);
	void (*get_counts)(struct cdd_counts *);
	size_t (*registered_size)(const void *);
	uint64_t (*check)(void);
	const char *(*last_violation)(void);
	void (*set_vmm)(int, size_t);
	void (*fail_create_after)(long);
	void (*set_runtime_version)(int);
};

/* The CUDA driver maps memory inside the gap that AddressSanitizer keeps
 * between its shadow regions; with the gap protected, every real-runtime
 * call fails and every test that needs a GPU skips (seen on an H200).
 */
const char *__asan_default_options(void);
__attribute__((used)) const char *__asan_default_options(void)
{
	return "protect_shadow_gap=0";
}

static inline int rt_want_real(void)
{
	const char *v = getenv("GPUPOOL_TEST_CUDART");

	return v && !strcmp(v, "real");
}

/* Load the runtime of this run and point libgpupool at it.  0 on success;
 * -1 when there is no runtime with a device (real mode), after pointing
 * libgpupool at nothing so that CUDA is off.
 */
static inline int rt_load(struct rt *rt)
{
	const char *path = tests_cudart_double;
	int (*count)(int *);

	memset(rt, 0, sizeof(*rt));
	if (rt_want_real()) {
		path = getenv("GPUPOOL_CUDART");
		if (!path || !*path)
			path = "libcudart.so.13";
	}
	rt->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!rt->dl)
		goto off;
	setenv("GPUPOOL_CUDART", path, 1);
#define RT_SYM(f, n) (*(void **)&rt->f = dlsym(rt->dl, n))
	RT_SYM(StreamCreate, "cudaStreamCreate");
	RT_SYM(StreamDestroy, "cudaStreamDestroy");
	RT_SYM(StreamSynchronize, "cudaStreamSynchronize");
	RT_SYM(GetLastError, "cudaGetLastError");
	rt->is_double = RT_SYM(reset, "cdd_reset") != NULL;
	if (rt->is_double) {
		RT_SYM(set_device_count, "cdd_set_device_count");
		RT_SYM(set_mem_total, "cdd_set_mem_total");
		RT_SYM(fail_malloc_above, "cdd_fail_malloc_above");
		RT_SYM(fail_register, "cdd_fail_register");
		RT_SYM(fail_malloc_error, "cdd_fail_malloc_error");
		RT_SYM(hold_events, "cdd_hold_events");
		RT_SYM(complete_events, "cdd_complete_events");
		RT_SYM(set_pci_bus_id, "cdd_set_pci_bus_id");
		RT_SYM(get_counts, "cdd_get_counts");
		RT_SYM(registered_size, "cdd_registered_size");
		RT_SYM(check, "cdd_check");
		RT_SYM(last_violation, "cdd_last_violation");
		RT_SYM(set_vmm, "cdd_set_vmm");
		RT_SYM(fail_create_after, "cdd_fail_create_after");
		RT_SYM(set_runtime_version, "cdd_set_runtime_version");
		rt->reset();
	}
#undef RT_SYM
	*(void **)&count = dlsym(rt->dl, "cudaGetDeviceCount");
	if (count && count(&rt->devices) == 0 && rt->devices > 0)
		return 0;
off:
	setenv("GPUPOOL_CUDART", "/nonexistent/libcudart.so", 1);
	rt->devices = 0;
	return -1;
}

/* No violation seen by the double (always true on the real runtime). */
static inline int rt_clean(struct rt *rt)
{
	return !rt->is_double || rt->check() == 0;
}

static inline struct cdd_counts rt_counts(struct rt *rt)
{
	struct cdd_counts c;

	memset(&c, 0, sizeof(c));
	if (rt->is_double)
		rt->get_counts(&c);
	return c;
}

/* For tests that drive CUDA: skip without a device. */
#define RT_SETUP(rt) do {						\
	if (rt_load(rt))						\
		SKIP(return, "no CUDA runtime with a device");		\
} while (0)

#define NEED_DOUBLE(rt) do {						\
	if (!(rt)->is_double)						\
		SKIP(return, "needs the CUDA runtime test double");	\
} while (0)

static inline int backend_forced_kernel(void)
{
	const char *b = getenv("GPUPOOL_BACKEND");

	return b && !strcmp(b, "kernel");
}

/* Open a context; skip when the forced kernel backend is absent. */
#define OPEN(opts, ctxp) do {						\
	int __r = gp_open((opts), (ctxp));				\
	if (__r == -ENODEV && backend_forced_kernel() &&		\
	    access("/dev/gpupool", F_OK))				\
		SKIP(return, "GPUPOOL_BACKEND=kernel: %s",		\
		     gp_last_error(NULL));				\
	ASSERT_EQ(0, __r) TH_LOG("gp_open: %s", gp_last_error(NULL));	\
} while (0)

static inline int on_user_backend(struct gp_ctx *ctx)
{
	struct gp_info i;

	return gp_info(ctx, &i) == 0 && i.backend == GP_BACKEND_USER;
}

/*
 * Byte i of a buffer filled with seed: (seed + 31 i) mod 256.  31 is odd,
 * so the pattern repeats every FILL_PERIOD bytes and nowhere sooner: both
 * helpers handle the first period byte by byte and the rest with memcpy
 * and memcmp, which run as vector loops (a byte loop under ASan took 78%
 * of host_fork's time, and under TCG in the VM most of its 35 s).
 */
#define FILL_PERIOD	256

static inline void fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;
	size_t i, k;

	for (i = 0; i < n && i < FILL_PERIOD; i++)
		c[i] = (unsigned char)(seed + i * 31);
	/* c[0, k) holds the pattern, k a multiple of the period: copy it on */
	for (k = FILL_PERIOD; k < n; k *= 2)
		memcpy(c + k, c, n - k < k ? n - k : k);
}

static inline int check_fill(const void *p, size_t n, unsigned int seed)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n && i < FILL_PERIOD; i++)
		if (c[i] != (unsigned char)(seed + i * 31))
			return 0;
	/* the first period is right: the rest is right when every byte
	 * equals the one a period before it
	 */
	return n <= FILL_PERIOD ||
	       !memcmp(c + FILL_PERIOD, c, n - FILL_PERIOD);
}

#endif /* GPUPOOL_TESTS_LIB_HELPERS_H */
