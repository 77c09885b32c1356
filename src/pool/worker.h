/* SPDX-License-Identifier: MIT */
/* The worker thread (worker.c), started by pool.c. */
#ifndef WEFT_POOL_WORKER_H
#define WEFT_POOL_WORKER_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

/* A worker thread's body; arg: its weft_worker. */
void *weft_worker_main(void *arg);

#endif /* WEFT_POOL_WORKER_H */
