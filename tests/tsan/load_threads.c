// SPDX-License-Identifier: MIT
/*
 * load_threads: many threads (GPUPOOL_TSAN_THREADS, 16) on one context for
 * GPUPOOL_TSAN_SECONDS (3), under ThreadSanitizer.  Each thread, at random:
 *  - allocates small, medium and large host buffers, writes a pattern of
 *    its own in them and checks it before freeing them;
 *  - allocates GP_HOST_SHARED buffers, exports them (sometimes freeing the
 *    buffer before its descriptor is used) and imports them into a second
 *    context, into the same one, or in a fork()ed and exec'd child with a context of
 *    its own; the importer checks the bytes and answers with a pattern that
 *    the exporter then sees;
 *  - trims the cache, reads the statistics and checks what must hold at any
 *    instant, calls gp_info, makes calls that must fail;
 *  - allocates device blocks on five streams through the CUDA runtime
 *    double, writes its pattern in them (the double's device memory is host
 *    memory), uses them on other streams and frees them on their own stream
 *    or another one; events stay incomplete until some thread completes
 *    them; takes snapshots, trims the device pool.
 * Afterwards: no thread failed, the counters equal the calls the threads
 * made, nothing is in use, trimming gives everything back, and the double
 * saw no misuse and holds nothing.
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "tsan.h"

#define HSLOTS		8	/* live host buffers per thread, at most */
#define DSLOTS		8	/* live device blocks per thread, at most */
#define NSTREAMS	4	/* created streams, plus the default stream */
#define MAX_FORKS	32	/* fork()ed importers, all threads together */
#define REPLY		0x5a5a5a5a5a5a5a5aull	/* the importer's answer: tag ^ REPLY */

/* Successful calls, to compare with the context's counters. */
struct ctr {
	uint64_t allocs, frees, imports, exports;	/* on ctx */
	uint64_t imports2, frees2;			/* on ctx2 */
	uint64_t dev_allocs, dev_frees, forks;
};

struct buf {
	void *p;
	size_t n;
	uint64_t tag;
	gp_stream_t s;	/* device blocks: the allocation stream */
};

struct worker {
	pthread_t t;
	unsigned int id;
	struct gp_ctx *ctx, *ctx2;
	struct rt *rt;
	bool dev, user;
	gp_stream_t *streams;	/* NSTREAMS + 1, the last the default stream */
	uint64_t rng, serial;
	struct buf h[HSLOTS], d[DSLOTS];
	struct ctr c;
	struct tfail f;
};

static pthread_barrier_t start;
static int forks_left;

static uint64_t next_tag(struct worker *w)
{
	return (uint64_t)(w->id + 1) << 40 | ++w->serial;
}

static gp_stream_t any_stream(struct worker *w)
{
	return w->streams[rnd(&w->rng) % (NSTREAMS + 1)];
}

/* Host buffers ------------------------------------------------------------- */

static size_t host_size(struct worker *w, unsigned int slot)
{
	unsigned int r = rnd(&w->rng) % 1000;

	if (r < 700)
		return rnd_in(&w->rng, 1, 16 << 10);
	if (r < 950)
		return rnd_in(&w->rng, (16 << 10) + 1, 1 << 20);
	if (r < 995 || slot)
		return rnd_in(&w->rng, (1 << 20) + 1, 4 << 20);
	/* Over 10 MiB: a segment of its own size (slot 0 only, to bound
	 * what 16 threads pin).
	 */
	return rnd_in(&w->rng, (10 << 20) + 1, 16 << 20);
}

static bool host_free_slot(struct worker *w, struct buf *b)
{
	int r, fd;

	if (!CHECK(&w->f, pattern(b->p, b->n, b->tag, true),
		   "host buffer %p (%zu bytes) lost its bytes", b->p, b->n))
		return false;
	if (rnd(&w->rng) % 16 == 0) {
		/* Not GP_HOST_SHARED: not exportable. */
		r = gp_host_export(w->ctx, b->p, &fd);
		if (!CHECK(&w->f, r == -EINVAL,
			   "gp_host_export of a private buffer: %d", r))
			return false;
	}
	r = gp_host_free(w->ctx, b->p);
	if (!CHECK(&w->f, r == 0, "gp_host_free(%p): %d %s", b->p, r,
		   gp_last_error(w->ctx)))
		return false;
	w->c.frees++;
	b->p = NULL;
	return true;
}

