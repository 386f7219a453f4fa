// SPDX-License-Identifier: MIT
/*
 * ip_take: what a job's framework does, for tests/slurm: cudaHostAlloc
 * (the runtime double, linked as libcudart.so.13) of 3 MiB at a time
 * until the pool stops serving, then free it all.  It prints the
 * interposer's mode and figures:
 *   ip_take: mode M served N last RC fell_back F refused R
 * or "ip_take: no interposer" (and each request's answer) without one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../include/gpupool_interpose.h"

int cudaHostAlloc(void **p, size_t n, unsigned int flags);
int cudaFreeHost(void *p);

#define REQ	(3u << 20)
#define MAX	10

int main(void)
{
	int (*get)(struct gp_interpose_stats *, size_t);
	const char *mode = getenv("GPUPOOL_INTERPOSE_MODE");
	struct gp_interpose_stats st = { 0 };
	void *p[MAX];
	int n = 0, rc;

	*(void **)&get = dlsym(RTLD_DEFAULT, "gp_interpose_stats");
	do {
		rc = cudaHostAlloc(&p[n], REQ, 0);
		if (!rc)
			n++;
		if (get)
			get(&st, sizeof(st));
	} while (!rc && !st.fell_back[GP_INTERPOSE_LIMIT] && n < MAX);
	if (get)
		printf("ip_take: mode %s served %llu last %d fell_back %llu refused %llu\n",
		       mode ? mode : "-", (unsigned long long)st.served, rc,
		       (unsigned long long)st.fell_back[GP_INTERPOSE_LIMIT],
		       (unsigned long long)st.refused[GP_INTERPOSE_LIMIT]);
	else
		printf("ip_take: no interposer, %d requests served by CUDA\n", n);
	while (n--)
		if (cudaFreeHost(p[n]))
			return 1;
	return 0;
}
