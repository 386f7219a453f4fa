// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim: idle memory circulates, through the module's ioctls alone.
 * Holder A (reclaim_lib.h) keeps chunks it marks idle (GPUPOOL_IOC_IDLE),
 * as libgpupool keeps freed segments; B, this process, asks for more than
 * the 256 MiB pool has free:
 *  - A's idle 160 MiB is asked for, given back while A lives, and B is
 *    served, with memory that is zero; A's next allocation works; the
 *    report, /proc/gpupool's figures and A's holder line say so;
 *  - only what B lacks is asked for, oldest idle first;
 *  - A stopped (SIGSTOP) cannot answer: B is refused after the bounded
 *    wait, the report naming A; the ask ends with the wait, and once A
 *    runs again a new ask is answered;
 *  - memory in use is never asked for: B is refused at once; nor with
 *    GPUPOOL_ALLOC_NO_RECLAIM;
 *  - a chunk marked busy again instead of given back leaves the ask;
 *  - a holder that exits while asked gives its memory back by exiting;
 *  - a requester killed while it waits leaves nothing asked, and the
 *    module cannot be unloaded while it waits;
 *  - reclaim_rate: a holder asked again and again is no longer asked;
 *  - the ioctls refuse what is not theirs (bad flags, reserved fields,
 *    handles of other files).
 */
#include "kselftest_harness.h"
#include "reclaim_lib.h"

#define POOL	(256 * MiB)
#define BIG	(160 * MiB)
#define PARAMS	"pool_size=256M " GP_RECLAIM_WAIT

/* The module loaded with params, B's file, and holder A. */
#define RC_FIXTURE(name, params)					\
	FIXTURE(name) {							\
		int fd;							\
		struct gp_child a;						\
	};								\
	FIXTURE_SETUP(name)						\
	{								\
		GP_REQUIRE();						\
		ASSERT_EQ(0, gp_load_1(params));			\
		self->fd = gp_open_dev();				\
		ASSERT_LE(0, self->fd);					\
		ASSERT_EQ(0, rh_start(&self->a));			\
	}								\
	FIXTURE_TEARDOWN(name)						\
	{								\
		EXPECT_EQ(0, rh_stop(&self->a));			\
		close(self->fd);					\
		EXPECT_EQ(0, gp_unload_wait(10000));			\
	}

RC_FIXTURE(rc, PARAMS);

/* A allocates size and marks it idle: its index. */
static int64_t a_idle(struct __test_metadata *_metadata, struct gp_child *a,
		      uint64_t size)
{
	int64_t i = rh_alloc(a, size);

	EXPECT_LE(0, i) TH_LOG("holder's ALLOC: %s", strerror((int)-i));
	if (i >= 0)
		EXPECT_EQ(0, rh_call(a, 'I', (uint64_t)i).ret);
	return i;
}

/* The idle kB of pid's holder line (Holder: pid kB chunks idle comm). */
static long long holder_idle_kb(pid_t pid)
{
	static char text[65536];
	long long kb, chunks, idle;
	const char *p = text;
	int hp;

	if (gp_read_file(GP_PROC, text, sizeof(text)) <= 0)
		return -1;
	while ((p = strstr(p, "Holder:"))) {
		if (sscanf(p, "Holder: %d %lld %lld %lld", &hp, &kb, &chunks,
			   &idle) == 4 && hp == pid)
			return idle;
		p++;
	}
	return -1;
}

static void set_wait_ms(struct __test_metadata *_metadata, const char *ms)
{
	ASSERT_EQ(0, gp_set_param("reclaim_wait_ms", ms));
}

/* What fd's last ask came to, for the log of an ALLOC refused. */
static const char *ask_said(int fd)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	struct gpupool_ask_report r;
	static char buf[160];

	if (rh_report(fd, &r, h))
		return "no report";
	snprintf(buf, sizeof(buf),
		 "need %llu asked %llu given %llu idle %llu timed_out %u wait %llu ns",
		 (unsigned long long)r.need, (unsigned long long)r.asked,
		 (unsigned long long)r.given, (unsigned long long)r.idle,
		 (unsigned int)r.timed_out, (unsigned long long)r.wait_ns);
	return buf;
}

