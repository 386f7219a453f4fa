// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_model.c - randomized model-based test of the BFC core.
 *
 * A deliberately simple reference model (one array of chunks sorted by
 * address, best fit by scanning every free chunk, splitting and coalescing
 * by array insertion and removal) is driven by the same random operations
 * as the real allocator: allocations of skewed sizes (tiny, log-uniform,
 * exact fits of existing free chunks, half-sizes at the split boundary,
 * huge and impossible sizes, 0), frees by handle and by address, double
 * and bogus frees, region additions (some overlapping, misaligned,
 * adjacent), region removals, tags and lookups.  After every step the
 * return codes, the chosen address, the chunk's metadata and every
 * statistic must agree; every 32 steps the whole chunk list is compared.
 *
 * bfc_check() is O(everything) (it also scans all size classes and hash
 * slots), so it runs after every step for the first FULL_CHECK_STEPS steps
 * of each run and every CHECK_EVERY steps (and at the end) afterwards;
 * with it every step the default run would take minutes under ASan.
 *
 * Each variant (parameter set) runs SEEDS seeds of OPS operations: about
 * 3.1 million operations in all (17 variants).  A failure prints variant, seed and step.
 *   BFC_MODEL_SEED=n   run only seed n (in every variant)
 *   BFC_MODEL_OPS=n    operations per seed
 */
#include "bfc_model.h"
#include "bfc_internal.h"	/* note_crowding(): bfc__class_of() */

#define SEEDS			3
#define OPS			60000
#define FULL_CHECK_STEPS	6000
#define CHECK_EVERY		97
#define COMPARE_EVERY		32

/* The test ------------------------------------------------------------------ */

FIXTURE(model) {
	struct bfc *b;
	struct model m;
	struct { bfc_handle_t h; uint64_t addr; } *live;
	size_t nlive;
	uint64_t rng, seed, step;
	/* What the run exercised, printed at its end. */
	uint64_t adds, adds_refused, removes, removes_busy, max_chunks;
	uint32_t max_in_class;	/* free chunks in one size class */
};

FIXTURE_VARIANT(model) {
	const char *label;
	uint64_t granularity;
	uint32_t split_ratio;
	uint64_t split_threshold;
	uint64_t max_split_size;
	uint32_t flags;
	uint32_t policy;	/* BFC_POLICY_* */
	uint64_t small_size;	/* 0: the default */
	uint64_t span;		/* region slot size */
	uint64_t grid;		/* base of the slot grid; 0 = at the top */
	/* Crowded classes: most sizes from a few small ones, many live
	 * chunks (target), and a start as a checkerboard, so that classes
	 * hold hundreds to thousands of free chunks: deep class trees.
	 */
	uint32_t few_sizes;
	uint32_t target;	/* live chunks to grow to; 0: by seed */
};

FIXTURE_VARIANT_ADD(model, tf_256) {
	.label = "tf_256",
	.granularity = 256, .split_ratio = 2, .split_threshold = 128 * MiB,
	.span = 512 * MiB, .grid = 1ull << 40,
};
FIXTURE_VARIANT_ADD(model, always_split_4096) {
	.label = "always_split_4096",
	.granularity = 4096, .split_ratio = 0, .split_threshold = 4096,
	.span = 64 * MiB, .grid = 1ull << 44,
};
FIXTURE_VARIANT_ADD(model, max_split_256) {
	.label = "max_split_256",
	.granularity = 256, .split_ratio = 2, .split_threshold = 1 * MiB,
	.max_split_size = 2 * MiB, .span = 16 * MiB, .grid = 1ull << 32,
};
FIXTURE_VARIANT_ADD(model, merge_512_top) {
	.label = "merge_512_top",
	.granularity = 512, .split_ratio = 2, .split_threshold = 128 * MiB,
	.flags = BFC_MERGE_ADJACENT_REGIONS, .span = 4 * MiB, .grid = 0,
};
FIXTURE_VARIANT_ADD(model, merge_always_64_max_split) {
	.label = "merge_always_64_max_split",
	.granularity = 64, .split_ratio = 0, .split_threshold = 64,
	.max_split_size = 64 * KiB, .flags = BFC_MERGE_ADJACENT_REGIONS,
	.span = 1 * MiB, .grid = 1ull << 36,
};
FIXTURE_VARIANT_ADD(model, crowded_classes_256) {
	.label = "crowded_classes_256",
	.granularity = 256, .split_ratio = 2, .split_threshold = 128 * MiB,
	.span = 4 * MiB, .grid = 1ull << 40, .few_sizes = 1, .target = 8000,
};
FIXTURE_VARIANT_ADD(model, byte_ratio3_at_zero) {
	.label = "byte_ratio3_at_zero",
	.granularity = 1, .split_ratio = 3, .split_threshold = 100000,
	.span = 1 * MiB, .grid = 1,	/* slot 0 starts at address 0 */
};

