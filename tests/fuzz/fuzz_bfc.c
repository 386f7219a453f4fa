// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * fuzz_bfc.c - libFuzzer harness for the BFC allocator core (core/bfc.h).
 *
 * The input picks the allocator's parameters (granularity 1 to 2^63, or
 * any 64-bit value, which bfc_create must refuse unless it is a power of
 * two; split ratio and threshold; max_split_size; flags, unknown bits
 * included; the placement policy, every one and an unknown one, and its
 * small_size), then a sequence of operations on its public API: regions
 * added (adjacent above and below others, overlapping, misaligned, empty,
 * ending near 2^64), removed by id (known, unknown, busy) and all at once;
 * allocations of sizes from 0 to near 2^64, exact fits of free chunks and
 * halves at the split boundary; frees by handle and by address of live,
 * stale, interior, random and made-up handles and addresses; lookups, tags,
 * chunk_info on any handle; statistics, per-bin statistics, peak resets;
 * a bfc_walk_chunks() walk taken a few chunks at a time between the other
 * operations (each chunk it visits must be one the model has then, above
 * the last one visited);
 * the dumps, occupancy maps and bfc_check's report into buffers of every
 * small and odd size.
 *
 * Every operation is run on tests/unit/bfc_model.h's reference model too
 * (the one the model-based unit test uses: best fit by scanning, no
 * cleverness to share bugs with the core), and after every operation:
 * bfc_check() must find nothing; return codes, addresses, chunk metadata,
 * the whole chunk list and every statistic must equal the model's; the
 * handles the harness holds (its shadow of what is live) are exactly the
 * in-use chunks, which never overlap.  Text output must be NUL-terminated
 * within its buffer, say how long the whole text is, and be a prefix of
 * that text; the occupancy map must equal one computed from the model.
 * Any difference aborts with a message (a crash for libFuzzer).
 */
#include "fuzz.h"
#include "bfc_model.h"

#define MAX_OPS		2048
#define MAX_REGIONS	(4 * NSLOTS)	/* the model's region array */
#define MAX_STALE	64
#define MAX_WIDTH	300

struct live {
	bfc_handle_t h;
	uint64_t addr;
};

struct span {
	uint64_t addr, size;
};

struct st {
	struct fz f;
	struct bfc *b;
	struct model m;
	uint64_t g;
	struct live live[MAX_OPS];
	uint32_t nlive;
	bfc_handle_t stale[MAX_STALE];	/* handles of freed chunks */
	uint64_t stale_addr[MAX_STALE];
	uint32_t nstale;
	/* A walk that spans operations: its cursor, the end of the chunk it
	 * visited last, the chunks it visited, and those that have stayed
	 * the same (start and size) since it began, which it must visit.
	 */
	bool walking;
	struct bfc_cursor cur;
	uint64_t walk_end;
	struct span *seen, *kept;
	size_t nseen, nkept;
};

static char report[16384];

static void check_core(struct st *s, const char *op)
{
	uint32_t bad = bfc_check(s->b, report, sizeof(report));

	if (bad)
		FZ_FAIL("after %s: bfc_check found %u violation(s):\n%s", op,
			bad, report);
}

/* The shadow ---------------------------------------------------------------- */

static int live_find_h(const struct st *s, bfc_handle_t h)
{
	uint32_t k;

	for (k = 0; k < s->nlive; k++)
		if (s->live[k].h == h)
			return (int)k;
	return -1;
}

static int live_find_addr(const struct st *s, uint64_t a)
{
	uint32_t k;

	for (k = 0; k < s->nlive; k++)
		if (s->live[k].addr == a)
			return (int)k;
	return -1;
}

static void live_drop(struct st *s, uint32_t k)
{
	if (s->nstale < MAX_STALE) {
		s->stale[s->nstale] = s->live[k].h;
		s->stale_addr[s->nstale++] = s->live[k].addr;
	} else {
		s->stale[k % MAX_STALE] = s->live[k].h;
		s->stale_addr[k % MAX_STALE] = s->live[k].addr;
	}
	s->live[k] = s->live[--s->nlive];
}

/* Comparing with the model --------------------------------------------------- */

struct walk {
	const struct model *m;
	size_t i;
	const char *why;
};

