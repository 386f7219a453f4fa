/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmod_util.h - what the module's benchmarks share (kmod_bench.c,
 * reclaim_bench.c): the clock, medians, loading and unloading gpupool.ko
 * ($GPUPOOL_KO) and waiting for the zeroing worker.  Figures are printed,
 * never asserted.
 */
#ifndef GPUPOOL_BENCH_KMOD_UTIL_H
#define GPUPOOL_BENCH_KMOD_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/gpupool.h>

#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static inline void touch(volatile char *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i += 4096)
		p[i] = 1;
}

/* Load module file ko with params, unloading a module of that name first. */
static inline int load_ko(const char *ko, const char *name, const char *params)
{
	int fd, ret;

	syscall(SYS_delete_module, name, O_NONBLOCK);
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, params, 0);
	close(fd);
	return ret;
}

static inline int load(const char *params)
{
	const char *ko = getenv("GPUPOOL_KO");

	if (!ko || !*ko) {
		fprintf(stderr, "gpupool bench: GPUPOOL_KO not set\n");
		return -1;
	}
	return load_ko(ko, "gpupool", params);
}

/* Wait until freed chunks are zeroed, so the next timing starts clean. */
static inline void settle(int fd)
{
	struct gpupool_stats st;
	int i;

	for (i = 0; i < 2000; i++) {
		memset(&st, 0, sizeof(st));
		if (ioctl(fd, GPUPOOL_IOC_STATS, &st) || !st.total.zeroing)
			return;
		usleep(5000);
	}
}

/* Unload module name; 0 when it is gone. */
static inline int unload_name(const char *name)
{
	int i;

	for (i = 0; i < 200; i++) {
		if (!syscall(SYS_delete_module, name, O_NONBLOCK) ||
		    errno == ENOENT)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* Unload gpupool (whichever build is loaded); 0 when it is gone. */
static inline int unload(void)
{
	return unload_name("gpupool");
}

#endif /* GPUPOOL_BENCH_KMOD_UTIL_H */
