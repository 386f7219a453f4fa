/* SPDX-License-Identifier: MIT */
/*
 * ip_test.h - what the interposer's tests share.
 *
 * The tests are programs that do not link libgpupool: they call CUDA (the
 * runtime double, linked as libcudart.so.13, or the driver double, opened
 * as libcuda.so.1) as a framework would, and run under the interposer.  A
 * test program arranges that itself: before main it executes itself again
 * with LD_PRELOAD naming the interposer built with its own sanitizer,
 * LD_LIBRARY_PATH finding the driver double, GPUPOOL_CUDART the runtime
 * double, and GPUPOOL_BACKEND=user unless the environment names a backend
 * (the VM suite runs them on the kernel backend).  A program run by a
 * name ending in "-strict" (the links in tests/interpose/strict/) runs in
 * strict mode, unless the environment names a mode.
 *
 * Scenarios: what must run in a process of its own (another mode, a
 * fresh exec) is a scenario, run by ip_spawn() in a fork()ed and exec()ed
 * copy of the program with extra environment; its exit status says
 * whether it held.
 */
#ifndef GPUPOOL_TESTS_INTERPOSE_IP_TEST_H
#define GPUPOOL_TESTS_INTERPOSE_IP_TEST_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpupool_interpose.h"
#include "cudart_double.h"
#include "cudadrv_double.h"
#include "paths.h"
#include "kselftest_harness.h"

/* The runtime's and the driver's numbers the tests see. */
#define RT_SUCCESS		0
#define RT_INVALID_VALUE	1
#define RT_MEMORY_ALLOCATION	2
#define RT_INITIALIZATION	3
#define CU_SUCCESS		0
#define CU_INVALID_VALUE	1
#define CU_OUT_OF_MEMORY	2
#define CU_NOT_INITIALIZED	3
#define CU_NOT_FOUND		500
#define HOST_PORTABLE		1u
#define HOST_MAPPED		2u
#define HOST_WRITE_COMBINED	4u

/* Before main: run again under the interposer (see the top). */
static void ip_test_preload(int argc, char **argv, char **envp)
	__attribute__((constructor));
static void ip_test_preload(int argc, char **argv, char **envp)
{
	const char *asan = getenv("ASAN_OPTIONS");
	const char *lib = getenv("LD_LIBRARY_PATH");
	char buf[4096];
	size_t n;

	(void)argc;
	(void)envp;
	if (getenv("GPUPOOL_TEST_PRELOADED"))
		return;
	setenv("GPUPOOL_TEST_PRELOADED", "1", 1);
	setenv("LD_PRELOAD", tests_interposer, 1);
	snprintf(buf, sizeof(buf), "%s%s%s", tests_driver_dir, lib ? ":" : "",
		 lib ? lib : "");
	setenv("LD_LIBRARY_PATH", buf, 1);
	setenv("GPUPOOL_BACKEND", "user", 0);
	n = strlen(argv[0]);
	if (n > 7 && !strcmp(argv[0] + n - 7, "-strict"))
		setenv("GPUPOOL_INTERPOSE_MODE", "strict", 0);
	setenv("GPUPOOL_CUDART", tests_cudart, 0);
	/* The interposer comes before the sanitizer's runtime, which the
	 * program links: allowed, it defines nothing the runtime does.
	 */
	snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0",
		 asan ? asan : "", asan ? ":" : "");
	setenv("ASAN_OPTIONS", buf, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "cannot run /proc/self/exe again: %s\n", strerror(errno));
	_exit(127);
}

struct ip_scenario {
	const char *name;
	int (*fn)(void);	/* 0 when it held */
};

/* The test's main: a scenario when asked for one, else the harness. */
#define IP_TEST_MAIN(scenarios)						\
	int main(int argc, char **argv)					\
	{								\
		const struct ip_scenario *s_;				\
									\
		if (argc != 3 || strcmp(argv[1], "--scenario"))		\
			return test_harness_run(argc, argv);		\
		for (s_ = (scenarios); s_->name; s_++)			\
			if (!strcmp(s_->name, argv[2]))			\
				return s_->fn();			\
		fprintf(stderr, "no scenario %s\n", argv[2]);		\
		return 127;						\
	}

/*
 * Run scenario `name` in a fork()ed and exec()ed copy of this program,
 * with env ("NAME=VALUE" strings, NULL-terminated; may be NULL) added,
 * its stderr appended to errfile when not NULL.  Its exit status, or -1.
 */
