// SPDX-License-Identifier: MIT
/*
 * log.c - debug lines (GPUPOOL_DEBUG) and the last-error message.
 *
 * The message of the last failure is kept per context under its own lock;
 * gp_last_error() copies it into a buffer of the calling thread, so that the
 * string it returns cannot change under the caller.  Failures before a
 * context exists (gp_open) go straight into that thread buffer.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "bytes.h"

/* Per thread: the last failed gp_open()'s message (gp_last_error(NULL)),
 * and a copy of a context's message for gp_last_error(ctx).  Two buffers:
 * asking a context must not overwrite the open's message.
 */
static __thread char gp_tls_err[512];
static __thread char gp_tls_copy[512];

void gp_debug(struct gp_ctx *ctx, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!ctx || !ctx->debug)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpupool: %s\n", line);
}

int gp_err(struct gp_ctx *ctx, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ctx) {
		memcpy(gp_tls_err, msg, sizeof(msg));
		return err;
	}
	pthread_mutex_lock(&ctx->err_lock);
	memcpy(ctx->err, msg, sizeof(msg));
	pthread_mutex_unlock(&ctx->err_lock);
	if (ctx->debug)
		fprintf(stderr, "gpupool: error: %s\n", msg);
	return err;
}

GP_API const char *gp_last_error(struct gp_ctx *ctx)
{
	if (ctx) {
		pthread_mutex_lock(&ctx->err_lock);
		memcpy(gp_tls_copy, ctx->err, sizeof(gp_tls_copy));
		pthread_mutex_unlock(&ctx->err_lock);
		return gp_tls_copy;
	}
	return gp_tls_err;
}

GP_API const char *gp_strerror(int err)
{
	const char *s;

	if (err == 0)
		return "Success";
	s = strerrordesc_np(err < 0 ? -err : err);
	return s ? s : "Unknown error";
}

uint64_t gp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *gp_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	return gp_bytes_fmt(buf, len, bytes, GP_BYTES_PROSE);
}
