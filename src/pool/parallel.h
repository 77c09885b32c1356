/* Parallel loops: the piece runner used by the worker loop. */
#ifndef WEFT_POOL_PARALLEL_H
#define WEFT_POOL_PARALLEL_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stddef.h>

/* Runs [lo, hi) of the loop `loop`, splitting off halves for idle workers.
 * Returns the first non-zero chunk return, else 0. */
int weft_pfor_piece(void *loop, size_t lo, size_t hi);

#endif /* WEFT_POOL_PARALLEL_H */
