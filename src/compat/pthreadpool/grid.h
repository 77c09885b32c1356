/* SPDX-License-Identifier: MIT */
/*
 * A parallelize call as a grid of tiles: up to six dimensions, each with a
 * range and a tile (1 where the dimension is not tiled), numbered row-major
 * (the last dimension fastest, as pthreadpool's serial order). The pool
 * schedules tile numbers [0, total); grid.c turns a run of numbers back
 * into indices and calls the user's function with the argument list its
 * variant takes.
 */
#ifndef PTP_GRID_H
#define PTP_GRID_H

#include <stddef.h>
#include <stdint.h>

#define PTP_MAX_DIMS 6

/* The signature of the user's function: how many dimensions, how many of
 * the last ones are tiled (their starts, then their sizes, are passed), and
 * whether a uarch index comes first. */
typedef enum ptp_shape {
  PTP_PLAIN,  /* f(ctx, i, j, ...) */
  PTP_TILE_1, /* f(ctx, i, ..., start_last, size_last) */
  PTP_TILE_2, /* f(ctx, i, ..., start_a, start_b, size_a, size_b) */
  PTP_TILE_ALL, /* legacy compute_*_tiled: every dimension tiled */
} ptp_shape;

/* Immutable while the call runs; on the calling thread's stack. */
typedef struct ptp_grid {
  void (*fn)(void);        /* the user's function, cast back by shape */
  void *ctx;               /* its first argument */
  int nd;                  /* dimensions, 1..PTP_MAX_DIMS */
  ptp_shape shape;
  int with_uarch;          /* pass uarch first (the *_with_uarch variants) */
  uint32_t uarch;          /* the index passed */
  uint32_t flags;          /* PTHREADPOOL_FLAG_* of the call */
  size_t range[PTP_MAX_DIMS];
  size_t tile[PTP_MAX_DIMS];
  size_t count[PTP_MAX_DIMS]; /* tiles along each dimension */
  size_t total;               /* tiles in all: the product of count */
} ptp_grid;

/* Fills count and total from range and tile. Returns 0, or -1 when a tile
 * is 0 along a non-empty dimension or the product overflows size_t (*why
 * names which). A grid with an empty dimension has total 0. */
int ptp_grid_plan(ptp_grid *g, const char **why);

/* Calls the user's function on tiles [b, e) of g, in order. */
void ptp_grid_run(const ptp_grid *g, size_t b, size_t e);

/* Calls it on tile t alone. */
void ptp_grid_run_one(const ptp_grid *g, size_t t);

/* Whether g is a plain one-dimensional call (f(ctx, i)), which the
 * scheduler calls directly. */
static inline int ptp_grid_is_1d(const ptp_grid *g)
{
  return g->nd == 1 && g->shape == PTP_PLAIN && !g->with_uarch;
}

#endif /* PTP_GRID_H */