static bool host_op(struct worker *w)
{
	unsigned int k = rnd(&w->rng) % HSLOTS;
	struct buf *b = &w->h[k];
	uintptr_t align;
	int r;

	if (b->p)
		return host_free_slot(w, b);
	b->n = host_size(w, k);
	b->tag = next_tag(w);
	r = gp_host_alloc(w->ctx, b->n, 0, &b->p);
	if (!CHECK(&w->f, r == 0, "gp_host_alloc(%zu): %d %s", b->n, r,
		   gp_last_error(w->ctx))) {
		b->p = NULL;
		return false;
	}
	w->c.allocs++;
	align = b->n > (1 << 20) ? 4096 : 512;
	if (!CHECK(&w->f, (uintptr_t)b->p % align == 0,
		   "%zu bytes at %p: not %lu-aligned", b->n, b->p,
		   (unsigned long)align))
		return false;
	pattern(b->p, b->n, b->tag, false);
	return true;
}

/* Shared buffers ----------------------------------------------------------- */

/* The importing child.  A child of a threaded process may only make
 * async-signal-safe calls until it execs: another thread may have held an
 * allocator lock at the fork (TSan's own allocator has no fork handler in
 * gcc 12: such a child hung in calloc).  So the child execs this program
 * again with GPUPOOL_TSAN_IMPORT=fd:size:tag in its environment, and the
 * constructor below does the import in the fresh image: its own context,
 * no CUDA, no threads; import, check, answer, close, exit.
 */
#define IMPORT_ENV	"GPUPOOL_TSAN_IMPORT"

static int child_import(int fd, size_t n, uint64_t tag)
{
	struct gp_options o;
	struct gp_ctx *c;
	size_t qn = 0;
	void *q;

	gp_options_init(&o);
	o.flags = GP_OPEN_NO_CUDA;
	if (gp_open(&o, &c))
		return 10;
	if (gp_host_import(c, fd, &q, &qn) || qn < n)
		return 11;
	if (!pattern(q, n, tag, true))
		return 12;
	pattern(q, n, tag ^ REPLY, false);
	if (gp_host_free(c, q))
		return 13;
	gp_close(c);
	return 0;
}

__attribute__((constructor)) static void import_child_main(void)
{
	const char *v = getenv(IMPORT_ENV);
	unsigned long long n, tag;
	int fd;

	if (!v)
		return;
	if (sscanf(v, "%d:%llu:%llu", &fd, &n, &tag) != 3)
		_exit(9);
	_exit(child_import(fd, (size_t)n, (uint64_t)tag));
}

static bool fork_import(struct worker *w, int fd, size_t n, uint64_t tag)
{
	char env[96], backend[64], self[4096];
	char *argv[] = { "load_threads", NULL }, *envp[] = { env, NULL, NULL };
	const char *be = getenv("GPUPOOL_BACKEND");
	ssize_t len;
	int status;
	pid_t pid;

	/* Everything the child needs is made before the fork. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!CHECK(&w->f, len > 0, "readlink /proc/self/exe: %s", strerror(errno)))
		return false;
	self[len] = '\0';
	snprintf(env, sizeof(env), IMPORT_ENV "=%d:%llu:%llu", fd,
		 (unsigned long long)n, (unsigned long long)tag);
	if (be) {	/* the child's backend is the parent's */
		snprintf(backend, sizeof(backend), "GPUPOOL_BACKEND=%s", be);
		envp[1] = backend;
	}
	pid = fork();
	if (pid == 0) {
		/* fcntl, execve and _exit only: async-signal-safe. */
		fcntl(fd, F_SETFD, 0);
		execve(self, argv, envp);
		_exit(8);
	}
	if (!CHECK(&w->f, pid > 0, "fork: %s", strerror(errno)))
		return false;
	while (waitpid(pid, &status, 0) < 0)
		if (!CHECK(&w->f, errno == EINTR, "waitpid: %s", strerror(errno)))
			return false;
	w->c.forks++;
	return CHECK(&w->f, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		     "importing child: status %#x", status);
}

