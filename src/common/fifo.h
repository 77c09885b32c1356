/* SPDX-License-Identifier: MIT */
/*
 * The one internal FIFO: an intrusive singly linked queue. The element
 * embeds a weft_fifo_node; weft_fifo_entry recovers the element. Not
 * thread-safe: every user guards its queue (a mutex, or one owner thread)
 * and says which in its field comment. Push and pop are O(1).
 */
#ifndef WEFT_COMMON_FIFO_H
#define WEFT_COMMON_FIFO_H

#include <stdbool.h>
#include <stddef.h>

typedef struct weft_fifo_node {
  struct weft_fifo_node *next; /* the queue's owner: the next newer element */
} weft_fifo_node;

typedef struct weft_fifo {
  weft_fifo_node *head; /* the oldest element, NULL when empty */
  weft_fifo_node *tail; /* the newest, NULL when empty */
} weft_fifo;

#define WEFT_FIFO_INIT {NULL, NULL}
#define weft_fifo_entry(node, type, member) ((type *)(void *)((char *)(node) - offsetof(type, member)))

static inline void weft_fifo_init(weft_fifo *q)
{
  q->head = q->tail = NULL;
}

static inline bool weft_fifo_empty(const weft_fifo *q)
{
  return q->head == NULL;
}

static inline void weft_fifo_push(weft_fifo *q, weft_fifo_node *n)
{
  n->next = NULL;
  if (q->tail)
    q->tail->next = n;
  else
    q->head = n;
  q->tail = n;
}

/* The oldest element, or NULL. */
static inline weft_fifo_node *weft_fifo_peek(const weft_fifo *q)
{
  return q->head;
}

/* Takes the oldest element off; NULL when empty. */
static inline weft_fifo_node *weft_fifo_pop(weft_fifo *q)
{
  weft_fifo_node *n = q->head;
  if (n) {
    q->head = n->next;
    if (!q->head)
      q->tail = NULL;
    n->next = NULL;
  }
  return n;
}

/* Moves every element of from to the end of q, in order; from is left empty. */
static inline void weft_fifo_splice(weft_fifo *q, weft_fifo *from)
{
  if (!from->head)
    return;
  if (q->tail)
    q->tail->next = from->head;
  else
    q->head = from->head;
  q->tail = from->tail;
  from->head = from->tail = NULL;
}

#endif /* WEFT_COMMON_FIFO_H */
