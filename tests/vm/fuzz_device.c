// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_device: a seeded, bounded syscall fuzzer for /dev/gpupool.
 *
 * Worker processes (each with a racing thread) run random sequences of:
 * open/close; every ioctl with random and boundary arguments (sizes near 0
 * and 2^64, unknown flag bits, non-zero pad and reserved words, node
 * numbers, STATS arrays at bad addresses and of odd lengths, unknown
 * commands and argument sizes); handles that are live, freed, made up or
 * another process's; mmap of the device and of exported chunk fds with
 * random offsets, lengths, protections and MAP_PRIVATE; munmap, mremap,
 * mprotect, madvise on those mappings, partial and whole; fork children
 * that use and drop what they inherited; chunk fds passed over a UNIX
 * socket; GPUPOOL_IOC_CGROUP with random flags, limits, path buffers and
 * fds (bad ones, and the directories of a few test cgroups, so that limits
 * really get set and cleared and ALLOCs refused with ENOSPC) while the
 * workers move themselves between those cgroups; chunks marked idle and
 * busy (GPUPOOL_IOC_IDLE, on live, freed and made-up handles), so that
 * refused ALLOCs ask for them, asks answered or not (GPUPOOL_IOC_ASKED,
 * poll, FREE of what was asked) and reports read, every field fuzzed;
 * and SIGKILL at random
 * points (the driver kills and replaces workers).  What must hold: no
 * worker dies of anything but our SIGKILL, the kernel log stays clean (the
 * VM's judge), and once everyone is gone the pool is entirely free again
 * and no cgroup has anything charged.
 *
 * GPUPOOL_FUZZ_SEED=N replays a run's operation streams (the seed is always
 * printed; every worker's seed derives from it in order); the interleaving
 * of processes and threads and the moments of the kills follow the clock
 * and the scheduler, as in any real race.  GPUPOOL_FUZZ_OPS (default
 * 300000) and GPUPOOL_FUZZ_SECS (default 90) bound it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "cgroup_lib.h"

#define NR_WORKERS	4
#define MAX_FDS		8
#define MAX_CHUNKS	64
#define MAX_MAPS	32
#define MAX_EXPORTS	16
#define SHARED_HANDLES	64
#define NR_CGFDS	5
#define MIN_OPS		10000	/* fewer, and the run judges too little */

/* The test cgroups (below the root of cg_setup()'s subtree). */
static struct cg_env fz_env;
static const char *const fz_cgroups[] = { "f0", "f1", "f1/g" };

/* Shared between the driver and every worker (MAP_SHARED). */
struct shared {
	atomic_ullong ops;
	atomic_ullong handles[SHARED_HANDLES];	/* anyone's live handles */
	atomic_int stop;
	atomic_ullong cg_calls, limits_set, enospc;
	atomic_ullong idle_marks, asks_seen;
};

struct chunk { int fd; uint64_t handle, size; };
struct map { char *addr; size_t len; int prot; int touchable; };

struct worker {
	uint64_t rng;
	struct shared *sh;
	int fds[MAX_FDS], nr_fds;
	struct chunk chunks[MAX_CHUNKS];
	int nr_chunks;
	uint64_t freed[8];			/* stale handles */
	struct map maps[MAX_MAPS];
	int nr_maps;
	int exports[MAX_EXPORTS], nr_exports;
	int sock[2];
	int cgfds[NR_CGFDS];	/* the root, the base, fz_cgroups */
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t pick(struct worker *w, uint64_t n)
{
	return n ? rnd(&w->rng) % n : 0;
}

/* Sizes: boundaries of every kind, and ordinary ones. */
static uint64_t fuzz_size(struct worker *w)
{
	static const uint64_t edge[] = {
		0, 1, 4095, 4096, 4097, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1,
		32 * MiB, 64 * MiB, 1ull << 40, ~0ull, ~0ull - 4095,
		1ull << 63, (1ull << 63) + 1, ~0ull << 12,
	};

	if (pick(w, 4) == 0)
		return edge[pick(w, sizeof(edge) / sizeof(edge[0]))];
	return 1 + pick(w, pick(w, 2) ? 256 * KiB : 4 * MiB);
}

static uint32_t fuzz_flags(struct worker *w, uint32_t valid)
{
	switch (pick(w, 8)) {
	case 0: return (uint32_t)rnd(&w->rng);
	case 1: return 1u << pick(w, 32);
	case 2: return valid;
	default: return 0;
	}
}

/* Mostly zero; sometimes a word that must be refused. */
static uint64_t fuzz_reserved(struct worker *w)
{
	return pick(w, 16) ? 0 : rnd(&w->rng) | 1;
}

static uint64_t any_handle(struct worker *w)
{
	switch (pick(w, 6)) {
	case 0: return w->freed[pick(w, 8)];
	case 1: return atomic_load(&w->sh->handles[pick(w, SHARED_HANDLES)]);
	case 2: return rnd(&w->rng) & ~4095ull;
	case 3: return rnd(&w->rng);
	default:
		return w->nr_chunks ? w->chunks[pick(w, (uint64_t)w->nr_chunks)].handle : 0;
	}
}

static int any_fd(struct worker *w)
{
	if (!w->nr_fds || !pick(w, 20))
		return (int)pick(w, 64) - 2;	/* a bad or unrelated fd */
	return w->fds[pick(w, (uint64_t)w->nr_fds)];
}

static void forget_chunk(struct worker *w, int i)
{
	w->freed[pick(w, 8)] = w->chunks[i].handle;
	w->chunks[i] = w->chunks[--w->nr_chunks];
}

static void op_open_close(struct worker *w)
{
	int i, fd;

	if (w->nr_fds < MAX_FDS && pick(w, 3)) {
		fd = open(GP_DEV, pick(w, 8) ? O_RDWR | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			w->fds[w->nr_fds++] = fd;
		return;
	}
	if (!w->nr_fds)
		return;
	i = (int)pick(w, (uint64_t)w->nr_fds);
	fd = w->fds[i];
	close(fd);
	w->fds[i] = w->fds[--w->nr_fds];
	for (i = w->nr_chunks - 1; i >= 0; i--)	/* close freed them all */
		if (w->chunks[i].fd == fd)
			forget_chunk(w, i);
}

static void op_alloc(struct worker *w)
{
	struct gpupool_alloc a;
	int fd = any_fd(w);

	memset(&a, 0, sizeof(a));
	a.size = fuzz_size(w);
	a.flags = fuzz_flags(w, GPUPOOL_ALLOC_VALID_FLAGS);
	a.node = pick(w, 4) ? 0 : (uint32_t)rnd(&w->rng);
	a.pad = (uint32_t)fuzz_reserved(w);
	a.reserved[pick(w, 4)] = fuzz_reserved(w);
	a.handle = rnd(&w->rng);	/* out fields: garbage in must not matter */
	if (ioctl(fd, GPUPOOL_IOC_ALLOC, &a)) {
		if (errno == ENOSPC)
			atomic_fetch_add(&w->sh->enospc, 1);
		return;
	}
	if (w->nr_chunks == MAX_CHUNKS)
		return;
	w->chunks[w->nr_chunks].fd = fd;
	w->chunks[w->nr_chunks].handle = a.handle;
	w->chunks[w->nr_chunks].size = a.chunk_size;
	w->nr_chunks++;
	atomic_store(&w->sh->handles[pick(w, SHARED_HANDLES)], a.handle);
}

static void op_free(struct worker *w)
{
	struct gpupool_free f;
	int i = w->nr_chunks ? (int)pick(w, (uint64_t)w->nr_chunks) : -1;
	int fd = i >= 0 && pick(w, 4) ? w->chunks[i].fd : any_fd(w);

	memset(&f, 0, sizeof(f));
	f.handle = i >= 0 && pick(w, 2) ? w->chunks[i].handle : any_handle(w);
	f.flags = fuzz_flags(w, 0);
	f.pad = (uint32_t)fuzz_reserved(w);
	f.reserved[pick(w, 2)] = fuzz_reserved(w);
	if (!ioctl(fd, GPUPOOL_IOC_FREE, &f) && i >= 0 &&
	    f.handle == w->chunks[i].handle && fd == w->chunks[i].fd)
		forget_chunk(w, i);
}

static void op_stats_version(struct worker *w)
{
	struct gpupool_pool_stats nodes[4];
	struct gpupool_version v;
	struct gpupool_stats s;
	static const uint64_t bad_ptr[] = {
		0, 1, 4096, 0xffff888000000000ull, ~0ull - 7, 0x7ffffffff000ull,
	};

	if (pick(w, 3) == 0) {
		memset(&v, 0, sizeof(v));
		v.flags = fuzz_flags(w, 0);
		v.pad = (uint32_t)fuzz_reserved(w);
		v.reserved[pick(w, 3)] = fuzz_reserved(w);
		if (!pick(w, 8))
			v.features = fuzz_reserved(w);
		ioctl(any_fd(w), GPUPOOL_IOC_VERSION, pick(w, 16) ? (void *)&v :
		      (void *)(uintptr_t)bad_ptr[pick(w, 6)]);
		return;
	}
	memset(&s, 0, sizeof(s));
	s.flags = fuzz_flags(w, 0);
	s.nr_nodes = (uint32_t)(pick(w, 3) ? pick(w, 5) : rnd(&w->rng));
	s.nodes_ptr = pick(w, 3) ? (uint64_t)(uintptr_t)nodes +
		      (pick(w, 8) ? 0 : pick(w, 8)) : bad_ptr[pick(w, 6)];
	if (s.nr_nodes > 4 && s.nodes_ptr == (uint64_t)(uintptr_t)nodes)
		s.nr_nodes = 4;		/* never let it write past our array */
	s.reserved[pick(w, 4)] = fuzz_reserved(w);
	ioctl(any_fd(w), GPUPOOL_IOC_STATS, &s);
}

static void op_unknown_ioctl(struct worker *w)
{
	char buf[512];
	unsigned long cmd;

	memset(buf, (int)pick(w, 256), sizeof(buf));
	switch (pick(w, 4)) {
	case 0:	/* a known number with the wrong size or direction */
		cmd = _IOC(pick(w, 4), GPUPOOL_IOC_MAGIC, pick(w, 5),
			   pick(w, sizeof(buf)));
		break;
	case 1:
		cmd = _IOC(pick(w, 4), GPUPOOL_IOC_MAGIC, pick(w, 256),
			   pick(w, sizeof(buf)));
		break;
	default:
		cmd = (unsigned long)rnd(&w->rng);
		break;
	}
	ioctl(any_fd(w), cmd, pick(w, 8) ? (void *)buf : (void *)(uintptr_t)rnd(&w->rng));
}

static void op_export(struct worker *w)
{
	struct gpupool_chunk_info ci;
	struct gpupool_export e;
	int fd;

	if (w->nr_exports && pick(w, 2)) {
		int i = (int)pick(w, (uint64_t)w->nr_exports);

		memset(&ci, 0, sizeof(ci));
		ci.flags = fuzz_flags(w, 0);
		ci.reserved[pick(w, 2)] = fuzz_reserved(w);
		ioctl(pick(w, 4) ? w->exports[i] : any_fd(w),
		      GPUPOOL_IOC_CHUNK_INFO, &ci);
		if (pick(w, 3) == 0) {
			close(w->exports[i]);
			w->exports[i] = w->exports[--w->nr_exports];
		}
		return;
	}
	memset(&e, 0, sizeof(e));
	e.handle = any_handle(w);
	e.flags = fuzz_flags(w, GPUPOOL_EXPORT_VALID_FLAGS) | GPUPOOL_EXPORT_CLOEXEC;
	e.reserved[pick(w, 2)] = fuzz_reserved(w);
	if (ioctl(any_fd(w), GPUPOOL_IOC_EXPORT, &e))
		return;
	fd = (int)e.fd;
	if (w->nr_exports == MAX_EXPORTS)
		close(fd);
	else
		w->exports[w->nr_exports++] = fd;
}

static void op_mmap(struct worker *w)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ,
				     PROT_WRITE, PROT_NONE,
				     PROT_READ | PROT_WRITE | PROT_EXEC };
	int prot = prots[pick(w, 5)], fd, i, exact = 0;
	uint64_t off, len;
	char *p;

	if (w->nr_exports && pick(w, 3) == 0) {
		fd = w->exports[pick(w, (uint64_t)w->nr_exports)];
		off = pick(w, 4) ? 0 : pick(w, 4) * 4096;
		len = pick(w, 2) ? 4096 * (1 + pick(w, 64)) : fuzz_size(w);
	} else if (w->nr_chunks && pick(w, 4)) {
		i = (int)pick(w, (uint64_t)w->nr_chunks);
		fd = w->chunks[i].fd;
		off = w->chunks[i].handle;
		len = w->chunks[i].size;
		exact = 1;
		switch (pick(w, 6)) {
		case 0: off += 4096; exact = 0; break;
		case 1: len -= 4096; exact = 0; break;
		case 2: len += 4096; exact = 0; break;
		case 3: fd = any_fd(w); break;
		}
	} else {
		fd = any_fd(w);
		off = any_handle(w);
		len = fuzz_size(w);
	}
	if (len > 64 * MiB)	/* keep address space use sane; the kernel */
		len = len % (64 * MiB) + 1;	/* still sees odd lengths */
	p = mmap(NULL, len, prot, pick(w, 6) ? MAP_SHARED : MAP_PRIVATE, fd,
		 (off_t)(off & ~4095ull));
	if (p == MAP_FAILED)
		return;
	if (w->nr_maps == MAX_MAPS) {
		munmap(p, len);
		return;
	}
	w->maps[w->nr_maps].addr = p;
	w->maps[w->nr_maps].len = len;
	w->maps[w->nr_maps].prot = prot;
	/* Only a whole chunk mapped writable, as documented, is touched. */
	w->maps[w->nr_maps].touchable = exact && (prot & PROT_WRITE) &&
					(prot & PROT_READ);
	if (w->maps[w->nr_maps].touchable) {
		p[0] = 1;
		p[len - 1] = 2;
	}
	w->nr_maps++;
}

static void op_vma(struct worker *w)
{
	struct map *m;
	int i;

	if (!w->nr_maps)
		return;
	i = (int)pick(w, (uint64_t)w->nr_maps);
	m = &w->maps[i];
	switch (pick(w, 6)) {
	case 0: {	/* mremap: grow, shrink or move */
		size_t nlen = pick(w, 2) ? m->len + 4096 * (1 + pick(w, 4)) :
			      (m->len > 4096 ? m->len - 4096 : m->len);
		void *q = mremap(m->addr, m->len, nlen, MREMAP_MAYMOVE);

		if (q != MAP_FAILED) {
			m->addr = q;
			m->len = nlen;
			m->touchable = 0;
		}
		break;
	}
	case 1:
		if (!mprotect(m->addr, m->len, pick(w, 2) ? PROT_READ :
			      PROT_READ | PROT_WRITE | (pick(w, 4) ? 0 : PROT_EXEC)))
			m->touchable = 0;
		break;
	case 2: {
		static const int advice[] = { MADV_DONTNEED, MADV_DONTFORK,
			MADV_DOFORK, MADV_WIPEONFORK, MADV_KEEPONFORK,
			MADV_HUGEPAGE, MADV_FREE, MADV_REMOVE, MADV_COLD,
			MADV_PAGEOUT, MADV_WILLNEED };

		madvise(m->addr, m->len, advice[pick(w, 11)]);
		m->touchable = 0;
		break;
	}
	case 3:		/* unmap a piece: what stays is not ours to touch */
		if (m->len > 8192) {
			munmap(m->addr + 4096, 4096);
			m->touchable = 0;
			m->len = 4096;	/* only the head is tracked now */
		}
		break;
	case 4:
		if (m->touchable)
			m->addr[pick(w, m->len)] ^= 1;
		break;
	default:
		munmap(m->addr, m->len);
		*m = w->maps[--w->nr_maps];
		break;
	}
}

/*
 * GPUPOOL_IOC_CGROUP: queries, limits set and cleared (on the test cgroups,
 * the root and the base), LAST_DENIAL, with every field fuzzed; or a move
 * of this worker to another cgroup.
 */
static void op_cgroup(struct worker *w)
{
	static const uint64_t limits[] = {
		0, 1, 4095, 4096, 64 * KiB, 256 * KiB, MiB, 2 * MiB, 4 * MiB,
		8 * MiB, 32 * MiB, 1ull << 40, GPUPOOL_NO_LIMIT,
		GPUPOOL_NO_LIMIT - 1, 1ull << 63,
	};
	static const uint64_t bad_ptr[] = {
		1, 4096, 0xffff888000000000ull, ~0ull - 7, 0x7ffffffff000ull,
	};
	struct gpupool_cgroup c;
	char path[128];
	int ret;

	if (!pick(w, 4)) {	/* move: to the root or a test cgroup */
		uint64_t i = pick(w, 4);

		cg_move(&fz_env, i ? fz_cgroups[i - 1] : NULL, 0);
		return;
	}
	memset(&c, 0, sizeof(c));
	switch (pick(w, 8)) {
	case 0: case 1: break;
	case 2: case 3: case 4: c.flags = GPUPOOL_CGROUP_SET_LIMIT; break;
	case 5: c.flags = GPUPOOL_CGROUP_CLEAR_LIMIT; break;
	case 6: c.flags = GPUPOOL_CGROUP_LAST_DENIAL; break;
	default: c.flags = fuzz_flags(w, GPUPOOL_CGROUP_VALID_FLAGS); break;
	}
	if (c.flags == GPUPOOL_CGROUP_LAST_DENIAL && pick(w, 4))
		c.cgroup_fd = -1;
	else if (pick(w, 8))
		c.cgroup_fd = w->cgfds[pick(w, NR_CGFDS)];
	else
		c.cgroup_fd = pick(w, 2) ? -1 : any_fd(w);
	if ((c.flags & GPUPOOL_CGROUP_SET_LIMIT) || !pick(w, 16))
		c.limit = pick(w, 8) ? limits[pick(w, sizeof(limits) /
					     sizeof(limits[0]))] :
			  rnd(&w->rng);
	switch (pick(w, 4)) {
	case 0:
		break;
	case 1:		/* maybe too small: never past our buffer */
		c.path_ptr = (uintptr_t)path;
		c.path_len = (uint32_t)pick(w, sizeof(path) + 1);
		break;
	case 2:
		c.path_ptr = bad_ptr[pick(w, 5)];
		c.path_len = (uint32_t)(pick(w, 2) ? 256 : rnd(&w->rng));
		break;
	default:
		c.path_ptr = (uintptr_t)path;
		c.path_len = sizeof(path);
		break;
	}
	c.pad = (uint32_t)fuzz_reserved(w);
	c.reserved[pick(w, 4)] = fuzz_reserved(w);
	if (!pick(w, 16))	/* out fields set on the way in */
		c.usage = rnd(&w->rng);
	ret = ioctl(any_fd(w), GPUPOOL_IOC_CGROUP, pick(w, 32) ? (void *)&c :
		    (void *)(uintptr_t)bad_ptr[pick(w, 5)]);
	atomic_fetch_add(&w->sh->cg_calls, 1);
	if (!ret && (c.flags & GPUPOOL_CGROUP_SET_LIMIT))
		atomic_fetch_add(&w->sh->limits_set, 1);
}

/*
 * Reclaim: mark a chunk idle or busy (fields fuzzed, handles of every
 * kind); or, asked (POLLPRI), give back some of what is asked, as a
 * library would, or not; or read the report of the last refusal.
 */
static void op_reclaim(struct worker *w)
{
	static const uint64_t bad_ptr[] = {
		1, 4096, 0xffff888000000000ull, ~0ull - 7, 0x7ffffffff000ull,
	};
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS + 1];
	struct gpupool_ask_report r;
	struct pollfd pfd = { .fd = any_fd(w), .events = POLLPRI };
	struct gpupool_asked q;
	struct gpupool_idle in;
	uint64_t asked[8];
	int i, j;

	switch (pick(w, 4)) {
	case 0: case 1:
		memset(&in, 0, sizeof(in));
		in.handle = any_handle(w);
		in.flags = pick(w, 3) ? 0 : fuzz_flags(w, GPUPOOL_IDLE_VALID_FLAGS);
		in.pad = (uint32_t)fuzz_reserved(w);
		in.reserved[pick(w, 2)] = fuzz_reserved(w);
		if (!ioctl(any_fd(w), GPUPOOL_IOC_IDLE, &in) && !in.flags)
			atomic_fetch_add(&w->sh->idle_marks, 1);
		break;
	case 2:
		if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLPRI))
			break;
		atomic_fetch_add(&w->sh->asks_seen, 1);
		memset(&q, 0, sizeof(q));
		q.nr = (uint32_t)pick(w, 10);	/* may be more than fits */
		q.handles_ptr = q.nr > 8 || !pick(w, 8) ?
				bad_ptr[pick(w, 5)] : (uintptr_t)asked;
		q.flags = fuzz_flags(w, 0);
		q.reserved[pick(w, 3)] = fuzz_reserved(w);
		if (q.nr > 8)
			q.nr = 8;
		if (ioctl(pfd.fd, GPUPOOL_IOC_ASKED, &q) ||
		    q.handles_ptr != (uintptr_t)asked || pick(w, 4) == 0)
			break;
		for (j = 0; j < (int)q.nr && j < 8; j++)
			for (i = w->nr_chunks - 1; i >= 0; i--)
				if (w->chunks[i].fd == pfd.fd &&
				    w->chunks[i].handle == asked[j]) {
					struct gpupool_free f = {
						.handle = asked[j] };

					if (!ioctl(pfd.fd, GPUPOOL_IOC_FREE, &f))
						forget_chunk(w, i);
					break;
				}
		break;
	default:
		memset(&r, 0, sizeof(r));
		r.nr = (uint32_t)(pick(w, 4) ? pick(w, GPUPOOL_ASK_MAX_HOLDERS + 2) :
				  rnd(&w->rng));
		r.holders_ptr = pick(w, 8) ? (uintptr_t)h : bad_ptr[pick(w, 5)];
		if (r.holders_ptr == (uintptr_t)h &&
		    r.nr > GPUPOOL_ASK_MAX_HOLDERS + 1)
			r.nr = GPUPOOL_ASK_MAX_HOLDERS + 1;	/* our array */
		r.flags = fuzz_flags(w, 0);
		r.reserved[pick(w, 4)] = fuzz_reserved(w);
		ioctl(any_fd(w), GPUPOOL_IOC_ASK_REPORT, &r);
		break;
	}
}

