/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc_test.h - helpers shared by the BFC unit tests.
 *
 * Every operation that changes the allocator goes through a wrapper that
 * runs bfc_check() afterwards and fails the test, printing the report, on
 * any violation.  The wrappers are statement expressions and need the
 * harness's _metadata in scope (any TEST/TEST_F body).
 */
#ifndef GPUPOOL_TESTS_BFC_TEST_H
#define GPUPOOL_TESTS_BFC_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "bfc.h"

#define KiB	(1ull << 10)
#define MiB	(1ull << 20)
#define GiB	(1ull << 30)

/* bfc_check() must find nothing wrong. */
#define CHECK(b)							\
	do {								\
		static char _rep[16384];				\
		uint32_t _nv = bfc_check((b), _rep, sizeof(_rep));	\
		if (_nv)						\
			TH_LOG("line %d: bfc_check found %u violation(s):\n%s", \
			       __LINE__, _nv, _rep);			\
		ASSERT_EQ(0u, _nv);					\
	} while (0)

#define ALLOC(b, size, hp, ap)						\
	({ int _r = bfc_alloc((b), (size), (hp), (ap)); CHECK(b); _r; })
#define FREE(b, h)							\
	({ int _r = bfc_free((b), (h)); CHECK(b); _r; })
#define FREE_ADDR(b, a)							\
	({ int _r = bfc_free_addr((b), (a)); CHECK(b); _r; })
#define ADD(b, base, size, idp)						\
	({ int _r = bfc_add_region((b), (base), (size), (idp)); CHECK(b); _r; })
#define REMOVE(b, id, bp, sp)						\
	({ int _r = bfc_remove_region((b), (id), (bp), (sp)); CHECK(b); _r; })

/* Allocate and insist on success; returns the address. */
#define ALLOC_OK(b, size, hp)						\
	({ uint64_t _a = 0; ASSERT_EQ(0, ALLOC((b), (size), (hp), &_a)); _a; })

/* A new allocator with TF's defaults for granularity g and extra setup. */
static inline struct bfc *bt_create(uint64_t g, uint32_t split_ratio,
				    uint64_t split_threshold,
				    uint64_t max_split_size, uint32_t flags)
{
	struct bfc_params p;
	struct bfc *b = NULL;

	bfc_params_default(&p, g);
	p.split_ratio = split_ratio;
	p.split_threshold = split_threshold;
	p.max_split_size = max_split_size;
	p.flags = flags;
	if (bfc_create(&b, &p))
		return NULL;
	return b;
}

static inline struct bfc *bt_create_tf(uint64_t g)
{
	return bt_create(g, 2, 128 * MiB, 0, 0);
}

static inline struct bfc_chunk_info bt_info(const struct bfc *b, bfc_handle_t h)
{
	struct bfc_chunk_info i;

	memset(&i, 0xa5, sizeof(i));
	if (bfc_chunk_info(b, h, &i))
		memset(&i, 0, sizeof(i));
	return i;
}

/* The handle of the chunk (free or in use) that starts at addr, found
 * through the public bfc_chunk_info() alone; 0 if none of the first 2^16
 * handles is.  Tests that name free chunks use it instead of assuming
 * which slot the core gave them.
 */
static inline bfc_handle_t bt_handle_at(const struct bfc *b, uint64_t addr)
{
	struct bfc_chunk_info i;
	bfc_handle_t h;

	for (h = 1; h < (1u << 16); h++)
		if (!bfc_chunk_info(b, h, &i) && i.addr == addr)
			return h;
	return 0;
}

static inline struct bfc_stats bt_stats(const struct bfc *b)
{
	struct bfc_stats s;

	bfc_get_stats(b, &s);
	return s;
}

#endif /* GPUPOOL_TESTS_BFC_TEST_H */
