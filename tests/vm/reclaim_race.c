// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim_race: chunks become busy again while they are being given back.
 * Holder A keeps eight chunks of a 64 MiB pool, with threads that race:
 * one marks them idle and busy again at random (checking, each time one
 * goes busy, that every page is still its own), one answers asks (each
 * asked chunk A still sees idle is unmapped and freed; one it sees busy is
 * kept), one allocates freed slots again, and one marks random handles
 * idle without looking (live ones, freed ones: a chunk freed while being
 * marked idle).  B, this process, allocates 24 MiB again and again, which
 * the pool has only when A gives back.  It runs 10 s, then on until asks
 * were answered both ways (given, and busy again) at least
 * MIN_EACH times, up to 180 s.  What must hold: no busy chunk of A's ever
 * loses a byte, every chunk B gets is zero, and when both are gone
 * nothing is idle or in use and the pool is whole (and the kernel log
 * clean: KASAN, lockdep on the debug kernel).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "reclaim_lib.h"

#define SLOTS		8
#define SLOT_SIZE	(6 * MiB)
#define B_SIZE		(24 * MiB)
#define MIN_SECS	10
#define MAX_SECS	180
#define MIN_EACH	5

struct slot {
	pthread_mutex_t lock;
	atomic_ullong handle;	/* read by the chaos thread without the lock */
	char *p;		/* NULL: empty */
	int idle;		/* as A told the module */
	unsigned long pat;	/* its pattern's first page number */
};

struct a_state {
	int fd;
	struct slot s[SLOTS];
	atomic_int stop;
	atomic_ulong lost;	/* busy chunks whose bytes changed */
	atomic_ulong given, kept;
	unsigned long next_pat;
};