static int walk_cb(void *ctx, const struct bfc_chunk_info *c)
{
	struct walk *w = ctx;
	const struct mchunk *mc;

	if (w->i >= w->m->n) {
		w->why = "more chunks than the model";
		return 1;
	}
	mc = &w->m->c[w->i];
	if (c->addr != mc->addr || c->size != mc->size || c->in_use != mc->used ||
	    c->region_id != mc->region ||
	    c->requested != (mc->used ? mc->requested : 0) ||
	    c->alloc_id != (mc->used ? mc->alloc_id : 0) ||
	    c->tag != (mc->used ? mc->tag : 0)) {
		w->why = "a chunk differs from the model's";
		return 1;
	}
	w->i++;
	return 0;
}

static uint32_t bin_of(const struct st *s, uint64_t size)
{
	uint64_t u = size / s->g;
	uint32_t bin = 0;

	while (u > 1 && bin < BFC_NR_BINS - 1) {
		u >>= 1;
		bin++;
	}
	return bin;
}

static void compare(struct st *s, const char *op)
{
	struct walk w = { .m = &s->m };
	struct bfc_stats got, want;
	uint32_t k;
	size_t i;

	check_core(s, op);
	bfc_for_each_chunk(s->b, walk_cb, &w);
	if (w.why || w.i != s->m.n)
		FZ_FAIL("after %s: chunk #%zu of %zu: %s", op, w.i, s->m.n,
			w.why ? w.why : "fewer chunks than the model");
	/* In-use chunks are exactly the handles held; they do not overlap
	 * (the model's list is sorted and tiles its regions).
	 */
	for (i = 0, k = 0; i < s->m.n; i++) {
		const struct mchunk *c = &s->m.c[i];

		if (i && s->m.c[i - 1].addr + s->m.c[i - 1].size > c->addr)
			FZ_FAIL("after %s: chunks at 0x%llx and 0x%llx overlap", op,
				(unsigned long long)s->m.c[i - 1].addr,
				(unsigned long long)c->addr);
		if (c->used && live_find_addr(s, c->addr) < 0)
			FZ_FAIL("after %s: in-use chunk at 0x%llx is not held", op,
				(unsigned long long)c->addr);
		k += c->used;
	}
	FZ_ASSERT(k == s->nlive, "after %s: %u chunks in use, %u held", op, k,
		  s->nlive);

	bfc_get_stats(s->b, &got);
	m_stats_after_op(&s->m, &want);
	/* Exact while free_bytes < 2^44, within a ppm above (bfc.h). */
	if (got.free_bytes >= (1ull << 44) &&
	    got.fragmentation_ppm + 1 >= want.fragmentation_ppm &&
	    got.fragmentation_ppm <= want.fragmentation_ppm + 1)
		got.fragmentation_ppm = want.fragmentation_ppm;
#define SAME(x) FZ_ASSERT(got.x == want.x, "after %s: stats." #x " %llu, model %llu", \
			  op, (unsigned long long)got.x, (unsigned long long)want.x);
	BFC_MODEL_STATS(SAME)
#undef SAME
}

/* Choices -------------------------------------------------------------------- */

/* A free chunk's size in the model (0 if none), chosen by the input. */
static uint64_t free_size(struct st *s)
{
	size_t i, n = s->m.n, start = n ? fz_u8(&s->f) % n : 0;

	for (i = 0; i < n; i++)
		if (!s->m.c[(start + i) % n].used)
			return s->m.c[(start + i) % n].size;
	return 0;
}

