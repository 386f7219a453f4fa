// SPDX-License-Identifier: GPL-2.0
/*
 * cgroup_limits: per-cgroup limits on the pool, both ways the module takes
 * them: its own table (cgroup_limits=module, GPUPOOL_CGROUP_SET_LIMIT) and,
 * where the kernel has the dmem controller, dmem.max of region "gpupool"
 * (cgroup_limits=dmem).  Each limit scenario runs once per way (fixture
 * variants "module" and "dmem"; the dmem one skips, saying why, on a
 * kernel without CONFIG_CGROUP_DMEM).
 *
 *  - parent_bounds_children: a parent's limit bounds the sum of two
 *    children's chunks; past it ALLOC fails with ENOSPC, and the file's
 *    LAST_DENIAL names the parent, its limit and use (module) or the
 *    task's cgroup, whose dmem.max walk up finds the parent (dmem);
 *    /proc's Cgroup lines and GPUPOOL_IOC_CGROUP agree (and dmem.current).
 *  - limit_below_use: a limit under the current use refuses new ALLOCs
 *    while the live chunks stay mapped, readable and writable; a FREEd
 *    chunk still mapped still counts; unmapping brings it back under.
 *  - rmdir_with_live_chunks: a cgroup removed while its chunks live (the
 *    task moved out) keeps its charge and line under the old path until
 *    the chunk goes, then the line goes and the parent's figures drop.
 *  - rmdir_limited: a removed cgroup's limit goes with it (its line too,
 *    at once or with its last chunk), and the module pins no removed
 *    cgroup once nothing is charged to it.
 *  - no_limit_never_refuses: with no limit on the way, an ALLOC no pool can
 *    serve is the pool's ENOMEM, never ENOSPC; with one, it is ENOSPC.
 *  - unprivileged: setting and clearing limits needs CAP_SYS_ADMIN in the
 *    initial user namespace (EPERM without it, as an unprivileged uid, and
 *    as root of a user namespace of its own); the query works for anyone.
 *  - bad_input, bad_path_on_set, cgroup_v1_dir: every malformed request
 *    gets its errno and changes nothing.
 *  - load_params: cgroup_limits=bogus is EINVAL; dmem without the
 *    controller EOPNOTSUPP; with it, auto picks dmem (dmem.capacity lists
 *    the region) and module keeps the table.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

#define POOL	(32 * MiB)

/* The dmem variant's reason to skip, or NULL when it can run. */
static const char *no_dmem(void)
{
	static char why[256];
	int ret = cg_mount();

	if (ret) {
		snprintf(why, sizeof(why), "cannot mount cgroup2 at %s: %s",
			 CG_MNT, strerror(-ret));
		return why;
	}
	if (!cg_has_dmem())
		return "this kernel has no dmem cgroup controller (CONFIG_CGROUP_DMEM, Linux 6.14+; " CG_MNT "/cgroup.controllers lacks dmem): dmem.max cases skipped, the module's own limits are the \"module\" variant";
	return NULL;
}

FIXTURE(lim) {
	struct cg_env env;
	int fd;
	struct tenant t[4];
};

FIXTURE_VARIANT(lim) {
	int dmem;
};

FIXTURE_VARIANT_ADD(lim, module) {
	.dmem = 0,
};

FIXTURE_VARIANT_ADD(lim, dmem) {
	.dmem = 1,
};

FIXTURE_SETUP(lim)
{
	const char *why = NULL;
	char params[128];

	GP_REQUIRE();
	if (variant->dmem)
		why = no_dmem();
	if (why)
		GP_SKIP("%s", why);
	snprintf(params, sizeof(params), "pool_size=%llu cgroup_limits=%s",
		 POOL, variant->dmem ? "dmem" : "module");
	ASSERT_EQ(0, gp_load_1(params));
	ASSERT_EQ(0, cg_setup(&self->env, "limits", variant->dmem));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(lim)
{
	unsigned int i;

	for (i = 0; i < sizeof(self->t) / sizeof(self->t[0]); i++)
		tn_stop(&self->t[i]);
	cg_teardown(&self->env);
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(10000));
}

#define REL(rel)	cg_rel(&self->env, rel, relbuf, sizeof(relbuf))

/* The Cgroup line of a cgroup (rel as for cg_abs()), from a fresh read. */
static int line_of(struct cg_env *env, const char *rel, struct cg_line *l)
{
	char path[256];
	const char *text = cg_proc();

	return text && cg_proc_line(text, cg_rel(env, rel, path, sizeof(path)), l);
}

/* The cgroup's usage as the module's ioctl tells it (-1 on error). */
static long long usage_of(int fd, struct cg_env *env, const char *rel)
{
	struct gpupool_cgroup c;

	return cg_figures(fd, env, rel, &c) ? -1 : (long long)c.usage;
}

