// SPDX-License-Identifier: MIT
/*
 * pool_take - what a Slurm job of tests/slurm does: allocate SIZE bytes of
 * /dev/gpupool in 1 MiB chunks (raw ioctls, no library), touch them, and
 * either say so and hold them for HOLD seconds, or, when the module
 * refuses with ENOSPC, name the cgroup whose limit refused
 * (GPUPOOL_IOC_CGROUP with GPUPOOL_CGROUP_LAST_DENIAL) and exit 3.
 *
 * Usage: pool_take SIZE[K|M] [HOLD]
 * Output: "pool_take: ok <bytes> in <cgroup>" (the task's own cgroup), or
 *         "pool_take: ENOSPC after <bytes>: limit <bytes> use <bytes> of <cgroup>"
 * Exit: 0 ok, 3 ENOSPC, 1 any other error, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gpupool.h>

#define CHUNK	(1024ull * 1024)

int main(int argc, char **argv)
{
	unsigned long long want, got = 0;
	unsigned int hold = 0;
	char *end, self[4200] = "?";
	FILE *f;
	int fd;

	if (argc < 2 || argc > 3)
		goto usage;
	want = strtoull(argv[1], &end, 10);
	if (*end == 'M' || *end == 'm')
		want <<= 20, end++;
	else if (*end == 'K' || *end == 'k')
		want <<= 10, end++;
	if (*end || !want)
		goto usage;
	if (argc == 3)
		hold = (unsigned int)strtoul(argv[2], NULL, 10);
	f = fopen("/proc/self/cgroup", "r");
	if (f) {
		char line[4200];

		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "0::", 3)) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(self, sizeof(self), "%s", line + 3);
			}
		fclose(f);
	}
	fd = open("/dev/gpupool", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "pool_take: /dev/gpupool: %s\n", strerror(errno));
		return 1;
	}
	while (got < want) {
		struct gpupool_alloc a = { .size = want - got < CHUNK ? want - got : CHUNK };
		void *p;

		if (ioctl(fd, GPUPOOL_IOC_ALLOC, &a)) {
			int err = errno;
			struct gpupool_cgroup c = { .flags = GPUPOOL_CGROUP_LAST_DENIAL,
						    .cgroup_fd = -1 };
			char path[4096] = "?";

			if (err != ENOSPC) {
				fprintf(stderr, "pool_take: ALLOC after %llu bytes: %s\n",
					got, strerror(err));
				return 1;
			}
			c.path_ptr = (uintptr_t)path;
			c.path_len = sizeof(path);
			if (ioctl(fd, GPUPOOL_IOC_CGROUP, &c))
				snprintf(path, sizeof(path), "? (%s)", strerror(errno));
			printf("pool_take: ENOSPC after %llu: limit %llu use %llu of %s\n",
			       got, (unsigned long long)c.limit,
			       (unsigned long long)c.usage, path);
			fflush(stdout);
			return 3;
		}
		p = mmap(NULL, a.chunk_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, (off_t)a.handle);
		if (p == MAP_FAILED) {
			fprintf(stderr, "pool_take: mmap: %s\n", strerror(errno));
			return 1;
		}
		memset(p, 0xa5, a.chunk_size);
		got += a.chunk_size;
	}
	printf("pool_take: ok %llu in %s\n", got, self);
	fflush(stdout);
	if (hold)
		sleep(hold);
	return 0;
usage:
	fprintf(stderr, "usage: pool_take SIZE[K|M] [HOLD_SECONDS]\n");
	return 2;
}
