// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_targets.c - section 6 of bfc_bench: the issue's targets (T1-T4)
 * and the placement targets (P1-P5), each row PASS or MISS, and their
 * tally.
 */
#include "bfc_bench.h"

static const char *pf(int pass)
{
	return pass ? "PASS" : "MISS";
}

static void target_row(struct tally *t, enum reading r, const char *label,
		       const char *value, int pass, const char *note)
{
	t->rows[r]++;
	t->pass[r] += pass != 0;
	printf("      %-7s %-36s %10s   %s%s%s\n",
	       r == R_ISSUE ? "issue" : "beyond", label, value, pf(pass),
	       note ? "   " : "", note ? note : "");
}

/* T1's rows: at most 50 ns an operation. */
void t1_row(struct tally *t, enum reading r, const char *label,
	    double ns, const char *note)
{
	char v[32];

	snprintf(v, sizeof(v), "%.1f ns", ns);
	target_row(t, r, label, v, ns <= 50.0, note);
}

void target_ratio(struct tally *t, enum reading r, const char *label,
		  double x, int pass, const char *note)
{
	char v[32];

	snprintf(v, sizeof(v), "%.2fx   ", x);
	target_row(t, r, label, v, pass, note);
}

void target_flag(struct tally *t, enum reading r, const char *label,
		 int pass)
{
	target_row(t, r, label, "", pass, NULL);
}

/* Smallest fixed pool of policy pol against TF's on the traces of the run
 * (section 4): how many strictly below, and the worst excess (%).
 */
static void pol_vs_tf(const struct trace_result *res, int n, uint32_t pol,
		      int *below, int *total, double *worst, const char **w)
{
	int i;

	*below = 0;
	*total = 0;
	*worst = -INFINITY;
	*w = "";
	for (i = 0; i < n; i++) {
		const struct trace_result *r = &res[i];
		double x;

		if (r->frag_skipped || !r->min_pool[K_TF])
			continue;
		(*total)++;
		/* not found (> 4x the peak) is a loss */
		x = r->pol_min_pool[pol] ?
		    100.0 * ((double)r->pol_min_pool[pol] /
			     (double)r->min_pool[K_TF] - 1) : INFINITY;
		*below += x < 0;
		if (x > *worst) {
			*worst = x;
			*w = r->t->name;
		}
	}
}

/* The placement targets, on section 4's smallest fixed pools. */
void placement_targets(struct tally *tl, const struct trace_result *res,
		       int n)
{
	const char *name = bfc_policy_name(cfg.cand), *w;
	int below, total, i, found = 0;
	double worst;
	uint32_t pol;
	char v[48], l[96];

	pol_vs_tf(res, n, cfg.cand, &below, &total, &worst, &w);
	printf("    P1-P5 measure the candidate policy '%s' (--candidate); ours is '%s'%s.\n",
	       name, bfc_policy_name(cfg.policy),
	       cfg.policy == BFC_POLICY_DEFAULT ?
	       ", the library's and the module's default" : " (--policy)");
	printf("P1  policy '%s': smallest fixed pool strictly below TF on >= 5 of 7 traces (here: >= 5/7 of them)\n",
	       name);
	snprintf(v, sizeof(v), "%d of %d", below, total);
	target_row(tl, R_ISSUE, "traces below TF", v,
		   total && below * 7 >= total * 5, NULL);
	printf("P2  policy '%s': smallest fixed pool never above TF's by more than 1%%\n", name);
	if (total)
		snprintf(v, sizeof(v), "%+.2f%%", worst);
	else
		snprintf(v, sizeof(v), "none");
	snprintf(l, sizeof(l), "(worst: %s)", w);
	target_row(tl, R_ISSUE, "worst excess over TF", v, worst <= 1.0, l);
	for (i = 0; i < n; i++) {
		const struct trace_result *r = &res[i];

		if (r->frag_skipped || !strstr(r->t->name, "hta_ddp_v100_rank1"))
			continue;
		printf("P3  policy '%s': hta_ddp_v100_rank1's smallest fixed pool <= +10%% over its peak\n", name);
		snprintf(v, sizeof(v), "%+.2f%%", r->pol_min_pool[cfg.cand] ?
			 extra_pct(r->pol_min_pool[cfg.cand], r) : INFINITY);
		snprintf(l, sizeof(l), "(TF %+.2f%%)", extra_pct(r->min_pool[K_TF], r));
		target_row(tl, R_ISSUE, "hta_ddp_v100_rank1 extra", v,
			   r->pol_min_pool[cfg.cand] &&
			   extra_pct(r->pol_min_pool[cfg.cand], r) <= 10.0, l);
	}
	for (i = 0; i < n; i++) {
		const struct trace_result *r = &res[i];
		uint64_t ours, tf;

		if (r->frag_skipped || !is_unit_peak(r) || !r->min_pool[K_TF])
			continue;
		if (!found++)
			printf("P4  policy '%s': each MiniMalloc trace's arena beyond 1 MiB down by >= 1/4 from TF's\n", name);
		tf = r->min_pool[K_TF] - (1ull << 20);
		ours = r->pol_min_pool[cfg.cand] ?
		       r->pol_min_pool[cfg.cand] - (1ull << 20) : UINT64_MAX;
		snprintf(v, sizeof(v), "%llu KiB", (unsigned long long)(ours >> 10));
		snprintf(l, sizeof(l), "(TF %llu KiB, %+.1f%%)",
			 (unsigned long long)(tf >> 10),
			 tf ? 100.0 * ((double)ours / (double)tf - 1) : 0.0);
		target_row(tl, R_ISSUE, r->t->name, v,
			   ours != UINT64_MAX && 4 * ours <= 3 * tf, l);
	}
	printf("    for information, every policy's smallest fixed pool against TF's:\n");
	for (pol = 0; pol < NR_POL; pol++) {
		if (!pol_on(pol))
			continue;
		pol_vs_tf(res, n, pol, &below, &total, &worst, &w);
		if (!total)
			continue;
		printf("      %-6s below TF on %d of %d traces, worst %+.2f%% (%s)%s\n",
		       bfc_policy_name(pol), below, total, worst, w,
		       worst <= 1.0 ? "" : ": loses by > 1%, cannot be the default");
	}
}
