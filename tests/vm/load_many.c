// SPDX-License-Identifier: GPL-2.0
/*
 * load_many: 64 processes on the pool at once for a bounded time, each
 * allocating, mapping, checking, freeing, exporting chunks to random peers
 * over UNIX sockets (SCM_RIGHTS), mapping what it receives, forking
 * children that use what they inherit, while the driver SIGKILLs a random
 * worker every few tens of milliseconds and starts a new one in its place.
 *
 * Every chunk is filled by its owner with a tag (owner, sequence) once and
 * never written again, so any mapping of it, by anyone, must show that
 * tag.  At the end the workers stop sending, drain their sockets and let
 * go of what they received, and report what they still own; then
 * /proc/gpupool must agree with them (chunks and bytes in use, each
 * worker's holder line), nothing may have hung, and after they all exit
 * the pool must be entirely free.  The kernel log must stay clean (the
 * VM's judge).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

#define WORKERS		64
#define OWN		6	/* chunks a worker owns at most */
#define IMPORTS		4	/* received chunks a worker keeps at most */
#define MAX_PAGES	64	/* chunk sizes: 1..64 pages */
#define POOL		"pool_size=64M"

enum phase { RUN, STOP_SENDING, DRAIN };

struct shared {
	_Atomic int phase;
	atomic_int stopped_sending;	/* workers that have stopped sending */
	atomic_int reported;		/* workers that have drained and reported */
	atomic_int errors;
	atomic_ullong ops, shared_ok, forks;
	struct {
		pid_t pid;
		_Atomic int reported;
		uint64_t chunks, bytes;	/* owned, after the drain */
	} w[WORKERS];
};

/*
 * The workers that have reported wait for the end on this pipe, blocked in
 * read() until the driver closes its write end (or exits: a failed
 * ASSERT).  Not a poll: 60-odd processes waking every 2 ms would take a
 * good share of the VM's two vCPUs (TCG, and on the debug kernel KASAN and
 * lockdep on every wakeup) from the workers still draining, and from the
 * zeroing worker their ALLOCs may wait on.
 */
static int exit_pipe[2] = { -1, -1 };

/* What travels with a chunk fd. */
struct tag_msg {
	uint64_t size;
	uint32_t tag;
};

struct own {
	uint64_t handle, size;
	uint32_t tag;
	unsigned char *map;
};

struct worker {
	int idx, fd;
	unsigned int seed;
	struct shared *sh;
	int (*socks)[2];	/* socks[i][0]: send to worker i; [1]: its inbox */
	struct own own[OWN];
	int imports[IMPORTS];
	uint32_t seq;
};

static unsigned int rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void fail(struct worker *w, const char *what, int e)
{
	fprintf(stderr, "load_many: worker %d: %s: %s\n", w->idx, what,
		strerror(e));
	atomic_fetch_add(&w->sh->errors, 1);
}

/* The byte a chunk with this tag holds everywhere. */
static unsigned char tag_byte(uint32_t tag)
{
	return (unsigned char)(tag * 2654435761u >> 24) | 1;
}

static void check_tag(struct worker *w, const unsigned char *p, uint64_t size,
		      uint32_t tag, const char *what)
{
	if (!gp_all_bytes(p, size, tag_byte(tag)))
		fail(w, what, EBADMSG);
}

static void own_alloc(struct worker *w, struct own *o)
{
	struct gpupool_alloc a;
	int ret;

	ret = gp_alloc_ex(w->fd, 4096ULL * (1 + rnd(&w->seed) % MAX_PAGES), 0, 0, &a);
	if (ret) {
		if (ret != -ENOMEM)
			fail(w, "ALLOC", -ret);
		return;
	}
	o->map = gp_map(w->fd, a.handle, a.chunk_size);
	if (o->map == MAP_FAILED) {
		fail(w, "mmap", errno);
		gp_free(w->fd, a.handle);
		return;
	}
	if (!gp_all_bytes(o->map, a.chunk_size, 0))
		fail(w, "a new chunk is not zero", EBADMSG);
	o->handle = a.handle;
	o->size = a.chunk_size;
	o->tag = ((uint32_t)w->idx << 24) | (w->seq++ & 0xffffff);
	memset(o->map, tag_byte(o->tag), o->size);
}

