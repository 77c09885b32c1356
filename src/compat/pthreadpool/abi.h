/* SPDX-License-Identifier: MIT */
/*
 * The pthreadpool ABI that libpthreadpool.so.0 exports (Debian 12's
 * libpthreadpool0 0.0~git20210507.1787867; XNNPACK and libtorch link it):
 * the types and functions, written from its documented interface. Users
 * compile against their own <pthreadpool.h>; when it is on this machine the
 * build includes it first (PTP_HAVE_SYSTEM_HEADER), so that any difference
 * from ours is a compile error here rather than a crash there.
 *
 * Only the names are pthreadpool's; everything behind them is weft's pool
 * (README "pthreadpool compatibility").
 */
#ifndef PTP_ABI_H
#define PTP_ABI_H

#include <stddef.h>
#include <stdint.h>

#if PTP_HAVE_SYSTEM_HEADER
#include <pthreadpool.h>
#endif

#define PTP_API __attribute__((visibility("default")))

typedef struct pthreadpool *pthreadpool_t;

typedef void (*pthreadpool_task_1d_t)(void *, size_t);
typedef void (*pthreadpool_task_1d_tile_1d_t)(void *, size_t, size_t);
typedef void (*pthreadpool_task_2d_t)(void *, size_t, size_t);
typedef void (*pthreadpool_task_2d_tile_1d_t)(void *, size_t, size_t, size_t);
typedef void (*pthreadpool_task_2d_tile_2d_t)(void *, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_3d_t)(void *, size_t, size_t, size_t);
typedef void (*pthreadpool_task_3d_tile_1d_t)(void *, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_3d_tile_2d_t)(void *, size_t, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_4d_t)(void *, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_4d_tile_1d_t)(void *, size_t, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_4d_tile_2d_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                              size_t);
typedef void (*pthreadpool_task_5d_t)(void *, size_t, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_5d_tile_1d_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                              size_t);
typedef void (*pthreadpool_task_5d_tile_2d_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                              size_t, size_t);
typedef void (*pthreadpool_task_6d_t)(void *, size_t, size_t, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_task_6d_tile_1d_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                              size_t, size_t);
typedef void (*pthreadpool_task_6d_tile_2d_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                              size_t, size_t, size_t);
typedef void (*pthreadpool_task_1d_with_id_t)(void *, uint32_t, size_t);
typedef void (*pthreadpool_task_2d_tile_2d_with_id_t)(void *, uint32_t, size_t, size_t, size_t,
                                                      size_t);
typedef void (*pthreadpool_task_3d_tile_2d_with_id_t)(void *, uint32_t, size_t, size_t, size_t,
                                                      size_t, size_t);
typedef void (*pthreadpool_task_4d_tile_2d_with_id_t)(void *, uint32_t, size_t, size_t, size_t,
                                                      size_t, size_t, size_t);

/* The legacy API's function types. */
typedef void (*pthreadpool_function_1d_t)(void *, size_t);
typedef void (*pthreadpool_function_1d_tiled_t)(void *, size_t, size_t);
typedef void (*pthreadpool_function_2d_t)(void *, size_t, size_t);
typedef void (*pthreadpool_function_2d_tiled_t)(void *, size_t, size_t, size_t, size_t);
typedef void (*pthreadpool_function_3d_tiled_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                                size_t);
typedef void (*pthreadpool_function_4d_tiled_t)(void *, size_t, size_t, size_t, size_t, size_t,
                                                size_t, size_t, size_t);

#ifndef PTHREADPOOL_FLAG_DISABLE_DENORMALS
#define PTHREADPOOL_FLAG_DISABLE_DENORMALS 0x00000001
#endif
#ifndef PTHREADPOOL_FLAG_YIELD_WORKERS
#define PTHREADPOOL_FLAG_YIELD_WORKERS 0x00000002
#endif

PTP_API pthreadpool_t pthreadpool_create(size_t threads_count);
PTP_API size_t pthreadpool_get_threads_count(pthreadpool_t threadpool);
PTP_API void pthreadpool_destroy(pthreadpool_t threadpool);

PTP_API void pthreadpool_parallelize_1d(pthreadpool_t threadpool, pthreadpool_task_1d_t function,
                                        void *context, size_t range, uint32_t flags);
PTP_API void pthreadpool_parallelize_1d_with_uarch(pthreadpool_t threadpool,
                                                   pthreadpool_task_1d_with_id_t function,
                                                   void *context, uint32_t default_uarch_index,
                                                   uint32_t max_uarch_index, size_t range,
                                                   uint32_t flags);
PTP_API void pthreadpool_parallelize_1d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_1d_tile_1d_t function,
                                                void *context, size_t range, size_t tile,
                                                uint32_t flags);
PTP_API void pthreadpool_parallelize_2d(pthreadpool_t threadpool, pthreadpool_task_2d_t function,
                                        void *context, size_t range_i, size_t range_j,
                                        uint32_t flags);
PTP_API void pthreadpool_parallelize_2d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_2d_tile_1d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t tile_j, uint32_t flags);
PTP_API void pthreadpool_parallelize_2d_tile_2d(pthreadpool_t threadpool,
                                                pthreadpool_task_2d_tile_2d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t tile_i, size_t tile_j, uint32_t flags);