TEST_F(rc, idle_memory_serves_another)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;
	unsigned char *p;

	ASSERT_EQ(0, a_idle(_metadata, &self->a, BIG));
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));
	EXPECT_EQ(1, gp_proc_num("ChunksIdle"));
	EXPECT_EQ(BIG >> 10, holder_idle_kb(self->a.pid));

	/* B is served while A lives: A gave its idle chunk back. */
	ASSERT_EQ(0, gp_alloc_ex(self->fd, BIG, 0, 0, &b))
		TH_LOG("%s", ask_said(self->fd));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(-ENOMEM, r.refusal);
	EXPECT_EQ(0, r.result);
	EXPECT_EQ(BIG, r.size);
	EXPECT_EQ(BIG, r.asked);
	EXPECT_EQ(BIG, r.given);
	EXPECT_EQ(BIG, r.idle);
	EXPECT_EQ(0, r.timed_out);
	e = rh_entry(&r, h, self->a.pid);
	ASSERT_NE(NULL, e) TH_LOG("A (pid %d) is not in the report", self->a.pid);
	EXPECT_EQ(GPUPOOL_ASK_ASKED, e->flags);
	EXPECT_EQ(BIG, e->asked);
	EXPECT_EQ(BIG, e->given);
	EXPECT_EQ(BIG, e->idle);
	EXPECT_EQ(0, e->busy);
	EXPECT_EQ(BIG, rh_call(&self->a, 'S', 0).a);

	/* What B got was A's, and is zero. */
	p = gp_map(self->fd, b.handle, b.chunk_size);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(gp_all_bytes(p, b.chunk_size, 0));
	munmap(p, b.chunk_size);

	EXPECT_EQ(0, gp_proc_num("Idle"));
	EXPECT_EQ(0, holder_idle_kb(self->a.pid));
	EXPECT_EQ(1, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(1, gp_proc_num("ReclaimHoldersAsked"));
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimAsked"));
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimGiven"));
	EXPECT_EQ(1, gp_proc_num("ReclaimServed"));
	EXPECT_EQ(0, gp_proc_num("ReclaimTimeouts"));
	EXPECT_EQ(0, gp_proc_num("FailedAllocs"));

	/* A's next allocation works. */
	EXPECT_LE(0, rh_alloc(&self->a, 64 * MiB));
	EXPECT_EQ(0, rh_call(&self->a, 'C', 1).ret);
}

/* Only what B lacks, oldest idle first. */
TEST_F(rc, oldest_first_only_what_is_lacking)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	struct gpupool_ask_report r;
	struct gpupool_alloc b;
	int i;

	/* Four chunks of 40 MiB from the bottom up, 96 MiB free above;
	 * marked idle from the top down, so that the oldest two are next to
	 * the free space.
	 */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(i, rh_alloc(&self->a, 40 * MiB));
	for (i = 3; i >= 0; i--)
		ASSERT_EQ(0, rh_call(&self->a, 'I', i).ret);

	ASSERT_EQ(0, gp_alloc_ex(self->fd, BIG, 0, 0, &b))
		TH_LOG("%s", ask_said(self->fd));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(BIG - 96 * MiB, r.need);
	EXPECT_EQ(80 * MiB, r.asked);
	EXPECT_EQ(80 * MiB, r.given);
	EXPECT_EQ(160 * MiB, r.idle);
	/* The two youngest are A's still, untouched and idle. */
	EXPECT_EQ(-EBADMSG, rh_call(&self->a, 'C', 3).ret);
	EXPECT_EQ(-EBADMSG, rh_call(&self->a, 'C', 2).ret);
	EXPECT_EQ(0, rh_call(&self->a, 'C', 1).ret);
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);
	EXPECT_EQ(80 * MiB >> 10, gp_proc_num("Idle"));
}

TEST_F(rc, stopped_holder_cannot_answer)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;
	int st;

	set_wait_ms(_metadata, "1000");
	ASSERT_EQ(0, a_idle(_metadata, &self->a, BIG));
	ASSERT_EQ(0, kill(self->a.pid, SIGSTOP));
	ASSERT_EQ(self->a.pid, waitpid(self->a.pid, &st, WUNTRACED));

	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, BIG, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(1, r.timed_out);
	EXPECT_EQ(-ENOMEM, r.result);
	EXPECT_EQ(BIG, r.asked);
	EXPECT_EQ(0, r.given);
	/* The bound is reclaim_wait_ms (the default's 1000 here): waited
	 * that long.
	 */
	EXPECT_LE(900000000ULL, r.wait_ns);
	e = rh_entry(&r, h, self->a.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(GPUPOOL_ASK_ASKED, e->flags);
	EXPECT_EQ(BIG, e->asked);
	EXPECT_EQ(0, e->given);
	EXPECT_STREQ("reclaim", (const char *)e->comm);
	EXPECT_EQ(1, gp_proc_num("ReclaimTimeouts"));
	EXPECT_EQ(1, gp_proc_num("FailedAllocs"));

	/* The ask ended with the wait: A, running again, is asked nothing
	 * and still has its memory, idle.
	 */
	ASSERT_EQ(0, kill(self->a.pid, SIGCONT));
	EXPECT_EQ(0, rh_call(&self->a, 'P', 0).ret);
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));

	/* Asked again, it answers. */
	set_wait_ms(_metadata, GP_RECLAIM_WAIT_MS);
	EXPECT_EQ(0, gp_alloc_ex(self->fd, BIG, 0, 0, &b))
		TH_LOG("%s", ask_said(self->fd));
	EXPECT_EQ(2, gp_proc_num("ReclaimAsks"));
}