static void own_free(struct worker *w, struct own *o)
{
	check_tag(w, o->map, o->size, o->tag, "own chunk changed");
	munmap(o->map, o->size);
	if (gp_free(w->fd, o->handle))
		fail(w, "FREE", errno);
	o->handle = 0;
}

static void share(struct worker *w, struct own *o)
{
	struct tag_msg m = { o->size, o->tag };
	int peer = rnd(&w->seed) % WORKERS, cfd, ret;

	cfd = gp_export(w->fd, o->handle, GPUPOOL_EXPORT_CLOEXEC);
	if (cfd < 0) {
		fail(w, "EXPORT", -cfd);
		return;
	}
	ret = gp_send_fd(w->socks[peer][0], cfd, &m, sizeof(m), MSG_DONTWAIT);
	if (ret && ret != -EAGAIN && ret != -ENOBUFS)
		fail(w, "send", -ret);
	close(cfd);
}

/* Take one chunk from the inbox; map and check it; keep it (or not). */
static int receive(struct worker *w, int keep)
{
	struct tag_msg m;
	unsigned char *p;
	int cfd, slot;

	cfd = gp_recv_fd(w->socks[w->idx][1], &m, sizeof(m), MSG_DONTWAIT);
	if (cfd < 0) {
		if (cfd != -EAGAIN)
			fail(w, "receive", -cfd);
		return 0;
	}
	p = mmap(NULL, m.size, PROT_READ, MAP_SHARED, cfd, 0);
	if (p == MAP_FAILED) {
		fail(w, "mmap of a received chunk", errno);
	} else {
		check_tag(w, p, m.size, m.tag, "a received chunk");
		munmap(p, m.size);
		atomic_fetch_add(&w->sh->shared_ok, 1);
	}
	slot = rnd(&w->seed) % IMPORTS;
	if (w->imports[slot] >= 0)
		close(w->imports[slot]);
	w->imports[slot] = keep ? cfd : -1;
	if (!keep)
		close(cfd);
	return 1;
}

/* A child uses a chunk it inherited (the handle on the shared fd). */
static void fork_check(struct worker *w, struct own *o)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		if (errno != EAGAIN && errno != ENOMEM)
			fail(w, "fork", errno);
		return;
	}
	if (!pid) {
		unsigned char *p = gp_map(w->fd, o->handle, o->size);

		_exit(p == MAP_FAILED ? 2 :
		      gp_all_bytes(p, o->size, tag_byte(o->tag)) &&
		      gp_all_bytes(o->map, o->size, tag_byte(o->tag)) ? 0 : 3);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		fail(w, "forked child's view", EBADMSG);
	atomic_fetch_add(&w->sh->forks, 1);
}

static void step(struct worker *w)
{
	struct own *o = &w->own[rnd(&w->seed) % OWN];
	unsigned int r = rnd(&w->seed) % 100;

	if (!o->handle) {
		own_alloc(w, o);
	} else if (r < 30) {
		own_free(w, o);
	} else if (r < 60) {
		if (atomic_load(&w->sh->phase) == RUN)
			share(w, o);
	} else if (r < 61) {
		fork_check(w, o);
	} else {
		check_tag(w, o->map, o->size, o->tag, "own chunk changed");
	}
	receive(w, 1);
	atomic_fetch_add(&w->sh->ops, 1);
}

