/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * bfc.h - best-fit-with-coalescing allocator core (TensorFlow's chunk/bin
 * scheme), shared by gpupool.ko (pinned host pool) and libgpupool (device
 * pool, host sub-allocation).
 *
 * The core manages an abstract address range: it never reads or writes the
 * memory it hands out, and all of its metadata lives outside the chunks
 * (chunks are mmapped into processes and registered with GPUs).
 *
 * It is freestanding: no libc and no kernel headers.  Everything it needs
 * from its host build (fixed-width types, assert, memory for metadata,
 * memcpy/memset, snprintf) comes from "bfc_env.h", which the kernel build
 * (kmod/bfc_env.h) and the userspace build (userlib/bfc_env.h) each provide.
 *
 * NOT THREAD-SAFE.  One struct bfc must only be used by one thread at a time;
 * callers hold their own lock around every call (the module: a mutex per
 * NUMA sub-pool; the library: a mutex per pool).  Calls may allocate
 * metadata, so the caller's lock must allow sleeping in the kernel.
 *
 * Return values: 0 or a negative errno value (-EINVAL, -ENOMEM, -EBUSY,
 * -ENOENT), with the numeric values of Linux; BFC_E* below so the core needs
 * no errno.h.
 */
#ifndef GPUPOOL_BFC_H
#define GPUPOOL_BFC_H

#include "bfc_env.h"

#define BFC_EINVAL	22
#define BFC_ENOMEM	12
#define BFC_EBUSY	16
#define BFC_ENOENT	2
#define BFC_EOVERFLOW	75

/* A chunk handle: an index into the core's metadata array.  0 is never a
 * valid handle.  Handles stay valid while the metadata array grows; a handle
 * is recycled only after its chunk has disappeared (merged into a neighbour
 * by coalescing, or its region removed).
 */
typedef uint32_t bfc_handle_t;
#define BFC_NO_CHUNK	((bfc_handle_t)0)

/* Flags for struct bfc_params.flags. */
/* Adjacent regions merge into one (chunks may then coalesce across the old
 * boundary).  Such a merged region can only be removed as a whole.
 */
#define BFC_MERGE_ADJACENT_REGIONS	(1u << 0)
#define BFC_PARAMS_VALID_FLAGS		(BFC_MERGE_ADJACENT_REGIONS)

/* Placement policies (struct bfc_params.policy): which end of the chosen
 * free chunk a request is cut from, and the split rule.  Every policy
 * chooses the chunk by best fit (smallest free chunk that holds the
 * rounded request, then the lowest address); chunks, classes, splitting
 * and coalescing are the same for all.
 *
 * BFC_POLICY_TF: TensorFlow's BFC exactly: the request is cut from the
 *   chunk's low end, split by the split_ratio / split_threshold rule.
 * BFC_POLICY_EXACT: as TF, but every chunk is split to the rounded size
 *   (a rest of one granule or more stays free): no chunk is handed out
 *   larger than asked for, whatever split_ratio and split_threshold say.
 * BFC_POLICY_SEGREGATE: as EXACT, and a request rounded below small_size
 *   is cut from the chunk's high end, a larger one from its low end (as
 *   PyTorch keeps small and large blocks apart): in a large free range
 *   small chunks gather at the top and large ones at the bottom, so that
 *   long-lived small chunks do not pin holes between large ones.
 * BFC_POLICY_HALF: as EXACT, and a request smaller than the rest it
 *   leaves (the chunk is more than twice the request: TF's split ratio)
 *   is cut from the chunk's high end, one that takes half of the chunk
 *   or more from its low end.  The same segregation as SEGREGATE, with
 *   "small" measured against the free range it is cut from instead of a
 *   fixed size, so it holds at every scale.
 * BFC_POLICY_AGE: the chunk is split when TF's rule splits it (the
 *   rest is at least the request, or at least split_threshold), and
 *   when the rest is at least 1/8 of the request and no other free
 *   chunk is in the rest's size class (a chunk handed out is less than
 *   9/8 of the rounded request unless such a sliver already waits;
 *   the classes are those of bfc_internal.h); the request is cut from the
 *   end beside the chunk's older neighbour (allocated first; a region's
 *   edge counts as older than any chunk).  The rest stays beside the
 *   younger neighbour: chunks allocated close in time, which tend to be
 *   freed close in time, sit together, and a free range is not left
 *   between a young chunk and a long-lived one.
 *
 * max_split_size applies to every policy.
 */