TEST_F(rc, memory_in_use_is_never_taken)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	struct gpupool_ask_report r;
	struct gpupool_alloc b;

	ASSERT_EQ(0, rh_alloc(&self->a, BIG));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, BIG, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(0, r.asked);
	EXPECT_EQ(0, r.idle);
	EXPECT_EQ(0, r.nr);
	EXPECT_EQ(0, r.wait_ns);
	EXPECT_EQ(0, r.timed_out);
	EXPECT_EQ(-ENOMEM, r.result);
	EXPECT_EQ(0, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);

	/* Idle, but B says not to ask: refused at once, A keeps it. */
	EXPECT_EQ(0, rh_call(&self->a, 'I', 0).ret);
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, BIG,
				       GPUPOOL_ALLOC_NO_RECLAIM, 0, &b));
	EXPECT_EQ(0, gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);
	EXPECT_EQ(2, gp_proc_num("FailedAllocs"));
}

TEST_F(rc, busy_again_leaves_the_ask)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;

	ASSERT_EQ(0, a_idle(_metadata, &self->a, BIG));
	ASSERT_EQ(0, rh_call(&self->a, 'M', RH_BUSY).ret);
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, BIG, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(0, r.timed_out);
	EXPECT_EQ(0, r.given);
	e = rh_entry(&r, h, self->a.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(BIG, e->busy);
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimBusy"));
	EXPECT_EQ(0, gp_proc_num("Idle"));
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);
}

/* The parent's B in a child: ALLOC of size, 0 when served. */
static int b_alloc(void *arg)
{
	struct gpupool_alloc b;
	int fd = gp_open_dev();

	if (fd < 0)
		return 10;
	return -gp_alloc_ex(fd, *(uint64_t *)arg, 0, 0, &b);
}

/*
 * A idles BIG and ignores asks; B, a child, asks for BIG and waits (for
 * up to 20 s) until A has noticed.  B's pid.
 */
static pid_t b_waits_on_a(struct __test_metadata *_metadata, struct gp_child *a)
{
	uint64_t size = BIG;
	pid_t b;

	set_wait_ms(_metadata, "20000");
	EXPECT_EQ(0, a_idle(_metadata, a, BIG));
	EXPECT_EQ(0, rh_call(a, 'M', RH_IGNORE).ret);
	b = fork();
	if (!b)
		_exit(b_alloc(&size));
	EXPECT_LE(0, b);
	EXPECT_EQ(0, rh_wait_noticed(a, 15000));
	return b;
}

TEST_F(rc, holder_exits_while_asked)
{
	pid_t b = b_waits_on_a(_metadata, &self->a);

	ASSERT_LT(0, b);
	/* A dies asked, without answering: its memory comes back all the
	 * same, and B is served before its bound.
	 */
	ASSERT_EQ(0, kill(self->a.pid, SIGKILL));
	EXPECT_EQ(0, gp_reap(b));
	EXPECT_EQ(BIG >> 10, gp_proc_num("ReclaimGiven"));
	EXPECT_EQ(0, gp_proc_num("ReclaimTimeouts"));
	EXPECT_EQ(128 + SIGKILL, gp_reap(self->a.pid));
	close(self->a.sock);
	ASSERT_EQ(0, rh_start(&self->a));	/* for the teardown */
}

TEST_F(rc, killed_requester)
{
	pid_t b = b_waits_on_a(_metadata, &self->a);
	int st;

	ASSERT_LT(0, b);
	ASSERT_EQ(1, rh_call(&self->a, 'P', 0).ret);

	/* While B waits the module stays: B's file holds it. */
	EXPECT_NE(0, gp_unload());
	ASSERT_EQ(0, kill(b, SIGKILL));
	ASSERT_EQ(b, waitpid(b, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st));

	/* Its ask went with it: A is asked nothing, keeps its memory. */
	EXPECT_EQ(0, rh_call(&self->a, 'P', 0).ret);
	EXPECT_EQ(0, rh_call(&self->a, 'C', 0).ret);
	EXPECT_EQ(BIG >> 10, gp_proc_num("Idle"));
}

