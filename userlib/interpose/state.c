// SPDX-License-Identifier: MIT
/*
 * state.c - the interposer's settings, its pool and its figures.
 *
 * Settings, read once (docs/interpose.md):
 *   GPUPOOL_INTERPOSE_MODE=fallback|strict  what the pool cannot serve goes
 *                                  to CUDA (fallback, the default) or fails
 *   GPUPOOL_INTERPOSE_STATS=FILE   the figures are appended to FILE at exit
 *   GPUPOOL_DEBUG=1                ... and printed on stderr
 * and libgpupool's own (GPUPOOL_BACKEND, GPUPOOL_CUDART, ...).  A bad mode
 * is said once and turns the interposer off: everything goes to CUDA.
 *
 * The pool is a libgpupool context, opened on the first request and kept
 * for the life of the process: the kernel backend (unless GPUPOOL_BACKEND
 * says otherwise), CUDA required (memory the GPU cannot use is no answer
 * to cudaHostAlloc), every segment registered portable and mapped, with
 * the CUDA runtime the process already has.  A child of fork() must not
 * use its parent's context (gpupool.h): it opens its own on its first
 * request, and its parent's buffers answer as CUDA answers in such a
 * child (not initialized).  The figures (counted in counters.c) start
 * again in the child; gp_interpose_stats() assembles them with the pool's
 * state and its mode.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "env.h"
#include "interpose.h"

IP_TLS unsigned int ip_depth;

static pthread_once_t ip_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ip_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int mode;		/* enum gp_interpose_mode, set once */
	int debug;
	char stats_path[PATH_MAX];
	int ready;		/* the pool is opened, or failed to open (0
				 * again in a child of fork()) */
	struct gp_ctx *ctx;	/* this process's pool, or NULL */
	/* Under ip_lock: */
	int pool;		/* 1 open, -1 cannot serve, 0 not yet */
	char backend[16];
	char why[256];		/* why it cannot serve */
} IP;

static const char *const ip_mode_names[] = { "fallback", "strict", "off" };

/* Lock order: ip_lock, the threads' caches' (cache.c), then the host
 * pools' lock (inherit.c takes it), all held across fork() so that the
 * child's copies are free; nothing takes ip_lock with either of the
 * others held (docs/design.md).
 */
static void ip_fork_prepare(void)
{
	pthread_mutex_lock(&ip_lock);
	ip_cache_fork_prepare();
	ip_inherit_prepare(IP.ctx);
}

static void ip_fork_parent(void)
{
	ip_inherit_parent(IP.ctx);
	ip_cache_fork_parent();
	pthread_mutex_unlock(&ip_lock);
}

/* The parent's context stays as it was, never used: its memory is still
 * mapped here (inherit.c).
 */
static void ip_fork_child(void)
{
	ip_inherit_child(IP.ctx);
	ip_cache_fork_child();
	ip_counters_reset();
	__atomic_store_n(&IP.ready, 0, __ATOMIC_RELEASE);
	IP.ctx = NULL;
	IP.pool = 0;
	IP.backend[0] = IP.why[0] = 0;
	pthread_mutex_unlock(&ip_lock);
}

/* The settings, read as libgpupool reads its own (env.h): a bad
 * GPUPOOL_DEBUG is said by the pool's open, on the first request.
 */
static void ip_configure(void)
{
	static const char *const modes[] = { "fallback", "strict", NULL };
	const char *s = gp_env("GPUPOOL_INTERPOSE_STATS");
	unsigned int mode = GP_INTERPOSE_FALLBACK;
	bool debug = false;

	gp_env_bool(NULL, "GPUPOOL_DEBUG", &debug);
	IP.debug = debug;
	if (s)
		snprintf(IP.stats_path, sizeof(IP.stats_path), "%s", s);
	_Static_assert(GP_INTERPOSE_FALLBACK == 0 && GP_INTERPOSE_STRICT == 1,
		       "modes follows GP_INTERPOSE_*");
	IP.mode = gp_env_name(NULL, "GPUPOOL_INTERPOSE_MODE", modes, &mode) < 0 ?
		  GP_INTERPOSE_OFF : (int)mode;
	if (IP.mode == GP_INTERPOSE_OFF)
		fprintf(stderr, "gpupool-interpose: %s; the interposer is off, "
			"CUDA serves every request\n", gp_last_error(NULL));
	pthread_atfork(ip_fork_prepare, ip_fork_parent, ip_fork_child);
}