static uint64_t pick_size(struct st *s)
{
	uint64_t g = s->g, fs, x;
	const uint64_t odd[] = { 0, 1, UINT64_MAX, UINT64_MAX - g + 1,
				 UINT64_MAX - g + 2, UINT64_MAX - g, 1ull << 63,
				 (1ull << 63) + 1, g - 1, g + 1 };

	switch (fz_pick(&s->f, 10)) {
	case 0:
		return FZ_PICK(&s->f, odd);
	case 1:
	case 2:
		return 1 + fz_u8(&s->f) % (8 * g ? 8 * g : g);
	case 3:
		x = fz_u8(&s->f);
		return (1ull << (x % 64)) + (x & 64 ? g : 0) - (x & 128 ? 1 : 0);
	case 4:
	case 5:
		fs = free_size(s);	/* an exact fit, before rounding */
		x = fz_u8(&s->f) % g;
		return fs > x ? fs - x : fs + 1;
	case 6:
		fs = free_size(s);	/* around the split boundary */
		x = fz_u8(&s->f) % 4;
		return x == 0 ? fs / 2 : x == 1 ? fs / 2 + 1 : x == 2 ?
		       fs / 3 + 1 : fs / 2 - (fs / 2 > g ? g : 0);
	case 7:
		return g * (1 + fz_u8(&s->f));
	default:
		return fz_u64(&s->f);
	}
}

/* Operations ---------------------------------------------------------------- */

static void op_create(struct st *s)
{
	uint8_t sel = fz_u8(&s->f);
	const uint32_t ratios[] = { 0, 1, 2, 3, 2, UINT32_MAX };
	/* Any granularity, valid or not, at times. */
	uint64_t g = sel == 255 ? fz_u64(&s->f) :
		     1ull << (sel >= 192 ? sel % 64 : sel % 13);
	const uint64_t th[] = { 128ull << 20, g, 2 * g, 0, UINT64_MAX };
	const uint64_t ms[] = { 0, 0, g, 4 * g, 64 * g, 2ull << 20 };
	struct bfc_params p;
	int rc, want;

	bfc_params_default(&p, g);
	p.split_ratio = FZ_PICK(&s->f, ratios);
	p.split_threshold = FZ_PICK_OR_ANY(&s->f, th);
	p.max_split_size = FZ_PICK_OR_ANY(&s->f, ms);
	sel = fz_u8(&s->f);
	p.flags = (sel & 1 ? BFC_MERGE_ADJACENT_REGIONS : 0) |
		  (sel == 0xfe ? 1u << (sel % 32) : 0);
	/* Every policy, and now and then one that is none. */
	sel = fz_u8(&s->f);
	p.policy = sel == 0xff ? BFC_NR_POLICIES + sel % 7 :
		   sel % BFC_NR_POLICIES;
	{
		const uint64_t sm[] = { 1ull << 20, g, 4 * g, 64 * g, 0 };

		p.small_size = FZ_PICK_OR_ANY(&s->f, sm);
	}

	FZ_ASSERT(bfc_create(NULL, &p) == -BFC_EINVAL, "create(NULL)");
	s->b = (struct bfc *)&s->b;	/* must be cleared on failure */
	FZ_ASSERT(bfc_create(&s->b, NULL) == -BFC_EINVAL && !s->b,
		  "create(NULL params)");
	want = !g || (g & (g - 1)) || (p.flags & ~BFC_PARAMS_VALID_FLAGS) ||
	       p.policy >= BFC_NR_POLICIES ? -BFC_EINVAL : 0;
	rc = bfc_create(&s->b, &p);
	FZ_ASSERT(rc == want && !s->b == !!rc,
		  "create(granularity %llu, flags %#x, policy %u): %d, expected %d",
		  (unsigned long long)g, p.flags, p.policy, rc, want);
	s->g = g;
	s->m.p = p;
	s->m.next_id = 1;
	s->m.next_alloc_id = 1;
}

