// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_scale.c - section 5 of bfc_bench: scaling with the number of live
 * chunks, (i) a trace replayed beside a background of N live chunks and
 * (ii) churn among N live chunks.
 */
#include "bfc_bench.h"

struct live_set {
	uint64_t *addr;
	bfc_handle_t *h;
	uint64_t *tfh;
	uint64_t n;
};

static void live_init(struct live_set *ls, uint64_t cap)
{
	ls->addr = xcalloc(cap, sizeof(*ls->addr));
	ls->h = xcalloc(cap, sizeof(*ls->h));
	ls->tfh = xcalloc(cap, sizeof(*ls->tfh));
	ls->n = 0;
}

static void live_free(struct live_set *ls)
{
	free(ls->addr);
	free(ls->h);
	free(ls->tfh);
}

static void pool_alloc_into(struct pool *p, uint64_t size,
			    struct live_set *ls, uint64_t i)
{
	int r;

	if (p->kind == K_CORE)
		r = core_alloc(p, size, &ls->h[i], &ls->addr[i]);
	else
		r = tf_alloc(p, size, &ls->tfh[i], &ls->addr[i]);
	if (r)
		die(3, "scaling: allocation of %llu bytes failed",
		    (unsigned long long)size);
}

static void pool_free_at(struct pool *p, struct live_set *ls, uint64_t i,
			 int by_addr)
{
	if (p->kind == K_CORE)
		core_free(p, ls->h[i], ls->addr[i], by_addr);
	else
		tf_free(p, ls->addr[i]);
}

static void bg_setup(struct pool *p, enum kind k, const struct trace *t,
		     uint64_t n)
{
	uint64_t minreq = round_up(t->min_size, GRAN);
	uint64_t hole_hi = minreq > GRAN ? minreq - GRAN : GRAN;
	uint64_t bytes = 0, i;
	struct live_set ls;

	for (i = 0; i < 2 * n; i++)
		bytes += i % 2 ? 16 * GRAN : hole_hi;
	cur_trace = t->name;
	pool_init(p, k, 1, 0);
	p->curr_region = round_up(bytes + 2 * trace_peak_live_rounded(t, GRAN),
				  1ull << 21);
	pool_extend(p, p->curr_region);
	live_init(&ls, 2 * n);
	rng = cfg.seed;
	for (i = 0; i < 2 * n; i++) {
		uint64_t sz = i % 2 ? GRAN * (1 + rnd() % 16) :
				      GRAN * (1 + rnd() % (hole_hi / GRAN));

		pool_alloc_into(p, sz, &ls, i);
	}
	for (i = 0; i < 2 * n; i += 2)
		pool_free_at(p, &ls, i, 0);
	live_free(&ls);		/* the live half stays until pool_destroy */
}

void bench_background(const struct trace *t, struct bg_result *out)
{
	struct pool p[NR_SCALES][2];
	struct tsamples ts[NR_SCALES][3];
	struct rstate st;
	uint64_t reps;
	int s, v, r;

	rstate_init(&st, t);
	reps = reps_for(&st, cfg.ops_per_run / 4);
	for (s = 0; s < cfg.nr_scales; s++) {
		bg_setup(&p[s][K_CORE], K_CORE, t, scales[s]);
		bg_setup(&p[s][K_TF], K_TF, t, scales[s]);
		for (v = 0; v < 3; v++)
			ts_init(&ts[s][v], st.nb,
				(uint32_t)(cfg.runs * (reps / st.group)));
	}
	for (r = 0; r < cfg.runs; r++) {
		for (s = 0; s < cfg.nr_scales; s++) {
			for (v = 0; v < 3; v++) {
				struct pool *pp = &p[s][v == V_TF ? K_TF : K_CORE];

				/* one untimed replay warms the caches */
				do_replay(v, pp, t, &st, NULL);
				measure(v, pp, t, &st, reps, &ts[s][v]);
			}
		}
	}
	for (s = 0; s < cfg.nr_scales; s++) {
		for (v = 0; v < 3; v++)
			out[s].ns[v] = ts_estimate(&ts[s][v], st.ops_per_rep);
		pool_destroy(&p[s][K_CORE]);
		pool_destroy(&p[s][K_TF]);
	}
	rstate_free(&st);
}

struct churn {
	enum kind k;
	struct pool p;
	struct live_set ls;
	uint64_t b, max_batches, j, rng, spent_ns;
	uint64_t *idx, *sizes;
	double *fa, *fh, *fs, *fo, *al;
	uint32_t nfa, nfh, nfl, nal;
	int done;
	struct churn_result *out;
};

static uint64_t churn_size(void)
{
	double u = (double)(rnd() >> 11) / (double)(1ull << 53);
	double sz = exp(log(CHURN_MIN_SIZE) +
			u * (log(CHURN_MAX_SIZE) - log(CHURN_MIN_SIZE)));

	return round_up((uint64_t)sz, GRAN);
}

static void churn_setup(struct churn *c, enum kind k, uint64_t n,
			struct churn_result *out)
{
	struct live_set *ls = &c->ls;
	uint64_t i;

	memset(c, 0, sizeof(*c));
	c->k = k;
	c->out = out;
	c->b = n / 10 < 1000 ? n / 10 : 1000;
	c->max_batches = cfg.scale_ops / (2 * c->b);
	if (c->max_batches < 3)
		c->max_batches = 3;
	c->idx = xcalloc(c->b, sizeof(*c->idx));
	c->sizes = xcalloc(c->b, sizeof(*c->sizes));
	c->fa = xcalloc(c->max_batches, sizeof(double));
	c->fh = xcalloc(c->max_batches, sizeof(double));
	c->fs = xcalloc(c->max_batches, sizeof(double));
	c->fo = xcalloc(c->max_batches, sizeof(double));
	c->al = xcalloc(c->max_batches, sizeof(double));