static inline int ip_spawn(const char *name, const char *const *env,
			   const char *errfile)
{
	pid_t pid = fork();
	int st, fd;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		for (; env && *env; env++)
			putenv((char *)*env);
		if (errfile) {
			fd = open(errfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
			if (fd >= 0)
				dup2(fd, 2);
		}
		execl("/proc/self/exe", "ip-scenario", "--scenario", name,
		      (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Now, in ms: for the deadlines of polls (never a timed assertion). */
static inline uint64_t ip_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The interposer's figures for this process. */
static inline struct gp_interpose_stats ip_stats(void)
{
	int (*get)(struct gp_interpose_stats *, size_t);
	struct gp_interpose_stats st;

	memset(&st, 0, sizeof(st));
	*(void **)&get = dlsym(RTLD_DEFAULT, "gp_interpose_stats");
	if (!get || get(&st, sizeof(st)))
		st.pool = -100;		/* no interposer: every check fails */
	return st;
}

/* The answer to a request the pool cannot serve and CUDA refuses (a child
 * of fork(): CUDA cannot be initialized there): CUDA's in fallback mode
 * (GPUPOOL_INTERPOSE_MODE, the suite runs in both), out of memory in
 * strict mode.
 */
static inline int ip_unservable(int cudas)
{
	return ip_stats().mode == GP_INTERPOSE_STRICT ? RT_MEMORY_ALLOCATION : cudas;
}

/* A control of a double: the driver's (opened as the process's
 * libcuda.so.1) or the runtime's.
 */
static inline void *double_sym(const char *lib, const char *name)
{
	void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	return dl ? dlsym(dl, name) : NULL;
}

#define drv_sym(name)	double_sym("libcuda.so.1", name)
#define rt_sym(name)	double_sym(tests_cudart, name)

/* A double's counts: get(&c) by name, zeros without it. */
#define DOUBLE_COUNTS(type, lib, getter) __extension__({		\
	void (*get_)(type *);						\
	type c_;							\
									\
	memset(&c_, 0, sizeof(c_));					\
	*(void **)&get_ = double_sym(lib, getter);			\
	if (get_)							\
		get_(&c_);						\
	c_;								\
})

static inline struct cdrv_counts drv_counts(void)
{
	return DOUBLE_COUNTS(struct cdrv_counts, "libcuda.so.1", "cdrv_get_counts");
}

static inline struct cdd_counts rt_counts(void)
{
	return DOUBLE_COUNTS(struct cdd_counts, tests_cudart, "cdd_get_counts");
}

/* The size of the driver double's live allocation at p, 0 if none. */
static inline size_t cdrv_live_size_of(const void *p)
{
	size_t (*size)(const void *, unsigned int *);

	*(void **)&size = drv_sym("cdrv_live_size");
	return size ? size(p, NULL) : 0;
}

/* Is fn defined by the interposer? */
static inline int ip_is_ours(const void *fn)
{
	Dl_info info;

	return fn && dladdr(fn, &info) && info.dli_fname &&
	       strstr(info.dli_fname, "libgpupool-interpose") != NULL;
}

/* How many lines of file hold s. */
static inline int ip_count_lines(const char *file, const char *s)
{
	char line[1024];
	FILE *f = fopen(file, "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, s) != NULL;
	if (f)
		fclose(f);
	return n;
}



/* The runtime's entry points, for the tests that link it (as a program
 * built with the toolkit would: these are the runtime's prototypes, the
 * enums as int).
 */
#ifdef IP_TEST_LINKS_RUNTIME
typedef struct CUstream_st *rt_stream;
int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaMallocHost(void **p, size_t n);
int cudaFreeHost(void *p);
int cudaHostGetFlags(unsigned int *flags, void *p);
int cudaHostGetDevicePointer(void **d, void *p, unsigned int flags);
int cudaHostRegister(void *p, size_t n, unsigned int flags);
int cudaHostUnregister(void *p);
int cudaStreamCreate(rt_stream *s);
int cudaStreamDestroy(rt_stream s);
int cudaStreamBeginCapture(rt_stream s, int mode);
int cudaStreamEndCapture(rt_stream s, void **graph);
int cudaGetLastError(void);
#endif
#endif /* GPUPOOL_TESTS_INTERPOSE_IP_TEST_H */