/* Import fd into c, check the bytes, answer, free the import.  p: the
 * exported buffer, if it is still allocated (a second mapping of it).
 */
static bool import_into(struct worker *w, struct gp_ctx *c, int fd, void *p,
			size_t n, uint64_t tag)
{
	size_t qn = 0;
	void *q;
	int r, fd2;

	r = gp_host_import(c, fd, &q, &qn);
	if (!CHECK(&w->f, r == 0, "gp_host_import: %d %s", r, gp_last_error(c)))
		return false;
	if (c == w->ctx2)
		w->c.imports2++;
	else
		w->c.imports++;
	if (!CHECK(&w->f, q != p && qn >= n && pattern(q, n, tag, true),
		   "import of %zu bytes at %p (%zu mapped): wrong bytes", n, q, qn))
		return false;
	pattern(q, n, tag ^ REPLY, false);
	r = gp_host_export(c, q, &fd2);
	if (!CHECK(&w->f, r == -EINVAL, "gp_host_export of an import: %d", r))
		return false;
	r = gp_host_free(c, q);
	if (!CHECK(&w->f, r == 0, "gp_host_free of an import: %d %s", r,
		   gp_last_error(c)))
		return false;
	if (c == w->ctx2)
		w->c.frees2++;
	else
		w->c.frees++;
	return true;
}

static bool shared_op(struct worker *w)
{
	size_t n = rnd(&w->rng) % 8 ? rnd_in(&w->rng, 1, 256 << 10) :
		   rnd_in(&w->rng, 1 << 20, 3 << 20);
	unsigned int how = rnd(&w->rng) % 8;
	uint64_t tag = next_tag(w);
	bool freed = false, ok;
	int r, fd;
	void *p;

	r = gp_host_alloc(w->ctx, n, GP_HOST_SHARED, &p);
	if (!CHECK(&w->f, r == 0, "gp_host_alloc(%zu, SHARED): %d %s", n, r,
		   gp_last_error(w->ctx)))
		return false;
	w->c.allocs++;
	if (!CHECK(&w->f, (uintptr_t)p % 4096 == 0, "shared %p not page-aligned", p))
		return false;
	pattern(p, n, tag, false);
	r = gp_host_export(w->ctx, p, &fd);
	if (!CHECK(&w->f, r == 0 && fd >= 0, "gp_host_export: %d %s", r,
		   gp_last_error(w->ctx)))
		return false;
	w->c.exports++;
	if (how == 0) {
		/* The descriptor outlives the buffer. */
		r = gp_host_free(w->ctx, p);
		if (!CHECK(&w->f, r == 0, "gp_host_free(shared): %d", r))
			return false;
		w->c.frees++;
		freed = true;
	}
	if ((how == 1 || (w->id == 0 && !w->c.forks)) &&
	    __atomic_sub_fetch(&forks_left, 1, __ATOMIC_RELAXED) >= 0)
		ok = fork_import(w, fd, n, tag);
	else
		ok = import_into(w, how < 5 ? w->ctx2 : w->ctx, fd,
				 freed ? NULL : p, n, tag);
	close(fd);
	if (!ok || freed)
		return ok;
	if (!CHECK(&w->f, pattern(p, n, tag ^ REPLY, true),
		   "the importer's answer is not in the exported buffer"))
		return false;
	r = gp_host_free(w->ctx, p);
	if (!CHECK(&w->f, r == 0, "gp_host_free(shared): %d", r))
		return false;
	w->c.frees++;
	return true;
}

/* Device blocks ------------------------------------------------------------ */

