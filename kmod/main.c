// SPDX-License-Identifier: GPL-2.0
/*
 * gpupool - a reserved pool of pinned host pages served as exact-size chunks
 * by a best-fit-with-coalescing allocator, through /dev/gpupool.
 *
 * main.c: module parameters, load and unload.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nodemask.h>
#include <linux/stat.h>
#include <linux/string.h>

#include "gpupool.h"

static char *pool_size = "256M";
module_param(pool_size, charp, 0444);
MODULE_PARM_DESC(pool_size,
		 "Bytes to reserve at load, split evenly over the nodes; K/M/G suffixes (default 256M; 0 with max_size: start empty)");

static char *max_size = "0";
module_param(max_size, charp, 0444);
MODULE_PARM_DESC(max_size,
		 "Growth limit: when full, add regions (doubling) up to this many bytes in all; K/M/G suffixes (default 0: no growth)");

static int nodes[GP_MAX_NID];
static unsigned int nr_nodes_param;
module_param_array_named(nodes, nodes, int, &nr_nodes_param, 0444);
MODULE_PARM_DESC(nodes,
		 "NUMA nodes to hold sub-pools, e.g. nodes=0,1 (default: every node with memory)");

static char *per_process_limit = "0";
module_param(per_process_limit, charp, 0444);
MODULE_PARM_DESC(per_process_limit,
		 "Most bytes of chunks one process may hold; ALLOC beyond it fails with EDQUOT; K/M/G suffixes (default 0: no limit)");

static ushort dev_mode = 0660;
module_param(dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode, "Permissions of /dev/gpupool (default 0660)");

static bool strict;
module_param(strict, bool, 0444);
MODULE_PARM_DESC(strict,
		 "Fail the load unless the whole pool_size can be reserved (default 0: reserve what can be had and warn)");

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest,
		 "Run the BFC core's randomized self-test at load; the load fails if it does (default 0)");

static char *policy = "";
module_param(policy, charp, 0444);
MODULE_PARM_DESC(policy,
		 "Chunk placement: tf (TensorFlow's BFC), exact, seg, half or age (default: tf); see docs/placement.md");

static char *cgroup_limits = "auto";
module_param(cgroup_limits, charp, 0444);
MODULE_PARM_DESC(cgroup_limits,
		 "Per-cgroup limits: auto (the dmem controller's dmem.max where the kernel has it, else the module's own, set with gpupoolctl limit), dmem or module (default auto)");

bool gp_huge_maps = GP_FOLIO_BLOCKS;
module_param_named(huge_maps, gp_huge_maps, bool, 0444);
MODULE_PARM_DESC(huge_maps,
		 "Keep the pool's 2 MiB blocks whole and map them with 2 MiB entries (PMD ones with 4 KiB pages, Linux 6.15 and later with transparent huge pages; arm64's contiguous PTEs with 16 or 64 KiB pages, 6.10 and later); a page pinned by others then holds back every chunk freed in its block (default 1 where the kernel can, else 0)");

u64 gp_per_process_limit;
u32 gp_policy = BFC_POLICY_DEFAULT;

/* Sizes above this are refused: no machine has that much memory, and a
 * node's block array (16 bytes per 2 MiB) must stay well inside what
 * kvcalloc accepts (INT_MAX bytes, else it WARNs).
 */
#define GP_SIZE_PARAM_MAX	(64ULL << 40)

/*
 * A size parameter: decimal digits with an optional K, M, G or T suffix
 * (either case), nothing after it, at most 64 TiB.  memparse() reads the
 * suffix, as the value of "1" and the suffix, not the whole parameter:
 * there it would take a leading 0 for octal (010 is 8) and 0x for hex,
 * take P and E too, and wrap silently past 2^64 (6.1's does: 16E is 0,
 * and max_size=0 means no growth).  kstrtoull() reads the digits, which
 * are checked against 64 TiB in the suffix's unit before they are
 * multiplied.
 */
static int gp_parse_size(const char *name, const char *s, u64 *out)
{
	size_t n = strspn(s, "0123456789");
	char num[24], unit_str[3] = { '1', s[n] };
	char *end;
	u64 v, unit;

	/* Digits, then nothing or one character: the suffix. */
	if (!n || n >= sizeof(num) || (s[n] && s[n + 1]))
		goto bad;
	memcpy(num, s, n);
	num[n] = '\0';
	/* 1 or the suffix's unit, up to T (memparse() takes P and E too). */
	unit = memparse(unit_str, &end);
	if (kstrtoull(num, 10, &v) || *end || unit > 1ULL << 40)
		goto bad;
	if (v > GP_SIZE_PARAM_MAX / unit) {
		pr_err("%s=%s: more than 64 TiB\n", name, s);
		return -EINVAL;
	}
	*out = v * unit;
	return 0;
bad:
	pr_err("%s=%s: not a size (decimal digits with an optional K, M, G or T suffix)\n",
	       name, s);
	return -EINVAL;
}

