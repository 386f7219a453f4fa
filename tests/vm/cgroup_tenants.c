// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup_tenants: whose cgroup a chunk is charged to, as tasks move, fork,
 * share and die.  A chunk is charged at ALLOC to the allocating task's
 * cgroup (and its ancestors) until its last reference goes, wherever the
 * task, its mappings and exported fds go meanwhile.
 *
 *  - move_while_holding: a task moved between cgroups leaves its chunks
 *    charged to the old one; new ones go to the new one.
 *  - move_while_allocating: a process allocating and freeing in a loop
 *    while the test moves it between three cgroups again and again; the
 *    figures add up at a pause and are all zero at the end.
 *  - fork_child_moved: a forked child moved to another cgroup: its ALLOCs
 *    (through the inherited file too) are charged there; the parent's
 *    chunks, still mapped in the child, stay the parent cgroup's.
 *  - export_to_other_cgroup: a chunk exported to a process in another
 *    cgroup stays charged to the exporter's, after the exporter frees it
 *    and exits, until the importer closes and unmaps it.
 *  - churn: 64 processes in 8 cgroups (some nested, two of them limited)
 *    allocating, sharing chunk fds through one socket, freeing, SIGKILLed
 *    at random; at a pause every /proc figure agrees (root line = InUse,
 *    a parent = the sum of its children, ioctl = /proc = dmem.current);
 *    at the end every counter is back to zero.
 *
 * Each runs once with the module's own table (cgroup_limits=module) and
 * once with dmem (cgroup_limits=dmem; skipped, saying why, on kernels
 * without the dmem controller), where dmem.current must agree too.
 *
 * GPUPOOL_CG_SEED=N replays churn's choices; GPUPOOL_CG_SECS (default 4)
 * bounds it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

FIXTURE(ten) {
	struct cg_env env;
	int fd;
	struct tenant t[2];
};

FIXTURE_VARIANT(ten) {
	int dmem;
};

FIXTURE_VARIANT_ADD(ten, module) {
	.dmem = 0,
};

FIXTURE_VARIANT_ADD(ten, dmem) {
	.dmem = 1,
};

FIXTURE_SETUP(ten)
{
	char params[128];
	int ret;

	GP_REQUIRE();
	ret = cg_mount();
	if (ret)
		GP_SKIP("cannot mount cgroup2 at %s: %s", CG_MNT, strerror(-ret));
	if (variant->dmem && !cg_has_dmem())
		GP_SKIP("this kernel has no dmem cgroup controller (CONFIG_CGROUP_DMEM, Linux 6.14+; " CG_MNT "/cgroup.controllers lacks dmem): the module variant covers the charging");
	snprintf(params, sizeof(params), "pool_size=48M cgroup_limits=%s",
		 variant->dmem ? "dmem" : "module");
	ASSERT_EQ(0, gp_load_1(params));
	ASSERT_EQ(0, cg_setup(&self->env, "tenants", variant->dmem));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(ten)
{
	tn_stop(&self->t[0]);
	tn_stop(&self->t[1]);
	cg_teardown(&self->env);
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(20000));
}

/*
 * A cgroup's charge, as the ioctl, /proc (a line exactly when something is
 * charged: no test here sets a limit) and, with dmem, dmem.current tell it.
 */
static void expect_cg(struct __test_metadata *_metadata, int fd,
		      struct cg_env *env, const char *rel, uint64_t bytes,
		      uint64_t chunks)
{
	struct gpupool_cgroup c;
	struct cg_line l;
	char path[256];
	int found;

	ASSERT_EQ(0, cg_figures(fd, env, rel, &c)) TH_LOG("%s", rel);
	EXPECT_EQ(bytes, c.usage) TH_LOG("%s: usage", rel);
	EXPECT_EQ(chunks, c.chunks) TH_LOG("%s: chunks", rel);
	found = cg_proc_line(cg_proc(), cg_rel(env, rel, path, sizeof(path)), &l);
	EXPECT_EQ(chunks != 0, found) TH_LOG("%s: line", rel);
	EXPECT_EQ((long long)(bytes >> 10), l.kb) TH_LOG("%s: line kB", rel);
	EXPECT_EQ((long long)chunks, l.chunks) TH_LOG("%s: line chunks", rel);
	if (env->dmem)
		EXPECT_EQ((long long)bytes, cg_dmem_value(env, rel, "dmem.current"))
			TH_LOG("%s: dmem.current", rel);
}

#define EXPECT_CG(rel, bytes, chunks) \
	expect_cg(_metadata, self->fd, &self->env, rel, bytes, chunks)