TEST_F(rc, ioctls_refuse_what_is_not_theirs)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	struct gpupool_ask_report r;
	struct gpupool_version v;
	struct gpupool_asked q;
	struct gpupool_alloc a;
	struct gpupool_idle in;
	uint64_t handle, got[4];
	int fd2;

	memset(&v, 0, sizeof(v));
	ASSERT_EQ(0, gp_ioc(self->fd, GPUPOOL_IOC_VERSION, &v));
	EXPECT_LE(2, v.abi_minor);
	EXPECT_TRUE(v.features & GPUPOOL_FEATURE_RECLAIM);

	EXPECT_EQ(-ENOENT, rh_report(self->fd, &r, h));
	EXPECT_EQ(-EINVAL, gp_alloc_ex(self->fd, MiB, 1u << 2, 0, &a));
	handle = gp_alloc(self->fd, MiB);
	ASSERT_NE(0, handle);
	EXPECT_EQ(-EINVAL, rh_idle(self->fd, handle, 1u << 1));
	EXPECT_EQ(-EINVAL, rh_idle(self->fd, 0, 0));
	EXPECT_EQ(-EINVAL, rh_idle(self->fd, handle + 4096, 0));
	memset(&in, 0, sizeof(in));
	in.handle = handle;
	in.pad = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_IDLE, &in));
	in.pad = 0;
	in.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_IDLE, &in));

	/* Another file's handle names nothing here. */
	fd2 = gp_open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EINVAL, rh_idle(fd2, handle, 0));

	/* Twice idle is once; busy when not idle changes nothing. */
	EXPECT_EQ(0, rh_idle(self->fd, handle, GPUPOOL_IDLE_BUSY));
	EXPECT_EQ(0, rh_idle(self->fd, handle, 0));
	EXPECT_EQ(0, rh_idle(self->fd, handle, 0));
	EXPECT_EQ(1, gp_proc_num("ChunksIdle"));
	EXPECT_EQ(0, rh_pri(self->fd));

	EXPECT_EQ(-EINVAL, rh_asked(self->fd, NULL, 4, &q));
	EXPECT_EQ(0, rh_asked(self->fd, NULL, 0, &q));
	EXPECT_EQ(0, q.nr);
	EXPECT_EQ(0, rh_asked(self->fd, got, 4, &q));
	EXPECT_EQ(0, q.nr);
	EXPECT_EQ(0, q.bytes);
	memset(&q, 0, sizeof(q));
	q.flags = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_ASKED, &q));
	q.flags = 0;
	q.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_ASKED, &q));
	memset(&r, 0, sizeof(r));
	r.nr = 1;
	EXPECT_EQ(-EINVAL, gp_ioc(self->fd, GPUPOOL_IOC_ASK_REPORT, &r));

	/* Freed, or its file closed: no longer idle. */
	EXPECT_EQ(0, gp_free(self->fd, handle));
	EXPECT_EQ(0, gp_proc_num("ChunksIdle"));
	handle = gp_alloc(fd2, MiB);
	ASSERT_NE(0, handle);
	EXPECT_EQ(0, rh_idle(fd2, handle, 0));
	EXPECT_EQ(MiB >> 10, gp_proc_num("Idle"));
	close(fd2);
	EXPECT_EQ(0, gp_proc_num("Idle"));
	EXPECT_EQ(0, gp_proc_num("ChunksIdle"));
}

/* reclaim_rate: a holder asked again and again is no longer asked. */
RC_FIXTURE(rate, PARAMS " reclaim_rate=1M");

TEST_F(rate, holder_asked_too_often_is_left_alone)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	const struct gpupool_ask_holder *e;
	struct gpupool_ask_report r;
	struct gpupool_alloc b;
	int round;

	EXPECT_EQ(1024, gp_proc_num("ReclaimRate"));
	/* A starts with the pool's size to give: two asks of 160 MiB (the
	 * second takes it below zero), not a third.
	 */
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(round, a_idle(_metadata, &self->a, BIG));
		ASSERT_EQ(0, gp_alloc_ex(self->fd, BIG, 0, 0, &b))
			TH_LOG("round %d: %s", round, ask_said(self->fd));
		ASSERT_EQ(0, gp_free(self->fd, b.handle));
		ASSERT_EQ(0, gp_wait_quiet(10000, 0));
	}
	ASSERT_EQ(2, a_idle(_metadata, &self->a, BIG));
	EXPECT_EQ(-ENOMEM, gp_alloc_ex(self->fd, BIG, 0, 0, &b));
	ASSERT_EQ(0, rh_report(self->fd, &r, h));
	EXPECT_EQ(0, r.asked);
	EXPECT_EQ(0, r.wait_ns);
	e = rh_entry(&r, h, self->a.pid);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(GPUPOOL_ASK_THROTTLED, e->flags);
	EXPECT_EQ(BIG, e->idle);
	EXPECT_EQ(1, gp_proc_num("ReclaimThrottled"));
	EXPECT_EQ(0, rh_call(&self->a, 'C', 2).ret);
}

TEST_HARNESS_MAIN
