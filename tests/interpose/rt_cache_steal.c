// SPDX-License-Identifier: MIT
/*
 * rt_cache_steal: a thread taking its cached buffer back races another
 * thread giving it back to the pool (userlib/interpose/cache.c: a slot
 * goes to exactly one of them).  Under GPUPOOL_HOST_LIMIT=24M two 16 MiB
 * buffers never fit together: the owner allocates and frees one 16 MiB
 * buffer again and again (its cache keeps it, in use for the pool);
 * the other thread asks for 16 MiB and a little more each time, which the
 * pool can serve only once the threads' caches are given back (serve.c),
 * the owner's among them.  Every request either is served or fails as
 * the mode says; every served buffer is freed once; the figures add up;
 * and the other thread is served again and again, so the owner's cached
 * buffer was taken from it.  Built with TSan too (its variant).
 */
#define IP_TEST_LINKS_RUNTIME
#include "ip_test.h"

#include <pthread.h>

#define MiB		(1 << 20)
#define WANT		40	/* the other thread's requests served */

struct side {
	int ok, failed, bad;	/* served, refused or passed, frees failed */
};

static int stop;

/* The owner: 16 MiB, again and again, until stopped. */
static void *owner(void *arg)
{
	struct side *s = arg;
	struct timespec pause = { 0, 20000 };
	void *p;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (cudaHostAlloc(&p, 16 * MiB, 0)) {
			s->failed++;
			cudaGetLastError();
		} else {
			s->ok++;
			((volatile char *)p)[0] = 1;
			s->bad += cudaFreeHost(p) != RT_SUCCESS;
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Strict, GPUPOOL_HOST_LIMIT=24M.  Failures: the step that failed. */
static int steal_race(void)
{
	struct side o = { 0 }, t = { 0 };
	uint64_t deadline = ip_now_ms() + 20000;
	struct gp_interpose_stats st;
	size_t size = 16 * MiB;
	pthread_t th;
	void *p;

	if (pthread_create(&th, NULL, owner, &o))
		return 1;
	while (t.ok < WANT && ip_now_ms() < deadline) {
		/* Another size each time: never this thread's own cache. */
		size += 512;
		if (cudaHostAlloc(&p, size, 0)) {
			t.failed++;
			cudaGetLastError();
			continue;
		}
		t.ok++;		/* strict: served by the pool */
		t.bad += cudaFreeHost(p) != RT_SUCCESS;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	st = ip_stats();
	if (t.ok < WANT)
		return 2;	/* the owner's buffer was never taken */
	if (o.bad || t.bad || st.bad_frees)
		return 3;
	if (st.served != (uint64_t)(o.ok + t.ok) || st.freed != st.served ||
	    st.live_bytes)
		return 4;
	if (st.refused[GP_INTERPOSE_POOL_FULL] + st.refused[GP_INTERPOSE_LIMIT] !=
	    (uint64_t)(o.failed + t.failed))
		return 5;
	return 0;
}

TEST(owner_take_races_a_steal)
{
	static const char *const env[] = {
		"GPUPOOL_INTERPOSE_MODE=strict", "GPUPOOL_HOST_LIMIT=24M", NULL,
	};

	EXPECT_EQ(0, ip_spawn("steal_race", env, NULL));
}

static const struct ip_scenario scenarios[] = {
	{ "steal_race", steal_race },
	{ NULL, NULL },
};
IP_TEST_MAIN(scenarios)
