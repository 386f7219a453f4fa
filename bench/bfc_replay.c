// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_replay.c - replaying a trace through a pool (the core by handle or
 * by address, the TF-structured baseline, malloc, an empty loop) and
 * timing the replays in short blocks, each the median of its runs.
 */
#include "bfc_bench.h"

/*
 * Trace replay.  An allocation that fails (fixed pools only) is counted and
 * its free skipped.  After the trace, the chunks it leaves live are freed,
 * so every replay starts and ends with an empty allocator; those frees count
 * as operations.
 */

void rstate_init(struct rstate *s, const struct trace *t)
{
	uint8_t *live = xcalloc(t->nr_ids, 1);
	uint32_t i, n = 0;

	s->addr = xcalloc(t->nr_ids, sizeof(*s->addr));
	s->h = xcalloc(t->nr_ids, sizeof(*s->h));
	s->tfh = xcalloc(t->nr_ids, sizeof(*s->tfh));
	s->ptr = xcalloc(t->nr_ids, sizeof(*s->ptr));
	s->end_live = xcalloc(t->nr_live_at_end, sizeof(*s->end_live));
	for (i = 0; i < t->nr_ops; i++)
		live[t->ops[i] & TRACE_ID_MASK] = !(t->ops[i] & TRACE_FREE);
	for (i = 0; i < t->nr_ids; i++)
		if (live[i])
			s->end_live[n++] = i;
	s->nr_end_live = n;
	s->ops_per_rep = (uint64_t)t->nr_ops + n;
	if (s->ops_per_rep <= BLOCK_OPS) {
		s->nb = 1;
		s->group = (uint32_t)(BLOCK_OPS / s->ops_per_rep);
	} else {
		s->nb = (t->nr_ops + BLOCK_OPS - 1) / BLOCK_OPS;
		s->group = 1;
	}
	s->bt = xcalloc(s->nb, sizeof(*s->bt));
	free(live);
}

void rstate_free(struct rstate *s)
{
	free(s->addr);
	free(s->h);
	free(s->tfh);
	free(s->ptr);
	free(s->end_live);
	free(s->bt);
}

/* One replay.  keep_end: leave the trace's final live chunks allocated (for
 * checks).  With bt, the time of each block of BLOCK_OPS operations goes
 * into bt[] (s->nb entries).
 */
static uint64_t replay_core(struct pool *p, const struct trace *t,
			    struct rstate *s, int by_addr, int keep_end,
			    uint64_t *bt)
{
	uint64_t fails = 0, t0 = 0;
	uint32_t i, blk, nb = bt ? s->nb : 1;

	for (blk = 0; blk < nb; blk++) {
		uint32_t end = blk == nb - 1 ? t->nr_ops : (blk + 1) * BLOCK_OPS;

		if (bt)
			t0 = now_ns();
		for (i = blk * BLOCK_OPS; i < end; i++) {
			uint32_t op = t->ops[i], id = op & TRACE_ID_MASK;

			if (op & TRACE_FREE) {
				if (s->addr[id])
					core_free(p, s->h[id], s->addr[id],
						  by_addr);
			} else if (core_alloc(p, t->size[id], &s->h[id],
					      &s->addr[id])) {
				s->addr[id] = 0;
				fails++;
			}
		}
		if (blk == nb - 1 && !keep_end) {
			for (i = 0; i < s->nr_end_live; i++) {
				uint32_t id = s->end_live[i];

				if (s->addr[id])
					core_free(p, s->h[id], s->addr[id],
						  by_addr);
			}
		}
		if (bt)
			bt[blk] = now_ns() - t0;
	}
	return fails;
}

static uint64_t replay_tf(struct pool *p, const struct trace *t,
			  struct rstate *s, int keep_end, uint64_t *bt)
{
	uint64_t fails = 0, t0 = 0;
	uint32_t i, blk, nb = bt ? s->nb : 1;