static void op_add(struct st *s)
{
	uint64_t g = s->g, size, base, top = UINT64_MAX & ~(g - 1);
	const struct mregion *r = s->m.nr ? &s->m.r[fz_u8(&s->f) % s->m.nr] : NULL;
	uint32_t id = 0, mid = 0;
	int rc, mrc;

	if (s->m.nr >= MAX_REGIONS)
		return;
	switch (fz_pick(&s->f, 8)) {
	case 0: size = 0; break;
	case 1: size = g / 2 ? g / 2 : 1; break;
	case 2: size = top; break;
	case 3: size = fz_u64(&s->f) & ~(g - 1); break;
	case 4: size = g * (1 + fz_u32(&s->f) % (1u << 20)); break;
	default: size = g * (1 + fz_u8(&s->f)); break;
	}
	switch (fz_pick(&s->f, 10)) {
	case 0: base = 0; break;
	case 1: base = top - size; break;		/* up to the top */
	case 2: base = top - size - g * fz_u8(&s->f); break;
	case 3: base = fz_u64(&s->f); break;		/* misaligned, mostly */
	case 4: base = fz_u64(&s->f) & ~(g - 1); break;
	case 5: base = r ? r->base + g * fz_u8(&s->f) : 0; break;	/* inside */
	case 6: base = r ? r->base - size : 0; break;	/* just below */
	default: base = r ? r->base + r->size : g * fz_u32(&s->f); break;
	}
	rc = bfc_add_region(s->b, base, size, fz_u8(&s->f) & 1 ? &id : NULL);
	mrc = m_add(&s->m, base, size, &mid);
	FZ_ASSERT(rc == mrc, "add_region(0x%llx, %llu): %d, model %d",
		  (unsigned long long)base, (unsigned long long)size, rc, mrc);
	FZ_ASSERT(!id || id == mid, "add_region(0x%llx, %llu): id %u, model %u",
		  (unsigned long long)base, (unsigned long long)size, id, mid);
}

static void op_remove(struct st *s)
{
	uint64_t base = 0, size = 0, mb = 0, ms = 0;
	uint32_t id;
	bool out = fz_u8(&s->f) & 1;
	int rc, mrc;

	switch (fz_pick(&s->f, 4)) {
	case 0: id = fz_u32(&s->f); break;
	case 1: id = s->m.next_id; break;	/* not yet given */
	default: id = s->m.nr ? s->m.r[fz_u8(&s->f) % s->m.nr].id : 0; break;
	}
	rc = bfc_remove_region(s->b, id, out ? &base : NULL, out ? &size : NULL);
	mrc = m_remove(&s->m, id, &mb, &ms);
	FZ_ASSERT(rc == mrc && (!out || (base == mb && size == ms)),
		  "remove_region(%u): %d [0x%llx +%llu], model %d [0x%llx +%llu]",
		  id, rc, (unsigned long long)base, (unsigned long long)size, mrc,
		  (unsigned long long)mb, (unsigned long long)ms);
}

struct released {
	uint64_t base[MAX_REGIONS], size[MAX_REGIONS];
	size_t n;
};

static void release_cb(void *ctx, uint64_t base, uint64_t size)
{
	struct released *r = ctx;

	FZ_ASSERT(r->n < MAX_REGIONS, "more regions released than exist");
	r->base[r->n] = base;
	r->size[r->n++] = size;
}

static void op_remove_free(struct st *s)
{
	struct released got = { .n = 0 };
	bool cb = fz_u8(&s->f) & 1;
	uint64_t total = bfc_remove_free_regions(s->b, cb ? release_cb : NULL, &got);
	uint64_t want = 0;
	size_t i = 0, k = 0;

	while (i < s->m.nr) {		/* address order, like the core */
		size_t c = m_wholly_free(&s->m, &s->m.r[i]);

		if (c == s->m.n) {
			i++;
			continue;
		}
		FZ_ASSERT(!cb || (k < got.n && got.base[k] == s->m.r[i].base &&
				  got.size[k] == s->m.r[i].size),
			  "remove_free_regions: release #%zu differs", k);
		want += s->m.r[i].size;
		k++;
		m_erase(&s->m, c);
		m_region_erase(&s->m, &s->m.r[i]);
	}
	FZ_ASSERT(total == want && (!cb || got.n == k),
		  "remove_free_regions: %llu bytes in %zu, model %llu in %zu",
		  (unsigned long long)total, got.n, (unsigned long long)want, k);
}

