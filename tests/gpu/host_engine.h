/* SPDX-License-Identifier: MIT */
/*
 * What the engine suites on the host backend's emulated devices share
 * (test_engine_gpu.c, test_graph_gpu.c): the environment (two emulated
 * devices, no jitter), a GPU descriptor, a push on one read and one write.
 */
#ifndef WEFT_TESTS_GPU_HOST_ENGINE_H
#define WEFT_TESTS_GPU_HOST_ENGINE_H

#include "../deps/engine_util.h"
#include "gpu/gpu.h"

/* Criterion's .init: the host backend with two devices, no jitter. */
static void setup(void)
{
  te_clear_env();
  setenv("WEFT_GPU_BACKEND", "host", 1);
  setenv("WEFT_GPU_HOST_DEVICES", "2", 1);
  weft_gpu_test_host_jitter(0);
}

/* te_desc on GPU dev. */
static inline weft_op_desc gpu_desc(weft_op_fn fn, void *arg, int dev)
{
  weft_op_desc d = te_desc(fn, arg);
  d.ctx.type = WEFT_DEV_GPU;
  d.ctx.id = dev;
  return d;
}

/* Pushes d reading r and writing w (either NULL: none). */
static inline int push_rw(weft_engine *e, weft_op_desc d, weft_var *r, weft_var *w)
{
  d.reads = r ? &r : NULL;
  d.num_reads = r ? 1 : 0;
  d.writes = w ? &w : NULL;
  d.num_writes = w ? 1 : 0;
  return weft_push(e, &d);
}

#endif /* WEFT_TESTS_GPU_HOST_ENGINE_H */
