// SPDX-License-Identifier: MIT
/*
 * counters.c - the interposer's figures as they are counted: a struct of
 * their own, assembled into the ABI's struct gp_interpose_stats only when
 * a snapshot is taken (state.c).
 *
 * What the pool served and freed is counted on every request, by every
 * thread at once: in a slot per thread (several threads share one beyond
 * IP_SLOTS), so that threads serving at once do not write the same cache
 * line.  The rest (what went to CUDA or failed, by why; frees passed on,
 * refused, of a parent's memory) is rarer: shared counters.  All are
 * atomic adds, read with atomic loads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "interpose.h"

#define IP_SLOTS	32
static struct ip_slot {
	uint64_t served, served_bytes, served_driver, freed, freed_bytes;
} __attribute__((aligned(64))) ip_slots[IP_SLOTS];
static IP_TLS int ip_my_slot = -1;
static unsigned int ip_next_slot;

static struct {
	uint64_t fell_back[GP_INTERPOSE_NR_WHY];
	uint64_t fell_back_bytes[GP_INTERPOSE_NR_WHY];
	uint64_t refused[GP_INTERPOSE_NR_WHY];
	uint64_t events[IP_NR_EVENTS];
	int said[GP_INTERPOSE_NR_WHY];	/* the once-per-reason message */
} C;

static void ip_add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static uint64_t ip_get(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static struct ip_slot *ip_slot(void)
{
	if (ip_my_slot < 0)
		ip_my_slot = (int)(__atomic_fetch_add(&ip_next_slot, 1,
						       __ATOMIC_RELAXED) % IP_SLOTS);
	return &ip_slots[ip_my_slot];
}

void ip_count_served(size_t size, int driver)
{
	struct ip_slot *s = ip_slot();

	ip_add(&s->served, 1);
	ip_add(&s->served_bytes, size);
	if (driver)
		ip_add(&s->served_driver, 1);
}

void ip_count_freed(uint64_t size)
{
	struct ip_slot *s = ip_slot();

	ip_add(&s->freed, 1);
	ip_add(&s->freed_bytes, size);
}

void ip_count_fallback(int why, size_t size)
{
	ip_add(&C.fell_back[why], 1);
	ip_add(&C.fell_back_bytes[why], size);
}

void ip_count_refused(int why)
{
	ip_add(&C.refused[why], 1);
}

void ip_count(enum ip_event ev)
{
	ip_add(&C.events[ev], 1);
}

void ip_counters_snapshot(struct gp_interpose_stats *st)
{
	uint64_t freed_bytes = 0;
	int i;

	for (i = 0; i < IP_SLOTS; i++) {
		const struct ip_slot *s = &ip_slots[i];

		st->served += ip_get(&s->served);
		st->served_bytes += ip_get(&s->served_bytes);
		st->served_driver += ip_get(&s->served_driver);
		st->freed += ip_get(&s->freed);
		freed_bytes += ip_get(&s->freed_bytes);
	}
	st->live_bytes = st->served_bytes - freed_bytes;
	for (i = 0; i < GP_INTERPOSE_NR_WHY; i++) {
		st->fell_back[i] = ip_get(&C.fell_back[i]);
		st->fell_back_bytes[i] = ip_get(&C.fell_back_bytes[i]);
		st->refused[i] = ip_get(&C.refused[i]);
	}
	st->real_frees = ip_get(&C.events[IP_REAL_FREE]);
	st->bad_frees = ip_get(&C.events[IP_BAD_FREE]);
	st->inherited = ip_get(&C.events[IP_INHERITED]);
}

/* In a child of fork(), which has one thread: nothing counts against it. */
void ip_counters_reset(void)
{
	memset(ip_slots, 0, sizeof(ip_slots));
	memset(&C, 0, sizeof(C));
}

void ip_say_once(int why, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (__atomic_exchange_n(&C.said[why], 1, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpupool-interpose: %s\n", line);
}