static void ip_init(void) __attribute__((constructor));
static void ip_init(void)
{
	pthread_once(&ip_once, ip_configure);
}

int ip_mode(void)
{
	pthread_once(&ip_once, ip_configure);
	return IP.mode;
}

/*
 * The runtime to register with: GPUPOOL_CUDART when set (libgpupool reads
 * it), else the one the process has loaded (the object that exports
 * cudaHostRegister: its own version, loaded once), else the first that
 * loads of 13 and 12.
 */
static const char *ip_runtime(char *path)
{
	static const char *const names[] = { "libcudart.so.13", "libcudart.so.12" };
	const char *env = gp_env("GPUPOOL_CUDART");
	void *fn, *dl;
	unsigned int i;
	Dl_info info;

	if (env)
		return NULL;
	fn = ip_find_in_objects("cudaHostRegister", NULL);
	if (fn && dladdr(fn, &info) && info.dli_fname && *info.dli_fname) {
		snprintf(path, PATH_MAX, "%s", info.dli_fname);
		return path;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		dl = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);
		if (dl) {
			dlclose(dl);
			return names[i];
		}
	}
	return NULL;
}

/* ip_lock held.  Open this process's pool, or say why not. */
static void ip_open(void)
{
	const char *b = gp_env("GPUPOOL_BACKEND");
	char path[PATH_MAX] = "";
	struct gp_options o;
	struct gp_info info;
	int ret;

	gp_options_init(&o);
	o.flags = GP_OPEN_REQUIRE_CUDA | GP_OPEN_HOST_MAPPED;
	if (!b)
		o.backend = GP_BACKEND_KERNEL;
	o.cudart = ip_runtime(path);
	ret = gp_open(&o, &IP.ctx);
	if (ret) {
		IP.ctx = NULL;
		snprintf(IP.why, sizeof(IP.why), "%s", gp_last_error(NULL));
		IP.pool = -1;
		return;
	}
	gp_info(IP.ctx, &info);
	snprintf(IP.backend, sizeof(IP.backend), "%s", info.backend_name);
	IP.pool = 1;
}

