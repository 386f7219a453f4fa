// SPDX-License-Identifier: MIT
/*
 * cache.c - a thread's last freed pool buffers, served again to the same
 * thread's next request of the same size and flags without the pools'
 * lock: a program's threads pinning buffers of their own (data loaders'
 * workers, PyTorch's pin-memory thread) then never wait for each other.
 * Kept a short while only: a program that freed its pinned buffers and
 * went quiet must not keep them from other processes.
 *
 * - A buffer the pool served enters a table of buffers, LIVE, with its
 *   size and flags (when the table has room; else it is the pool's
 *   alone).  Freeing one marks it CACHED and parks it in a slot of the
 *   freeing thread's cache; a second free finds it CACHED and is refused,
 *   from any thread.  A request of that thread for the same size and
 *   flags takes it back, LIVE.  A query about a CACHED buffer is refused,
 *   as of any freed one.
 * - At most IP_CACHE_SLOTS buffers and IP_CACHE_BYTES a thread are kept;
 *   past that a free goes to the pool.  Parked buffers are in use for the
 *   pool (their segments neither idle nor asked for), so they go back to
 *   it, and their segments take part in circulation (idle, asked for,
 *   given back after host_gc_idle_ms: docs/library.md):
 *   - after a short while: the host pools' keeper thread runs
 *     ip_cache_keep (gp_host_on_parked), which gives back every buffer
 *     parked for more than about half the bound the keeper passes
 *     (GP_HOST_PARKED_MS, 100 ms, or host_gc_idle_ms when shorter) and
 *     at most about that bound: a program that comes back within
 *     microseconds, as a training loop does, finds its buffer; one that
 *     went quiet gives it back within the bound, while it calls nothing;
 *   - all of them before the keeper answers another process's ask;
 *   - every thread's when the pool cannot serve a request of one of them
 *     (then tried again), and a thread's own when it ends.
 *   The pool's limits hold as they are; the interposer's figures count
 *   the program's requests: a buffer given back from a cache is no second
 *   free.
 * - A child of fork() forgets every cache: the buffers are its parent's.
 *
 * Each slot is one word, the buffer's entry and the tick it was parked
 * at, taken by an atomic exchange: by its owner (no lock: the fast path)
 * or by a stealer (the keeper, another thread), so that exactly one of
 * them has the buffer.  Only the owner fills a slot.  Every cache is on a
 * list under ip_caches_lock, taken when a thread first parks, when it
 * ends, and by stealers; a stealer gives a buffer back with its entry
 * forgotten under the same hold of the pools' lock (gp_host_free_parked),
 * so that a double free is refused at every moment.  The keeper's ticks
 * (every half bound while anything is parked) date the slots; the owner
 * reads the tick and, when the keeper had nothing to look at, wakes it
 * (one system call for each time the process's caches stop being empty
 * while it watches).
 *
 * The table is open addressing over atomic keys: a lookup reads at most
 * IP_PROBE slots, an insertion or a removal is one compare-and-swap.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>

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
/* A slot's word: the tick << IP_IDX_BITS | the entry's index + 1; 0 empty. */
#define IP_IDX_BITS	13
#define IP_IDX_MASK	((1ull << IP_IDX_BITS) - 1)
_Static_assert(IP_TABLE_SLOTS < IP_IDX_MASK, "an index + 1 fits the slot word");

enum { IP_LIVE = 1, IP_CACHED = 2 };

static struct ip_entry {
	uintptr_t key;		/* the buffer, IP_EMPTY or IP_GONE */
	uint64_t size;		/* as asked: set before the key is */
	uint32_t flags;
	int state;		/* IP_LIVE or IP_CACHED */
} ip_table[IP_TABLE_SLOTS];

/* A thread's cache. */
struct ip_tcache {
	uint64_t slot[IP_CACHE_SLOTS];	/* atomic: see above */
	/* The owner's alone: what a full slot holds. */
	uint64_t size[IP_CACHE_SLOTS];
	uint32_t flags[IP_CACHE_SLOTS];
	int state;			/* the owner's: enum below */
	struct ip_tcache *next, **pprev;	/* under ip_caches_lock */
};
enum { IP_TC_NEW, IP_TC_LISTED, IP_TC_ENDED };

static IP_TLS struct ip_tcache TC;

static pthread_mutex_t ip_caches_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct ip_tcache *list;		/* under ip_caches_lock */
	int keeper;			/* 1: it runs, -1: it cannot; written
					 * under ip_caches_lock */
	uint64_t tick;			/* atomic: the keeper's */
	uint64_t tick_ns;		/* the keeper's alone */
	int watch;			/* atomic: 1 when the keeper sleeps
					 * until woken */
} IC = { .watch = 1 };

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

