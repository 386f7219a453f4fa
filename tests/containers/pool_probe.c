// SPDX-License-Identifier: MIT
/*
 * pool_probe - what a container does with /dev/gpupool, linked statically
 * so that it runs in a rootfs of its own (busybox and this program, no
 * libc): the uapi ioctls, not libgpupool.
 *
 *   pool_probe stat            the node's mode, owner and group
 *   pool_probe open            open /dev/gpupool (exit 0), or say errno
 *   pool_probe alloc SIZE      ALLOC, mmap, write a pattern, read it back,
 *                              FREE; a refusal by a cgroup limit (ENOSPC)
 *                              is said as libgpupool says it (the cgroup,
 *                              its limit and use, from LAST_DENIAL)
 *   pool_probe hold SIZE       alloc as above, print "held", keep the
 *                              chunk until SIGTERM (or 120 s), exit 0
 *
 * Every line starts with "probe:"; the last says "ok ..." or names the
 * errno ("errno=ENOSPC ...").  Exit 0 on success, 1 on a failure, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/gpupool.h>

#define NODE "/dev/gpupool"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *errname(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOSPC: return "ENOSPC";
	case ENOMEM: return "ENOMEM";
	case EDQUOT: return "EDQUOT";
	case ENXIO: return "ENXIO";
	case ENODEV: return "ENODEV";
	default: return "other";
	}
}

/* Bytes as libgpupool writes them: "2.0 MiB". */
static const char *human(char *buf, size_t len, uint64_t b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i)
		snprintf(buf, len, "%.1f %s", v, u[i]);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	return buf;
}

static int open_node(void)
{
	int fd = open(NODE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		printf("probe: errno=%s open %s: %s\n", errname(errno), NODE,
		       strerror(errno));
	return fd;
}

/* ENOSPC from ALLOC: which cgroup refused, as libgpupool words it. */
static void say_refusal(int fd, uint64_t size)
{
	struct gpupool_cgroup cg;
	char path[4096], l[32], u[32], s[32];

	memset(&cg, 0, sizeof(cg));
	cg.flags = GPUPOOL_CGROUP_LAST_DENIAL;
	cg.cgroup_fd = -1;
	cg.path_ptr = (uintptr_t)path;
	cg.path_len = sizeof(path);
	path[0] = 0;
	human(s, sizeof(s), size);
	if (ioctl(fd, GPUPOOL_IOC_CGROUP, &cg)) {
		printf("probe: errno=ENOSPC gpupool.ko refused %s: a cgroup limit would be exceeded, which one the module did not say (%s)\n",
		       s, strerror(errno));
		return;
	}
	path[sizeof(path) - 1] = 0;
	printf("probe: errno=ENOSPC gpupool.ko refused %s: cgroup %s would exceed its limit of %s (%s in use); raise it with gpupoolctl limit set %s SIZE\n",
	       s, path, human(l, sizeof(l), cg.limit), human(u, sizeof(u), cg.usage),
	       path);
}

static int alloc(uint64_t size, int hold)
{
	struct gpupool_alloc a;
	struct gpupool_free f;
	unsigned char *p;
	uint64_t i;
	int fd = open_node();

	if (fd < 0)
		return 1;
	memset(&a, 0, sizeof(a));
	a.size = size;
	if (ioctl(fd, GPUPOOL_IOC_ALLOC, &a)) {
		int e = errno;

		if (e == ENOSPC)
			say_refusal(fd, size);
		else
			printf("probe: errno=%s GPUPOOL_IOC_ALLOC %llu: %s\n",
			       errname(e), (unsigned long long)size, strerror(e));
		return 1;
	}
	p = mmap(NULL, a.chunk_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)a.handle);
	if (p == MAP_FAILED) {
		printf("probe: errno=%s mmap: %s\n", errname(errno), strerror(errno));
		return 1;
	}
	for (i = 0; i < a.chunk_size; i++)
		if (p[i]) {
			printf("probe: chunk not zeroed at %llu\n", (unsigned long long)i);
			return 1;
		}
	for (i = 0; i < a.chunk_size; i++)
		p[i] = (unsigned char)(i * 131 + 7);
	for (i = 0; i < a.chunk_size; i++)
		if (p[i] != (unsigned char)(i * 131 + 7)) {
			printf("probe: pattern differs at %llu\n", (unsigned long long)i);
			return 1;
		}
	printf("probe: wrote and read back %llu bytes (chunk %llu bytes, node %u)\n",
	       (unsigned long long)a.chunk_size, (unsigned long long)a.chunk_size,
	       a.chunk_node);
	if (hold) {
		struct sigaction sa;
		int t;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		printf("probe: held\n");
		fflush(stdout);
		for (t = 0; t < 1200 && !stop; t++)
			usleep(100000);
	}
	munmap(p, a.chunk_size);
	memset(&f, 0, sizeof(f));
	f.handle = a.handle;
	if (ioctl(fd, GPUPOOL_IOC_FREE, &f)) {
		printf("probe: errno=%s GPUPOOL_IOC_FREE: %s\n", errname(errno),
		       strerror(errno));
		return 1;
	}
	close(fd);
	printf("probe: ok alloc %llu\n", (unsigned long long)size);
	return 0;
}

int main(int argc, char **argv)
{
	struct stat st;
	char *end;
	uint64_t size;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "stat")) {
		if (stat(NODE, &st)) {
			printf("probe: errno=%s stat %s: %s\n", errname(errno),
			       NODE, strerror(errno));
			return 1;
		}
		printf("probe: ok stat %s type=%s mode=%04o uid=%u gid=%u\n", NODE,
		       S_ISCHR(st.st_mode) ? "c" : "other", st.st_mode & 07777,
		       st.st_uid, st.st_gid);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "open")) {
		fd = open_node();
		if (fd < 0)
			return 1;
		close(fd);
		printf("probe: ok open %s\n", NODE);
		return 0;
	}
	if (argc == 3 && (!strcmp(argv[1], "alloc") || !strcmp(argv[1], "hold"))) {
		size = strtoull(argv[2], &end, 0);
		if (*end == 'K')
			size <<= 10, end++;
		else if (*end == 'M')
			size <<= 20, end++;
		if (*end || !size) {
			fprintf(stderr, "pool_probe: '%s' is not a size\n", argv[2]);
			return 2;
		}
		return alloc(size, argv[1][0] == 'h');
	}
	fprintf(stderr, "usage: pool_probe stat | open | alloc SIZE | hold SIZE\n");
	return 2;
}
