// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_dump.c - statistics: the running sums (O(log n) for the largest
 * free chunk), per-bin statistics and the text reports (TensorFlow's
 * DumpMemoryLog and RenderOccupancy).  Bins and reports are O(chunks);
 * none of it is on a hot path.  Byte counts are printed exactly, in
 * decimal (no floating point).
 */
#include "bfc_internal.h"

#define BFC_ULL(x)	((unsigned long long)(x))

void bfc_get_stats(const struct bfc *b, struct bfc_stats *s)
{
	uint32_t h = bfc__largest_free(b);
	uint64_t num, den;

	*s = b->st;
	s->chunks_in_use = s->nr_allocs - s->nr_frees;
	s->largest_free = h ? b->chunks[h].size : 0;
	s->free_bytes = s->reserved - s->in_use;
	s->fragmentation_ppm = 0;
	if (s->free_bytes) {
		num = s->free_bytes - s->largest_free;
		den = s->free_bytes;
		/* Exact while num * 10^6 fits: free_bytes < 2^44 (16 TiB);
		 * beyond that both are scaled down first.
		 */
		while (den >= (1ull << 44)) {
			num >>= 1;
			den >>= 1;
		}
		s->fragmentation_ppm = (uint32_t)(num * 1000000u / den);
	}
}

void bfc_reset_peaks(struct bfc *b)
{
	b->st.peak_in_use = b->st.in_use;
	b->st.peak_reserved = b->st.reserved;
}

uint32_t bfc_bin_of(const struct bfc *b, uint64_t size)
{
	uint64_t u = size >> b->gshift;
	uint32_t bin;

	if (!u)
		return 0;
	bin = 63u - (uint32_t)__builtin_clzll(u);
	return bin < BFC_NR_BINS ? bin : BFC_NR_BINS - 1;
}

int bfc_bin_stats_add(void *bins, const struct bfc_chunk_info *c)
{
	struct bfc_bin_stats *bs = (struct bfc_bin_stats *)bins + c->bin;

	if (c->in_use) {
		bs->in_use_chunks++;
		bs->in_use_bytes += c->size;
		bs->requested_bytes += c->requested;
	} else {
		bs->free_chunks++;
		bs->free_bytes += c->size;
	}
	return 0;
}

void bfc_get_bin_stats(const struct bfc *b, struct bfc_bin_stats bins[BFC_NR_BINS])
{
	bfc_memset(bins, 0, sizeof(bins[0]) * BFC_NR_BINS);
	bfc_for_each_chunk(b, bfc_bin_stats_add, bins);
}

size_t bfc_dump_bins(const struct bfc *b, char *buf, size_t len)
{
	/* 1.3 KB: too much for a kernel stack frame. */
	struct bfc_bin_stats *bins = bfc_env_alloc(sizeof(*bins) * BFC_NR_BINS);
	struct bfc_stats st;
	struct bfc_out o;
	uint32_t i;

	bfc__out_init(&o, buf, len);
	bfc_get_stats(b, &st);
	BFC_PUT(&o, "BFC: %llu regions, %lluB reserved, %lluB in use, %lluB requested, %llu chunks in use, %llu free, largest free %lluB\n",
		BFC_ULL(st.regions), BFC_ULL(st.reserved), BFC_ULL(st.in_use),
		BFC_ULL(st.requested), BFC_ULL(st.chunks_in_use), BFC_ULL(st.chunks_free),
		BFC_ULL(st.largest_free));
	if (bins)
		bfc_get_bin_stats(b, bins);
	else
		BFC_PUT(&o, "(no memory for the bin summary)\n");
	for (i = 0; bins && i < BFC_NR_BINS; i++) {
		const struct bfc_bin_stats *bs = &bins[i];

		/* Only bins holding chunks: their lower bound is then below a
		 * chunk's size, so the shift cannot overflow.
		 */
		if (!bs->free_chunks && !bs->in_use_chunks)
			continue;
		BFC_PUT(&o, "Bin (%llu): \tTotal Chunks: %llu, Chunks in use: %llu. %lluB allocated for chunks. %lluB in use in bin. %lluB client-requested in use in bin.\n",
			BFC_ULL(b->p.granularity << i),
			BFC_ULL(bs->free_chunks + bs->in_use_chunks),
			BFC_ULL(bs->in_use_chunks),
			BFC_ULL(bs->free_bytes + bs->in_use_bytes),
			BFC_ULL(bs->in_use_bytes), BFC_ULL(bs->requested_bytes));
	}
	BFC_PUT(&o, "Sum Total of in-use chunks: %lluB\n", BFC_ULL(st.in_use));
	if (bins)
		bfc_env_free(bins, sizeof(*bins) * BFC_NR_BINS);
	return o.pos;
}

