/* SPDX-License-Identifier: MIT */
/*
 * An intrusive doubly linked list: O(1) insert at the front and removal of
 * any element (registries whose members come and go: an engine's graphs,
 * the threads' guard slots). The element embeds a weft_dlist_node;
 * weft_dlist_entry recovers it. Not thread-safe: every user guards its
 * list and says how in its field comment.
 */
#ifndef WEFT_COMMON_DLIST_H
#define WEFT_COMMON_DLIST_H

#include <stddef.h>

typedef struct weft_dlist_node {
  struct weft_dlist_node *prev, *next; /* the list's owner */
} weft_dlist_node;

typedef struct weft_dlist {
  weft_dlist_node *head; /* NULL when empty */
} weft_dlist;

#define weft_dlist_entry(node, type, member) \
  ((type *)(void *)((char *)(node) - offsetof(type, member)))

static inline void weft_dlist_push(weft_dlist *l, weft_dlist_node *n)
{
  n->prev = NULL;
  n->next = l->head;
  if (l->head)
    l->head->prev = n;
  l->head = n;
}

static inline void weft_dlist_remove(weft_dlist *l, weft_dlist_node *n)
{
  if (n->prev)
    n->prev->next = n->next;
  else
    l->head = n->next;
  if (n->next)
    n->next->prev = n->prev;
  n->prev = n->next = NULL;
}

#endif /* WEFT_COMMON_DLIST_H */
