/* SPDX-License-Identifier: MIT */
/*
 * Waiting by helping. A thread inside the pool's work that must wait (a
 * var wait or weft_wait_all inside an operator, a push at max_inflight from
 * inside an operator, a pusher pacing itself) runs other work meanwhile
 * instead of blocking its worker; a thread outside sleeps until a
 * completion wakes it.
 */
#ifndef WEFT_DEPS_HELP_H
#define WEFT_DEPS_HELP_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>
#include <stdint.h>

#include "deps/engine.h"

/* Waits until pred(eng, arg) holds, helping the pool run tasks on a worker
 * (or inside one of the pool's tasks); elsewhere it sleeps. */
void weft_engine_wait(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg), void *arg);
/* The same, but a thread that sleeps wakes after slice_ns at most (-1: only
 * when a completion wakes it) to ask pred again: for a pred that also
 * watches the clock. */
void weft_engine_wait_sliced(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg),
                             void *arg, int64_t slice_ns);

/* Called by a worker pushing from inside an operator every WEFT_PACE_EVERY
 * pushes: past WEFT_PACE_OPS operators pushed and not finished
 * (WEFT_PACE_OPS_ALONE in a pool of one worker), lets the others catch up
 * (tunables.h). Never nests. */
void weft_engine_pace(weft_engine *eng);

/* The same for a thread outside the pool (a user's thread pushing), every
 * WEFT_PACE_EVERY pushes: past WEFT_PACE_OUTSIDE_OPS operators pushed and
 * not finished it sleeps in slices of WEFT_PACE_OUTSIDE_SLEEP_NS until half
 * as many are left. It pushes on once WEFT_PACE_OUTSIDE_STALL_NS pass
 * without progress and with nothing ready queued in the pool (what is left
 * may wait for this thread); with ready work queued, once the workers have
 * run WEFT_PACE_OUTSIDE_STALL_CPU_NS of CPU time without progress (time
 * spent waiting for a CPU does not count), or WEFT_PACE_OUTSIDE_STALL_MAX_NS
 * pass whatever they ran. After such a stall it lets WEFT_PACE_OUTSIDE_OPS
 * more accumulate before it paces again. It never runs operators. */
void weft_engine_pace_outside(weft_engine *eng);

/* A push from inside the engine's work found max_inflight reached: helps
 * run operators while the count stays over the cap, then returns (such a
 * push never blocks). Helping runs operators that may push and help again:
 * the depth of such nesting on one thread is bounded by
 * WEFT_HELP_DEPTH_MAX (tunables.h); deeper pushes go over the cap at once. */
void weft_engine_help_over_cap(weft_engine *eng);

#endif /* WEFT_DEPS_HELP_H */