	for (blk = 0; blk < nb; blk++) {
		uint32_t end = blk == nb - 1 ? t->nr_ops : (blk + 1) * BLOCK_OPS;

		if (bt)
			t0 = now_ns();
		for (i = blk * BLOCK_OPS; i < end; i++) {
			uint32_t op = t->ops[i], id = op & TRACE_ID_MASK;

			if (op & TRACE_FREE) {
				if (s->addr[id])
					tf_free(p, s->addr[id]);
			} else if (tf_alloc(p, t->size[id], &s->tfh[id],
					    &s->addr[id])) {
				s->addr[id] = 0;
				fails++;
			}
		}
		if (blk == nb - 1 && !keep_end) {
			for (i = 0; i < s->nr_end_live; i++) {
				uint32_t id = s->end_live[i];

				if (s->addr[id])
					tf_free(p, s->addr[id]);
			}
		}
		if (bt)
			bt[blk] = now_ns() - t0;
	}
	return fails;
}

void free_end_live(struct pool *p, struct rstate *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_end_live; i++) {
		uint32_t id = s->end_live[i];

		if (!s->addr[id])
			continue;
		if (p->kind == K_CORE)
			core_free(p, s->h[id], s->addr[id], 0);
		else
			tf_free(p, s->addr[id]);
	}
}

static uint64_t replay_malloc(const struct trace *t, struct rstate *s,
			      uint64_t *bt)
{
	uint64_t fails = 0, t0 = 0;
	uint32_t i, blk, nb = bt ? s->nb : 1;

	for (blk = 0; blk < nb; blk++) {
		uint32_t end = blk == nb - 1 ? t->nr_ops : (blk + 1) * BLOCK_OPS;

		if (bt)
			t0 = now_ns();
		for (i = blk * BLOCK_OPS; i < end; i++) {
			uint32_t op = t->ops[i], id = op & TRACE_ID_MASK;

			if (op & TRACE_FREE) {
				free(s->ptr[id]);
			} else {
				s->ptr[id] = malloc(t->size[id]);
				fails += !s->ptr[id];
			}
		}
		if (blk == nb - 1)
			for (i = 0; i < s->nr_end_live; i++)
				free(s->ptr[s->end_live[i]]);
		if (bt)
			bt[blk] = now_ns() - t0;
	}
	return fails;
}

/* The replay loop around out-of-line allocate and free functions that do
 * nothing (an address from a counter): what every variant's ns/op holds
 * that is not the allocator - reading the trace, the call, the result.
 * replay_loop() is replay_core() line for line on purpose (a shared macro
 * or a dispatch would change what is timed).
 */
static uint64_t loop_next;

static noinline int loop_alloc(uint64_t size, bfc_handle_t *h, uint64_t *addr)
{
	*h = (bfc_handle_t)loop_next;
	*addr = (loop_next += size | 1);
	return 0;
}

static noinline void loop_free(bfc_handle_t h, uint64_t addr)
{
	__asm__ volatile("" : : "r"(h), "r"(addr) : "memory");
}

static uint64_t replay_loop(const struct trace *t, struct rstate *s,
			    uint64_t *bt)
{
	uint64_t t0 = 0;
	uint32_t i, blk, nb = bt ? s->nb : 1;

	for (blk = 0; blk < nb; blk++) {
		uint32_t end = blk == nb - 1 ? t->nr_ops : (blk + 1) * BLOCK_OPS;

		if (bt)
			t0 = now_ns();
		for (i = blk * BLOCK_OPS; i < end; i++) {
			uint32_t op = t->ops[i], id = op & TRACE_ID_MASK;

			if (op & TRACE_FREE) {
				if (s->addr[id])
					loop_free(s->h[id], s->addr[id]);
			} else if (loop_alloc(t->size[id], &s->h[id],
					      &s->addr[id])) {
				s->addr[id] = 0;
			}
		}
		if (blk == nb - 1) {
			for (i = 0; i < s->nr_end_live; i++) {
				uint32_t id = s->end_live[i];

				if (s->addr[id])
					loop_free(s->h[id], s->addr[id]);
			}
		}
		if (bt)
			bt[blk] = now_ns() - t0;
	}
	return 0;
}

