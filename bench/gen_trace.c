// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * gen_trace.c - synthetic allocation traces in the format of bench/data
 * (see trace.h), reproducible from a seed.
 *
 *   gen_trace dl_train SEED OUT.csv
 *	A deep-learning training loop: long-lived weights and optimizer state,
 *	then several steps of forward (activations kept for backward, short-
 *	lived temporaries of varied sizes, now and then a very large
 *	workspace), backward (gradients, activations released in reverse
 *	order) and the optimizer update.  The network's shapes are drawn once,
 *	so every step repeats the same sizes, as real training does; only the
 *	workspaces vary between steps.
 *
 *   gen_trace loader SEED OUT.csv
 *	A data loader: batches of a few fixed large sizes cycling (each with a
 *	small label buffer), a prefetch queue of 6..8 batches in flight, and a
 *	short last batch at the end of each epoch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi)	/* [lo, hi] */
{
	return lo + rnd() % (hi - lo + 1);
}

/* Log-uniform in [lo, hi], a multiple of 4 bytes (float tensors). */
static uint64_t rnd_log_size(uint64_t lo, uint64_t hi)
{
	double u = (double)(rnd() >> 11) / (double)(1ull << 53);
	double l = log((double)lo), h = log((double)hi);
	uint64_t s = (uint64_t)exp(l + u * (h - l));

	s &= ~3ull;
	return s < 4 ? 4 : s;
}

struct out {
	FILE *f;
	uint64_t next_id;
	uint64_t t;
};

static uint64_t ev_alloc(struct out *o, uint64_t size)
{
	o->t += rnd_range(1, 40);
	fprintf(o->f, "a,%llu,%llu,0,%llu\n", (unsigned long long)o->next_id,
		(unsigned long long)size, (unsigned long long)o->t);
	return o->next_id++;
}

static void ev_free(struct out *o, uint64_t id)
{
	o->t += rnd_range(1, 40);
	fprintf(o->f, "f,%llu,%llu\n", (unsigned long long)id,
		(unsigned long long)o->t);
}

/* Allocate n temporaries and free them in a random order. */
static void temporaries(struct out *o, unsigned n, uint64_t lo, uint64_t hi)
{
	uint64_t ids[8];
	unsigned i;

	if (n > 8)
		n = 8;
	for (i = 0; i < n; i++)
		ids[i] = ev_alloc(o, rnd_log_size(lo, hi));
	for (; n > 0; n--) {
		unsigned k = (unsigned)(rnd() % n);

		ev_free(o, ids[k]);
		ids[k] = ids[n - 1];
	}
}

#define NR_WEIGHTS	160
#define NR_LAYERS	80
#define NR_STEPS	6
#define ACTS_PER_LAYER	3

static void gen_dl_train(struct out *o)
{
	uint64_t wsize[NR_WEIGHTS], asize[NR_LAYERS][ACTS_PER_LAYER];
	uint64_t act[NR_LAYERS][ACTS_PER_LAYER], wgrad[NR_WEIGHTS];
	unsigned nacts[NR_LAYERS], ntemps[NR_LAYERS];
	int big[NR_LAYERS];
	unsigned w, l, a, s;

	/* The network: weights 1 KiB..64 MiB, 1..3 activations per layer of
	 * 16 KiB..48 MiB, 1..6 temporaries per layer, 4 layers that need a
	 * very large workspace.
	 */
	for (w = 0; w < NR_WEIGHTS; w++)
		wsize[w] = rnd_log_size(1024, 64ull << 20);
	for (l = 0; l < NR_LAYERS; l++) {
		nacts[l] = (unsigned)rnd_range(1, ACTS_PER_LAYER);
		ntemps[l] = (unsigned)rnd_range(1, 6);
		big[l] = 0;
		for (a = 0; a < nacts[l]; a++)
			asize[l][a] = rnd_log_size(16 << 10, 48ull << 20);
	}
	for (a = 0; a < 4; a++)
		big[rnd() % NR_LAYERS] = 1;

	for (w = 0; w < NR_WEIGHTS; w++)
		ev_alloc(o, wsize[w]);		/* weights: never freed */

	for (s = 0; s < NR_STEPS; s++) {
		uint64_t input = ev_alloc(o, 3ull * 224 * 224 * 4 * 64);

		/* forward */
		for (l = 0; l < NR_LAYERS; l++) {
			if (big[l]) {
				uint64_t ws = ev_alloc(o, rnd_log_size(
					256ull << 20, 1ull << 30));
				temporaries(o, ntemps[l], 512, 8 << 20);
				ev_free(o, ws);
			} else {
				temporaries(o, ntemps[l], 512, 8 << 20);
			}
			for (a = 0; a < nacts[l]; a++)
				act[l][a] = ev_alloc(o, asize[l][a]);
		}
		/* backward: gradient of each activation, weight gradients */
		for (l = NR_LAYERS; l-- > 0;) {
			uint64_t g[ACTS_PER_LAYER];

			for (a = 0; a < nacts[l]; a++)
				g[a] = ev_alloc(o, asize[l][a]);
			temporaries(o, ntemps[l], 512, 8 << 20);
			for (a = 0; a < nacts[l]; a++) {
				ev_free(o, act[l][a]);
				ev_free(o, g[a]);
			}
			for (w = l * NR_WEIGHTS / NR_LAYERS;
			     w < (l + 1) * NR_WEIGHTS / NR_LAYERS; w++)
				wgrad[w] = ev_alloc(o, wsize[w]);
		}
		ev_free(o, input);
		/* optimizer: Adam state on the first step, kept; a small
		 * temporary per weight; gradients zeroed (freed).
		 */
		for (w = 0; w < NR_WEIGHTS; w++) {
			if (s == 0) {
				ev_alloc(o, wsize[w]);
				ev_alloc(o, wsize[w]);
			}
			temporaries(o, 1, 512, 64 << 10);
			ev_free(o, wgrad[w]);
		}
	}
}

