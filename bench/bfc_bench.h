/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_bench.h - what the files of bfc_bench share: the configuration, the
 * pools (the core or the TF-structured baseline) and their inline
 * allocate and free, the replay state and timing, the per-trace results,
 * and each section's entry point.  bfc_bench.c is the command line and the
 * order of the sections.
 */
#ifndef BENCH_BFC_BENCH_H
#define BENCH_BFC_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bfc.h"
#include "churn_floor.h"
#include "tf_bfc.h"
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* bfc_bench.c: the configuration, helpers every file uses ------------------ */

#define GRAN		256ull		/* TF's kMinAllocationSize */
#define FIRST_REGION	(1ull << 20)	/* growth: first region, then x2 */
#define REGION_GAP	(1ull << 30)	/* regions are never adjacent */
#define BASE_ADDR	(1ull << 32)	/* first region's address */
#define NR_SCALES	4

extern const uint64_t scales[NR_SCALES];

struct bench_cfg {
	int quick;
	int runs;			/* timed runs per figure (median) */
	uint64_t ops_per_run;		/* trace replays: min ops per run */
	uint64_t scale_ops;		/* churn: timed ops per allocator */
	double churn_budget_s;		/* churn: time box per allocator */
	uint64_t seed;
	int nr_scales;
	const char *scale_trace;
	int do_replay, do_frag, do_scale;
	uint32_t policy;		/* ours: the core's placement policy */
	uint32_t cand;			/* the policy targets P1-P5 measure */
	uint32_t policies;		/* bit per policy in sections 2-4 */
};
extern struct bench_cfg cfg;

#define NR_POL	BFC_NR_POLICIES

#ifndef unlikely		/* bfc_env.h has it */
#define unlikely(x)	__builtin_expect(!!(x), 0)
#endif

void die(int code, const char *fmt, ...);

void *xcalloc(size_t n, size_t sz);

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* splitmix64's state (bfc_bench.c): one stream for every file. */
extern uint64_t rng;

static inline uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double median(double *v, int n);

const char *human(uint64_t b, char *buf, size_t len);

/* bfc_pool.c: pools, the core or the TF-structured baseline ---------------- */

enum kind { K_CORE, K_TF };

struct pool {
	enum kind kind;
	uint32_t policy;	/* K_CORE: BFC_POLICY_* */
	struct bfc *core;
	struct tf_bfc *tf;
	int growth;
	uint64_t next_base;
	uint64_t curr_region;	/* TF's curr_region_allocation_bytes_ */
	uint64_t reserved;
	uint32_t regions;
};

extern const char *cur_trace;

/* first: the fixed pool's size, or the first region when growing.  The
 * core places by policy pol.
 */
void pool_init_pol(struct pool *p, enum kind k, uint32_t pol,
		   int growth, uint64_t first);

/* The core with ours' policy. */
void pool_init(struct pool *p, enum kind k, int growth, uint64_t first);

void pool_destroy(struct pool *p);

/* TF's Extend(): double curr_region until it holds the request, add a
 * region of that size, and double again for next time unless it just did.
 */
void pool_extend(struct pool *p, uint64_t size);

uint64_t pool_check(struct pool *p, const char *what);

/* The allocate and free wrappers below are what every timed loop calls:
 * inline, with only the library call and one test of its result in line;
 * growth and errors are out of line.  The harness's own cost per
 * operation stays small and the same for both allocators, so that the
 * ratios compare the allocators, not the loop around them.  The out-of-line
 * parts are static, in every file that includes this one (unused in most):
 * in the file that calls them gcc knows which registers they clobber, and
 * the timed loops are compiled as they were when all was one file.
 */
__attribute__((unused))
static noinline int core_alloc_failed(struct pool *p, uint64_t size,
				      bfc_handle_t *h, uint64_t *addr, int r)
{
	if (r == -BFC_ENOMEM && p->growth) {
		/* the new region holds the request: only metadata can fail */
		pool_extend(p, size);
		r = bfc_alloc(p->core, size, h, addr);
		if (r)
			die(3, "core: bfc_alloc(%llu) failed with a fresh region: %d",
			    (unsigned long long)size, r);
	}
	if (r && r != -BFC_ENOMEM)
		die(3, "core: bfc_alloc(%llu) returned %d",
		    (unsigned long long)size, r);
	return r;
}

static inline int core_alloc(struct pool *p, uint64_t size, bfc_handle_t *h,
			     uint64_t *addr)
{
	int r = bfc_alloc(p->core, size, h, addr);

	if (unlikely(r))
		return core_alloc_failed(p, size, h, addr, r);
	return 0;
}

__attribute__((unused))
static noinline int tf_alloc_failed(struct pool *p, uint64_t size,
				    uint64_t *h, uint64_t *addr, int r)
{
	if (r == -12 && p->growth) {
		pool_extend(p, size);
		r = tf_bfc_alloc(p->tf, size, h, addr);
		if (r)
			die(3, "tf: alloc(%llu) failed with a fresh region",
			    (unsigned long long)size);
	}
	if (r && r != -12)
		die(3, "tf: alloc(%llu) returned %d",
		    (unsigned long long)size, r);
	return r;
}

