// SPDX-License-Identifier: MIT
/*
 * batch_ring.c - see batch_ring.h.  Each worker is a forked process with a
 * SOCK_SEQPACKET socketpair to the consumer: one message carries every slot
 * fd (SCM_RIGHTS) at start, then each message is one task or one reply.
 * A worker opens its own libgpupool context (never the parent's: a context
 * is not to be used across fork) on the same backend and imports the slots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "batch_ring.h"

#define BR_MAX_SLOTS	200	/* one SCM_RIGHTS message carries them all */

struct br_task { uint64_t slot, index; };
struct br_reply { uint64_t slot, index, sum; };

static struct gp_ctx *worker_ctx;	/* set in a worker process */

struct br_worker {
	pid_t pid;
	int sock;
	int inflight;
};

struct br_ring {
	struct gp_ctx *ctx;
	struct br_opts o;
	void *slot[BR_MAX_SLOTS];
	int free_slot[BR_MAX_SLOTS];
	int nr_free;
	struct br_worker *w;
	int nr_workers;
	uint64_t next_index;	/* next batch to hand to a worker */
	uint64_t done;		/* batches returned by br_next */
};

static void say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

uint64_t br_checksum(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0x243f6a8885a308d3ull ^ len, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h | 1;	/* never 0 */
}

/* The worker process: import the slots, serve tasks until EOF. */
static int worker_main(int sock, const struct br_opts *o, int backend)
{
	char cbuf[CMSG_SPACE(sizeof(int) * BR_MAX_SLOTS)];
	struct gp_options go;
	struct gp_ctx *ctx;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	struct br_task t;
	struct br_reply rep;
	void *slot[BR_MAX_SLOTS];
	int fds[BR_MAX_SLOTS], n, i;
	char byte;
	struct iovec iov = { &byte, 1 };

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return 10;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return 11;
	n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)n);

	gp_options_init(&go);
	go.backend = backend;
	go.flags = GP_OPEN_NO_CUDA;	/* workers only fill host memory */
	if (gp_open(&go, &ctx)) {
		fprintf(stderr, "worker: gp_open: %s\n", gp_last_error(NULL));
		return 12;
	}
	worker_ctx = ctx;
	for (i = 0; i < n; i++) {
		size_t size;

		if (gp_host_import(ctx, fds[i], &slot[i], &size) ||
		    size < o->batch_bytes) {
			fprintf(stderr, "worker: import: %s\n", gp_last_error(ctx));
			return 13;
		}
		close(fds[i]);
	}
	while (recv(sock, &t, sizeof(t), 0) == (ssize_t)sizeof(t)) {
		if (t.slot >= (uint64_t)n)
			return 14;
		rep.slot = t.slot;
		rep.index = t.index;
		rep.sum = o->produce(t.index, slot[t.slot], o->batch_bytes, o->arg);
		if (send(sock, &rep, sizeof(rep), MSG_NOSIGNAL) != sizeof(rep))
			return 15;
	}
	gp_close(ctx);
	return 0;
}

struct gp_ctx *br_worker_ctx(void)
{
	return worker_ctx;
}

static int send_fds(int sock, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * BR_MAX_SLOTS)];
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	char byte = 'f';
	struct iovec iov = { &byte, 1 };

	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