/* The placement policies other than TF's, each with parameters that
 * reach both ends of a chunk and the split rule they override.
 */
FIXTURE_VARIANT_ADD(model, exact_tf_rule_256) {
	.label = "exact_tf_rule_256", .policy = BFC_POLICY_EXACT,
	.granularity = 256, .split_ratio = 2, .split_threshold = 128 * MiB,
	.span = 512 * MiB, .grid = 1ull << 40,
};
FIXTURE_VARIANT_ADD(model, seg_4096_merge) {
	.label = "seg_4096_merge", .policy = BFC_POLICY_SEGREGATE,
	.granularity = 4096, .split_ratio = 0, .split_threshold = 4096,
	.flags = BFC_MERGE_ADJACENT_REGIONS, .span = 64 * MiB, .grid = 1ull << 44,
};
FIXTURE_VARIANT_ADD(model, seg_small_64k_max_split) {
	.label = "seg_small_64k_max_split", .policy = BFC_POLICY_SEGREGATE,
	.small_size = 64 * KiB, .granularity = 256, .split_ratio = 2,
	.split_threshold = 1 * MiB, .max_split_size = 2 * MiB,
	.span = 16 * MiB, .grid = 1ull << 32,
};
FIXTURE_VARIANT_ADD(model, half_512_top) {
	.label = "half_512_top", .policy = BFC_POLICY_HALF,
	.granularity = 512, .split_ratio = 2, .split_threshold = 128 * MiB,
	.flags = BFC_MERGE_ADJACENT_REGIONS, .span = 4 * MiB, .grid = 0,
};
FIXTURE_VARIANT_ADD(model, half_crowded_256) {
	.label = "half_crowded_256", .policy = BFC_POLICY_HALF,
	.granularity = 256, .split_ratio = 2, .split_threshold = 128 * MiB,
	.span = 4 * MiB, .grid = 1ull << 40, .few_sizes = 1, .target = 2000,
};
FIXTURE_VARIANT_ADD(model, age_512_top) {
	.label = "age_512_top", .policy = BFC_POLICY_AGE,
	.granularity = 512, .split_ratio = 2, .split_threshold = 128 * MiB,
	.flags = BFC_MERGE_ADJACENT_REGIONS, .span = 4 * MiB, .grid = 0,
};
FIXTURE_VARIANT_ADD(model, age_crowded_256) {
	.label = "age_crowded_256", .policy = BFC_POLICY_AGE,
	.granularity = 256, .split_ratio = 2, .split_threshold = 128 * MiB,
	.span = 4 * MiB, .grid = 1ull << 40, .few_sizes = 1, .target = 2000,
};
FIXTURE_VARIANT_ADD(model, age_module_4096) {
	.label = "age_module_4096", .policy = BFC_POLICY_AGE,
	.granularity = 4096, .split_ratio = 0, .split_threshold = 4096,
	.span = 16 * MiB, .grid = 1ull << 32,
};
/* The module's pool on a 64 KiB-page arm64 kernel (kmod/pool.c: page
 * granularity, always split, adjacent regions merged; regions are whole
 * 2 MiB blocks, 32 granules each).
 */
FIXTURE_VARIANT_ADD(model, module_64k_pages) {
	.label = "module_64k_pages",
	.granularity = 64 * KiB, .split_ratio = 0, .split_threshold = 64 * KiB,
	.flags = BFC_MERGE_ADJACENT_REGIONS, .span = 256 * MiB, .grid = 1ull << 44,
};
FIXTURE_VARIANT_ADD(model, age_byte_at_zero) {
	.label = "age_byte_at_zero", .policy = BFC_POLICY_AGE,
	.granularity = 1, .split_ratio = 3, .split_threshold = 100000,
	.span = 1 * MiB, .grid = 1,
};
FIXTURE_VARIANT_ADD(model, half_byte_at_zero) {
	.label = "half_byte_at_zero", .policy = BFC_POLICY_HALF,
	.granularity = 1, .split_ratio = 3, .split_threshold = 100000,
	.span = 1 * MiB, .grid = 1,
};

