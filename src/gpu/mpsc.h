/* SPDX-License-Identifier: MIT */
/*
 * The GPU layer's operator queue: intrusive, lock-free, many producers and
 * one consumer (Vyukov's MPSC queue with a stub node), oldest first. It
 * serves twice: a lane's launched list (stream workers append the
 * operators they launched, the completion thread retires them) and a
 * stream worker's ready queue (submitters append, the worker takes).
 * Producers append with one exchange and one store; the consumer reads the
 * head and removes it with loads alone, except when it removes the last
 * node, which puts the stub back behind it (an append of its own: hence
 * the exchange even with one producer).
 *
 * Who touches what:
 *  - tail: atomic; every append exchanges it (a producer, or the consumer
 *    re-appending the stub).
 *  - head: the consumer only.
 *  - a link's next: atomic; written once per append by the appender of the
 *    node after it, read by the consumer.
 * A node may be reused (appended again) once weft_gpu_mpsc_pop returned
 * it: nothing touches it after that.
 */
#ifndef WEFT_GPU_MPSC_H
#define WEFT_GPU_MPSC_H
#include "gpu/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stddef.h>

#include "common/sync.h"

typedef struct weft_gpu_link {
  struct weft_gpu_link *_Atomic next;
} weft_gpu_link;

typedef struct weft_gpu_mpsc {
  weft_gpu_link *_Atomic tail; /* atomic: the last node (the stub when empty) */
  weft_gpu_link *head;         /* the consumer only: the oldest (or the stub) */
  weft_gpu_link stub;          /* stands in while the list is empty */
} weft_gpu_mpsc;

static inline void weft_gpu_mpsc_init(weft_gpu_mpsc *l)
{
  atomic_init(&l->stub.next, NULL);
  atomic_init(&l->tail, &l->stub);
  l->head = &l->stub;
}

static inline void weft_gpu_mpsc_append(weft_gpu_mpsc *l, weft_gpu_link *n)
{
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed); /* published by the store below */
  /* acq_rel: takes the previous tail as its appender left it (acquire:
   * pairs with this same exchange by the other producer), and hands n on
   * to the next exchange (release). */
  weft_gpu_link *prev = atomic_exchange_explicit(&l->tail, n, memory_order_acq_rel);
  /* release: publishes n and everything written before the append (the
   * operator's state); pairs with the acquire loads of next in peek/pop. */
  atomic_store_explicit(&prev->next, n, memory_order_release);
}

/* The oldest node, or NULL when none is (fully) appended. The completion
 * thread only. */
static inline weft_gpu_link *weft_gpu_mpsc_peek(weft_gpu_mpsc *l)
{
  weft_gpu_link *head = l->head;
  if (head == &l->stub) {
    /* acquire: pairs with the appender's release store of next. */
    weft_gpu_link *next = atomic_load_explicit(&head->next, memory_order_acquire);
    if (!next)
      return NULL;
    l->head = next; /* the stub leaves the list */
    head = next;
  }
  return head;
}

/* Waits for next of n to be set by an appender that already swapped the
 * tail (it is between its two steps: a few instructions, unless it was
 * preempted there). */
static inline weft_gpu_link *weft_gpu_mpsc_next_wait(weft_gpu_link *n)
{
  weft_gpu_link *next;
  unsigned spins = 0;
  /* acquire: pairs with the appender's release store of next. */
  while (!(next = atomic_load_explicit(&n->next, memory_order_acquire)))
    weft_spin_step(&spins, 64);
  return next;
}

/* Removes the node peek returned (the head). The consumer only.
 * When it is the last, the stub goes back behind it, so the list never
 * holds a pointer to a removed node. */
static inline void weft_gpu_mpsc_pop(weft_gpu_mpsc *l, weft_gpu_link *head)
{
  /* acquire: pairs with the appender's release store of next. */
  weft_gpu_link *next = atomic_load_explicit(&head->next, memory_order_acquire);
  if (!next) {
    /* acquire: pairs with the appender's exchange (release half). */
    if (atomic_load_explicit(&l->tail, memory_order_acquire) == head)
      weft_gpu_mpsc_append(l, &l->stub);
    /* Either the stub or an operator appended meanwhile follows head now,
     * or will within an appender's two steps. */
    next = weft_gpu_mpsc_next_wait(head);
  }
  l->head = next;
}

#endif /* WEFT_GPU_MPSC_H */
