// SPDX-License-Identifier: MIT
/*
 * cache.c - a thread's last freed pool buffers, served again to the same
 * thread's next request of the same size and flags without the pools'
 * lock: a program's threads pinning buffers of their own (data loaders'
 * workers, PyTorch's pin-memory thread) then never wait for each other.
 *
 * - A buffer the pool served enters a table of buffers, LIVE, with its
 *   size and flags (when the table has room; else it is the pool's
 *   alone).  Freeing one marks it CACHED and keeps it in the freeing
 *   thread's cache; a second free finds it CACHED and is refused, from
 *   any thread.  A request of that thread for the same size and flags
 *   takes it back, LIVE.  A query about a CACHED buffer is refused, as
 *   of any freed one.
 * - At most IP_CACHE_SLOTS buffers and IP_CACHE_BYTES a thread are kept;
 *   past that a free goes to the pool.  A thread's cache goes back to the
 *   pool when the thread ends and when the pool cannot serve one of its
 *   requests (before the request is tried again).  The buffers stay in
 *   use in the pool meanwhile: the pool's limits hold as they are (a
 *   segment is reserved and charged whether its buffers are cached here
 *   or not); the interposer's figures count the program's requests,
 *   cache or not.
 * - A child of fork() forgets every cache: the buffers are its parent's.
 *
 * The table is open addressing over atomic keys: a lookup reads at most
 * IP_PROBE slots, an insertion or a removal is one compare-and-swap.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "host/host.h"
#include "interpose.h"

#define IP_CACHE_SLOTS	4
#ifndef IP_CACHE_BYTES	/* -DIP_CACHE_BYTES=0: nothing kept (to measure without) */
#define IP_CACHE_BYTES	(64ull << 20)
#endif
#define IP_TABLE_SLOTS	4096		/* a power of two */
#define IP_PROBE	16
#define IP_EMPTY	((uintptr_t)0)
#define IP_GONE		((uintptr_t)1)	/* a removed key: its slot reusable */

enum { IP_LIVE = 1, IP_CACHED = 2 };

static struct ip_entry {
	uintptr_t key;		/* the buffer, IP_EMPTY or IP_GONE */
	uint64_t size;		/* as asked: set before the key is */
	uint32_t flags;
	int state;		/* IP_LIVE or IP_CACHED */
} ip_table[IP_TABLE_SLOTS];

static IP_TLS struct {
	struct ip_entry *e[IP_CACHE_SLOTS];
	unsigned int n;
	uint64_t bytes;
	int keyed;		/* the destructor is set for this thread */
} TC;

static pthread_key_t ip_cache_key;
static pthread_once_t ip_cache_once = PTHREAD_ONCE_INIT;

static size_t ip_hash(uintptr_t p)
{
	return (size_t)(((uint64_t)p >> 9) * 0x9e3779b97f4a7c15ull >> 40);
}

static struct ip_entry *ip_slot_of(uintptr_t p, size_t i)
{
	return &ip_table[(ip_hash(p) + i) & (IP_TABLE_SLOTS - 1)];
}

/* The entry of buffer p, or NULL. */
static struct ip_entry *ip_find(uintptr_t p)
{
	size_t i;

	for (i = 0; i < IP_PROBE; i++) {
		struct ip_entry *e = ip_slot_of(p, i);

		if (__atomic_load_n(&e->key, __ATOMIC_ACQUIRE) == p)
			return e;
	}
	return NULL;
}

static void ip_remove(struct ip_entry *e)
{
	__atomic_store_n(&e->key, IP_GONE, __ATOMIC_RELEASE);
}

/* Every buffer of this thread's cache, back to the pool; how many. */
static unsigned int ip_cache_drain(void)
{
	struct gp_ctx *ctx = ip_pool_opened();
	unsigned int n = TC.n;
	uint64_t tag, size;

	while (TC.n) {
		struct ip_entry *e = TC.e[--TC.n];
		void *p = (void *)__atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

		ip_remove(e);
		if (ctx)
			gp_host_free_tagged(ctx, p, &tag, &size);
	}
	TC.bytes = 0;
	return n;
}

static void ip_cache_thread_end(void *unused)
{
	(void)unused;
	ip_cache_drain();
}

static void ip_cache_init(void)
{
	pthread_key_create(&ip_cache_key, ip_cache_thread_end);
}

int ip_cache_take(size_t size, unsigned int flags, void **ptr)
{
	unsigned int i;

	for (i = TC.n; i-- > 0;) {
		struct ip_entry *e = TC.e[i];

		if (e->size != size || e->flags != flags)
			continue;
		TC.e[i] = TC.e[--TC.n];
		TC.bytes -= size;
		__atomic_store_n(&e->state, IP_LIVE, __ATOMIC_RELEASE);
		*ptr = (void *)__atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		return 1;
	}
	return 0;
}

void ip_cache_track(void *ptr, size_t size, unsigned int flags)
{
	uintptr_t p = (uintptr_t)ptr, want;
	size_t i;

	for (i = 0; i < IP_PROBE; i++) {
		struct ip_entry *e = ip_slot_of(p, i);

		want = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		if (want != IP_EMPTY && want != IP_GONE)
			continue;
		/* Claimed first (a key no lookup matches), then filled. */
		if (!__atomic_compare_exchange_n(&e->key, &want, IP_GONE + 1, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		e->size = size;
		e->flags = flags;
		__atomic_store_n(&e->state, IP_LIVE, __ATOMIC_RELAXED);
		__atomic_store_n(&e->key, p, __ATOMIC_RELEASE);
		return;
	}
}

enum ip_cached ip_cache_put(void *ptr, uint64_t *size)
{
	struct ip_entry *e = ip_find((uintptr_t)ptr);
	int live = IP_LIVE;

	if (!e)
		return IP_NOT_CACHED;
	if (!__atomic_compare_exchange_n(&e->state, &live, IP_CACHED, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return IP_FREED_TWICE;
	*size = e->size;
	if (TC.n == IP_CACHE_SLOTS || TC.bytes + e->size > IP_CACHE_BYTES) {
		ip_remove(e);	/* the pool's alone again: its free */
		return IP_NOT_CACHED;
	}
	if (!TC.keyed) {
		pthread_once(&ip_cache_once, ip_cache_init);
		pthread_setspecific(ip_cache_key, &TC);
		TC.keyed = 1;
	}
	TC.e[TC.n++] = e;
	TC.bytes += e->size;
	return IP_KEPT;
}

int ip_cache_holds(const void *ptr)
{
	struct ip_entry *e = ip_find((uintptr_t)ptr);

	return e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == IP_CACHED;
}

unsigned int ip_cache_flush(void)
{
	return ip_cache_drain();
}

void ip_cache_forget(void)
{
	memset(ip_table, 0, sizeof(ip_table));
	memset(&TC, 0, sizeof(TC));
}