TEST_F(lim, parent_bounds_children)
{
	struct gpupool_cgroup c;
	struct cg_line l;
	struct tn_rep rp;
	char relbuf[256];
	const char *text;
	int sa, sb;

	ASSERT_EQ(0, cg_make(&self->env, "P"));
	ASSERT_EQ(0, cg_make(&self->env, "P/a"));
	ASSERT_EQ(0, cg_make(&self->env, "P/b"));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "P", 4 * MiB));
	ASSERT_EQ(0, tn_start(&self->t[0], &self->env, "P/a"));
	ASSERT_EQ(0, tn_start(&self->t[1], &self->env, "P/b"));

	/* Each child alone is well under; together they fill the parent. */
	sa = tn_alloc(&self->t[0], 2 * MiB);
	ASSERT_LE(0, sa) TH_LOG("%s", strerror(-sa));
	sb = tn_alloc(&self->t[1], 2 * MiB);
	ASSERT_LE(0, sb) TH_LOG("%s", strerror(-sb));
	EXPECT_EQ(-ENOSPC, tn_alloc(&self->t[1], 4096));
	EXPECT_EQ(-ENOSPC, tn_alloc(&self->t[0], 4096));
	/* Not the pool: it has room, and its failure count did not move. */
	EXPECT_EQ(0, gp_pool().failed_allocs);
	EXPECT_EQ(4 * MiB, gp_pool().in_use);

	/* The refusal names the parent (module) or the task's cgroup (dmem). */
	ASSERT_EQ(0, tn_call(&self->t[1], TN_DENIAL, 0, 0, -1, &rp, NULL));
	if (!variant->dmem) {
		EXPECT_STREQ(REL("P"), rp.path);
		EXPECT_EQ(cg_id(&self->env, "P"), rp.c.cgroup_id);
		EXPECT_EQ(4 * MiB, rp.c.limit);
		EXPECT_EQ(4 * MiB, rp.c.usage);
		EXPECT_EQ(2, rp.c.chunks);
		EXPECT_EQ(1, rp.c.denials);
		EXPECT_EQ(0, rp.c.flags & GPUPOOL_CGROUP_DMEM);
	} else {
		EXPECT_STREQ(REL("P/b"), rp.path);
		EXPECT_EQ(cg_id(&self->env, "P/b"), rp.c.cgroup_id);
		EXPECT_EQ(GPUPOOL_CGROUP_DMEM | GPUPOOL_CGROUP_LAST_DENIAL,
			  rp.c.flags);
		EXPECT_EQ(GPUPOOL_NO_LIMIT, rp.c.limit);
		/* Walking dmem.max up from there finds the parent full. */
		EXPECT_EQ(LLONG_MAX, cg_dmem_value(&self->env, "P/b", "dmem.max"));
		EXPECT_EQ(2 * MiB, cg_dmem_value(&self->env, "P/b", "dmem.current"));
		EXPECT_EQ(4 * MiB, cg_dmem_value(&self->env, "P", "dmem.max"));
		EXPECT_EQ(4 * MiB, cg_dmem_value(&self->env, "P", "dmem.current"));
	}
	ASSERT_EQ(0, tn_call(&self->t[0], TN_DENIAL, 0, 0, -1, &rp, NULL));
	EXPECT_STREQ(variant->dmem ? REL("P/a") : REL("P"), rp.path);

	/* The ioctl's figures: hierarchical. */
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "P", &c));
	EXPECT_EQ(4 * MiB, c.usage);
	EXPECT_EQ(2, c.chunks);
	EXPECT_EQ(variant->dmem ? GPUPOOL_NO_LIMIT : 4 * MiB, c.limit);
	EXPECT_EQ(variant->dmem ? 0 : 2, c.denials);
	EXPECT_EQ(variant->dmem ? GPUPOOL_CGROUP_DMEM : 0, c.flags);
	EXPECT_EQ(cg_id(&self->env, "P"), c.cgroup_id);
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "P/a", &c));
	EXPECT_EQ(2 * MiB, c.usage);
	EXPECT_EQ(1, c.chunks);
	EXPECT_EQ(GPUPOOL_NO_LIMIT, c.limit);
	EXPECT_EQ(0, c.denials);
	EXPECT_EQ(2 * MiB, usage_of(self->fd, &self->env, "P/b"));

	/* /proc says the same, and the root line is the pool's InUse. */
	text = cg_proc();
	ASSERT_NE(NULL, text);
	ASSERT_TRUE(cg_proc_line(text, REL("P"), &l)) TH_LOG("%s", text);
	EXPECT_EQ(4096, l.kb);
	EXPECT_EQ(2, l.chunks);
	EXPECT_EQ(variant->dmem ? -1 : 4096, l.limit_kb);
	EXPECT_EQ(variant->dmem ? 0 : 2, l.denials);
	ASSERT_TRUE(cg_proc_line(text, REL("P/a"), &l));
	EXPECT_EQ(2048, l.kb);
	EXPECT_EQ(-1, l.limit_kb);
	ASSERT_TRUE(cg_proc_line(text, REL("P/b"), &l));
	EXPECT_EQ(2048, l.kb);
	ASSERT_TRUE(cg_proc_line(text, "/", &l));
	EXPECT_EQ(4096, l.kb);
	EXPECT_EQ(2, l.chunks);
	EXPECT_EQ(4096, gp_proc_num("InUse"));
	EXPECT_EQ(2, gp_proc_num("CgroupDenials"));
	{
		char val[64];

		EXPECT_STREQ(variant->dmem ? "dmem" : "module",
			     gp_proc_value(text, "CgroupLimits", val, sizeof(val)));
	}

	/* A child's freeing makes room for the other, up to the limit. */
	EXPECT_EQ(0, tn_call(&self->t[0], TN_FREE, sa, 0, -1, NULL, NULL));
	EXPECT_EQ(2 * MiB, usage_of(self->fd, &self->env, "P"));
	EXPECT_LE(0, tn_alloc(&self->t[1], MiB));
	EXPECT_EQ(-ENOSPC, tn_alloc(&self->t[1], MiB + 4096));
	EXPECT_LE(0, tn_alloc(&self->t[1], MiB));
	EXPECT_EQ(-ENOSPC, tn_alloc(&self->t[0], 4096));

	/* All gone with the tenants: the limit stays, the use does not. */
	EXPECT_EQ(0, tn_stop(&self->t[0]));
	EXPECT_EQ(0, tn_stop(&self->t[1]));
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "P", &c));
	EXPECT_EQ(0, c.usage);
	EXPECT_EQ(0, c.chunks);
	if (variant->dmem) {
		EXPECT_EQ(0, cg_dmem_value(&self->env, "P", "dmem.current"));
		EXPECT_FALSE(line_of(&self->env, "P", &l));
	} else {
		ASSERT_TRUE(line_of(&self->env, "P", &l));
		EXPECT_EQ(0, l.kb);
		EXPECT_EQ(4096, l.limit_kb);
		EXPECT_EQ(4, l.denials);
	}
	EXPECT_FALSE(line_of(&self->env, "P/a", &l));
	text = cg_proc();
	EXPECT_EQ(0, cg_proc_count(text, 1)) TH_LOG("%s", text);
}