#define LOADER_BATCHES		2400
#define LOADER_EPOCH		100
#define LOADER_MAX_INFLIGHT	8

static void gen_loader(struct out *o)
{
	/* uint8 images 3x224x224 x 256; float16 audio features; uint8 video
	 * clips 8x3x112x112 x 64 - cycled, as a multi-task loader does.
	 */
	static const uint64_t sizes[] = {
		256ull * 3 * 224 * 224, 256ull * 80 * 3000 * 2,
		64ull * 8 * 3 * 112 * 112,
	};
	static const uint64_t label_sizes[] = { 256 * 8, 256 * 4, 64 * 8 };
	uint64_t q_data[LOADER_MAX_INFLIGHT + 1], q_label[LOADER_MAX_INFLIGHT + 1];
	unsigned head = 0, n = 0, b, k;
	unsigned nk = sizeof(sizes) / sizeof(sizes[0]);

	for (b = 0; b < LOADER_BATCHES; b++) {
		unsigned target = (unsigned)rnd_range(LOADER_MAX_INFLIGHT - 2,
						      LOADER_MAX_INFLIGHT);
		uint64_t sz = sizes[b % nk], lsz = label_sizes[b % nk];
		unsigned slot;

		/* The consumer takes batches until the queue has room. */
		while (n >= target) {
			ev_free(o, q_data[head]);
			ev_free(o, q_label[head]);
			head = (head + 1) % (LOADER_MAX_INFLIGHT + 1);
			n--;
		}
		if (b % LOADER_EPOCH == LOADER_EPOCH - 1) {
			/* last batch of the epoch: only part full */
			k = (unsigned)rnd_range(1, 255);
			sz = sz / 256 * k;
			lsz = lsz / 256 * k;
		}
		slot = (head + n) % (LOADER_MAX_INFLIGHT + 1);
		q_data[slot] = ev_alloc(o, sz);
		q_label[slot] = ev_alloc(o, lsz);
		n++;
	}
	while (n) {
		ev_free(o, q_data[head]);
		ev_free(o, q_label[head]);
		head = (head + 1) % (LOADER_MAX_INFLIGHT + 1);
		n--;
	}
}

int main(int argc, char **argv)
{
	struct out o = { 0 };
	char *end;
	unsigned long long seed;

	if (argc != 4) {
		fprintf(stderr, "usage: %s dl_train|loader SEED OUT.csv\n",
			argv[0]);
		return 2;
	}
	seed = strtoull(argv[2], &end, 0);
	if (*argv[2] == '\0' || *end != '\0') {
		fprintf(stderr, "gen_trace: bad seed '%s'\n", argv[2]);
		return 2;
	}
	rng_state = seed;
	o.f = fopen(argv[3], "w");
	if (!o.f) {
		perror(argv[3]);
		return 1;
	}
	fprintf(o.f, "# a,<id>,<size_bytes>,<stream or empty>,<t>  |  f,<id>,<t>   (synthetic: gen_trace %s seed %llu; t in fake microseconds)\n",
		argv[1], seed);
	if (!strcmp(argv[1], "dl_train")) {
		gen_dl_train(&o);
	} else if (!strcmp(argv[1], "loader")) {
		gen_loader(&o);
	} else {
		fprintf(stderr, "gen_trace: unknown kind '%s'\n", argv[1]);
		fclose(o.f);
		remove(argv[3]);
		return 2;
	}
	if (fclose(o.f)) {
		perror(argv[3]);
		return 1;
	}
	return 0;
}
