/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_model.h - the reference model for bfc_model.c: deliberately simple.
 * One array of chunks sorted by address, best fit by scanning every free
 * chunk (keeping the first of the smallest, so the lowest address wins),
 * TF's split rule and PyTorch's max_split_size written out independently,
 * the placement policies (split rule, which end of the chunk) too,
 * coalescing by array removal, regions as a sorted array.  O(n) per
 * operation; no cleverness to share bugs with the core.
 */
#ifndef GPUPOOL_TESTS_BFC_MODEL_H
#define GPUPOOL_TESTS_BFC_MODEL_H

#include "bfc_test.h"

#define NSLOTS			16	/* region slots in a run's address grid */

struct mchunk {
	uint64_t addr, size, requested, alloc_id, tag;
	uint32_t region;	/* region id */
	bool used;
};

struct mregion {
	uint64_t base, size;
	uint32_t id;
};

struct model {
	struct bfc_params p;
	struct mchunk *c;
	size_t n, cap;
	struct mregion r[4 * NSLOTS];	/* sorted by base */
	size_t nr;
	uint32_t next_id;
	uint64_t next_alloc_id;
	struct bfc_stats st;	/* counters only; the rest is computed */
};

static void m_insert(struct model *m, size_t i, struct mchunk c)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->c = realloc(m->c, m->cap * sizeof(*m->c));
		if (!m->c)
			abort();
	}
	memmove(&m->c[i + 1], &m->c[i], (m->n - i) * sizeof(*m->c));
	m->c[i] = c;
	m->n++;
}

static void m_erase(struct model *m, size_t i)
{
	memmove(&m->c[i], &m->c[i + 1], (m->n - i - 1) * sizeof(*m->c));
	m->n--;
}

