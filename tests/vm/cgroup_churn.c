// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup_churn: many tenants at once.  64 processes in 8 cgroups (some
 * nested, two of them limited) allocate, map, share chunk fds through one
 * socket (so that chunks live on in processes of other cgroups), free, and
 * are SIGKILLed and replaced at random, for a few seconds.  At a pause
 * (every worker stopped in user space) every figure agrees: /proc's root
 * line is InUse, each parent's line the sum of its children's, the ioctl
 * and (dmem) dmem.current the same as /proc, cgroup by cgroup.  At the
 * end, every counter is back to zero.
 *
 * Once with the module's own table (cgroup_limits=module), once with dmem
 * (cgroup_limits=dmem; skipped, saying why, on kernels without the dmem
 * controller).  Its own program: under the debug kernel it takes minutes.
 *
 * GPUPOOL_CG_SEED=N replays the choices (the seed is printed);
 * GPUPOOL_CG_SECS (default 4) bounds the churn.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

FIXTURE(many) {
	struct cg_env env;
	int fd;
};

CG_VARIANTS(many);

FIXTURE_SETUP(many)
{
	CG_SETUP("churn");
}

FIXTURE_TEARDOWN(many)
{
	cg_teardown(&self->env);
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(60000));
}

#define NR_WORKERS	64
#define NR_LEAVES	8
#define W_CHUNKS	8
#define W_IMPORTS	4
#define TAG		0x6770742d63670000ull	/* "gpt-cg" */
#define MIN_ALLOCS	200	/* the churn runs on until so many, */
#define GIVE_UP		300	/* s, unless the workers are stuck */

static const char *const cg_all[] = {
	"a", "b", "c", "d", "n", "n/x", "n/y", "n/m", "n/m/z", "n/m/w",
};
static const char *const cg_leaf[NR_LEAVES] = {
	"a", "b", "c", "d", "n/x", "n/y", "n/m/z", "n/m/w",
};

