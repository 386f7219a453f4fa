// SPDX-License-Identifier: GPL-2.0
/*
 * proc_stats: /proc/gpupool and GPUPOOL_IOC_STATS tell the same story, for
 * the whole pool and per node; the bytes add up (total = free + in use +
 * zeroing + quarantined); holder lines name the processes holding chunks
 * (only your own unless you have CAP_SYS_ADMIN); the bin table accounts
 * for every chunk.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "pool_lib.h"

FIXTURE(pool) {
	int fd;
	uint64_t h[6];
};

FIXTURE_SETUP(pool)
{
	static const uint64_t sizes[] = {
		4096, 3 * 4096, 65536, MiB, 2 * MiB + 4096, 5 * MiB,
	};
	int i;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=32M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	for (i = 0; i < 6; i++) {
		self->h[i] = gp_alloc(self->fd, sizes[i]);
		ASSERT_NE(0, self->h[i]);
	}
	/* Free two, leaving holes. */
	ASSERT_EQ(0, gp_free(self->fd, self->h[1]));
	ASSERT_EQ(0, gp_free(self->fd, self->h[3]));
	ASSERT_EQ(0, gp_wait_quiet(20000, 0));
}

FIXTURE_TEARDOWN(pool)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(5000));
}

/* What the fixture's four live chunks take: whole pages each. */
#define LIVE	(gp_chunk_of(4096) + gp_chunk_of(65536) + \
		 gp_chunk_of(2 * MiB + 4096) + gp_chunk_of(5 * MiB))

#define KB(x)	((long long)((x) >> 10))

TEST_F(pool, proc_matches_stats)
{
	struct gpupool_pool_stats nodes[8], *t;
	struct gpupool_stats st;
	char text[65536], key[64], val[128];
	unsigned int i;

	ASSERT_EQ(0, gp_stats(self->fd, &st, nodes, 8));
	ASSERT_LE(1, st.nr_nodes);
	ASSERT_GE(8, st.nr_nodes);
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	t = &st.total;

#define CHECK(k, v) do { \
	ASSERT_NE(NULL, gp_proc_value(text, k, val, sizeof(val))) TH_LOG("no %s", k); \
	EXPECT_EQ((long long)(v), strtoll(val, NULL, 10)) TH_LOG("%s: %s", k, val); \
} while (0)
	CHECK("PoolTotal", KB(t->total));
	CHECK("PoolFree", KB(t->free));
	CHECK("InUse", KB(t->in_use));
	CHECK("PeakInUse", KB(t->peak_in_use));
	CHECK("Zeroing", KB(t->zeroing));
	CHECK("Quarantined", KB(t->quarantined));
	CHECK("LargestFree", KB(t->largest_free));
	CHECK("Fragmentation", t->fragmentation_ppm);
	CHECK("ChunksInUse", t->chunks_in_use);
	CHECK("ChunksFree", t->chunks_free);
	CHECK("ChunksZeroing", t->chunks_zeroing);
	CHECK("ChunksQuarantined", t->chunks_quarantined);
	CHECK("Allocs", t->allocs);
	CHECK("Frees", t->frees);
	CHECK("FailedAllocs", t->failed_allocs);
	CHECK("LimitDenials", t->limit_denials);
	CHECK("Growths", t->growths);
	CHECK("PoolLimit", KB(st.max_size));
	CHECK("ReserveTime", st.reserve_time_ns / 1000000);
	CHECK("Nodes", st.nr_nodes);

	EXPECT_EQ(32 * MiB, t->total);
	EXPECT_EQ(LIVE, t->in_use);
	EXPECT_EQ(t->total, t->free + t->in_use + t->zeroing + t->quarantined);
	EXPECT_EQ(4, t->chunks_in_use);
	EXPECT_EQ(6, t->allocs);
	EXPECT_EQ(2, t->frees);
	EXPECT_EQ(~0u, t->node);
	EXPECT_LT(0, t->fragmentation_ppm);

	for (i = 0; i < st.nr_nodes; i++) {
		struct gpupool_pool_stats *n = &nodes[i];
		char pfx[32];

		snprintf(pfx, sizeof(pfx), "Node%u", n->node);
#define NCHECK(k, v) do { \
	snprintf(key, sizeof(key), "%s%s", pfx, k); \
	CHECK(key, v); \
} while (0)
		NCHECK("PoolTotal", KB(n->total));
		NCHECK("PoolFree", KB(n->free));
		NCHECK("InUse", KB(n->in_use));
		NCHECK("Zeroing", KB(n->zeroing));
		NCHECK("Quarantined", KB(n->quarantined));
		NCHECK("LargestFree", KB(n->largest_free));
		NCHECK("ChunksInUse", n->chunks_in_use);
		NCHECK("Allocs", n->allocs);
		NCHECK("Frees", n->frees);
		EXPECT_EQ(n->total, n->free + n->in_use + n->zeroing +
			  n->quarantined);
	}
}

