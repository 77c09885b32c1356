/* SPDX-License-Identifier: MIT */
/*
 * The pthreadpool_parallelize_* and legacy pthreadpool_compute_* entry
 * points: each describes its grid (grid.h) and runs it (call.c).
 */
#include "compat/pthreadpool/abi.h"
#include "compat/pthreadpool/fpu.h"
#include "compat/pthreadpool/pool.h"

typedef void (*ptp_fn)(void);

/* Describes the call's grid and runs it: range[d] and tile[d] for the
 * kind's dimensions (tile NULL: none tiled); uarch, passed first by the
 * *_with_uarch kinds. */
static void go(pthreadpool_t tp, const char *who, ptp_fn fn, void *ctx, ptp_kind_id kind,
               uint32_t uarch, const size_t *range, const size_t *tile, uint32_t flags)
{
  ptp_grid g = {.fn = fn, .ctx = ctx, .kind = &ptp_kinds[kind], .uarch = uarch, .flags = flags};
  for (int d = 0; d < g.kind->nd; d++) {
    g.range[d] = range[d];
    g.tile[d] = tile ? tile[d] : 1;
  }
  ptp_run(tp, &g, who);
}

/* go out of line, for parallelize_1d: its serial shortcut then saves few
 * registers. */
__attribute__((noinline)) static void go_1d(pthreadpool_t tp, pthreadpool_task_1d_t fn, void *ctx,
                                            size_t range, uint32_t flags)
{
  const size_t rg[1] = {range};
  go(tp, "pthreadpool_parallelize_1d", (ptp_fn)fn, ctx, PTP_K_1d, 0, rg, NULL, flags);
}

void pthreadpool_parallelize_1d(pthreadpool_t threadpool, pthreadpool_task_1d_t function,
                                void *context, size_t range, uint32_t flags)
{
  /* The serial case straight away (one item, or no pool to share with):
   * frequent in XNNPACK (with DISABLE_DENORMALS), and a few nanoseconds
   * matter there. Anything else, an unknown flag included, takes the
   * general path (go_1d). */
  if (function && (range <= 1 || !threadpool || threadpool->threads <= 1)) {
    if ((flags & ~(uint32_t)PTHREADPOOL_FLAG_YIELD_WORKERS) == 0) {
      for (size_t i = 0; i < range; i++)
        function(context, i);
      return;
    }
    if ((flags & ~(uint32_t)PTP_KNOWN_FLAGS) == 0) {
      ptp_fpu_state fpu = ptp_fpu_enter(1);
      for (size_t i = 0; i < range; i++)
        function(context, i);
      ptp_fpu_leave(1, fpu);
      return;
    }
  }
  go_1d(threadpool, function, context, range, flags);
}

void pthreadpool_parallelize_1d_with_uarch(pthreadpool_t threadpool,
                                           pthreadpool_task_1d_with_id_t function, void *context,
                                           uint32_t default_uarch_index, uint32_t max_uarch_index,
                                           size_t range, uint32_t flags)
{
  const size_t rg[1] = {range};
  (void)max_uarch_index; /* no uarch detection: the default is always used */
  go(threadpool, "pthreadpool_parallelize_1d_with_uarch", (ptp_fn)function, context,
     PTP_K_1d_with_uarch, default_uarch_index, rg, NULL, flags);
}