TEST_F(lim, limit_below_use)
{
	struct gpupool_cgroup c;
	struct tenant *t = &self->t[0];
	struct cg_line l;
	struct tn_rep rp;
	char relbuf[256];
	uint64_t limit = 2 * MiB;
	int s1, s2;

	ASSERT_EQ(0, cg_make(&self->env, "L"));
	ASSERT_EQ(0, tn_start(t, &self->env, "L"));
	s1 = tn_alloc(t, MiB);
	ASSERT_LE(0, s1);
	s2 = tn_alloc(t, 3 * MiB);
	ASSERT_LE(0, s2);
	ASSERT_EQ(0, tn_call(t, TN_MAP, s1, 0x11, -1, NULL, NULL));
	ASSERT_EQ(0, tn_call(t, TN_MAP, s2, 0x22, -1, NULL, NULL));

	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "L", limit));
	if (variant->dmem &&
	    cg_dmem_value(&self->env, "L", "dmem.max") != (long long)limit) {
		/*
		 * dmem.max is a page_counter max: one below the usage is not
		 * taken (set_resource_max() drops page_counter_set_max()'s
		 * -EBUSY; the write still succeeds).  The closest it takes:
		 * the usage itself.
		 */
		EXPECT_EQ(LLONG_MAX, cg_dmem_value(&self->env, "L", "dmem.max"));
		TH_LOG("dmem keeps no max below the usage: limit at the usage (4 MiB) instead");
		limit = 4 * MiB;
		ASSERT_EQ(0, cg_limit(self->fd, &self->env, "L", limit));
		ASSERT_EQ((long long)limit,
			  cg_dmem_value(&self->env, "L", "dmem.max"));
	}

	/* Nothing more, not a page. */
	EXPECT_EQ(-ENOSPC, tn_alloc(t, 4096));
	ASSERT_EQ(0, tn_call(t, TN_DENIAL, 0, 0, -1, &rp, NULL));
	EXPECT_STREQ(REL("L"), rp.path);
	if (!variant->dmem) {
		EXPECT_EQ(2 * MiB, rp.c.limit);
		EXPECT_EQ(4 * MiB, rp.c.usage);
	}
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "L", &c));
	EXPECT_EQ(4 * MiB, c.usage);
	EXPECT_EQ(variant->dmem ? GPUPOOL_NO_LIMIT : 2 * MiB, c.limit);
	if (!variant->dmem) {
		ASSERT_TRUE(line_of(&self->env, "L", &l));
		EXPECT_EQ(4096, l.kb);
		EXPECT_EQ(2048, l.limit_kb);
		EXPECT_EQ(1, l.denials);
	}

	/* The live chunks are intact: still mapped, readable and writable. */
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s1, 0x11, -1, NULL, NULL));
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s2, 0x22, -1, NULL, NULL));
	EXPECT_EQ(0, tn_call(t, TN_MAP, s2, 0x33, -1, NULL, NULL));
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s2, 0x33, -1, NULL, NULL));

	/* FREEd but still mapped: still charged, still over. */
	EXPECT_EQ(0, tn_call(t, TN_FREE, s2, 0, -1, NULL, NULL));
	EXPECT_EQ(4 * MiB, usage_of(self->fd, &self->env, "L"));
	EXPECT_EQ(-ENOSPC, tn_alloc(t, 4096));
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s2, 0x33, -1, NULL, NULL));
	/* Unmapped: gone, and back under the limit. */
	EXPECT_EQ(0, tn_call(t, TN_UNMAP, s2, 0, -1, NULL, NULL));
	EXPECT_EQ(MiB, usage_of(self->fd, &self->env, "L"));
	EXPECT_EQ(-ENOSPC, tn_alloc(t, limit - MiB + 4096));
	EXPECT_LE(0, tn_alloc(t, limit - MiB));
	EXPECT_EQ(-ENOSPC, tn_alloc(t, 4096));
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s1, 0x11, -1, NULL, NULL));
	EXPECT_EQ(0, tn_stop(t));
	EXPECT_EQ(0, usage_of(self->fd, &self->env, "L"));
}

TEST_F(lim, rmdir_with_live_chunks)
{
	struct gpupool_cgroup c;
	struct tenant *t = &self->t[0];
	struct cg_line l;
	char path[PATH_MAX];
	int s1, s2, xfd;

	ASSERT_EQ(0, cg_make(&self->env, "R"));
	ASSERT_EQ(0, cg_make(&self->env, "R/x"));
	ASSERT_EQ(0, cg_make(&self->env, "R/y"));
	ASSERT_EQ(0, tn_start(t, &self->env, "R/x"));
	s1 = tn_alloc(t, MiB);
	ASSERT_LE(0, s1);
	ASSERT_EQ(0, tn_call(t, TN_MAP, s1, 0x5a, -1, NULL, NULL));
	xfd = cg_open(&self->env, "R/x");
	ASSERT_LE(0, xfd);

	/* The task moves out; the cgroup goes; its charge stays. */
	ASSERT_EQ(0, cg_move(&self->env, "R/y", t->pid));
	ASSERT_EQ(0, rmdir(cg_abs(&self->env, "R/x", path, sizeof(path))))
		TH_LOG("rmdir %s: %s", path, strerror(errno));
	ASSERT_TRUE(line_of(&self->env, "R/x", &l));
	EXPECT_EQ(1024, l.kb);
	EXPECT_EQ(1, l.chunks);
	ASSERT_TRUE(line_of(&self->env, "R", &l));
	EXPECT_EQ(1024, l.kb);
	/* A removed cgroup cannot be named by its old fd any more. */
	EXPECT_EQ(-ENOENT, cg_query(self->fd, xfd, &c));
	close(xfd);

	/* New chunks go to where the task is now. */
	s2 = tn_alloc(t, 512 * KiB);
	ASSERT_LE(0, s2);
	ASSERT_TRUE(line_of(&self->env, "R", &l));
	EXPECT_EQ(1536, l.kb);
	EXPECT_EQ(2, l.chunks);
	ASSERT_TRUE(line_of(&self->env, "R/y", &l));
	EXPECT_EQ(512, l.kb);
	EXPECT_EQ(0, tn_call(t, TN_CHECK, s1, 0x5a, -1, NULL, NULL));

	/* Freed (but mapped): still there; unmapped: the line goes. */
	EXPECT_EQ(0, tn_call(t, TN_FREE, s1, 0, -1, NULL, NULL));
	EXPECT_TRUE(line_of(&self->env, "R/x", &l));
	EXPECT_EQ(0, tn_call(t, TN_UNMAP, s1, 0, -1, NULL, NULL));
	EXPECT_FALSE(line_of(&self->env, "R/x", &l)) TH_LOG("%s", cg_proc());
	ASSERT_TRUE(line_of(&self->env, "R", &l));
	EXPECT_EQ(512, l.kb);
	EXPECT_EQ(1, l.chunks);
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "R", &c));
	EXPECT_EQ(512 * KiB, c.usage);
	EXPECT_EQ(1, c.chunks);

	EXPECT_EQ(0, tn_stop(t));
	EXPECT_FALSE(line_of(&self->env, "R", &l));
	EXPECT_EQ(0, cg_proc_count(cg_proc(), 1));
}