PTP_API void pthreadpool_parallelize_2d_tile_2d_with_uarch(
    pthreadpool_t threadpool, pthreadpool_task_2d_tile_2d_with_id_t function, void *context,
    uint32_t default_uarch_index, uint32_t max_uarch_index, size_t range_i, size_t range_j,
    size_t tile_i, size_t tile_j, uint32_t flags);
PTP_API void pthreadpool_parallelize_3d(pthreadpool_t threadpool, pthreadpool_task_3d_t function,
                                        void *context, size_t range_i, size_t range_j,
                                        size_t range_k, uint32_t flags);
PTP_API void pthreadpool_parallelize_3d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_3d_tile_1d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t tile_k, uint32_t flags);
PTP_API void pthreadpool_parallelize_3d_tile_2d(pthreadpool_t threadpool,
                                                pthreadpool_task_3d_tile_2d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t tile_j, size_t tile_k,
                                                uint32_t flags);
PTP_API void pthreadpool_parallelize_3d_tile_2d_with_uarch(
    pthreadpool_t threadpool, pthreadpool_task_3d_tile_2d_with_id_t function, void *context,
    uint32_t default_uarch_index, uint32_t max_uarch_index, size_t range_i, size_t range_j,
    size_t range_k, size_t tile_j, size_t tile_k, uint32_t flags);
PTP_API void pthreadpool_parallelize_4d(pthreadpool_t threadpool, pthreadpool_task_4d_t function,
                                        void *context, size_t range_i, size_t range_j,
                                        size_t range_k, size_t range_l, uint32_t flags);
PTP_API void pthreadpool_parallelize_4d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_4d_tile_1d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t tile_l,
                                                uint32_t flags);
PTP_API void pthreadpool_parallelize_4d_tile_2d(pthreadpool_t threadpool,
                                                pthreadpool_task_4d_tile_2d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t tile_k,
                                                size_t tile_l, uint32_t flags);
PTP_API void pthreadpool_parallelize_4d_tile_2d_with_uarch(
    pthreadpool_t threadpool, pthreadpool_task_4d_tile_2d_with_id_t function, void *context,
    uint32_t default_uarch_index, uint32_t max_uarch_index, size_t range_i, size_t range_j,
    size_t range_k, size_t range_l, size_t tile_k, size_t tile_l, uint32_t flags);
PTP_API void pthreadpool_parallelize_5d(pthreadpool_t threadpool, pthreadpool_task_5d_t function,
                                        void *context, size_t range_i, size_t range_j,
                                        size_t range_k, size_t range_l, size_t range_m,
                                        uint32_t flags);
PTP_API void pthreadpool_parallelize_5d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_5d_tile_1d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t range_m,
                                                size_t tile_m, uint32_t flags);
PTP_API void pthreadpool_parallelize_5d_tile_2d(pthreadpool_t threadpool,
                                                pthreadpool_task_5d_tile_2d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t range_m,
                                                size_t tile_l, size_t tile_m, uint32_t flags);
PTP_API void pthreadpool_parallelize_6d(pthreadpool_t threadpool, pthreadpool_task_6d_t function,
                                        void *context, size_t range_i, size_t range_j,
                                        size_t range_k, size_t range_l, size_t range_m,
                                        size_t range_n, uint32_t flags);
PTP_API void pthreadpool_parallelize_6d_tile_1d(pthreadpool_t threadpool,
                                                pthreadpool_task_6d_tile_1d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t range_m,
                                                size_t range_n, size_t tile_n, uint32_t flags);
PTP_API void pthreadpool_parallelize_6d_tile_2d(pthreadpool_t threadpool,
                                                pthreadpool_task_6d_tile_2d_t function,
                                                void *context, size_t range_i, size_t range_j,
                                                size_t range_k, size_t range_l, size_t range_m,
                                                size_t range_n, size_t tile_m, size_t tile_n,
                                                uint32_t flags);

PTP_API void pthreadpool_compute_1d(pthreadpool_t threadpool, pthreadpool_function_1d_t function,
                                    void *argument, size_t range);
PTP_API void pthreadpool_compute_1d_tiled(pthreadpool_t threadpool,
                                          pthreadpool_function_1d_tiled_t function,
                                          void *argument, size_t range, size_t tile);
PTP_API void pthreadpool_compute_2d(pthreadpool_t threadpool, pthreadpool_function_2d_t function,
                                    void *argument, size_t range_i, size_t range_j);
PTP_API void pthreadpool_compute_2d_tiled(pthreadpool_t threadpool,
                                          pthreadpool_function_2d_tiled_t function,
                                          void *argument, size_t range_i, size_t range_j,
                                          size_t tile_i, size_t tile_j);
PTP_API void pthreadpool_compute_3d_tiled(pthreadpool_t threadpool,
                                          pthreadpool_function_3d_tiled_t function,
                                          void *argument, size_t range_i, size_t range_j,
                                          size_t range_k, size_t tile_i, size_t tile_j,
                                          size_t tile_k);
PTP_API void pthreadpool_compute_4d_tiled(pthreadpool_t threadpool,
                                          pthreadpool_function_4d_tiled_t function,
                                          void *argument, size_t range_i, size_t range_j,
                                          size_t range_k, size_t range_l, size_t tile_i,
                                          size_t tile_j, size_t tile_k, size_t tile_l);

#endif /* PTP_ABI_H */
