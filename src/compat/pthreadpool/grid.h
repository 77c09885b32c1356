/* SPDX-License-Identifier: MIT */
/*
 * A parallelize call as a grid of tiles: up to six dimensions, each with a
 * range and a tile (1 where the dimension is not tiled), numbered row-major
 * (the last dimension fastest, as pthreadpool's serial order). The pool
 * schedules tile numbers [0, total); grid.c turns them back into indices and
 * calls the user's function with the argument list its variant takes.
 *
 * Each variant has a kind: the two loops that run its tiles, compiled for
 * that variant alone (its dimensions, which of them are tiled, whether a
 * uarch index comes first), so that a tile costs a compare and an add per
 * dimension carried and one direct call of the user's function, with no
 * division: a run of consecutive tiles is decoded once (one division per
 * dimension but the first) and then stepped like an odometer.
 */
#ifndef PTP_GRID_H
#define PTP_GRID_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PTP_MAX_DIMS 6

/* One member's share of a call's tiles, on a line of its own. */
typedef struct ptp_slot {
  /* atomic, relaxed: the unclaimed tiles [lo, hi) of the call's segment,
   * packed hi << 32 | lo. Only the owner moves lo (one fetch_add per tile
   * claimed, so its claims are consecutive numbers) and refills the slot
   * once it is empty; a thief takes the upper half with a CAS that moves hi
   * alone (call.c). */
  _Alignas(64) _Atomic uint64_t range;
} ptp_slot;

typedef struct ptp_grid ptp_grid;

/* A variant's loops: `tiles` calls the function on tiles [b, e) in order;
 * `slot` on the tiles base + t for each t it claims from own, until own
 * is empty. */
typedef struct ptp_kind {
  void (*tiles)(const ptp_grid *g, size_t b, size_t e);
  void (*slot)(const ptp_grid *g, ptp_slot *own, size_t base);
  int nd;     /* dimensions */
  int ntiled; /* the last ntiled of them are tiled (their sizes are passed) */
} ptp_kind;

/* The variants: name, dimensions, tiled dimensions, uarch index first. The
 * legacy compute_*_tiled functions are the kinds with every dimension
 * tiled; compute_1d and compute_2d are 1d and 2d. */
#define PTP_KINDS(X)                                                                               \
  X(1d, 1, 0, 0)                                                                                   \
  X(1d_with_uarch, 1, 0, 1)                                                                        \
  X(1d_tile_1d, 1, 1, 0)                                                                           \
  X(2d, 2, 0, 0)                                                                                   \
  X(2d_tile_1d, 2, 1, 0)                                                                           \
  X(2d_tile_2d, 2, 2, 0)                                                                           \
  X(2d_tile_2d_with_uarch, 2, 2, 1)                                                                \
  X(3d, 3, 0, 0)                                                                                   \
  X(3d_tile_1d, 3, 1, 0)                                                                           \
  X(3d_tile_2d, 3, 2, 0)                                                                           \
  X(3d_tile_2d_with_uarch, 3, 2, 1)                                                                \
  X(3d_tiled, 3, 3, 0)                                                                             \
  X(4d, 4, 0, 0)                                                                                   \
  X(4d_tile_1d, 4, 1, 0)                                                                           \
  X(4d_tile_2d, 4, 2, 0)                                                                           \
  X(4d_tile_2d_with_uarch, 4, 2, 1)                                                                \
  X(4d_tiled, 4, 4, 0)                                                                             \
  X(5d, 5, 0, 0)                                                                                   \
  X(5d_tile_1d, 5, 1, 0)                                                                           \
  X(5d_tile_2d, 5, 2, 0)                                                                           \
  X(6d, 6, 0, 0)                                                                                   \
  X(6d_tile_1d, 6, 1, 0)                                                                           \
  X(6d_tile_2d, 6, 2, 0)

typedef enum ptp_kind_id {
#define PTP_KIND_ID(name, nd, nt, u) PTP_K_##name,
  PTP_KINDS(PTP_KIND_ID)
#undef PTP_KIND_ID
      PTP_NKINDS
} ptp_kind_id;

extern const ptp_kind ptp_kinds[PTP_NKINDS];

/* Immutable while the call runs; on the calling thread's stack. */
struct ptp_grid {
  void (*fn)(void);         /* the user's function, cast back by the kind */
  void *ctx;                /* its first argument */
  const ptp_kind *kind;
  uint32_t uarch;           /* the index passed (the *_with_uarch kinds) */
  uint32_t flags;           /* PTHREADPOOL_FLAG_* of the call */
  size_t range[PTP_MAX_DIMS];
  size_t tile[PTP_MAX_DIMS]; /* 1 along the dimensions not tiled */
  size_t count[PTP_MAX_DIMS]; /* tiles along each dimension */
  size_t total;               /* tiles in all: the product of count */
};

/* Fills count and total from range and tile. Returns 0, or -1 when a tile
 * is 0 along a non-empty dimension or the product overflows size_t (*why
 * names which). A grid with an empty dimension has total 0. */
int ptp_grid_plan(ptp_grid *g, const char **why);

#endif /* PTP_GRID_H */
