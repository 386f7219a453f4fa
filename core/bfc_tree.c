// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_tree.c - the free-chunk index: segregated size classes with a
 * two-level bitmap, and per class a red-black tree of free chunks ordered
 * by (size, addr), linked by uint32 handles, with a cached minimum.
 *
 * The trees are CLRS red-black trees with a sentinel: chunk slot 0 is the
 * nil node (black; its parent link is written during deletion, as in CLRS).
 * The common cases that need no tree (a class of one chunk, a fit that is
 * a class minimum) are inline in bfc_internal.h; this file has the rest.
 */
#include "bfc_internal.h"

#define LEFT(x)		(C[x].t.left)
#define RIGHT(x)	(C[x].t.right)
#define PARENT(x)	(C[x].t.parent)
#define IS_RED(x)	((C[x].flags & BFC_CF_RED) != 0)
#define SET_RED(x)	(C[x].flags |= BFC_CF_RED)
#define SET_BLACK(x)	(C[x].flags &= (uint8_t)~BFC_CF_RED)

static void tree_rotate_left(struct bfc_chunk *C, uint32_t *root, uint32_t x)
{
	uint32_t y = RIGHT(x);
	uint32_t p = PARENT(x);

	RIGHT(x) = LEFT(y);
	if (LEFT(y))
		PARENT(LEFT(y)) = x;
	PARENT(y) = p;
	if (!p)
		*root = y;
	else if (x == LEFT(p))
		LEFT(p) = y;
	else
		RIGHT(p) = y;
	LEFT(y) = x;
	PARENT(x) = y;
}

static void tree_rotate_right(struct bfc_chunk *C, uint32_t *root, uint32_t x)
{
	uint32_t y = LEFT(x);
	uint32_t p = PARENT(x);

	LEFT(x) = RIGHT(y);
	if (RIGHT(y))
		PARENT(RIGHT(y)) = x;
	PARENT(y) = p;
	if (!p)
		*root = y;
	else if (x == RIGHT(p))
		RIGHT(p) = y;
	else
		LEFT(p) = y;
	RIGHT(y) = x;
	PARENT(x) = y;
}

static void tree_insert(struct bfc_chunk *C, uint32_t *root, uint32_t z)
{
	uint32_t x = *root, p = 0;
	bool left = false;

	while (x) {
		p = x;
		left = bfc__key_less(&C[z], &C[x]);
		x = left ? LEFT(x) : RIGHT(x);
	}
	PARENT(z) = p;
	LEFT(z) = 0;
	RIGHT(z) = 0;
	SET_RED(z);
	if (!p)
		*root = z;
	else if (left)
		LEFT(p) = z;
	else
		RIGHT(p) = z;

	while (IS_RED(PARENT(z))) {
		uint32_t zp = PARENT(z), zpp = PARENT(zp), y;

		if (zp == LEFT(zpp)) {
			y = RIGHT(zpp);
			if (IS_RED(y)) {
				SET_BLACK(zp);
				SET_BLACK(y);
				SET_RED(zpp);
				z = zpp;
				continue;
			}
			if (z == RIGHT(zp)) {
				z = zp;
				tree_rotate_left(C, root, z);
				zp = PARENT(z);
			}
			SET_BLACK(zp);
			SET_RED(zpp);
			tree_rotate_right(C, root, zpp);
		} else {
			y = LEFT(zpp);
			if (IS_RED(y)) {
				SET_BLACK(zp);
				SET_BLACK(y);
				SET_RED(zpp);
				z = zpp;
				continue;
			}
			if (z == LEFT(zp)) {
				z = zp;
				tree_rotate_right(C, root, z);
				zp = PARENT(z);
			}
			SET_BLACK(zp);
			SET_RED(zpp);
			tree_rotate_left(C, root, zpp);
		}
	}
	SET_BLACK(*root);
}

/* Replace the subtree at u by the one at v (v may be nil: its parent link
 * is then set, which the delete fix-up relies on).
 */
