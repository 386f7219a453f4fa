// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_pool.c - the pools bfc_bench drives: one allocator, the core or the
 * TensorFlow-structured baseline (tf_bfc.cc), and the "system" that gives
 * it regions; their allocate and free wrappers are bfc_bench.h's, inline
 * in every replay.
 */
#include "bfc_bench.h"

/* The trace being replayed, for tf_region_fits()'s message. */
const char *cur_trace = "(setup)";

/* MemAvailable from /proc/meminfo in bytes; UINT64_MAX where unknown. */
static uint64_t mem_available(void)
{
	unsigned long long kb;
	char line[128];
	uint64_t avail = UINT64_MAX;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return avail;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			avail = (uint64_t)kb << 10;
			break;
		}
	fclose(f);
	return avail;
}

/* TensorFlow's AllocationRegion keeps a chunk handle (8 bytes) for every
 * 256 B of the region, written when the region is made: a region of
 * 100 GiB takes 3.1 GiB of this machine's memory.  A trace whose regions
 * need more than the machine has would be killed by the OOM killer (or
 * abort on std::bad_alloc) with no word of why: stop with one instead.
 * Handles under 64 MiB are not compared: section 4 makes thousands of
 * small regions, and reading /proc/meminfo for each would cost more than
 * replaying into it.
 */
static void tf_region_fits(uint64_t size)
{
	uint64_t need = size / GRAN * sizeof(uint64_t);
	uint64_t avail;

	if (need < (64ull << 20))
		return;
	avail = mem_available();
	if (need > avail)
		die(4, "%s: the TF-structured baseline cannot add a region of %.2f GiB: "
		    "TensorFlow's region keeps an 8-byte handle per %u B, %.2f GiB "
		    "for this one, and this machine has %.2f GiB available "
		    "(the trace's peak is too large for this machine)",
		    cur_trace, size / 1073741824.0, (unsigned)GRAN,
		    need / 1073741824.0, avail / 1073741824.0);
}

static void pool_add_region(struct pool *p, uint64_t size)
{
	uint64_t base = p->next_base;
	int r;

	if (p->kind == K_CORE) {
		r = bfc_add_region(p->core, base, size, NULL);
	} else {
		tf_region_fits(size);
		r = tf_bfc_add_region(p->tf, base, size);
		if (r == -12)
			die(4, "%s: the TF-structured baseline could not allocate "
			    "the handles of a region of %.2f GiB (one per %u B)",
			    cur_trace, size / 1073741824.0, (unsigned)GRAN);
	}
	if (r)
		die(3, "%s: adding a region of %llu bytes at 0x%llx failed: %d",
		    p->kind == K_CORE ? "core" : "tf", (unsigned long long)size,
		    (unsigned long long)base, r);
	p->next_base = round_up(base + size + REGION_GAP, REGION_GAP);
	p->reserved += size;
	p->regions++;
}

/* first: the fixed pool's size, or the first region when growing.  The
 * core places by policy pol.
 */
void pool_init_pol(struct pool *p, enum kind k, uint32_t pol,
		   int growth, uint64_t first)
{
	memset(p, 0, sizeof(*p));
	p->kind = k;
	p->policy = pol;
	p->growth = growth;
	p->next_base = BASE_ADDR;
	if (k == K_CORE) {
		struct bfc_params prm;
		int r;

		bfc_params_default(&prm, GRAN);
		prm.policy = pol;
		r = bfc_create(&p->core, &prm);
		if (r)
			die(3, "bfc_create: %d", r);
	} else {
		p->tf = tf_bfc_create(GRAN);
		if (!p->tf)
			die(3, "tf_bfc_create failed");
	}
	if (growth) {
		p->curr_region = first;
	} else {
		pool_add_region(p, round_up(first, GRAN));
	}
}

/* The core with ours' policy. */
void pool_init(struct pool *p, enum kind k, int growth, uint64_t first)
{
	pool_init_pol(p, k, cfg.policy, growth, first);
}

void pool_destroy(struct pool *p)
{
	if (p->core)
		bfc_destroy(p->core);
	if (p->tf)
		tf_bfc_destroy(p->tf);
	memset(p, 0, sizeof(*p));
}

/* TF's Extend(): double curr_region until it holds the request, add a
 * region of that size, and double again for next time unless it just did.
 */
void pool_extend(struct pool *p, uint64_t size)
{
	uint64_t rounded = round_up(size, GRAN);
	int increased = 0;

	while (rounded > p->curr_region) {
		p->curr_region *= 2;
		increased = 1;
	}
	pool_add_region(p, p->curr_region);
	if (!increased)
		p->curr_region *= 2;
}

uint64_t pool_check(struct pool *p, const char *what)
{
	uint64_t bad;
	char buf[512];

	if (p->kind == K_CORE) {
		bad = bfc_check(p->core, buf, sizeof(buf));
		if (bad)
			fprintf(stderr, "bfc_bench: core check after %s: %llu violation(s):\n%s\n",
				what, (unsigned long long)bad, buf);
	} else {
		bad = tf_bfc_check(p->tf);
		if (bad)
			fprintf(stderr, "bfc_bench: tf baseline check after %s: %llu violation(s)\n",
				what, (unsigned long long)bad);
	}
	return bad;
}
