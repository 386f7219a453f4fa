// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * bfc_tree.c - the free-chunk index beyond a class of one chunk: per
 * class, a red-black tree of its free chunks ordered by (size, addr),
 * linked by uint32 handles, with a cached minimum.
 *
 * The trees are CLRS red-black trees with a sentinel: chunk slot 0 is the
 * nil node (black; its parent link is written during deletion, as in CLRS).
 * A class holding one chunk has no tree (its root is 0 and the chunk's
 * links are not kept); the inline code in bfc_internal.h handles it, and
 * this file makes the tree when a second chunk arrives and drops it when
 * one is left.
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

/* CLRS's RB-INSERT-FIXUP: z, new and red, may have a red parent; recolour
 * up the tree while its uncle is red, then rotate once or twice.
 */
static void tree_insert_fixup(struct bfc_chunk *C, uint32_t *root, uint32_t z)
{
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

/* CLRS's RB-INSERT: z goes where a search for its key ends, red; the
 * fix-up restores the colours.
 */
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
	tree_insert_fixup(C, root, z);
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

/* CLRS's RB-DELETE-FIXUP: x carries an extra black up the tree until a
 * red node or the root absorbs it.  Longer than the house's 60 lines, and
 * kept whole (scripts/func-length.sh): its four cases and their mirror
 * images read side by side, against the textbook; split, the loop's state
 * (x, its parent, its sibling) would pass through helpers, and the
 * mirror would no longer be visible.
 */
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

/* Class k's one chunk (its min) becomes a tree of one. */
static void tree_make(struct bfc_chunk *C, union bfc_class *k)
{
	uint32_t m = k->min;

	LEFT(m) = 0;
	RIGHT(m) = 0;
	PARENT(m) = 0;
	SET_BLACK(m);
	k->root = m;
}

/* Insert h (its cls set) into class kk, which is not empty. */
void bfc__tree_insert(struct bfc *b, uint32_t kk, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;
	union bfc_class *k = &b->cls[kk];

	if (!k->root)
		tree_make(C, k);
	if (bfc__key_less(&C[h], &C[k->min]))
		k->min = h;
	tree_insert(C, &k->root, h);
}

/* Remove h from class kk, which has a tree (two chunks or more). */
void bfc__tree_remove(struct bfc *b, uint32_t kk, uint32_t h)
{
	struct bfc_chunk *C = b->chunks;
	union bfc_class *k = &b->cls[kk];
	uint32_t r;

	BFC_ASSERT(k->root, "tree removal from a class without a tree");
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
	r = k->root;
	if (!LEFT(r) && !RIGHT(r)) {
		/* One chunk left: the class is back to its tree-less form. */
		BFC_ASSERT(k->min == r, "last chunk of a tree is not its minimum");
		k->root = 0;
	}
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

/* h, in a class tree, has a new key: does it still sort between its
 * in-order neighbours (so that its node can stay where it is)?
 */
bool bfc__tree_in_order(const struct bfc *b, uint32_t h)
{
	const struct bfc_chunk *C = b->chunks;
	uint32_t x = tree_prev(C, h);

	if (x && !bfc__key_less(&C[x], &C[h]))
		return false;
	x = tree_next(C, h);
	return !x || bfc__key_less(&C[h], &C[x]);
}

/* bfc__find_fit when class k's minimum is smaller than size: the tree's
 * lower_bound((size, 0)), else the minimum of the next non-empty class.
 */
uint32_t bfc__find_fit_slow(const struct bfc *b, uint32_t k, uint64_t size)
{
	const struct bfc_chunk *C = b->chunks;
	uint32_t x, best = 0;

	for (x = b->cls[k].root; x; ) {
		if (C[x].size >= size) {
			best = x;
			x = LEFT(x);
		} else {
			x = RIGHT(x);
		}
	}
	if (best)
		return best;
	if (k + 1 == BFC_NR_CLASSES)
		return 0;
	k = bfc__next_class(b, k + 1);
	return k == BFC_NO_CLASS ? 0 : b->cls[k].min;
}

uint32_t bfc__largest_free(const struct bfc *b)
{
	const struct bfc_chunk *C = b->chunks;
	uint32_t w, c, x;

	if (!b->word_map)
		return 0;
	w = 63u - (uint32_t)__builtin_clzll(b->word_map);
	c = (w << 6) + 63u - (uint32_t)__builtin_clzll(b->cls_map[w]);
	x = b->cls[c].root;
	if (!x)
		return b->cls[c].min;
	while (RIGHT(x))
		x = RIGHT(x);
	return x;
}