#define BFC_POLICY_TF		0u
#define BFC_POLICY_EXACT	1u
#define BFC_POLICY_SEGREGATE	2u
#define BFC_POLICY_HALF		3u
#define BFC_POLICY_AGE		4u
#define BFC_NR_POLICIES		5u

/* The policy the library and the module use unless told otherwise (the
 * core's own default, bfc_params_default(), stays TF's).
 */
#define BFC_POLICY_DEFAULT	BFC_POLICY_TF

/* Policy name ("tf", "exact", "seg", "half", "age") <-> number.  bfc_policy_parse()
 * returns the number or -EINVAL; bfc_policy_name() returns NULL for a
 * number that is no policy.
 */
int bfc_policy_parse(const char *name);
const char *bfc_policy_name(uint32_t policy);

struct bfc_params {
	/* Power of two.  Requests are rounded up to a multiple; region bases
	 * and sizes must be multiples.  Host pool: PAGE_SIZE; device: 256/512.
	 */
	uint64_t granularity;
	/* Split rule (TensorFlow's): a chunk chosen for a request of rounded
	 * size R is split when chunk_size >= split_ratio * R, or when
	 * chunk_size - R >= split_threshold.  TF: ratio 2, threshold 128 MiB.
	 * split_ratio 0 disables the ratio test.  split_threshold ==
	 * granularity means "always split" (exact-size chunks).  Read by
	 * BFC_POLICY_TF; BFC_POLICY_AGE reads split_threshold and not
	 * split_ratio (its own rule, below); the others always split.
	 */
	uint32_t split_ratio;
	uint32_t flags;
	uint64_t split_threshold;
	/* PyTorch's max_split_size: chunks of at least this size are never
	 * split, and a request whose rounded size is below it is never
	 * served from one (it fails with -ENOMEM so the caller can add a
	 * region instead).  Compared with the rounded size, as PyTorch does.
	 * 0 = no limit.
	 */
	uint64_t max_split_size;
	/* BFC_POLICY_*; bfc_create() refuses others (-EINVAL). */
	uint32_t policy;
	uint32_t unused;
	/* BFC_POLICY_SEGREGATE: rounded requests below this are "small".
	 * Default 1 MiB (PyTorch's small-block limit).
	 */
	uint64_t small_size;
};

/* Fill *p with TensorFlow's defaults for the given granularity (policy
 * BFC_POLICY_TF, small_size 1 MiB).
 */
void bfc_params_default(struct bfc_params *p, uint64_t granularity);

struct bfc;

/* Create an empty allocator (no regions).  *out is owned by the caller and
 * released with bfc_destroy().  -EINVAL on bad parameters.
 */
int bfc_create(struct bfc **out, const struct bfc_params *p);
/* Free all metadata.  Chunks still in use are simply forgotten. */
void bfc_destroy(struct bfc *b);

/* Regions --------------------------------------------------------------- */

/* Add [base, base + size) as a new free chunk.  It must not overlap any
 * existing region (-EINVAL), must be granularity-aligned, non-empty and not
 * wrap: base + size <= UINT64_MAX, so a region cannot end at 2^64 (-EINVAL).
 * *region_id (may be NULL) names it for bfc_remove_region(); ids count up
 * from 1 and a live region's id is never given to another (after 2^32 - 1
 * additions the count wraps and skips the ids in use).  With
 * BFC_MERGE_ADJACENT_REGIONS an adjacent
 * region absorbs it and *region_id is that region's id (a region adjacent on
 * both sides joins them: the upper one's id is gone).  -ENOMEM when the
 * metadata cannot grow.
 */
