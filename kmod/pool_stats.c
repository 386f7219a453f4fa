// SPDX-License-Identifier: GPL-2.0
/*
 * pool_stats.c - the pool's figures: each node's counters and bfc
 * statistics read in one hold of its lock, the whole pool added up from
 * them (GPUPOOL_IOC_STATS, /proc/gpupool), and /proc/gpupool's per-bin
 * table and occupancy map drawn from the copy of each node's figures
 * (figures.c) taken in that same hold; and from those figures what an
 * ALLOC the pool refused lacks, which reclaim.c asks idle chunks for.
 *
 * It reads the pool (pool.c) and never changes it: the counters are
 * pool.c's, kept under each node's stat_lock.
 */
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/gpupool.h>

#include "gpupool.h"

/*
 * About how many bytes an ALLOC of size the pool refused lacks, on the
 * node that lacks least of those it may take from (strict: nid alone):
 * what its free bytes lack, or, when they would do but are in pieces,
 * what its largest free chunk lacks (the bytes given back join the free
 * ones next to them, which is where an idle chunk's neighbours often
 * are; where they do not, the ALLOC's retry fails).  U64_MAX when no
 * such node can ever hold size.  May sleep.
 */
u64 gp_pool_shortfall(u64 size, int nid, bool strict)
{
	u64 need = U64_MAX, lack, have;
	struct gpupool_pool_stats s;
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++) {
		struct gp_node *n = gp_nodes[i];

		if ((strict && n->nid != nid) ||
		    size > (u64)n->cap_blocks << GP_BLOCK_SHIFT)
			continue;
		gp_pool_node_stats(n, &s);
		have = s.free >= size ? s.largest_free : s.free;
		lack = size > have ? size - have : size;
		need = min(need, lack);
	}
	return need;
}

/* Requests refused by a per-process or cgroup limit, since load. */
static atomic64_t gp_limit_denials = ATOMIC64_INIT(0);

void gp_pool_count_limit_denial(void)
{
	atomic64_inc(&gp_limit_denials);
}

/*
 * A node's figures; with map, its bin table and map cells too (/proc),
 * all from one hold of its lock: one consistent picture, and a reader
 * takes the lock once per node.
 */
static void gp_node_read(struct gp_node *n, struct gpupool_pool_stats *s,
			 struct gp_map *map)
{
	struct bfc_stats st;
	struct gp_counters c;

	gp_node_lock(n);
	bfc_get_stats(n->bfc, &st);
	if (map) {
		gp_fig_settle(&n->fig);
		map->fig = n->fig;
	}
	spin_lock(&n->stat_lock);
	c = n->c;
	if (map) {
		memcpy(map->zeroing, n->map_zeroing, sizeof(map->zeroing));
		memcpy(map->quarantined, n->map_quarantined,
		       sizeof(map->quarantined));
	}
	spin_unlock(&n->stat_lock);
	mutex_unlock(&n->lock);

	memset(s, 0, sizeof(*s));
	s->total = st.reserved;
	s->free = st.free_bytes;
	s->in_use = c.live_bytes;
	s->peak_in_use = c.peak_live_bytes;
	s->zeroing = c.zeroing_bytes;
	s->quarantined = c.quarantined_bytes;
	s->largest_free = st.largest_free;
	s->chunks_in_use = c.live_chunks;
	s->chunks_free = st.chunks_free;
	s->chunks_zeroing = c.zeroing_chunks;
	s->chunks_quarantined = c.quarantined_chunks;
	s->allocs = c.allocs;
	s->frees = c.frees;
	s->failed_allocs = c.failed_allocs;
	s->growths = c.growths;
	s->fragmentation_ppm = st.fragmentation_ppm;
	s->node = n->nid;
}

void gp_pool_node_stats(struct gp_node *n, struct gpupool_pool_stats *s)
{
	gp_node_read(n, s, NULL);
}

/*
 * The whole pool into *t: the figures of every node (into nodes[], which
 * has gp_nr_nodes entries) added up; each node is a consistent snapshot.
 */
