// SPDX-License-Identifier: MIT
/*
 * user_node.c - the user backend's NUMA placement: whether a strict node
 * can serve (the machine has memory there, this process's cpuset allows
 * it) and mbind() of each new mapping, through the raw system calls (no
 * libnuma), before any page exists, so that the pages are born on the
 * node.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "user.h"

/* A node list for a message: as much as fits, "..." where it was cut. */
static void gp_copy_list(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n < len) {
		memcpy(dst, src, n + 1);
		return;
	}
	memcpy(dst, src, len - 4);
	memcpy(dst + len - 4, "...", 4);
}

/* Whether node has memory by /sys/devices/system/node/has_memory ("0-1,3";
 * its start copied into list for messages).  True when that cannot be
 * read (no sysfs in a sandbox, no descriptor left): the open must not be
 * refused on a guess; mbind then says what is wrong at the first
 * allocation.  A kernel without NUMA has the file too ("0").
 */
static bool gp_node_has_memory(int node, char *list, size_t len)
{
	int fd = open("/sys/devices/system/node/has_memory", O_RDONLY | O_CLOEXEC);
	char buf[8192];	/* 1024 nodes, every other one: under 5000 bytes */
	const char *p = buf;
	ssize_t n = -1;
	char *end;
	long lo, hi;

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n < 0 || (size_t)n == sizeof(buf) - 1)
		return true;	/* unreadable, or longer than any machine's */
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	gp_copy_list(list, len, buf);
	while (*p) {
		lo = strtol(p, &end, 10);
		if (end == p)
			break;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			p = end;
		}
		if (node >= lo && node <= hi)
			return true;
		if (*p != ',')
			break;
		p++;
	}
	return false;
}

/* The node masks mbind() and get_mempolicy() take here: 1024 nodes. */
#define GP_NODE_MASK_LONGS	16
#define GP_LONG_BITS		(8 * (int)sizeof(long))

/* Whether this process's cpuset lets it have memory on node
 * (get_mempolicy(MPOL_F_MEMS_ALLOWED)); the allowed nodes as a list ("0-1,3")
 * into list.  True when the kernel cannot say (then mbind() reports what is
 * wrong at the first allocation, as before).
 */
static bool gp_node_allowed(int node, char *list, size_t len)
{
	unsigned long mask[GP_NODE_MASK_LONGS] = { 0 };
	int mode, i, lo = -1, bits = GP_NODE_MASK_LONGS * GP_LONG_BITS;
	size_t n = 0;

	if (syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)bits, NULL,
		    MPOL_F_MEMS_ALLOWED))
		return true;
	list[0] = 0;
	for (i = 0; i <= bits; i++) {
		bool set = i < bits && ((mask[i / GP_LONG_BITS] >> (i % GP_LONG_BITS)) & 1);

		if (set && lo < 0)
			lo = i;
		if (set || lo < 0)
			continue;
		/* a range lo..i-1 ends: as much as fits, like has_memory's */
		if (n < len)
			n += (size_t)snprintf(list + n, len - n, lo == i - 1 ?
					      "%s%d" : "%s%d-%d", n ? "," : "",
					      lo, i - 1);
		lo = -1;
	}
	if (n >= len && len > 4)
		memcpy(list + len - 4, "...", 4);
	return node < bits && ((mask[node / GP_LONG_BITS] >> (node % GP_LONG_BITS)) & 1);
}

/* GP_OPEN_NUMA_STRICT: the node must have memory this process may use. */
int gp_user_node_check(struct gp_ctx *ctx)
{
	char nodes[256];

	if (ctx->numa_node < 0 || !(ctx->opt.flags & GP_OPEN_NUMA_STRICT))
		return 0;
	if (!gp_node_has_memory(ctx->numa_node, nodes, sizeof(nodes)))
		return gp_strict_node_error(ctx, "this machine has no memory",
					    nodes);
	/* A cpuset can hold a process off a node that has memory; say so
	 * here rather than at the first allocation's mbind.
	 */
	if (!gp_node_allowed(ctx->numa_node, nodes, sizeof(nodes)))
		return gp_strict_node_error(ctx,
					    "this process's cpuset (cpuset.mems) allows no memory",
					    nodes);
	return 0;
}

/* mbind a fresh mapping to the context's node: preferred, or strict. */
int gp_user_bind(struct gp_ctx *ctx, void *addr, uint64_t size)
{
	unsigned long mask[GP_NODE_MASK_LONGS] = { 0 };
	int node = ctx->numa_node;
	int mode;

	if (node < 0)
		return 0;
	if (node >= (int)(sizeof(mask) * 8))
		return gp_err(ctx, -EINVAL, "NUMA node %d is out of range", node);
	mask[node / GP_LONG_BITS] = 1ul << (node % GP_LONG_BITS);
	mode = (ctx->opt.flags & GP_OPEN_NUMA_STRICT) ? MPOL_BIND : MPOL_PREFERRED;
	if (syscall(SYS_mbind, addr, size, mode, mask, sizeof(mask) * 8, 0)) {
		int e = errno;

		if (mode == MPOL_BIND)
			return gp_err(ctx, -e, "mbind to NUMA node %d: %s", node,
				      strerror(e));
		gp_debug(ctx, "mbind to node %d: %s (ignored)", node, strerror(e));
	}
	return 0;
}
