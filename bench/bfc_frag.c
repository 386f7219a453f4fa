// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_frag.c - sections 2 to 4 of bfc_bench: fragmentation (peak reserved
 * with growth), failed allocations in fixed pools, the smallest fixed pool
 * a trace fits in; per placement policy.
 */
#include "bfc_bench.h"

uint64_t fixed_fails(enum kind k, uint32_t pol, uint64_t size,
		     const struct trace *t, struct rstate *s)
{
	return replay_once(k, pol, 0, size, t, s, NULL);
}

/* Smallest fixed pool (one region) that serves the whole trace without a
 * failure, from lo upward.  Small traces: every size on a fine grid, in
 * order (exact at that step).  Large ones: a coarse upward scan to the first
 * size with no failure, then bisection on the fine grid inside the last
 * coarse step (assumes failures do not come back within that step).
 */
uint64_t min_pool(enum kind k, uint32_t pol, const struct trace *t,
		  struct rstate *s, uint64_t lo, int exact,
		  uint64_t fine)
{
	uint64_t cap = 4 * lo, sz, coarse = 64 * fine, a, b;

	if (exact) {
		for (sz = lo; sz <= cap; sz += fine)
			if (!fixed_fails(k, pol, sz, t, s))
				return sz;
		return 0;
	}
	for (sz = lo; sz <= cap + coarse; sz += coarse)
		if (!fixed_fails(k, pol, sz, t, s))
			break;
	if (sz > cap + coarse)
		return 0;
	if (sz == lo)
		return lo;
	a = sz - coarse;	/* fails */
	b = sz;			/* serves */
	while (b - a > fine) {
		uint64_t m = a + (b - a) / 2 / fine * fine;

		if (m == a)
			m += fine;
		if (fixed_fails(k, pol, m, t, s))
			a = m;
		else
			b = m;
	}
	return b;
}

/* Is policy pol in sections 2-4?  ours' and TF's (the reference) always. */
int pol_on(uint32_t pol)
{
	return pol == cfg.policy || pol == BFC_POLICY_TF || pol == cfg.cand ||
	       (cfg.policies & (1u << pol));
}

int bench_frag(struct trace_result *res)
{
	const struct trace *t = res->t;
	struct rstate s, s2;
	struct pool p;
	uint32_t i, j, pol;
	int bad = 0, m;

	cur_trace = t->name;
	rstate_init(&s, t);
	rstate_init(&s2, t);

	/* Growth on demand, TF's Extend rule, the same for all; also check
	 * the structures with the trace's final chunks live.  The core with
	 * TF's placement first (its addresses are kept in s for the
	 * comparison below), then TF's baseline, then the other policies.
	 */
	for (i = 0; i <= NR_POL; i++) {
		enum kind k = i == 1 ? K_TF : K_CORE;
		struct rstate *st = i == 0 ? &s : &s2;
		uint64_t f;

		pol = i == 0 ? BFC_POLICY_TF : i - 1;
		if (k == K_CORE && !pol_on(pol))
			continue;
		f = replay_once(k, pol, 1, FIRST_REGION, t, st, &p);
		if (f)
			die(3, "%s: failures while growing", t->name);
		bad |= pool_check(&p, t->name) != 0;
		if (k == K_TF) {
			res->reserved[K_TF] = p.reserved;
			res->regions[K_TF] = p.regions;
		} else {
			res->pol_reserved[pol] = p.reserved;
			res->pol_regions[pol] = p.regions;
		}
		free_end_live(&p, st);
		bad |= pool_check(&p, t->name) != 0;
		pool_destroy(&p);
		if (k != K_TF)
			continue;
		/* Same placement (best fit, lowest address, same split
		 * rule): TF's and the core's with policy tf should put
		 * every chunk at the same address.
		 */
		res->placement_diff = -1;
		for (j = 0; j < t->nr_ids; j++)
			if (s.addr[j] != s2.addr[j]) {
				res->placement_diff = j;
				break;
			}
	}

	res->min_exact = res->peak_rounded <= QUICK_FRAG_MAX;
	res->min_step = round_up(res->peak_rounded / 4096, GRAN);
	for (m = 0; m < 3; m++)
		res->fixed_size[m] = round_up((uint64_t)(fixed_mult[m] *
					      (double)res->peak_rounded), GRAN);
	for (m = 0; m < 3; m++)
		res->fixed_fails[m][K_TF] = fixed_fails(K_TF, 0,
							res->fixed_size[m],
							t, &s);
	/* exact scan for small traces (the same bound as BENCH_QUICK's) */
	res->min_pool[K_TF] = min_pool(K_TF, 0, t, &s, res->peak_rounded,
				       res->min_exact, res->min_step);
	for (pol = 0; pol < NR_POL; pol++) {
		if (!pol_on(pol))
			continue;
		for (m = 0; m < 3; m++)
			res->pol_fixed_fails[m][pol] =
				fixed_fails(K_CORE, pol, res->fixed_size[m],
					    t, &s);
		res->pol_min_pool[pol] = min_pool(K_CORE, pol, t, &s,
						  res->peak_rounded,
						  res->min_exact,
						  res->min_step);
	}
	/* ours: the core with its policy */
	res->reserved[K_CORE] = res->pol_reserved[cfg.policy];
	res->regions[K_CORE] = res->pol_regions[cfg.policy];
	for (m = 0; m < 3; m++)
		res->fixed_fails[m][K_CORE] =
			res->pol_fixed_fails[m][cfg.policy];
	res->min_pool[K_CORE] = res->pol_min_pool[cfg.policy];
	rstate_free(&s);
	rstate_free(&s2);
	return bad;
}
