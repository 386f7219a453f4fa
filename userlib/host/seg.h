/* SPDX-License-Identifier: MIT */
/*
 * seg.h - a host segment: the record the host pools keep of one mapping
 * (host/segments.c), which a backend fills and reads back through its ops
 * (backend/backend.h).  A type and nothing else, so that the backends,
 * which the host pools call, need no function of theirs: they include
 * this header, never host.h.
 */
#ifndef GPUPOOL_USERLIB_HOST_SEG_H
#define GPUPOOL_USERLIB_HOST_SEG_H

#include <stdbool.h>
#include <stdint.h>

#include "list.h"

enum gp_hpool_kind { GP_POOL_SMALL, GP_POOL_LARGE, GP_NR_HPOOLS };

/* A backend's map or import fills addr, size, fd, huge, khandle, locked,
 * parts and part_size, and its unmap reads them (and kind and no_ask, set
 * before); the rest is the host pools'.
 */
struct gp_seg {
	uint64_t addr;
	uint64_t size;
	int fd;			/* memfd / chunk fd, kept for shared segments; else -1 */
	uint32_t region_id;	/* in its pool's BFC (0 for own segments) */
	uint64_t khandle;	/* kernel backend: the chunk's id */
	uint64_t requested;	/* own segments: what was asked for */
	uint64_t idle_since;	/* ms (CLOCK_MONOTONIC_COARSE) when it went idle */
	uint32_t nr_used;	/* blocks in use in it */
	uint8_t kind;		/* enum gp_hpool_kind, or GP_SEG_OWN/GP_SEG_IMPORT */
	bool registered;
	bool marked;		/* the backend was told it is idle (ops->mark) */
	bool no_ask;		/* map: ask no other process for idle memory */
	bool huge;
	bool locked;		/* user backend: mlocked */
	uint16_t parts;		/* user backend: memfds mapped side by side (0: one) */
	uint64_t part_size;	/* user backend: each but the last one's size */
	struct gp_list link;		/* all segments of the context */
	struct gp_list idle_link;	/* LRU of idle pool segments */
};
#define GP_SEG_OWN	0x10	/* GP_HOST_SHARED buffer: a segment of its own */
#define GP_SEG_IMPORT	0x11	/* mapped by gp_host_import() */

#endif /* GPUPOOL_USERLIB_HOST_SEG_H */