static void tree_transplant(struct bfc_chunk *C, uint32_t *root, uint32_t u,
		       uint32_t v)
{
	uint32_t p = PARENT(u);

	if (!p)
		*root = v;
	else if (u == LEFT(p))
		LEFT(p) = v;
	else
		RIGHT(p) = v;
	PARENT(v) = p;
}

static void tree_delete_fixup(struct bfc_chunk *C, uint32_t *root, uint32_t x)
{
	while (x != *root && !IS_RED(x)) {
		uint32_t xp = PARENT(x), w;

		if (x == LEFT(xp)) {
			w = RIGHT(xp);
			if (IS_RED(w)) {
				SET_BLACK(w);
				SET_RED(xp);
				tree_rotate_left(C, root, xp);
				w = RIGHT(xp);
			}
			if (!IS_RED(LEFT(w)) && !IS_RED(RIGHT(w))) {
				SET_RED(w);
				x = xp;
				continue;
			}
			if (!IS_RED(RIGHT(w))) {
				SET_BLACK(LEFT(w));
				SET_RED(w);
				tree_rotate_right(C, root, w);
				w = RIGHT(xp);
			}
			if (IS_RED(xp))
				SET_RED(w);
			else
				SET_BLACK(w);
			SET_BLACK(xp);
			SET_BLACK(RIGHT(w));
			tree_rotate_left(C, root, xp);
		} else {
			w = LEFT(xp);
			if (IS_RED(w)) {
				SET_BLACK(w);
				SET_RED(xp);
				tree_rotate_right(C, root, xp);
				w = LEFT(xp);
			}
			if (!IS_RED(LEFT(w)) && !IS_RED(RIGHT(w))) {
				SET_RED(w);
				x = xp;
				continue;
			}
			if (!IS_RED(LEFT(w))) {
				SET_BLACK(RIGHT(w));
				SET_RED(w);
				tree_rotate_left(C, root, w);
				w = LEFT(xp);
			}
			if (IS_RED(xp))
				SET_RED(w);
			else
				SET_BLACK(w);
			SET_BLACK(xp);
			SET_BLACK(LEFT(w));
			tree_rotate_right(C, root, xp);
		}
		x = *root;
	}
	SET_BLACK(x);
}

static void tree_delete(struct bfc_chunk *C, uint32_t *root, uint32_t z)
{
	uint32_t y = z, x;
	bool y_was_red = IS_RED(y);

	if (!LEFT(z)) {
		x = RIGHT(z);
		tree_transplant(C, root, z, x);
	} else if (!RIGHT(z)) {
		x = LEFT(z);
		tree_transplant(C, root, z, x);
	} else {
		y = RIGHT(z);
		while (LEFT(y))
			y = LEFT(y);
		y_was_red = IS_RED(y);
		x = RIGHT(y);
		if (PARENT(y) == z) {
			PARENT(x) = y;
		} else {
			tree_transplant(C, root, y, x);
			RIGHT(y) = RIGHT(z);
			PARENT(RIGHT(y)) = y;
		}
		tree_transplant(C, root, z, y);
		LEFT(y) = LEFT(z);
		PARENT(LEFT(y)) = y;
		if (IS_RED(z))
			SET_RED(y);
		else
			SET_BLACK(y);
	}
	if (!y_was_red)
		tree_delete_fixup(C, root, x);
	/* The sentinel may have been coloured or linked: reset it. */
	C[0].flags = 0;
	C[0].t.parent = 0;
}

/* Insert h (its cls set) into k, which is not empty. */
void bfc__tree_insert(struct bfc *b, struct bfc_class *k, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;

	if (bfc__key_less(&C[h], &C[k->min]))
		k->min = h;
	tree_insert(C, &k->root, h);
}

/* Remove h from k, which holds other chunks too. */
void bfc__tree_remove(struct bfc *b, struct bfc_class *k, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;

	if (k->min == h) {
		/* The minimum has no left child: its successor is the
		 * leftmost node of its right subtree, or else its parent.
		 */
		uint32_t s = RIGHT(h);

		if (s) {
			while (LEFT(s))
				s = LEFT(s);
		} else {
			s = PARENT(h);
		}
		k->min = s;
	}
	tree_delete(C, &k->root, h);
}

