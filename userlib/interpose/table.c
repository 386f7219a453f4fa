// SPDX-License-Identifier: MIT
/*
 * table.c - the buffers the pool has served, by address: what
 * cudaFreeHost and the flag and device-pointer queries look up.
 *
 * Shards, each a lock and an open-addressing map (map.c), chosen by the
 * address, so that threads allocating at once rarely meet on a lock.  An
 * entry packs the size asked (up to 2^44 bytes), the fork() generation
 * of the process that allocated it (12 bits) and the flags into the
 * map's value word.  A parent's entries stay in a child of fork() (they
 * answer "not initialized" there, as CUDA does) and are never removed.
 */
#include <errno.h>
#include <pthread.h>

#include "internal.h"
#include "interpose.h"

#define IP_SHARDS	32	/* fork() holds them all: ThreadSanitizer
				 * follows at most 64 locks held at once */
#define IP_SIZE_BITS	44
#define IP_PRESENT	0x80u	/* set in every value: 0 is "no entry" */

/* The figures of what is served and freed are counted here, under the
 * shard's lock that is taken anyway, not in shared counters that every
 * thread would write.
 */
static struct ip_shard {
	pthread_mutex_t lock;
	struct gp_map map;
	uint64_t served, served_bytes, served_driver, freed, freed_bytes;
} __attribute__((aligned(64))) ip_shards[IP_SHARDS];

static void ip_table_init(void) __attribute__((constructor));
static void ip_table_init(void)
{
	int i;

	for (i = 0; i < IP_SHARDS; i++)
		pthread_mutex_init(&ip_shards[i].lock, NULL);
}

static struct ip_shard *ip_shard_of(const void *ptr)
{
	uint64_t k = (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;

	return &ip_shards[k >> 59];
}

static void ip_unpack(uintptr_t v, unsigned int *flags, uint64_t *size,
		      unsigned int *gen)
{
	if (flags)
		*flags = (unsigned int)(v & ~IP_PRESENT & 0xff);
	if (gen)
		*gen = (unsigned int)(v >> 8) & 0xfff;
	if (size)
		*size = (uint64_t)v >> 20;
}

int ip_table_add(void *ptr, unsigned int flags, uint64_t size, int driver)
{
	struct ip_shard *s = ip_shard_of(ptr);
	uintptr_t v;
	int ret;

	if (size >> IP_SIZE_BITS)
		return -E2BIG;
	v = (uintptr_t)(size << 20) |
	    (uintptr_t)(ip_generation() & 0xfff) << 8 | IP_PRESENT | flags;
	pthread_mutex_lock(&s->lock);
	ret = gp_map_put(&s->map, (uint64_t)(uintptr_t)ptr, (void *)v);
	if (!ret) {
		s->served++;
		s->served_bytes += size;
		s->served_driver += driver != 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int ip_table_remove(void *ptr)
{
	struct ip_shard *s = ip_shard_of(ptr);
	uint64_t key = (uint64_t)(uintptr_t)ptr, size;
	unsigned int gen;
	void *v;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	v = gp_map_get(&s->map, key);
	if (v) {
		ip_unpack((uintptr_t)v, NULL, &size, &gen);
		ret = gen == (ip_generation() & 0xfff) ? 1 : -1;
	}
	if (ret > 0) {
		gp_map_del(&s->map, key);
		s->freed++;
		s->freed_bytes += size;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int ip_table_get(void *ptr, unsigned int *flags, unsigned int *gen)
{
	struct ip_shard *s = ip_shard_of(ptr);
	void *v;

	pthread_mutex_lock(&s->lock);
	v = gp_map_get(&s->map, (uint64_t)(uintptr_t)ptr);
	pthread_mutex_unlock(&s->lock);
	if (v)
		ip_unpack((uintptr_t)v, flags, NULL, gen);
	return v != NULL;
}

void ip_table_figures(struct gp_interpose_stats *st)
{
	uint64_t freed_bytes = 0;
	int i;

	st->served = st->served_bytes = st->served_driver = st->freed = 0;
	for (i = 0; i < IP_SHARDS; i++) {
		struct ip_shard *s = &ip_shards[i];

		pthread_mutex_lock(&s->lock);
		st->served += s->served;
		st->served_bytes += s->served_bytes;
		st->served_driver += s->served_driver;
		st->freed += s->freed;
		freed_bytes += s->freed_bytes;
		pthread_mutex_unlock(&s->lock);
	}
	st->live_bytes = st->served_bytes - freed_bytes;
}

/* Around fork(): no shard locked by another thread in the child, whose
 * figures start from nothing.
 */
void ip_table_lock_all(void)
{
	int i;

	for (i = 0; i < IP_SHARDS; i++)
		pthread_mutex_lock(&ip_shards[i].lock);
}

void ip_table_unlock_all(int child)
{
	int i;

	for (i = IP_SHARDS - 1; i >= 0; i--) {
		struct ip_shard *s = &ip_shards[i];

		if (child)
			s->served = s->served_bytes = s->served_driver =
				s->freed = s->freed_bytes = 0;
		pthread_mutex_unlock(&s->lock);
	}
}
