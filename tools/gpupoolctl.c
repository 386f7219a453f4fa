// SPDX-License-Identifier: MIT
/*
 * gpupoolctl - look at the gpupool pinned-memory pool.
 *
 *   gpupoolctl info    what the loaded module speaks and serves (ioctl)
 *   gpupoolctl stat    the pool at a glance (/proc/gpupool)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/gpupool.h>

#define DEV_PATH	"/dev/gpupool"
#define PROC_PATH	"/proc/gpupool"

static void explain_open_error(const char *path, int err)
{
	fprintf(stderr, "gpupoolctl: cannot open %s: %s\n", path, strerror(err));
	if (err == ENOENT)
		fprintf(stderr,
			"  The gpupool module is not loaded. Load it with:\n"
			"    sudo modprobe gpupool pool_size=<bytes>\n");
	else if (err == EACCES || err == EPERM)
		fprintf(stderr,
			"  You may not use %s. Ask an administrator to add you to\n"
			"  the group the udev rule gives it (see README: udev rule),\n"
			"  then log in again.\n", path);
}

static int cmd_info(void)
{
	struct gpupool_version v;
	int fd = open(DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		explain_open_error(DEV_PATH, errno);
		return 1;
	}
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, GPUPOOL_IOC_VERSION, &v) < 0) {
		fprintf(stderr, "gpupoolctl: GPUPOOL_IOC_VERSION: %s\n",
			strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	printf("module ABI:    %u.%u (accepts libraries from ABI %u)\n",
	       v.abi_major, v.abi_minor, v.min_lib_major);
	printf("gpupoolctl ABI: %u.%u\n", GPUPOOL_ABI_MAJOR, GPUPOOL_ABI_MINOR);
	if (v.abi_major != GPUPOOL_ABI_MAJOR)
		printf("warning: ABI major mismatch: upgrade the %s\n",
		       v.abi_major > GPUPOOL_ABI_MAJOR ? "gpupool tools" :
		       "gpupool module");
	printf("pool size:     %llu bytes\n", (unsigned long long)v.pool_size);
	printf("granularity:   %llu bytes\n", (unsigned long long)v.granularity);
	printf("NUMA nodes:    %u (mask %#llx)\n", v.nr_nodes,
	       (unsigned long long)v.node_mask);
	return 0;
}

static int cmd_stat(void)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(PROC_PATH, "r");

	if (!f) {
		explain_open_error(PROC_PATH, errno);
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpupoolctl COMMAND\n"
		"  info    ABI version and pool geometry of the loaded module\n"
		"  stat    the pool at a glance (/proc/gpupool)\n");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
	if (argc == 2 && !strcmp(argv[1], "stat"))
		return cmd_stat();
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
