// SPDX-License-Identifier: MIT
/*
 * proc_parse.c - /proc/gpupool text -> struct gpctl_pool.  Written to take
 * any input: every read is bounded by len, numbers that overflow or lines
 * of an unknown shape make the whole parse fail with -EINVAL (the file is
 * ABI: a line we do not understand means we are not reading gpupool's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proc_parse.h"

/* A growable array of `size`-byte elements. */
static int push(void **arr, size_t *nr, size_t size, const void *elem)
{
	void *p;

	if ((*nr & (*nr - 1)) == 0) {	/* 0, 1, 2, 4, ...: double */
		size_t cap = *nr ? *nr * 2 : 8;

		p = realloc(*arr, cap * size);
		if (!p)
			return -ENOMEM;
		*arr = p;
	}
	memcpy((char *)*arr + *nr * size, elem, size);
	(*nr)++;
	return 0;
}

/* Parse a decimal u64 from [*s, end); advances *s.  false if none/overflow. */
static bool take_u64(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (p >= end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*s = p;
	*v = x;
	return true;
}

static void skip_spaces(const char **s, const char *end)
{
	while (*s < end && **s == ' ')
		(*s)++;
}

/* One or more spaces: false when there is none. */
static bool take_sep(const char **s, const char *end)
{
	const char *p = *s;

	skip_spaces(s, end);
	return *s > p;
}

static bool rest_is(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - s) == n && !memcmp(s, word, n);
}

/*
 * One byte of a name the module escaped: a newline or a backslash (and,
 * in cgroup paths, whatever seq_escape() chose) is written as \ooo; back
 * to the byte.  Anything else is itself.  *s advances past what it read.
 */
static char unescape(const char **s, const char *end)
{
	const char *p = *s;

	if (*p == '\\' && end - p >= 4 && p[1] >= '0' && p[1] <= '3' &&
	    p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
		*s += 4;
		return (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 |
			      (p[3] - '0'));
	}
	(*s)++;
	return *p;
}

/* Does the text come from a module of ABI major.minor or later? */
static bool abi_at_least(const struct gpctl_pool *p, uint64_t major,
			 uint64_t minor)
{
	return p->abi_major > major ||
	       (p->abi_major == major && p->abi_minor >= minor);
}

/*
 * "Holder: <pid> <kB> <chunks> <idle kB> <comm...>" (value part after
 * "Holder:"); before ABI 1.2 without <idle kB>.
 */
static int parse_holder(const char *s, const char *end, struct gpctl_pool *p)
{
	struct gpctl_holder h;
	uint64_t pid, kb, idle_kb = 0;
	size_t n;

	memset(&h, 0, sizeof(h));
	skip_spaces(&s, end);
	if (!take_u64(&s, end, &pid) || pid > INT64_MAX)
		return -EINVAL;
	skip_spaces(&s, end);
	if (!take_u64(&s, end, &kb) || kb > UINT64_MAX >> 10)
		return -EINVAL;
	skip_spaces(&s, end);
	if (!take_u64(&s, end, &h.chunks))
		return -EINVAL;
	if (abi_at_least(p, 1, 2) &&
	    (!take_sep(&s, end) || !take_u64(&s, end, &idle_kb) ||
	     idle_kb > kb))
		return -EINVAL;
	if (s < end && *s != ' ')
		return -EINVAL;
	if (s < end)
		s++;
	/* h.comm is the name itself (cut to fit, as the kernel cuts it). */
	for (n = 0; s < end && n < sizeof(h.comm) - 1; n++)
		h.comm[n] = unescape(&s, end);
	h.pid = (int64_t)pid;
	h.bytes = kb << 10;
	h.idle = idle_kb << 10;
	return push((void **)&p->holders, &p->nr_holders, sizeof(h), &h);
}

