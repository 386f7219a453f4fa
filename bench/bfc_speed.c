// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_speed.c - section 1 of bfc_bench: the speed of trace replay.
 */
#include "bfc_bench.h"

/* Today's core (policy tf), free by address: P5's reference. */
double tf_core_ns(const struct trace_result *r)
{
	return r->ns[cfg.policy == BFC_POLICY_TF ? V_CORE_A : V_CORE_TFP];
}

const double fixed_mult[3] = { 1.0, 1.25, 1.5 };

#define MALLOC_SLOW_NS	1000000000ull

void bench_speed(struct trace_result *res)
{
	const struct trace *t = res->t;
	struct tsamples ts[NR_V];
	struct rstate s;
	struct pool p[V_MALLOC];
	uint64_t reps, mreps, took[NR_V];
	int v, r;

	cur_trace = t->name;
	rstate_init(&s, t);
	reps = reps_for(&s, cfg.ops_per_run);
	res->reps = (uint32_t)reps;
	pool_init(&p[V_CORE_H], K_CORE, 1, FIRST_REGION);
	pool_init(&p[V_CORE_A], K_CORE, 1, FIRST_REGION);
	pool_init(&p[V_TF], K_TF, 1, FIRST_REGION);
	pool_init_pol(&p[V_CORE_REF], K_CORE, cfg.cand, 1, FIRST_REGION);
	memset(&p[V_CORE_TFP], 0, sizeof(p[V_CORE_TFP]));
	if (variant_on(V_CORE_TFP))
		pool_init_pol(&p[V_CORE_TFP], K_CORE, BFC_POLICY_TF, 1,
			      FIRST_REGION);
	for (v = 0; v < NR_V; v++)
		ts_init(&ts[v], s.nb,
			(uint32_t)(cfg.runs * (reps / s.group)));

	/* Warm up (regions get added, caches and malloc's arenas fill),
	 * then runs in which the variants take turns, so that a noisy
	 * stretch of time hits them all alike.
	 */
	for (v = 0; v < NR_V; v++)
		if (variant_on(v) &&
		    do_replay(v, &p[v < V_MALLOC ? v : 0], t, &s, NULL) &&
		    v != V_MALLOC)
			die(3, "%s: %s failed allocations while growing",
			    t->name, vname[v]);
	mreps = reps;
	for (r = 0; r < cfg.runs; r++) {
		for (v = 0; v < NR_V; v++) {
			uint64_t t0 = now_ns(), fails;

			if (!variant_on(v))
				continue;
			fails = measure(v, &p[v < V_MALLOC ? v : 0], t, &s,
					v == V_MALLOC ? mreps : reps, &ts[v]);
			took[v] = now_ns() - t0;
			if (v == V_MALLOC)
				res->malloc_fails += fails;
			else if (fails)
				die(3, "%s: %s failed %llu allocations while growing",
				    t->name, vname[v], (unsigned long long)fails);
		}
		/* malloc is only a reference: where a run of it takes long
		 * and far longer than ours (a system call per block above
		 * glibc's mmap threshold, or NULL for every request of a
		 * trace larger than the machine), it replays one group a
		 * run from the second on, so that it does not take most of
		 * the benchmark's time on large traces.
		 */
		if (!r && took[V_MALLOC] > MALLOC_SLOW_NS &&
		    took[V_MALLOC] > MALLOC_SLOW * took[V_CORE_A])
			mreps = s.group;
	}
	res->malloc_reps = (uint32_t)mreps;
	for (v = 0; v < NR_V; v++)
		res->ns[v] = ts_estimate(&ts[v], s.ops_per_rep);
	for (v = 0; v < V_MALLOC; v++)
		pool_destroy(&p[v]);
	rstate_free(&s);
}