static bool dev_free_slot(struct worker *w, struct buf *b)
{
	gp_stream_t other = any_stream(w);
	int r;

	if (w->rt->is_double &&
	    !CHECK(&w->f, pattern(b->p, b->n, b->tag, true),
		   "device block %p (%zu bytes) lost its bytes", b->p, b->n))
		return false;
	if (other != b->s && rnd(&w->rng) % 4 == 0) {
		r = gp_dev_record_stream(w->ctx, b->p, other);
		if (!CHECK(&w->f, r == 0, "gp_dev_record_stream: %d %s", r,
			   gp_last_error(w->ctx)))
			return false;
	}
	/* Mostly on its own stream; sometimes on another one. */
	r = gp_dev_free(w->ctx, b->p, rnd(&w->rng) % 5 ? b->s : other);
	if (!CHECK(&w->f, r == 0, "gp_dev_free(%p): %d %s", b->p, r,
		   gp_last_error(w->ctx)))
		return false;
	w->c.dev_frees++;
	b->p = NULL;
	return true;
}

static bool dev_op(struct worker *w)
{
	struct buf *b = &w->d[rnd(&w->rng) % DSLOTS];
	int r;

	if (b->p)
		return dev_free_slot(w, b);
	b->n = rnd(&w->rng) % 20 ? rnd_in(&w->rng, 1, 256 << 10) :
	       rnd_in(&w->rng, (256 << 10) + 1, 2 << 20);
	b->s = any_stream(w);
	b->tag = next_tag(w);
	r = gp_dev_alloc(w->ctx, 0, b->n, b->s, &b->p);
	if (!CHECK(&w->f, r == 0, "gp_dev_alloc(%zu): %d %s", b->n, r,
		   gp_last_error(w->ctx))) {
		b->p = NULL;
		return false;
	}
	w->c.dev_allocs++;
	if (!CHECK(&w->f, (uintptr_t)b->p % 256 == 0, "block %p not 256-aligned", b->p))
		return false;
	if (w->rt->is_double)
		pattern(b->p, b->n, b->tag, false);
	return true;
}

/* The rest ------------------------------------------------------------------ */

/* What holds at any instant (each call copies the figures under a lock). */
static bool stats_op(struct worker *w)
{
	struct gp_host_stats h;
	struct gp_dev_stats d;
	struct gp_info info;
	int r;

	r = gp_host_stats(w->ctx, &h);
	if (!CHECK(&w->f, r == 0, "gp_host_stats: %d", r) ||
	    !CHECK(&w->f, h.in_use <= h.reserved && h.cached == h.reserved - h.in_use &&
		   h.idle <= h.cached && h.requested <= h.in_use &&
		   h.frees <= h.allocs + h.imports &&
		   h.segments_huge <= h.segments && h.reserved <= h.peak_reserved,
		   "host stats: in_use %llu reserved %llu cached %llu idle %llu "
		   "requested %llu allocs %llu frees %llu imports %llu",
		   (unsigned long long)h.in_use, (unsigned long long)h.reserved,
		   (unsigned long long)h.cached, (unsigned long long)h.idle,
		   (unsigned long long)h.requested, (unsigned long long)h.allocs,
		   (unsigned long long)h.frees, (unsigned long long)h.imports))
		return false;
	if (w->user && !CHECK(&w->f, h.map_calls == h.unmap_calls + h.segments,
			      "host stats: %llu maps, %llu unmaps, %llu segments",
			      (unsigned long long)h.map_calls,
			      (unsigned long long)h.unmap_calls,
			      (unsigned long long)h.segments))
		return false;
	/* With CUDA every segment is registered, once. */
	if (w->dev && !CHECK(&w->f, h.registered == h.segments &&
			     h.register_calls == h.unregister_calls + h.registered,
			     "host stats: %llu segments, %llu registered",
			     (unsigned long long)h.segments,
			     (unsigned long long)h.registered))
		return false;
	r = gp_info(w->ctx, &info);
	if (!CHECK(&w->f, r == 0 && info.cuda_state == (w->dev ? GP_CUDA_REGISTERED :
							 GP_CUDA_OFF),
		   "gp_info: %d, cuda_state %d", r, info.cuda_state))
		return false;
	if (!w->dev)
		return true;
	r = gp_dev_stats(w->ctx, 0, &d);
	return CHECK(&w->f, r == 0, "gp_dev_stats: %d", r) &&
	       CHECK(&w->f, d.in_use + d.pending_bytes <= d.reserved &&
		     d.requested <= d.in_use && d.frees <= d.allocs &&
		     d.in_use <= d.peak_in_use && d.reserved <= d.peak_reserved &&
		     /* Segments: one cudaMalloc each.  Virtual mode: a
		      * granule per map call, and two sub-pools per stream
		      * (small blocks apart).
		      */
		     (d.mode == GP_DEV_VIRTUAL ?
		      d.map_calls == d.unmap_calls + d.mapped / d.granularity &&
		      d.mapped == d.reserved &&
		      d.streams <= 2 * (NSTREAMS + 1) :
		      d.cuda_mallocs == d.cuda_frees + d.segments &&
		      d.streams <= NSTREAMS + 1),
		     "dev stats: in_use %llu pending %llu reserved %llu requested "
		     "%llu allocs %llu frees %llu mallocs %llu cuda frees %llu "
		     "segments %llu streams %llu",
		     (unsigned long long)d.in_use, (unsigned long long)d.pending_bytes,
		     (unsigned long long)d.reserved, (unsigned long long)d.requested,
		     (unsigned long long)d.allocs, (unsigned long long)d.frees,
		     (unsigned long long)d.cuda_mallocs,
		     (unsigned long long)d.cuda_frees,
		     (unsigned long long)d.segments, (unsigned long long)d.streams);
}

