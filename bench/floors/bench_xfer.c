/* SPDX-License-Identifier: MIT */
/*
 * bench_xfer: what moving one cache line between two threads costs on this
 * machine, the floor under anything a pusher hands to a worker (an
 * operator's block, its var queue's line, the queue it is handed over in:
 * each is at least one such move).
 *
 *   bench_xfer [--rounds R]
 *
 * Two threads (main and one other, unpinned, as weft's pusher and worker
 * are) take turns on one counter in a line of its own: each waits for the
 * other's value and stores the next, so every turn moves the line once. R
 * repetitions of 20000 turns; one JSON line:
 *   {"rt":"xfer","unit":"ns","samples":[...],"check":"ok"}
 * each sample the nanoseconds of one move (a turn). "check" is "ok" when the
 * counter ended at exactly 20000 per repetition (no turn lost or doubled).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "probe.h"

enum { TURNS = 20000 };

static _Alignas(64) _Atomic long counter;
static _Atomic int stop;

/* The other thread: answers every odd value with the next even one. */
static void *responder(void *arg) {
  (void)arg;
  for (;;) {
    long v = atomic_load_explicit(&counter, memory_order_acquire); /* pairs with main's release */
    if (atomic_load_explicit(&stop, memory_order_relaxed))
      return NULL;
    if (v & 1)
      atomic_store_explicit(&counter, v + 1, memory_order_release); /* pairs with main's acquire */
  }
}

int main(int argc, char **argv) {
  int rounds = probe_rounds(argc, argv, 15, "bench_xfer");
  if (rounds < 0)
    return 2;
  pthread_t th;
  if (pthread_create(&th, NULL, responder, NULL)) {
    fprintf(stderr, "bench_xfer: pthread_create failed\n");
    return 1;
  }
  int ok = 1;
  printf("{\"rt\":\"xfer\",\"unit\":\"ns\",\"samples\":[");
  for (int r = -1; r < rounds; r++) { /* r = -1: warm-up */
    atomic_store(&counter, 0);
    long t0 = probe_now_ns();
    for (long v = 0; v < TURNS; v += 2) {
      atomic_store_explicit(&counter, v + 1, memory_order_release); /* pairs with the responder's acquire */
      while (atomic_load_explicit(&counter, memory_order_acquire) != v + 2) /* pairs with its release */
        ;
    }
    long t1 = probe_now_ns();
    if (atomic_load(&counter) != TURNS)
      ok = 0;
    if (r >= 0)
      printf("%s%.1f", r ? "," : "", (double)(t1 - t0) / TURNS);
  }
  atomic_store(&stop, 1);
  atomic_store(&counter, 1); /* let the responder see stop */
  pthread_join(th, NULL);
  printf("],\"turns\":%d,\"check\":\"%s\"}\n", TURNS, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