FIXTURE_SETUP(model)
{
	memset(self, 0, sizeof(*self));
}

FIXTURE_TEARDOWN(model)
{
	bfc_destroy(self->b);
	free(self->m.c);
	free(self->live);
}

static uint64_t rnd(uint64_t *s)	/* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/* Fail with the run's coordinates. */
#define MASSERT(cond, fmt, ...)						\
	do {								\
		if (!(cond)) {						\
			TH_LOG("variant %s seed %llu step %llu: " fmt,	\
			       variant->label, (unsigned long long)self->seed, \
			       (unsigned long long)self->step, ##__VA_ARGS__); \
			ASSERT_TRUE(cond);				\
		}							\
	} while (0)

#define MCHECK()							\
	do {								\
		static char _rep[16384];				\
		uint32_t _nv = bfc_check(self->b, _rep, sizeof(_rep));	\
		MASSERT(_nv == 0, "bfc_check: %u violation(s):\n%s", _nv, _rep); \
	} while (0)

static uint64_t slot_base(const FIXTURE_VARIANT(model) *v, uint32_t k)
{
	uint64_t grid = v->grid == 1 ? 0 :
			v->grid ? v->grid : UINT64_MAX - (NSLOTS + 1) * v->span + 1;

	return grid + k * v->span;
}

/* A size of a random free chunk of the model (0 if none). */
static uint64_t free_size(FIXTURE_DATA(model) *self)
{
	size_t i, n = self->m.n, start;

	if (!n)
		return 0;
	start = rnd(&self->rng) % n;
	for (i = 0; i < n; i++) {
		const struct mchunk *c = &self->m.c[(start + i) % n];

		if (!c->used)
			return c->size;
	}
	return 0;
}

static uint64_t pick_size(FIXTURE_DATA(model) *self,
			  const FIXTURE_VARIANT(model) *v)
{
	uint64_t g = v->granularity, span = v->span, x = rnd(&self->rng), s;
	uint32_t r = x % 100;

	x >>= 8;
	if (v->few_sizes && r >= 4 && r < 85) {
		const uint64_t few[] = { 1, 1, 2, 3, 4 };

		return few[x % 5] * g - (x >> 3) % g;
	}
	if (r < 2)
		return 0;
	if (r < 4) {
		const uint64_t huge[] = { UINT64_MAX, UINT64_MAX - g + 1,
					  UINT64_MAX - g, 1ull << 63, 64 * span };
		return huge[x % 5];
	}
	if (r < 40)
		return 1 + x % (8 * g);
	if (r < 60)
		return 1 + (x >> 6) % (1ull << (1 + x % (63 - __builtin_clzll(span))));
	s = free_size(self);
	if (r < 75 && s)		/* exact fit, after rounding */
		return s - (x % g < s ? x % g : 0);
	if (r < 85 && s) {		/* around the split boundary */
		const uint64_t c[] = { s / 2, s / 2 + 1, (s + 1) / 2,
				       s / 2 > g ? s / 2 - g : 1, s / 3 + 1 };
		return c[x % 5] ? c[x % 5] : 1;
	}
	if (r < 95)
		return 1 + x % (span / 4);
	return 1 + x % span;
}

static int do_alloc(struct __test_metadata *_metadata,
		     FIXTURE_DATA(model) *self,
		     const FIXTURE_VARIANT(model) *variant, uint64_t size)
{
	bfc_handle_t h = 0;
	uint64_t a = 0, ma = 0, from = 0, prev, next;
	/* Both entry points, by the size's last bit (no extra random draw). */
	int rc = size & 1 ? bfc_alloc_from(self->b, size, &h, &a, &from) :
			    bfc_alloc(self->b, size, &h, &a);
	int mrc = m_alloc(&self->m, size, &ma);
	struct bfc_chunk_info i;
	const struct mchunk *c;

	MASSERT(rc == mrc, "alloc(%llu): %d, model %d", (unsigned long long)size,
		rc, mrc);
	if (rc)
		return rc;
	MASSERT(a == ma, "alloc(%llu): at 0x%llx, model 0x%llx",
		(unsigned long long)size, (unsigned long long)a,
		(unsigned long long)ma);
	c = &self->m.c[m_find(&self->m, a)];
	MASSERT(bfc_chunk_info(self->b, h, &i) == 0, "chunk_info(%u)", h);
	MASSERT(i.addr == a && i.size == c->size && i.requested == size &&
		i.in_use && i.alloc_id == c->alloc_id && i.tag == 0 &&
		i.region_id == c->region,
		"alloc(%llu): chunk size %llu (model %llu), id %llu (model %llu)",
		(unsigned long long)size, (unsigned long long)i.size,
		(unsigned long long)c->size, (unsigned long long)i.alloc_id,
		(unsigned long long)c->alloc_id);
	/* bfc_alloc_from: the free chunk it was cut from is the chunk and
	 * the free chunks now beside it.
	 */
	MASSERT(bfc_free_neighbours(self->b, h, &prev, &next) == 0,
		"free_neighbours(%u)", h);
	MASSERT(!(size & 1) || from == prev + i.size + next,
		"alloc_from(%llu): from %llu, chunk %llu + free beside %llu + %llu",
		(unsigned long long)size, (unsigned long long)from,
		(unsigned long long)i.size, (unsigned long long)prev,
		(unsigned long long)next);
	self->live[self->nlive].h = h;
	self->live[self->nlive].addr = a;
	self->nlive++;
	return 0;
}

/* Free live chunk k (by handle or by address), sometimes twice. */
static void do_free_at(struct __test_metadata *_metadata,
		       FIXTURE_DATA(model) *self,
		       const FIXTURE_VARIANT(model) *variant, size_t k)
{
	bfc_handle_t h = self->live[k].h;
	uint64_t a = self->live[k].addr, x = rnd(&self->rng);
	bfc_handle_t lh = 0;
	int rc, lrc, mrc;

	lrc = bfc_lookup(self->b, a, &lh);
	MASSERT(lrc == 0 && lh == h, "lookup(0x%llx): %d %u, expected %u",
		(unsigned long long)a, lrc, lh, h);
	rc = x & 1 ? bfc_free(self->b, h) : bfc_free_addr(self->b, a);
	mrc = m_free(&self->m, a);
	MASSERT(rc == 0 && mrc == 0, "free(%u @ 0x%llx): %d", h,
		(unsigned long long)a, rc);
	self->live[k] = self->live[--self->nlive];
	if (x % 16 == 2) {		/* double free, right away */
		rc = x & 16 ? bfc_free(self->b, h) : bfc_free_addr(self->b, a);
		mrc = m_free(&self->m, a);
		MASSERT(rc == -EINVAL && mrc == -EINVAL,
			"double free(%u @ 0x%llx): %d", h, (unsigned long long)a, rc);
		lrc = bfc_lookup(self->b, a, &lh);
		MASSERT(lrc == -ENOENT, "lookup(0x%llx) after free: %d",
			(unsigned long long)a, lrc);
	}
}

static void do_free(struct __test_metadata *_metadata,
		    FIXTURE_DATA(model) *self,
		    const FIXTURE_VARIANT(model) *variant)
{
	do_free_at(_metadata, self, variant, rnd(&self->rng) % self->nlive);
}

static void do_bad_free(struct __test_metadata *_metadata,
			FIXTURE_DATA(model) *self,
			const FIXTURE_VARIANT(model) *variant)
{
	uint64_t x = rnd(&self->rng), a = 0;
	int rc;

	switch (x % 4) {
	case 0:
		rc = bfc_free(self->b, x & 8 ? 0 : (bfc_handle_t)(0xfffffff0u + x % 16));
		break;
	case 1:		/* below the grid, or beyond it */
		a = x & 8 ? slot_base(variant, 0) - variant->granularity :
			    slot_base(variant, NSLOTS) + x % variant->span;
		rc = bfc_free_addr(self->b, a);
		break;
	default:	/* inside a live chunk, or an address nobody has */
		a = self->nlive ? self->live[x % self->nlive].addr : 0;
		a += 1 + (x >> 8) % variant->granularity;
		rc = bfc_free_addr(self->b, a);
		break;
	}
	if (x % 4 && m_find(&self->m, a) < self->m.n &&
	    self->m.c[m_find(&self->m, a)].used) {
		/* We hit a live chunk: it is gone now; follow suit. */
		int mrc = m_free(&self->m, a);
		size_t k;

		MASSERT(rc == 0 && mrc == 0, "free_addr(0x%llx) of a live chunk: %d",
			(unsigned long long)a, rc);
		for (k = 0; self->live[k].addr != a; k++)
			;
		self->live[k] = self->live[--self->nlive];
		return;
	}
	MASSERT(rc == -EINVAL, "bad free (kind %llu, 0x%llx): %d",
		(unsigned long long)(x % 4), (unsigned long long)a, rc);
	self->m.st.bad_frees++;
}

static void do_add(struct __test_metadata *_metadata,
		   FIXTURE_DATA(model) *self,
		   const FIXTURE_VARIANT(model) *variant)
{
	uint64_t g = variant->granularity, span = variant->span;
	uint64_t x = rnd(&self->rng), y = rnd(&self->rng);
	uint64_t off = x & 1 ? 0 : (y % (span / g / 2)) * g;
	uint64_t base = slot_base(variant, (x >> 1) % NSLOTS) + off;
	uint64_t size = x & 2 ? span - off : (1 + (y >> 32) % ((span - off) / g)) * g;
	uint32_t id = 0, mid = 0;
	int rc, mrc;

	if (x % 64 == 4)
		size *= 2;		/* into the next slot */
	else if (x % 64 == 5 && g > 1)
		base += g / 2;		/* misaligned */
	else if (x % 64 == 6)
		size = 0;
	rc = bfc_add_region(self->b, base, size, &id);
	mrc = m_add(&self->m, base, size, &mid);
	self->adds += !rc;
	self->adds_refused += !!rc;
	MASSERT(rc == mrc && id == (rc ? 0 : mid),
		"add_region(0x%llx, %llu): %d id %u, model %d id %u",
		(unsigned long long)base, (unsigned long long)size, rc, id, mrc, mid);
}

static void do_remove(struct __test_metadata *_metadata,
		      FIXTURE_DATA(model) *self,
		      const FIXTURE_VARIANT(model) *variant)
{
	uint64_t x = rnd(&self->rng), base = 0, size = 0, mb = 0, ms = 0;
	uint32_t id = self->m.nr && x % 8 ? self->m.r[x % self->m.nr].id :
					   (uint32_t)(x >> 40);
	int rc = bfc_remove_region(self->b, id, &base, &size);
	int mrc = m_remove(&self->m, id, &mb, &ms);

	self->removes += !rc;
	self->removes_busy += rc == -EBUSY;
	MASSERT(rc == mrc && base == mb && size == ms,
		"remove_region(%u): %d [0x%llx +%llu], model %d [0x%llx +%llu]",
		id, rc, (unsigned long long)base, (unsigned long long)size, mrc,
		(unsigned long long)mb, (unsigned long long)ms);
}

struct released {
	uint64_t base[4 * NSLOTS], size[4 * NSLOTS];
	size_t n;
};

static void release_cb(void *ctx, uint64_t base, uint64_t size)
{
	struct released *r = ctx;

	if (r->n < 4 * NSLOTS) {
		r->base[r->n] = base;
		r->size[r->n] = size;
	}
	r->n++;
}

static void do_remove_free(struct __test_metadata *_metadata,
			   FIXTURE_DATA(model) *self,
			   const FIXTURE_VARIANT(model) *variant)
{
	struct released got = { .n = 0 };
	uint64_t total = bfc_remove_free_regions(self->b, release_cb, &got);
	uint64_t mtotal = 0;
	size_t i = 0, k = 0;

	while (i < self->m.nr) {	/* in address order, like the core */
		size_t c = m_wholly_free(&self->m, &self->m.r[i]);

		if (c == self->m.n) {
			i++;
			continue;
		}
		MASSERT(k < got.n && got.base[k] == self->m.r[i].base &&
			got.size[k] == self->m.r[i].size,
			"remove_free_regions: release #%zu differs", k);
		mtotal += self->m.r[i].size;
		k++;
		m_erase(&self->m, c);
		m_region_erase(&self->m, &self->m.r[i]);
	}
	MASSERT(total == mtotal && got.n == k,
		"remove_free_regions: %llu bytes in %zu, model %llu in %zu",
		(unsigned long long)total, got.n, (unsigned long long)mtotal, k);
}

struct cmp_ctx {
	const struct model *m;
	size_t i;
	bool ok;
};

static int cmp_cb(void *ctx, const struct bfc_chunk_info *c)
{
	struct cmp_ctx *x = ctx;
	const struct mchunk *mc = &x->m->c[x->i];

	if (x->i >= x->m->n || c->addr != mc->addr || c->size != mc->size ||
	    c->in_use != mc->used || c->region_id != mc->region ||
	    c->requested != (mc->used ? mc->requested : 0) ||
	    c->alloc_id != (mc->used ? mc->alloc_id : 0) ||
	    c->tag != (mc->used ? mc->tag : 0)) {
		x->ok = false;
		return 1;
	}
	x->i++;
	return 0;
}

static void compare_all(struct __test_metadata *_metadata,
			FIXTURE_DATA(model) *self,
			const FIXTURE_VARIANT(model) *variant)
{
	struct cmp_ctx x = { .m = &self->m, .ok = true };

	bfc_for_each_chunk(self->b, cmp_cb, &x);
	MASSERT(x.ok && x.i == self->m.n,
		"chunk lists differ at #%zu (model has %zu chunks)", x.i, self->m.n);
}

/* The most free chunks one size class holds now, into max_in_class. */
struct crowd {
	const struct bfc *b;
	uint32_t n[BFC_NR_CLASSES];
};

static int crowd_cb(void *ctx, const struct bfc_chunk_info *c)
{
	struct crowd *x = ctx;

	if (!c->in_use)
		x->n[bfc__class_of(x->b, c->size)]++;
	return 0;
}

static void note_crowding(FIXTURE_DATA(model) *self)
{
	static struct crowd x;
	uint32_t c;

	memset(&x, 0, sizeof(x));
	x.b = self->b;
	bfc_for_each_chunk(self->b, crowd_cb, &x);
	for (c = 0; c < BFC_NR_CLASSES; c++)
		if (x.n[c] > self->max_in_class)
			self->max_in_class = x.n[c];
}

static void compare_stats(struct __test_metadata *_metadata,
			  FIXTURE_DATA(model) *self,
			  const FIXTURE_VARIANT(model) *variant)
{
	struct bfc_stats s, ms;

	bfc_get_stats(self->b, &s);
	m_stats_after_op(&self->m, &ms);
#define SAME(f) MASSERT(s.f == ms.f, "stats." #f " %llu, model %llu", \
			(unsigned long long)s.f, (unsigned long long)ms.f);
	BFC_MODEL_STATS(SAME)
#undef SAME
}