static void op_alloc(struct st *s)
{
	uint64_t size = pick_size(s), a = 0, ma = 0;
	bool out = fz_u8(&s->f) % 4;
	struct bfc_chunk_info i;
	const struct mchunk *c;
	bfc_handle_t h = 0;
	int rc, mrc;

	rc = bfc_alloc(s->b, size, out ? &h : NULL, out ? &a : NULL);
	mrc = m_alloc(&s->m, size, &ma);
	FZ_ASSERT(rc == mrc, "alloc(%llu): %d, model %d", (unsigned long long)size,
		  rc, mrc);
	if (rc)
		return;
	if (!out) {		/* find it the other way */
		FZ_ASSERT(bfc_lookup(s->b, ma, &h) == 0, "lookup(0x%llx) of a new chunk",
			  (unsigned long long)ma);
		a = ma;
	}
	FZ_ASSERT(a == ma && h, "alloc(%llu): handle %u at 0x%llx, model 0x%llx",
		  (unsigned long long)size, h, (unsigned long long)a,
		  (unsigned long long)ma);
	FZ_ASSERT(live_find_h(s, h) < 0, "alloc returned handle %u, already live", h);
	c = &s->m.c[m_find(&s->m, a)];
	FZ_ASSERT(bfc_chunk_info(s->b, h, &i) == 0 && i.addr == a &&
		  i.size == c->size && i.requested == size && i.in_use &&
		  i.alloc_id == c->alloc_id && !i.tag && i.region_id == c->region &&
		  i.bin == bin_of(s, i.size) && !(a & (s->g - 1)),
		  "chunk_info of new chunk %u", h);
	s->live[s->nlive].h = h;
	s->live[s->nlive++].addr = a;
}

/* A handle: held, stale, small (often a free chunk), made up. */
static bfc_handle_t pick_handle(struct st *s)
{
	switch (fz_pick(&s->f, 6)) {
	case 0: return s->nstale ? s->stale[fz_u8(&s->f) % s->nstale] : 0;
	case 1: return fz_u8(&s->f) % 80;
	case 2: return fz_u32(&s->f);
	default: return s->nlive ? s->live[fz_u8(&s->f) % s->nlive].h : 0;
	}
}

/* An address: a held chunk's start or inside it, a stale or free chunk's,
 * a region's base or end, made up.
 */
static uint64_t pick_addr(struct st *s)
{
	uint8_t k = fz_u8(&s->f);

	switch (fz_pick(&s->f, 8)) {
	case 0: return s->nstale ? s->stale_addr[k % s->nstale] : 0;
	case 1: return s->m.n ? s->m.c[k % s->m.n].addr : 0;
	case 2: return s->m.nr ? s->m.r[k % s->m.nr].base + s->m.r[k % s->m.nr].size : 0;
	case 3: return fz_u64(&s->f);
	case 4: return s->nlive ? s->live[k % s->nlive].addr + 1 + k % s->g : 0;
	default: return s->nlive ? s->live[k % s->nlive].addr : 0;
	}
}

static void op_free(struct st *s)
{
	bfc_handle_t h = pick_handle(s);
	int k = live_find_h(s, h), rc = bfc_free(s->b, h);

	if (k < 0) {
		FZ_ASSERT(rc == -BFC_EINVAL, "free(%u), not held: %d", h, rc);
		s->m.st.bad_frees++;
		return;
	}
	FZ_ASSERT(rc == 0 && m_free(&s->m, s->live[k].addr) == 0,
		  "free(%u) of a held chunk: %d", h, rc);
	live_drop(s, (uint32_t)k);
}

static void op_free_addr(struct st *s)
{
	uint64_t a = pick_addr(s);
	int k = live_find_addr(s, a), rc = bfc_free_addr(s->b, a);
	int mrc = m_free(&s->m, a);

	FZ_ASSERT(rc == mrc && (rc == 0) == (k >= 0),
		  "free_addr(0x%llx): %d, model %d, held %d", (unsigned long long)a,
		  rc, mrc, k >= 0);
	if (k >= 0)
		live_drop(s, (uint32_t)k);
}

static void op_lookup(struct st *s)
{
	uint64_t a = pick_addr(s);
	int k = live_find_addr(s, a);
	bool out = fz_u8(&s->f) & 1;
	bfc_handle_t h = 0;
	int rc = bfc_lookup(s->b, a, out ? &h : NULL);

	FZ_ASSERT(k >= 0 ? rc == 0 && (!out || h == s->live[k].h) : rc == -BFC_ENOENT,
		  "lookup(0x%llx): %d handle %u, held %d", (unsigned long long)a,
		  rc, h, k);
}