/* Removed cgroups below the base that are still pinned (cgroup.stat). */
static long long dying_below(struct cg_env *env)
{
	char path[PATH_MAX], buf[512];
	const char *p;

	snprintf(path, sizeof(path), "%s/cgroup.stat", env->base);
	if (gp_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "nr_dying_descendants ");
	return p ? atoll(p + 21) : -1;
}

/*
 * A removed cgroup's limit goes with it: the line of a limited cgroup goes
 * at its removal (nothing charged) or when its last chunk goes; a new
 * cgroup of the same name starts with no limit; and once nothing is
 * charged to them, the module holds no removed cgroup (they leave
 * nr_dying_descendants).
 */
TEST_F(lim, rmdir_limited)
{
	struct gpupool_cgroup c;
	struct tenant *t = &self->t[0];
	struct cg_line l;
	char path[PATH_MAX], bug[512] = "";
	long long dying = -1;
	int s1, i;

	ASSERT_EQ(0, cg_make(&self->env, "R"));
	ASSERT_EQ(0, cg_make(&self->env, "R/y"));
	ASSERT_EQ(0, tn_start(t, &self->env, "R/y"));

	/* Limited, removed with nothing charged: its line goes at once. */
	ASSERT_EQ(0, cg_make(&self->env, "R/z"));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "R/z", MiB));
	EXPECT_EQ(!variant->dmem, line_of(&self->env, "R/z", &l));
	ASSERT_EQ(0, rmdir(cg_abs(&self->env, "R/z", path, sizeof(path))));
	if (line_of(&self->env, "R/z", &l)) {
		snprintf(bug, sizeof(bug), "a limited cgroup removed with nothing charged keeps its line");
		TH_LOG("%s", cg_proc());
	}

	/* Limited, removed with a chunk charged: the line lasts as long. */
	ASSERT_EQ(0, cg_make(&self->env, "R/w"));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "R/w", 2 * MiB));
	ASSERT_EQ(0, cg_move(&self->env, "R/w", t->pid));
	s1 = tn_alloc(t, 256 * KiB);
	ASSERT_LE(0, s1);
	ASSERT_EQ(0, cg_move(&self->env, "R/y", t->pid));
	ASSERT_EQ(0, rmdir(cg_abs(&self->env, "R/w", path, sizeof(path))));
	ASSERT_TRUE(line_of(&self->env, "R/w", &l));
	EXPECT_EQ(256, l.kb);
	EXPECT_EQ(1, l.chunks);
	EXPECT_EQ(0, tn_call(t, TN_FREE, s1, 0, -1, NULL, NULL));
	if (line_of(&self->env, "R/w", &l) && !bug[0]) {
		snprintf(bug, sizeof(bug), "a limited cgroup removed keeps its line after its last chunk went");
		TH_LOG("%s", cg_proc());
	}
	EXPECT_FALSE(line_of(&self->env, "R", &l));
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "R", &c));
	EXPECT_EQ(0, c.usage);

	/* The same name again: another cgroup, with no limit. */
	ASSERT_EQ(0, cg_make(&self->env, "R/z"));
	ASSERT_EQ(0, cg_figures(self->fd, &self->env, "R/z", &c));
	EXPECT_EQ(GPUPOOL_NO_LIMIT, c.limit);
	EXPECT_EQ(0, c.usage);
	if (variant->dmem)
		EXPECT_EQ(LLONG_MAX, cg_dmem_value(&self->env, "R/z", "dmem.max"));
	s1 = tn_alloc(t, 2 * MiB);	/* R/y: never limited */
	EXPECT_LE(0, s1);

	/* Nothing pins the removed ones any more: they go. */
	EXPECT_EQ(0, tn_stop(t));
	for (i = 0; i < 1000; i++) {
		cg_proc();	/* each read prunes */
		dying = dying_below(&self->env);
		if (dying <= 0)
			break;
		usleep(10000);
	}
	EXPECT_LE(0, dying);
	if (dying > 0 && !bug[0])
		snprintf(bug, sizeof(bug), "%lld removed cgroups stay pinned (nr_dying_descendants) with nothing charged",
			 dying);
	EXPECT_EQ('\0', bug[0]) TH_LOG("removed cgroups not let go of: %s",
					bug);
}

/*
 * No limit means no refusal by a cgroup, whatever the size: an ALLOC no
 * pool can serve (near 2^64 bytes, with some in use) fails with ENOMEM,
 * counts as a failed ALLOC, and leaves no LAST_DENIAL behind; under a
 * limited parent the same request is ENOSPC.
 */