int bfc_add_region(struct bfc *b, uint64_t base, uint64_t size,
		   uint32_t *region_id);
/* Remove a wholly free region: -EBUSY if any chunk in it is in use,
 * -ENOENT if there is no such region.  On success *base and *size (may be NULL)
 * say what the caller can now give back to the system.
 */
int bfc_remove_region(struct bfc *b, uint32_t region_id, uint64_t *base,
		      uint64_t *size);
/* TensorFlow's DeallocateFreeRegions: remove every wholly free region,
 * calling release(ctx, base, size) (release may be NULL) for each, in
 * address order, and return the number of bytes released.  release must
 * not call into this allocator (b is mid-walk).
 */
uint64_t bfc_remove_free_regions(struct bfc *b,
				 void (*release)(void *ctx, uint64_t base,
						 uint64_t size),
				 void *ctx);

/* Allocation ------------------------------------------------------------ */

/* Best fit: the smallest free chunk that holds the rounded size, ties broken
 * by the lowest address.  size 0 -> -EINVAL (no zero-size chunks exist; a
 * caller error, not counted as a failed allocation); a size whose rounding
 * overflows, nothing fits, or no memory for metadata -> -ENOMEM (counted in
 * stats.failed_allocs; the caller may add a region and retry).
 * On success *h and *addr (either may be NULL) receive the chunk.
 */
int bfc_alloc(struct bfc *b, uint64_t size, bfc_handle_t *h, uint64_t *addr);
/* As bfc_alloc(), and *from (may be NULL) is the size of the free chunk
 * the allocation was taken from: the chunk handed out is one end of it, and
 * the rest, if any, stays free beside it (free chunks never touch, so the
 * rest is a free chunk of its own).  A caller that keeps figures by free
 * chunk size (the module's /proc bins) learns what changed without looking
 * at the neighbours.
 */
int bfc_alloc_from(struct bfc *b, uint64_t size, bfc_handle_t *h,
		   uint64_t *addr, uint64_t *from);
/* Free by handle / by start address.  A handle or address that does not
 * name a chunk in use -> -EINVAL (counted in stats.bad_frees; nothing
 * changes).  Coalesces with free neighbours in the same region.
 */
int bfc_free(struct bfc *b, bfc_handle_t h);
int bfc_free_addr(struct bfc *b, uint64_t addr);
/* Address of an in-use chunk's start -> its handle; -ENOENT otherwise. */
int bfc_lookup(const struct bfc *b, uint64_t addr, bfc_handle_t *h);

struct bfc_chunk_info {
	uint64_t addr;
	uint64_t size;		/* rounded, what the chunk really spans */
	uint64_t requested;	/* what the caller asked for (0 when free) */
	uint64_t alloc_id;	/* sequence number of its allocation (0 when free) */
	uint64_t tag;		/* caller's word, see bfc_set_tag() */
	uint32_t region_id;
	uint32_t bin;		/* bin index (bfc_bin_of(size)) */
	bool in_use;
};
/* Describe any live chunk (free or in use); -EINVAL for a bad handle. */
int bfc_chunk_info(const struct bfc *b, bfc_handle_t h,
		   struct bfc_chunk_info *info);
/* One caller-defined word per in-use chunk (the library keeps a stream
 * there, for example).  Cleared on allocation.  -EINVAL unless in use.
 */
int bfc_set_tag(struct bfc *b, bfc_handle_t h, uint64_t tag);

/* Visit every chunk in address order; stops early when fn returns non-zero
 * and returns that value.  fn must not change the allocator (a free could
 * merge the chunk away under the walk).
 */
int bfc_for_each_chunk(const struct bfc *b,
		       int (*fn)(void *ctx, const struct bfc_chunk_info *c),
		       void *ctx);

/* A walk in address order that may stop and go on later, after the
 * allocator has changed: a caller that must not hold its lock for a walk of
 * millions of chunks takes it for one bfc_walk_chunks() call at a time.
 * Zero the cursor to start.  Chunks are visited in increasing address
 * order, each at most once, and every chunk that stays as it is (same
 * start and size) for the whole walk is visited; a chunk that changed
 * between two calls may be missed, or seen as it was before or after the
 * change.  Handles are only hints here: the place is the address.
 */