struct churn_shared {
	atomic_int stop;
	atomic_ullong ops, allocs, enospc, enomem, sent, imported, bad_tag;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

struct wchunk {
	uint64_t handle, size;	/* handle 0: free slot */
	char *map;
};

struct wimport {
	int fd;			/* -1: free slot */
	uint64_t size;
	char *map;
};

/* A worker: 0 when it stopped as told, else what went wrong. */
static int churn_worker(const struct cg_env *env, const char *rel,
			struct churn_shared *sh, const int mb[2],
			uint64_t seed, int ready)
{
	struct wchunk ch[W_CHUNKS] = { 0 };
	struct wimport im[W_IMPORTS];
	struct gpupool_chunk_info ci;
	struct gpupool_alloc a;
	uint64_t r = seed | 1, size;
	int fd, i, ret, cfd;

	for (i = 0; i < W_IMPORTS; i++)
		im[i].fd = -1;
	if (!cg_self_in(env, rel))	/* born there (cg_fork_into()) */
		return 10;
	fd = gp_open_dev();
	if (fd < 0)
		return 11;
	if (ready >= 0) {
		if (write(ready, "r", 1) != 1)
			return 12;
		close(ready);
	}
	while (!atomic_load(&sh->stop)) {
		i = (int)(rnd(&r) % W_CHUNKS);
		switch (rnd(&r) % 10) {
		case 0: case 1: case 2: case 3:
			if (ch[i].handle)
				break;
			ret = gp_alloc_ex(fd, 4096 * (1 + rnd(&r) % 64), 0, 0, &a);
			if (ret == -ENOSPC) {
				atomic_fetch_add(&sh->enospc, 1);
				break;
			}
			if (ret == -ENOMEM) {
				atomic_fetch_add(&sh->enomem, 1);
				break;
			}
			if (ret)
				return 13;
			atomic_fetch_add(&sh->allocs, 1);
			ch[i].handle = a.handle;
			ch[i].size = a.chunk_size;
			ch[i].map = NULL;
			if (rnd(&r) % 2) {
				ch[i].map = gp_map(fd, a.handle, a.chunk_size);
				if (ch[i].map == MAP_FAILED)
					return 14;
				*(uint64_t *)ch[i].map = TAG ^ a.chunk_size;
			}
			break;
		case 4: case 5:
			if (!ch[i].handle)
				break;
			if (ch[i].map && munmap(ch[i].map, ch[i].size))
				return 15;
			if (gp_free(fd, ch[i].handle))
				return 16;
			ch[i].handle = 0;
			break;
		case 6:		/* share it: into the mailbox */
			if (!ch[i].handle)
				break;
			cfd = gp_export(fd, ch[i].handle, GPUPOOL_EXPORT_CLOEXEC);
			if (cfd < 0)
				return 17;
			if (!gp_send_fd(mb[0], cfd, &ch[i].size, sizeof(uint64_t),
					MSG_DONTWAIT))
				atomic_fetch_add(&sh->sent, 1);
			close(cfd);
			break;
		case 7:		/* take one from the mailbox, map it, check it */
			i %= W_IMPORTS;
			if (im[i].fd >= 0)
				break;
			cfd = gp_recv_fd(mb[1], &size, sizeof(size), MSG_DONTWAIT);
			if (cfd < 0)
				break;
			memset(&ci, 0, sizeof(ci));
			if (gp_ioc(cfd, GPUPOOL_IOC_CHUNK_INFO, &ci) ||
			    ci.size != size)
				return 18;
			im[i].map = mmap(NULL, size, PROT_READ | PROT_WRITE,
					 MAP_SHARED, cfd, 0);
			if (im[i].map == MAP_FAILED)
				return 19;
			if (*(uint64_t *)im[i].map &&
			    *(uint64_t *)im[i].map != (TAG ^ size))
				atomic_fetch_add(&sh->bad_tag, 1);
			im[i].fd = cfd;
			im[i].size = size;
			atomic_fetch_add(&sh->imported, 1);
			break;
		case 8:
			i %= W_IMPORTS;
			if (im[i].fd < 0)
				break;
			if (munmap(im[i].map, im[i].size))
				return 20;
			close(im[i].fd);
			im[i].fd = -1;
			break;
		default:
			usleep((useconds_t)(rnd(&r) % 2000));
			break;
		}
		atomic_fetch_add(&sh->ops, 1);
	}
	return 0;	/* exit takes everything with it */
}

static pid_t churn_spawn(const struct cg_env *env, int leaf,
			 struct churn_shared *sh, const int mb[2],
			 uint64_t seed, int ready[2])
{
	pid_t pid;

	pid = cg_fork_into(env, cg_leaf[leaf]);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* a test killed by its timeout */
		if (ready)
			close(ready[0]);
		_exit(churn_worker(env, cg_leaf[leaf], sh, mb, seed,
				   ready ? ready[1] : -1));
	}
	return pid;
}

/* Sum of the Cgroup lines of these cgroups (kB and chunks) in a text. */
static void line_sum(const struct cg_env *env, const char *text,
		     const char *const *rels, int n, long long *kb,
		     long long *chunks)
{
	struct cg_line l;
	char path[256];
	int i;

	*kb = *chunks = 0;
	for (i = 0; i < n; i++) {
		if (cg_proc_line(text, cg_rel(env, rels[i], path, sizeof(path)), &l)) {
			*kb += l.kb;
			*chunks += l.chunks;
		}
	}
}

/*
 * With every worker stopped (none between a syscall and its return) and
 * the killed ones reaped: one /proc read whose figures agree with each
 * other, with the ioctl and with dmem.current.
 */
