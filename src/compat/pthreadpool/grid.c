/* SPDX-License-Identifier: MIT */
/*
 * Turning tile numbers back into calls (grid.h). A run [b, e) is decomposed
 * once, with divisions, into per-dimension tile indices; the following
 * tiles step the indices like an odometer. Plain one-dimensional calls,
 * the most frequent and the cheapest per item, get a loop of their own.
 */
#include "compat/pthreadpool/grid.h"

#include "compat/pthreadpool/abi.h"

int ptp_grid_plan(ptp_grid *g, const char **why)
{
  size_t total = 1;
  for (int d = 0; d < g->nd; d++) {
    if (g->range[d] == 0) {
      g->total = 0;
      return 0;
    }
    if (g->tile[d] == 0) {
      *why = "a tile of 0";
      return -1;
    }
    g->count[d] =
        g->tile[d] == 1 ? g->range[d] : g->range[d] / g->tile[d] + (g->range[d] % g->tile[d] != 0);
    if (__builtin_mul_overflow(total, g->count[d], &total)) {
      *why = "more tiles than a size_t counts";
      return -1;
    }
  }
  g->total = total;
  return 0;
}

#define SHAPE_KEY(shape, nd) ((int)(shape)*8 + (nd))

/* One call: s are the tiles' starts, z their sizes. */
static void call(const ptp_grid *g, const size_t *s, const size_t *z)
{
  void *c = g->ctx;
  if (g->with_uarch) {
    const uint32_t u = g->uarch;
    switch (SHAPE_KEY(g->shape, g->nd)) {
    case SHAPE_KEY(PTP_PLAIN, 1):
      ((pthreadpool_task_1d_with_id_t)g->fn)(c, u, s[0]);
      return;
    case SHAPE_KEY(PTP_TILE_2, 2):
      ((pthreadpool_task_2d_tile_2d_with_id_t)g->fn)(c, u, s[0], s[1], z[0], z[1]);
      return;
    case SHAPE_KEY(PTP_TILE_2, 3):
      ((pthreadpool_task_3d_tile_2d_with_id_t)g->fn)(c, u, s[0], s[1], s[2], z[1], z[2]);
      return;
    case SHAPE_KEY(PTP_TILE_2, 4):
      ((pthreadpool_task_4d_tile_2d_with_id_t)g->fn)(c, u, s[0], s[1], s[2], s[3], z[2], z[3]);
      return;
    default:
      __builtin_unreachable(); /* parallelize.c makes no other */
    }
  }
  switch (SHAPE_KEY(g->shape, g->nd)) {
  case SHAPE_KEY(PTP_PLAIN, 1):
    ((pthreadpool_task_1d_t)g->fn)(c, s[0]);
    return;
  case SHAPE_KEY(PTP_PLAIN, 2):
    ((pthreadpool_task_2d_t)g->fn)(c, s[0], s[1]);
    return;
  case SHAPE_KEY(PTP_PLAIN, 3):
    ((pthreadpool_task_3d_t)g->fn)(c, s[0], s[1], s[2]);
    return;
  case SHAPE_KEY(PTP_PLAIN, 4):
    ((pthreadpool_task_4d_t)g->fn)(c, s[0], s[1], s[2], s[3]);
    return;
  case SHAPE_KEY(PTP_PLAIN, 5):
    ((pthreadpool_task_5d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4]);
    return;
  case SHAPE_KEY(PTP_PLAIN, 6):
    ((pthreadpool_task_6d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 1):
    ((pthreadpool_task_1d_tile_1d_t)g->fn)(c, s[0], z[0]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 2):
    ((pthreadpool_task_2d_tile_1d_t)g->fn)(c, s[0], s[1], z[1]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 3):
    ((pthreadpool_task_3d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], z[2]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 4):
    ((pthreadpool_task_4d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], z[3]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 5):
    ((pthreadpool_task_5d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], z[4]);
    return;
  case SHAPE_KEY(PTP_TILE_1, 6):
    ((pthreadpool_task_6d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5], z[5]);
    return;
  case SHAPE_KEY(PTP_TILE_2, 2):
    ((pthreadpool_task_2d_tile_2d_t)g->fn)(c, s[0], s[1], z[0], z[1]);
    return;
  case SHAPE_KEY(PTP_TILE_2, 3):
    ((pthreadpool_task_3d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], z[1], z[2]);
    return;
  case SHAPE_KEY(PTP_TILE_2, 4):
    ((pthreadpool_task_4d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], z[2], z[3]);
    return;
  case SHAPE_KEY(PTP_TILE_2, 5):
    ((pthreadpool_task_5d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], z[3], z[4]);
    return;
  case SHAPE_KEY(PTP_TILE_2, 6):
    ((pthreadpool_task_6d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5], z[4], z[5]);
    return;
  case SHAPE_KEY(PTP_TILE_ALL, 3):
    ((pthreadpool_function_3d_tiled_t)g->fn)(c, s[0], s[1], s[2], z[0], z[1], z[2]);
    return;
  case SHAPE_KEY(PTP_TILE_ALL, 4):
    ((pthreadpool_function_4d_tiled_t)g->fn)(c, s[0], s[1], s[2], s[3], z[0], z[1], z[2], z[3]);
    return;
  default:
    __builtin_unreachable(); /* parallelize.c makes no other */
  }
}

static void set_dim(const ptp_grid *g, int d, const size_t *idx, size_t *s, size_t *z)
{
  s[d] = idx[d] * g->tile[d];
  size_t left = g->range[d] - s[d];
  z[d] = left < g->tile[d] ? left : g->tile[d];
}

void ptp_grid_run_one(const ptp_grid *g, size_t t)
{
  size_t idx[PTP_MAX_DIMS], s[PTP_MAX_DIMS], z[PTP_MAX_DIMS];
  for (int d = g->nd - 1; d >= 0; d--) {
    idx[d] = t % g->count[d];
    t /= g->count[d];
    set_dim(g, d, idx, s, z);
  }
  call(g, s, z);
}

void ptp_grid_run(const ptp_grid *g, size_t b, size_t e)
{
  if (ptp_grid_is_1d(g)) {
    pthreadpool_task_1d_t f = (pthreadpool_task_1d_t)g->fn;
    for (size_t i = b; i < e; i++)
      f(g->ctx, i);
    return;
  }
  const int nd = g->nd;
  size_t idx[PTP_MAX_DIMS], s[PTP_MAX_DIMS], z[PTP_MAX_DIMS];
  size_t rest = b;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rest % g->count[d];
    rest /= g->count[d];
    set_dim(g, d, idx, s, z);
  }
  for (size_t t = b; t < e; t++) {
    call(g, s, z);
    /* Next tile: the last index steps; a wrap carries into the one before. */
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < g->count[d]) {
        set_dim(g, d, idx, s, z);
        break;
      }
      idx[d] = 0;
      set_dim(g, d, idx, s, z);
    }
  }
}