struct bfc_cursor {
	uint64_t pos;	/* the chunks starting below pos have been visited */
	uint32_t hint;	/* a chunk to look from, checked before use */
	uint32_t unused;
};
#define BFC_WALK_MORE	1
/* Look at up to max chunks (0: no limit): visit those starting at or
 * above the cursor, step over the rest.  Returns 0 when no chunk is left,
 * BFC_WALK_MORE when max were looked at (call again with the same cursor),
 * or fn's non-zero return (fn should use negative values), the cursor then
 * past the chunk fn saw.  fn must not change the allocator.
 */
int bfc_walk_chunks(const struct bfc *b, struct bfc_cursor *cur,
		    uint32_t max,
		    int (*fn)(void *ctx, const struct bfc_chunk_info *c),
		    void *ctx);

/* Bytes of the free chunk that ends the highest region; 0 when that region
 * ends in an in-use chunk, or there are no regions.  With
 * BFC_MERGE_ADJACENT_REGIONS a region added right above the highest one
 * merges with this chunk, so a caller growing the allocator that way needs
 * to add only (rounded request - this) bytes.  O(1).
 */
uint64_t bfc_free_at_top(const struct bfc *b);

/* Free address space in whole blocks, for a caller that backs its regions
 * with memory in units larger than the granularity (the library's device
 * pool maps physical memory in the driver's granules, and gives back the
 * granules no chunk uses): for every maximal run of free chunks (adjacent
 * regions continue a run), the largest span of whole `align`-aligned blocks
 * inside it, in address order, through fn(ctx, base, size) (fn may be
 * NULL).  Returns the bytes of all spans; 0 when align is not a power of
 * two.  fn must not change the allocator.  O(chunks).
 */
uint64_t bfc_free_spans(const struct bfc *b, uint64_t align,
			void (*fn)(void *ctx, uint64_t base, uint64_t size),
			void *ctx);

/* As bfc_free_spans(), but a span can become an in-use chunk: in each free
 * chunk, the largest span of whole `align`-aligned blocks (if any) is
 * offered to take(ctx, base, size); when it returns true (or take is
 * NULL), the span is cut out and handed out as if allocated (counted in the
 * statistics as an allocation of its size; the chunk's ends, shorter than
 * a block, stay free), an in-use chunk starting at base (bfc_lookup()
 * finds its handle).  For a caller that takes back, in place, the free
 * space it cannot back (the device pool's unmapped granules: best fit then
 * never chooses them) and frees it, whole or in parts (bfc_split), when it
 * backs it again.  Spans are not joined across regions.  Returns the bytes
 * taken; stops early, before offering a span, when the metadata cannot
 * grow; 0 when align is not a power of two or is below the granularity.
 * take must not change the allocator.  O(chunks).
 */
uint64_t bfc_take_free_spans(struct bfc *b, uint64_t align,
			     bool (*take)(void *ctx, uint64_t base,
					  uint64_t size),
			     void *ctx);

/* Split in-use chunk h in two in-use chunks: h keeps its first `size`
 * bytes (a multiple of the granularity, above 0 and below h's size), *rest
 * gets the others, with h's tag.  The requested bytes stay with h up to its
 * new size; the rest counts as requested in full, and as an allocation in
 * the statistics (chunks in use are allocations less frees).  Freeing
 * either part then frees only that part.  -EINVAL (h not in use, a bad
 * size), -ENOMEM (metadata); nothing changes then.  O(1).
 */
int bfc_split(struct bfc *b, bfc_handle_t h, uint64_t size, bfc_handle_t *rest);

/* The sizes of the free chunks right below and right above chunk h (free
 * or in use), 0 where that neighbour is in use or h is at its region's
 * edge; -EINVAL for a bad handle.  Free chunks never touch, so a caller
 * asking just before a free (or just after an allocation) learns which
 * free chunks that free merges (or that allocation was cut from), and can
 * keep figures by free chunk size as it goes.  O(1).
 */
