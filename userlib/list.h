/* SPDX-License-Identifier: MIT */
/*
 * list.h - the one doubly-linked list of libgpupool: intrusive and circular
 * around a head, as the kernel's list_head.  A node that is on no list has
 * NULL links (zeroed memory is such a node); a head must be initialised.
 */
#ifndef GPUPOOL_USERLIB_LIST_H
#define GPUPOOL_USERLIB_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct gp_list {
	struct gp_list *next, *prev;
};

static inline void gp_list_init(struct gp_list *head)
{
	head->next = head->prev = head;
}

static inline bool gp_list_empty(const struct gp_list *head)
{
	return head->next == head;
}

/* Whether node is on a list. */
static inline bool gp_list_linked(const struct gp_list *node)
{
	return node->next != NULL;
}

static inline void gp_list_insert(struct gp_list *node, struct gp_list *prev,
				  struct gp_list *next)
{
	node->prev = prev;
	node->next = next;
	prev->next = node;
	next->prev = node;
}

/* At the front. */
static inline void gp_list_add(struct gp_list *head, struct gp_list *node)
{
	gp_list_insert(node, head, head->next);
}

/* At the back. */
static inline void gp_list_add_tail(struct gp_list *head, struct gp_list *node)
{
	gp_list_insert(node, head->prev, head);
}

static inline void gp_list_del(struct gp_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->next = node->prev = NULL;
}

#define gp_list_entry(node, type, member) \
	((type *)(void *)((char *)(node) - offsetof(type, member)))

/* The first entry, or NULL when the list is empty. */
#define gp_list_first(head, type, member) \
	(gp_list_empty(head) ? NULL : gp_list_entry((head)->next, type, member))

/* Every node; pos must not be removed inside the loop. */
#define gp_list_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif /* GPUPOOL_USERLIB_LIST_H */
