/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the in-VM tests of idle memory circulating between
 * libgpupool processes (on top of pool_lib.h): a process that holds host
 * buffers of libgpupool's (kernel backend, CUDA through the runtime
 * double of the build tree) on its driver's word, over a socket.  Its
 * freed buffers stay cached in the library, which tells the module they
 * are idle and gives them back when asked (the keeper thread); between
 * commands the process calls nothing of the library's.
 *
 * The test programs link libgpupool.so from the build tree
 * (tests/vm/Makefile); the library and the runtime double are found from
 * the program's path, <O>/tests/vm/<name>.
 */
#ifndef GPUPOOL_TESTS_VM_CIRCULATE_LIB_H
#define GPUPOOL_TESTS_VM_CIRCULATE_LIB_H

#include <libgen.h>
#include <limits.h>

#include "pool_lib.h"
#include "../../include/gpupool.h"

/* The environment of a libgpupool process here: the kernel backend, the
 * build tree's runtime double (so that segments are registered and
 * unregistered as with a GPU).
 */
static inline void lh_env(void)
{
	char self[PATH_MAX], lib[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	snprintf(lib, sizeof(lib), "%s/../cudart_double/libcudart_double.so",
		 dirname(self));
	setenv("GPUPOOL_CUDART", lib, 1);
	setenv("GPUPOOL_BACKEND", "kernel", 1);
}

/* Open a context as every process here does: 0 or -errno. */
static inline int lh_open(struct gp_ctx **ctx)
{
	lh_env();
	return gp_open(NULL, ctx);
}

#define LH_MAX	16

/* A command: op 'a' alloc (arg bytes; reply a = the buffer's index, b =
 * 1 when it came all zero), 'f' free (arg index), 'c' check its pattern,
 * 's' stats (a = trimmed bytes, b = cache hits), 'q' quit.  Reply ret: 0
 * or -errno; msg: the library's message of a failure.
 */
struct lh_cmd {
	char op;
	uint64_t arg;
};

struct lh_reply {
	int64_t ret;
	uint64_t a, b;
	char msg[512];
};

struct lh_buf {
	char *p;
	uint64_t size;
};

static inline struct lh_reply lh_do(struct gp_ctx *ctx, struct lh_buf *b,
				    unsigned int *n, const struct lh_cmd *c)
{
	struct lh_reply r;
	struct gp_host_stats st;
	void *p;

	memset(&r, 0, sizeof(r));
	switch (c->op) {
	case 'a':
		r.ret = *n == LH_MAX ? -ENOSPC :
			gp_host_alloc(ctx, c->arg, 0, &p);
		if (r.ret) {
			snprintf(r.msg, sizeof(r.msg), "%s", gp_last_error(ctx));
			break;
		}
		b[*n].p = p;
		b[*n].size = c->arg;
		r.b = gp_all_bytes(p, c->arg, 0);
		gp_fill_pages(p, c->arg, *n * 100000UL);
		r.a = (*n)++;
		break;
	case 'f':
		r.ret = c->arg < *n && b[c->arg].p ?
			gp_host_free(ctx, b[c->arg].p) : -EINVAL;
		if (!r.ret)
			b[c->arg].p = NULL;
		break;
	case 'c':
		r.ret = c->arg < *n && b[c->arg].p &&
			!gp_check_pages(b[c->arg].p, b[c->arg].size,
					c->arg * 100000UL) ? 0 : -EBADMSG;
		break;
	case 's':
		r.ret = gp_host_stats(ctx, &st);
		r.a = st.trimmed;
		r.b = st.cache_hits;
		break;
	}
	return r;
}

/* The holder's life: commands until 'q' or the socket closes. */
static inline int lh_main(int sock)
{
	struct lh_buf b[LH_MAX];
	struct gp_ctx *ctx;
	struct lh_reply r;
	struct lh_cmd c;
	unsigned int n = 0;

	if (lh_open(&ctx))
		return 1;
	while (read(sock, &c, sizeof(c)) == sizeof(c) && c.op != 'q') {
		r = lh_do(ctx, b, &n, &c);
		if (write(sock, &r, sizeof(r)) != sizeof(r))
			break;
	}
	gp_close(ctx);
	return 0;
}

/* A holder: forked by fk(arg), or fork() when fk is NULL (gp_child). */
static inline int lh_start_by(struct gp_child *h, pid_t (*fk)(void *),
			      void *arg)
{
	return gp_child_start(h, fk, arg, lh_main);
}

static inline struct lh_reply lh_call(struct gp_child *h, char op,
				      uint64_t arg)
{
	struct lh_cmd c = { op, arg };
	struct lh_reply r;

	memset(&r, 0, sizeof(r));
	if (gp_child_call(h, &c, sizeof(c), &r, sizeof(r)))
		r.ret = -EPIPE;
	return r;
}

/* Quit (continued first, if stopped) and reap: its exit status. */
static inline int lh_stop(struct gp_child *h)
{
	struct lh_cmd c = { 'q', 0 };

	return gp_child_stop(h, &c, sizeof(c));
}

#endif /* GPUPOOL_TESTS_VM_CIRCULATE_LIB_H */