/* A child inherits everything, uses a bit of it, and goes (or is killed). */
static void op_fork(struct worker *w)
{
	pid_t pid;
	int i, st;

	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		for (i = 0; i < w->nr_maps; i++)
			if (w->maps[i].touchable)
				w->maps[i].addr[0] ^= 4;
		for (i = 0; i < 4; i++)
			op_free(w);
		if (pick(w, 2))
			op_alloc(w);
		_exit(0);
	}
	if (pick(w, 4) == 0)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* Pass a chunk fd to ourselves over a UNIX socket and map what arrives. */
static void op_pass_fd(struct worker *w)
{
	int fd;

	if (!w->nr_exports)
		return;
	fd = w->exports[pick(w, (uint64_t)w->nr_exports)];
	if (gp_send_fd(w->sock[0], fd, NULL, 0, MSG_DONTWAIT))
		return;
	fd = gp_recv_fd(w->sock[1], NULL, 0, 0);
	if (fd < 0)
		return;
	if (w->nr_exports < MAX_EXPORTS)
		w->exports[w->nr_exports++] = fd;
	else
		close(fd);
}

/* The racing thread: frees, exports and maps the same handles as the main
 * thread, through the same fds, without tracking anything.
 */
static void *racer(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->rng ^ 0x5deece66dull;

	while (!atomic_load(&w->sh->stop)) {
		struct gpupool_free f = { 0 };
		struct gpupool_export e = { 0 };
		int fd = (int)(rnd(&s) % 16) + 3;
		uint64_t h = atomic_load(&w->sh->handles[rnd(&s) % SHARED_HANDLES]);
		void *p;

		switch (rnd(&s) % 3) {
		case 0:
			f.handle = h;
			ioctl(fd, GPUPOOL_IOC_FREE, &f);
			break;
		case 1:
			e.handle = h;
			e.flags = GPUPOOL_EXPORT_CLOEXEC;
			if (!ioctl(fd, GPUPOOL_IOC_EXPORT, &e))
				close((int)e.fd);
			break;
		default:
			p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)h);
			if (p != MAP_FAILED)
				munmap(p, 4096);
			break;
		}
		usleep(50);
	}
	return NULL;
}

