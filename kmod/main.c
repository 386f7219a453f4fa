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
#include "bfc_size.h"

/*
 * Every parameter is read strictly, and a bad value fails the load with
 * -EINVAL and a line naming the parameter, the value and what it takes
 * (docs/operations.md).  An empty value is the default, as if the
 * parameter were not given.  The sizes are strings read at load by the
 * one size reader (core/bfc_size.h); the booleans, dev_mode and nodes
 * have parameter operations of their own below: the kernel's would take
 * "1junk" for true (kstrtobool() reads one or two characters), a sign,
 * hexadecimal and a line break in a number, and say nothing of what is
 * accepted.  Each takes its name alone too (NOARG), so that it can say
 * so itself: a yes for the booleans, refused for the others.
 */
static int gp_param_set_bool(const char *val, const struct kernel_param *kp);
static int gp_param_set_mode(const char *val, const struct kernel_param *kp);
static int gp_param_set_nodes(const char *val, const struct kernel_param *kp);
static int gp_param_get_nodes(char *buf, const struct kernel_param *kp);
static int gp_param_set_ms(const char *val, const struct kernel_param *kp);

static const struct kernel_param_ops gp_bool_ops = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = gp_param_set_bool,
	.get = param_get_bool,
};

static const struct kernel_param_ops gp_mode_ops = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = gp_param_set_mode,
	.get = param_get_ushort,
};

static const struct kernel_param_ops gp_ms_ops = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = gp_param_set_ms,
	.get = param_get_uint,
};

static const struct kernel_param_ops gp_nodes_ops = {
	.flags = KERNEL_PARAM_OPS_FL_NOARG,
	.set = gp_param_set_nodes,
	.get = gp_param_get_nodes,
};

static char *pool_size = "256M";
module_param(pool_size, charp, 0444);
MODULE_PARM_DESC(pool_size,
		 "Bytes to reserve at load, split evenly over the nodes; a K, M, G or T suffix, or KiB, MiB, GiB or TiB (default 256M; 0 with max_size: start empty)");

static char *max_size = "0";
module_param(max_size, charp, 0444);
MODULE_PARM_DESC(max_size,
		 "Growth limit: when full, add regions (doubling) up to this many bytes in all; a K, M, G or T suffix, or KiB, MiB, GiB or TiB (default 0: no growth)");

static int nodes[GP_MAX_NID];
static unsigned int nr_nodes_param;
module_param_cb(nodes, &gp_nodes_ops, NULL, 0444);
MODULE_PARM_DESC(nodes,
		 "NUMA nodes to hold sub-pools, e.g. nodes=0,1 (default: every node with memory)");

static char *per_process_limit = "0";
module_param(per_process_limit, charp, 0444);
MODULE_PARM_DESC(per_process_limit,
		 "Most bytes of chunks one process may hold; ALLOC beyond it fails with EDQUOT; a K, M, G or T suffix, or KiB, MiB, GiB or TiB (default 0: no limit)");

static ushort dev_mode = 0660;
module_param_cb(dev_mode, &gp_mode_ops, &dev_mode, 0444);
MODULE_PARM_DESC(dev_mode, "Permissions of /dev/gpupool, in octal (default 0660)");

static bool strict;
module_param_cb(strict, &gp_bool_ops, &strict, 0444);
MODULE_PARM_DESC(strict,
		 "Fail the load unless the whole pool_size can be reserved (default 0: reserve what can be had and warn)");

static bool selftest;
module_param_cb(selftest, &gp_bool_ops, &selftest, 0444);
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
module_param_cb(huge_maps, &gp_bool_ops, &gp_huge_maps, 0444);
MODULE_PARM_DESC(huge_maps,
		 "Keep the pool's 2 MiB blocks whole and map them with 2 MiB entries (PMD ones with 4 KiB pages, Linux 6.15 and later with transparent huge pages; arm64's contiguous PTEs with 16 or 64 KiB pages, 6.10 and later); a page pinned by others then holds back every chunk freed in its block (default 1 where the kernel can, else 0)");

unsigned int gp_reclaim_wait_ms = 1000;
module_param_cb(reclaim_wait_ms, &gp_ms_ops, &gp_reclaim_wait_ms, 0644);
MODULE_PARM_DESC(reclaim_wait_ms,
		 "How long an allocation the pool or a cgroup limit refuses waits, at most, for the holders of idle cached chunks it asks to give some back, before its one retry; at most 60000; 0: never ask (default 1000)");

static char *reclaim_rate = "1G";
module_param(reclaim_rate, charp, 0444);
MODULE_PARM_DESC(reclaim_rate,
		 "Bytes per second a process may be asked to give back, sustained (up to the pool's size at once after a quiet spell); a K, M, G or T suffix, or KiB, MiB, GiB or TiB (default 1G; 0: no bound)");

u64 gp_per_process_limit;
u64 gp_reclaim_rate;
u32 gp_policy = BFC_POLICY_DEFAULT;

/* Sizes above this are refused: no machine has that much memory, and a
 * node's block array (16 bytes per 2 MiB) must stay well inside what
 * kvcalloc accepts (INT_MAX bytes, else it WARNs).
 */
#define GP_SIZE_PARAM_MAX	(64ULL << 40)

/* A size parameter (core/bfc_size.h), at most 64 TiB; empty: def. */
static int gp_parse_size(const char *name, const char *s, const char *def,
			 u64 *out)
{
	char msg[BFC_SIZE_MSG_LEN];

	if (!bfc_size_parse(name, *s ? s : def, GP_SIZE_PARAM_MAX, out, msg,
			    sizeof(msg)))
		return 0;
	pr_err("%s\n", msg);
	return -EINVAL;
}

