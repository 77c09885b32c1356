/* SPDX-License-Identifier: MIT */
/*
 * Operators in flight, counted by epoch: a weft_wait_all moves pushes on to
 * the next epoch and waits for its own slot (epoch & 1) to drain, so
 * operators pushed after it began cannot hold it up. Where threads wait for
 * a count to fall (wait_all, destroy, var waits, pushers held back by
 * max_inflight) and how a completion wakes them.
 */
#ifndef WEFT_DEPS_INFLIGHT_H
#define WEFT_DEPS_INFLIGHT_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "deps/engine.h"
#include "pool/pool_ext.h"

/* Operators counted by epoch slot, pushed and finished, each count only
 * growing. Tallies, each on a line of its own:
 *   [0, nworkers)                  one per pool worker, written by that
 *                                  worker alone (a load and a store, no
 *                                  read-modify-write);
 *   [nworkers, nworkers + WEFT_OUTSIDE_TALLIES)
 *                                  the pushes of threads outside the pool,
 *                                  each owned by one such thread at a time
 *                                  (claimed through owner) and written by it
 *                                  alone, likewise;
 *   ntally - 1                     shared: every other count (finishes on
 *                                  threads outside the pool, pushes of the
 *                                  threads that own no tally), by RMW.
 * A slot is drained when the sum of its finished counts equals the sum of
 * its pushed counts, read in that order (inflight.c, tally_drained). */
typedef struct weft_engine_tally {
  _Alignas(64) _Atomic uint64_t pushed[2];
  _Atomic uint64_t done[2];
  /* atomic: an outside tally's owning thread (its token, inflight.c), NULL
   * when free; claimed and given back by CAS */
  _Atomic(void *) owner;
} weft_engine_tally;

typedef struct weft_engine_sync {
  _Alignas(64) _Atomic int waiters; /* atomic: threads sleeping on idle_seq */
  _Atomic uint32_t idle_seq;        /* atomic: futex word, bumped by notify */
  /* atomic: threads waiting for a slot to drain (wait_all, destroy); while
   * there are any, a completion checks the sums and notifies at zero. */
  _Atomic int drain_waiters;
  int cap;                          /* immutable: tallies allocated */
  /* atomic, relaxed: set when handed out (pool workers +
   * WEFT_OUTSIDE_TALLIES + 1); a late completion of the block's previous
   * engine may read it then. */
  _Atomic int ntally;
  /* atomic, relaxed: bumped each time the block is handed out, so that a
   * thread's note of the tally it owns in it (inflight.c) goes stale with
   * the engine it was for */
  _Atomic uint64_t life;
  /* atomic: what weft_fence_heavy does its read-modify-write on where it
   * has no membarrier (wait_all's side of the outside tallies' handshake) */
  _Atomic int64_t fence_word;
  struct weft_engine_sync *next;    /* under the list's lock while free */
  weft_engine_tally tally[];        /* [cap] */
} weft_engine_sync;

/* A sync block for a pool of nworkers workers, zeroed, its outside tallies
 * free; NULL without memory. Blocks are recycled, never freed. */
weft_engine_sync *weft_engine_sync_get(int nworkers);
void weft_engine_sync_put(weft_engine_sync *s);

/* Counts a new operator in the current epoch (its parent's, when an
 * operator pushes it); returns that epoch (the slot is epoch & 1). */
uint64_t weft_engine_count_push(weft_engine *eng);
/* Uncounts one of slot (a push that failed, a device operator). */
void weft_engine_count_done(weft_engine *eng, int slot);
/* The same for n finished operators of the given epoch. hook non-NULL: the
 * caller is a worker running the engine's task straight from its main loop,
 * so the drain check (when a thread waits for one) may be left for later:
 * hook is installed as the pool's weft_tls_between, which runs it before
 * the worker runs anything else or goes idle. */
void weft_engine_count_done_op(weft_engine *eng, uint64_t epoch, uint32_t n, weft_between_fn hook);
/* The same, when the caller knows the slot is not drained (it is about to
 * run an operator counted in it): no drain check. n: finishes counted. */
void weft_engine_count_done_busy(weft_engine *eng, int slot, uint32_t n);
/* Does the left drain check now, if any. */
void weft_engine_drain_flush(void);
/* Does it now unless an operator of eng counted in epoch runs next. */
void weft_engine_drain_before(const weft_engine *eng, uint64_t epoch);
/* Whether slot (0 or 1; -1: both) holds no operator in flight. */
bool weft_engine_drained(weft_engine *eng, int slot);
/* Whether a thread other than the caller owns an outside tally of sy (and
 * may count there with only a compiler barrier): then a wait_all's flip
 * needs weft_fence_heavy before it reads the counts. Call after the flip. */
bool weft_engine_light_counters(weft_engine_sync *sy);
/* Roughly how many operators are pushed and not finished (for pacing). */
uint64_t weft_engine_backlog(weft_engine *eng);
/* How many operators have finished, roughly (a count that only grows; for
 * pacing: whether the workers make progress). */
uint64_t weft_engine_finished(weft_engine *eng);
/* How many threads outside the pool own a tally of eng's: users' threads
 * that pushed to it and have not exited (at least 1, at most
 * WEFT_OUTSIDE_TALLIES; for pacing, read on lines the backlog reads). */
int weft_engine_outside_pushers(weft_engine *eng);

/* Wakes threads waiting on eng's counts (after a completion). */
void weft_engine_notify(weft_engine *eng);
void weft_engine_sync_notify(weft_engine_sync *sync);

#endif /* WEFT_DEPS_INFLIGHT_H */
