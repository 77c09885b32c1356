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
 * own, in turn, as the bench's indep list):
 *   push:       the var's lock (an exchange, acquire) and unlock (a release
 *               store); the ready operator onto a deque (bottom: a release
 *               store);
 *   run:        the deque's take (bottom stored, a seq_cst fence, top read);
 *   completion: an acq_rel decrement of a wait counter (a grant), and the
 *               var's lock and unlock again.
 * R repetitions of 4,000,000 operators; one JSON line:
 *   {"rt":"skeleton","unit":"ns","samples":[...],"ops":N,"check":"ok"}
 * each sample the nanoseconds of one operator. "check" is "ok" when every
 * lock ended free, the deque empty and the counter at exactly minus the
 * number of operators run (no step lost).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "probe.h"

enum { OPS = 4000000, VARS = 1024 };

typedef struct line {
  _Alignas(64) _Atomic int lock; /* 1 while held */
} line;

static line vars[VARS];
static _Alignas(64) _Atomic int64_t bottom;
static _Alignas(64) _Atomic int64_t top;
static void *_Atomic slots[64];
static _Alignas(64) _Atomic int64_t wait_counter;

static inline void lock(_Atomic int *l) {
  /* acquire: pairs with the release in unlock. */
  while (atomic_exchange_explicit(l, 1, memory_order_acquire))
    ;
}

static inline void unlock(_Atomic int *l) {
  /* release: publishes what the lock protects to its next holder. */
  atomic_store_explicit(l, 0, memory_order_release);
}

/* The owner's push and take of a Chase-Lev deque, the item in slot b. */
static inline void deque_push(void *item) {
  int64_t b = atomic_load_explicit(&bottom, memory_order_relaxed);
  atomic_store_explicit(&slots[b & 63], item, memory_order_relaxed);
  /* release: publishes the slot to thieves (there are none here: the
   * ordering is what is measured). */
  atomic_store_explicit(&bottom, b + 1, memory_order_release);
}

static inline void *deque_take(void) {
  int64_t b = atomic_load_explicit(&bottom, memory_order_relaxed) - 1;
  atomic_store_explicit(&bottom, b, memory_order_relaxed);
  /* seq_cst: orders the bottom store before the top load, as against a
   * thief's fence in a real deque. */
  atomic_thread_fence(memory_order_seq_cst);
  int64_t t = atomic_load_explicit(&top, memory_order_relaxed);
  if (t > b) {
    atomic_store_explicit(&bottom, b + 1, memory_order_relaxed);
    return NULL;
  }
  void *item = atomic_load_explicit(&slots[b & 63], memory_order_relaxed);
  if (t == b) {
    /* seq_cst: the last item, raced for through top. */
    if (!atomic_compare_exchange_strong_explicit(&top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
      item = NULL;
    atomic_store_explicit(&bottom, b + 1, memory_order_relaxed);
  }
  return item;
}

int main(int argc, char **argv) {
  int rounds = probe_rounds(argc, argv, 7, "bench_skeleton");
  if (rounds < 0)
    return 2;
  int ok = 1;
  long ran = 0;
  printf("{\"rt\":\"skeleton\",\"unit\":\"ns\",\"samples\":[");
  for (int r = -1; r < rounds; r++) { /* r = -1: warm-up */
    long t0 = probe_now_ns();
    for (long i = 0; i < OPS; i++) {
      _Atomic int *l = &vars[i % VARS].lock;
      lock(l); /* push: append to the var's queue */
      unlock(l);
      deque_push(&vars[i % VARS]);
      if (deque_take() != &vars[i % VARS]) /* run */
        ok = 0;
      /* acq_rel: as a grant (the last decrement sees the registration). */
      atomic_fetch_sub_explicit(&wait_counter, 1, memory_order_acq_rel);
      lock(l); /* completion: the var's queue */
      unlock(l);
    }
    long t1 = probe_now_ns();
    ran += OPS;
    if (r >= 0)
      printf("%s%.2f", r ? "," : "", (double)(t1 - t0) / OPS);
  }
  for (int v = 0; v < VARS; v++)
    if (atomic_load(&vars[v].lock))
      ok = 0;
  if (atomic_load(&bottom) != atomic_load(&top) || atomic_load(&wait_counter) != -ran)
    ok = 0;
  printf("],\"ops\":%d,\"check\":\"%s\"}\n", OPS, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
