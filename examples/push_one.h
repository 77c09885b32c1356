/* SPDX-License-Identifier: MIT */
/*
 * A helper the GPU examples share: push one operator that reads at most one
 * var and writes at most one, on the CPU (gpu < 0) or on GPU gpu.
 */
#ifndef WEFT_EXAMPLES_PUSH_ONE_H
#define WEFT_EXAMPLES_PUSH_ONE_H

#include <weft/weft.h>

static inline int push_one(weft_engine *eng, weft_op_fn fn, void *arg, weft_var *r, weft_var *w,
                           int gpu, weft_prop prop)
{
  weft_op_desc d = {0};
  d.fn = fn;
  d.arg = arg;
  d.reads = r ? &r : NULL;
  d.num_reads = r ? 1 : 0;
  d.writes = w ? &w : NULL;
  d.num_writes = w ? 1 : 0;
  d.ctx.type = gpu >= 0 ? WEFT_DEV_GPU : WEFT_DEV_CPU;
  d.ctx.id = gpu >= 0 ? gpu : 0;
  d.prop = prop;
  return weft_push(eng, &d);
}

#endif /* WEFT_EXAMPLES_PUSH_ONE_H */