/* Asking for fewer node entries than exist fills only those. */
TEST_F(pool, stats_short_array)
{
	struct gpupool_pool_stats nodes[2];
	struct gpupool_stats st;

	memset(nodes, 0x5a, sizeof(nodes));
	ASSERT_EQ(0, gp_stats(self->fd, &st, nodes, 0));
	ASSERT_LE(1, st.nr_nodes);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, nodes[0].total);
	ASSERT_EQ(0, gp_stats(self->fd, &st, nodes, 1));
	EXPECT_EQ(st.nr_nodes == 1 ? st.total.total : nodes[0].total,
		  nodes[0].total);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, nodes[1].total);
}

/* Holder: <pid> <kB> <chunks> <idle kB> <comm>. */
static int find_holder(const char *text, int pid, long long *kb,
		       long long *chunks, char *comm)
{
	const char *p = text;
	long long idle;
	int hp;

	while ((p = strstr(p, "Holder:"))) {
		if (sscanf(p, "Holder: %d %lld %lld %lld %15s", &hp, kb,
			   chunks, &idle, comm) == 5 && hp == pid)
			return 1;
		p++;
	}
	return 0;
}

static int unprivileged_view(void *arg)
{
	char text[65536];
	long long kb, chunks;
	char comm[16];
	int pid = *(int *)arg;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 10;
	if (gp_read_file(GP_PROC, text, sizeof(text)) <= 0)
		return 11;
	/* The figures, but not root's holder line. */
	if (!strstr(text, "PoolTotal:"))
		return 12;
	return find_holder(text, pid, &kb, &chunks, comm) ? 13 : 0;
}

TEST_F(pool, holders)
{
	char text[65536], comm[16];
	long long kb, chunks;
	int pid = getpid();

	prctl(PR_SET_NAME, "gp-holder-test");
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	ASSERT_TRUE(find_holder(text, pid, &kb, &chunks, comm)) TH_LOG("%s", text);
	EXPECT_EQ(LIVE >> 10, kb);
	EXPECT_EQ(4, chunks);
	EXPECT_EQ(0, gp_run_child(unprivileged_view, &pid));
}

/* A process that allocates 64 KiB, passes the chunk on by fd and exits,
 * under a command name with a newline in it.
 */
#define ODD_COMM	"x\nHolder: 7 1 1"	/* 15 characters: all of comm */

static int odd_holder(void *arg)
{
	int sock = *(int *)arg, fd;
	struct gpupool_export e;
	uint64_t h;

	if (prctl(PR_SET_NAME, ODD_COMM))
		return 10;
	fd = gp_open_dev();
	if (fd < 0)
		return 11;
	h = gp_alloc(fd, 65536);
	if (!h)
		return 12;
	memset(&e, 0, sizeof(e));
	e.handle = h;
	if (ioctl(fd, GPUPOOL_IOC_EXPORT, &e))
		return 13;
	return gp_send_fd(sock, (int)e.fd, NULL, 0, 0) ? 14 : 0;
}

/* Its holder line stays while the chunk lives, with pid 0 (the number may
 * name another process by now) and the newline escaped, as in
 * /proc/<pid>/status: no reader can be fed a line of the holder's making.
 */
TEST_F(pool, holder_exited_odd_comm)
{
	char text[65536], comm[16];
	long long kb, chunks;
	int sv[2], cfd;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	ASSERT_EQ(0, gp_run_child(odd_holder, &sv[1]));
	cfd = gp_recv_fd(sv[0], NULL, 0, MSG_DONTWAIT);
	ASSERT_LE(0, cfd);
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	EXPECT_EQ(NULL, strstr(text, "\nHolder: 7 ")) TH_LOG("%s", text);
	ASSERT_TRUE(find_holder(text, 0, &kb, &chunks, comm)) TH_LOG("%s", text);
	EXPECT_EQ(64, kb);
	EXPECT_EQ(1, chunks);
	EXPECT_STREQ("x\\012Holder:", comm);
	close(cfd);
	EXPECT_EQ(0, gp_wait_quiet(20000, 1));
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	EXPECT_FALSE(find_holder(text, 0, &kb, &chunks, comm)) TH_LOG("%s", text);
	close(sv[0]);
	close(sv[1]);
}

/* The sums of the bin lines (NodeNBinB: free_chunks free_kB in_use_chunks
 * in_use_kB requested_kB); 0, or -1 if a line is malformed.
 */
struct bin_sums {
	long long fc, fk, uc, uk;
};

static int sum_bins(const char *text, struct bin_sums *s)
{
	long long fc, fk, uc, uk, rk;
	unsigned int n, b;
	const char *p;

	memset(s, 0, sizeof(*s));
	for (p = text; (p = strstr(p, "Node")); p++) {
		if (sscanf(p, "Node%uBin%u:", &n, &b) != 2)
			continue;
		if (b >= 32 || sscanf(strchr(p, ':') + 1, "%lld %lld %lld %lld %lld",
				      &fc, &fk, &uc, &uk, &rk) != 5)
			return -1;
		s->fc += fc;
		s->fk += fk;
		s->uc += uc;
		s->uk += uk;
	}
	return 0;
}