/* strict, selftest, huge_maps: 1, y, Y, on or 0, n, N, off; alone: 1. */
static int gp_param_set_bool(const char *val, const struct kernel_param *kp)
{
	static const char *const words[] = { "0", "n", "N", "off",
					     "1", "y", "Y", "on" };
	unsigned int i;

	if (!val || !*val) {
		if (!val)
			*(bool *)kp->arg = true;
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		if (!strcmp(val, words[i])) {
			*(bool *)kp->arg = i >= ARRAY_SIZE(words) / 2;
			return 0;
		}
	}
	pr_err("%s=%.64s: expected 1, y, Y or on (yes), or 0, n, N or off (no)\n",
	       kp->name, val);
	return -EINVAL;
}

/* dev_mode: permission bits in octal, at most 0777. */
static int gp_param_set_mode(const char *val, const struct kernel_param *kp)
{
	const char *p = val;
	unsigned int v = 0;

	if (val && !*val)
		return 0;
	while (p && *p >= '0' && *p <= '7' && v <= 0777)
		v = v * 8 + (*p++ - '0');
	if (!p || p == val || *p || v > 0777) {
		pr_err("%s=%.64s: expected permission bits in octal, at most 0777 (as 0660)\n",
		       kp->name, val ? val : "");
		return -EINVAL;
	}
	*(ushort *)kp->arg = v;
	return 0;
}

/*
 * reclaim_wait_ms: decimal milliseconds, at most GP_WAIT_MS_MAX (the
 * wait holds an allocation in the kernel).  Writable while loaded, where
 * one line break after the number is the end of what echo wrote.
 */
#define GP_WAIT_MS_MAX	60000
static int gp_param_set_ms(const char *val, const struct kernel_param *kp)
{
	const char *p = val;
	unsigned int v = 0;

	if (val && !*val)
		return 0;
	while (p && *p >= '0' && *p <= '9' && v <= GP_WAIT_MS_MAX)
		v = v * 10 + (*p++ - '0');
	if (p && p != val && *p == '\n' && !p[1] &&
	    THIS_MODULE->state == MODULE_STATE_LIVE)
		p++;
	if (!p || p == val || *p || v > GP_WAIT_MS_MAX) {
		val = val ? val : "";
		pr_err("%s=%*pE: expected milliseconds, decimal digits, at most %u\n",
		       kp->name, (int)strnlen(val, 64), val, GP_WAIT_MS_MAX);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = v;
	return 0;
}

/* nodes: decimal node numbers separated by commas ("0,1"). */
static int gp_param_set_nodes(const char *val, const struct kernel_param *kp)
{
	const char *p = val;
	unsigned int n = 0;
	int v;

	while (p && *p) {
		for (v = 0; *p >= '0' && *p <= '9' && v < GP_MAX_NID; p++)
			v = v * 10 + (*p - '0');
		if (n == GP_MAX_NID || p == val || (*p && *p != ',') ||
		    (*p == ',' && !p[1]) || p[-1] == ',')
			goto bad;
		nodes[n++] = v;
		p += *p == ',';
	}
	if (!p)
		goto bad;
	nr_nodes_param = n;
	return 0;
bad:
	pr_err("%s=%.64s: expected NUMA node numbers below %d, decimal, separated by commas (as nodes=0,1)\n",
	       kp->name, val ? val : "", GP_MAX_NID);
	return -EINVAL;
}

static int gp_param_get_nodes(char *buf, const struct kernel_param *kp)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < nr_nodes_param; i++)
		n += scnprintf(buf + n, PAGE_SIZE - n, "%s%d", i ? "," : "",
			       nodes[i]);
	return n + scnprintf(buf + n, PAGE_SIZE - n, "\n");
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

	if (gp_huge_maps && !GP_FOLIO_BLOCKS) {
		pr_err("huge_maps=1: this kernel cannot map chunks with 2 MiB entries (with %lu KiB pages that needs %s)\n",
		       PAGE_SIZE >> 10, PMD_SHIFT == GP_BLOCK_SHIFT ?
		       "vmf_insert_folio_pmd(), Linux 6.15, and CONFIG_TRANSPARENT_HUGEPAGE" :
		       "arm64's CONFIG_ARM64_CONTPTE and Linux 6.10");
		return -EINVAL;
	}
	ret = gp_parse_size("pool_size", pool_size, "256M", pool);
	if (!ret)
		ret = gp_parse_size("max_size", max_size, "0", max);
	if (!ret)
		ret = gp_parse_size("per_process_limit", per_process_limit, "0",
				    &gp_per_process_limit);
	if (!ret)
		ret = gp_parse_size("reclaim_rate", reclaim_rate, "1G",
				    &gp_reclaim_rate);
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

	ret = gp_cg_init(*cgroup_limits ? cgroup_limits : "auto", max ?: pool);
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

	pr_info("loaded: %llu MiB on %u node(s), growth limit %llu MiB, per-process limit %llu MiB, cgroup limits: %s, huge maps: %s, reclaim: %u ms at %llu MiB/s\n",
		gp_pool_size() >> 20, nr, max >> 20, gp_per_process_limit >> 20,
		gp_cg_dmem ? "dmem" : "module", gp_huge_maps ? "on" : "off",
		gp_reclaim_wait_ms, gp_reclaim_rate >> 20);
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