struct gp_ctx *ip_pool(void)
{
	if (__atomic_load_n(&IP.ready, __ATOMIC_ACQUIRE))
		return IP.ctx;
	pthread_mutex_lock(&ip_lock);
	if (!IP.ready) {
		ip_open();
		__atomic_store_n(&IP.ready, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ip_lock);
	return IP.ctx;
}

struct gp_ctx *ip_pool_opened(void)
{
	return __atomic_load_n(&IP.ready, __ATOMIC_ACQUIRE) ? IP.ctx : NULL;
}

/* Written before IP.ready, under ip_lock, and never again (but in a
 * child of fork(), which has one thread).
 */
const char *ip_pool_why(void)
{
	return __atomic_load_n(&IP.ready, __ATOMIC_ACQUIRE) ? IP.why : "";
}

/* A copy of the figures: the counters (counters.c), the pool's state
 * under the lock that writes it, the mode.
 */
static void ip_snapshot(struct gp_interpose_stats *st)
{
	struct gp_host_stats hs;

	memset(st, 0, sizeof(*st));
	st->mode = ip_mode();
	pthread_mutex_lock(&ip_lock);
	st->pool = IP.pool;
	memcpy(st->backend, IP.backend, sizeof(st->backend));
	memcpy(st->why, IP.why, sizeof(st->why));
	pthread_mutex_unlock(&ip_lock);
	ip_counters_snapshot(st);
	if (ip_pool_opened() && !gp_host_stats(ip_pool_opened(), &hs))
		st->reserved = hs.reserved;
}

IP_API int gp_interpose_stats(struct gp_interpose_stats *st, size_t size)
{
	if (!st || size != sizeof(*st))
		return -EINVAL;
	ip_snapshot(st);
	return 0;
}

/* The report at exit -------------------------------------------------------- */

static const char *const ip_why_names[GP_INTERPOSE_NR_WHY] = {
	"unavailable", "pool_full", "limit", "cuda", "flags", "other",
};

static int ip_report_why(char *buf, size_t len, const char *what,
			 const uint64_t *n, const uint64_t *bytes)
{
	int i, at = snprintf(buf, len, "gpupool-interpose: %s", what);

	for (i = 0; i < GP_INTERPOSE_NR_WHY && at < (int)len; i++)
		at += snprintf(buf + at, len - (size_t)at, " %s %llu",
			       ip_why_names[i], (unsigned long long)n[i]);
	if (bytes)
		for (i = 0; i < GP_INTERPOSE_NR_WHY && at < (int)len; i++)
			at += snprintf(buf + at, len - (size_t)at, " %s_bytes %llu",
				       ip_why_names[i],
				       (unsigned long long)bytes[i]);
	return at < (int)len ? snprintf(buf + at, len - (size_t)at, "\n") + at :
	       (int)len - 1;
}

/* Did this process ask anything of the interposer? */
static int ip_used(const struct gp_interpose_stats *s)
{
	uint64_t n = s->served + s->freed + s->real_frees + s->bad_frees +
		     s->inherited;
	int i;

	for (i = 0; i < GP_INTERPOSE_NR_WHY; i++)
		n += s->fell_back[i] + s->refused[i];
	return n || s->pool != 0;
}

/* The report, as lines "gpupool-interpose: KEY VALUE ...", or 0 bytes
 * when the process never asked anything of it (a shell, a compiler the
 * program started: they inherit LD_PRELOAD too).
 */
static size_t ip_report(char *buf, size_t len)
{
	struct gp_interpose_stats snap, *s = &snap;
	size_t at;

	ip_snapshot(s);
	if (!ip_used(s))
		return 0;
	at = (size_t)snprintf(buf, len, "gpupool-interpose: pid %d mode %s pool %s\n"
			      "gpupool-interpose: served %llu bytes %llu driver %llu "
			      "freed %llu live_bytes %llu reserved %llu\n",
			      (int)getpid(), ip_mode_names[s->mode],
			      s->pool > 0 ? s->backend :
			      s->pool < 0 ? "unavailable" : "unused",
			      (unsigned long long)s->served,
			      (unsigned long long)s->served_bytes,
			      (unsigned long long)s->served_driver,
			      (unsigned long long)s->freed,
			      (unsigned long long)s->live_bytes,
			      (unsigned long long)s->reserved);
	at += (size_t)ip_report_why(buf + at, len - at, "fell_back",
				    s->fell_back, s->fell_back_bytes);
	at += (size_t)ip_report_why(buf + at, len - at, "refused",
				    s->refused, NULL);
	at += (size_t)snprintf(buf + at, len - at, "gpupool-interpose: real_frees %llu "
			       "bad_frees %llu inherited %llu\n",
			       (unsigned long long)s->real_frees,
			       (unsigned long long)s->bad_frees,
			       (unsigned long long)s->inherited);
	if (s->pool < 0)
		at += (size_t)snprintf(buf + at, len - at,
				       "gpupool-interpose: why %s\n", s->why);
	return at < len ? at : len - 1;
}

/* At exit (and never a teardown: the process may still free pool memory
 * from later destructors, and the kernel takes the chunks back anyway).
 */
static void ip_exit(void) __attribute__((destructor));
static void ip_exit(void)
{
	char buf[2048];
	size_t n;
	int fd;

	if (!IP.debug && !IP.stats_path[0])
		return;
	n = ip_report(buf, sizeof(buf));
	if (!n || (IP.debug && write(STDERR_FILENO, buf, n) < 0))
		return;
	if (!IP.stats_path[0])
		return;
	/* One write with O_APPEND: each process's block stays whole. */
	fd = open(IP.stats_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
		fprintf(stderr, "gpupool-interpose: cannot write %s: %s\n",
			IP.stats_path, strerror(errno));
	if (fd >= 0)
		close(fd);
}
