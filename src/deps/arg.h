/* SPDX-License-Identifier: MIT */
/*
 * Operator arguments stored with the operator (weft_push_arg,
 * weft_op_new_arg; weft.h).
 *
 * Two homes for the copy:
 *   - the operator's own block (weft_opr.argbytes, WEFT_OP_ARG_INLINE
 *     bytes): a one-shot push whose argument fits. The block's free
 *     (opr.h, weft_opr_free) calls the drop, once the operator finished.
 *   - a box (below): one allocation holding the bytes, the drop and a
 *     reference count, for what outlives one push or does not fit: a
 *     reusable operator's argument (its template holds a reference), a
 *     recorded push's (the graph holds one, and a recorded push of a
 *     reusable operator takes another), a one-shot push's of more than
 *     WEFT_OP_ARG_INLINE bytes (its block holds it). The last reference
 *     calls the drop and frees the box.
 *
 * Synchronization: a box's bytes are written once, before the box is
 * shared; its count is the only thing threads change.
 *   refs    acq_rel fetch_sub: the last holder's uses of the bytes (its
 *           operator's fn) come before the drop and the free; the
 *           reference taken by weft_arg_box_ref comes from a holder that
 *           already sees the bytes (relaxed).
 */
#ifndef WEFT_DEPS_ARG_H
#define WEFT_DEPS_ARG_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stddef.h>

#include "weft/weft.h"

typedef struct weft_arg_box {
  _Atomic int refs;
  weft_arg_drop_fn drop_fn; /* NULL: none */
  size_t size;
  _Alignas(16) unsigned char bytes[]; /* size bytes; the operator's arg */
} weft_arg_box;

/* A box holding a copy of data[0..size) with one reference (the caller's);
 * NULL without memory. */
weft_arg_box *weft_arg_box_new(const void *data, size_t size, weft_arg_drop_fn drop);
/* The argument a box's operators receive: its bytes, NULL for size 0. */
static inline void *weft_arg_box_arg(weft_arg_box *b)
{
  return b->size ? b->bytes : NULL;
}
void weft_arg_box_ref(weft_arg_box *b);
/* Drops a reference; the last calls the drop and frees the box. */
void weft_arg_box_unref(weft_arg_box *b);
/* Frees a box that was never used (its only reference, after a push or a
 * record failed): without its drop, as weft.h promises on an error. */
void weft_arg_box_discard(weft_arg_box *b);

/* Checks what weft_push_arg and weft_op_new_arg take beside the
 * descriptor: 0 or WEFT_EINVAL. */
int weft_arg_check(const weft_op_desc *desc, const void *data, size_t size);

#endif /* WEFT_DEPS_ARG_H */
