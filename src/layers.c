/* SPDX-License-Identifier: MIT */
/*
 * The composition root: the one place that knows every layer. The engine
 * (src/deps/) defines the executor interface (deps/executor.h) and the
 * interface of the operator kinds defined above it (deps/ext.h); the GPU
 * layer (src/gpu/) provides an executor, the graph layer the kinds of a
 * captured graph's replay; here the public weft_engine_create hands both to
 * each engine. Keeping this above every layer keeps src/deps/ free of any
 * reference to the layers above it (docs/design.md, "Layout") with every call
 * running downward, and a static link pulls those layers in through this
 * file.
 */
#include "deps/executor.h"
#include "graph/hooks.h"
#include "gpu/gpu.h"

int weft_engine_create(weft_engine **out, const weft_engine_config *cfg)
{
  return weft_engine_create_with(out, cfg, &weft_gpu_executor_ops, &weft_graph_ext_ops);
}
