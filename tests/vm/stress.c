// SPDX-License-Identifier: GPL-2.0
/*
 * stress: several processes x threads allocate, map, check, export, free
 * and unmap at random for a bounded time, sharing each process's file, and
 * race each other on the same handles: a thread maps or exports a handle
 * another thread may be freeing at that moment.  Every mapping that
 * succeeds must show its chunk's own bytes (a chunk's owner fills it with a
 * tag, and it never changes until freed).  At the end the pool must be
 * whole again: everything free, one free chunk, allocations = frees, and
 * the figures add up.
 *
 * How long it runs is counted in work, not seconds: the victim dies only
 * after MIN_ALLOCS allocations, and the rest stop only after MIN_ALLOCS
 * more (and SECONDS in all), however slowly a loaded host runs the VM.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define PROCS	3
#define THREADS	3
#define SLOTS	8		/* published chunks per thread */
#define SECONDS	6		/* at least, in all */
#define MIN_ALLOCS	100		/* before the victim dies, and after */
#define GIVE_UP		240		/* s: too few by then fails the test */
#define STOP_SIGNAL	SIGUSR1		/* from the test: stop and check */

struct proc_state {
	int fd;
	uint64_t slot[THREADS][SLOTS];	/* handle | tag, 0 = empty */
	uint64_t size[THREADS][SLOTS];
	volatile int stop;
	int errors;
};

struct thread_arg {
	struct proc_state *ps;
	int t;
	unsigned int seed;
};

static unsigned int rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void bad(struct proc_state *ps, const char *what)
{
	fprintf(stderr, "stress: %s\n", what);
	__atomic_add_fetch(&ps->errors, 1, __ATOMIC_RELAXED);
}

/* Map whatever a slot names right now; a live chunk must hold its tag. */
static void poke(struct proc_state *ps, unsigned int *seed)
{
	int t = rnd(seed) % THREADS, i = rnd(seed) % SLOTS, cfd;
	uint64_t v = __atomic_load_n(&ps->slot[t][i], __ATOMIC_ACQUIRE);
	uint64_t size = __atomic_load_n(&ps->size[t][i], __ATOMIC_ACQUIRE);
	unsigned char tag = v & 0xfff, *p;

	if (!v || !size)
		return;
	if (rnd(seed) & 1) {
		p = gp_map(ps->fd, v & ~0xfffULL, size);
		if (p == MAP_FAILED) {
			if (errno != EINVAL)
				bad(ps, "mmap: unexpected error");
			return;
		}
	} else {
		cfd = gp_export(ps->fd, v & ~0xfffULL, GPUPOOL_EXPORT_CLOEXEC);
		if (cfd < 0) {
			if (cfd != -EINVAL)
				bad(ps, "export: unexpected error");
			return;
		}
		p = mmap(NULL, size, PROT_READ, MAP_SHARED, cfd, 0);
		close(cfd);
		if (p == MAP_FAILED) {
			/* The size read may belong to a newer chunk. */
			if (errno != EINVAL)
				bad(ps, "chunk fd mmap: unexpected error");
			return;
		}
	}
	if (p[0] != tag || p[size - 1] != tag)
		bad(ps, "a mapping shows another chunk's bytes");
	munmap(p, size);
}

static void *worker(void *arg)
{
	struct thread_arg *ta = arg;
	struct proc_state *ps = ta->ps;
	unsigned char *map[SLOTS] = { 0 };
	uint64_t h[SLOTS] = { 0 }, size[SLOTS] = { 0 };
	unsigned int seed = ta->seed;
	int i, op;

	while (!ps->stop) {
		i = rnd(&seed) % SLOTS;
		op = rnd(&seed) % 4;
		if (op == 3) {
			poke(ps, &seed);
		} else if (!h[i]) {
			struct gpupool_alloc a;
			uint64_t want = (rnd(&seed) % 512 + 1) * 4096 -
					rnd(&seed) % 4096;
			unsigned char tag = 1 + rnd(&seed) % 250;
			int ret = gp_alloc_ex(ps->fd, want, 0, 0, &a);

			if (ret == -ENOMEM)
				continue;
			if (ret) {
				bad(ps, "alloc: unexpected error");
				continue;
			}
			map[i] = gp_map(ps->fd, a.handle, a.chunk_size);
			if (map[i] == MAP_FAILED) {
				bad(ps, "mmap of own chunk failed");
				gp_free(ps->fd, a.handle);
				continue;
			}
			if (!gp_all_bytes(map[i], a.chunk_size, 0))
				bad(ps, "new chunk not zero");
			memset(map[i], tag, a.chunk_size);
			h[i] = a.handle;
			size[i] = a.chunk_size;
			__atomic_store_n(&ps->size[ta->t][i], size[i], __ATOMIC_RELEASE);
			__atomic_store_n(&ps->slot[ta->t][i], h[i] | tag, __ATOMIC_RELEASE);
		} else {
			unsigned char tag = map[i][0];

			if (map[i][size[i] / 2] != tag || map[i][size[i] - 1] != tag)
				bad(ps, "own chunk changed");
			__atomic_store_n(&ps->slot[ta->t][i], 0, __ATOMIC_RELEASE);
			/* Free first or unmap first: both must work. */
			if (rnd(&seed) & 1) {
				if (gp_free(ps->fd, h[i]))
					bad(ps, "free failed");
				munmap(map[i], size[i]);
			} else {
				munmap(map[i], size[i]);
				if (gp_free(ps->fd, h[i]))
					bad(ps, "free failed");
			}
			h[i] = 0;
		}
	}
	/* Leave some chunks to close() and exit. */
	return NULL;
}

