// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_report.c - bfc_bench's output: the header, the tables of sections
 * 1 to 4, the ratios and descriptions they are printed with.
 */
#include "bfc_bench.h"

void rule(void)
{
	puts("--------------------------------------------------------------------------------------------------------");
}

void print_loadavg(const char *when)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l1, l5;

	if (f && fscanf(f, "%lf %lf", &l1, &l5) == 2)
		printf("  load average %s: %.2f (1 min), %.2f (5 min) -- other work on this machine inflates\n"
		       "  absolute times; ratios measured in the same run are steadier.\n",
		       when, l1, l5);
	if (f)
		fclose(f);
}

void print_header(int nr_traces)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256], cpu[200] = "unknown";

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10)) {
				char *c = strchr(line, ':');

				if (c) {
					snprintf(cpu, sizeof(cpu), "%s", c + 2);
					cpu[strcspn(cpu, "\n")] = '\0';
				}
				break;
			}
		fclose(f);
	}
	printf("BFC core benchmark%s\n", cfg.quick ? " (BENCH_QUICK: smoke run, figures not meaningful)" : "");
	printf("  cpu: %s; clock: CLOCK_MONOTONIC; %d timed runs after a warm-up, medians (see each section)\n",
	       cpu, cfg.runs);
	printf("  ours: core/bfc*.c built -O2, no sanitizers, %s, placement policy '%s' (the library's\n"
	       "  and the module's default: '%s'); TF: bench/tf_bfc.cc (TensorFlow's BFC structures, -O2);\n",
#ifdef NDEBUG
	       "NDEBUG (BFC_ASSERT off)",
#else
	       "BFC_ASSERT on (assert)",
#endif
	       bfc_policy_name(cfg.policy),
	       bfc_policy_name(BFC_POLICY_DEFAULT));
	printf("  malloc: the C library's malloc/free (speed only; the bench never touches the memory; glibc serves\n"
	       "  requests above its mmap threshold (dynamic, up to 32 MiB) with mmap/munmap system calls).\n");
	printf("  granularity %llu B for both allocators, TF's defaults (split when chunk >= 2x request or leftover >= 128 MiB;\n"
	       "  the core's policies other than tf always split);\n",
	       GRAN);
	printf("  addresses are abstract: no memory is mapped or touched.  %d trace(s), seed %llu.\n",
	       nr_traces, (unsigned long long)cfg.seed);
	print_loadavg("at start");
}

/* TF / ours(addr), both less the replay loop's own cost. */
double net_ratio(const struct trace_result *r)
{
	return (r->ns[V_TF] - r->ns[V_LOOP]) /
	       (r->ns[V_CORE_A] - r->ns[V_LOOP]);
}

