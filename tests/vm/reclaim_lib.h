/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the in-VM tests of reclaim (on top of pool_lib.h): a holder
 * process that speaks the module's reclaim ioctls itself, as libgpupool
 * does, driven over a socket, and the wrappers of GPUPOOL_IOC_IDLE,
 * GPUPOOL_IOC_ASKED and GPUPOOL_IOC_ASK_REPORT.
 *
 * A holder (rh_start()) opens /dev/gpupool, and on its driver's word
 * allocates chunks (mapped, every page filled with a pattern of its own),
 * marks them idle or busy, checks their pattern, and answers the module's
 * asks: it polls its file for POLLPRI and, for each handle
 * GPUPOOL_IOC_ASKED lists, gives the chunk back (munmap, FREE), marks it
 * busy, or does nothing, as its mode says.  A holder that is stopped
 * (SIGSTOP) answers nothing, as any stopped process.
 */
#ifndef GPUPOOL_TESTS_VM_RECLAIM_LIB_H
#define GPUPOOL_TESTS_VM_RECLAIM_LIB_H

#include <poll.h>

#include "pool_lib.h"

/* Wrappers: 0 or -errno. */
static inline int rh_idle(int fd, uint64_t handle, uint32_t flags)
{
	struct gpupool_idle in;

	memset(&in, 0, sizeof(in));
	in.handle = handle;
	in.flags = flags;
	return gp_ioc(fd, GPUPOOL_IOC_IDLE, &in);
}

/* GPUPOOL_IOC_ASKED: up to nr handles into h; *q the answer. */
static inline int rh_asked(int fd, uint64_t *h, uint32_t nr,
			   struct gpupool_asked *q)
{
	memset(q, 0, sizeof(*q));
	q->nr = nr;
	q->handles_ptr = (uintptr_t)h;
	return gp_ioc(fd, GPUPOOL_IOC_ASKED, q);
}

/* GPUPOOL_IOC_ASK_REPORT with room for every entry. */
static inline int rh_report(int fd, struct gpupool_ask_report *r,
			    struct gpupool_ask_holder *h)
{
	memset(r, 0, sizeof(*r));
	memset(h, 0, GPUPOOL_ASK_MAX_HOLDERS * sizeof(*h));
	r->nr = GPUPOOL_ASK_MAX_HOLDERS;
	r->holders_ptr = (uintptr_t)h;
	return gp_ioc(fd, GPUPOOL_IOC_ASK_REPORT, r);
}

/* The report's entry for pid, or NULL. */
static inline const struct gpupool_ask_holder *
rh_entry(const struct gpupool_ask_report *r,
	 const struct gpupool_ask_holder *h, pid_t pid)
{
	uint32_t i;

	for (i = 0; i < r->nr && i < GPUPOOL_ASK_MAX_HOLDERS; i++)
		if (h[i].pid == pid)
			return &h[i];
	return NULL;
}

/* Does POLLPRI show on fd now? 1, 0, or -errno. */
static inline int rh_pri(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLPRI };
	int n = poll(&p, 1, 0);

	return n < 0 ? -errno : n == 1 && (p.revents & POLLPRI);
}

/* The holder process ----------------------------------------------------- */

enum rh_mode { RH_GIVE, RH_BUSY, RH_IGNORE };

#define RH_MAX	64

struct rh_chunk {
	uint64_t handle, size;
	char *p;		/* NULL once given back */
};

struct rh_state {
	int fd;
	enum rh_mode mode;
	unsigned int n;
	struct rh_chunk c[RH_MAX];
	uint64_t given, made_busy;	/* bytes */
	uint64_t noticed;		/* asks seen (POLLPRI) */
};

/*
 * A alloc (arg bytes: a = its index), I idle, B busy, C check its pattern
 * (arg: the index), M mode, P is POLLPRI on now (ret), S figures (a given,
 * b made busy, c asks noticed), Q quit.
 */
struct rh_cmd {
	char op;
	uint64_t arg;
};

struct rh_reply {
	int64_t ret;
	uint64_t a, b, c;
};

/* Chunk i's pattern: each page filled with a byte of its own. */
static inline void rh_fill(struct rh_chunk *c, unsigned int i)
{
	gp_fill_pages(c->p, c->size, i * 100000UL);
}

static inline int rh_intact(const struct rh_chunk *c, unsigned int i)
{
	return c->p && !gp_check_pages(c->p, c->size, i * 100000UL);
}