size_t bfc_dump_chunks(const struct bfc *b, char *buf, size_t len)
{
	struct bfc_out o;
	uint32_t i, h;

	bfc__out_init(&o, buf, len);
	for (i = 0; i < b->nr_regions; i++) {
		const struct bfc_region *r = &b->regions[b->order[i]];

		BFC_PUT(&o, "Region %u at 0x%llx of size %llu\n", r->id,
			BFC_ULL(r->base), BFC_ULL(r->size));
		for (h = b->chunks[r->lo].next; h != r->hi;
		     h = b->chunks[h].next) {
			const struct bfc_chunk *c = &b->chunks[h];

			if (c->flags & BFC_CF_HELD)
				BFC_PUT(&o, "InUse at 0x%llx of size %llu requested %llu alloc_id %llu tag 0x%llx handle %u\n",
					BFC_ULL(c->addr), BFC_ULL(c->size),
					BFC_ULL(c->u.requested), BFC_ULL(c->u.alloc_id),
					BFC_ULL(c->flags & BFC_CF_TAGGED ? c->u.tag : 0), h);
			else
				BFC_PUT(&o, "Free  at 0x%llx of size %llu handle %u\n",
					BFC_ULL(c->addr), BFC_ULL(c->size), h);
		}
	}
	return o.pos;
}

/* floor(size * i / width) without overflow (i <= width < 2^32). */
static uint64_t cell_offset(uint64_t size, uint32_t width, uint32_t i)
{
	return size / width * i + size % width * i / width;
}

size_t bfc_render_occupancy(const struct bfc *b, char *buf, size_t len,
			    uint32_t width)
{
	struct bfc_out o;
	uint32_t i, cell;

	bfc__out_init(&o, buf, len);
	if (!width)
		width = 100;
	if (!b->nr_regions)
		BFC_PUT(&o, "<allocator contains no memory>\n");
	for (i = 0; i < b->nr_regions; i++) {
		const struct bfc_region *r = &b->regions[b->order[i]];
		uint32_t h = b->chunks[r->lo].next;

		BFC_PUT(&o, "Region %u: ", r->id);
		for (cell = 0; cell < width; cell++) {
			uint64_t lo = r->base + cell_offset(r->size, width, cell);
			uint64_t hi = r->base + cell_offset(r->size, width, cell + 1);
			bool any_used = false, any_free = false;
			uint32_t x;

			if (hi == lo)	/* more cells than bytes: show the byte */
				hi = lo + 1;
			/* h is the chunk holding lo (the region's chunks reach
			 * its end): skip those ending before.
			 */
			while (b->chunks[h].addr + b->chunks[h].size <= lo)
				h = b->chunks[h].next;
			for (x = h; x != r->hi && b->chunks[x].addr < hi;
			     x = b->chunks[x].next) {
				if (b->chunks[x].flags & BFC_CF_HELD)
					any_used = true;
				else
					any_free = true;
			}
			bfc__out_putc(&o, any_used ? (any_free ? '+' : '*') : '.');
		}
		bfc__out_putc(&o, '\n');
	}
	return o.pos;
}
