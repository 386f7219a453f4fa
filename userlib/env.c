// SPDX-License-Identifier: MIT
/*
 * env.c - the library's settings from the environment, one strict reader
 * per kind (env.h): sizes (core/bfc_size.c's reader, which the module and
 * gpupoolctl use too), whole numbers, percentages and fractions (one
 * decimal reader), names and yes-or-no.  A bad value is never read as
 * something else: it fails the open, saying what it should have been.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "bfc_size.h"
#include "env.h"

/* A value in a message: at most this many bytes of it, then "...". */
#define GP_ENV_SHOWN	48

/* The value, or NULL for a variable unset or set empty: both are unset. */
const char *gp_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* v as a message shows it: printable ASCII, at most GP_ENV_SHOWN bytes. */
static void gp_env_show(const char *v, char *buf)
{
	size_t i;

	for (i = 0; v[i] && i < GP_ENV_SHOWN; i++)
		buf[i] = v[i] >= ' ' && v[i] <= '~' ? v[i] : '?';
	strcpy(buf + i, v[i] ? "..." : "");
}

/* name=v is bad: -EINVAL, saying why (NULL: nothing to add) and what it
 * takes.
 */
static int gp_env_bad(struct gp_ctx *ctx, const char *name, const char *v,
		      const char *why, const char *takes)
{
	char shown[GP_ENV_SHOWN + 4];

	gp_env_show(v, shown);
	return gp_err(ctx, -EINVAL, "%s=%s: %s%sexpected %s", name, shown,
		      why ? why : "", why ? "; " : "", takes);
}

static bool gp_env_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool gp_env_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* What follows a number that should have ended at s (*s not NUL). */
static const char *gp_env_after(const char *s)
{
	for (; *s; s++)
		if (gp_env_space(*s))
			return "white space after the number";
	return "something after the number";
}

/*
 * s as decimal digits, with a point and up to `decimals` digits after it
 * when decimals > 0: NULL with *v, the number times 10^decimals, or why
 * it is not one.
 */
