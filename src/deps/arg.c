/* SPDX-License-Identifier: MIT */
/*
 * Operator argument boxes (arg.h).
 */
#include "deps/arg.h"

#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"

weft_arg_box *weft_arg_box_new(const void *data, size_t size, weft_arg_drop_fn drop)
{
  if (size > SIZE_MAX - sizeof(weft_arg_box))
    return NULL;
  weft_arg_box *b = weft_malloc(sizeof *b + size);
  if (!b)
    return NULL;
  atomic_init(&b->refs, 1);
  b->drop_fn = drop;
  b->size = size;
  if (size)
    memcpy(b->bytes, data, size);
  return b;
}

void weft_arg_box_ref(weft_arg_box *b)
{
  /* relaxed: the caller holds a reference, so the box is alive and its
   * bytes are visible to it already. */
  int was = atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  WEFT_ASSERT(was >= 1);
  (void)was;
}

void weft_arg_box_unref(weft_arg_box *b)
{
  /* acq_rel: every holder's use of the bytes comes before the last
   * holder's drop and free. */
  int was = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel);
  WEFT_ASSERT(was >= 1);
  if (was != 1)
    return;
  if (b->drop_fn)
    b->drop_fn(weft_arg_box_arg(b));
  weft_free(b);
}

void weft_arg_box_discard(weft_arg_box *b)
{
  WEFT_ASSERT(atomic_load_explicit(&b->refs, memory_order_relaxed) == 1);
  weft_free(b);
}

int weft_arg_check(const weft_op_desc *desc, const void *data, size_t size)
{
  if (!desc || desc->arg || (!data && size))
    return WEFT_EINVAL;
  return 0;
}