static bool trim_op(struct worker *w)
{
	uint64_t n;
	int r;

	r = gp_host_trim(w->ctx, &n);
	if (!CHECK(&w->f, r == 0, "gp_host_trim: %d", r))
		return false;
	if (!w->dev)
		return true;
	r = gp_dev_trim(w->ctx, -1, &n);
	return CHECK(&w->f, r == 0, "gp_dev_trim: %d", r);
}

static bool snapshot_op(struct worker *w)
{
	static const char head[] = "{\"version\":1,\"devices\":[{\"device\":0,";
	size_t len = 0;
	char *js;
	bool ok;
	int r;

	if (!w->dev)
		return true;
	r = gp_dev_snapshot(w->ctx, -1, &js, &len);
	if (!CHECK(&w->f, r == 0, "gp_dev_snapshot: %d", r))
		return false;
	ok = CHECK(&w->f, strlen(js) == len && !strncmp(js, head, strlen(head)) &&
		   !strcmp(js + len - 3, "]}\n"), "snapshot: %.80s", js);
	free(js);
	return ok;
}

/* Calls that must fail, whatever the other threads do. */
static bool error_op(struct worker *w)
{
	void *bogus = (void *)(uintptr_t)0x1000, *p = NULL;
	int r;

	r = gp_host_free(w->ctx, bogus);
	if (!CHECK(&w->f, r == -EINVAL, "gp_host_free(bogus): %d", r))
		return false;
	/* Some failure's words, this thread's copy. */
	if (!CHECK(&w->f, *gp_last_error(w->ctx), "gp_last_error: empty"))
		return false;
	r = gp_host_alloc(w->ctx, 0, 0, &p);
	if (!CHECK(&w->f, r == -EINVAL && !p, "gp_host_alloc(0): %d", r))
		return false;
	r = gp_dev_free(w->ctx, bogus, NULL);
	return CHECK(&w->f, r == -EINVAL, "gp_dev_free(bogus): %d", r);
}