static void op_tag(struct st *s)
{
	bfc_handle_t h = pick_handle(s);
	uint64_t tag = fz_u64(&s->f);
	int k = live_find_h(s, h), rc = bfc_set_tag(s->b, h, tag);

	FZ_ASSERT(rc == (k >= 0 ? 0 : -BFC_EINVAL), "set_tag(%u): %d, held %d", h,
		  rc, k >= 0);
	if (k >= 0)
		s->m.c[m_find(&s->m, s->live[k].addr)].tag = tag;
}

static void op_info(struct st *s)
{
	bfc_handle_t h = pick_handle(s);
	int k = live_find_h(s, h);
	struct bfc_chunk_info i;
	const struct mchunk *c;
	size_t mi;
	int rc;

	FZ_ASSERT(bfc_chunk_info(s->b, h, NULL) == -BFC_EINVAL, "chunk_info(NULL)");
	memset(&i, 0xa5, sizeof(i));
	rc = bfc_chunk_info(s->b, h, &i);
	if (rc) {
		FZ_ASSERT(rc == -BFC_EINVAL && k < 0, "chunk_info(%u): %d, held %d",
			  h, rc, k >= 0);
		return;
	}
	/* Held: in use; anything else: a free chunk of the model's. */
	mi = m_find(&s->m, i.addr);
	FZ_ASSERT(mi < s->m.n, "chunk_info(%u): no chunk at 0x%llx", h,
		  (unsigned long long)i.addr);
	c = &s->m.c[mi];
	FZ_ASSERT(i.in_use == (k >= 0) && c->used == i.in_use &&
		  i.size == c->size && i.region_id == c->region &&
		  i.bin == bin_of(s, i.size) &&
		  i.requested == (c->used ? c->requested : 0) &&
		  i.alloc_id == (c->used ? c->alloc_id : 0) &&
		  i.tag == (c->used ? c->tag : 0),
		  "chunk_info(%u) at 0x%llx differs from the model", h,
		  (unsigned long long)i.addr);
}

static void op_stats(struct st *s)
{
	struct bfc_bin_stats got[BFC_NR_BINS], want[BFC_NR_BINS];
	size_t i;

	bfc_get_bin_stats(s->b, got);
	memset(want, 0, sizeof(want));
	for (i = 0; i < s->m.n; i++) {
		const struct mchunk *c = &s->m.c[i];
		struct bfc_bin_stats *w = &want[bin_of(s, c->size)];

		if (c->used) {
			w->in_use_chunks++;
			w->in_use_bytes += c->size;
			w->requested_bytes += c->requested;
		} else {
			w->free_chunks++;
			w->free_bytes += c->size;
		}
	}
	FZ_ASSERT(!memcmp(got, want, sizeof(got)), "bin statistics differ");
	for (i = 0; i < 4; i++) {
		uint64_t size = i == 3 ? UINT64_MAX : fz_u64(&s->f);

		FZ_ASSERT(bfc_bin_of(s->b, size) == bin_of(s, size),
			  "bin_of(%llu)", (unsigned long long)size);
	}
	if (fz_u8(&s->f) & 1) {
		struct bfc_stats now;

		bfc_reset_peaks(s->b);
		m_stats(&s->m, &now);
		s->m.st.peak_in_use = now.in_use;
		s->m.st.peak_reserved = now.reserved;
	}
}

/* One step of a walk that goes on across operations: each chunk it visits
 * is one the model has now, above the last one it visited.  When it ends,
 * it has visited every chunk that stayed the same meanwhile.
 */
struct step {
	struct st *s;
	uint32_t visits;
	const char *why;
};

static int step_cb(void *ctx, const struct bfc_chunk_info *c)
{
	struct step *w = ctx;
	struct st *s = w->s;
	const struct model *m = &s->m;
	size_t i;

	for (i = 0; i < m->n && m->c[i].addr != c->addr; i++)
		;
	if (i == m->n || m->c[i].size != c->size || m->c[i].used != c->in_use)
		w->why = "visited a chunk the model does not have";
	else if (c->addr < s->walk_end)
		w->why = "visited below the last chunk's end";
	s->walk_end = c->addr + c->size;
	s->seen = realloc(s->seen, (s->nseen + 1) * sizeof(*s->seen));
	s->seen[s->nseen++] = (struct span){ c->addr, c->size };
	w->visits++;
	return w->why ? -1 : 0;
}

