// SPDX-License-Identifier: GPL-2.0
/*
 * numa: one sub-pool per node (vm/run-vm.sh --numa boots two).  A chunk
 * asked for on a node (GPUPOOL_ALLOC_NODE) comes from that node's pages
 * (move_pages(2) says where each page is) or fails, never from elsewhere;
 * without the flag it comes from the caller's node first and from the
 * others when that one is full.  nodes= limits the sub-pools.  Skips on a
 * machine with one node.
 */
#define _GNU_SOURCE
#include <sched.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

static int nr_mem_nodes(void)
{
	char buf[256];
	int a, b;

	if (gp_read_file("/sys/devices/system/node/has_memory", buf,
			 sizeof(buf)) <= 0)
		return 1;
	if (sscanf(buf, "%d-%d", &a, &b) == 2)
		return b - a + 1;
	return 1;
}

/* Every page of [p, p + len) on node nid, by move_pages(2) with no target. */
static int pages_on_node(void *p, size_t len, int nid)
{
	size_t i, n = len / 4096;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status)), ok = 1;

	for (i = 0; i < n; i++)
		pages[i] = (char *)p + i * 4096;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		ok = -errno;
	for (i = 0; ok == 1 && i < n; i++)
		if (status[i] != nid)
			ok = 0;
	free(pages);
	free(status);
	return ok;
}

/* Run on the CPUs of node nid only. */
static int bind_to_node(int nid)
{
	char path[64], buf[256];
	cpu_set_t set;
	int a, b, c;
	char *s;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", nid);
	if (gp_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	CPU_ZERO(&set);
	for (s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
		if (sscanf(s, "%d-%d", &a, &b) != 2)
			b = a = atoi(s);
		for (c = a; c <= b; c++)
			CPU_SET(c, &set);
	}
	return sched_setaffinity(0, sizeof(set), &set);
}

FIXTURE(numa) {
	int fd;
};

FIXTURE_SETUP(numa)
{
	GP_REQUIRE();
	if (nr_mem_nodes() < 2)
		GP_SKIP("one NUMA node (boot with vm/run-vm.sh --numa)");
	ASSERT_EQ(0, gp_load("pool_size=32M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(numa)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_F(numa, sub_pools)
{
	struct gpupool_pool_stats nodes[4];
	struct gpupool_version v;
	struct gpupool_stats st;

	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(self->fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(2, v.nr_nodes);
	EXPECT_EQ(3, v.node_mask);
	ASSERT_EQ(0, gp_stats(self->fd, &st, nodes, 4));
	ASSERT_EQ(2, st.nr_nodes);
	/* Split evenly. */
	EXPECT_EQ(16 * MiB, nodes[0].total);
	EXPECT_EQ(16 * MiB, nodes[1].total);
	EXPECT_EQ(0, nodes[0].node);
	EXPECT_EQ(1, nodes[1].node);
	EXPECT_EQ(16384, gp_proc_num("Node1PoolTotal"));
}

TEST_F(numa, strict_node)
{
	struct gpupool_alloc a;
	int nid;
	char *p;

	for (nid = 0; nid < 2; nid++) {
		ASSERT_EQ(0, gp_alloc_ex(self->fd, 3 * MiB, GPUPOOL_ALLOC_NODE,
					 nid, &a));
		EXPECT_EQ(nid, (int)a.chunk_node);
		p = gp_map(self->fd, a.handle, a.chunk_size);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_EQ(1, pages_on_node(p, a.chunk_size, nid))
			TH_LOG("chunk for node %d has pages elsewhere", nid);
		munmap(p, a.chunk_size);
	}
	/* Node 1 full: strict requests fail instead of spilling over. */
	ASSERT_EQ(0, gp_alloc_ex(self->fd, 13 * MiB, GPUPOOL_ALLOC_NODE, 1, &a));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, 1, &a));
	EXPECT_EQ(0, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, 0, &a));
	EXPECT_EQ(0, (int)a.chunk_node);
	EXPECT_EQ(-ENODEV, gp_alloc_ex(self->fd, 4096, GPUPOOL_ALLOC_NODE, 2, &a));
}

static int alloc_local(void *arg)
{
	int nid = *(int *)arg, fd;
	struct gpupool_alloc a;
	char *p;

	if (bind_to_node(nid))
		return 10;
	fd = gp_open_dev();
	if (fd < 0 || gp_alloc_ex(fd, MiB, 0, 0, &a))
		return 11;
	if ((int)a.chunk_node != nid)
		return 12;
	p = gp_map(fd, a.handle, MiB);
	if (p == MAP_FAILED || pages_on_node(p, MiB, nid) != 1)
		return 13;
	/* Fill the local sub-pool: the next chunk spills to the other node. */
	if (gp_alloc_ex(fd, 15 * MiB, 0, 0, &a) || (int)a.chunk_node != nid)
		return 14;
	if (gp_alloc_ex(fd, MiB, 0, 0, &a) || (int)a.chunk_node == nid)
		return 15;
	return 0;
}

TEST_F(numa, prefers_local_node)
{
	int nid, rc;

	for (nid = 0; nid < 2; nid++) {
		/* The previous child's chunks go back through the zeroing
		 * worker, and until they are back an allocation that would
		 * have to wait for them takes another node's memory first
		 * (gp_pool_alloc()): the local node must be all free here.
		 * (Without this wait, child 1's 15 MiB went to node 0 once
		 * in a fresh-clone run, while child 0's spilled MiB on node 1
		 * was still being zeroed.)
		 */
		ASSERT_EQ(0, gp_wait_quiet(20000, 0));
		rc = gp_run_child(alloc_local, &nid);
		EXPECT_EQ(0, rc) TH_LOG("node %d: step %d failed", nid, rc);
	}
}

TEST(nodes_param)
{
	struct gpupool_version v;
	struct gpupool_alloc a;
	int fd;

	GP_REQUIRE();
	if (nr_mem_nodes() < 2)
		GP_SKIP("one NUMA node (boot with vm/run-vm.sh --numa)");
	ASSERT_EQ(0, gp_load("pool_size=8M nodes=1"));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_EQ(1, v.nr_nodes);
	EXPECT_EQ(2, v.node_mask);
	EXPECT_EQ(8 * MiB, v.pool_size);
	/* From node 1 whichever node the caller runs on. */
	ASSERT_EQ(0, gp_alloc_ex(fd, 4096, 0, 0, &a));
	EXPECT_EQ(1, (int)a.chunk_node);
	EXPECT_EQ(-ENODEV, gp_alloc_ex(fd, 4096, GPUPOOL_ALLOC_NODE, 0, &a));
	close(fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
	/* Twice the same node is refused. */
	EXPECT_EQ(-EINVAL, gp_load("pool_size=8M nodes=1,1"));
}

TEST_HARNESS_MAIN