static const char *gp_env_number(const char *s, unsigned int decimals,
				 uint64_t *v)
{
	unsigned int d = 0;
	bool point = false;

	if (*s == '-')
		return "negative";
	if (*s == '+')
		return "a sign (a number is digits alone)";
	if (gp_env_space(*s))
		return "white space before the number";
	if (!gp_env_digit(*s))
		return "not a number";
	for (*v = 0;; s++) {
		if (*s == '.' && decimals && !point && gp_env_digit(s[1])) {
			point = true;
			continue;
		}
		if (!gp_env_digit(*s))
			break;
		if (point && ++d > decimals)
			return "too many decimals";
		if (*v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return "too large";
		*v = *v * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.' && !decimals)
		return "a fraction (a whole number is digits alone)";
	if (*s == '.' && !point)
		return "no digit after the point";
	if (*s)
		return gp_env_after(s);
	for (; d < decimals; d++) {
		if (*v > UINT64_MAX / 10)
			return "too large";
		*v *= 10;
	}
	return NULL;
}

/* A size, read by the module's and gpupoolctl's reader (bfc_size.h). */
int gp_env_size(struct gp_ctx *ctx, const char *name, uint64_t *out)
{
	const char *v = gp_env(name);
	char msg[BFC_SIZE_MSG_LEN];

	if (!v)
		return 0;
	if (bfc_size_parse(name, v, GP_ENV_SIZE_MAX, out, msg, sizeof(msg)))
		return gp_err(ctx, -EINVAL, "%s", msg);
	return 1;
}

#define GP_ENV_FRACTION	"a fraction of the device's memory, above 0 and at most 1 " \
			"with a point and up to 6 decimals, as 0.8"

/* A point makes it a fraction, its absence a size: never one read as the
 * other.
 */
int gp_env_size_or_fraction(struct gp_ctx *ctx, const char *name,
			    uint64_t *bytes, double *fraction)
{
	const char *v = gp_env(name), *why;
	char msg[BFC_SIZE_MSG_LEN];
	uint64_t ppm;

	if (!v)
		return 0;
	if (!strchr(v, '.')) {
		if (bfc_size_parse(name, v, GP_ENV_SIZE_MAX, bytes, msg, sizeof(msg)))
			return gp_err(ctx, -EINVAL, "%s; or " GP_ENV_FRACTION, msg);
		*fraction = 0.0;
		return 1;
	}
	why = gp_env_number(v, 6, &ppm);
	if (!why && (!ppm || ppm > 1000000))
		why = ppm ? "more than 1" : "0";
	if (why)
		return gp_env_bad(ctx, name, v, why,
				  GP_ENV_FRACTION ", or a size (digits and a unit, as 40G)");
	*fraction = (double)ppm / 1e6;
	*bytes = 0;
	return 1;
}

/* A whole number in [min, max], its range said when it is outside. */
int gp_env_count(struct gp_ctx *ctx, const char *name, uint64_t min,
		 uint64_t max, uint64_t *out)
{
	const char *v = gp_env(name), *why;
	char takes[96];
	uint64_t n;

	if (!v)
		return 0;
	why = gp_env_number(v, 0, &n);
	if (!why && (n < min || n > max))
		why = n < min ? "too small" : "too large";
	if (why) {
		snprintf(takes, sizeof(takes), "a whole number from %llu to %llu",
			 (unsigned long long)min, (unsigned long long)max);
		return gp_env_bad(ctx, name, v, why, takes);
	}
	*out = n;
	return 1;
}

/* A percentage up to max, exact to 4 decimals (no floating point), or
 * none.
 */
int gp_env_percent(struct gp_ctx *ctx, const char *name, uint64_t max,
		   uint64_t *ppm)
{
	const char *v = gp_env(name), *why;
	char takes[112];
	uint64_t n;

	if (!v)
		return 0;
	if (!strcmp(v, "none")) {
		*ppm = UINT64_MAX;
		return 1;
	}
	why = gp_env_number(v, 4, &n);
	if (!why && n > max * 10000)
		why = "too large";
	if (why) {
		snprintf(takes, sizeof(takes),
			 "a percentage from 0 to %llu, up to 4 decimals (as 9.09), or none",
			 (unsigned long long)max);
		return gp_env_bad(ctx, name, v, why, takes);
	}
	*ppm = n;
	return 1;
}

/* One of names, exactly; the message lists them all. */
int gp_env_name(struct gp_ctx *ctx, const char *name,
		const char *const *names, unsigned int *index)
{
	const char *v = gp_env(name);
	char takes[160] = "";
	size_t used = 0;
	unsigned int i;

	if (!v)
		return 0;
	for (i = 0; names[i]; i++) {
		if (!strcmp(v, names[i])) {
			*index = i;
			return 1;
		}
	}
	for (i = 0; names[i] && used < sizeof(takes); i++)
		used += (size_t)snprintf(takes + used, sizeof(takes) - used, "%s%s",
					 !i ? "" : names[i + 1] ? ", " : " or ",
					 names[i]);
	return gp_env_bad(ctx, name, v, NULL, takes);
}

/* Yes or no in the words env.h lists, never "anything else is yes". */
int gp_env_bool(struct gp_ctx *ctx, const char *name, bool *out)
{
	static const char *const words[] = { "0", "no", "false", "off",
					     "1", "yes", "true", "on", NULL };
	const char *v = gp_env(name);
	unsigned int i;

	if (!v)
		return 0;
	for (i = 0; words[i]; i++) {
		if (!strcmp(v, words[i])) {
			*out = i >= 4;
			return 1;
		}
	}
	return gp_env_bad(ctx, name, v, NULL,
			  "1, yes, true or on, or 0, no, false or off");
}
