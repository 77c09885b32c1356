/* SPDX-License-Identifier: MIT */
/*
 * Turning tile numbers back into calls (grid.h). Every kind's two loops are
 * one template (run_range, run_slot) instantiated with its constants, so
 * that the compiler unrolls the per-dimension steps, drops those of the
 * dimensions not tiled (their tile is 1) and calls the user's function
 * directly with the argument list of the variant.
 */
#include "compat/pthreadpool/grid.h"

#include <stdbool.h>

#include "compat/pthreadpool/abi.h"

int ptp_grid_plan(ptp_grid *g, const char **why)
{
  size_t total = 1;
  for (int d = 0; d < g->kind->nd; d++) {
    size_t r = g->range[d], t = g->tile[d];
    if (r == 0) {
      g->total = 0;
      return 0;
    }
    if (t == 0) {
      *why = "a tile of 0";
      return -1;
    }
    g->count[d] = t == 1 ? r : r / t + (r % t != 0);
    if (__builtin_mul_overflow(total, g->count[d], &total)) {
      *why = "more tiles than a size_t counts";
      return -1;
    }
  }
  g->total = total;
  return 0;
}

#define PTP_INLINE static inline __attribute__((always_inline))

/* Dimension d's step: its tile when it is one of the last nt (tiled), else
 * 1. A constant when nd, nt and d are. */
PTP_INLINE size_t step(const ptp_grid *g, int nd, int nt, int d)
{
  return d >= nd - nt ? g->tile[d] : 1;
}

/* The starts s[] of tile t: a division per dimension but the first. */
PTP_INLINE void decode(const ptp_grid *g, int nd, int nt, size_t t, size_t *s)
{
  for (int d = nd - 1; d > 0; d--) {
    size_t q = t / g->count[d];
    s[d] = (t - q * g->count[d]) * step(g, nd, nt, d);
    t = q;
  }
  s[0] = t * step(g, nd, nt, 0);
}

/* The starts of the tile after s[], in row-major order: the last dimension
 * steps, and one that wraps carries into the one before. The first never
 * wraps: the caller stops at the last tile. */
PTP_INLINE void advance(const ptp_grid *g, int nd, int nt, size_t *s)
{
  for (int d = nd - 1; d > 0; d--) {
    s[d] += step(g, nd, nt, d);
    if (s[d] < g->range[d])
      return;
    s[d] = 0;
  }
  s[0] += step(g, nd, nt, 0);
}

#define KEY(nd, nt, u) ((nd)*100 + (nt)*10 + (u))

/* The user's function on the tile at s[]: uarch (u), every start, then the
 * sizes of the tiled dimensions (the last one short at the range's end). */