static void churn_check(struct __test_metadata *_metadata, int fd,
			const struct cg_env *env)
{
	static const char *const top[] = { "a", "b", "c", "d", "n" };
	static const char *const n_kids[] = { "n/x", "n/y", "n/m" };
	static const char *const m_kids[] = { "n/m/z", "n/m/w" };
	static const char *const base[] = { "" };
	long long kb, chunks, pkb, pchunks;
	struct gpupool_cgroup c;
	char path[256], val[64];
	const char *text = cg_proc();
	long long in_use, nr_in_use;
	struct cg_line l;
	unsigned int i;

	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, gp_proc_value(text, "InUse", val, sizeof(val)));
	in_use = atoll(val);
	ASSERT_NE(NULL, gp_proc_value(text, "ChunksInUse", val, sizeof(val)));
	nr_in_use = atoll(val);
	ksft_print_msg("churn: at the pause, %lld kB in %lld chunks\n",
		       in_use, nr_in_use);

	/* The root line is the whole pool: every chunk is a worker's. */
	if (cg_proc_line(text, "/", &l)) {
		EXPECT_EQ(in_use, l.kb) TH_LOG("%s", text);
		EXPECT_EQ(nr_in_use, l.chunks);
	} else {
		EXPECT_EQ(0, in_use) TH_LOG("no root line: %s", text);
	}
	line_sum(env, text, base, 1, &pkb, &pchunks);
	EXPECT_EQ(in_use, pkb);
	EXPECT_EQ(nr_in_use, pchunks);
	/* Each parent is the sum of its children (no task in a parent). */
	line_sum(env, text, top, 5, &kb, &chunks);
	EXPECT_EQ(pkb, kb);
	EXPECT_EQ(pchunks, chunks);
	line_sum(env, text, (const char *const[]){ "n" }, 1, &pkb, &pchunks);
	line_sum(env, text, n_kids, 3, &kb, &chunks);
	EXPECT_EQ(pkb, kb);
	EXPECT_EQ(pchunks, chunks);
	line_sum(env, text, (const char *const[]){ "n/m" }, 1, &pkb, &pchunks);
	line_sum(env, text, m_kids, 2, &kb, &chunks);
	EXPECT_EQ(pkb, kb);
	EXPECT_EQ(pchunks, chunks);

	/* The ioctl (and dmem) agree with /proc, cgroup by cgroup. */
	for (i = 0; i < sizeof(cg_all) / sizeof(cg_all[0]); i++) {
		ASSERT_EQ(0, cg_figures(fd, env, cg_all[i], &c));
		if (!cg_proc_line(text, cg_rel(env, cg_all[i], path, sizeof(path)), &l))
			memset(&l, 0, sizeof(l));
		EXPECT_EQ(l.kb, (long long)(c.usage >> 10)) TH_LOG("%s", cg_all[i]);
		EXPECT_EQ(l.chunks, (long long)c.chunks) TH_LOG("%s", cg_all[i]);
		if (env->dmem)
			EXPECT_EQ((long long)c.usage,
				  cg_dmem_value(env, cg_all[i], "dmem.current"))
				TH_LOG("%s", cg_all[i]);
	}
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

