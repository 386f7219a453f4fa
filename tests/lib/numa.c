// SPDX-License-Identifier: MIT
/*
 * numa: placement.  numa_node = N puts host pages on node N (checked with
 * get_mempolicy on the user backend); GP_NUMA_NEAR_GPU resolves the GPU's
 * PCI device (cudaDeviceGetPCIBusId -> /sys/bus/pci/devices/<id>/numa_node).
 */
#include "helpers.h"	/* first: it defines _GNU_SOURCE */

#include <ctype.h>
#include <dirent.h>
#include <linux/mempolicy.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/syscall.h>

static int page_node(void *p)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0, p, MPOL_F_NODE | MPOL_F_ADDR))
		return -2;
	return node;
}

TEST(node_zero)
{
	struct gp_options o;
	struct gp_info info;
	struct gp_ctx *ctx;
	char *p;

	/* A kernel without NUMA, or qemu-user (scripts/arm64-user.sh): no
	 * binding to ask for, so a strict one is refused.
	 */
	if (syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0) && errno == ENOSYS)
		SKIP(return, "no NUMA system calls here (get_mempolicy: ENOSYS)");
	gp_options_init(&o);
	o.numa_node = 0;
	o.flags = GP_OPEN_NUMA_STRICT;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	ASSERT_EQ(0, info.numa_node);
	ASSERT_EQ(0, gp_host_alloc(ctx, 8 << 20, 0, (void **)&p)) TH_LOG("%s", gp_last_error(ctx));
	p[0] = 1;
	p[(8 << 20) - 1] = 1;
	ASSERT_EQ(0, page_node(p));
	ASSERT_EQ(0, page_node(p + (8 << 20) - 1));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

/*
 * numa_node = 1: every page of a new buffer is on node 1, whether one
 * thread made its segment or two (a memfd each), and whether the pages
 * were written into the file or faulted in (the policy mbind sets is the
 * files').  Needs node 1 with memory: the NUMA VM.
 */
static void node_one_round(struct __test_metadata *_metadata, const char *threads)
{
	const size_t sizes[] = { 1000, 8u << 20, 64u << 20 };
	struct gp_options o;
	struct gp_ctx *ctx;
	unsigned int i;
	size_t off;
	char *p;

	setenv("GPUPOOL_POPULATE_THREADS", threads, 1);
	gp_options_init(&o);
	o.numa_node = 1;
	o.flags = GP_OPEN_NUMA_STRICT;
	OPEN(&o, &ctx);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ASSERT_EQ(0, gp_host_alloc(ctx, sizes[i], 0, (void **)&p))
			TH_LOG("%s", gp_last_error(ctx));
		for (off = 0; off < sizes[i]; off += 1u << 20)
			ASSERT_EQ(1, page_node(p + off))
				TH_LOG("a page of a %zu-byte buffer, %s thread(s)",
				       sizes[i], threads);
		ASSERT_EQ(1, page_node(p + sizes[i] - 1));
		ASSERT_EQ(0, gp_host_free(ctx, p));
	}
	gp_close(ctx);
	unsetenv("GPUPOOL_POPULATE_THREADS");
}

TEST(node_one_every_page)
{
	FILE *f = fopen("/sys/devices/system/node/node0/cpulist", "r");
	cpu_set_t all, one;
	int cpu = -1;

	if (f) {
		if (fscanf(f, "%d", &cpu) != 1)
			cpu = -1;
		fclose(f);
	}
	if (access("/sys/devices/system/node/node1", F_OK) || cpu < 0)
		SKIP(return, "needs NUMA nodes 0 (with a CPU) and 1");
	/* On a CPU of node 0, pages the policy did not place land there. */
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	node_one_round(_metadata, "1");
	node_one_round(_metadata, "2");
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
}

/* A node no machine here has: strict placement there fails at gp_open,
 * naming the nodes that can serve (on the kernel backend, the module's
 * sub-pools); preferred placement there opens and allocates anywhere.
 */
TEST(strict_node_that_cannot_serve)
{
	struct gp_options o;
	struct gp_ctx *ctx = NULL;
	char *p;
	int r;

	gp_options_init(&o);
	o.numa_node = 63;
	o.flags = GP_OPEN_NUMA_STRICT;
	r = gp_open(&o, &ctx);
	if (r == -ENODEV && backend_forced_kernel() && access("/dev/gpupool", F_OK))
		SKIP(return, "no /dev/gpupool");
	ASSERT_EQ(-ENODEV, r);
	ASSERT_EQ(NULL, ctx);
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "NUMA node 63"))
		TH_LOG("%s", gp_last_error(NULL));
	ASSERT_NE(NULL, strstr(gp_last_error(NULL), "can serve: 0"))
		TH_LOG("%s", gp_last_error(NULL));

	o.flags = 0;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_host_alloc(ctx, 1 << 20, 0, (void **)&p))
		TH_LOG("%s", gp_last_error(ctx));
	p[0] = 1;
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

