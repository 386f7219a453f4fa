// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_size.c - the one reader of a size someone typed (bfc_size.h): the
 * module's size parameters, libgpupool's size variables, gpupoolctl's and
 * the Slurm plugin's sizes.
 */
#include "bfc_size.h"

/* The units, each a power of 1024, to the one without a name. */
static const struct bfc_unit {
	const char *name;
	unsigned int shift;
} bfc_units[] = {
	{ "K", 10 }, { "M", 20 }, { "G", 30 }, { "T", 40 },
	{ "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }, { "TiB", 40 },
	{ NULL, 0 },
};

/* Room for the value in a message; longer values end in "...". */
#define BFC_SIZE_SHOWN	48

static char bfc_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* a and b the same, case ignored when fold. */
static bool bfc_same(const char *a, const char *b, bool fold)
{
	while (*a && *b && (fold ? bfc_lower(*a) == bfc_lower(*b) : *a == *b)) {
		a++;
		b++;
	}
	return !*a && !*b;
}

/* The unit t names exactly (case matters): its shift, or -1. */
static int bfc_unit_shift(const char *t, bool fold)
{
	unsigned int i;

	for (i = 0; bfc_units[i].name; i++)
		if (bfc_same(t, bfc_units[i].name, fold))
			return (int)bfc_units[i].shift;
	return -1;
}

/* t begins with a unit (and goes on). */
static bool bfc_unit_prefix(const char *t)
{
	unsigned int i;
	const char *a, *b;

	for (i = 0; bfc_units[i].name; i++) {
		for (a = t, b = bfc_units[i].name; *b && *a == *b; a++, b++)
			;
		if (!*b)
			return true;
	}
	return false;
}

static bool bfc_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Why t, the text after the digits of s (not empty), is not a unit. */
static const char *bfc_unit_why(const char *s, const char *t)
{
	const char *u;

	for (u = t; *u; u++)
		if (bfc_space(*u))
			return "white space after the number";
	if (*t == '.' || *t == ',')
		return "a fraction (a size is whole bytes: 1536M, not 1.5G)";
	if (t == s + 1 && *s == '0' && bfc_lower(*t) == 'x')
		return "hexadecimal (a size is decimal)";
	if (bfc_unit_shift(t, true) >= 0)
		return "a unit in the wrong case (the units are K, M, G, T, KiB, MiB, GiB and TiB)";
	if (t[0] && t[1] && bfc_lower(t[1]) == 'b' && !t[2] &&
	    (bfc_lower(t[0]) == 'k' || bfc_lower(t[0]) == 'm' ||
	     bfc_lower(t[0]) == 'g' || bfc_lower(t[0]) == 't'))
		return "a decimal unit (K, M, G and T are powers of 1024; write M or MiB, not MB)";
	if (bfc_unit_prefix(t))
		return "something after the unit";
	return "something after the number that is no unit";
}

/* Why s is not a size, or NULL with *v the size (any, up to 2^64 - 1). */
static const char *bfc_size_read(const char *s, uint64_t *v)
{
	const char *t = s;
	int shift = 0;

	if (!*s)
		return "empty";
	if (*s == '-')
		return "negative";
	if (*s == '+')
		return "a sign (a size is digits alone)";
	if (bfc_space(*s))
		return "white space before the number";
	if (*s < '0' || *s > '9')
		return "not a number";
	for (*v = 0; *t >= '0' && *t <= '9'; t++) {
		if (*v > (UINT64_MAX - (uint64_t)(*t - '0')) / 10)
			return "too large";
		*v = *v * 10 + (uint64_t)(*t - '0');
	}
	if (*t) {
		shift = bfc_unit_shift(t, false);
		if (shift < 0)
			return bfc_unit_why(s, t);
	}
	if (*v > UINT64_MAX >> shift)
		return "too large";
	*v <<= shift;
	return NULL;
}

/* max in the largest binary unit that divides it ("64 TiB"). */
static void bfc_size_show_max(char *buf, size_t len, uint64_t max)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB",
					    "PiB", "EiB" };
	unsigned int u = 0;

	while (u < 6 && max && !(max & 1023)) {
		max >>= 10;
		u++;
	}
	bfc_snprintf(buf, len, "%llu %s", (unsigned long long)max, unit[u]);
}

int bfc_size_parse(const char *name, const char *s, uint64_t max,
		   uint64_t *out, char *msg, size_t len)
{
	char shown[BFC_SIZE_SHOWN + 4], most[32];
	const char *why;
	uint64_t v = 0;
	size_t i;

	why = bfc_size_read(s, &v);
	if (!why && v > max)
		why = "too large";
	if (!why) {
		*out = v;
		return 0;
	}
	for (i = 0; s[i] && i < BFC_SIZE_SHOWN; i++)
		shown[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
	shown[i] = 0;
	if (s[i])
		bfc_memcpy(shown + i, "...", 4);
	bfc_size_show_max(most, sizeof(most), max);
	bfc_snprintf(msg, len, "%s=%s: %s; a size is " BFC_SIZE_ACCEPTED ", at most %s",
		     name, shown, why, most);
	return -BFC_EINVAL;
}