/* gp_host_free_parked's forget: the entry goes, under the pools' lock. */
static void ip_forget(void *e)
{
	ip_remove(e);
}

/* The entry a slot's word names. */
static struct ip_entry *ip_entry_of(uint64_t w)
{
	return &ip_table[(w & IP_IDX_MASK) - 1];
}

/* A CACHED buffer whose slot (if any) its caller took, back to the pool,
 * its entry forgotten under the same hold of the pools' lock.
 */
static void ip_give_back(struct gp_ctx *ctx, struct ip_entry *e)
{
	void *p = (void *)__atomic_load_n(&e->key, __ATOMIC_ACQUIRE);

	if (gp_host_free_parked(ctx, p, ip_forget, e))
		gp_debug(ctx, "interpose: parked buffer %p is no pool buffer", p);
}

/* ip_caches_lock held.  The buffers of c parked at a tick below `before`
 * back to the pool (*given counts them); how many are left parked.
 */
static unsigned int ip_steal_from(struct gp_ctx *ctx, struct ip_tcache *c,
				  uint64_t before, unsigned int *given)
{
	unsigned int i, left = 0;
	uint64_t w;

	for (i = 0; i < IP_CACHE_SLOTS; i++) {
		/* Sequentially consistent: against ip_park's (IC.watch). */
		w = __atomic_load_n(&c->slot[i], __ATOMIC_SEQ_CST);
		if (w && (w >> IP_IDX_BITS) < before &&
		    __atomic_compare_exchange_n(&c->slot[i], &w, 0, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			ip_give_back(ctx, ip_entry_of(w));
			(*given)++;
		} else if (w) {
			left++;
		}
	}
	return left;
}

/* Every cache's buffers parked at a tick below `before`, back to the
 * pool: how many are left parked.
 */
static unsigned int ip_steal(struct gp_ctx *ctx, uint64_t before,
			     unsigned int *given)
{
	unsigned int left = 0;
	struct ip_tcache *c;

	pthread_mutex_lock(&ip_caches_lock);
	for (c = IC.list; c; c = c->next)
		left += ip_steal_from(ctx, c, before, given);
	pthread_mutex_unlock(&ip_caches_lock);
	return left;
}

/* The keeper's clock, in ns. */
static uint64_t ip_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The keeper's (gp_host_parked_fn).  A tick every half bound while
 * anything is parked; a buffer parked at tick t goes back at tick t + 2:
 * parked at least half the bound, at most about the bound.  With nothing
 * left parked the keeper sleeps until woken (IC.watch).
 */
static int ip_cache_keep(struct gp_ctx *ctx, bool all, int bound_ms)
{
	uint64_t half = (uint64_t)(bound_ms > 1 ? bound_ms / 2 : 1) * 1000000;
	uint64_t now = ip_now_ns(), tick;
	unsigned int given = 0;

	if (now - IC.tick_ns >= half) {
		IC.tick_ns = now;
		__atomic_add_fetch(&IC.tick, 1, __ATOMIC_RELAXED);
	}
	tick = __atomic_load_n(&IC.tick, __ATOMIC_RELAXED);
	__atomic_store_n(&IC.watch, 1, __ATOMIC_SEQ_CST);
	if (!ip_steal(ctx, all ? UINT64_MAX : tick - 1, &given))
		return -1;
	__atomic_store_n(&IC.watch, 0, __ATOMIC_RELAXED);
	return (int)((IC.tick_ns + half - now) / 1000000) + 1;
}

/* This thread's cache, given back as the thread ends (and nothing parked
 * by it after: a later destructor's free goes to the pool).
 */
static void ip_cache_thread_end(void *unused)
{
	struct gp_ctx *ctx = ip_pool_opened();
	unsigned int i;
	uint64_t w;

	(void)unused;
	pthread_mutex_lock(&ip_caches_lock);
	if (TC.state == IP_TC_LISTED) {
		*TC.pprev = TC.next;
		if (TC.next)
			TC.next->pprev = TC.pprev;
	}
	TC.state = IP_TC_ENDED;
	pthread_mutex_unlock(&ip_caches_lock);
	for (i = 0; i < IP_CACHE_SLOTS; i++) {
		w = __atomic_exchange_n(&TC.slot[i], 0, __ATOMIC_ACQ_REL);
		if (w && ctx)
			ip_give_back(ctx, ip_entry_of(w));
	}
}

static void ip_cache_init(void)
{
	pthread_key_create(&ip_cache_key, ip_cache_thread_end);
}

/* This thread's cache on the list, the keeper running (started at the
 * process's first park): false when it cannot be (nothing is parked).
 */
static bool ip_cache_listed(struct gp_ctx *ctx)
{
	if (TC.state != IP_TC_NEW)
		return TC.state == IP_TC_LISTED;
	if (__atomic_load_n(&IC.keeper, __ATOMIC_RELAXED) < 0)
		return false;
	pthread_once(&ip_cache_once, ip_cache_init);
	pthread_mutex_lock(&ip_caches_lock);
	if (!IC.keeper)
		__atomic_store_n(&IC.keeper,
				 gp_host_on_parked(ctx, ip_cache_keep) ? -1 : 1,
				 __ATOMIC_RELAXED);
	if (IC.keeper > 0) {
		TC.next = IC.list;
		if (TC.next)
			TC.next->pprev = &TC.next;
		TC.pprev = &IC.list;
		IC.list = &TC;
		TC.state = IP_TC_LISTED;
	}
	pthread_mutex_unlock(&ip_caches_lock);
	if (TC.state == IP_TC_LISTED)
		pthread_setspecific(ip_cache_key, &TC);
	return TC.state == IP_TC_LISTED;
}

/* A free slot of this thread's cache for size more bytes, or -1. */
static int ip_cache_room(uint64_t size)
{
	uint64_t bytes = 0;
	int i, room = -1;

	for (i = 0; i < IP_CACHE_SLOTS; i++) {
		if (__atomic_load_n(&TC.slot[i], __ATOMIC_RELAXED))
			bytes += TC.size[i];
		else if (room < 0)
			room = i;
	}
	return bytes + size > IP_CACHE_BYTES ? -1 : room;
}

/* Entry idx1 - 1 into slot i, at this tick; the keeper woken if it
 * sleeps until something is parked.
 */
static void ip_park(struct gp_ctx *ctx, int i, uint64_t idx1)
{
	uint64_t tick = __atomic_load_n(&IC.tick, __ATOMIC_RELAXED);

	__atomic_store_n(&TC.slot[i], tick << IP_IDX_BITS | idx1,
			 __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&IC.watch, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&IC.watch, 0, __ATOMIC_ACQ_REL))
		gp_host_parked_wake(ctx);
}