static inline int tf_alloc(struct pool *p, uint64_t size, uint64_t *h,
			   uint64_t *addr)
{
	int r = tf_bfc_alloc(p->tf, size, h, addr);

	if (unlikely(r))
		return tf_alloc_failed(p, size, h, addr, r);
	return 0;
}

__attribute__((unused))
static noinline void core_free_failed(bfc_handle_t h, uint64_t addr,
				      int by_addr, int r)
{
	die(3, "core: %s(0x%llx / handle %u) returned %d",
	    by_addr ? "bfc_free_addr" : "bfc_free",
	    (unsigned long long)addr, h, r);
}

static inline void core_free(struct pool *p, bfc_handle_t h, uint64_t addr,
			     int by_addr)
{
	int r = by_addr ? bfc_free_addr(p->core, addr) : bfc_free(p->core, h);

	if (unlikely(r))
		core_free_failed(h, addr, by_addr, r);
}

__attribute__((unused))
static noinline void tf_free_failed(uint64_t addr)
{
	die(3, "tf: free(0x%llx) refused", (unsigned long long)addr);
}

static inline void tf_free(struct pool *p, uint64_t addr)
{
	if (unlikely(tf_bfc_free(p->tf, addr)))
		tf_free_failed(addr);
}

/* bfc_replay.c: trace replay, and its timing ------------------------------- */

struct rstate {
	uint64_t *addr;		/* per id; 0 = not allocated (failed) */
	bfc_handle_t *h;
	uint64_t *tfh;
	void **ptr;
	uint32_t *end_live;	/* ids live at the end of the trace */
	uint32_t nr_end_live;
	uint64_t ops_per_rep;
	/* Timing (see measure()): nb blocks of BLOCK_OPS trace operations
	 * (the final frees belong to the last block), or for traces of at
	 * most BLOCK_OPS operations one block of `group` whole replays.
	 */
	uint32_t nb, group;
	uint64_t *bt;		/* nb block times of the last replay */
};

#define BLOCK_OPS	4096u

void rstate_init(struct rstate *s, const struct trace *t);

void rstate_free(struct rstate *s);

void free_end_live(struct pool *p, struct rstate *s);

enum { V_CORE_H, V_CORE_A, V_TF, V_CORE_REF, V_CORE_TFP, V_MALLOC, V_LOOP,
       NR_V };

extern const char *const vname[NR_V];

/* V_CORE_TFP, the core with policy tf (today's core, which P5 compares
 * the candidate with), replays only when ours has another policy: with
 * ours tf it would time ours(addr) a second time.
 */
int variant_on(int v);

struct tsamples {
	uint32_t nb, n, cap;
	double *v;		/* block-major: v[b * cap + i] */
};

void ts_init(struct tsamples *ts, uint32_t nb, uint32_t cap);

double ts_estimate(struct tsamples *ts, uint64_t ops_per_rep);

uint64_t do_replay(int v, struct pool *p, const struct trace *t,
		   struct rstate *s, uint64_t *bt);

/* Samples for `reps` replays (a multiple of s->group) of variant v. */
uint64_t measure(int v, struct pool *p, const struct trace *t,
		 struct rstate *s, uint64_t reps, struct tsamples *ts);

/* Replays per run for at least `ops` operations, a multiple of group. */
uint64_t reps_for(const struct rstate *s, uint64_t ops);

/* One untimed replay for sections 2-4, in a new pool of kind k and policy
 * pol (growing from size, or fixed at size): the allocations that failed.
 * With keep, the pool is handed over with the trace's end still live.
 */
uint64_t replay_once(enum kind k, uint32_t pol, int growth,
		     uint64_t size, const struct trace *t,
		     struct rstate *s, struct pool *keep);

/* bfc_speed.c: section 1, replay speed ------------------------------------- */

struct trace_result {
	const struct trace *t;
	uint64_t peak_rounded;
	/* speed */
	uint32_t reps;
	double ns[NR_V];
	uint64_t malloc_fails;
	uint32_t malloc_reps;	/* replays of malloc a run (fewer: slow) */
	/* growth */
	uint64_t reserved[2];
	uint32_t regions[2];
	int64_t placement_diff;		/* first id placed differently; -1 */
	/* [K_CORE] above and below: ours (cfg.policy); per policy here */
	uint64_t pol_reserved[NR_POL];
	uint32_t pol_regions[NR_POL];
	uint64_t pol_fixed_fails[3][NR_POL];
	uint64_t pol_min_pool[NR_POL];
	/* fixed pools at 1.0, 1.25, 1.5 x peak_rounded */
	uint64_t fixed_fails[3][2];
	uint64_t fixed_size[3];
	/* smallest fixed pool with no failure; 0 = not found / skipped */
	uint64_t min_pool[2];
	int min_exact;
	uint64_t min_step;
	int frag_skipped;	/* BENCH_QUICK: large traces skip 2-4 */
};