int bfc_free_neighbours(const struct bfc *b, bfc_handle_t h, uint64_t *prev,
			uint64_t *next);

/* Statistics ------------------------------------------------------------- */

struct bfc_stats {
	uint64_t in_use;		/* bytes in in-use chunks (rounded) */
	uint64_t peak_in_use;
	uint64_t requested;		/* bytes asked for by in-use chunks */
	uint64_t reserved;		/* bytes in regions */
	uint64_t peak_reserved;
	uint64_t largest_alloc;		/* largest chunk handed out, ever */
	uint64_t largest_free;		/* largest free chunk now */
	uint64_t free_bytes;		/* reserved - in_use */
	uint64_t nr_allocs;		/* successful allocations, ever */
	uint64_t nr_frees;		/* successful frees, ever */
	uint64_t failed_allocs;
	uint64_t bad_frees;		/* frees of unknown / free chunks */
	uint64_t chunks_in_use;
	uint64_t chunks_free;
	uint64_t regions;
	/* 1 - largest_free / free_bytes, in parts per million, rounded down
	 * (integer: the kernel has no floating point); exact while free_bytes
	 * < 2^44, within a few ppm above.  0 when nothing is free.
	 */
	uint32_t fragmentation_ppm;
};
void bfc_get_stats(const struct bfc *b, struct bfc_stats *s);
/* Reset peak_in_use to in_use and peak_reserved to reserved. */
void bfc_reset_peaks(struct bfc *b);

/* Bins: bin i holds free chunks of size in [granularity << i,
 * granularity << (i + 1)); the last bin is open-ended.  Used for reporting
 * (TensorFlow's bins); the search itself uses finer classes.
 */
#define BFC_NR_BINS	32
uint32_t bfc_bin_of(const struct bfc *b, uint64_t size);
struct bfc_bin_stats {
	uint64_t free_chunks;
	uint64_t free_bytes;
	uint64_t in_use_chunks;	/* in-use chunks whose size falls in this bin */
	uint64_t in_use_bytes;
	uint64_t requested_bytes;
};
void bfc_get_bin_stats(const struct bfc *b, struct bfc_bin_stats bins[BFC_NR_BINS]);
/* Count one chunk into bins (a struct bfc_bin_stats[BFC_NR_BINS], zeroed
 * first); shaped as a walk callback, for bfc_walk_chunks(): returns 0.
 */
int bfc_bin_stats_add(void *bins, const struct bfc_chunk_info *c);

/* Checking and diagnostics ------------------------------------------------ */

/* Walk everything and verify every invariant: chunks tile each region with
 * no gap or overlap; prev/next links agree; no two adjacent free chunks in a
 * region; each free chunk is indexed in the right class, in order; the
 * address index holds exactly the in-use chunks; the statistics equal the
 * sums.  Returns the number of violations; a line per violation goes into
 * buf (NUL-terminated, truncated to len; buf may be NULL when len is 0).
 */
uint32_t bfc_check(const struct bfc *b, char *buf, size_t len);

/* Text for out-of-memory reports, into buf (NUL-terminated, truncated to
 * len).  Each returns the length the full text needs (like snprintf).
 */
size_t bfc_dump_bins(const struct bfc *b, char *buf, size_t len);
size_t bfc_dump_chunks(const struct bfc *b, char *buf, size_t len);
/* TensorFlow's RenderOccupancy: a line per region in address order,
 * "Region <id>: " then `width` characters, character i covering
 * [base + size * i / width, base + size * (i + 1) / width) (at least one
 * byte): '*' all in use, '.' all free, '+' mixed.  width 0 means TF's 100.
 * No regions: "<allocator contains no memory>\n".
 */
size_t bfc_render_occupancy(const struct bfc *b, char *buf, size_t len,
			    uint32_t width);

#endif /* GPUPOOL_BFC_H */