/* Answer an ask as the mode says. */
static inline void rh_answer(struct rh_state *s)
{
	uint64_t h[RH_MAX];
	struct gpupool_asked q;
	unsigned int i, j;

	if (rh_asked(s->fd, h, RH_MAX, &q))
		return;
	for (j = 0; j < q.nr && j < RH_MAX; j++) {
		for (i = 0; i < s->n; i++)
			if (s->c[i].p && s->c[i].handle == h[j])
				break;
		if (i == s->n)
			continue;
		if (s->mode == RH_GIVE) {
			munmap(s->c[i].p, s->c[i].size);
			s->c[i].p = NULL;
			gp_free(s->fd, s->c[i].handle);
			s->given += s->c[i].size;
		} else if (s->mode == RH_BUSY) {
			rh_idle(s->fd, s->c[i].handle, GPUPOOL_IDLE_BUSY);
			s->made_busy += s->c[i].size;
		}
	}
}

static inline struct rh_reply rh_do(struct rh_state *s, const struct rh_cmd *c)
{
	struct rh_reply r = { 0, 0, 0, 0 };
	struct gpupool_alloc a;
	struct rh_chunk *k;

	switch (c->op) {
	case 'A':
		if (s->n == RH_MAX) {
			r.ret = -ENOSPC;
			break;
		}
		r.ret = gp_alloc_ex(s->fd, c->arg, 0, 0, &a);
		if (r.ret)
			break;
		k = &s->c[s->n];
		k->handle = a.handle;
		k->size = a.chunk_size;
		k->p = gp_map(s->fd, a.handle, a.chunk_size);
		if (k->p == MAP_FAILED) {
			r.ret = -errno;
			break;
		}
		rh_fill(k, s->n);
		r.a = s->n++;
		break;
	case 'I':
	case 'B':
		r.ret = c->arg < s->n && s->c[c->arg].p ?
			rh_idle(s->fd, s->c[c->arg].handle,
				c->op == 'B' ? GPUPOOL_IDLE_BUSY : 0) : -EINVAL;
		break;
	case 'C':
		r.ret = c->arg < s->n && rh_intact(&s->c[c->arg], c->arg) ?
			0 : -EBADMSG;
		break;
	case 'M':
		s->mode = (enum rh_mode)c->arg;
		break;
	case 'P':
		r.ret = rh_pri(s->fd);
		break;
	case 'S':
		r.a = s->given;
		r.b = s->made_busy;
		r.c = s->noticed;
		break;
	}
	return r;
}

static inline int rh_main(int sock)
{
	struct rh_state s;
	struct pollfd p[2];
	struct rh_cmd c;
	struct rh_reply r;

	memset(&s, 0, sizeof(s));
	s.fd = gp_open_dev();
	if (s.fd < 0)
		return 1;
	p[0].fd = sock;
	p[0].events = POLLIN;
	p[1].fd = s.fd;
	p[1].events = POLLPRI;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 2;
		}
		p[1].events = POLLPRI;
		if (p[1].revents & POLLPRI) {
			s.noticed++;
			rh_answer(&s);
			/* Ignoring it: POLLPRI stays; look again after the
			 * next command, not in a loop.
			 */
			if (s.mode == RH_IGNORE)
				p[1].events = 0;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		if (read(sock, &c, sizeof(c)) != sizeof(c) || c.op == 'Q')
			return 0;
		r = rh_do(&s, &c);
		if (write(sock, &r, sizeof(r)) != sizeof(r))
			return 3;
	}
}

/* A holder: forked by fk(arg), or fork() when fk is NULL (gp_child). */
static inline int rh_start_by(struct gp_child *h, pid_t (*fk)(void *),
			      void *arg)
{
	return gp_child_start(h, fk, arg, rh_main);
}

static inline int rh_start(struct gp_child *h)
{
	return gp_child_start(h, NULL, NULL, rh_main);
}

/* One command: its reply (ret -EPIPE when the holder is gone). */
static inline struct rh_reply rh_call(struct gp_child *h, char op,
				      uint64_t arg)
{
	struct rh_cmd c = { op, arg };
	struct rh_reply r = { -EPIPE, 0, 0, 0 };

	if (gp_child_call(h, &c, sizeof(c), &r, sizeof(r)))
		r.ret = -EPIPE;
	return r;
}

/* Allocate size in the holder: the chunk's index, or -errno. */
static inline int64_t rh_alloc(struct gp_child *h, uint64_t size)
{
	struct rh_reply r = rh_call(h, 'A', size);

	return r.ret ? r.ret : (int64_t)r.a;
}

/*
 * Wait (up to ms) until the holder has noticed an ask: 0, or -ETIMEDOUT.
 * What it does then is its mode's.
 */
static inline int rh_wait_noticed(struct gp_child *h, int ms)
{
	for (; ms > 0; ms -= 10) {
		if (rh_call(h, 'S', 0).c)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* Quit and reap: its exit status. */
static inline int rh_stop(struct gp_child *h)
{
	struct rh_cmd c = { 'Q', 0 };

	return gp_child_stop(h, &c, sizeof(c));
}

#endif /* GPUPOOL_TESTS_VM_RECLAIM_LIB_H */