/* The nodes to serve, from nodes= or every node with memory the pool can
 * take: N_NORMAL_MEMORY, not N_MEMORY (a node whose memory is all
 * ZONE_MOVABLE, hot-plugged or CXL say, would reserve nothing).
 */
static int gp_pick_nodes(int *nids, unsigned int *nr)
{
	unsigned int i, j;
	int nid;

	if (!nr_nodes_param) {
		*nr = 0;
		for_each_node_state(nid, N_NORMAL_MEMORY) {
			if (nid >= GP_MAX_NID) {
				pr_warn("node %d: beyond the ABI's %d nodes; not used\n",
					nid, GP_MAX_NID);
				continue;
			}
			nids[(*nr)++] = nid;
		}
		return *nr ? 0 : -ENODEV;
	}

	for (i = 0; i < nr_nodes_param; i++) {
		nid = nodes[i];
		if (nid < 0 || nid >= GP_MAX_NID ||
		    !node_state(nid, N_NORMAL_MEMORY)) {
			pr_err("nodes: node %d has no memory the pool can use (or does not exist)\n",
			       nid);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (nids[j] == nid) {
				pr_err("nodes: node %d given twice\n", nid);
				return -EINVAL;
			}
		}
		nids[i] = nid;
	}
	*nr = nr_nodes_param;
	return 0;
}

static int gp_check_params(int *nids, unsigned int *nr, u64 *pool, u64 *max)
{
	int ret;

	if (dev_mode & ~0777) {
		pr_err("dev_mode=%#o: only permission bits (0777) allowed\n",
		       dev_mode);
		return -EINVAL;
	}
	if (gp_huge_maps && !GP_FOLIO_BLOCKS) {
		pr_err("huge_maps=1: this kernel cannot map chunks with 2 MiB entries (with %lu KiB pages that needs %s)\n",
		       PAGE_SIZE >> 10, PMD_SHIFT == GP_BLOCK_SHIFT ?
		       "vmf_insert_folio_pmd(), Linux 6.15, and CONFIG_TRANSPARENT_HUGEPAGE" :
		       "arm64's CONFIG_ARM64_CONTPTE and Linux 6.10");
		return -EINVAL;
	}
	ret = gp_parse_size("pool_size", pool_size, pool);
	if (!ret)
		ret = gp_parse_size("max_size", max_size, max);
	if (!ret)
		ret = gp_parse_size("per_process_limit", per_process_limit,
				    &gp_per_process_limit);
	if (ret)
		return ret;
	if (*policy) {
		ret = bfc_policy_parse(policy);
		if (ret < 0) {
			pr_err("policy=%s: expected tf, exact, seg, half or age\n",
			       policy);
			return -EINVAL;
		}
		gp_policy = ret;
	}
	if (*max && *max < *pool) {
		pr_err("max_size=%s is below pool_size=%s\n", max_size,
		       pool_size);
		return -EINVAL;
	}
	if (!*pool && !*max) {
		pr_err("pool_size=0 and no growth (max_size=0): nothing to serve\n");
		return -EINVAL;
	}
	return gp_pick_nodes(nids, nr);
}

static int __init gpupool_init(void)
{
	static int nids[GP_MAX_NID] __initdata;
	unsigned int nr;
	u64 pool, max;
	int ret;

	/* A block is whole pages, of any page size up to 2 MiB. */
	BUILD_BUG_ON(PAGE_SHIFT > GP_BLOCK_SHIFT);
	ret = gp_check_params(nids, &nr, &pool, &max);
	if (ret)
		return ret;

	if (selftest) {
		ret = gp_selftest();
		if (ret)
			return ret;
	}

	ret = gp_cg_init(cgroup_limits, max ?: pool);
	if (ret)
		return ret;

	ret = gp_pool_init(nids, nr, pool, max, strict);
	if (ret)
		goto out_cg;

	ret = gpupool_proc_init();
	if (ret)
		goto out_pool;

	ret = gpupool_dev_init(dev_mode);
	if (ret)
		goto out_proc;

	pr_info("loaded: %llu MiB on %u node(s), growth limit %llu MiB, per-process limit %llu MiB, cgroup limits: %s, huge maps: %s\n",
		gp_pool_size() >> 20, nr, max >> 20, gp_per_process_limit >> 20,
		gp_cg_dmem ? "dmem" : "module", gp_huge_maps ? "on" : "off");
	return 0;

out_proc:
	gpupool_proc_exit();
out_pool:
	gp_pool_exit();
out_cg:
	gp_cg_exit();
	return ret;
}

static void __exit gpupool_exit(void)
{
	gpupool_dev_exit();
	gpupool_proc_exit();
	gp_pool_exit();
	gp_cg_exit();
	pr_info("unloaded\n");
}

module_init(gpupool_init);
module_exit(gpupool_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Pinned host memory pool for GPU data pipelines");
MODULE_VERSION(GPUPOOL_VERSION);