TEST_F(lim, no_limit_never_refuses)
{
	struct tenant *t = &self->t[0];
	struct tn_rep rp;
	char relbuf[256];
	uint64_t huge;
	int ret;

	ASSERT_EQ(0, cg_make(&self->env, "U"));
	ASSERT_EQ(0, cg_make(&self->env, "U/u"));
	/*
	 * The 3 MiB are another process's: the asker's own use plus the size
	 * would pass 2^64 in its per-process count, ENOMEM before any cgroup.
	 */
	ASSERT_EQ(0, tn_start(&self->t[1], &self->env, "U/u"));
	ASSERT_LE(0, tn_alloc(&self->t[1], 3 * MiB));
	ASSERT_EQ(0, tn_start(t, &self->env, "U/u"));

	/* The largest size whose pages do not wrap (2^64 less a page). */
	huge = ~0ull - (2 * GP_PG - 1);
	ret = tn_alloc(t, huge);
	if (ret == -ENOSPC &&
	    !tn_call(t, TN_DENIAL, 0, 0, -1, &rp, NULL))
		TH_LOG("refused by %s, limit %#llx, use %llu", rp.path,
		       (unsigned long long)rp.c.limit,
		       (unsigned long long)rp.c.usage);
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(1, gp_pool().failed_allocs);
	EXPECT_EQ(0, gp_proc_num("CgroupDenials"));
	EXPECT_EQ(-ENOENT, tn_call(t, TN_DENIAL, 0, 0, -1, &rp, NULL));

	/*
	 * With a limit on the way, the same request is the limit's.  Not
	 * with dmem: its page_counter takes the size as a signed long (past
	 * 2^63 it would lower the count), so a size beyond the region's
	 * capacity never reaches it: the pool's ENOMEM, nothing charged.
	 */
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "U", 8 * MiB));
	ret = tn_alloc(t, huge);
	if (variant->dmem) {
		EXPECT_EQ(-ENOMEM, ret);
		EXPECT_EQ(3 * MiB, cg_dmem_value(&self->env, "U", "dmem.current"));
		EXPECT_EQ(2, gp_pool().failed_allocs);
		EXPECT_EQ(0, gp_proc_num("CgroupDenials"));
	} else {
		EXPECT_EQ(-ENOSPC, ret);
		ASSERT_EQ(0, tn_call(t, TN_DENIAL, 0, 0, -1, &rp, NULL));
		EXPECT_STREQ(REL("U"), rp.path);
		EXPECT_EQ(8 * MiB, rp.c.limit);
		EXPECT_EQ(1, gp_pool().failed_allocs);
		EXPECT_EQ(1, gp_proc_num("CgroupDenials"));
	}
	/* An ordinary size past the limit: ENOSPC either way. */
	EXPECT_EQ(-ENOSPC, tn_alloc(t, 5 * MiB + 4096));
	ASSERT_EQ(0, tn_call(t, TN_DENIAL, 0, 0, -1, &rp, NULL));
	EXPECT_STREQ(variant->dmem ? REL("U/u") : REL("U"), rp.path);
	EXPECT_LE(0, tn_alloc(t, 5 * MiB));
	EXPECT_EQ(8 * MiB, usage_of(self->fd, &self->env, "U"));
}

/* Privilege ----------------------------------------------------------------- */

/* Drop CAP_SYS_ADMIN from the effective and permitted sets (uid stays 0). */
static int drop_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].inheritable &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static int has_sys_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	return !!(d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &
		  CAP_TO_MASK(CAP_SYS_ADMIN));
}

/*
 * The VM's test runner lives in a chroot (vm/init chroots into the host's
 * root), and no chrooted process may make a user namespace (EPERM,
 * create_user_ns()).  PID 1 is not chrooted: take its root.  Root only;
 * the files the caller needs must be open already or be in the guest's
 * own root too (/dev is devtmpfs there as well).
 */
static int leave_vm_chroot(void)
{
	if (chroot("/proc/1/root") || chdir("/"))
		return -errno;
	return 0;
}

struct priv_arg {
	const struct cg_env *env;
	int how;		/* PRIV_* */
	int dmem;
};

enum { PRIV_NOCAP, PRIV_NOBODY, PRIV_USERNS_ROOT, PRIV_USERNS_NOBODY };

/*
 * In a child: lose the privilege the `how` way, then try the limit
 * interface on cgroup Q (which has 1 MiB charged and, in module mode, a
 * 3 MiB limit).  0 when everything answered as it must, else a code
 * naming the first thing that did not; 99 when the user namespace could
 * not be made at all as nobody (not this module's concern).
 */
static int try_unprivileged(void *p)
{
	struct priv_arg *a = p;
	struct gpupool_cgroup c;
	char path[256], want[256];
	int devfd = -1, cgfd = -1;

	/* Opened first (the user namespace cases leave the VM's chroot). */
	if (a->how != PRIV_NOBODY)
		cgfd = cg_open(a->env, "Q");
	switch (a->how) {
	case PRIV_NOCAP:
		devfd = gp_open_dev();
		if (devfd < 0 || drop_sys_admin() || has_sys_admin() != 0)
			return 3;
		break;
	case PRIV_USERNS_ROOT:
		devfd = gp_open_dev();
		if (devfd < 0)
			return 4;
		if (unshare(CLONE_NEWUSER) && (errno != EPERM ||
		    leave_vm_chroot() || unshare(CLONE_NEWUSER)))
			return 9;
		/* Every capability, in its own namespace. */
		if (has_sys_admin() != 1)
			return 5;
		break;
	case PRIV_NOBODY:
	case PRIV_USERNS_NOBODY:
		if (a->how == PRIV_USERNS_NOBODY && getenv("GPUPOOL_VM") &&
		    leave_vm_chroot())
			return 19;
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			return 6;
		devfd = gp_open_dev();	/* the node is 0666 here */
		if (devfd < 0)
			return 7;
		if (a->how == PRIV_USERNS_NOBODY) {
			if (unshare(CLONE_NEWUSER))
				return 99;
			if (has_sys_admin() != 1)
				return 8;
		}
		break;
	}
	if (a->how == PRIV_NOBODY)
		cgfd = cg_open(a->env, "Q");	/* 0755: anyone may */
	if (cgfd < 0)
		return 2;
	if (cg_set_limit(devfd, cgfd, MiB) != -EPERM)
		return 10;
	if (cg_set_limit(devfd, cgfd, 64 * MiB) != -EPERM)
		return 11;
	if (cg_clear_limit(devfd, cgfd) != -EPERM)
		return 12;
	/* The query needs nothing. */
	if (cg_ioc(devfd, cgfd, 0, 0, path, sizeof(path), &c))
		return 13;
	if (c.usage != MiB || c.chunks != 1)
		return 14;
	if (c.limit != (a->dmem ? GPUPOOL_NO_LIMIT : 3 * MiB))
		return 15;
	cg_rel(a->env, "Q", want, sizeof(want));
	if (strcmp(path, want))
		return 16;
	if (cg_last_denial(devfd, path, sizeof(path), &c) != -ENOENT)
		return 17;
	return 0;
}