TEST_F_TIMEOUT(many, churn, 420)
{
	uint64_t seed = env_u64("GPUPOOL_CG_SEED", (uint64_t)time(NULL));
	uint64_t secs = env_u64("GPUPOOL_CG_SECS", 4), rng = seed | 1;
	int i, st, mb[2], ready[2], kills = 0, bad = 0, paused = 0;
	struct gpupool_pool_stats s;
	pid_t pid[NR_WORKERS];
	struct churn_shared *sh;
	const char *text;
	double start, t0, end;
	char byte;

	gp_driver_first();
	start = gp_now();
	ksft_print_msg("churn: seed %llu (GPUPOOL_CG_SEED=%llu reproduces), %llu s\n",
		       (unsigned long long)seed, (unsigned long long)seed,
		       (unsigned long long)secs);
	for (i = 0; i < (int)(sizeof(cg_all) / sizeof(cg_all[0])); i++)
		ASSERT_EQ(0, cg_make(&self->env, cg_all[i]));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "a", 2 * MiB));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "n", 12 * MiB));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, mb));
	ASSERT_EQ(0, pipe(ready));

	for (i = 0; i < NR_WORKERS; i++) {
		pid[i] = churn_spawn(&self->env, i % NR_LEAVES, sh, mb,
				     rnd(&rng), ready);
		ASSERT_LT(0, pid[i]);
	}
	close(ready[1]);
	for (i = 0; i < NR_WORKERS; i++)
		ASSERT_EQ(1, read(ready[0], &byte, 1)) TH_LOG("worker %d never got ready", i);
	close(ready[0]);

	t0 = gp_now();
	ksft_print_msg("churn: %d workers ready after %.1f s\n", NR_WORKERS,
		       t0 - start);
	end = t0 + (double)secs;
	/* Its time, and then on until enough has happened, on a slow host
	 * too: the checks after it count on allocations, limits met and
	 * chunks imported.
	 */
	while (gp_now() < end ||
	       ((atomic_load(&sh->allocs) <= MIN_ALLOCS ||
		 !atomic_load(&sh->enospc) || !atomic_load(&sh->imported)) &&
		gp_now() < t0 + GIVE_UP)) {
		usleep(20000 + (useconds_t)(rnd(&rng) % 80000));
		i = (int)(rnd(&rng) % NR_WORKERS);
		if (kills < 32 && rnd(&rng) % 3 == 0) {	/* SIGKILL, replace */
			gp_kill_now(pid[i]);
			ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
			if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
				bad++;
				ksft_print_msg("worker %d: status %#x\n", pid[i], st);
			}
			kills++;
			pid[i] = churn_spawn(&self->env, i % NR_LEAVES, sh, mb,
					     rnd(&rng), NULL);
			ASSERT_LT(0, pid[i]);
		}
		if (!paused && gp_now() > t0 + (double)secs / 2) {
			/* Everyone stopped in user space: the figures add up. */
			for (i = 0; i < NR_WORKERS; i++)
				kill(pid[i], SIGSTOP);
			for (i = 0; i < NR_WORKERS; i++) {
				ASSERT_EQ(pid[i], waitpid(pid[i], &st, WUNTRACED));
				if (!WIFSTOPPED(st)) {
					bad++;
					ksft_print_msg("worker %d: status %#x\n", pid[i], st);
				}
			}
			churn_check(_metadata, self->fd, &self->env);
			for (i = 0; i < NR_WORKERS; i++)
				kill(pid[i], SIGCONT);
			paused = 1;
		}
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < NR_WORKERS; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			bad++;
			ksft_print_msg("worker %d: status %#x\n", pid[i], st);
		}
	}
	ksft_print_msg("churn: %llu ops, %llu allocs (%llu ENOSPC, %llu ENOMEM), %llu sent, %llu imported, %d SIGKILLed\n",
		       (unsigned long long)atomic_load(&sh->ops),
		       (unsigned long long)atomic_load(&sh->allocs),
		       (unsigned long long)atomic_load(&sh->enospc),
		       (unsigned long long)atomic_load(&sh->enomem),
		       (unsigned long long)atomic_load(&sh->sent),
		       (unsigned long long)atomic_load(&sh->imported), kills);
	EXPECT_EQ(0, bad);
	EXPECT_TRUE(paused);
	EXPECT_EQ(0, atomic_load(&sh->bad_tag));
	EXPECT_LT(MIN_ALLOCS, atomic_load(&sh->allocs));
	EXPECT_LT(0, atomic_load(&sh->enospc));	/* the limits were met */
	EXPECT_LT(0, atomic_load(&sh->imported));

	/* The chunks still in the mailbox go with it. */
	close(mb[0]);
	close(mb[1]);
	for (i = 0; i < 1000; i++) {
		text = cg_proc();
		if (text && !cg_proc_count(text, 1))
			break;
		usleep(10000);
	}
	text = cg_proc();
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, cg_proc_count(text, 1)) TH_LOG("%s", text);
	for (i = 0; i < (int)(sizeof(cg_all) / sizeof(cg_all[0])); i++) {
		struct gpupool_cgroup c;

		ASSERT_EQ(0, cg_figures(self->fd, &self->env, cg_all[i], &c));
		EXPECT_EQ(0, c.usage) TH_LOG("%s", cg_all[i]);
		EXPECT_EQ(0, c.chunks) TH_LOG("%s", cg_all[i]);
		if (self->env.dmem)
			EXPECT_EQ(0, cg_dmem_value(&self->env, cg_all[i],
						   "dmem.current"));
	}
	ksft_print_msg("churn: all %d gone after %.1f s more\n", NR_WORKERS,
		       gp_now() - end);
	EXPECT_EQ(0, gp_wait_quiet(120000, 1));
	ksft_print_msg("churn: pool quiet after %.1f s more\n", gp_now() - end);
	s = gp_pool();
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(0, s.chunks_in_use);
	EXPECT_EQ(s.allocs, s.frees);
	EXPECT_EQ(0, gp_proc_num("InUse"));
	/* The cgroups removed: nothing charged anywhere. */
	cg_teardown(&self->env);
	EXPECT_EQ(0, cg_proc_count(cg_proc(), 1)) TH_LOG("%s", cg_proc());
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
