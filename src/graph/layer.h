/* SPDX-License-Identifier: MIT */
/*
 * Layer guard of src/graph (layer 3): the first include of every src/graph
 * header. src/common, src/pool and src/deps must not include src/graph
 * (common/layer.h; the engine reaches the graph layer through deps/ext.h
 * and src/layers.c only), nor src/gpu, which sits beside it on the engine.
 * The compiler names the offending header and file in its "In file
 * included from" lines.
 */
#ifndef WEFT_GRAPH_LAYER_H
#define WEFT_GRAPH_LAYER_H

#include "common/layer.h"

#if WEFT_LAYER == WEFT_LAYER_COMMON
#error "upward include: a src/graph header (layer 3) from layer 0 (src/common); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_POOL
#error "upward include: a src/graph header (layer 3) from layer 1 (src/pool); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_DEPS
#error "upward include: a src/graph header (layer 3) from layer 2 (src/deps); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_GPU
#error "sideways include: a src/graph header (layer 3) from src/gpu (layer 4), which knows only the engine; see the include chain above"
#endif

#endif /* WEFT_GRAPH_LAYER_H */