TEST_F(ten, move_while_holding)
{
	uint64_t h1, h2;
	char *p1;

	ASSERT_EQ(0, cg_make(&self->env, "m"));
	ASSERT_EQ(0, cg_make(&self->env, "m/a"));
	ASSERT_EQ(0, cg_make(&self->env, "m/b"));
	ASSERT_EQ(0, cg_enter(&self->env, "m/a"));
	h1 = gp_alloc(self->fd, MiB);
	ASSERT_NE(0, h1);
	p1 = gp_map(self->fd, h1, MiB);
	ASSERT_NE(MAP_FAILED, p1);
	memset(p1, 0x41, MiB);
	EXPECT_CG("m/a", MiB, 1);

	ASSERT_EQ(0, cg_enter(&self->env, "m/b"));
	EXPECT_CG("m/a", MiB, 1);	/* moving moved nothing */
	EXPECT_CG("m/b", 0, 0);
	h2 = gp_alloc(self->fd, 512 * KiB);
	ASSERT_NE(0, h2);
	EXPECT_CG("m/a", MiB, 1);
	EXPECT_CG("m/b", 512 * KiB, 1);
	EXPECT_CG("m", MiB + 512 * KiB, 2);
	EXPECT_TRUE(gp_all_bytes(p1, MiB, 0x41));

	/* Freed from elsewhere: uncharged from where it was charged. */
	ASSERT_EQ(0, cg_leave());
	ASSERT_EQ(0, munmap(p1, MiB));
	ASSERT_EQ(0, gp_free(self->fd, h1));
	EXPECT_CG("m/a", 0, 0);
	EXPECT_CG("m", 512 * KiB, 1);
	ASSERT_EQ(0, gp_free(self->fd, h2));
	EXPECT_CG("m/b", 0, 0);
	EXPECT_CG("m", 0, 0);
	EXPECT_EQ(0, cg_proc_count(cg_proc(), 1));
}

struct loop_shared {
	atomic_int stop;
	atomic_ullong allocs, frees, enomem;
};

/* Allocate and free in a loop until told to stop; 0, or what went wrong. */
static int alloc_loop(struct loop_shared *sh, uint64_t seed)
{
	uint64_t h[16] = { 0 }, r = seed | 1;
	int fd = gp_open_dev(), i, ret;
	struct gpupool_alloc a;

	if (fd < 0)
		return 10;
	while (!atomic_load(&sh->stop)) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		i = (int)(r % 16);
		if (h[i]) {
			if (gp_free(fd, h[i]))
				return 11;
			h[i] = 0;
			atomic_fetch_add(&sh->frees, 1);
			continue;
		}
		ret = gp_alloc_ex(fd, 4096 * (1 + (r >> 8) % 32), 0, 0, &a);
		if (ret == -ENOMEM) {
			atomic_fetch_add(&sh->enomem, 1);
			continue;
		}
		if (ret)
			return 12;
		h[i] = a.handle;
		atomic_fetch_add(&sh->allocs, 1);
	}
	for (i = 0; i < 16; i++)
		if (h[i] && gp_free(fd, h[i]))
			return 13;
	close(fd);
	return 0;
}

/* The chunks of a, b and c add up to m's, and to the whole pool's. */
static void sums_agree(struct __test_metadata *_metadata, int fd,
		       struct cg_env *env)
{
	static const char *const leaf[] = { "m/a", "m/b", "m/c" };
	struct gpupool_cgroup c, m;
	uint64_t bytes = 0, chunks = 0;
	struct gpupool_pool_stats s = gp_pool();
	unsigned int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, cg_figures(fd, env, leaf[i], &c));
		bytes += c.usage;
		chunks += c.chunks;
	}
	ASSERT_EQ(0, cg_figures(fd, env, "m", &m));
	EXPECT_EQ(m.usage, bytes);
	EXPECT_EQ(m.chunks, chunks);
	EXPECT_EQ(s.in_use, bytes);
	EXPECT_EQ(s.chunks_in_use, chunks);
}