/* After every operation: keep the chunks the model still has as they were
 * (both lists are in address order).
 */
static void walk_keep(struct st *s)
{
	size_t i = 0, j, k = 0;

	if (!s->walking)
		return;
	for (j = 0; j < s->nkept; j++) {
		while (i < s->m.n && s->m.c[i].addr < s->kept[j].addr)
			i++;
		if (i < s->m.n && s->m.c[i].addr == s->kept[j].addr &&
		    s->m.c[i].size == s->kept[j].size)
			s->kept[k++] = s->kept[j];
	}
	s->nkept = k;
}

static void op_walk(struct st *s)
{
	uint32_t max = fz_u8(&s->f) % 9;	/* 0: no limit */
	struct step w = { s, 0, NULL };
	size_t i, j = 0;
	int r;

	if (!s->walking) {
		s->walking = true;
		s->kept = realloc(s->kept, (s->m.n + 1) * sizeof(*s->kept));
		for (i = 0; i < s->m.n; i++)
			s->kept[i] = (struct span){ s->m.c[i].addr, s->m.c[i].size };
		s->nkept = s->m.n;
	}
	r = bfc_walk_chunks(s->b, &s->cur, max, step_cb, &w);
	FZ_ASSERT(!w.why, "walk: %s", w.why);
	FZ_ASSERT(r == 0 || (r == BFC_WALK_MORE && max), "walk(%u): %d", max, r);
	FZ_ASSERT(!max || w.visits <= max, "walk(%u): %u visits", max, w.visits);
	if (r)
		return;
	for (i = 0; i < s->nkept; i++) {
		while (j < s->nseen && s->seen[j].addr < s->kept[i].addr)
			j++;
		FZ_ASSERT(j < s->nseen && s->seen[j].addr == s->kept[i].addr &&
			  s->seen[j].size == s->kept[i].size,
			  "walk missed chunk 0x%llx+%llu, unchanged all along",
			  (unsigned long long)s->kept[i].addr,
			  (unsigned long long)s->kept[i].size);
	}
	memset(&s->cur, 0, sizeof(s->cur));
	s->walk_end = 0;
	s->walking = false;
	s->nseen = 0;
}

/* Text ----------------------------------------------------------------------- */

/* The occupancy map the model says bfc_render_occupancy must draw. */
static size_t render_model(const struct st *s, char *buf, size_t len, uint32_t width)
{
	size_t pos = 0, i, j = 0;
	uint32_t cell;

#define OUT(...) (pos += (size_t)snprintf(pos < len ? buf + pos : NULL, \
					  pos < len ? len - pos : 0, __VA_ARGS__))
	if (!s->m.nr)
		OUT("<allocator contains no memory>\n");
	for (i = 0; i < s->m.nr; i++) {
		const struct mregion *r = &s->m.r[i];

		OUT("Region %u: ", r->id);
		for (cell = 0; cell < width; cell++) {
			uint64_t lo = r->base + (uint64_t)((unsigned __int128)r->size * cell / width);
			uint64_t hi = r->base + (uint64_t)((unsigned __int128)r->size * (cell + 1) / width);
			bool used = false, idle = false;
			size_t x;

			if (hi == lo)
				hi = lo + 1;
			while (j < s->m.n && s->m.c[j].addr + s->m.c[j].size <= lo)
				j++;
			for (x = j; x < s->m.n && s->m.c[x].addr < hi; x++) {
				used |= s->m.c[x].used;
				idle |= !s->m.c[x].used;
			}
			OUT("%c", used ? (idle ? '+' : '*') : '.');
		}
		OUT("\n");
	}
#undef OUT
	return pos;
}

enum { T_BINS, T_CHUNKS, T_OCCUPANCY, T_CHECK, T_NR };

static size_t text(struct st *s, int kind, char *buf, size_t len, uint32_t width)
{
	switch (kind) {
	case T_BINS: return bfc_dump_bins(s->b, buf, len);
	case T_CHUNKS: return bfc_dump_chunks(s->b, buf, len);
	case T_OCCUPANCY: return bfc_render_occupancy(s->b, buf, len, width);
	default: return bfc_check(s->b, buf, len) ? SIZE_MAX : 0;
	}
}