static uint64_t xs(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* Slot i gets a new chunk (slot lock held): 0, or -errno. */
static int a_fill(struct a_state *a, struct slot *s)
{
	struct gpupool_alloc c;
	int ret = gp_alloc_ex(a->fd, SLOT_SIZE, GPUPOOL_ALLOC_NO_RECLAIM, 0, &c);

	if (ret)
		return ret;
	s->p = gp_map(a->fd, c.handle, SLOT_SIZE);
	if (s->p == MAP_FAILED) {
		s->p = NULL;
		gp_free(a->fd, c.handle);
		return -ENOMEM;
	}
	s->handle = c.handle;
	s->idle = 0;
	s->pat = a->next_pat;
	a->next_pat += SLOT_SIZE / GP_PG;
	gp_fill_pages(s->p, SLOT_SIZE, s->pat);
	return 0;
}

static void *a_toggler(void *arg)
{
	struct a_state *a = arg;
	uint64_t r = 0x9e3779b97f4a7c15ull;

	while (!atomic_load(&a->stop)) {
		struct slot *s = &a->s[xs(&r) % SLOTS];

		pthread_mutex_lock(&s->lock);
		if (s->p && s->idle) {
			if (!rh_idle(a->fd, s->handle, GPUPOOL_IDLE_BUSY)) {
				s->idle = 0;
				if (gp_check_pages(s->p, SLOT_SIZE, s->pat))
					atomic_fetch_add(&a->lost, 1);
			}
		} else if (s->p) {
			s->idle = !rh_idle(a->fd, s->handle, 0);
		}
		pthread_mutex_unlock(&s->lock);
		usleep(xs(&r) % 2000);
	}
	return NULL;
}

static void a_answer(struct a_state *a)
{
	uint64_t h[SLOTS * 2];
	struct gpupool_asked q;
	unsigned int i, j;

	if (rh_asked(a->fd, h, SLOTS * 2, &q))
		return;
	for (j = 0; j < q.nr && j < SLOTS * 2; j++) {
		for (i = 0; i < SLOTS; i++) {
			struct slot *s = &a->s[i];

			pthread_mutex_lock(&s->lock);
			if (s->p && s->handle == h[j]) {
				if (s->idle) {
					munmap(s->p, SLOT_SIZE);
					s->p = NULL;
					gp_free(a->fd, s->handle);
					atomic_fetch_add(&a->given, 1);
				} else if (!rh_idle(a->fd, s->handle,
						    GPUPOOL_IDLE_BUSY)) {
					/* busy in A's eyes (the chaos
					 * thread marked it): say so
					 */
					atomic_fetch_add(&a->kept, 1);
				}
			}
			pthread_mutex_unlock(&s->lock);
		}
	}
}

static void *a_responder(void *arg)
{
	struct a_state *a = arg;
	struct pollfd p = { .fd = a->fd, .events = POLLPRI };

	while (!atomic_load(&a->stop))
		if (poll(&p, 1, 50) == 1 && (p.revents & POLLPRI))
			a_answer(a);
	return NULL;
}

static void *a_refiller(void *arg)
{
	struct a_state *a = arg;
	int i;

	while (!atomic_load(&a->stop)) {
		for (i = 0; i < SLOTS; i++) {
			pthread_mutex_lock(&a->s[i].lock);
			if (!a->s[i].p)
				a_fill(a, &a->s[i]);
			pthread_mutex_unlock(&a->s[i].lock);
		}
		usleep(3000);
	}
	return NULL;
}

/* Idle marks on whatever handle a slot had last, live or freed. */
static void *a_chaos(void *arg)
{
	struct a_state *a = arg;
	uint64_t r = 0x2545f4914f6cdd1dull;

	while (!atomic_load(&a->stop)) {
		rh_idle(a->fd, atomic_load(&a->s[xs(&r) % SLOTS].handle),
			xs(&r) % 4 ? 0 : GPUPOOL_IDLE_BUSY);
		usleep(xs(&r) % 5000);
	}
	return NULL;
}

/* A: its threads until a line on sock; exits with 1 if a byte was lost. */
static int a_main(int sock)
{
	static struct a_state a;
	pthread_t th[4];
	char c;
	int i;

	a.fd = gp_open_dev();
	if (a.fd < 0)
		return 2;
	for (i = 0; i < SLOTS; i++) {
		pthread_mutex_init(&a.s[i].lock, NULL);
		if (a_fill(&a, &a.s[i]))
			return 3;
	}
	pthread_create(&th[0], NULL, a_toggler, &a);
	pthread_create(&th[1], NULL, a_responder, &a);
	pthread_create(&th[2], NULL, a_refiller, &a);
	pthread_create(&th[3], NULL, a_chaos, &a);
	if (write(sock, "r", 1) != 1 || read(sock, &c, 1) != 1)
		return 4;
	atomic_store(&a.stop, 1);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("# A: %lu chunks given back, %lu asked but busy again\n",
	       atomic_load(&a.given), atomic_load(&a.kept));
	return atomic_load(&a.lost) ? 1 : 0;
}

FIXTURE(race) {
	int fd;
};

FIXTURE_SETUP(race)
{
	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=64M reclaim_wait_ms=200 reclaim_rate=0"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(race)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

TEST_F_TIMEOUT(race, busy_again_while_given_back, 300)
{
	unsigned long served = 0, refused = 0, dirty = 0;
	struct gpupool_alloc b;
	double t0 = gp_now(), t;
	struct gp_child a;
	char *p, c;
	int ret;

	ASSERT_EQ(0, gp_child_start(&a, NULL, NULL, a_main));
	ASSERT_EQ(1, read(a.sock, &c, 1));

	for (;;) {
		t = gp_now() - t0;
		if (t > MAX_SECS || (t > MIN_SECS &&
				     gp_proc_num("ReclaimGiven") >=
				     (long long)(MIN_EACH * SLOT_SIZE >> 10) &&
				     gp_proc_num("ReclaimBusy") >=
				     (long long)(MIN_EACH * SLOT_SIZE >> 10)))
			break;
		ret = gp_alloc_ex(self->fd, B_SIZE, 0, 0, &b);
		if (ret) {
			refused++;
			usleep(1000);
			continue;
		}
		served++;
		p = gp_map(self->fd, b.handle, B_SIZE);
		ASSERT_NE(MAP_FAILED, p);
		if (!gp_all_bytes(p, B_SIZE, 0))
			dirty++;
		memset(p, 0xb, B_SIZE);
		munmap(p, B_SIZE);
		ASSERT_EQ(0, gp_free(self->fd, b.handle));
	}
	ksft_print_msg("B: %lu served, %lu refused in %.0f s; asks %lld, given %lld kB, busy again %lld kB, timeouts %lld\n",
		       served, refused, gp_now() - t0, gp_proc_num("ReclaimAsks"),
		       gp_proc_num("ReclaimGiven"), gp_proc_num("ReclaimBusy"),
		       gp_proc_num("ReclaimTimeouts"));
	EXPECT_EQ(0, gp_child_stop(&a, "q", 1))
		TH_LOG("A lost bytes of a busy chunk (1) or failed");
	EXPECT_EQ(0, dirty);
	EXPECT_LE(MIN_EACH * SLOT_SIZE >> 10, gp_proc_num("ReclaimGiven"));
	EXPECT_LE(MIN_EACH * SLOT_SIZE >> 10, gp_proc_num("ReclaimBusy"));

	/* Both gone (B's file stays open): nothing idle, nothing in use. */
	EXPECT_EQ(0, gp_proc_num("ChunksIdle"));
	GP_EXPECT_DRAINED();
}

TEST_HARNESS_MAIN