int ip_cache_take(size_t size, unsigned int flags, void **ptr)
{
	struct ip_entry *e;
	unsigned int i;
	uint64_t w;

	for (i = 0; i < IP_CACHE_SLOTS; i++) {
		w = __atomic_load_n(&TC.slot[i], __ATOMIC_RELAXED);
		if (!w || TC.size[i] != size || TC.flags[i] != flags)
			continue;
		/* Only a stealer can have changed it since: to 0. */
		if (__atomic_exchange_n(&TC.slot[i], 0, __ATOMIC_ACQ_REL) != w)
			continue;
		e = ip_entry_of(w);
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

enum ip_cached ip_cache_put(struct gp_ctx *ctx, void *ptr, uint64_t *size)
{
	struct ip_entry *e = ip_find((uintptr_t)ptr);
	int live = IP_LIVE, i;

	if (!e)
		return IP_NOT_CACHED;
	if (!__atomic_compare_exchange_n(&e->state, &live, IP_CACHED, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return IP_FREED_TWICE;
	*size = e->size;
	i = ip_cache_room(e->size);
	if (i < 0 || !ip_cache_listed(ctx)) {
		ip_give_back(ctx, e);	/* the pool's alone again */
		return IP_FREED;
	}
	TC.size[i] = e->size;
	TC.flags[i] = e->flags;
	ip_park(ctx, i, (uint64_t)(e - ip_table) + 1);
	return IP_FREED;
}

int ip_cache_holds(const void *ptr)
{
	struct ip_entry *e = ip_find((uintptr_t)ptr);

	return e && __atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == IP_CACHED;
}

unsigned int ip_cache_flush(struct gp_ctx *ctx)
{
	unsigned int given = 0;

	ip_steal(ctx, UINT64_MAX, &given);
	return given;
}

void ip_cache_fork_prepare(void)
{
	pthread_mutex_lock(&ip_caches_lock);
}

void ip_cache_fork_parent(void)
{
	pthread_mutex_unlock(&ip_caches_lock);
}

void ip_cache_fork_child(void)
{
	memset(ip_table, 0, sizeof(ip_table));
	memset(&TC, 0, sizeof(TC));
	IC.list = NULL;
	IC.keeper = 0;
	IC.tick = IC.tick_ns = 0;
	IC.watch = 1;
	pthread_mutex_unlock(&ip_caches_lock);
}