TEST_F(lim, unprivileged)
{
	static const char *const names[] = {
		"without CAP_SYS_ADMIN", "as nobody",
		"as root of a user namespace", "as nobody's user namespace",
	};
	struct priv_arg a = { .env = &self->env, .dmem = variant->dmem };
	struct gpupool_cgroup c;
	struct tenant *t = &self->t[0];
	int ret, cgfd;

	ASSERT_EQ(0, cg_make(&self->env, "Q"));
	ASSERT_EQ(0, tn_start(t, &self->env, "Q"));
	ASSERT_LE(0, tn_alloc(t, MiB));
	cgfd = cg_open(&self->env, "Q");
	ASSERT_LE(0, cgfd);
	/* Root in the initial namespace: the module's way, or dmem's. */
	if (variant->dmem) {
		EXPECT_EQ(-EOPNOTSUPP, cg_set_limit(self->fd, cgfd, 3 * MiB));
		EXPECT_EQ(-EOPNOTSUPP, cg_clear_limit(self->fd, cgfd));
	} else {
		ASSERT_EQ(0, cg_set_limit(self->fd, cgfd, 3 * MiB));
	}
	ASSERT_EQ(0, chmod(GP_DEV, 0666));

	for (a.how = PRIV_NOCAP; a.how <= PRIV_USERNS_NOBODY; a.how++) {
		ret = gp_run_child(try_unprivileged, &a);
		if (ret == 99) {
			TH_LOG("%s: no user namespace for nobody here (unprivileged user namespaces off): not tried",
			       names[a.how]);
			continue;
		}
		EXPECT_EQ(0, ret) TH_LOG("%s: check %d failed", names[a.how], ret);
	}

	/* Nothing changed. */
	ASSERT_EQ(0, cg_query(self->fd, cgfd, &c));
	EXPECT_EQ(variant->dmem ? GPUPOOL_NO_LIMIT : 3 * MiB, c.limit);
	EXPECT_EQ(MiB, c.usage);
	if (!variant->dmem)
		EXPECT_EQ(0, cg_clear_limit(self->fd, cgfd));
	close(cgfd);
}

/* Bad input ------------------------------------------------------------------ */

/* What must not change: the cgroup's figures and every Cgroup line. */
struct snap {
	struct gpupool_cgroup c;
	char lines[4096];
	long long dmem_max;
};

static void take_snap(struct cg_env *env, int devfd, const char *rel,
		      struct snap *s)
{
	const char *text = cg_proc(), *p;
	size_t n = 0;

	memset(s, 0, sizeof(*s));
	if (cg_figures(devfd, env, rel, &s->c))
		s->c.usage = ~0ull;
	for (p = text; p && (p = strstr(p, "\nCgroup: ")); p++) {
		const char *e = strchr(p + 1, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (n + len + 1 < sizeof(s->lines)) {
			memcpy(s->lines + n, p, len);
			n += len;
		}
	}
	s->dmem_max = env->dmem ? cg_dmem_value(env, rel, "dmem.max") : 0;
}

#define SAME_AS(before, what) do { \
	struct snap __now; \
	take_snap(&self->env, self->fd, "E", &__now); \
	EXPECT_EQ(before.c.limit, __now.c.limit) TH_LOG("%s", what); \
	EXPECT_EQ(before.c.usage, __now.c.usage) TH_LOG("%s", what); \
	EXPECT_EQ(before.c.chunks, __now.c.chunks) TH_LOG("%s", what); \
	EXPECT_EQ(before.c.denials, __now.c.denials) TH_LOG("%s", what); \
	EXPECT_STREQ(before.lines, __now.lines) TH_LOG("%s", what); \
	EXPECT_EQ(before.dmem_max, __now.dmem_max) TH_LOG("%s", what); \
} while (0)

/* One malformed request: its errno, and nothing changed. */
#define BAD(want, what, ...) do { \
	struct gpupool_cgroup __c; \
	memset(&__c, 0, sizeof(__c)); \
	__c.cgroup_fd = efd; \
	__VA_ARGS__; \
	EXPECT_EQ(want, gp_ioc(self->fd, GPUPOOL_IOC_CGROUP, &__c)) \
		TH_LOG("%s", what); \
	SAME_AS(before, what); \
} while (0)