TEST_F_TIMEOUT(ten, move_while_allocating, 180)
{
	static const char *const leaf[] = { "m/a", "m/b", "m/c" };
	struct gpupool_cgroup c;
	struct loop_shared *sh;
	int i, j, moves = 0, seen = 0, st;
	unsigned int charged = 0;
	double end;
	pid_t pid;

	ASSERT_EQ(0, cg_make(&self->env, "m"));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, cg_make(&self->env, leaf[i]));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(alloc_loop(sh, (uint64_t)getpid() * 2654435761u));
	}

	end = gp_now() + 3;
	for (i = 0; gp_now() < end || moves < 60; i++) {
		ASSERT_EQ(0, cg_move(&self->env, leaf[i % 3], pid));
		moves++;
		usleep(2000 + (i % 7) * 1000);
		for (j = 0; j < 3 && i % 5 == 4; j++) {	/* who holds some? */
			ASSERT_EQ(0, cg_figures(self->fd, &self->env, leaf[j], &c));
			if (c.chunks)
				charged |= 1u << j;
		}
		if (moves == 30) {	/* a pause: the figures add up */
			ASSERT_EQ(0, kill(pid, SIGSTOP));
			ASSERT_EQ(pid, waitpid(pid, &st, WUNTRACED));
			ASSERT_TRUE(WIFSTOPPED(st));
			sums_agree(_metadata, self->fd, &self->env);
			ASSERT_EQ(0, kill(pid, SIGCONT));
			seen = 1;
		}
	}
	atomic_store(&sh->stop, 1);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %#x", st);
	ksft_print_msg("move_while_allocating: %d moves, %llu allocs, %llu frees, %llu ENOMEM, charged to %#x\n",
		       moves, (unsigned long long)atomic_load(&sh->allocs),
		       (unsigned long long)atomic_load(&sh->frees),
		       (unsigned long long)atomic_load(&sh->enomem), charged);
	EXPECT_TRUE(seen);
	EXPECT_LT(100, atomic_load(&sh->allocs));
	/* Chunks were charged to more than one of them on the way. */
	EXPECT_LE(2, __builtin_popcount(charged));

	for (i = 0; i < 3; i++)
		EXPECT_CG(leaf[i], 0, 0);
	EXPECT_CG("m", 0, 0);
	EXPECT_EQ(0, cg_proc_count(cg_proc(), 1));
	EXPECT_FALSE(cg_proc_line(cg_proc(), "/", &(struct cg_line){ 0 }));
	EXPECT_EQ(0, gp_wait_quiet(30000, 1));
	EXPECT_EQ(0, gp_pool().in_use);
	EXPECT_EQ(0, gp_proc_num("InUse"));
	munmap(sh, sizeof(*sh));
}

TEST_F(ten, fork_child_moved)
{
	int go[2], rep[2], st, fd2;
	uint64_t h, hc[2];
	char *p, b = 'g';
	pid_t pid;

	ASSERT_EQ(0, cg_make(&self->env, "f"));
	ASSERT_EQ(0, cg_make(&self->env, "f/p"));
	ASSERT_EQ(0, cg_make(&self->env, "f/c"));
	ASSERT_EQ(0, cg_enter(&self->env, "f/p"));
	h = gp_alloc(self->fd, MiB);
	ASSERT_NE(0, h);
	p = gp_map(self->fd, h, MiB);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x71, MiB);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(rep));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char *q;

		if (read(go[0], &b, 1) != 1)
			_exit(10);
		if (!gp_all_bytes(p, MiB, 0x71))
			_exit(11);
		/* Through the file it inherited, and through its own. */
		hc[0] = gp_alloc(self->fd, 256 * KiB);
		fd2 = gp_open_dev();
		hc[1] = fd2 >= 0 ? gp_alloc(fd2, 128 * KiB) : 0;
		if (!hc[0] || !hc[1])
			_exit(12);
		q = gp_map(fd2, hc[1], 128 * KiB);
		if (q == MAP_FAILED)
			_exit(13);
		memset(q, 0x72, 128 * KiB);
		if (write(rep[1], hc, sizeof(hc)) != sizeof(hc))
			_exit(14);
		if (read(go[0], &b, 1) != 1)	/* until told */
			_exit(15);
		_exit(gp_all_bytes(p, MiB, 0x71) ? 0 : 16);
	}
	ASSERT_EQ(0, cg_move(&self->env, "f/c", pid));
	ASSERT_EQ(1, write(go[1], &b, 1));
	ASSERT_EQ((ssize_t)sizeof(hc), read(rep[0], hc, sizeof(hc)));

	EXPECT_CG("f/p", MiB, 1);
	EXPECT_CG("f/c", 384 * KiB, 2);
	EXPECT_CG("f", MiB + 384 * KiB, 3);

	/* The parent lets go; the child's inherited mapping keeps it here. */
	ASSERT_EQ(0, munmap(p, MiB));
	ASSERT_EQ(0, gp_free(self->fd, h));
	EXPECT_CG("f/p", MiB, 1);

	ASSERT_EQ(1, write(go[1], &b, 1));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("status %#x", st);
	/*
	 * Gone with the child: the mapping and its own file's chunk.  The
	 * chunk it made in the shared file lives on, still the child's
	 * cgroup's, until that file lets go.
	 */
	EXPECT_CG("f/p", 0, 0);
	EXPECT_CG("f/c", 256 * KiB, 1);
	ASSERT_EQ(0, gp_free(self->fd, hc[0]));
	EXPECT_CG("f/c", 0, 0);
	EXPECT_CG("f", 0, 0);
	close(go[0]);
	close(go[1]);
	close(rep[0]);
	close(rep[1]);
}