/* Today's core (policy tf), free by address: P5's reference. */
double tf_core_ns(const struct trace_result *r);

/* BENCH_QUICK runs sections 2-4 only for traces up to this peak. */
#define QUICK_FRAG_MAX	(64ull << 20)

extern const double fixed_mult[3];

/* bench_speed(): a first run of malloc that takes more than MALLOC_SLOW_NS
 * and more than MALLOC_SLOW times ours makes it replay one group a run.
 */
#define MALLOC_SLOW	20

void bench_speed(struct trace_result *res);

/* bfc_frag.c: sections 2-4, fragmentation, failures, smallest pool --------- */

uint64_t fixed_fails(enum kind k, uint32_t pol, uint64_t size,
		     const struct trace *t, struct rstate *s);

/* Smallest fixed pool (one region) that serves the whole trace without a
 * failure, from lo upward.  Small traces: every size on a fine grid, in
 * order (exact at that step).  Large ones: a coarse upward scan to the first
 * size with no failure, then bisection on the fine grid inside the last
 * coarse step (assumes failures do not come back within that step).
 */
uint64_t min_pool(enum kind k, uint32_t pol, const struct trace *t,
		  struct rstate *s, uint64_t lo, int exact,
		  uint64_t fine);

/* Is policy pol in sections 2-4?  ours' and TF's (the reference) always. */
int pol_on(uint32_t pol);

int bench_frag(struct trace_result *res);

/* bfc_scale.c: section 5, scaling with live chunks ------------------------- */

/* (i) background: 2N chunks, every other one freed -> N live chunks of
 * 256 B..4 KiB and N holes smaller than the trace's smallest request; then
 * the trace replays on top.  Every (N, allocator) pool is built first and
 * the measurements take turns, so that noise in time spreads over all of
 * them instead of landing on one row.
 */
struct bg_result {
	double ns[3];		/* ours(handle), ours(addr), TF */
};

void bench_background(const struct trace *t, struct bg_result *out);

/* (ii) uniform churn: N live chunks of random sizes (log-uniform 256 B ..
 * 16 KiB, multiples of 256), reached by allocating 2N and freeing a random
 * half; then batches of B frees of random live chunks followed by B
 * allocations of random sizes, each batch timed.  All (N, allocator) states
 * are built first and take turns, one batch pair each.  Ours takes three
 * kinds of free batch in turn: by handle, by address, and the floors (the
 * reads of churn_floor.c timed, serial on B/2 random live chunks and
 * overlapped on B/2 others, then the batch's frees by handle, not timed).
 */
#define CHURN_MIN_SIZE	256.0
#define CHURN_MAX_SIZE	16384.0

struct churn_result {
	double alloc_ns, free_h_ns, free_a_ns;
	double serial_ns, overlap_ns;	/* ours: churn_floor.c, per chunk */
	uint64_t timed_ops;
	uint64_t batch;
	int boxed;			/* stopped by the time box */
};

void bench_churn(struct churn_result out[][2]);

/* bfc_report.c: the tables ------------------------------------------------- */

void rule(void);

void print_loadavg(const char *when);

void print_header(int nr_traces);

/* TF / ours(addr), both less the replay loop's own cost. */
double net_ratio(const struct trace_result *r);

void print_speed(struct trace_result *res, int n);

/* Fixed pool size a as an extra over the peak, in %. */
double extra_pct(uint64_t a, const struct trace_result *r);

/* A MiniMalloc instance: peak live exactly 1 MiB (the arena it needs
 * beyond that is what section 4 reports).
 */
int is_unit_peak(const struct trace_result *r);

void print_frag(struct trace_result *res, int n);

const char *hole_desc(const struct trace *t, char *buf, size_t len);

/* Latency of dependent loads at random places in an array of `bytes`: a
 * reference for the cost of one cache miss on this machine.
 */
double load_latency_ns(uint64_t bytes);

/* bfc_targets.c: section 6, the targets ------------------------------------ */

/* Section 6's rows, each under one of two readings of the issue's
 * targets: as the issue words them (the trace replays), or harder ones
 * this benchmark adds (uniform churn, T3 trace by trace).  The tally keeps
 * the two apart, so that a summary line says how each reading fares.
 */
enum reading { R_ISSUE, R_BEYOND, NR_READINGS };

struct tally {
	int rows[NR_READINGS], pass[NR_READINGS];
	int unmeasured;		/* targets this run has no figures for */
};

/* T1's rows: at most 50 ns an operation. */
void t1_row(struct tally *t, enum reading r, const char *label,
	    double ns, const char *note);

void target_ratio(struct tally *t, enum reading r, const char *label,
		  double x, int pass, const char *note);

void target_flag(struct tally *t, enum reading r, const char *label,
		 int pass);

/* The placement targets, on section 4's smallest fixed pools. */
void placement_targets(struct tally *tl, const struct trace_result *res,
		       int n);

#endif /* BENCH_BFC_BENCH_H */