TEST_F(lim, bad_input)
{
	char path[256], relbuf[256], *none;
	struct gpupool_cgroup c;
	struct snap before;
	int efd, filefd, tmpfd, procsfd, closedfd, i;
	unsigned int bit;

	ASSERT_EQ(0, cg_make(&self->env, "E"));
	ASSERT_EQ(0, tn_start(&self->t[0], &self->env, "E"));
	ASSERT_LE(0, tn_alloc(&self->t[0], MiB));
	ASSERT_EQ(0, cg_limit(self->fd, &self->env, "E", 2 * MiB));
	EXPECT_EQ(-ENOSPC, tn_alloc(&self->t[0], 2 * MiB));
	efd = cg_open(&self->env, "E");
	ASSERT_LE(0, efd);
	take_snap(&self->env, self->fd, "E", &before);
	ASSERT_EQ(MiB, before.c.usage);

	filefd = open(GP_PROC, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, filefd);
	tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, tmpfd);
	snprintf(path, sizeof(path), "%s/E/cgroup.procs", self->env.base);
	procsfd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, procsfd);
	closedfd = dup(filefd);
	ASSERT_LE(0, closedfd);
	close(closedfd);

	/* Not a cgroup v2 directory: EBADF, for the query and for a change. */
	for (i = 0; i < 2; i++) {
		uint32_t fl = i ? GPUPOOL_CGROUP_SET_LIMIT : 0;
		uint64_t lim = i ? MiB : 0;

		if (i && variant->dmem)
			break;	/* EOPNOTSUPP comes first there (below) */
		BAD(-EBADF, "no such fd", __c.cgroup_fd = closedfd;
		    __c.flags = fl; __c.limit = lim);
		BAD(-EBADF, "fd -1", __c.cgroup_fd = -1; __c.flags = fl;
		    __c.limit = lim);
		BAD(-EBADF, "a regular file", __c.cgroup_fd = filefd;
		    __c.flags = fl; __c.limit = lim);
		BAD(-EBADF, "/tmp", __c.cgroup_fd = tmpfd; __c.flags = fl;
		    __c.limit = lim);
		BAD(-EBADF, "cgroup.procs", __c.cgroup_fd = procsfd;
		    __c.flags = fl; __c.limit = lim);
		BAD(-EBADF, "/dev/gpupool", __c.cgroup_fd = self->fd;
		    __c.flags = fl; __c.limit = lim);
	}

	/* Malformed requests. */
	BAD(-EINVAL, "SET_LIMIT 0", __c.flags = GPUPOOL_CGROUP_SET_LIMIT);
	BAD(-EINVAL, "SET_LIMIT NO_LIMIT", __c.flags = GPUPOOL_CGROUP_SET_LIMIT;
	    __c.limit = GPUPOOL_NO_LIMIT);
	BAD(-EINVAL, "SET and CLEAR", __c.flags = GPUPOOL_CGROUP_SET_LIMIT |
	    GPUPOOL_CGROUP_CLEAR_LIMIT; __c.limit = MiB);
	BAD(-EINVAL, "CLEAR with a limit", __c.flags = GPUPOOL_CGROUP_CLEAR_LIMIT;
	    __c.limit = MiB);
	BAD(-EINVAL, "query with a limit", __c.limit = MiB);
	for (bit = 0; bit < 32; bit++) {
		char what[64];

		if (GPUPOOL_CGROUP_VALID_FLAGS & (1u << bit))
			continue;
		snprintf(what, sizeof(what), "flag bit %u", bit);
		BAD(-EINVAL, what, __c.flags = 1u << bit);
		BAD(-EINVAL, what, __c.flags = (1u << bit) |
		    GPUPOOL_CGROUP_SET_LIMIT; __c.limit = MiB);
	}
	BAD(-EINVAL, "pad", __c.pad = 1);
	BAD(-EINVAL, "pad with SET", __c.pad = 1;
	    __c.flags = GPUPOOL_CGROUP_SET_LIMIT; __c.limit = MiB);
	for (i = 0; i < 4; i++) {
		char what[64];

		snprintf(what, sizeof(what), "reserved[%d]", i);
		BAD(-EINVAL, what, __c.reserved[i] = 1ull << 63);
		BAD(-EINVAL, what, __c.reserved[i] = 1;
		    __c.flags = GPUPOOL_CGROUP_SET_LIMIT; __c.limit = MiB);
	}
	BAD(-EINVAL, "LAST_DENIAL with a cgroup fd",
	    __c.flags = GPUPOOL_CGROUP_LAST_DENIAL);
	BAD(-EINVAL, "LAST_DENIAL with SET",
	    __c.flags = GPUPOOL_CGROUP_LAST_DENIAL | GPUPOOL_CGROUP_SET_LIMIT;
	    __c.cgroup_fd = -1; __c.limit = MiB);
	BAD(-EINVAL, "LAST_DENIAL with a limit",
	    __c.flags = GPUPOOL_CGROUP_LAST_DENIAL; __c.cgroup_fd = -1;
	    __c.limit = MiB);
	/* This file was never refused anything. */
	BAD(-ENOENT, "LAST_DENIAL, none", __c.flags = GPUPOOL_CGROUP_LAST_DENIAL;
	    __c.cgroup_fd = -1);
	if (variant->dmem) {
		BAD(-EOPNOTSUPP, "SET with dmem", __c.flags = GPUPOOL_CGROUP_SET_LIMIT;
		    __c.limit = MiB);
		BAD(-EOPNOTSUPP, "CLEAR with dmem",
		    __c.flags = GPUPOOL_CGROUP_CLEAR_LIMIT);
	}

	/* The path: too small, none, at a bad address. */
	cg_rel(&self->env, "E", relbuf, sizeof(relbuf));
	BAD(-ENAMETOOLONG, "path_len 0", __c.path_ptr = (uintptr_t)path;
	    __c.path_len = 0);
	BAD(-ENAMETOOLONG, "path_len strlen", __c.path_ptr = (uintptr_t)path;
	    __c.path_len = strlen(relbuf));
	BAD(-ENAMETOOLONG, "path_len 1", __c.path_ptr = (uintptr_t)path;
	    __c.path_len = 1);
	none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	BAD(-EFAULT, "path at PROT_NONE", __c.path_ptr = (uintptr_t)none;
	    __c.path_len = 256);
	BAD(-EFAULT, "path at a kernel address",
	    __c.path_ptr = 0xffff888000000000ull; __c.path_len = 256);
	BAD(-EFAULT, "path at 1", __c.path_ptr = 1; __c.path_len = 256);
	EXPECT_EQ(-EFAULT, gp_ioc(self->fd, GPUPOOL_IOC_CGROUP, NULL));
	EXPECT_EQ(-EFAULT, gp_ioc(self->fd, GPUPOOL_IOC_CGROUP, none));
	SAME_AS(before, "NULL argument");

	/* Just fits: the path, NUL-terminated, and nothing past it. */
	memset(path, 'x', sizeof(path));
	ASSERT_EQ(0, cg_ioc(self->fd, efd, 0, 0, path, strlen(relbuf) + 1, &c));
	EXPECT_STREQ(relbuf, path);
	EXPECT_EQ('x', path[strlen(relbuf) + 1]);
	EXPECT_EQ(cg_id(&self->env, "E"), c.cgroup_id);
	SAME_AS(before, "a query");

	munmap(none, 4096);
	close(procsfd);
	close(tmpfd);
	close(filefd);
	close(efd);
}

/*
 * A change whose answer cannot be copied out (path buffer too small, or at
 * a bad address) must leave the limit as it was.
 */
static char small[4];

