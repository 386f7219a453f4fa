/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the libFuzzer harnesses of tests/fuzz share: a reader that
 * turns the input bytes into choices (the input runs out into zeros, so
 * every input is a complete, valid program of operations), and the one way
 * a harness reports a broken property (a message on stderr, then abort(),
 * which libFuzzer records as a crash with the input that caused it).
 */
#ifndef GPUPOOL_TESTS_FUZZ_H
#define GPUPOOL_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline bool fz_more(const struct fz *f)
{
	return f->n > 0;
}

/* The next `bytes` bytes (at most 8), little-endian; zeros past the end. */
static inline uint64_t fz_bits(struct fz *f, unsigned int bytes)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < bytes && f->n; i++, f->p++, f->n--)
		v |= (uint64_t)*f->p << (8 * i);
	return v;
}

static inline uint8_t fz_u8(struct fz *f)
{
	return (uint8_t)fz_bits(f, 1);
}

static inline uint32_t fz_u32(struct fz *f)
{
	return (uint32_t)fz_bits(f, 4);
}

static inline uint64_t fz_u64(struct fz *f)
{
	return fz_bits(f, 8);
}

/* One of n (n > 0), from one byte. */
static inline uint32_t fz_pick(struct fz *f, uint32_t n)
{
	return fz_u8(f) % n;
}

#define FZ_N(table)	((uint32_t)(sizeof(table) / sizeof((table)[0])))

/* One of a table's entries. */
#define FZ_PICK(f, table)	((table)[fz_pick((f), FZ_N(table))])

/* One of n values, or (one time in n + 1) any 64-bit value. */
static inline uint64_t fz_pick_u64(struct fz *f, const uint64_t *t, uint32_t n)
{
	uint32_t i = fz_pick(f, n + 1);

	return i < n ? t[i] : fz_u64(f);
}

#define FZ_PICK_OR_ANY(f, table)	fz_pick_u64((f), (table), FZ_N(table))

/* A broken property: say which and where, then crash for libFuzzer. */
#define FZ_FAIL(...)							\
	do {								\
		fprintf(stderr, "%s:%d: property violated: ", __FILE__,	\
			__LINE__);					\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		abort();						\
	} while (0)

#define FZ_ASSERT(cond, ...)						\
	do {								\
		if (!(cond))						\
			FZ_FAIL("!(" #cond "): " __VA_ARGS__);		\
	} while (0)

#endif /* GPUPOOL_TESTS_FUZZ_H */