void print_speed(struct trace_result *res, int n)
{
	int i;

	printf("\n1. Replay speed: ns per operation (allocate or free)\n");
	printf("   %d runs after a warm-up; in each run every variant in turn replays the trace 'reps' times on the\n"
	       "   same allocator (growth on demand; the warm-up added the regions).  Chunks a trace leaves live are\n"
	       "   freed after each replay and count as operations.  Timing: every block of %u operations (short\n"
	       "   traces: every group of whole replays of about that many) is timed on each replay; ns/op = sum\n"
	       "   over blocks of the block's median time / operations per replay (robust to preemption).\n"
	       "   ours(handle) frees by handle, ours(addr) and TF free by address.  Ratios > 1: ours faster.\n"
	       "   loop: the same replay loop calling empty out-of-line allocate and free functions, the part of\n"
	       "   every column that is no allocator's; 'net' divides TF's ns/op minus loop by ours(addr)'s minus loop.\n",
	       cfg.runs, BLOCK_OPS);
	rule();
	printf("%-20s %7s %5s %12s %10s %7s %7s %5s %8s %8s %7s\n", "trace", "ops/rep",
	       "reps", "ours(handle)", "ours(addr)", "TF", "malloc", "loop",
	       "TF/ours", "malloc/", "TF/ours");
	printf("%-20s %7s %5s %12s %10s %7s %7s %5s %8s %8s %7s\n", "", "", "", "ns/op",
	       "ns/op", "ns/op", "ns/op", "ns/op", "(addr)", "ours", "net");
	rule();
	for (i = 0; i < n; i++) {
		struct trace_result *r = &res[i];

		printf("%-20.20s %7llu %5u %12.1f %10.1f %7.1f %7.1f %5.1f %7.2fx %7.2fx %6.2fx\n",
		       r->t->name,
		       (unsigned long long)(r->t->nr_ops + r->t->nr_live_at_end),
		       r->reps, r->ns[V_CORE_H], r->ns[V_CORE_A], r->ns[V_TF],
		       r->ns[V_MALLOC], r->ns[V_LOOP],
		       r->ns[V_TF] / r->ns[V_CORE_A],
		       r->ns[V_MALLOC] / r->ns[V_CORE_A], net_ratio(r));
		if (r->malloc_reps < r->reps)
			printf("%-24s (malloc over %dx slower than ours: %u replay%s a run after the first, not %u)\n",
			       "", MALLOC_SLOW, r->malloc_reps,
			       r->malloc_reps == 1 ? "" : "s", r->reps);
		if (r->malloc_fails)
			printf("%-24s (malloc returned NULL %llu times)\n", "",
			       (unsigned long long)r->malloc_fails);
	}
	rule();
	/* P5 compares the candidate with today's core, policy tf: ours
	 * when ours is tf, else a variant of its own (V_CORE_TFP).
	 */
	if (cfg.policy == BFC_POLICY_TF)
		printf("   ours is the core with placement policy 'tf'; the same core with the candidate policy '%s'\n"
		       "   (targets P1-P5), free by address, replayed in the same turns (ratio > 1: candidate slower):\n",
		       bfc_policy_name(cfg.cand));
	else
		printf("   ours is the core with placement policy '%s'; the candidate policy '%s' (targets P1-P5)\n"
		       "   against the same core with today's policy 'tf', both free by address, replayed in the same\n"
		       "   turns as the others (ratio > 1: candidate slower):\n",
		       bfc_policy_name(cfg.policy), bfc_policy_name(cfg.cand));
	printf("%-20s %14s %14s %10s\n", "trace",
	       cfg.policy == BFC_POLICY_TF ? "ours(addr)" : "tf(addr)",
	       "candidate",
	       cfg.policy == BFC_POLICY_TF ? "cand/ours" : "cand/tf");
	for (i = 0; i < n; i++) {
		struct trace_result *r = &res[i];

		printf("%-20.20s %14.1f %14.1f %9.3fx\n", r->t->name,
		       tf_core_ns(r), r->ns[V_CORE_REF],
		       r->ns[V_CORE_REF] / tf_core_ns(r));
	}
	rule();
}

/* Fixed pool size a as an extra over the peak, in %. */
double extra_pct(uint64_t a, const struct trace_result *r)
{
	return 100.0 * ((double)a / (double)r->peak_rounded - 1);
}

/* A MiniMalloc instance: peak live exactly 1 MiB (the arena it needs
 * beyond that is what section 4 reports).
 */
int is_unit_peak(const struct trace_result *r)
{
	return r->peak_rounded == (1ull << 20) &&
	       r->t->peak_live_requested == (1ull << 20);
}

static void print_policies(void)
{
	uint32_t pol;

	printf("   Policies (the core's placement, bfc_params.policy; 'ours' elsewhere is '%s'):",
	       bfc_policy_name(cfg.policy));
	for (pol = 0; pol < NR_POL; pol++)
		if (pol_on(pol))
			printf(" %s", bfc_policy_name(pol));
	printf(".\n   TF's columns are the TF-structured baseline; the core's 'tf' policy places exactly as it does.\n");
}