#define NODE_HUGE	"/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages"

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static int write_str(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(v, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static int write_long(const char *path, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld\n", v);
	return write_str(path, buf);
}

/* Huge pages reserved on node 1 only, placement strict on node 0 (user
 * backend): the hugetlb memfd maps (its reservation is global) but its
 * pages cannot be faulted in on node 0.  The segment is made again of
 * normal pages on node 0.  Needs root and two nodes (the NUMA VM).
 */
TEST(strict_node_without_huge_pages)
{
	char p0[128], p1[128];
	struct gp_host_stats st;
	struct gp_options o;
	struct gp_ctx *ctx = NULL;
	long old0, old1;
	char *p = NULL;

	snprintf(p0, sizeof(p0), NODE_HUGE, 0);
	snprintf(p1, sizeof(p1), NODE_HUGE, 1);
	old0 = read_long(p0);
	old1 = read_long(p1);
	if (old0 < 0 || old1 < 0 || geteuid())
		SKIP(return, "needs root and NUMA nodes 0 and 1");
	if (backend_forced_kernel())
		SKIP(return, "a user backend test");
	ASSERT_EQ(0, write_long(p0, 0));
	ASSERT_EQ(0, write_long(p1, 32));	/* 64 MiB: more than a segment */
	if (read_long(p1) < 1) {
		write_long(p1, old1);
		write_long(p0, old0);
		SKIP(return, "no huge pages could be reserved on node 1");
	}
	gp_options_init(&o);
	o.backend = GP_BACKEND_USER;
	o.numa_node = 0;
	o.flags = GP_OPEN_NUMA_STRICT;
	/* EXPECT, not ASSERT, up to the end: the huge pages go back. */
	EXPECT_EQ(0, gp_open(&o, &ctx)) TH_LOG("%s", gp_last_error(NULL));
	if (ctx)
		EXPECT_EQ(0, gp_host_alloc(ctx, 2 << 20, 0, (void **)&p))
			TH_LOG("%s", gp_last_error(ctx));
	if (p) {
		p[0] = 1;
		p[(2 << 20) - 1] = 1;
		EXPECT_EQ(0, page_node(p));
		EXPECT_EQ(0, gp_host_stats(ctx, &st));
		EXPECT_EQ(0, st.segments_huge);
		EXPECT_EQ(0, gp_host_free(ctx, p));
	}
	gp_close(ctx);
	EXPECT_EQ(0, write_long(p1, old1));
	EXPECT_EQ(0, write_long(p0, old0));
}

#define CGROOT	"/sys/fs/cgroup"

/* A cgroup v2 hierarchy with the cpuset controller at CGROOT (mounted
 * here if nothing is: the VMs boot without one), or -1.
 */
static int cpuset_hierarchy(void)
{
	char buf[512] = "";
	FILE *f = fopen(CGROOT "/cgroup.controllers", "r");

	if (!f && mount("none", CGROOT, "cgroup2", 0, NULL) == 0)
		f = fopen(CGROOT "/cgroup.controllers", "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (!strstr(buf, "cpuset"))
		return -1;
	/* may be on already; the next write says if it is not */
	write_str(CGROOT "/cgroup.subtree_control", "+cpuset");
	return 0;
}

/* A process whose cpuset (cpuset.mems) leaves out node 1, which has
 * memory: strict placement there fails at gp_open, naming the cpuset and
 * the nodes it allows (the user backend; without that check gp_open
 * succeeded and the first allocation failed with "mbind to NUMA node 1:
 * Invalid argument").  Strict placement on node 0 still works.
 * Needs root, nodes 0 and 1 with memory and cgroup v2 with cpuset: the
 * NUMA VM.
 */
TEST(strict_node_outside_cpuset)
{
	char cg[128], procs[160], mems[160], pid[32];
	struct gp_options o;
	struct gp_ctx *ctx = NULL;
	char *p = NULL;
	int r;

	if (geteuid() || access("/sys/devices/system/node/node1", F_OK))
		SKIP(return, "needs root and NUMA nodes 0 and 1");
	if (backend_forced_kernel())
		SKIP(return, "a user backend test (gpupool.ko serves its own reserve)");
	if (cpuset_hierarchy())
		SKIP(return, "no cgroup v2 hierarchy with the cpuset controller");
	snprintf(cg, sizeof(cg), CGROOT "/gpupool-numa-%d", (int)getpid());
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(mems, sizeof(mems), "%s/cpuset.mems", cg);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	ASSERT_EQ(0, mkdir(cg, 0755)) TH_LOG("%s: %s", cg, strerror(errno));
	if (access(mems, F_OK)) {
		rmdir(cg);
		SKIP(return, "the cpuset controller is not enabled for " CGROOT "'s children");
	}
	/* EXPECT from here: the process goes back and the group goes. */
	EXPECT_EQ(0, write_str(mems, "0\n")) TH_LOG("%s: %s", mems, strerror(errno));
	EXPECT_EQ(0, write_str(procs, pid)) TH_LOG("%s: %s", procs, strerror(errno));

	gp_options_init(&o);
	o.backend = GP_BACKEND_USER;
	o.numa_node = 1;
	o.flags = GP_OPEN_NUMA_STRICT;
	r = gp_open(&o, &ctx);
	EXPECT_EQ(-ENODEV, r);
	EXPECT_EQ(NULL, ctx);
	EXPECT_NE(NULL, strstr(gp_last_error(NULL), "cpuset"))
		TH_LOG("%s", gp_last_error(NULL));
	EXPECT_NE(NULL, strstr(gp_last_error(NULL), "NUMA node 1"))
		TH_LOG("%s", gp_last_error(NULL));
	EXPECT_NE(NULL, strstr(gp_last_error(NULL), "can serve: 0)"))
		TH_LOG("%s", gp_last_error(NULL));
	gp_close(ctx);
	ctx = NULL;

	o.numa_node = 0;
	EXPECT_EQ(0, gp_open(&o, &ctx)) TH_LOG("%s", gp_last_error(NULL));
	if (ctx)
		EXPECT_EQ(0, gp_host_alloc(ctx, 1 << 20, 0, (void **)&p))
			TH_LOG("%s", gp_last_error(ctx));
	if (p) {
		p[0] = 1;
		EXPECT_EQ(0, page_node(p));
		EXPECT_EQ(0, gp_host_free(ctx, p));
	}
	gp_close(ctx);

	EXPECT_EQ(0, write_str(CGROOT "/cgroup.procs", pid));
	EXPECT_EQ(0, rmdir(cg)) TH_LOG("%s: %s", cg, strerror(errno));
}

/* The first PCI device of this machine and its node from sysfs. */
static int first_pci(char *id, size_t len)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	char path[400];
	FILE *f;
	int node = -1;

	if (!d)
		return -2;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			break;
	if (!e) {
		closedir(d);
		return -2;
	}
	snprintf(id, len, "%s", e->d_name);
	closedir(d);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", id);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%d", &node) != 1)
		node = -1;
	if (f)
		fclose(f);
	return node < 0 ? -1 : node;
}