/* Index of the chunk starting at addr, or m->n. */
static size_t m_find(const struct model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->c[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && m->c[lo].addr == addr ? lo : m->n;
}

/* Merge chunk i+1 into chunk i when both are free and in one region. */
static bool m_try_merge(struct model *m, size_t i)
{
	if (i + 1 >= m->n || m->c[i].used || m->c[i + 1].used ||
	    m->c[i].region != m->c[i + 1].region)
		return false;
	m->c[i].size += m->c[i + 1].size;
	m_erase(m, i + 1);
	return true;
}

/* Policy age: chunk i's neighbour j (i - 1 or i + 1), its alloc_id; 0
 * when there is none in i's region (the region's edge).
 */
static uint64_t m_neighbour_id(const struct model *m, size_t i, size_t j)
{
	if (j >= m->n || m->c[j].region != m->c[i].region)
		return 0;
	return m->c[j].alloc_id;
}

/* The core's size class of a size of u granules (u >= 1), written out
 * from its definition: one class per size below 32 granules, above that
 * the power of two and the five bits after the leading one.
 */
static uint64_t m_class(uint64_t u)
{
	int top = 63 - __builtin_clzll(u);

	if (u < 32)
		return u;
	return ((uint64_t)top << 8) | (u >> (top - 5));
}

/* Policy age: does a free chunk other than chunk i have the size class of
 * a rest of the given size?
 */
static bool m_class_taken(const struct model *m, size_t i, uint64_t rest)
{
	uint64_t g = m->p.granularity;
	size_t j;

	for (j = 0; j < m->n; j++)
		if (j != i && !m->c[j].used &&
		    m_class(m->c[j].size / g) == m_class(rest / g))
			return true;
	return false;
}

static int m_alloc(struct model *m, uint64_t size, uint64_t *addr)
{
	uint64_t g = m->p.granularity, r, mss = m->p.max_split_size;
	size_t i, best = m->n;
	bool split = false;
	struct mchunk *c;

	if (!size)
		return -EINVAL;
	if (size > UINT64_MAX - (g - 1)) {
		m->st.failed_allocs++;
		return -ENOMEM;
	}
	r = (size + g - 1) / g * g;
	for (i = 0; i < m->n; i++)
		if (!m->c[i].used && m->c[i].size >= r &&
		    (best == m->n || m->c[i].size < m->c[best].size))
			best = i;
	if (best == m->n || (mss && r < mss && m->c[best].size >= mss)) {
		m->st.failed_allocs++;
		return -ENOMEM;
	}
	c = &m->c[best];
	if (c->size > r && !(mss && c->size >= mss)) {
		if (m->p.split_ratio &&
		    (unsigned __int128)m->p.split_ratio * r <= c->size)
			split = true;
		if (c->size - r >= m->p.split_threshold)
			split = true;
		/* age: a rest of the request or more, or the threshold (TF's
		 * rule), or of 1/8 of the request or more when no other
		 * free chunk has its size class; the others but TF's:
		 * exact-size chunks
		 */
		if (m->p.policy == BFC_POLICY_AGE)
			split = c->size - r >= r ||
				c->size - r >= m->p.split_threshold ||
				(8 * (unsigned __int128)(c->size - r) >= r &&
				 !m_class_taken(m, best, c->size - r));
		else if (m->p.policy != BFC_POLICY_TF)
			split = true;
	}
	/* the request at the high end of the chunk: seg for small requests,
	 * half for those smaller than the rest, age when the next neighbour
	 * is the older
	 */
	if (split && ((m->p.policy == BFC_POLICY_SEGREGATE &&
		       r < m->p.small_size) ||
		      (m->p.policy == BFC_POLICY_HALF && c->size - r > r) ||
		      (m->p.policy == BFC_POLICY_AGE &&
		       m_neighbour_id(m, best, best + 1) <
		       m_neighbour_id(m, best, best - 1)))) {
		struct mchunk part = { .addr = c->addr + c->size - r, .size = r,
				       .region = c->region };

		c->size -= r;
		m_insert(m, best + 1, part);
		c = &m->c[best + 1];
	} else if (split) {
		struct mchunk rest = { .addr = c->addr + r, .size = c->size - r,
				       .region = c->region };

		c->size = r;
		m_insert(m, best + 1, rest);
		c = &m->c[best];
	}
	c->used = true;
	c->requested = size;
	c->alloc_id = m->next_alloc_id++;
	c->tag = 0;
	m->st.nr_allocs++;
	if (c->size > m->st.largest_alloc)
		m->st.largest_alloc = c->size;
	*addr = c->addr;
	return 0;
}

static int m_free(struct model *m, uint64_t addr)
{
	size_t i = m_find(m, addr);

	if (i == m->n || !m->c[i].used) {
		m->st.bad_frees++;
		return -EINVAL;
	}
	m->c[i].used = false;
	m->st.nr_frees++;
	m_try_merge(m, i);
	if (i > 0)
		m_try_merge(m, i - 1);
	return 0;
}

static struct mregion *m_region(struct model *m, uint32_t id)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->r[i].id == id)
			return &m->r[i];
	return NULL;
}

static void m_region_erase(struct model *m, struct mregion *r)
{
	size_t i = (size_t)(r - m->r);

	memmove(&m->r[i], &m->r[i + 1], (m->nr - i - 1) * sizeof(*r));
	m->nr--;
}

