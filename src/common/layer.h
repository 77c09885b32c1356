/* SPDX-License-Identifier: MIT */
/*
 * The layers (docs/design.md, "Layout"), bottom to top. meson compiles every
 * file of a layer with -DWEFT_LAYER=<its number> (root meson.build); every
 * header of src/pool, src/deps, src/graph and src/gpu includes its folder's
 * guard (src/<folder>/layer.h) right after its include guard, and that guard
 * stops the build when a file of a lower layer includes it. src/graph and
 * src/gpu both sit on the engine and know nothing of each other: each one's
 * guard refuses the other too (the numbers only order the build).
 *
 * Code compiled without WEFT_LAYER sits above every layer (WEFT_LAYER_TOP):
 * tests, bench and examples, and builds of the sources outside meson such as
 * tests/reliability/fuzz.sh, which checks no layering.
 */
#ifndef WEFT_COMMON_LAYER_H
#define WEFT_COMMON_LAYER_H

#define WEFT_LAYER_COMMON 0
#define WEFT_LAYER_POOL 1
#define WEFT_LAYER_DEPS 2
#define WEFT_LAYER_GRAPH 3 /* captured graphs: deps/ext.h's operator kinds */
#define WEFT_LAYER_GPU 4   /* the device executor: deps/executor.h */
#define WEFT_LAYER_TOP 5   /* src/layers.c, and everything outside src/ */

#ifndef WEFT_LAYER
#define WEFT_LAYER WEFT_LAYER_TOP
#endif

#endif /* WEFT_COMMON_LAYER_H */
