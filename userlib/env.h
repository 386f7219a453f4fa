/* SPDX-License-Identifier: MIT */
/*
 * env.h - the library's settings from the environment (GPUPOOL_*): one
 * strict reader per kind (env.c), so that a setting is read the same way
 * wherever it is read and a bad one is said the same way.  Every variable
 * and what it takes: docs/library.md, "Environment".
 *
 * Each reader returns 0 when the variable is unset or empty (*out left
 * alone: the default stands), 1 when it is set to a good value (*out
 * written), and -EINVAL when it is set to anything else, with a message
 * naming the variable, its value (bytes outside printable ASCII as '?')
 * and what it takes, on ctx (NULL: gp_last_error(NULL)).  Nothing is read
 * past what the kind allows: no leading or trailing space, no sign, no
 * second value.
 */
#ifndef GPUPOOL_USERLIB_ENV_H
#define GPUPOOL_USERLIB_ENV_H

#include <stdbool.h>
#include <stdint.h>

struct gp_ctx;

/* The largest size a variable takes: 2^63 bytes (8 EiB). */
#define GP_ENV_SIZE_MAX		(1ull << 63)

/* The variable's value, NULL when it is unset or empty. */
const char *gp_env(const char *name);
/* A size (core/bfc_size.h): digits and an optional K, M, G, T, KiB, MiB,
 * GiB or TiB, at most GP_ENV_SIZE_MAX.
 */
int gp_env_size(struct gp_ctx *ctx, const char *name, uint64_t *out);
/* A size, or (with a decimal point) a fraction above 0 and at most 1, up
 * to 6 decimals: 1 with *bytes (and *fraction 0) or *fraction (and
 * *bytes 0).
 */
int gp_env_size_or_fraction(struct gp_ctx *ctx, const char *name,
			    uint64_t *bytes, double *fraction);
/* A whole number in [min, max], decimal digits only. */
int gp_env_count(struct gp_ctx *ctx, const char *name, uint64_t min,
		 uint64_t max, uint64_t *out);
/* A percentage from 0 to max, up to 4 decimals, as parts per million of
 * the whole ("9.09" is 90900), or the word none (*ppm = UINT64_MAX).
 */
int gp_env_percent(struct gp_ctx *ctx, const char *name, uint64_t max,
		   uint64_t *ppm);
/* One of names (NULL-terminated), exactly: *index is its place. */
int gp_env_name(struct gp_ctx *ctx, const char *name,
		const char *const *names, unsigned int *index);
/* A yes or a no: 1, yes, true, on or 0, no, false, off. */
int gp_env_bool(struct gp_ctx *ctx, const char *name, bool *out);

#endif /* GPUPOOL_USERLIB_ENV_H */