void pthreadpool_parallelize_1d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_1d_tile_1d_t function, void *context,
                                        size_t range, size_t tile, uint32_t flags)
{
  const size_t rg[1] = {range};
  const size_t tl[1] = {tile};
  go(threadpool, "pthreadpool_parallelize_1d_tile_1d", (ptp_fn)function, context, PTP_K_1d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_2d(pthreadpool_t threadpool, pthreadpool_task_2d_t function,
                                void *context, size_t range_i, size_t range_j, uint32_t flags)
{
  const size_t rg[2] = {range_i, range_j};
  go(threadpool, "pthreadpool_parallelize_2d", (ptp_fn)function, context, PTP_K_2d, 0, rg, NULL,
     flags);
}

void pthreadpool_parallelize_2d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_2d_tile_1d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t tile_j,
                                        uint32_t flags)
{
  const size_t rg[2] = {range_i, range_j};
  const size_t tl[2] = {1, tile_j};
  go(threadpool, "pthreadpool_parallelize_2d_tile_1d", (ptp_fn)function, context, PTP_K_2d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_2d_tile_2d(pthreadpool_t threadpool,
                                        pthreadpool_task_2d_tile_2d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t tile_i,
                                        size_t tile_j, uint32_t flags)
{
  const size_t rg[2] = {range_i, range_j};
  const size_t tl[2] = {tile_i, tile_j};
  go(threadpool, "pthreadpool_parallelize_2d_tile_2d", (ptp_fn)function, context, PTP_K_2d_tile_2d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_2d_tile_2d_with_uarch(pthreadpool_t threadpool,
                                                   pthreadpool_task_2d_tile_2d_with_id_t function,
                                                   void *context, uint32_t default_uarch_index,
                                                   uint32_t max_uarch_index, size_t range_i,
                                                   size_t range_j, size_t tile_i, size_t tile_j,
                                                   uint32_t flags)
{
  const size_t rg[2] = {range_i, range_j};
  const size_t tl[2] = {tile_i, tile_j};
  (void)max_uarch_index; /* no uarch detection: the default is always used */
  go(threadpool, "pthreadpool_parallelize_2d_tile_2d_with_uarch", (ptp_fn)function, context,
     PTP_K_2d_tile_2d_with_uarch, default_uarch_index, rg, tl, flags);
}

void pthreadpool_parallelize_3d(pthreadpool_t threadpool, pthreadpool_task_3d_t function,
                                void *context, size_t range_i, size_t range_j, size_t range_k,
                                uint32_t flags)
{
  const size_t rg[3] = {range_i, range_j, range_k};
  go(threadpool, "pthreadpool_parallelize_3d", (ptp_fn)function, context, PTP_K_3d, 0, rg, NULL,
     flags);
}

void pthreadpool_parallelize_3d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_3d_tile_1d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t tile_k, uint32_t flags)
{
  const size_t rg[3] = {range_i, range_j, range_k};
  const size_t tl[3] = {1, 1, tile_k};
  go(threadpool, "pthreadpool_parallelize_3d_tile_1d", (ptp_fn)function, context, PTP_K_3d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_3d_tile_2d(pthreadpool_t threadpool,
                                        pthreadpool_task_3d_tile_2d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t tile_j, size_t tile_k, uint32_t flags)
{
  const size_t rg[3] = {range_i, range_j, range_k};
  const size_t tl[3] = {1, tile_j, tile_k};
  go(threadpool, "pthreadpool_parallelize_3d_tile_2d", (ptp_fn)function, context, PTP_K_3d_tile_2d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_3d_tile_2d_with_uarch(pthreadpool_t threadpool,
                                                   pthreadpool_task_3d_tile_2d_with_id_t function,
                                                   void *context, uint32_t default_uarch_index,
                                                   uint32_t max_uarch_index, size_t range_i,
                                                   size_t range_j, size_t range_k, size_t tile_j,
                                                   size_t tile_k, uint32_t flags)
{
  const size_t rg[3] = {range_i, range_j, range_k};
  const size_t tl[3] = {1, tile_j, tile_k};
  (void)max_uarch_index; /* no uarch detection: the default is always used */
  go(threadpool, "pthreadpool_parallelize_3d_tile_2d_with_uarch", (ptp_fn)function, context,
     PTP_K_3d_tile_2d_with_uarch, default_uarch_index, rg, tl, flags);
}

void pthreadpool_parallelize_4d(pthreadpool_t threadpool, pthreadpool_task_4d_t function,
                                void *context, size_t range_i, size_t range_j, size_t range_k,
                                size_t range_l, uint32_t flags)
{
  const size_t rg[4] = {range_i, range_j, range_k, range_l};
  go(threadpool, "pthreadpool_parallelize_4d", (ptp_fn)function, context, PTP_K_4d, 0, rg, NULL,
     flags);
}

void pthreadpool_parallelize_4d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_4d_tile_1d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t tile_l, uint32_t flags)
{
  const size_t rg[4] = {range_i, range_j, range_k, range_l};
  const size_t tl[4] = {1, 1, 1, tile_l};
  go(threadpool, "pthreadpool_parallelize_4d_tile_1d", (ptp_fn)function, context, PTP_K_4d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_4d_tile_2d(pthreadpool_t threadpool,
                                        pthreadpool_task_4d_tile_2d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t tile_k, size_t tile_l,
                                        uint32_t flags)
{
  const size_t rg[4] = {range_i, range_j, range_k, range_l};
  const size_t tl[4] = {1, 1, tile_k, tile_l};
  go(threadpool, "pthreadpool_parallelize_4d_tile_2d", (ptp_fn)function, context, PTP_K_4d_tile_2d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_4d_tile_2d_with_uarch(pthreadpool_t threadpool,
                                                   pthreadpool_task_4d_tile_2d_with_id_t function,
                                                   void *context, uint32_t default_uarch_index,
                                                   uint32_t max_uarch_index, size_t range_i,
                                                   size_t range_j, size_t range_k, size_t range_l,
                                                   size_t tile_k, size_t tile_l, uint32_t flags)
{
  const size_t rg[4] = {range_i, range_j, range_k, range_l};
  const size_t tl[4] = {1, 1, tile_k, tile_l};
  (void)max_uarch_index; /* no uarch detection: the default is always used */
  go(threadpool, "pthreadpool_parallelize_4d_tile_2d_with_uarch", (ptp_fn)function, context,
     PTP_K_4d_tile_2d_with_uarch, default_uarch_index, rg, tl, flags);
}

void pthreadpool_parallelize_5d(pthreadpool_t threadpool, pthreadpool_task_5d_t function,
                                void *context, size_t range_i, size_t range_j, size_t range_k,
                                size_t range_l, size_t range_m, uint32_t flags)
{
  const size_t rg[5] = {range_i, range_j, range_k, range_l, range_m};
  go(threadpool, "pthreadpool_parallelize_5d", (ptp_fn)function, context, PTP_K_5d, 0, rg, NULL,
     flags);
}

void pthreadpool_parallelize_5d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_5d_tile_1d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t range_m, size_t tile_m,
                                        uint32_t flags)
{
  const size_t rg[5] = {range_i, range_j, range_k, range_l, range_m};
  const size_t tl[5] = {1, 1, 1, 1, tile_m};
  go(threadpool, "pthreadpool_parallelize_5d_tile_1d", (ptp_fn)function, context, PTP_K_5d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_5d_tile_2d(pthreadpool_t threadpool,
                                        pthreadpool_task_5d_tile_2d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t range_m, size_t tile_l,
                                        size_t tile_m, uint32_t flags)
{
  const size_t rg[5] = {range_i, range_j, range_k, range_l, range_m};
  const size_t tl[5] = {1, 1, 1, tile_l, tile_m};
  go(threadpool, "pthreadpool_parallelize_5d_tile_2d", (ptp_fn)function, context, PTP_K_5d_tile_2d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_6d(pthreadpool_t threadpool, pthreadpool_task_6d_t function,
                                void *context, size_t range_i, size_t range_j, size_t range_k,
                                size_t range_l, size_t range_m, size_t range_n, uint32_t flags)
{
  const size_t rg[6] = {range_i, range_j, range_k, range_l, range_m, range_n};
  go(threadpool, "pthreadpool_parallelize_6d", (ptp_fn)function, context, PTP_K_6d, 0, rg, NULL,
     flags);
}

void pthreadpool_parallelize_6d_tile_1d(pthreadpool_t threadpool,
                                        pthreadpool_task_6d_tile_1d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t range_m, size_t range_n,
                                        size_t tile_n, uint32_t flags)
{
  const size_t rg[6] = {range_i, range_j, range_k, range_l, range_m, range_n};
  const size_t tl[6] = {1, 1, 1, 1, 1, tile_n};
  go(threadpool, "pthreadpool_parallelize_6d_tile_1d", (ptp_fn)function, context, PTP_K_6d_tile_1d,
     0, rg, tl, flags);
}

void pthreadpool_parallelize_6d_tile_2d(pthreadpool_t threadpool,
                                        pthreadpool_task_6d_tile_2d_t function, void *context,
                                        size_t range_i, size_t range_j, size_t range_k,
                                        size_t range_l, size_t range_m, size_t range_n,
                                        size_t tile_m, size_t tile_n, uint32_t flags)
{
  const size_t rg[6] = {range_i, range_j, range_k, range_l, range_m, range_n};
  const size_t tl[6] = {1, 1, 1, 1, tile_m, tile_n};
  go(threadpool, "pthreadpool_parallelize_6d_tile_2d", (ptp_fn)function, context, PTP_K_6d_tile_2d,
     0, rg, tl, flags);
}

/* ------------------------------------------------------------ legacy API */

void pthreadpool_compute_1d(pthreadpool_t threadpool, pthreadpool_function_1d_t function,
                            void *argument, size_t range)
{
  go(threadpool, "pthreadpool_compute_1d", (ptp_fn)function, argument, PTP_K_1d, 0, &range, NULL,
     0);
}

void pthreadpool_compute_1d_tiled(pthreadpool_t threadpool,
                                  pthreadpool_function_1d_tiled_t function, void *argument,
                                  size_t range, size_t tile)
{
  go(threadpool, "pthreadpool_compute_1d_tiled", (ptp_fn)function, argument, PTP_K_1d_tile_1d, 0,
     &range, &tile, 0);
}

void pthreadpool_compute_2d(pthreadpool_t threadpool, pthreadpool_function_2d_t function,
                            void *argument, size_t range_i, size_t range_j)
{
  const size_t rg[2] = {range_i, range_j};
  go(threadpool, "pthreadpool_compute_2d", (ptp_fn)function, argument, PTP_K_2d, 0, rg, NULL, 0);
}

void pthreadpool_compute_2d_tiled(pthreadpool_t threadpool,
                                  pthreadpool_function_2d_tiled_t function, void *argument,
                                  size_t range_i, size_t range_j, size_t tile_i, size_t tile_j)
{
  const size_t rg[2] = {range_i, range_j}, tl[2] = {tile_i, tile_j};
  go(threadpool, "pthreadpool_compute_2d_tiled", (ptp_fn)function, argument, PTP_K_2d_tile_2d, 0,
     rg, tl, 0);
}

void pthreadpool_compute_3d_tiled(pthreadpool_t threadpool,
                                  pthreadpool_function_3d_tiled_t function, void *argument,
                                  size_t range_i, size_t range_j, size_t range_k, size_t tile_i,
                                  size_t tile_j, size_t tile_k)
{
  const size_t rg[3] = {range_i, range_j, range_k}, tl[3] = {tile_i, tile_j, tile_k};
  go(threadpool, "pthreadpool_compute_3d_tiled", (ptp_fn)function, argument, PTP_K_3d_tiled, 0, rg,
     tl, 0);
}

void pthreadpool_compute_4d_tiled(pthreadpool_t threadpool,
                                  pthreadpool_function_4d_tiled_t function, void *argument,
                                  size_t range_i, size_t range_j, size_t range_k, size_t range_l,
                                  size_t tile_i, size_t tile_j, size_t tile_k, size_t tile_l)
{
  const size_t rg[4] = {range_i, range_j, range_k, range_l};
  const size_t tl[4] = {tile_i, tile_j, tile_k, tile_l};
  go(threadpool, "pthreadpool_compute_4d_tiled", (ptp_fn)function, argument, PTP_K_4d_tiled, 0, rg,
     tl, 0);
}
