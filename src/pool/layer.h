/* SPDX-License-Identifier: MIT */
/*
 * Layer guard of src/pool (layer 1): the first include of every src/pool
 * header. src/common must not include src/pool (common/layer.h). The compiler
 * names the offending header and file in its "In file included from" lines.
 */
#ifndef WEFT_POOL_LAYER_H
#define WEFT_POOL_LAYER_H

#include "common/layer.h"

#if WEFT_LAYER < WEFT_LAYER_POOL
#error "upward include: a src/pool header (layer 1) from layer 0 (src/common); see the include chain above"
#endif

#endif /* WEFT_POOL_LAYER_H */