/* The bin lines of a fresh read account for every chunk of a quiet pool. */
static void bins_match(struct __test_metadata *_metadata, char *text,
		       size_t len)
{
	struct gpupool_pool_stats t = gp_pool();
	struct bin_sums s;

	ASSERT_LT(0, gp_read_file(GP_PROC, text, len));
	ASSERT_EQ(0, sum_bins(text, &s)) TH_LOG("%s", text);
	EXPECT_EQ((long long)t.chunks_free, s.fc);
	EXPECT_EQ(KB(t.free), s.fk);
	EXPECT_EQ((long long)t.chunks_in_use, s.uc);
	EXPECT_EQ(KB(t.in_use), s.uk);
}

TEST_F(pool, bins_add_up)
{
	char text[65536];

	bins_match(_metadata, text, sizeof(text));
}

/*
 * Many chunks: the bin table and the map are gathered a few thousand
 * chunks at a time, the node's lock dropped in between (pool.c,
 * GP_WALK_SLICE), so that a reader looping on the file cannot hold
 * allocations off for a whole walk.  With nothing changing, the figures
 * still add up exactly; with a process churning meanwhile, every read
 * works and no byte is counted twice.
 */
/* One-page chunks in 48 MiB: 12288 with 4 KiB pages, 768 with 64 KiB. */
#define MANY		((int)(48 * MiB / GP_PG))
#define MANY_MAX	(48 * MiB / 4096)

FIXTURE(many) {
	int fd;
};

FIXTURE_SETUP(many)
{
	static uint64_t h[MANY_MAX];
	int i;

	GP_REQUIRE();
	ASSERT_EQ(0, gp_load_1("pool_size=64M"));
	self->fd = gp_open_dev();
	ASSERT_LE(0, self->fd);
	for (i = 0; i < MANY; i++) {
		h[i] = gp_alloc(self->fd, 4096);
		ASSERT_NE(0, h[i]) TH_LOG("chunk %d: %s", i, strerror(errno));
	}
	for (i = 0; i < MANY; i += 3)	/* isolated free pages */
		ASSERT_EQ(0, gp_free(self->fd, h[i]));
	ASSERT_EQ(0, gp_wait_quiet(60000, 0));
}

FIXTURE_TEARDOWN(many)
{
	close(self->fd);
	EXPECT_EQ(0, gp_unload_wait(20000));
}

TEST_F(many, bins_add_up_across_slices)
{
	struct gpupool_pool_stats t = gp_pool();
	static char text[65536];
	const char *map;

	EXPECT_EQ(MANY - MANY / 3, (long long)t.chunks_in_use);
	EXPECT_LE(MANY / 3, (long long)t.chunks_free);
	bins_match(_metadata, text, sizeof(text));
	map = strstr(text, "Map: ");
	ASSERT_NE(NULL, map);
	EXPECT_NE(NULL, memchr(map, '#', 64 + 5)) TH_LOG("%.80s", map);
}

static int churn(void *arg)
{
	int fd = gp_open_dev(), i;
	uint64_t h[512] = { 0 };
	unsigned int r = 1;

	(void)arg;
	if (fd < 0)
		return 1;
	for (;;) {		/* until the parent kills it */
		r = r * 1103515245 + 12345;
		i = (int)((r >> 8) % 512);
		if (h[i]) {
			if (gp_free(fd, h[i]))
				return 2;
			h[i] = 0;
		} else {
			h[i] = gp_alloc(fd, 4096 * (1 + (r >> 20) % 4));
		}
	}
}

/* 40 reads while a child churns: slow on the debug kernel under TCG. */
TEST_F_TIMEOUT(many, read_while_churning, 300)
{
	static char text[65536];
	long long total_kb;
	struct bin_sums s;
	char val[64];
	int i, status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(churn(NULL));
	usleep(100000);
	for (i = 0; i < 40; i++) {
		ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
		ASSERT_EQ(0, sum_bins(text, &s)) TH_LOG("%s", text);
		ASSERT_NE(NULL, gp_proc_value(text, "PoolTotal", val, sizeof(val)));
		total_kb = strtoll(val, NULL, 10);
		/* Visits never overlap: no byte is counted twice. */
		EXPECT_GE(total_kb, s.fk + s.uk) TH_LOG("read %d", i);
		EXPECT_LT(MANY / 2, s.uc) TH_LOG("read %d", i);
		ASSERT_NE(NULL, strstr(text, "Map: "));
	}
	ASSERT_EQ(0, waitpid(pid, &status, WNOHANG)) TH_LOG("the churner died");
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, gp_wait_quiet(60000, 0));
	ASSERT_LT(0, gp_read_file(GP_PROC, text, sizeof(text)));
	ASSERT_EQ(0, sum_bins(text, &s));
	EXPECT_EQ(MANY - MANY / 3, s.uc);
}

TEST_HARNESS_MAIN
