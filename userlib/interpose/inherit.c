// SPDX-License-Identifier: MIT
/*
 * inherit.c - what a child of fork() inherits of its parents' pools: their
 * segments' ranges, still mapped here, so that a free or a query of a
 * parent's buffer answers as CUDA does in such a child (not initialized)
 * and never reaches this process's own pool; and the parents' contexts
 * themselves, never used here (a context must not be used in a child of
 * fork(): gpupool.h) but kept reachable, or a leak checker in the child
 * would report them.
 *
 * The ranges are taken in the parent, just before the fork, with the
 * pools' lock held across it, so that no other thread changes them
 * meanwhile and the child's copy of that lock is free.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "host/host.h"
#include "interpose.h"

struct ip_range {
	uint64_t lo, hi;
};

static struct {
	struct ip_range *r;	/* every parent's segments */
	size_t n;
	struct ip_range *next;	/* being taken, for the child to come */
	size_t next_n, next_cap;
	struct gp_ctx *parents[8];
	unsigned int nr_parents;
} IH;

static void ip_add_range(void *arg, uint64_t addr, uint64_t size)
{
	(void)arg;
	if (IH.next_n < IH.next_cap)
		IH.next[IH.next_n++] = (struct ip_range){ addr, addr + size };
}

static void ip_count_one(void *arg, uint64_t addr, uint64_t size)
{
	(void)addr;
	(void)size;
	(*(size_t *)arg)++;
}

/* Before fork(), ctx this process's pool (or NULL): its ranges and the
 * inherited ones, for the child.  Out of memory: the child will answer
 * for the parent's buffers as for anyone's (CUDA's answer, the same).
 */
void ip_inherit_prepare(struct gp_ctx *ctx)
{
	size_t n = 0;

	if (ctx) {
		gp_host_lock(ctx);
		gp_host_each_segment(ctx, ip_count_one, &n);
	}
	IH.next_cap = IH.n + n;
	IH.next_n = 0;
	IH.next = IH.next_cap ? malloc(IH.next_cap * sizeof(*IH.next)) : NULL;
	if (!IH.next)
		IH.next_cap = 0;
	if (IH.next_cap >= IH.n && IH.n) {
		memcpy(IH.next, IH.r, IH.n * sizeof(*IH.r));
		IH.next_n = IH.n;
	}
	if (ctx)
		gp_host_each_segment(ctx, ip_add_range, NULL);
}

void ip_inherit_parent(struct gp_ctx *ctx)
{
	if (ctx)
		gp_host_unlock(ctx);
	free(IH.next);
	IH.next = NULL;
}

void ip_inherit_child(struct gp_ctx *ctx)
{
	if (ctx) {
		gp_host_unlock(ctx);
		IH.parents[IH.nr_parents++ % 8] = ctx;
	}
	free(IH.r);
	IH.r = IH.next;
	IH.n = IH.next_n;
	IH.next = NULL;
}

int ip_inherited(const void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	size_t i;

	for (i = 0; i < IH.n; i++)
		if (a >= IH.r[i].lo && a < IH.r[i].hi)
			return 1;
	return 0;
}