static int run_proc(void *arg)
{
	struct thread_arg ta[THREADS];
	pthread_t th[THREADS];
	struct proc_state *ps;
	int t, sig, seed = *(int *)arg;
	sigset_t stop;

	/* Whatever ends the test, its workers end with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Blocked since before fork(), so none is missed: wait for it. */
	sigemptyset(&stop);
	sigaddset(&stop, STOP_SIGNAL);
	ps = calloc(1, sizeof(*ps));
	ps->fd = gp_open_dev();
	if (ps->fd < 0)
		return 1;
	for (t = 0; t < THREADS; t++) {
		ta[t].ps = ps;
		ta[t].t = t;
		ta[t].seed = seed * 7919 + t * 104729 + 1;
		if (pthread_create(&th[t], NULL, worker, &ta[t]))
			return 2;
	}
	sigwait(&stop, &sig);
	ps->stop = 1;
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	return ps->errors ? 3 : 0;
}

/*
 * Wait until at least `allocs' ALLOCs in all and `until' on gp_now()'s
 * clock, but not past `give_up' (then the count says too few); the count.
 */
static long long run_until(long long allocs, double until, double give_up)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	long long n;

	while ((n = gp_proc_num("Allocs")) >= 0 &&
	       (n < allocs || gp_now() < until) && gp_now() < give_up)
		nanosleep(&ts, NULL);
	return n;
}

FIXTURE(stress) {
	sigset_t old_mask;
};

FIXTURE_SETUP(stress)
{
	sigset_t stop;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load("pool_size=48M"));
	sigemptyset(&stop);
	sigaddset(&stop, STOP_SIGNAL);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &stop, &self->old_mask));
}

FIXTURE_TEARDOWN(stress)
{
	sigprocmask(SIG_SETMASK, &self->old_mask, NULL);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* The run ends on its work; GIVE_UP and the harness's bound, on a hang. */
TEST_F_TIMEOUT(stress, random_alloc_free_map, GIVE_UP + 60)
{
	struct gpupool_pool_stats nodes[4], *t;
	struct gpupool_stats st;
	pid_t pids[PROCS];
	long long allocs, n;
	double start = gp_now();
	int i, status, fd;

	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			int seed = i + 1;

			_exit(run_proc(&seed));
		}
	}
	/* One more process dies mid-way, by SIGKILL. */
	pid_t victim = fork();

	ASSERT_LE(0, victim);
	if (!victim) {
		int seed = 99;

		_exit(run_proc(&seed));	/* never told to stop */
	}
	allocs = run_until(MIN_ALLOCS, start + SECONDS / 2, start + GIVE_UP);
	ASSERT_LE(MIN_ALLOCS, allocs)
		TH_LOG("%lld allocations after %.0f s", allocs, gp_now() - start);
	kill(victim, SIGKILL);
	ASSERT_EQ(victim, waitpid(victim, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status))
		TH_LOG("the victim ended by itself: status %#x", status);

	n = run_until(allocs + MIN_ALLOCS, start + SECONDS, start + GIVE_UP);
	EXPECT_LE(allocs + MIN_ALLOCS, n)
		TH_LOG("%lld allocations after %.0f s", n, gp_now() - start);
	for (i = 0; i < PROCS; i++)
		kill(pids[i], STOP_SIGNAL);
	for (i = 0; i < PROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("process %d: status %#x", i, status);
	}

	ASSERT_EQ(0, gp_wait_quiet(60000, 1));
	fd = gp_open_dev();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, gp_stats(fd, &st, nodes, 4));
	close(fd);
	t = &st.total;
	/* How long it took says how slowly this host ran the VM. */
	TH_LOG("%llu allocations, %llu failed (pool full), peak %llu kB, in %.1f s",
	       (unsigned long long)t->allocs,
	       (unsigned long long)t->failed_allocs,
	       (unsigned long long)t->peak_in_use >> 10, gp_now() - start);
	EXPECT_EQ(t->allocs, t->frees);
	EXPECT_EQ(0, t->in_use);
	EXPECT_EQ(0, t->chunks_in_use);
	EXPECT_EQ(48 * MiB, t->total);
	EXPECT_EQ(48 * MiB, t->free);
	EXPECT_EQ(st.nr_nodes, t->chunks_free);
	for (i = 0; i < (int)st.nr_nodes; i++)
		EXPECT_EQ(0, nodes[i].fragmentation_ppm);
	EXPECT_EQ(t->free >> 10, (uint64_t)gp_proc_num("PoolFree"));
	EXPECT_EQ(t->allocs, (uint64_t)gp_proc_num("Allocs"));
}

TEST_HARNESS_MAIN