void print_frag(struct trace_result *res, int n)
{
	char b1[32], b2[32], b3[32];
	uint32_t pol;
	int i, m;

	printf("\n2. Fragmentation, growth on demand (TF's Extend: first region 1 MiB, doubled until it holds the request,\n"
	       "   then doubled again for the next one; regions never adjacent, never returned).\n"
	       "   reserved = bytes in regions at the end (= peak); ratio = reserved / peak live requested bytes, for TF\n"
	       "   and for each policy of the core.  'same placement': the core with policy tf puts every chunk at\n"
	       "   the same address as TF.\n");
	print_policies();
	rule();
	printf("%-22s %13s %12s %7s", "trace", "peak live req", "TF resv",
	       "ratio");
	for (pol = 0; pol < NR_POL; pol++)
		if (pol_on(pol))
			printf(" %7s", bfc_policy_name(pol));
	printf("  same placement\n");
	rule();
	for (i = 0; i < n; i++) {
		struct trace_result *r = &res[i];
		double pr = (double)r->t->peak_live_requested;
		char pd[48];

		if (r->frag_skipped) {
			printf("%-22.22s %13s   skipped (BENCH_QUICK)\n", r->t->name,
			       human(r->t->peak_live_requested, b1, 32));
			continue;
		}
		if (r->placement_diff < 0)
			snprintf(pd, sizeof(pd), "yes");
		else
			snprintf(pd, sizeof(pd), "no (from alloc id %lld)",
				 (long long)r->placement_diff);
		printf("%-22.22s %13s %12s %7.3f", r->t->name,
		       human(r->t->peak_live_requested, b1, 32),
		       human(r->reserved[K_TF], b2, 32),
		       (double)r->reserved[K_TF] / pr);
		for (pol = 0; pol < NR_POL; pol++)
			if (pol_on(pol))
				printf(" %7.3f",
				       (double)r->pol_reserved[pol] / pr);
		printf("  %s\n", pd);
	}
	rule();

	printf("\n3. Failed allocations in a FIXED pool (one region, no growth) of 1.0x / 1.25x / 1.5x the peak live bytes\n"
	       "   rounded to 256 B (what a perfect packer at this granularity needs).  A failed allocation is counted\n"
	       "   and the trace goes on without it (its free is skipped).  Figures: TF");
	for (pol = 0; pol < NR_POL; pol++)
		if (pol_on(pol))
			printf(" / %s", bfc_policy_name(pol));
	printf(".\n");
	rule();
	printf("%-22s %7s", "trace", "allocs");
	for (m = 0; m < 3; m++)
		printf("  %5.2fx pool: fails%*s", fixed_mult[m], 6, "");
	printf("\n");
	rule();
	for (i = 0; i < n; i++) {
		struct trace_result *r = &res[i];

		printf("%-22.22s %7u", r->t->name, r->t->nr_ids);
		if (r->frag_skipped) {
			printf("   skipped (BENCH_QUICK)\n");
			continue;
		}
		for (m = 0; m < 3; m++) {
			char c[80];
			int len = snprintf(c, sizeof(c), "%llu",
					   (unsigned long long)r->fixed_fails[m][K_TF]);

			for (pol = 0; pol < NR_POL; pol++)
				if (pol_on(pol) && len > 0 && len < (int)sizeof(c))
					len += snprintf(c + len, sizeof(c) - (size_t)len,
							"/%llu",
							(unsigned long long)r->pol_fixed_fails[m][pol]);
			printf("  %-24s", c);
		}
		printf("\n");
	}
	rule();

	printf("\n4. Smallest FIXED pool that serves the whole trace with no failure (one region, no growth).\n"
	       "   Scanned upward from the peak live bytes at 256 B: small traces (peak <= 64 MiB) try every step of\n"
	       "   'step' in order (exact); larger ones scan in steps of 64 x 'step' and bisect the last one.\n"
	       "   extra = pool / peak live bytes - 1, for TF and each policy (MiniMalloc: also the arena needed\n"
	       "   beyond its 1 MiB peak, in KiB).\n");
	rule();
	printf("%-22s %11s %9s %11s %8s", "trace", "peak live", "step",
	       "TF pool", "extra");
	for (pol = 0; pol < NR_POL; pol++)
		if (pol_on(pol))
			printf(" %8s", bfc_policy_name(pol));
	printf(" %s\n", "method");
	rule();
	for (i = 0; i < n; i++) {
		struct trace_result *r = &res[i];

		if (r->frag_skipped) {
			printf("%-22.22s %11s %9s %s\n", r->t->name,
			       human(r->peak_rounded, b1, 32), "-",
			       "skipped (BENCH_QUICK)");
			continue;
		}
		printf("%-22.22s %11s %9s %11s", r->t->name,
		       human(r->peak_rounded, b1, 32),
		       human(r->min_step, b2, 32),
		       r->min_pool[K_TF] ? human(r->min_pool[K_TF], b3, 32) : "> 4x");
		if (r->min_pool[K_TF])
			printf(" %+7.2f%%", extra_pct(r->min_pool[K_TF], r));
		else
			printf(" %8s", "-");
		for (pol = 0; pol < NR_POL; pol++) {
			if (!pol_on(pol))
				continue;
			if (r->pol_min_pool[pol])
				printf(" %+7.2f%%", extra_pct(r->pol_min_pool[pol], r));
			else
				printf(" %8s", "> 4x");
		}
		printf(" %s\n", r->min_exact ? "exact" : "coarse+bisect");
		if (is_unit_peak(r) && r->min_pool[K_TF]) {
			printf("%-22s beyond 1 MiB, KiB: TF %llu", "",
			       (unsigned long long)((r->min_pool[K_TF] - (1ull << 20)) >> 10));
			for (pol = 0; pol < NR_POL; pol++)
				if (pol_on(pol) && r->pol_min_pool[pol])
					printf(", %s %llu", bfc_policy_name(pol),
					       (unsigned long long)((r->pol_min_pool[pol] - (1ull << 20)) >> 10));
			printf("\n");
		}
	}
	rule();
}

