// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * trace.c - load an allocation trace (format in trace.h) into arrays.
 *
 * The whole file is read into memory, then parsed in two passes: the first
 * counts the events (so every array is allocated once, and ids can be
 * checked against the number of allocations), the second fills them in.
 * Any malformed line stops the load with "path:line: reason".
 */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger sizes are certainly a mistake, and rounding them must not wrap. */
#define TRACE_MAX_SIZE	(1ull << 48)

enum { ID_FREE_SLOT = 0, ID_LIVE = 1, ID_DEAD = 2 };

static void set_err(char *err, size_t len, const char *path, size_t line,
		    const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !len)
		return;
	if (line)
		n = snprintf(err, len, "%s:%zu: ", path, line);
	else
		n = snprintf(err, len, "%s: ", path);
	if (n < 0 || (size_t)n >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(err + n, len - n, fmt, ap);
	va_end(ap);
}

/* Parse a decimal unsigned field [s, e).  Returns 0 and *v, or -1. */
static int parse_u64(const char *s, const char *e, uint64_t *v)
{
	uint64_t x = 0;

	if (s == e)
		return -1;
	for (; s < e; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return -1;
		d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* Split [s, e) at commas into at most max fields; returns the count. */
static int split(const char *s, const char *e, const char **fs,
		 const char **fe, int max)
{
	int n = 0;

	while (n < max) {
		const char *c = memchr(s, ',', (size_t)(e - s));

		fs[n] = s;
		fe[n] = c ? c : e;
		n++;
		if (!c)
			break;
		s = c + 1;
	}
	return n;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

void trace_free(struct trace *t)
{
	free(t->path);
	free(t->name);
	free(t->ops);
	free(t->size);
	memset(t, 0, sizeof(*t));
}

static char *read_file(const char *path, size_t *len, char *err,
		       size_t err_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		set_err(err, err_len, path, 0, "cannot open: %s",
			strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t got;

		if (cap - n < 65536) {
			char *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				set_err(err, err_len, path, 0, "out of memory");
				goto out_fail;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				set_err(err, err_len, path, 0, "read error");
				goto out_fail;
			}
			break;
		}
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;

out_fail:
	fclose(f);
	free(buf);
	return NULL;
}

int trace_load(const char *path, struct trace *t, char *err, size_t err_len)
{
	size_t len, lineno;
	uint32_t nr_a = 0, nr_f = 0, nr_ops = 0, live_chunks = 0;
	uint64_t live = 0;
	uint8_t *state = NULL;
	char *buf;
	const char *p, *end;
	const char *nm;
	int pass;

	memset(t, 0, sizeof(*t));
	buf = read_file(path, &len, err, err_len);
	if (!buf)
		return -1;
	end = buf + len;

	for (pass = 0; pass < 2; pass++) {
		for (p = buf, lineno = 1; p < end; lineno++) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *le = nl ? nl : end;
			const char *fs[4], *fe[4];
			uint64_t id, size = 0;
			int nf;

			if (le > p && le[-1] == '\r')
				le--;
			if (memchr(p, '\0', (size_t)(le - p))) {
				set_err(err, err_len, path, lineno,
					"NUL byte in line");
				goto out_fail;
			}
			if (le == p || *p == '#')
				goto next;

			nf = split(p, le, fs, fe, 4);
			if (fe[0] - fs[0] != 1 || (*p != 'a' && *p != 'f')) {
				char ev[24];
				size_t k, n = (size_t)(fe[0] - fs[0]);

				if (n > sizeof(ev) - 1)
					n = sizeof(ev) - 1;
				for (k = 0; k < n; k++)	/* printable only */
					ev[k] = fs[0][k] >= 0x20 && fs[0][k] < 0x7f ?
						fs[0][k] : '?';
				ev[n] = '\0';
				set_err(err, err_len, path, lineno,
					"unknown event '%s' (expected 'a' or 'f')",
					ev);
				goto out_fail;
			}
			if (nf < 2 || parse_u64(fs[1], fe[1], &id)) {
				set_err(err, err_len, path, lineno,
					"missing or malformed id");
				goto out_fail;
			}
			if (*p == 'a') {
				if (nf < 3 || parse_u64(fs[2], fe[2], &size)) {
					set_err(err, err_len, path, lineno,
						"missing or malformed size");
					goto out_fail;
				}
				if (size == 0 || size > TRACE_MAX_SIZE) {
					set_err(err, err_len, path, lineno,
						"size %llu out of range (1..2^48)",
						(unsigned long long)size);
					goto out_fail;
				}
			}
			if (pass == 0) {
				if (*p == 'a')
					nr_a++;
				else
					nr_f++;
				if (nr_a > TRACE_ID_MASK ||
				    nr_f > TRACE_ID_MASK) {
					set_err(err, err_len, path, lineno,
						"too many events");
					goto out_fail;
				}
				goto next;
			}

			/* Pass 1: ids are dense, so every id < nr_a. */
			if (id >= nr_a) {
				set_err(err, err_len, path, lineno,
					"id %llu out of range: the trace has %u allocations, so ids must be 0..%u",
					(unsigned long long)id, nr_a,
					nr_a ? nr_a - 1 : 0);
				goto out_fail;
			}
			if (*p == 'a') {
				if (state[id] != ID_FREE_SLOT) {
					set_err(err, err_len, path, lineno,
						"id %llu allocated twice",
						(unsigned long long)id);
					goto out_fail;
				}
				state[id] = ID_LIVE;
				t->size[id] = size;
				live += size;
				live_chunks++;
				if (live > t->peak_live_requested)
					t->peak_live_requested = live;
				if (live_chunks > t->peak_live_chunks)
					t->peak_live_chunks = live_chunks;
				if (!t->min_size || size < t->min_size)
					t->min_size = size;
				if (size > t->max_size)
					t->max_size = size;
				t->ops[nr_ops++] = (uint32_t)id;
			} else {
				if (state[id] != ID_LIVE) {
					set_err(err, err_len, path, lineno,
						state[id] == ID_DEAD ?
						"id %llu freed twice" :
						"free of id %llu before its allocation",
						(unsigned long long)id);
					goto out_fail;
				}
				state[id] = ID_DEAD;
				live -= t->size[id];
				live_chunks--;
				t->ops[nr_ops++] = (uint32_t)id | TRACE_FREE;
			}
next:
			p = nl ? nl + 1 : end;
		}

		if (pass == 0) {
			if (nr_a == 0) {
				set_err(err, err_len, path, 0,
					"no allocation events");
				goto out_fail;
			}
			t->ops = calloc((size_t)nr_a + nr_f, sizeof(*t->ops));
			t->size = calloc(nr_a, sizeof(*t->size));
			state = calloc(nr_a, 1);
			if (!t->ops || !t->size || !state) {
				set_err(err, err_len, path, 0, "out of memory");
				goto out_fail;
			}
		}
	}
	/* Every free matched a live id, so nr_a distinct ids < nr_a were
	 * allocated: the ids are exactly 0..nr_a-1.
	 */
	t->nr_ops = nr_ops;
	t->nr_ids = nr_a;
	t->nr_frees = nr_f;
	t->nr_live_at_end = nr_a - nr_f;
	free(state);
	free(buf);

	nm = base_name(path);
	t->path = strdup(path);
	t->name = strdup(nm);
	if (!t->path || !t->name) {
		set_err(err, err_len, path, 0, "out of memory");
		trace_free(t);
		return -1;
	}
	len = strlen(t->name);
	if (len > 4 && !strcmp(t->name + len - 4, ".csv"))
		t->name[len - 4] = '\0';
	return 0;

out_fail:
	free(state);
	free(buf);
	trace_free(t);
	return -1;
}

uint64_t trace_peak_live_rounded(const struct trace *t, uint64_t gran)
{
	uint64_t live = 0, peak = 0;
	uint32_t i;

	for (i = 0; i < t->nr_ops; i++) {
		uint32_t id = t->ops[i] & TRACE_ID_MASK;
		uint64_t sz = (t->size[id] + gran - 1) & ~(gran - 1);

		if (t->ops[i] & TRACE_FREE) {
			live -= sz;
		} else {
			live += sz;
			if (live > peak)
				peak = live;
		}
	}
	return peak;
}