	cur_trace = "uniform churn (5 (ii))";
	pool_init(&c->p, k, 1, 0);
	/* the mean of the size distribution is about 3.6 KiB */
	c->p.curr_region = round_up(2 * n * 4096 + (64ull << 20), 1ull << 21);
	pool_extend(&c->p, c->p.curr_region);
	live_init(ls, 2 * n);
	rng = cfg.seed;		/* the same stream for both allocators */
	for (i = 0; i < 2 * n; i++)
		pool_alloc_into(&c->p, churn_size(), ls, i);
	ls->n = 2 * n;
	for (i = 0; i < n; i++) {	/* free a random half */
		uint64_t r = i + rnd() % (ls->n - i);
		uint64_t ta = ls->addr[r], tt = ls->tfh[r];
		bfc_handle_t th = ls->h[r];

		ls->addr[r] = ls->addr[i];
		ls->h[r] = ls->h[i];
		ls->tfh[r] = ls->tfh[i];
		ls->addr[i] = ta;
		ls->h[i] = th;
		ls->tfh[i] = tt;
		pool_free_at(&c->p, ls, i, 0);
	}
	/* keep the live ones at [0, n) */
	memmove(ls->addr, ls->addr + n, n * sizeof(*ls->addr));
	memmove(ls->h, ls->h + n, n * sizeof(*ls->h));
	memmove(ls->tfh, ls->tfh + n, n * sizeof(*ls->tfh));
	ls->n = n;
	c->rng = rng;
}

/* One batch pair: B frees then B allocations.  The first is a warm-up. */
static void churn_step(struct churn *c)
{
	static uint64_t reads_sink;
	struct live_set *ls = &c->ls;
	int turn = (int)(c->j % 3);	/* ours: handle, address, floors */
	int by_addr = c->k == K_TF || turn == 1;
	int reads = c->k == K_CORE && turn == 2;	/* churn_floor.c */
	uint64_t t0, t1, t2, tb, ts = 0, to = 0, i, half = c->b / 2;

	tb = now_ns();
	rng = c->rng;
	for (i = 0; i < c->b; i++) {
		c->idx[i] = rnd() % (ls->n - i);
		c->sizes[i] = churn_size();
	}
	c->rng = rng;
	if (reads) {
		/* idx[i] < n - i: a live chunk before any of the frees */
		uint64_t a = now_ns(), m;

		reads_sink += churn_floor_serial(c->p.core, ls->h, c->idx, half);
		m = now_ns();
		reads_sink += churn_floor_overlapped(c->p.core, ls->h,
						     c->idx + half, half);
		ts = m - a;
		to = now_ns() - m;
	}
	t0 = now_ns();
	for (i = 0; i < c->b; i++) {
		uint64_t r = c->idx[i];

		pool_free_at(&c->p, ls, r, by_addr);
		ls->n--;
		ls->addr[r] = ls->addr[ls->n];
		ls->h[r] = ls->h[ls->n];
		ls->tfh[r] = ls->tfh[ls->n];
	}
	t1 = now_ns();
	for (i = 0; i < c->b; i++)
		pool_alloc_into(&c->p, c->sizes[i], ls, ls->n++);
	t2 = now_ns();
	if (c->j++ == 0)
		return;
	c->spent_ns += t2 - tb;
	if (reads) {
		c->fs[c->nfl] = (double)ts / (double)half;
		c->fo[c->nfl++] = (double)to / (double)half;
	} else if (by_addr) {
		c->fa[c->nfa++] = (double)(t1 - t0) / (double)c->b;
	} else {
		c->fh[c->nfh++] = (double)(t1 - t0) / (double)c->b;
	}
	c->al[c->nal++] = (double)(t2 - t1) / (double)c->b;
	c->out->timed_ops += 2 * c->b;
	if (c->nal >= c->max_batches) {
		c->done = 1;
	} else if (c->nal >= 3 &&
		   (double)c->spent_ns / 1e9 > cfg.churn_budget_s) {
		c->done = 1;
		c->out->boxed = 1;
	}
}

static void churn_finish(struct churn *c)
{
	struct churn_result *out = c->out;

	out->batch = c->b;
	out->alloc_ns = median(c->al, (int)c->nal);
	out->free_a_ns = median(c->fa, (int)c->nfa);
	out->free_h_ns = c->k == K_CORE ? median(c->fh, (int)c->nfh) : NAN;
	out->serial_ns = c->k == K_CORE ? median(c->fs, (int)c->nfl) : NAN;
	out->overlap_ns = c->k == K_CORE ? median(c->fo, (int)c->nfl) : NAN;
	pool_destroy(&c->p);
	live_free(&c->ls);
	free(c->idx);
	free(c->sizes);
	free(c->fa);
	free(c->fh);
	free(c->fs);
	free(c->fo);
	free(c->al);
}

void bench_churn(struct churn_result out[][2])
{
	struct churn c[NR_SCALES][2];
	int s, k, busy = 1;

	for (s = 0; s < cfg.nr_scales; s++)
		for (k = K_CORE; k <= K_TF; k++)
			churn_setup(&c[s][k], (enum kind)k, scales[s],
				    &out[s][k]);
	while (busy) {
		busy = 0;
		for (s = 0; s < cfg.nr_scales; s++)
			for (k = K_CORE; k <= K_TF; k++)
				if (!c[s][k].done) {
					churn_step(&c[s][k]);
					busy = 1;
				}
	}
	for (s = 0; s < cfg.nr_scales; s++)
		for (k = K_CORE; k <= K_TF; k++)
			churn_finish(&c[s][k]);
}