static void *worker_main(void *v)
{
	struct worker *w = v;
	bool ok = true;
	unsigned int i, r;

	pthread_barrier_wait(&start);
	while (ok && !stopping()) {
		r = rnd(&w->rng) % 100;
		if (r < 40 || (r < 60 && !w->dev))
			ok = host_op(w);
		else if (r < 60)
			ok = dev_op(w);
		else if (r < 68)
			ok = shared_op(w);
		else if (r < 84)
			ok = stats_op(w);
		else if (r < 85)
			ok = trim_op(w);
		else if (r < 88)
			ok = snapshot_op(w);
		else if (r < 94)
			ok = error_op(w);
		else if (w->rt->is_double)
			w->rt->complete_events();
	}
	for (i = 0; i < HSLOTS; i++)
		if (w->h[i].p && !host_free_slot(w, &w->h[i]))
			break;
	for (i = 0; i < DSLOTS; i++)
		if (w->d[i].p && !dev_free_slot(w, &w->d[i]))
			break;
	return NULL;
}

TSAN_TEST(load)
{
	gp_stream_t streams[NSTREAMS + 1] = { 0 };
	unsigned int i, n = tsan_threads();
	struct gp_host_stats hs, hs2;
	struct ctr sum = { 0 };
	struct gp_ctx *ctx, *ctx2;
	struct gp_dev_stats ds;
	struct cdd_counts cc;
	struct worker *w;
	uint64_t released;
	struct rt rt;
	int failed = 0, r;
	void *p;

	rt_load(&rt);
	if (rt.is_double) {
		/* Room for every thread's blocks on five streams; events stay
		 * pending until a thread (or an out-of-memory wait) completes
		 * them.
		 */
		rt.set_mem_total(4ull << 30);
		rt.hold_events(1);
	}
	OPEN(NULL, &ctx);
	OPEN(NULL, &ctx2);
	/* 16 threads pin a few hundred MiB: skip, saying why, under a
	 * small RLIMIT_MEMLOCK (without CAP_IPC_LOCK).
	 */
	r = gp_host_alloc(ctx, 64 << 20, 0, &p);
	if (r == -ENOMEM) {
		TH_LOG("%s", gp_last_error(ctx));
		gp_close(ctx2);
		gp_close(ctx);
		SKIP(return, "cannot pin 64 MiB (RLIMIT_MEMLOCK)");
	}
	ASSERT_EQ(0, r);
	ASSERT_EQ(0, gp_host_free(ctx, p));
	sum.allocs = sum.frees = 1;
	for (i = 0; rt.devices && i < NSTREAMS; i++)
		ASSERT_EQ(0, rt.StreamCreate(&streams[i]));
	if (rt.devices) {
		/* Device 0's pool exists before the threads start, so that
		 * every snapshot_op() sees it (a thread whose first call was
		 * a snapshot saw "devices":[] now and then).
		 */
		ASSERT_EQ(0, gp_dev_alloc(ctx, 0, 256, NULL, &p));
		ASSERT_EQ(0, gp_dev_free(ctx, p, NULL));
		sum.dev_allocs = sum.dev_frees = 1;
	}

	w = calloc(n, sizeof(*w));
	ASSERT_NE(NULL, w);
	forks_left = MAX_FORKS;
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, n + 1));
	for (i = 0; i < n; i++) {
		w[i].id = i;
		w[i].ctx = ctx;
		w[i].ctx2 = ctx2;
		w[i].rt = &rt;
		w[i].dev = rt.devices > 0;
		w[i].user = on_user_backend(ctx);
		w[i].streams = streams;
		w[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
		ASSERT_EQ(0, pthread_create(&w[i].t, NULL, worker_main, &w[i]));
	}
	pthread_barrier_wait(&start);
	run_then_stop();
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, pthread_join(w[i].t, NULL));
		if (w[i].f.n) {
			TH_LOG("thread %u: %d failure(s), the first: %s", i,
			       w[i].f.n, w[i].f.why);
			failed++;
		}
		sum.allocs += w[i].c.allocs;
		sum.frees += w[i].c.frees;
		sum.imports += w[i].c.imports;
		sum.exports += w[i].c.exports;
		sum.imports2 += w[i].c.imports2;
		sum.frees2 += w[i].c.frees2;
		sum.dev_allocs += w[i].c.dev_allocs;
		sum.dev_frees += w[i].c.dev_frees;
		sum.forks += w[i].c.forks;
	}
	pthread_barrier_destroy(&start);
	free(w);
	ASSERT_EQ(0, failed);
	TH_LOG("%u threads, %u s: %llu host allocations, %llu exports, %llu imports "
	       "(%llu into a second context, %llu in children), %llu device "
	       "allocations", n, tsan_seconds(), (unsigned long long)sum.allocs,
	       (unsigned long long)sum.exports,
	       (unsigned long long)(sum.imports + sum.imports2 + sum.forks),
	       (unsigned long long)sum.imports2, (unsigned long long)sum.forks,
	       (unsigned long long)sum.dev_allocs);
	/* Everything was exercised (at least once a thread where that is
	 * certain; how much more depends on the machine's load).
	 */
	ASSERT_LE(n, sum.allocs);
	ASSERT_LT(0, sum.imports);
	ASSERT_LT(0, sum.imports2);
	ASSERT_LT(0, sum.forks);
	if (rt.devices)
		ASSERT_LT(0, sum.dev_allocs);

	/* The counters are the calls the threads made; nothing is in use. */
	ASSERT_EQ(0, gp_host_stats(ctx, &hs));
	ASSERT_EQ(sum.allocs, hs.allocs);
	ASSERT_EQ(sum.frees, hs.frees);
	ASSERT_EQ(sum.imports, hs.imports);
	ASSERT_EQ(sum.exports, hs.exports);
	ASSERT_EQ(hs.allocs + hs.imports, hs.frees);
	ASSERT_EQ(0, hs.failed);
	ASSERT_EQ(0, hs.in_use);
	ASSERT_EQ(0, hs.requested);
	ASSERT_EQ(hs.reserved, hs.idle);
	ASSERT_EQ(hs.reserved, hs.cached);
	ASSERT_EQ(0, gp_host_stats(ctx2, &hs2));
	ASSERT_EQ(0, hs2.allocs);
	ASSERT_EQ(sum.imports2, hs2.imports);
	ASSERT_EQ(sum.frees2, hs2.frees);
	ASSERT_EQ(hs2.imports, hs2.frees);
	ASSERT_EQ(0, hs2.in_use);
	ASSERT_EQ(0, hs2.reserved);	/* imports are never cached */
	/* Trimming gives back every cached segment. */
	ASSERT_EQ(0, gp_host_trim(ctx, &released));
	ASSERT_EQ(hs.reserved, released);
	ASSERT_EQ(0, gp_host_stats(ctx, &hs));
	ASSERT_EQ(0, hs.reserved);
	ASSERT_EQ(0, hs.segments);
	ASSERT_EQ(0, hs.registered);
	if (rt.devices) {
		ASSERT_EQ(0, gp_dev_stats(ctx, 0, &ds));
		ASSERT_EQ(sum.dev_allocs, ds.allocs);
		ASSERT_EQ(sum.dev_frees, ds.frees);
		ASSERT_EQ(0, ds.in_use);
		ASSERT_EQ(0, ds.requested);
		ASSERT_EQ(0, ds.ooms);
		/* Once the events complete, every segment can go. */
		if (rt.is_double)
			rt.complete_events();
		ASSERT_EQ(0, gp_dev_trim(ctx, -1, &released));
		ASSERT_EQ(0, gp_dev_stats(ctx, 0, &ds));
		ASSERT_EQ(0, ds.pending_blocks);
		ASSERT_EQ(0, ds.reserved);
		ASSERT_EQ(0, ds.segments);
	}
	gp_close(ctx2);
	gp_close(ctx);
	cc = rt_counts(&rt);
	ASSERT_EQ(0, cc.registered);
	ASSERT_EQ(0, cc.dev_live);
	ASSERT_EQ(0, cc.events_live);
	ASSERT_TRUE(rt_clean(&rt)) TH_LOG("%s", rt.last_violation());
	for (i = 0; rt.devices && i < NSTREAMS; i++)
		rt.StreamDestroy(streams[i]);
}

TEST_HARNESS_MAIN