/* Crowded classes start as a checkerboard: chunks of one granule, up to
 * target of them or until the first regions are full, every other one
 * by address freed, so one class holds thousands of chunks (a red-black tree more
 * than 11 levels deep) that the random steps then wear down.  The frees go
 * from the top down: do_free_at() moves the last live entry into the freed
 * one's place, which is then above every index still to free.
 */
static void checkerboard(struct __test_metadata *_metadata,
			 FIXTURE_DATA(model) *self,
			 const FIXTURE_VARIANT(model) *variant)
{
	size_t n0 = self->nlive, i;

	while (self->nlive < n0 + variant->target &&
	       !do_alloc(_metadata, self, variant, variant->granularity))
		compare_stats(_metadata, self, variant);
	for (i = self->nlive; i-- > n0; ) {
		/* every other one by address: policies fill a range from
		 * either end, some from both (age)
		 */
		if ((self->live[i].addr / variant->granularity) % 2)
			continue;
		do_free_at(_metadata, self, variant, i);
		compare_stats(_metadata, self, variant);
	}
	MCHECK();
}

static void run(struct __test_metadata *_metadata, FIXTURE_DATA(model) *self,
		const FIXTURE_VARIANT(model) *variant, uint64_t seed, uint64_t ops)
{
	static const uint64_t targets[] = { 16, 160, 600 };
	uint64_t target = variant->target ? variant->target : targets[seed % 3];
	struct bfc_params p;
	uint32_t i;

	bfc_destroy(self->b);
	free(self->m.c);
	free(self->live);
	memset(self, 0, sizeof(*self));
	self->seed = seed;
	self->rng = seed * 0x2545f4914f6cdd1dull + 1;
	bfc_params_default(&p, variant->granularity);
	p.split_ratio = variant->split_ratio;
	p.split_threshold = variant->split_threshold;
	p.max_split_size = variant->max_split_size;
	p.flags = variant->flags;
	p.policy = variant->policy;
	if (variant->small_size)
		p.small_size = variant->small_size;
	ASSERT_EQ(0, bfc_create(&self->b, &p));
	self->m.p = p;
	self->m.next_id = 1;
	self->m.next_alloc_id = 1;
	self->live = calloc(ops + 1, sizeof(*self->live));
	ASSERT_NE(NULL, self->live);
	for (i = 0; i < 2; i++)
		do_add(_metadata, self, variant);
	if (variant->few_sizes)
		checkerboard(_metadata, self, variant);

	for (self->step = 0; self->step < ops; self->step++) {
		uint64_t x = rnd(&self->rng) % 1000;
		bool grow = self->nlive < target;

		if (x < (grow ? 600u : 380u)) {
			/* Like TF's Extend: add a region when out of memory. */
			if (do_alloc(_metadata, self, variant,
				     pick_size(self, variant)) == -ENOMEM &&
			    x % 3 == 0)
				do_add(_metadata, self, variant);
		} else if (x < 960 && self->nlive) {
			do_free(_metadata, self, variant);
		} else if (x < 975) {
			do_add(_metadata, self, variant);
		} else if (x < 985) {
			do_remove(_metadata, self, variant);
		} else if (x < 993) {
			do_bad_free(_metadata, self, variant);
		} else if (x == 993) {
			do_remove_free(_metadata, self, variant);
		} else if (self->nlive) {	/* tags */
			size_t k = x % self->nlive;
			uint64_t tag = rnd(&self->rng);
			size_t c = m_find(&self->m, self->live[k].addr);

			MASSERT(bfc_set_tag(self->b, self->live[k].h, tag) == 0,
				"set_tag(%u)", self->live[k].h);
			self->m.c[c].tag = tag;
		}
		compare_stats(_metadata, self, variant);
		if (self->m.n > self->max_chunks)
			self->max_chunks = self->m.n;
		if (self->step % COMPARE_EVERY == 0) {
			compare_all(_metadata, self, variant);
			note_crowding(self);
		}
		if (self->step < FULL_CHECK_STEPS || self->step % CHECK_EVERY == 0)
			MCHECK();
	}
	compare_all(_metadata, self, variant);
	MCHECK();
	TH_LOG("%s seed %llu: %llu ops, %llu allocs (%llu failed), %llu frees, %llu bad, regions +%llu (%llu refused) -%llu (%llu busy), up to %llu chunks, up to %u free in one class",
	       variant->label, (unsigned long long)seed, (unsigned long long)ops,
	       (unsigned long long)self->m.st.nr_allocs,
	       (unsigned long long)self->m.st.failed_allocs,
	       (unsigned long long)self->m.st.nr_frees,
	       (unsigned long long)self->m.st.bad_frees,
	       (unsigned long long)self->adds, (unsigned long long)self->adds_refused,
	       (unsigned long long)self->removes,
	       (unsigned long long)self->removes_busy,
	       (unsigned long long)self->max_chunks, self->max_in_class);
	if (variant->few_sizes)
		MASSERT(self->max_in_class >= variant->target / 4,
			"at most %u free chunks in one class, not the crowd this variant is for",
			self->max_in_class);
	/* Drain: everything freed, every region released. */
	while (self->nlive)
		do_free(_metadata, self, variant);
	do_remove_free(_metadata, self, variant);
	compare_stats(_metadata, self, variant);
	MCHECK();
	MASSERT(self->m.n == 0 && self->m.nr == 0, "regions left after drain");
}

TEST_F_TIMEOUT(model, random, 300)
{
	uint64_t ops = env_u64("BFC_MODEL_OPS", OPS);
	const char *one = getenv("BFC_MODEL_SEED");
	uint64_t s;

	if (one && *one) {
		run(_metadata, self, variant, strtoull(one, NULL, 0), ops);
		return;
	}
	for (s = 1; s <= SEEDS; s++)
		run(_metadata, self, variant, s, ops);
}

TEST_HARNESS_MAIN