void gp_pool_stats(struct gpupool_pool_stats *t,
		   struct gpupool_pool_stats *nodes, struct gp_map *maps)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < gp_nr_nodes; i++) {
		struct gpupool_pool_stats *s = &nodes[i];

		gp_node_read(gp_nodes[i], s, maps ? &maps[i] : NULL);
		t->total += s->total;
		t->free += s->free;
		t->in_use += s->in_use;
		t->zeroing += s->zeroing;
		t->quarantined += s->quarantined;
		t->largest_free = max(t->largest_free, s->largest_free);
		t->chunks_in_use += s->chunks_in_use;
		t->chunks_free += s->chunks_free;
		t->chunks_zeroing += s->chunks_zeroing;
		t->chunks_quarantined += s->chunks_quarantined;
		t->allocs += s->allocs;
		t->frees += s->frees;
		t->failed_allocs += s->failed_allocs;
		t->growths += s->growths;
	}
	t->peak_in_use = max_t(u64, gp_pool_peak_in_use(),
			       t->in_use);
	t->limit_denials = atomic64_read(&gp_limit_denials);
	if (t->free)
		t->fragmentation_ppm = 1000000 -
			div64_u64(t->largest_free * 1000000, t->free);
	t->node = ~0u;
}

/*
 * /proc/gpupool's bin table and map: a copy of each node's figures
 * (figures.c) taken by gp_pool_stats() in the hold of its lock that reads
 * its counters, O(bins + cells) however many chunks the node holds, and
 * exact.
 */

/* The per-bin table of /proc/gpupool: non-empty bins only, sizes in kB. */
void gp_pool_show_bins(struct seq_file *m, const struct gp_map *maps)
{
	unsigned int i, b;

	for (i = 0; i < gp_nr_nodes; i++) {
		struct gp_node *n = gp_nodes[i];

		for (b = 0; b < BFC_NR_BINS; b++) {
			const struct bfc_bin_stats *s = &maps[i].fig.bins[b];

			if (!s->free_chunks && !s->in_use_chunks)
				continue;
			seq_printf(m, "Node%dBin%u: %llu %llu %llu %llu %llu\n",
				   n->nid, b, s->free_chunks,
				   s->free_bytes >> 10, s->in_use_chunks,
				   s->in_use_bytes >> 10,
				   s->requested_bytes >> 10);
		}
	}
}

/* Occupancy map --------------------------------------------------------------- */

/*
 * NodeNMap: the node's offset space in GP_MAP_CELLS equal cells, each shown
 * by the state that holds most of its bytes: '#' in use, '.' free, 'z'
 * being zeroed or waiting for it, 'q' quarantined, ' ' not reserved (room
 * to grow).
 */
enum {
	GP_MAP_FREE, GP_MAP_USED, GP_MAP_ZEROING, GP_MAP_QUARANTINED, GP_MAP_NR
};

static void gp_pool_show_node_map(struct seq_file *m, struct gp_node *n,
				  const struct gp_map *map)
{
	static const char glyph[GP_MAP_NR] = { '.', '#', 'z', 'q' };
	unsigned int i, st;
	u64 bytes[GP_MAP_NR];

	seq_printf(m, "Node%dMap: ", n->nid);
	for (i = 0; i < GP_MAP_CELLS; i++) {
		unsigned int best = GP_MAP_NR;
		u64 most = 0;

		bytes[GP_MAP_FREE] = map->fig.map_free[i];
		bytes[GP_MAP_ZEROING] = map->zeroing[i];
		bytes[GP_MAP_QUARANTINED] = map->quarantined[i];
		/* Released chunks stay in use for bfc until zeroed. */
		bytes[GP_MAP_USED] = map->fig.map_used[i] -
			min(map->fig.map_used[i],
			    map->zeroing[i] + map->quarantined[i]);
		for (st = 0; st < GP_MAP_NR; st++) {
			if (bytes[st] > most) {
				most = bytes[st];
				best = st;
			}
		}
		seq_putc(m, best == GP_MAP_NR ? ' ' : glyph[best]);
	}
	seq_putc(m, '\n');
}

void gp_pool_show_map(struct seq_file *m, const struct gp_map *maps)
{
	unsigned int i;

	for (i = 0; i < gp_nr_nodes; i++)
		gp_pool_show_node_map(m, gp_nodes[i], &maps[i]);
}
