/* SPDX-License-Identifier: MIT */
/*
 * Layer guard of src/deps (layer 2): the first include of every src/deps
 * header. src/common and src/pool must not include src/deps
 * (common/layer.h). The compiler names the offending header and file in its
 * "In file included from" lines.
 */
#ifndef WEFT_DEPS_LAYER_H
#define WEFT_DEPS_LAYER_H

#include "common/layer.h"

#if WEFT_LAYER == WEFT_LAYER_COMMON
#error "upward include: a src/deps header (layer 2) from layer 0 (src/common); see the include chain above"
#elif WEFT_LAYER == WEFT_LAYER_POOL
#error "upward include: a src/deps header (layer 2) from layer 1 (src/pool); see the include chain above"
#endif

#endif /* WEFT_DEPS_LAYER_H */
