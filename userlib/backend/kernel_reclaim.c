// SPDX-License-Identifier: MIT
/*
 * kernel_reclaim.c - the kernel backend's part in circulating idle memory
 * (gpupool.ko ABI 1.2, GPUPOOL_FEATURE_RECLAIM; the module's rules are in
 * kmod/reclaim.c): it tells the module which segments are idle and busy
 * again (GPUPOOL_IOC_IDLE), waits for the module to ask some back (poll,
 * POLLPRI, then GPUPOOL_IOC_ASKED: the host pools' reclaim thread calls
 * it, host/keeper.c), and puts into words what a refused ALLOC found idle
 * where (GPUPOOL_IOC_ASK_REPORT).  With an older module it tells nothing
 * and nothing is asked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/gpupool.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "bytes.h"
#include "backend/kernel.h"
#include "host/seg.h"

/* Say to the module that seg (a pool segment: one chunk) holds nothing
 * in use (idle), or something again.
 */
void gp_kernel_mark(struct gp_ctx *ctx, struct gp_seg *seg, bool idle)
{
	struct gpupool_idle in;

	if (!gp_kernel_of(ctx)->reclaim)
		return;
	memset(&in, 0, sizeof(in));
	in.handle = seg->khandle;
	in.flags = idle ? 0 : GPUPOOL_IDLE_BUSY;
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_IDLE, &in))
		gp_debug(ctx, "GPUPOOL_IOC_IDLE(%#llx, %s): %s",
			 (unsigned long long)seg->khandle, idle ? "idle" : "busy",
			 strerror(errno));
}

/*
 * Wait up to timeout_ms (-1: for ever) until the module asks this file
 * for idle chunks (POLLPRI) or stop_fd is readable: 0 with the handles
 * asked (*nr, at most room) in handles, -ECANCELED for stop_fd,
 * -ETIMEDOUT, or -errno.  Without the module's reclaim only stop_fd and
 * the timeout wake it.
 */
int gp_kernel_asked(struct gp_ctx *ctx, int stop_fd, int timeout_ms,
		    uint64_t *handles, uint32_t room, uint32_t *nr)
{
	struct gp_kernel *k = gp_kernel_of(ctx);
	struct pollfd p[2] = {
		{ .fd = stop_fd, .events = POLLIN },
		{ .fd = k->fd, .events = POLLPRI },
	};
	struct gpupool_asked q;
	int n;

	*nr = 0;
	n = poll(p, k->reclaim ? 2 : 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? -ETIMEDOUT : -errno;
	if (p[0].revents)
		return -ECANCELED;
	if (p[1].revents & (POLLNVAL | POLLERR))
		return -EBADF;	/* not in a loop: the keeper waits on error */
	if (!n || !(p[1].revents & POLLPRI))
		return -ETIMEDOUT;
	memset(&q, 0, sizeof(q));
	q.nr = room;
	q.handles_ptr = (uint64_t)(uintptr_t)handles;
	if (ioctl(k->fd, GPUPOOL_IOC_ASKED, &q))
		return -errno;
	*nr = q.nr < room ? q.nr : room;
	return 0;
}

/* One holder of the report, as a message says it. */
static void gp_ask_holder_words(char *out, size_t len,
				const struct gpupool_ask_holder *h,
				const struct gpupool_ask_report *r)
{
	char b[32], who[64], comm[sizeof(h->comm) + 1];
	const char *what;
	size_t i;

	for (i = 0; i < sizeof(h->comm) && h->comm[i]; i++)
		comm[i] = h->comm[i] < 0x20 || h->comm[i] >= 0x7f ? '?' :
			  (char)h->comm[i];
	comm[i] = 0;
	if (h->flags & GPUPOOL_ASK_HIDDEN)
		snprintf(who, sizeof(who), "a process of another user");
	else
		snprintf(who, sizeof(who), "pid %d (%s)", h->pid, comm);
	if (h->asked && h->given < h->asked && r->timed_out)
		what = h->busy ? "asked back, partly in use again, the rest not given in time" :
		       "asked back and not given in time (a stopped process cannot answer)";
	else if (h->asked && h->busy)
		what = "asked back, in use again";
	else if (h->asked)
		what = "given back";
	else if (h->flags & GPUPOOL_ASK_THROTTLED)
		what = "not asked: it gave back all reclaim_rate allows";
	else if (h->flags & GPUPOOL_ASK_ELSEWHERE)
		what = "of no use here (another cgroup's, another node's, or asked already)";
	else
		what = "not asked: all there was idle would not have been enough";
	snprintf(out, len, "%s idle in %s, %s", gp_fmt_bytes(b, sizeof(b), h->idle),
		 who, what);
}

/*
 * What the module's report of the ALLOC just refused says of idle memory:
 * "; <size> idle in pid <pid> (<comm>), <what became of it>[; ...]", up
 * to two holders and how many more, into buf; "" when there is no report
 * (a module before ABI 1.2).
 */
void gp_kernel_idle_words(struct gp_ctx *ctx, char *buf, size_t len)
{
	struct gpupool_ask_holder h[GPUPOOL_ASK_MAX_HOLDERS];
	struct gpupool_ask_report r;
	char one[160];
	size_t n = 0;
	uint32_t i;

	buf[0] = 0;
	if (!gp_kernel_of(ctx)->reclaim)
		return;
	memset(&r, 0, sizeof(r));
	r.nr = GPUPOOL_ASK_MAX_HOLDERS;
	r.holders_ptr = (uint64_t)(uintptr_t)h;
	if (ioctl(gp_kernel_of(ctx)->fd, GPUPOOL_IOC_ASK_REPORT, &r))
		return;
	gp_debug(ctx, "ask report: need %llu, idle %llu, asked %llu, given %llu, "
		 "%u holders, waited %llu us%s",
		 (unsigned long long)r.need, (unsigned long long)r.idle,
		 (unsigned long long)r.asked, (unsigned long long)r.given, r.nr,
		 (unsigned long long)(r.wait_ns / 1000), r.timed_out ? " (bound)" : "");
	if (!r.nr) {
		snprintf(buf, len, "; no other process holds idle memory");
		return;
	}
	for (i = 0; i < r.nr && i < 2 && n < len; i++) {
		gp_ask_holder_words(one, sizeof(one), &h[i], &r);
		n += (size_t)snprintf(buf + n, len - n, "; %s", one);
	}
	if (r.nr + r.more > i && n < len)
		snprintf(buf + n, len - n, "; and %u more processes hold some",
			 r.nr + r.more - i);
}
