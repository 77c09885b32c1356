/* SPDX-License-Identifier: MIT */
/*
 * The injection queue's ring (src/pool/inject.c: claim_free and the ring
 * paths of weft_inject_push, claim_solo for weft_inject_push_solo, at_head, take_ring with one task, and the
 * ring part of weft_inject_looks_empty) in relacy's atomics, with the same memory
 * orders, for the harnesses that use it: rl_inject.cpp (with the overflow
 * list around it) and rl_park.cpp (the queue the parking protocol watches).
 *
 * A harness that plants a mutant here defines, before including this file:
 *   RL_RING_K_PUBLISH    the order of a push's store of the cell's seq
 *   RL_RING_K_HEAD_SEQ   the order of at_head's load of the cell's seq
 *   RL_RING_TRUST_COPY   1: a producer trusts its copy of head even when
 *                        the ring looks full (never reads head)
 */
#ifndef WEFT_TESTS_RL_RING_HPP
#define WEFT_TESTS_RL_RING_HPP

#include "rl_common.hpp"

#ifndef RL_RING_K_PUBLISH
#define RL_RING_K_PUBLISH rl::memory_order_release
#endif
#ifndef RL_RING_K_HEAD_SEQ
#define RL_RING_K_HEAD_SEQ rl::memory_order_acquire
#endif
#ifndef RL_RING_TRUST_COPY
#define RL_RING_TRUST_COPY 0
#endif

template <unsigned kCells>
struct rl_ring {
  rl::atomic<unsigned> tail, head_seen, head;
  rl::atomic<unsigned> seq[kCells];
  rl::atomic<int> task[kCells]; /* atomic in the C code too: a dropped read may race a fill */

  static int lap_dif(unsigned s, unsigned p) { return (int)(s - (p + 1)); }

  void init()
  {
    tail.store(0, rl::memory_order_relaxed);
    head_seen.store(0, rl::memory_order_relaxed);
    head.store(0, rl::memory_order_relaxed);
    for (unsigned i = 0; i < kCells; i++) {
      seq[i].store(i + 1 - kCells, rl::memory_order_relaxed); /* a lap behind */
      task[i].store(0, rl::memory_order_relaxed);
    }
  }

  /* claim_free (solo: claim_solo), then the fill and its publication;
   * false when full */
  bool push(int t, bool solo = false)
  {
    unsigned p = tail.load(rl::memory_order_relaxed);
    for (;;) {
      unsigned h = head_seen.load(rl::memory_order_acquire);
      if ((int)(p - h) >= (int)kCells && !RL_RING_TRUST_COPY) {
        h = head.load(rl::memory_order_acquire);
        if ((int)(p - h) >= (int)kCells)
          return false;
        head_seen.store(h, rl::memory_order_release);
      }
      if (solo) /* the queue's one producer: a plain store of tail */
        tail.store(p + 1, rl::memory_order_relaxed);
      if (solo || tail.compare_exchange_weak(p, p + 1, rl::memory_order_relaxed)) {
        task[p % kCells].store(t, rl::memory_order_relaxed);
        seq[p % kCells].store(p + 1, RL_RING_K_PUBLISH);
        return true;
      }
    }
  }

  /* at_head: moves h on past stale values; lap_dif at the current head */
  int at_head(unsigned &h)
  {
    for (;;) {
      int d = lap_dif(seq[h % kCells].load(RL_RING_K_HEAD_SEQ), h);
      if (d <= 0)
        return d;
      h = head.load(rl::memory_order_relaxed);
    }
  }

  /* take_ring with max 1: a task id, 0 when empty */
  int take()
  {
    unsigned h = head.load(rl::memory_order_relaxed);
    for (;;) {
      if (at_head(h) < 0)
        return 0;
      int t = task[h % kCells].load(rl::memory_order_relaxed);
      if (head.compare_exchange_weak(h, h + 1, rl::memory_order_release))
        return t;
    }
  }

  /* weft_inject_looks_empty, past its overflow check */
  bool looks_empty()
  {
    unsigned h = head.load(rl::memory_order_relaxed);
    return at_head(h) < 0;
  }
};

#endif
