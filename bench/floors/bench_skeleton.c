/* SPDX-License-Identifier: MIT */
/*
 * bench_skeleton: what the locked instructions of one operator cost on this
 * machine at one thread, the floor under the engine's per-operator time
 * there (docs/one-thread-cost.md). Whatever else an engine that tracks
 * dependencies does per operator comes on top of this.
 *
 *   bench_skeleton [--rounds R]
 *
 * One thread, per operator, the locked steps weft's path takes for an
 * operator that writes one var (the var one of 1024, each on a line of its
 * own, in turn, as the bench's indep list), with weft's own spinlock
 * (common/spinlock.h) and deque (pool/deque.c, from the internal archive):
 *   push:       the var's lock and unlock; the ready operator onto the
 *               deque (bottom: a release store);
 *   run:        the deque's take (its seq_cst fence, and the compare-and-
 *               swap on top that a deque holding one item pays);
 *   completion: an acq_rel decrement of a wait counter (a grant), and the
 *               var's lock and unlock again.
 * R repetitions of 4,000,000 operators; one JSON line:
 *   {"rt":"skeleton","unit":"ns","samples":[...],"ops":N,"check":"ok"}
 * each sample the nanoseconds of one operator. "check" is "ok" when every
 * push succeeded and took back its own item, every lock ended free, the
 * deque empty and the counter at exactly minus the number of operators run
 * (no step lost).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "common/spinlock.h"
#include "pool/deque.h"
#include "probe.h"

enum { OPS = 4000000, VARS = 1024 };

/* A var's queue line: its lock, alone on the line. */
typedef struct line {
  _Alignas(64) weft_spinlock lock;
} line;

static line vars[VARS];
static weft_deque deque; /* weft's own (src/pool/deque.c) */
static _Alignas(64) _Atomic int64_t wait_counter;

int main(int argc, char **argv) {
  int rounds = probe_rounds(argc, argv, 7, "bench_skeleton");
  if (rounds < 0)
    return 2;
  for (int v = 0; v < VARS; v++)
    weft_spin_init(&vars[v].lock);
  if (weft_deque_init(&deque, 64) != 0) {
    fprintf(stderr, "bench_skeleton: no memory for the deque\n");
    return 1;
  }
  int ok = 1;
  long ran = 0;
  printf("{\"rt\":\"skeleton\",\"unit\":\"ns\",\"samples\":[");
  for (int r = -1; r < rounds; r++) { /* r = -1: warm-up */
    long t0 = probe_now_ns();
    for (long i = 0; i < OPS; i++) {
      weft_spinlock *l = &vars[i % VARS].lock;
      weft_spin_lock(l); /* push: append to the var's queue */
      weft_spin_unlock(l);
      if (weft_deque_push(&deque, &vars[i % VARS]) != 0 ||
          weft_deque_take(&deque) != &vars[i % VARS]) /* run */
        ok = 0;
      /* acq_rel: as a grant (the last decrement sees the registration). */
      atomic_fetch_sub_explicit(&wait_counter, 1, memory_order_acq_rel);
      weft_spin_lock(l); /* completion: the var's queue */
      weft_spin_unlock(l);
    }
    long t1 = probe_now_ns();
    ran += OPS;
    if (r >= 0)
      printf("%s%.2f", r ? "," : "", (double)(t1 - t0) / OPS);
  }
  for (int v = 0; v < VARS; v++)
    if (atomic_load(&vars[v].lock.locked))
      ok = 0;
  if (weft_deque_take(&deque) != NULL || atomic_load(&wait_counter) != -ran)
    ok = 0;
  weft_deque_destroy(&deque);
  printf("],\"ops\":%d,\"check\":\"%s\"}\n", OPS, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
