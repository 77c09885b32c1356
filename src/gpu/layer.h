/* SPDX-License-Identifier: MIT */
/*
 * Layer guard of src/gpu (layer 4): the first include of every src/gpu
 * header. src/common, src/pool and src/deps must not include src/gpu
 * (common/layer.h; the engine reaches the GPU layer through
 * deps/executor.h and src/layers.c only), nor src/graph, which sits beside
 * it on the engine. The compiler names the offending header and file in
 * its "In file included from" lines.
 */
#ifndef WEFT_GPU_LAYER_H
#define WEFT_GPU_LAYER_H

#include "common/layer.h"

#if WEFT_LAYER == WEFT_LAYER_COMMON
#error "upward include: a src/gpu header (layer 4) from layer 0 (src/common); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_POOL
#error "upward include: a src/gpu header (layer 4) from layer 1 (src/pool); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_DEPS
#error "upward include: a src/gpu header (layer 4) from layer 2 (src/deps); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_GRAPH
#error "sideways include: a src/gpu header (layer 4) from src/graph (layer 3), which knows only the engine; see the include chain above"
#endif

#endif /* WEFT_GPU_LAYER_H */