static void op_text(struct st *s)
{
	const uint32_t widths[] = { 0, 1, 2, 3, 7, 64, 100, MAX_WIDTH,
				    1 + fz_u8(&s->f) };
	const size_t lens[] = { 0, 1, 2, 3, 5, 16, 61, 100, 4096 };
	int kind = (int)fz_pick(&s->f, T_NR);
	uint32_t width = FZ_PICK(&s->f, widths);
	size_t len = FZ_PICK(&s->f, lens), n, full_n, k;
	char *full, *buf, *want;

	n = text(s, kind, NULL, 0, width);
	if (kind == T_CHECK) {
		/* Nothing to report: an empty string in any buffer. */
		buf = malloc(len + 1);
		memset(buf, 'x', len + 1);
		FZ_ASSERT(n == 0 && text(s, kind, buf, len, 0) == 0 &&
			  (len ? !buf[0] : buf[0] == 'x'), "bfc_check text");
		free(buf);
		return;
	}
	full = malloc(n + 1);
	full_n = text(s, kind, full, n + 1, width);
	FZ_ASSERT(full_n == n && strlen(full) == n, "text %d: %zu then %zu, strlen %zu",
		  kind, n, full_n, strlen(full));
	if (kind == T_OCCUPANCY) {
		want = malloc(n + 1);
		FZ_ASSERT(render_model(s, want, n + 1, width ? width : 100) == n &&
			  !strcmp(want, full), "occupancy map (width %u):\n%s\nmodel:\n%s",
			  width, full, want);
		free(want);
	}
	/* Exactly len bytes (ASan sees a byte more); len 0: untouched. */
	buf = malloc(len ? len : 1);
	memset(buf, 'x', len ? len : 1);
	FZ_ASSERT(text(s, kind, buf, len, width) == n, "text %d into %zu bytes", kind, len);
	if (!len) {
		FZ_ASSERT(buf[0] == 'x', "text %d wrote into a 0-byte buffer", kind);
	} else {
		k = strnlen(buf, len);
		FZ_ASSERT(k < len && k == (n < len - 1 ? n : len - 1) &&
			  !memcmp(buf, full, k),
			  "text %d into %zu bytes: %zu chars, not a prefix of %zu",
			  kind, len, k, n);
	}
	free(buf);
	free(full);
}

/* The harness ---------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct st s;
	uint32_t op;
	const char *name = "create";

	memset(&s, 0, sizeof(s));
	s.f.p = data;
	s.f.n = size;
	op_create(&s);
	if (!s.b)
		return 0;
	compare(&s, name);
	for (op = 0; op < MAX_OPS && fz_more(&s.f); op++) {
		switch (fz_pick(&s.f, 16)) {
		case 0: case 1: name = "add_region"; op_add(&s); break;
		case 2: name = "remove_region"; op_remove(&s); break;
		case 3: name = "remove_free_regions"; op_remove_free(&s); break;
		case 4: case 5: case 6: name = "alloc"; op_alloc(&s); break;
		case 7: case 8: name = "free"; op_free(&s); break;
		case 9: name = "free_addr"; op_free_addr(&s); break;
		case 10: name = "lookup"; op_lookup(&s); break;
		case 11: name = "set_tag"; op_tag(&s); break;
		case 12: name = "chunk_info"; op_info(&s); break;
		case 13: name = "stats"; op_stats(&s); break;
		case 14: name = "walk"; op_walk(&s); break;
		default: name = "text"; op_text(&s); break;
		}
		compare(&s, name);
		walk_keep(&s);
	}
	/* Drain: every held chunk freed, every region released. */
	while (s.nlive) {
		FZ_ASSERT(bfc_free(s.b, s.live[0].h) == 0 &&
			  m_free(&s.m, s.live[0].addr) == 0, "drain: free(%u)",
			  s.live[0].h);
		live_drop(&s, 0);
	}
	op_remove_free(&s);
	compare(&s, "drain");
	FZ_ASSERT(s.m.n == 0 && s.m.nr == 0, "regions left after the drain");
	bfc_destroy(s.b);
	free(s.m.c);
	free(s.seen);
	free(s.kept);
	return 0;
}