PTP_INLINE void invoke(const ptp_grid *g, int nd, int nt, int u, const size_t *s)
{
  size_t z[PTP_MAX_DIMS];
  for (int d = nd - nt; d < nd; d++) {
    size_t left = g->range[d] - s[d];
    z[d] = left < g->tile[d] ? left : g->tile[d];
  }
  void *c = g->ctx;
  const uint32_t ua = g->uarch;
  (void)ua;
  switch (KEY(nd, nt, u)) {
  case KEY(1, 0, 0):
    ((pthreadpool_task_1d_t)g->fn)(c, s[0]);
    return;
  case KEY(1, 0, 1):
    ((pthreadpool_task_1d_with_id_t)g->fn)(c, ua, s[0]);
    return;
  case KEY(1, 1, 0):
    ((pthreadpool_task_1d_tile_1d_t)g->fn)(c, s[0], z[0]);
    return;
  case KEY(2, 0, 0):
    ((pthreadpool_task_2d_t)g->fn)(c, s[0], s[1]);
    return;
  case KEY(2, 1, 0):
    ((pthreadpool_task_2d_tile_1d_t)g->fn)(c, s[0], s[1], z[1]);
    return;
  case KEY(2, 2, 0):
    ((pthreadpool_task_2d_tile_2d_t)g->fn)(c, s[0], s[1], z[0], z[1]);
    return;
  case KEY(2, 2, 1):
    ((pthreadpool_task_2d_tile_2d_with_id_t)g->fn)(c, ua, s[0], s[1], z[0], z[1]);
    return;
  case KEY(3, 0, 0):
    ((pthreadpool_task_3d_t)g->fn)(c, s[0], s[1], s[2]);
    return;
  case KEY(3, 1, 0):
    ((pthreadpool_task_3d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], z[2]);
    return;
  case KEY(3, 2, 0):
    ((pthreadpool_task_3d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], z[1], z[2]);
    return;
  case KEY(3, 2, 1):
    ((pthreadpool_task_3d_tile_2d_with_id_t)g->fn)(c, ua, s[0], s[1], s[2], z[1], z[2]);
    return;
  case KEY(3, 3, 0):
    ((pthreadpool_function_3d_tiled_t)g->fn)(c, s[0], s[1], s[2], z[0], z[1], z[2]);
    return;
  case KEY(4, 0, 0):
    ((pthreadpool_task_4d_t)g->fn)(c, s[0], s[1], s[2], s[3]);
    return;
  case KEY(4, 1, 0):
    ((pthreadpool_task_4d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], z[3]);
    return;
  case KEY(4, 2, 0):
    ((pthreadpool_task_4d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], z[2], z[3]);
    return;
  case KEY(4, 2, 1):
    ((pthreadpool_task_4d_tile_2d_with_id_t)g->fn)(c, ua, s[0], s[1], s[2], s[3], z[2], z[3]);
    return;
  case KEY(4, 4, 0):
    ((pthreadpool_function_4d_tiled_t)g->fn)(c, s[0], s[1], s[2], s[3], z[0], z[1], z[2], z[3]);
    return;
  case KEY(5, 0, 0):
    ((pthreadpool_task_5d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4]);
    return;
  case KEY(5, 1, 0):
    ((pthreadpool_task_5d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], z[4]);
    return;
  case KEY(5, 2, 0):
    ((pthreadpool_task_5d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], z[3], z[4]);
    return;
  case KEY(6, 0, 0):
    ((pthreadpool_task_6d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5]);
    return;
  case KEY(6, 1, 0):
    ((pthreadpool_task_6d_tile_1d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5], z[5]);
    return;
  case KEY(6, 2, 0):
    ((pthreadpool_task_6d_tile_2d_t)g->fn)(c, s[0], s[1], s[2], s[3], s[4], s[5], z[4], z[5]);
    return;
  default:
    __builtin_unreachable(); /* PTP_KINDS makes no other */
  }
}

/* Tiles [b, e), in order. */
PTP_INLINE void run_range(const ptp_grid *g, int nd, int nt, int u, size_t b, size_t e)
{
  if (b >= e)
    return;
  size_t s[PTP_MAX_DIMS];
  decode(g, nd, nt, b, s);
  for (;;) {
    invoke(g, nd, nt, u, s);
    if (++b == e)
      return;
    advance(g, nd, nt, s);
  }
}

/* Claims the next tile of own: a fetch_add of lo, the tile claimed when lo
 * was below hi (one locked RMW, half the cost of a CAS here). Past hi the
 * increments are harmless: lo stays far below 2^32 (a segment counts fewer
 * tiles, call.c), and only the owner refills. */
PTP_INLINE bool claim(ptp_slot *own, uint32_t *t)
{
  /* relaxed: the claim needs only atomicity; the tiles' effects reach the
   * caller through the crew (leave, release). */
  uint64_t r = atomic_fetch_add_explicit(&own->range, 1, memory_order_relaxed);
  *t = (uint32_t)r;
  return (uint32_t)r < (uint32_t)(r >> 32);
}

/* The tiles claimed from own. Only this thread moves lo, so the claims are
 * consecutive: the first is decoded, the others stepped to. */
PTP_INLINE void run_slot(const ptp_grid *g, int nd, int nt, int u, ptp_slot *own, size_t base)
{
  uint32_t t;
  if (!claim(own, &t))
    return;
  size_t s[PTP_MAX_DIMS];
  decode(g, nd, nt, base + t, s);
  for (;;) {
    invoke(g, nd, nt, u, s);
    if (!claim(own, &t))
      return;
    advance(g, nd, nt, s);
  }
}

#define PTP_KIND_LOOPS(tag, nd, nt, u)                                                             \
  static void range_##tag(const ptp_grid *g, size_t b, size_t e)                                   \
  {                                                                                                \
    run_range(g, nd, nt, u, b, e);                                                                 \
  }                                                                                                \
  static void slot_##tag(const ptp_grid *g, ptp_slot *own, size_t base)                            \
  {                                                                                                \
    run_slot(g, nd, nt, u, own, base);                                                             \
  }
PTP_KINDS(PTP_KIND_LOOPS)
#undef PTP_KIND_LOOPS

const ptp_kind ptp_kinds[PTP_NKINDS] = {
#define PTP_KIND_ENTRY(tag, nd, nt, u) [PTP_K_##tag] = {range_##tag, slot_##tag, nd, nt},
    PTP_KINDS(PTP_KIND_ENTRY)
#undef PTP_KIND_ENTRY
};