TEST_F(lim, bad_path_on_set)
{
	static const struct {
		const char *what;
		uint32_t flags;
		uint64_t limit;
		char *path;
		uint32_t len;
		int err;
	} bad[] = {
		{ "SET_LIMIT 1 MiB, path_len 4", GPUPOOL_CGROUP_SET_LIMIT, MiB,
		  small, sizeof(small), -ENAMETOOLONG },
		{ "SET_LIMIT 1 MiB, path at 1", GPUPOOL_CGROUP_SET_LIMIT, MiB,
		  (char *)1, 256, -EFAULT },
		{ "CLEAR_LIMIT, path at 1", GPUPOOL_CGROUP_CLEAR_LIMIT, 0,
		  (char *)1, 256, -EFAULT },
	};
	struct gpupool_cgroup c;
	char bug[512] = "";
	unsigned int i;
	int efd;

	if (variant->dmem)
		GP_SKIP("GPUPOOL_CGROUP_SET_LIMIT is EOPNOTSUPP with dmem (bad_input checks that)");
	ASSERT_EQ(0, cg_make(&self->env, "E"));
	efd = cg_open(&self->env, "E");
	ASSERT_LE(0, efd);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(0, cg_set_limit(self->fd, efd, 2 * MiB));
		EXPECT_EQ(bad[i].err, cg_ioc(self->fd, efd, bad[i].flags,
					     bad[i].limit, bad[i].path,
					     bad[i].len, &c)) TH_LOG("%s", bad[i].what);
		ASSERT_EQ(0, cg_query(self->fd, efd, &c));
		if (c.limit != 2 * MiB && !bug[0])
			snprintf(bug, sizeof(bug),
				 "%s: failed with %s yet the limit is now %llu (was 2 MiB)",
				 bad[i].what, strerror(-bad[i].err),
				 (unsigned long long)c.limit);
	}
	close(efd);
	EXPECT_EQ('\0', bug[0]) TH_LOG("a failed call changed the limit: %s",
					bug);
}

/* A cgroup v1 hierarchy's directory is no cgroup to charge: EBADF. */
TEST(cgroup_v1_dir)
{
	const char *dir = "/tmp/gpt-cgroup-v1";
	struct gpupool_cgroup c;
	int fd, devfd, ret;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=16M cgroup_limits=module"));
	devfd = gp_open_dev();
	ASSERT_LE(0, devfd);
	if (mkdir(dir, 0755) && errno != EEXIST)
		GP_SKIP("mkdir %s: %s", dir, strerror(errno));
	if (mount("none", dir, "cgroup", 0, "none,name=gptest")) {
		ret = errno;
		rmdir(dir);
		close(devfd);
		gp_unload_wait(5000);
		GP_SKIP("cannot mount a named cgroup v1 hierarchy here (%s): not tried",
			strerror(ret));
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT_LE(0, fd);
	EXPECT_EQ(-EBADF, cg_query(devfd, fd, &c));
	EXPECT_EQ(-EBADF, cg_set_limit(devfd, fd, MiB));
	EXPECT_EQ(-EBADF, cg_clear_limit(devfd, fd));
	EXPECT_EQ(0, cg_proc_count(cg_proc(), 0));
	close(fd);
	EXPECT_EQ(0, umount(dir));
	rmdir(dir);
	close(devfd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* Load parameters ------------------------------------------------------------ */

/* The module's cgroup features (the others are other tests'); ~0 on error. */
static uint64_t features(void)
{
	struct gpupool_version v;
	int fd = gp_open_dev();

	memset(&v, 0, sizeof(v));
	if (fd < 0 || ioctl(fd, GPUPOOL_IOC_VERSION, &v))
		v.features = ~0ull;
	else
		v.features &= GPUPOOL_FEATURE_CGROUP | GPUPOOL_FEATURE_DMEM;
	if (fd >= 0)
		close(fd);
	return v.features;
}

TEST(load_params)
{
	struct cg_env root = { .base = CG_MNT, .rel = "" };
	char val[64], text[16384];
	int dmem;

	GP_REQUIRE();
	ASSERT_EQ(0, cg_mount());
	dmem = cg_has_dmem();
	EXPECT_EQ(-EINVAL, gp_load_1("pool_size=16M cgroup_limits=bogus"));
	EXPECT_EQ(0, gp_loaded());

	/*
	 * auto: dmem where the kernel has it, else the module's table.  An
	 * empty value is the default, as for every parameter.
	 */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, gp_load_1(i ? "pool_size=16M cgroup_limits="
					 : "pool_size=16M"));
		ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
		EXPECT_STREQ(dmem ? "dmem" : "module",
			     gp_proc_value(text, "CgroupLimits", val,
					   sizeof(val)));
		EXPECT_EQ(0, gp_proc_num("CgroupDenials"));
		EXPECT_EQ(GPUPOOL_FEATURE_CGROUP |
			  (dmem ? GPUPOOL_FEATURE_DMEM : 0), features());
		EXPECT_EQ(0, gp_unload_wait(5000));
	}

	ASSERT_EQ(0, gp_load_1("pool_size=16M cgroup_limits=module"));
	EXPECT_EQ(GPUPOOL_FEATURE_CGROUP, features());
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	EXPECT_STREQ("module", gp_proc_value(text, "CgroupLimits", val, sizeof(val)));
	if (dmem)	/* no region registered */
		EXPECT_EQ(-1, cg_dmem_value(&root, NULL, "dmem.capacity"));
	EXPECT_EQ(0, gp_unload_wait(5000));

	if (!dmem) {
		TH_LOG("no dmem controller here: cgroup_limits=dmem must be refused");
		EXPECT_EQ(-EOPNOTSUPP, gp_load_1("pool_size=16M cgroup_limits=dmem"));
		EXPECT_EQ(0, gp_loaded());
		EXPECT_EQ(-1, access(GP_DEV, F_OK));
		return;
	}
	ASSERT_EQ(0, gp_load_1("pool_size=16M cgroup_limits=dmem"));
	EXPECT_EQ(GPUPOOL_FEATURE_CGROUP | GPUPOOL_FEATURE_DMEM, features());
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	EXPECT_STREQ("dmem", gp_proc_value(text, "CgroupLimits", val, sizeof(val)));
	EXPECT_EQ(16 * MiB, cg_dmem_value(&root, NULL, "dmem.capacity"));
	EXPECT_EQ(0, gp_unload_wait(5000));
	/* Unloaded: the region is gone. */
	EXPECT_EQ(-1, cg_dmem_value(&root, NULL, "dmem.capacity"));
	/* With growth, the capacity is what it may grow to. */
	ASSERT_EQ(0, gp_load_1("pool_size=16M max_size=48M cgroup_limits=dmem"));
	EXPECT_EQ(48 * MiB, cg_dmem_value(&root, NULL, "dmem.capacity"));
	EXPECT_EQ(0, gp_unload_wait(5000));
}

TEST_HARNESS_MAIN