/* In-order neighbours (0 = none). */
static uint32_t tree_next(const struct bfc_chunk *C, uint32_t x)
{
	uint32_t p;

	if (RIGHT(x)) {
		for (x = RIGHT(x); LEFT(x); x = LEFT(x))
			;
		return x;
	}
	for (p = PARENT(x); p && x == RIGHT(p); p = PARENT(p))
		x = p;
	return p;
}

static uint32_t tree_prev(const struct bfc_chunk *C, uint32_t x)
{
	uint32_t p;

	if (LEFT(x)) {
		for (x = LEFT(x); RIGHT(x); x = RIGHT(x))
			;
		return x;
	}
	for (p = PARENT(x); p && x == LEFT(p); p = PARENT(p))
		x = p;
	return p;
}

/* bfc__class_replace where n belongs to o's class and o is not alone in
 * it: n takes o's node if it sorts between o's neighbours; false, changing
 * nothing, otherwise.
 */
bool bfc__tree_rekey(struct bfc *b, uint32_t o, uint32_t n)
{
	struct bfc_chunk *C = b->chunks;
	uint32_t c = C[o].cls, x;
	struct bfc_class *k = &b->cls[c];

	x = tree_prev(C, o);
	if (x && !bfc__key_less(&C[x], &C[n]))
		return false;
	x = tree_next(C, o);
	if (x && !bfc__key_less(&C[n], &C[x]))
		return false;
	if (n == o)
		return true;
	/* n takes o's links, colour and place. */
	C[n].cls = (uint16_t)c;
	C[n].t = C[o].t;
	C[n].flags = (uint8_t)((C[n].flags & ~BFC_CF_RED) | (C[o].flags & BFC_CF_RED));
	x = PARENT(o);
	if (!x)
		k->root = n;
	else if (LEFT(x) == o)
		LEFT(x) = n;
	else
		RIGHT(x) = n;
	if (LEFT(o))
		PARENT(LEFT(o)) = n;
	if (RIGHT(o))
		PARENT(RIGHT(o)) = n;
	if (k->min == o)
		k->min = n;
	return true;
}

/* The first non-empty class after c, or BFC_NO_CLASS. */
static uint32_t next_class(const struct bfc *b, uint32_t c)
{
	uint32_t fl = c >> BFC_SL_BITS;
	uint32_t sl = c & (BFC_SL_COUNT - 1);
	uint32_t bits = b->sl_map[fl] & (uint32_t)(~0ull << (sl + 1));
	uint64_t fbits;

	if (bits)
		return (fl << BFC_SL_BITS) + (uint32_t)__builtin_ctz(bits);
	fbits = b->fl_map & (~0ull << (fl + 1));
	if (!fbits)
		return BFC_NO_CLASS;
	fl = (uint32_t)__builtin_ctzll(fbits);
	return (fl << BFC_SL_BITS) + (uint32_t)__builtin_ctz(b->sl_map[fl]);
}

/* bfc__find_fit when class c's minimum is smaller than size. */
uint32_t bfc__find_fit_slow(const struct bfc *b, uint32_t c, uint64_t size)
{
	const struct bfc_chunk *C = b->chunks;
	const struct bfc_class *k = &b->cls[c];
	uint32_t x, best = 0;

	/* lower_bound((size, 0)) */
	for (x = k->root; x; ) {
		if (C[x].size >= size) {
			best = x;
			x = LEFT(x);
		} else {
			x = RIGHT(x);
		}
	}
	if (best)
		return best;
	c = next_class(b, c);
	return c == BFC_NO_CLASS ? 0 : b->cls[c].min;
}

uint32_t bfc__largest_free(const struct bfc *b)
{
	const struct bfc_chunk *C = b->chunks;
	uint32_t fl, c, x;

	if (!b->fl_map)
		return 0;
	fl = 63u - (uint32_t)__builtin_clzll(b->fl_map);
	c = (fl << BFC_SL_BITS) + 31u - (uint32_t)__builtin_clz(b->sl_map[fl]);
	for (x = b->cls[c].root; RIGHT(x); )
		x = RIGHT(x);
	return x;
}
