// SPDX-License-Identifier: MIT
/*
 * map.c - a small uint64 -> pointer hash map (open addressing, linear
 * probing, tombstones), for segment lookups by region id or address.
 */
#include <stdlib.h>

#include "internal.h"

#define GP_MAP_TOMB	UINT64_MAX	/* a deleted slot; 0 is an empty one */

static uint64_t gp_map_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static int gp_map_resize(struct gp_map *m, uint64_t cap)
{
	uint64_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));
	uint64_t i;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		uint64_t k = m->keys[i], j;

		if (k == 0 || k == GP_MAP_TOMB)
			continue;
		for (j = gp_map_hash(k) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = k;
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	m->tombs = 0;
	return 0;
}

static int64_t gp_map_find(const struct gp_map *m, uint64_t key)
{
	uint64_t j, n;

	if (!m->cap)
		return -1;
	for (j = gp_map_hash(key) & (m->cap - 1), n = 0; n < m->cap;
	     j = (j + 1) & (m->cap - 1), n++) {
		if (m->keys[j] == key)
			return (int64_t)j;
		if (m->keys[j] == 0)
			return -1;
	}
	return -1;
}

int gp_map_put(struct gp_map *m, uint64_t key, void *val)
{
	int64_t i = gp_map_find(m, key);
	uint64_t j;

	if (i >= 0) {
		m->vals[i] = val;
		return 0;
	}
	if ((m->count + m->tombs + 1) * 4 >= m->cap * 3) {
		uint64_t cap = m->cap ? m->cap : 16;

		while ((m->count + 1) * 2 >= cap)
			cap *= 2;
		if (gp_map_resize(m, cap))
			return -ENOMEM;
	}
	for (j = gp_map_hash(key) & (m->cap - 1);
	     m->keys[j] != 0 && m->keys[j] != GP_MAP_TOMB;
	     j = (j + 1) & (m->cap - 1))
		;
	if (m->keys[j] == GP_MAP_TOMB)
		m->tombs--;
	m->keys[j] = key;
	m->vals[j] = val;
	m->count++;
	return 0;
}

void *gp_map_get(const struct gp_map *m, uint64_t key)
{
	int64_t i = gp_map_find(m, key);

	return i < 0 ? NULL : m->vals[i];
}

void *gp_map_del(struct gp_map *m, uint64_t key)
{
	int64_t i = gp_map_find(m, key);
	void *v;

	if (i < 0)
		return NULL;
	v = m->vals[i];
	m->keys[i] = GP_MAP_TOMB;
	m->vals[i] = NULL;
	m->count--;
	m->tombs++;
	return v;
}

void gp_map_each(const struct gp_map *m,
		 void (*fn)(void *arg, uint64_t key, void *val), void *arg)
{
	uint64_t i;

	for (i = 0; i < m->cap; i++)
		if (m->keys[i] && m->keys[i] != GP_MAP_TOMB)
			fn(arg, m->keys[i], m->vals[i]);
}

void gp_map_destroy(struct gp_map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = m->tombs = 0;
}