static int m_add(struct model *m, uint64_t base, uint64_t size, uint32_t *id)
{
	uint64_t g = m->p.granularity;
	struct mregion *below = NULL, *above = NULL;
	struct mchunk c = { .addr = base, .size = size };
	size_t i, pos;

	if (!size || base % g || size % g || size > UINT64_MAX - base)
		return -EINVAL;
	for (i = 0; i < m->nr; i++) {
		if (base < m->r[i].base + m->r[i].size && m->r[i].base < base + size)
			return -EINVAL;
		if (m->p.flags & BFC_MERGE_ADJACENT_REGIONS) {
			if (m->r[i].base + m->r[i].size == base)
				below = &m->r[i];
			if (m->r[i].base == base + size)
				above = &m->r[i];
		}
	}
	if (below) {
		c.region = below->id;
		below->size += size;
		if (above) {
			for (i = 0; i < m->n; i++)
				if (m->c[i].region == above->id)
					m->c[i].region = below->id;
			below->size += above->size;
			m_region_erase(m, above);
		}
		*id = c.region;
	} else if (above) {
		c.region = above->id;
		above->base = base;
		above->size += size;
		*id = c.region;
	} else {
		for (pos = 0; pos < m->nr && m->r[pos].base < base; pos++)
			;
		memmove(&m->r[pos + 1], &m->r[pos], (m->nr - pos) * sizeof(m->r[0]));
		m->r[pos] = (struct mregion){ base, size, m->next_id++ };
		m->nr++;
		c.region = m->r[pos].id;
		*id = c.region;
	}
	for (pos = 0; pos < m->n && m->c[pos].addr < base; pos++)
		;
	m_insert(m, pos, c);
	m_try_merge(m, pos);
	if (pos > 0)
		m_try_merge(m, pos - 1);
	return 0;
}

/* Index of the region's only chunk if it is wholly free, else m->n. */
static size_t m_wholly_free(const struct model *m, const struct mregion *r)
{
	size_t i = m_find(m, r->base);

	if (i < m->n && !m->c[i].used && m->c[i].size == r->size)
		return i;
	return m->n;
}

static int m_remove(struct model *m, uint32_t id, uint64_t *base, uint64_t *size)
{
	struct mregion *r = m_region(m, id);
	size_t i;

	if (!id || !r)
		return -ENOENT;
	i = m_wholly_free(m, r);
	if (i == m->n)
		return -EBUSY;
	*base = r->base;
	*size = r->size;
	m_erase(m, i);
	m_region_erase(m, r);
	return 0;
}

static void m_stats(const struct model *m, struct bfc_stats *s)
{
	size_t i;

	*s = m->st;
	s->in_use = s->requested = s->reserved = s->largest_free = 0;
	s->chunks_in_use = s->chunks_free = 0;
	for (i = 0; i < m->n; i++) {
		const struct mchunk *c = &m->c[i];

		if (c->used) {
			s->in_use += c->size;
			s->requested += c->requested;
			s->chunks_in_use++;
		} else {
			s->chunks_free++;
			if (c->size > s->largest_free)
				s->largest_free = c->size;
		}
	}
	for (i = 0; i < m->nr; i++)
		s->reserved += m->r[i].size;
	s->regions = m->nr;
	s->free_bytes = s->reserved - s->in_use;
	s->fragmentation_ppm = s->free_bytes ?
		(uint32_t)((unsigned __int128)(s->free_bytes - s->largest_free) *
			   1000000 / s->free_bytes) : 0;
}

/*
 * The model's figures after an operation, *s as m_stats() gives them with
 * the peaks (running maxima) brought up to date first: one pass over the
 * chunks per step (the model test spent a third of its time summing them
 * twice).
 */
static void m_stats_after_op(struct model *m, struct bfc_stats *s)
{
	m_stats(m, s);
	if (s->in_use > m->st.peak_in_use)
		m->st.peak_in_use = s->in_use;
	if (s->reserved > m->st.peak_reserved)
		m->st.peak_reserved = s->reserved;
	s->peak_in_use = m->st.peak_in_use;
	s->peak_reserved = m->st.peak_reserved;
}

/* Every field of struct bfc_stats that the model predicts: X(field) for
 * each, for the comparisons of the model test and the fuzz harness.
 */
#define BFC_MODEL_STATS(X)						\
	X(in_use) X(peak_in_use) X(requested) X(reserved)		\
	X(peak_reserved) X(largest_alloc) X(largest_free) X(free_bytes)	\
	X(nr_allocs) X(nr_frees) X(failed_allocs) X(bad_frees)		\
	X(chunks_in_use) X(chunks_free) X(regions) X(fragmentation_ppm)

#endif /* GPUPOOL_TESTS_BFC_MODEL_H */