TEST(near_gpu)
{
	struct gp_options o;
	struct gp_info info;
	struct gp_ctx *ctx;
	struct rt rt;
	char id[256], upper[256];
	int node;
	size_t i;
	void *p;

	RT_SETUP(&rt);
	NEED_DOUBLE(&rt);
	node = first_pci(id, sizeof(id));
	if (node == -2)
		SKIP(return, "no PCI devices in sysfs");
	for (i = 0; i <= strlen(id); i++)	/* the runtime says upper case */
		upper[i] = (char)toupper((unsigned char)id[i]);
	rt.set_pci_bus_id(upper);
	gp_options_init(&o);
	o.numa_node = GP_NUMA_NEAR_GPU;
	o.numa_device = 0;
	OPEN(&o, &ctx);
	ASSERT_EQ(0, gp_info(ctx, &info));
	TH_LOG("GPU at %s: node %d (sysfs says %d)", upper, info.numa_node, node);
	ASSERT_EQ(node, info.numa_node);
	ASSERT_EQ(1, rt_counts(&rt).calls[CDD_PCI_BUS_ID]);
	ASSERT_EQ(0, gp_host_alloc(ctx, 1 << 20, 0, &p));
	ASSERT_EQ(0, gp_host_free(ctx, p));
	gp_close(ctx);
}

TEST_HARNESS_MAIN
