/* SPDX-License-Identifier: MIT */
/*
 * The graph layer as the engine sees it (hooks.c): the table of its entry
 * points for the operator kinds it defines (deps/ext.h), which the
 * composition root (src/layers.c) hands to every engine it creates.
 */
#ifndef WEFT_GRAPH_HOOKS_H
#define WEFT_GRAPH_HOOKS_H
#include "graph/layer.h" /* layer guard: no include from a lower layer, nor from src/gpu */

#include "deps/ext.h"

extern const weft_opr_ext_ops weft_graph_ext_ops;

#endif /* WEFT_GRAPH_HOOKS_H */
