/* SPDX-License-Identifier: MIT */
/*
 * One piece of a parallel loop: lazy binary splitting (split.c). What a
 * task record of a loop runs; the loops themselves are in parallel.c.
 */
#ifndef WEFT_POOL_SPLIT_H
#define WEFT_POOL_SPLIT_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stddef.h>

#include "pool/group.h"

/* A parallel loop, on the stack of the thread that runs it (parallel.c):
 * immutable while its group has tasks. */
typedef struct weft_pfor_loop {
  weft_range_fn fn;
  void *arg;
  size_t grain;
  weft_group_impl *group; /* the loop's pieces are its tasks */
} weft_pfor_loop;

/* Runs [lo, hi) of the loop `loop` (a weft_pfor_loop), splitting off halves
 * for idle workers. Returns the first non-zero chunk return, else 0. */
int weft_pfor_piece(void *loop, size_t lo, size_t hi);

#endif /* WEFT_POOL_SPLIT_H */