struct br_ring *br_start(struct gp_ctx *ctx, const struct br_opts *o,
			 char *err, size_t errlen)
{
	struct br_ring *r = calloc(1, sizeof(*r));
	int fds[BR_MAX_SLOTS], i, sv[2];
	struct gp_info info;

	if (!r) {
		say(err, errlen, "out of memory");
		return NULL;
	}
	r->ctx = ctx;
	r->o = *o;
	if (!r->o.slots)
		r->o.slots = 2 * o->workers;
	if (o->workers < 1 || r->o.slots < o->workers ||
	    r->o.slots > BR_MAX_SLOTS || !o->batch_bytes) {
		say(err, errlen, "bad ring geometry: %d workers, %d slots (1 per worker to %d), %zu bytes",
		    o->workers, r->o.slots, BR_MAX_SLOTS, o->batch_bytes);
		free(r);
		return NULL;
	}
	gp_info(ctx, &info);
	for (i = 0; i < r->o.slots; i++)
		fds[i] = -1;
	for (i = 0; i < r->o.slots; i++) {
		if (gp_host_alloc(ctx, o->batch_bytes, GP_HOST_SHARED, &r->slot[i]) ||
		    gp_host_export(ctx, r->slot[i], &fds[i])) {
			say(err, errlen, "slot %d: %s", i, gp_last_error(ctx));
			goto fail;
		}
		r->free_slot[r->nr_free++] = i;
	}
	r->w = calloc((size_t)o->workers, sizeof(*r->w));
	if (!r->w) {
		say(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < o->workers; i++) {
		struct br_worker *w = &r->w[i];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
			say(err, errlen, "socketpair: %s", strerror(errno));
			goto fail;
		}
		fflush(NULL);
		w->pid = fork();
		if (w->pid < 0) {
			say(err, errlen, "fork: %s", strerror(errno));
			close(sv[0]);
			close(sv[1]);
			goto fail;
		}
		if (!w->pid) {
			int j;

			/* Only its own socket: a sibling's end held here would
			 * keep that sibling from seeing EOF at br_stop().
			 */
			for (j = 0; j < i; j++)
				close(r->w[j].sock);
			close(sv[0]);
			_exit(worker_main(sv[1], &r->o, info.backend));
		}
		close(sv[1]);
		w->sock = sv[0];
		r->nr_workers++;
		if (send_fds(w->sock, fds, r->o.slots)) {
			say(err, errlen, "passing the slots: %s", strerror(errno));
			goto fail;
		}
	}
	for (i = 0; i < r->o.slots; i++)
		close(fds[i]);
	return r;

fail:
	for (i = 0; i < r->o.slots; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	br_stop(r);
	return NULL;
}

/*
 * Hand free slots to the least busy workers while batches remain.  A send can
 * fail before the dead worker's socket polls as readable (EPIPE), so this
 * names the worker the same way br_next() does.
 */
static int dispatch(struct br_ring *r, char *err, size_t errlen)
{
	while (r->nr_free && r->next_index < r->o.batches) {
		struct br_worker *best = &r->w[0];
		struct br_task t;
		int i;

		for (i = 1; i < r->nr_workers; i++)
			if (r->w[i].inflight < best->inflight)
				best = &r->w[i];
		t.slot = (uint64_t)r->free_slot[--r->nr_free];
		t.index = r->next_index++;
		if (send(best->sock, &t, sizeof(t), MSG_NOSIGNAL) != sizeof(t)) {
			say(err, errlen, "worker %d (pid %d) died or failed (send: %s)",
			    (int)(best - r->w), (int)best->pid, strerror(errno));
			return -1;
		}
		best->inflight++;
	}
	return 0;
}

int br_next(struct br_ring *r, struct br_batch *b, char *err, size_t errlen)
{
	struct pollfd pfd[BR_MAX_SLOTS];
	struct br_reply rep;
	int i, n;

	if (r->done == r->o.batches)
		return 1;
	if (dispatch(r, err, errlen))
		return -1;
	for (;;) {
		for (n = 0, i = 0; i < r->nr_workers; i++) {
			pfd[i].fd = r->w[i].inflight ? r->w[i].sock : -1;
			pfd[i].events = POLLIN;
			n += r->w[i].inflight;
		}
		if (!n) {
			say(err, errlen, "every slot is held: release batches");
			return -1;
		}
		if (poll(pfd, (nfds_t)r->nr_workers, -1) < 0) {
			if (errno == EINTR)
				continue;
			say(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		for (i = 0; i < r->nr_workers; i++) {
			if (!pfd[i].revents)
				continue;
			if (recv(r->w[i].sock, &rep, sizeof(rep), 0) != sizeof(rep) ||
			    rep.slot >= (uint64_t)r->o.slots) {
				say(err, errlen, "worker %d (pid %d) died or failed",
				    i, (int)r->w[i].pid);
				return -1;
			}
			r->w[i].inflight--;
			r->done++;
			b->index = rep.index;
			b->sum = rep.sum;
			b->slot = (int)rep.slot;
			b->data = r->slot[rep.slot];
			b->len = r->o.batch_bytes;
			return 0;
		}
	}
}

void br_release(struct br_ring *r, const struct br_batch *b)
{
	r->free_slot[r->nr_free++] = b->slot;
}

int br_stop(struct br_ring *r)
{
	int i, st, ret = 0;

	if (!r)
		return 0;
	for (i = 0; i < r->nr_workers; i++)
		close(r->w[i].sock);	/* EOF: the worker exits */
	for (i = 0; i < r->nr_workers; i++) {
		if (waitpid(r->w[i].pid, &st, 0) != r->w[i].pid ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			ret = -1;
	}
	for (i = 0; i < r->o.slots && i < BR_MAX_SLOTS; i++)
		if (r->slot[i])
			gp_host_free(r->ctx, r->slot[i]);
	free(r->w);
	free(r);
	return ret;
}
