/* SPDX-License-Identifier: MIT */
/*
 * Running one task record on the calling thread: a user task, or a piece of
 * a parallel loop; then finishing it in its group, if it has one. Used by the
 * worker loop (worker.c) and by group waits that help (wait.c).
 */
#ifndef WEFT_POOL_RUN_H
#define WEFT_POOL_RUN_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "pool/core.h"

/* Whether the calling thread is a worker in its main loop (worker.c sets
 * it), for weft_pool_top_task (pool_ext.h). Owner only (thread-local). */
extern _Thread_local bool weft_tls_in_main_loop WEFT_TLS;

/* Runs t on the calling thread (w: its worker in pool, or NULL), and frees
 * its record first unless it is embedded. */
void weft_run_task(weft_pool *pool, weft_worker *w, weft_task *t);

#endif /* WEFT_POOL_RUN_H */