/*
 * Timing.  Other processes preempt this one now and then, and a preempted
 * interval measures the wait, not the allocator.  So the work is cut into
 * short intervals that repeat identically: blocks of BLOCK_OPS operations of
 * the trace (or, for a short trace, groups of whole replays of about
 * BLOCK_OPS operations).  Each block is timed on every replay; the estimate
 * is the sum over blocks of the median time of that block, divided by the
 * operations of one replay.  A preemption then only moves a median when it
 * hits the same block in half of the replays.
 */

const char *const vname[NR_V] = {
	"ours(handle)", "ours(addr)", "TF", "candidate(addr)", "tf(addr)",
	"malloc", "loop",
};

/* V_CORE_TFP, the core with policy tf (today's core, which P5 compares
 * the candidate with), replays only when ours has another policy: with
 * ours tf it would time ours(addr) a second time.
 */
int variant_on(int v)
{
	return v != V_CORE_TFP || cfg.policy != BFC_POLICY_TF;
}

void ts_init(struct tsamples *ts, uint32_t nb, uint32_t cap)
{
	ts->nb = nb;
	ts->n = 0;
	ts->cap = cap;
	ts->v = xcalloc((size_t)nb * cap, sizeof(double));
}

double ts_estimate(struct tsamples *ts, uint64_t ops_per_rep)
{
	double sum = 0;
	uint32_t b;

	for (b = 0; b < ts->nb; b++)
		sum += median(ts->v + (size_t)b * ts->cap, (int)ts->n);
	free(ts->v);
	ts->v = NULL;
	return sum / (double)ops_per_rep;
}

uint64_t do_replay(int v, struct pool *p, const struct trace *t,
		   struct rstate *s, uint64_t *bt)
{
	switch (v) {
	case V_CORE_H:
		return replay_core(p, t, s, 0, 0, bt);
	case V_CORE_A:
	case V_CORE_REF:
	case V_CORE_TFP:
		return replay_core(p, t, s, 1, 0, bt);
	case V_TF:
		return replay_tf(p, t, s, 0, bt);
	case V_LOOP:
		return replay_loop(t, s, bt);
	default:
		return replay_malloc(t, s, bt);
	}
}

/* Samples for `reps` replays (a multiple of s->group) of variant v. */
uint64_t measure(int v, struct pool *p, const struct trace *t,
		 struct rstate *s, uint64_t reps, struct tsamples *ts)
{
	uint64_t k, j, fails = 0;
	uint32_t b;

	for (k = 0; k < reps; k += s->group) {
		if (ts->n >= ts->cap)
			die(3, "internal: too many timing samples");
		if (s->nb == 1) {
			uint64_t t0 = now_ns();

			for (j = 0; j < s->group; j++)
				fails += do_replay(v, p, t, s, NULL);
			ts->v[ts->n] = (double)(now_ns() - t0) /
				       (double)s->group;
		} else {
			fails += do_replay(v, p, t, s, s->bt);
			for (b = 0; b < s->nb; b++)
				ts->v[(size_t)b * ts->cap + ts->n] =
					(double)s->bt[b];
		}
		ts->n++;
	}
	return fails;
}

/* Replays per run for at least `ops` operations, a multiple of group. */
uint64_t reps_for(const struct rstate *s, uint64_t ops)
{
	uint64_t reps = (ops + s->ops_per_rep - 1) / s->ops_per_rep;

	return (reps + s->group - 1) / s->group * s->group;
}

/* One untimed replay for sections 2-4, in a new pool of kind k and policy
 * pol (growing from size, or fixed at size): the allocations that failed.
 * With keep, the pool is handed over with the trace's end still live.
 */
uint64_t replay_once(enum kind k, uint32_t pol, int growth,
		     uint64_t size, const struct trace *t,
		     struct rstate *s, struct pool *keep)
{
	struct pool p;
	uint64_t fails;

	pool_init_pol(&p, k, pol, growth, size);
	memset(s->addr, 0, t->nr_ids * sizeof(*s->addr));
	if (k == K_CORE)
		fails = replay_core(&p, t, s, 0, 1, NULL);
	else
		fails = replay_tf(&p, t, s, 1, NULL);
	if (keep) {
		*keep = p;
		return fails;
	}
	free_end_live(&p, s);
	pool_destroy(&p);
	return fails;
}