/*
 * "Cgroup: <kB> <chunks> <limit kB or -> <denials> <path>" (the value part
 * after "Cgroup:").  The path is everything after the fourth column's
 * space, decoded; it starts with '/', holds no NUL once decoded and fits
 * in GPCTL_PATH_MAX (the module's own bound), or the line is not the
 * module's.
 */
static int parse_cgroup(const char *s, const char *end, struct gpctl_pool *p)
{
	struct gpctl_cgroup c;
	uint64_t kb, limit_kb;
	size_t n;
	int ret;

	memset(&c, 0, sizeof(c));
	if (!take_sep(&s, end) || !take_u64(&s, end, &kb) ||
	    kb > UINT64_MAX >> 10 || !take_sep(&s, end) ||
	    !take_u64(&s, end, &c.chunks) || !take_sep(&s, end))
		return -EINVAL;
	if (s < end && *s == '-') {
		s++;
		c.limit = GPCTL_NO_LIMIT;
	} else if (take_u64(&s, end, &limit_kb) && limit_kb <= UINT64_MAX >> 10) {
		c.limit = limit_kb << 10;	/* never GPCTL_NO_LIMIT */
	} else {
		return -EINVAL;
	}
	if (!take_sep(&s, end) || !take_u64(&s, end, &c.denials))
		return -EINVAL;
	/* One space, then the path (which starts with '/'). */
	if (end - s < 2 || s[0] != ' ' || s[1] != '/')
		return -EINVAL;
	s++;
	c.path = malloc((size_t)(end - s) + 1);
	if (!c.path)
		return -ENOMEM;
	for (n = 0; s < end; n++) {
		c.path[n] = unescape(&s, end);
		if (!c.path[n] || n + 1 >= GPCTL_PATH_MAX) {
			free(c.path);
			return -EINVAL;
		}
	}
	c.path[n] = 0;
	c.bytes = kb << 10;
	ret = push((void **)&p->cgroups, &p->nr_cgroups, sizeof(c), &c);
	if (ret)
		free(c.path);
	return ret;
}

/* "Node<N>Map: <cells>" */
static int parse_map(const char *key, size_t klen, const char *s,
		     const char *end, struct gpctl_pool *p)
{
	const char *k = key + 4, *kend = key + klen - 3;	/* Node..Map */
	struct gpctl_map m;
	uint64_t node;
	size_t n;

	if (!take_u64(&k, kend, &node) || k != kend || node > 1023)
		return -EINVAL;
	if (s < end && *s == ' ')
		s++;
	n = (size_t)(end - s);
	if (n >= sizeof(m.cells))
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.node = (int)node;
	memcpy(m.cells, s, n);
	return push((void **)&p->maps, &p->nr_maps, sizeof(m), &m);
}

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/*
 * "<Key>: <number>[ kB| ms| ppm]", "AbiVersion: <major>.<minor>", or
 * "<Key>: <word>" (a letter, then letters, digits, '_', '-', '.': the
 * value of CgroupLimits, "module" or "dmem").
 */
static int parse_field(const char *key, size_t klen, const char *s,
		       const char *end, struct gpctl_pool *p)
{
	struct gpctl_field f;
	size_t n;

	memset(&f, 0, sizeof(f));
	if (klen >= sizeof(f.key))
		return -EINVAL;
	memcpy(f.key, key, klen);
	skip_spaces(&s, end);
	n = (size_t)(end - s);
	if (n >= sizeof(f.text))
		return -EINVAL;
	memcpy(f.text, s, n);
	if (klen == 10 && !memcmp(key, "AbiVersion", 10)) {
		uint64_t minor;

		if (!take_u64(&s, end, &f.value) || s >= end || *s++ != '.' ||
		    !take_u64(&s, end, &minor) || s != end)
			return -EINVAL;
		return push((void **)&p->fields, &p->nr_fields, sizeof(f), &f);
	}
	if (s < end && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) {
		while (s < end && is_word_char(*s))
			s++;
		if (s != end)
			return -EINVAL;
		f.unit = 'w';
		return push((void **)&p->fields, &p->nr_fields, sizeof(f), &f);
	}
	if (!take_u64(&s, end, &f.value))
		return -EINVAL;
	if (rest_is(s, end, " kB")) {
		if (f.value > UINT64_MAX >> 10)
			return -EINVAL;
		f.value <<= 10;
		f.unit = 'B';
	} else if (rest_is(s, end, " ms")) {
		f.unit = 'm';
	} else if (rest_is(s, end, " ppm")) {
		f.unit = 'p';
	} else if (s != end) {
		return -EINVAL;
	}
	return push((void **)&p->fields, &p->nr_fields, sizeof(f), &f);
}

