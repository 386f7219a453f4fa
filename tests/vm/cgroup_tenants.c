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
 *
 * Each runs once with the module's own table (cgroup_limits=module) and
 * once with dmem (cgroup_limits=dmem; skipped, saying why, on kernels
 * without the dmem controller), where dmem.current must agree too.
 * Many tenants at once: cgroup_churn.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

FIXTURE(ten) {
	struct cg_env env;
	int fd;
	struct tenant t[2];
};

CG_VARIANTS(ten);

FIXTURE_SETUP(ten)
{
	CG_SETUP("tenants");
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

	/* Three seconds and 60 moves at least; then on until the chunks
	 * have been charged to two of the leaves and 100 made, unless that
	 * takes too long (the checks below then fail).
	 */
	end = gp_now() + 3;
	for (i = 0; gp_now() < end || moves < 60 ||
	     ((atomic_load(&sh->allocs) <= 100 ||
	       __builtin_popcount(charged) < 2) && gp_now() < end + 120); i++) {
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

TEST_HARNESS_MAIN