const char *hole_desc(const struct trace *t, char *buf, size_t len)
{
	uint64_t minreq = round_up(t->min_size, GRAN);
	uint64_t hi = minreq > GRAN ? minreq - GRAN : GRAN;

	if (hi == GRAN)
		snprintf(buf, len, "%llu B each", GRAN);
	else
		snprintf(buf, len, "%llu B..%llu B", GRAN,
			 (unsigned long long)hi);
	return buf;
}

/* Latency of dependent loads at random places in an array of `bytes`: a
 * reference for the cost of one cache miss on this machine.
 */
double load_latency_ns(uint64_t bytes)
{
	uint64_t n = bytes / 64, i, j, steps = 4000000, t0, t1;
	uint64_t *a = xcalloc(n, 64);	/* one index per cache line */
	volatile uint64_t sink;

	for (i = 0; i < n; i++)
		a[i * 8] = i;
	rng = cfg.seed;
	for (i = n - 1; i > 0; i--) {	/* Sattolo: one cycle */
		uint64_t k = rnd() % i, t = a[i * 8];

		a[i * 8] = a[k * 8];
		a[k * 8] = t;
	}
	double iv[32];
	int k;

	if (cfg.quick)
		steps = 320000;
	for (i = 0, j = 0; i < n; i++)	/* warm-up */
		j = a[j * 8];
	for (k = 0; k < 32; k++) {	/* median of 32 short intervals */
		t0 = now_ns();
		for (i = 0; i < steps / 32; i++)
			j = a[j * 8];
		t1 = now_ns();
		iv[k] = (double)(t1 - t0) / (double)(steps / 32);
	}
	sink = j;
	(void)sink;
	free(a);
	return median(iv, 32);
}