static int worker_main(struct shared *sh, uint64_t seed, uint64_t max_ops)
{
	struct worker w = { .rng = seed | 1, .sh = sh };
	pthread_t th;
	uint64_t n;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w.sock))
		return 20;
	w.cgfds[0] = cg_open(&fz_env, NULL);
	w.cgfds[1] = cg_open(&fz_env, "");
	for (n = 0; n < 3; n++)
		w.cgfds[2 + n] = cg_open(&fz_env, fz_cgroups[n]);
	for (n = 0; n < NR_CGFDS; n++)
		if (w.cgfds[n] < 0)
			return 21;
	pthread_create(&th, NULL, racer, &w);
	for (n = 0; n < max_ops && !atomic_load(&sh->stop); n++) {
		switch (pick(&w, 23)) {
		case 0: case 1: op_open_close(&w); break;
		case 2: case 3: case 4: case 5: op_alloc(&w); break;
		case 6: case 7: case 8: op_free(&w); break;
		case 9: op_stats_version(&w); break;
		case 10: op_unknown_ioctl(&w); break;
		case 11: case 12: op_export(&w); break;
		case 13: case 14: case 15: op_mmap(&w); break;
		case 16: case 17: op_vma(&w); break;
		case 18: if (pick(&w, 20) == 0) op_fork(&w); else op_alloc(&w); break;
		case 19: op_cgroup(&w); break;
		case 20: case 21: op_reclaim(&w); break;
		default: op_pass_fd(&w); break;
		}
		atomic_fetch_add(&sh->ops, 1);
	}
	atomic_store(&sh->stop, 1);	/* for our racer: the others see it too */
	pthread_join(th, NULL);
	return 0;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/* kselftest's timeouts hang on fixtures: an empty one for the long run. */
