/* SPDX-License-Identifier: MIT */
/*
 * tsan.h - what the ThreadSanitizer tests share, on top of tests/lib's
 * helpers.h (the runtime double, OPEN()).
 *
 *  - __tsan_default_options(): any report ends the program at once with
 *    status 66, so run-tests.sh counts it as a failure (the harness runs
 *    each test in a child: the child's status fails that test).
 *  - How long and how wide: GPUPOOL_TSAN_SECONDS (default 3) and
 *    GPUPOOL_TSAN_THREADS (default 16) per test.
 *  - Worker threads cannot ASSERT (the harness longjmps on the main
 *    thread): they record their first failure in a struct tfail, which the
 *    test asserts after joining them.
 *  - A byte pattern per buffer (a 64-bit tag): every word of the first
 *    4 KiB, one word per 4 KiB page after that and the last word, so that
 *    a buffer handed to two threads at once, or bytes that do not cross a
 *    mapping, show up as a wrong word (and, under TSan, as a race).
 */
#ifndef GPUPOOL_TESTS_TSAN_H
#define GPUPOOL_TESTS_TSAN_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <time.h>

#include "helpers.h"

const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "halt_on_error=1:exitcode=66:second_deadlock_stack=1";
}

static inline unsigned int env_uint(const char *name, unsigned int def,
				    unsigned int lo, unsigned int hi)
{
	const char *v = getenv(name);
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, NULL, 0);
	return n < lo ? lo : n > hi ? hi : (unsigned int)n;
}

static inline unsigned int tsan_threads(void)
{
	return env_uint("GPUPOOL_TSAN_THREADS", 16, 2, 256);
}

static inline unsigned int tsan_seconds(void)
{
	return env_uint("GPUPOOL_TSAN_SECONDS", 3, 1, 240);
}

/* Every test is TSAN_TEST(name): a harness limit above the longest
 * GPUPOOL_TSAN_SECONDS (plain TEST() has 30 s), hence a fixture of none.
 */
#define TSAN_TEST_TIMEOUT 300
FIXTURE(tsan) {
	int unused;
};
FIXTURE_SETUP(tsan) {}
FIXTURE_TEARDOWN(tsan) {}
#define TSAN_TEST(name) TEST_F_TIMEOUT(tsan, name, TSAN_TEST_TIMEOUT)

/* Set by the test when the time is up; workers poll it. */
static int tsan_stop;

static inline bool stopping(void)
{
	return __atomic_load_n(&tsan_stop, __ATOMIC_RELAXED);
}

/* Let the workers run for the configured time, then tell them to stop. */
static inline void run_then_stop(void)
{
	struct timespec ts = { .tv_sec = tsan_seconds() };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	__atomic_store_n(&tsan_stop, 1, __ATOMIC_RELAXED);
}

struct tfail {
	int n;
	char why[256];
};

/* Record a failure (the first one's words are kept); returns false. */
static inline bool tfail(struct tfail *f, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline bool tfail(struct tfail *f, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (f->n++)
		return false;
	n = snprintf(f->why, sizeof(f->why), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(f->why + n, sizeof(f->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* cond, or a failure recorded in f (the caller returns false). */
#define CHECK(f, cond, ...) ((cond) || tfail((f), __LINE__, __VA_ARGS__))

/* xorshift64*: one per thread. */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* A number in [lo, hi]. */
static inline size_t rnd_in(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)(rnd(s) % (hi - lo + 1));
}

/* Write (check == false) or check the pattern word of tag at c + off. */
static inline bool pat_word(unsigned char *c, size_t off, uint64_t tag,
			    bool check)
{
	uint64_t w = tag ^ (off * 0x9e3779b97f4a7c15ull), v;

	if (!check) {
		memcpy(c + off, &w, 8);
		return true;
	}
	memcpy(&v, c + off, 8);
	return v == w;
}

/* Write or check the pattern of tag over [p, p + n). */
static inline bool pattern(void *p, size_t n, uint64_t tag, bool check)
{
	unsigned char *c = p;
	size_t off;

	if (n < 8) {
		for (off = 0; off < n; off++) {
			unsigned char b = (unsigned char)(tag + off);

			if (!check)
				c[off] = b;
			else if (c[off] != b)
				return false;
		}
		return true;
	}
	/* Words that do not overlap the last one, then the last one. */
	for (off = 0; off + 16 <= n; off += off < 4096 ? 8 : 4096)
		if (!pat_word(c, off, tag, check))
			return false;
	return pat_word(c, n - 8, tag, check);
}

#endif /* GPUPOOL_TESTS_TSAN_H */