TEST_F(ten, export_to_other_cgroup)
{
	struct tenant *x = &self->t[0], *y = &self->t[1];
	int sx, sy, sy2, cfd = -1;
	struct tn_rep rp;

	ASSERT_EQ(0, cg_make(&self->env, "e"));
	ASSERT_EQ(0, cg_make(&self->env, "e/x"));
	ASSERT_EQ(0, cg_make(&self->env, "e/y"));
	ASSERT_EQ(0, tn_start(x, &self->env, "e/x"));
	ASSERT_EQ(0, tn_start(y, &self->env, "e/y"));

	sx = tn_alloc(x, MiB);
	ASSERT_LE(0, sx);
	ASSERT_EQ(0, tn_call(x, TN_MAP, sx, 0x6c, -1, NULL, NULL));
	ASSERT_EQ(0, tn_call(x, TN_EXPORT, sx, 0, -1, NULL, &cfd));
	ASSERT_LE(0, cfd);
	ASSERT_EQ(0, tn_call(y, TN_IMPORT, 0, 0, cfd, &rp, NULL));
	sy = rp.slot;
	EXPECT_EQ(MiB, rp.size);
	close(cfd);

	/* The exporter lets go of everything and exits. */
	ASSERT_EQ(0, tn_call(x, TN_FREE, sx, 0, -1, NULL, NULL));
	ASSERT_EQ(0, tn_call(x, TN_UNMAP, sx, 0, -1, NULL, NULL));
	EXPECT_EQ(0, tn_stop(x));
	EXPECT_CG("e/x", MiB, 1);
	EXPECT_CG("e/y", 0, 0);

	/* The importer uses it; its own ALLOCs are its own cgroup's. */
	ASSERT_EQ(0, tn_call(y, TN_MAP, sy, 256, -1, NULL, NULL));
	EXPECT_EQ(0, tn_call(y, TN_CHECK, sy, 0x6c, -1, NULL, NULL));
	sy2 = tn_alloc(y, 256 * KiB);
	ASSERT_LE(0, sy2);
	EXPECT_CG("e/x", MiB, 1);
	EXPECT_CG("e/y", 256 * KiB, 1);
	EXPECT_CG("e", MiB + 256 * KiB, 2);

	/* Closed but still mapped: still the exporter's. */
	ASSERT_EQ(0, tn_call(y, TN_CLOSE, sy, 0, -1, NULL, NULL));
	EXPECT_CG("e/x", MiB, 1);
	ASSERT_EQ(0, tn_call(y, TN_UNMAP, sy, 0, -1, NULL, NULL));
	EXPECT_CG("e/x", 0, 0);
	EXPECT_CG("e/y", 256 * KiB, 1);
	EXPECT_EQ(0, tn_stop(y));
	EXPECT_CG("e", 0, 0);
}

/* churn ---------------------------------------------------------------------- */

#define NR_WORKERS	64
#define NR_LEAVES	8
#define W_CHUNKS	8
#define W_IMPORTS	4
#define TAG		0x6770742d63670000ull	/* "gpt-cg" */

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
	if (cg_enter(env, rel))
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

	fflush(NULL);
	pid = fork();
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

TEST_F_TIMEOUT(ten, churn, 400)
{
	uint64_t seed = env_u64("GPUPOOL_CG_SEED", (uint64_t)time(NULL));
	uint64_t secs = env_u64("GPUPOOL_CG_SECS", 4), rng = seed | 1;
	int i, st, mb[2], ready[2], kills = 0, bad = 0, paused = 0;
	struct gpupool_pool_stats s;
	pid_t pid[NR_WORKERS];
	struct churn_shared *sh;
	const char *text;
	double t0, end;
	char byte;

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
	end = t0 + (double)secs;
	while (gp_now() < end) {
		usleep(20000 + (useconds_t)(rnd(&rng) % 80000));
		i = (int)(rnd(&rng) % NR_WORKERS);
		if (kills < 32 && rnd(&rng) % 3 == 0) {	/* SIGKILL, replace */
			kill(pid[i], SIGKILL);
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
	EXPECT_LT(200, atomic_load(&sh->allocs));
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
	EXPECT_EQ(0, gp_wait_quiet(60000, 1));
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