static void worker_main(struct shared *sh, int (*socks)[2], int idx,
			unsigned int seed)
{
	struct worker w = { .idx = idx, .sh = sh, .socks = socks,
			    .seed = seed | 1 };
	char c;
	int i;

	close(exit_pipe[1]);
	for (i = 0; i < IMPORTS; i++)
		w.imports[i] = -1;
	w.fd = gp_open_dev();
	if (w.fd < 0) {
		fail(&w, "open", errno);
		_exit(1);
	}
	while (atomic_load(&sh->phase) == RUN)
		step(&w);
	atomic_fetch_add(&sh->stopped_sending, 1);
	while (atomic_load(&sh->phase) == STOP_SENDING)
		step(&w);
	/* DRAIN: nobody sends any more; empty the inbox, let go of imports. */
	while (receive(&w, 0))
		;
	for (i = 0; i < IMPORTS; i++)
		if (w.imports[i] >= 0)
			close(w.imports[i]);
	for (i = 0; i < OWN; i++) {
		if (!w.own[i].handle)
			continue;
		check_tag(&w, w.own[i].map, w.own[i].size, w.own[i].tag,
			  "own chunk changed");
		sh->w[idx].chunks++;
		sh->w[idx].bytes += w.own[i].size;
	}
	atomic_store(&sh->w[idx].reported, 1);
	atomic_fetch_add(&sh->reported, 1);
	while (read(exit_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static pid_t spawn(struct shared *sh, int (*socks)[2], int idx,
		   unsigned int seed)
{
	pid_t pid = fork();

	if (!pid)
		worker_main(sh, socks, idx, seed);
	if (pid > 0)
		sh->w[idx].pid = pid;
	return pid;
}

/* Wait until *counter reaches WORKERS, up to `secs`. */
static int wait_all(atomic_int *counter, double secs)
{
	double end = gp_now() + secs;

	while (atomic_load(counter) < WORKERS) {
		if (gp_now() > end)
			return -ETIMEDOUT;
		usleep(10000);
	}
	return 0;
}

/* Say where the workers that have not reported are (a hang's evidence). */
static void log_unreported(struct __test_metadata *_metadata,
			   struct shared *sh)
{
	char path[64], wchan[64], stat[256];
	unsigned int i;

	for (i = 0; i < WORKERS; i++) {
		if (atomic_load(&sh->w[i].reported))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/wchan", sh->w[i].pid);
		if (gp_read_file(path, wchan, sizeof(wchan)) < 0)
			strcpy(wchan, "?");
		snprintf(path, sizeof(path), "/proc/%d/stat", sh->w[i].pid);
		if (gp_read_file(path, stat, sizeof(stat)) < 0)
			strcpy(stat, "?");
		TH_LOG("worker %u (pid %d) has not reported: wchan %s, stat %s",
		       i, sh->w[i].pid, wchan, stat);
	}
}

/* The kB of a pid's holder line in /proc/gpupool; -1 without one. */
static long long holder_kb(const char *text, pid_t pid)
{
	const char *p = text;
	long long kb;
	int hpid;

	while ((p = strstr(p, "Holder: "))) {
		if (sscanf(p, "Holder: %d %lld", &hpid, &kb) == 2 && hpid == pid)
			return kb;
		p++;
	}
	return -1;
}

/* kselftest's default 30 s is too short: an empty fixture for a longer one. */
FIXTURE(many) {
	int unused;
};

FIXTURE_SETUP(many)
{
}

FIXTURE_TEARDOWN(many)
{
}

TEST_F_TIMEOUT(many, sixty_four_processes, 600)
{
	static int socks[WORKERS][2];
	static char text[1 << 16];
	struct gpupool_pool_stats s;
	uint64_t chunks = 0, bytes = 0;
	unsigned int seed, kills = 0, i;
	const char *env = getenv("GPUPOOL_LOAD_SECS");
	double secs = env ? atof(env) : 20, end, t;
	struct shared *sh;
	int status, hung = 0;
	pid_t pid;

	GP_REQUIRE();
	seed = getenv("GPUPOOL_LOAD_SEED") ?
	       (unsigned int)atoi(getenv("GPUPOOL_LOAD_SEED")) :
	       (unsigned int)time(NULL);
	TH_LOG("seed %u (GPUPOOL_LOAD_SEED), %d workers, %.0f s (GPUPOOL_LOAD_SECS)",
	       seed, WORKERS, secs);
	gp_driver_first();
	ASSERT_EQ(0, gp_load_1(POOL));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	for (i = 0; i < WORKERS; i++)
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
					socks[i]));
	ASSERT_EQ(0, pipe2(exit_pipe, O_CLOEXEC));
	for (i = 0; i < WORKERS; i++)
		ASSERT_LT(0, spawn(sh, socks, i, rnd(&seed)));

	/* Run, killing a random worker every 20-80 ms and replacing it. */
	end = gp_now() + secs;
	while (gp_now() < end) {
		usleep(20000 + rnd(&seed) % 60000);
		i = rnd(&seed) % WORKERS;
		gp_kill_now(sh->w[i].pid);
		ASSERT_EQ(sh->w[i].pid, waitpid(sh->w[i].pid, &status, 0));
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			TH_LOG("worker %u died by itself (status %#x)", i, status);
			atomic_fetch_add(&sh->errors, 1);
		}
		kills++;
		ASSERT_LT(0, spawn(sh, socks, i, rnd(&seed)));
	}

	/*
	 * Stop sending; then, once nobody can, drain and report.  Each wait
	 * is bounded at 120 s: 64 processes on two TCG vCPUs under the debug
	 * kernel, on a busy host, can take tens of seconds.  A worker still
	 * out is named with its wchan (log_unreported()).
	 */
	t = gp_now();
	atomic_store(&sh->phase, STOP_SENDING);
	EXPECT_EQ(0, wait_all(&sh->stopped_sending, 120)) hung = 1;
	TH_LOG("all stopped sending in %.1f s", gp_now() - t);
	t = gp_now();
	atomic_store(&sh->phase, DRAIN);
	EXPECT_EQ(0, wait_all(&sh->reported, 120)) {
		hung = 1;
		log_unreported(_metadata, sh);
	}
	TH_LOG("all drained and reported in %.1f s", gp_now() - t);

	ASSERT_EQ(0, gp_wait_quiet(60000, 1));
	for (i = 0; i < WORKERS; i++) {
		chunks += sh->w[i].chunks;
		bytes += sh->w[i].bytes;
	}
	s = gp_pool();
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	TH_LOG("%llu operations, %u kills, %llu chunks received and checked, %llu forks; the survivors own %llu chunks, %llu kB",
	       (unsigned long long)atomic_load(&sh->ops), kills,
	       (unsigned long long)atomic_load(&sh->shared_ok),
	       (unsigned long long)atomic_load(&sh->forks),
	       (unsigned long long)chunks, (unsigned long long)bytes >> 10);
	EXPECT_EQ(chunks, s.chunks_in_use);
	EXPECT_EQ(bytes, s.in_use);
	EXPECT_EQ(s.total, s.free + s.in_use + s.zeroing + s.quarantined);
	for (i = 0; i < WORKERS; i++) {
		long long want = (long long)(sh->w[i].bytes >> 10);
		pid_t wp = sh->w[i].pid;

		EXPECT_EQ(want, want ? holder_kb(text, wp) : 0)
			TH_LOG("worker %u (pid %d)", i, wp);
	}

	/* Everyone leaves: nothing hangs, the pool is whole. */
	close(exit_pipe[1]);
	end = gp_now() + 60;
	for (i = 0; i < WORKERS; i++) {
		while (!(pid = waitpid(sh->w[i].pid, &status, WNOHANG)) &&
		       gp_now() < end)
			usleep(10000);
		if (pid != sh->w[i].pid) {
			TH_LOG("worker %u (pid %d) hung", i, sh->w[i].pid);
			kill(sh->w[i].pid, SIGKILL);
			waitpid(sh->w[i].pid, &status, 0);
			hung = 1;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			atomic_fetch_add(&sh->errors, 1);
		}
	}
	for (i = 0; i < WORKERS; i++) {
		close(socks[i][0]);
		close(socks[i][1]);
	}
	close(exit_pipe[0]);
	EXPECT_EQ(0, hung);
	EXPECT_EQ(0, atomic_load(&sh->errors));
	EXPECT_LT(0, atomic_load(&sh->shared_ok));
	ASSERT_EQ(0, gp_wait_quiet(60000, 1));
	s = gp_pool();
	EXPECT_EQ(0, s.chunks_in_use);
	EXPECT_EQ(s.allocs, s.frees);
	EXPECT_EQ(s.total, s.free);
	EXPECT_EQ(s.total, s.largest_free);
	munmap(sh, sizeof(*sh));
	EXPECT_EQ(0, gp_unload_wait(10000));
}

TEST_HARNESS_MAIN