FIXTURE(fz) {
	int unused;
};

FIXTURE_SETUP(fz)
{
}

FIXTURE_TEARDOWN(fz)
{
	cg_teardown(&fz_env);
}

TEST_F_TIMEOUT(fz, fuzz, 900)
{
	uint64_t seed = env_u64("GPUPOOL_FUZZ_SEED", (uint64_t)time(NULL));
	uint64_t max_ops = env_u64("GPUPOOL_FUZZ_OPS", 300000);
	uint64_t secs = env_u64("GPUPOOL_FUZZ_SECS", 90), rng = seed | 1;
	struct gpupool_pool_stats s;
	pid_t pid[NR_WORKERS];
	struct shared *sh;
	const char *text;
	time_t end;
	int i, st, kills = 0, bad = 0, spawned = 0;

	GP_REQUIRE();
	ksft_print_msg("fuzz_device: seed %llu (GPUPOOL_FUZZ_SEED=%llu reproduces), %llu ops, %llu s\n",
		       (unsigned long long)seed, (unsigned long long)seed,
		       (unsigned long long)max_ops, (unsigned long long)secs);
	/* The module's own limits, so that SET_LIMIT works on every kernel. */
	/* A short wait for asks: workers answer a few, between other ops. */
	ASSERT_EQ(0, gp_load_1("pool_size=32M max_size=64M cgroup_limits=module reclaim_wait_ms=20"));
	ASSERT_EQ(0, cg_setup(&fz_env, "fuzz", 0));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, cg_make(&fz_env, fz_cgroups[i]));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	end = time(NULL) + (time_t)secs;

	for (i = 0; i < NR_WORKERS; i++)
		pid[i] = -1;
	/* Its time, or longer on a slow host until the checks below have
	 * enough to judge (a worker stops at max_ops, and so does this).
	 */
	while (atomic_load(&sh->ops) < max_ops &&
	       (time(NULL) < end ||
		((atomic_load(&sh->ops) <= MIN_OPS ||
		  !atomic_load(&sh->limits_set) || !atomic_load(&sh->enospc)) &&
		 time(NULL) < end + 300))) {
		for (i = 0; i < NR_WORKERS; i++) {
			uint64_t wseed;

			if (pid[i] > 0)
				continue;
			wseed = rnd(&rng);
			spawned++;
			fflush(NULL);
			pid[i] = fork();
			ASSERT_LE(0, pid[i]);
			if (!pid[i])
				_exit(worker_main(sh, wseed, max_ops));
		}
		usleep(20000 + (useconds_t)(rnd(&rng) % 200000));
		i = (int)(rnd(&rng) % NR_WORKERS);
		if (pid[i] > 0 && rnd(&rng) % 8 == 0) {	/* SIGKILL, at random */
			kill(pid[i], SIGKILL);
			kills++;
		}
		for (i = 0; i < NR_WORKERS; i++) {
			if (pid[i] <= 0 || waitpid(pid[i], &st, WNOHANG) != pid[i])
				continue;
			if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) &&
			    !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
				bad++;
				ksft_print_msg("worker %d died: status %#x\n",
					       (int)pid[i], st);
			}
			pid[i] = -1;
		}
	}
	atomic_store(&sh->stop, 1);
	for (i = 0; i < NR_WORKERS; i++) {
		if (pid[i] <= 0)
			continue;
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
		    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
			bad++;
			ksft_print_msg("worker %d died: status %#x\n", (int)pid[i], st);
		}
	}
	ksft_print_msg("fuzz_device: %llu ops by %d workers (%d SIGKILLed); %llu GPUPOOL_IOC_CGROUP, %llu limits set, %llu ALLOCs refused with ENOSPC; %llu chunks marked idle, %llu asks seen, %lld asks made\n",
		       (unsigned long long)atomic_load(&sh->ops), spawned, kills,
		       (unsigned long long)atomic_load(&sh->cg_calls),
		       (unsigned long long)atomic_load(&sh->limits_set),
		       (unsigned long long)atomic_load(&sh->enospc),
		       (unsigned long long)atomic_load(&sh->idle_marks),
		       (unsigned long long)atomic_load(&sh->asks_seen),
		       gp_proc_num("ReclaimAsks"));
	EXPECT_EQ(0, bad);
	EXPECT_LT(MIN_OPS, atomic_load(&sh->ops));
	/* The cgroup ioctl was really exercised. */
	EXPECT_LT(0, atomic_load(&sh->limits_set));
	EXPECT_LT(0, atomic_load(&sh->enospc));

	/* Everyone is gone: the pool must be whole again, nothing idle. */
	EXPECT_EQ(0, gp_wait_quiet(60000, 1));
	EXPECT_EQ(0, gp_proc_num("Idle"));
	EXPECT_EQ(0, gp_proc_num("ChunksIdle"));
	s = gp_pool();
	EXPECT_EQ(0, s.in_use);
	EXPECT_EQ(0, s.chunks_in_use);
	EXPECT_EQ(s.total, s.free);
	EXPECT_EQ(s.allocs, s.frees);
	/* And no cgroup has anything charged. */
	text = cg_proc();
	ASSERT_NE(NULL, text);
	EXPECT_EQ(0, cg_proc_count(text, 1)) TH_LOG("%s", text);
	for (i = 0; i < 3; i++) {
		struct gpupool_cgroup c;
		int fd = gp_open_dev();

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, cg_figures(fd, &fz_env, fz_cgroups[i], &c));
		EXPECT_EQ(0, c.usage) TH_LOG("%s", fz_cgroups[i]);
		EXPECT_EQ(0, c.chunks) TH_LOG("%s", fz_cgroups[i]);
		close(fd);
	}
	cg_teardown(&fz_env);
	EXPECT_EQ(0, gp_unload_wait(10000));
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