static int parse_line(const char *s, const char *end, struct gpctl_pool *p)
{
	const char *colon = memchr(s, ':', (size_t)(end - s));
	size_t klen;
	const char *k;

	if (!colon || colon == s)
		return -EINVAL;
	klen = (size_t)(colon - s);
	for (k = s; k < colon; k++)
		if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
		      (*k >= '0' && *k <= '9')))
			return -EINVAL;
	if (klen == 6 && !memcmp(s, "Holder", 6))
		return parse_holder(colon + 1, end, p);
	if (klen == 6 && !memcmp(s, "Cgroup", 6))
		return parse_cgroup(colon + 1, end, p);
	if (klen > 7 && !memcmp(s, "Node", 4) && !memcmp(colon - 3, "Map", 3))
		return parse_map(s, klen, colon + 1, end, p);
	/* Bin lines (NodeNBinB: five numbers) are kept as fields only by
	 * name; their columns are not needed by any command yet.
	 */
	if (klen > 7 && !memcmp(s, "Node", 4) && memmem(s, klen, "Bin", 3))
		return 0;
	return parse_field(s, klen, colon + 1, end, p);
}

/*
 * The ABI of the first "AbiVersion: <major>.<minor>" line, wherever it
 * is (the module writes it first), before the other lines are read:
 * what some of them hold depends on it.  0.0 when there is none (the
 * parse fails then) or it is not of that shape (parse_field() says so).
 */
static void find_abi(const char *s, const char *end, struct gpctl_pool *p)
{
	static const char key[] = "AbiVersion:";
	uint64_t major, minor;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - s) > sizeof(key) - 1 &&
		    !memcmp(s, key, sizeof(key) - 1)) {
			s += sizeof(key) - 1;
			skip_spaces(&s, eol);
			if (take_u64(&s, eol, &major) && s < eol && *s++ == '.' &&
			    take_u64(&s, eol, &minor) && s == eol) {
				p->abi_major = major;
				p->abi_minor = minor;
			}
			return;
		}
		s = nl ? nl + 1 : end;
	}
}

int gpctl_parse_proc(const char *buf, size_t len, struct gpctl_pool *out)
{
	const char *s = buf, *end = buf + len;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	find_abi(s, end, out);
	while (s < end && !ret) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;

		if (eol > s)
			ret = parse_line(s, eol, out);
		s = nl ? nl + 1 : end;
	}
	if (!ret && !gpctl_field(out, "AbiVersion"))
		ret = -EINVAL;
	if (ret)
		gpctl_pool_free(out);
	return ret;
}

void gpctl_pool_free(struct gpctl_pool *p)
{
	size_t i;

	for (i = 0; i < p->nr_cgroups; i++)
		free(p->cgroups[i].path);
	free(p->cgroups);
	free(p->fields);
	free(p->holders);
	free(p->maps);
	memset(p, 0, sizeof(*p));
}

const struct gpctl_field *gpctl_field(const struct gpctl_pool *p,
				      const char *key)
{
	size_t i;

	for (i = 0; i < p->nr_fields; i++)
		if (!strcmp(p->fields[i].key, key))
			return &p->fields[i];
	return NULL;
}

uint64_t gpctl_value(const struct gpctl_pool *p, const char *key)
{
	const struct gpctl_field *f = gpctl_field(p, key);

	return f ? f->value : 0;
}
