/* SPDX-License-Identifier: MIT */
/*
 * What the graph replay harnesses (rl_graph.cpp, rl_sweep.cpp) share: the
 * pool they run on (ready items on a stack under a spinlock: the pool's
 * hand-off, release/acquire), the sinks' counter tree (replay.c,
 * count_off), and the launcher's wait for the previous launch.
 */
#ifndef WEFT_TESTS_RL_REPLAY_HPP
#define WEFT_TESTS_RL_REPLAY_HPP

#include "rl_common.hpp"

namespace weft_rl {

/* Ready items (a node, or what a harness queues besides), each with the
 * launch it belongs to (its epoch). */
template <int CAP> struct ready_stack {
  spinlock lock;
  rl::var<int> n;
  rl::var<int> item[CAP];
  rl::var<int> launch[CAP];

  void init()
  {
    lock.init();
    n($) = 0;
  }

  void push(int it, int l)
  {
    lock.lock();
    int k = n($);
    RL_ASSERT(k < CAP);
    item[k]($) = it;
    launch[k]($) = l;
    n($) = k + 1;
    lock.unlock();
  }

  bool pop(int *it, int *l)
  {
    lock.lock();
    int k = n($);
    bool got = k > 0;
    if (got) {
      *it = item[k - 1]($);
      *l = launch[k - 1]($);
      n($) = k - 1;
    }
    lock.unlock();
    return got;
  }
};

/* The sinks' counters: init[c] to count off, parent[c] above (-1: the
 * top), each put back to init by whoever takes it to zero. relaxed: the
 * mutant that takes them off relaxed. */
template <int NC> struct counter_tree {
  rl::atomic<int> left[NC];
  const int *init;
  const int *parent;

  void reset(const int *init_, const int *parent_)
  {
    init = init_;
    parent = parent_;
    for (int c = 0; c < NC; c++)
      left[c].store(init[c], rl::memory_order_relaxed);
  }

  /* Counts one off c and up the tree; true when that ends the launch. */
  bool count_off(int c, bool relaxed)
  {
    for (;;) {
      int was = relaxed ? left[c].fetch_sub(1, rl::memory_order_relaxed)
                        : left[c].fetch_sub(1, rl::memory_order_acq_rel);
      RL_ASSERT(was >= 1);
      if (was != 1)
        return false;
      left[c].store(init[c], rl::memory_order_relaxed);
      if (parent[c] < 0)
        return true;
      c = parent[c];
    }
  }

  void check_reset()
  {
    for (int c = 0; c < NC; c++)
      RL_ASSERT(left[c].load(rl::memory_order_relaxed) == init[c]);
  }
};

/* weft_graph_launch's claim of the graph: retried while the previous
 * launch runs (WEFT_EBUSY), as the differential test does. */
inline void claim_launch(rl::atomic<int> &running)
{
  for (;;) {
    int idle = 0;
    if (running.compare_exchange_strong(idle, 1, rl::memory_order_acquire,
                                        rl::memory_order_relaxed))
      return;
    rl::yield(1, $);
  }
}

/* The launcher's weft_wait_all, then the workers may stop once idle. */
inline void wait_launches(rl::atomic<int> &running, rl::atomic<int> &finished)
{
  while (running.load(rl::memory_order_acquire))
    rl::yield(1, $);
  finished.store(1, rl::memory_order_release);
}

/* A worker: runs what it takes (run(item, launch)) until the launcher is
 * done and nothing is left; idle, it yields (the pool's spin). */
template <int CAP, class Run>
void serve(ready_stack<CAP> &ready, rl::atomic<int> &finished, Run run)
{
  for (;;) {
    int item = -1, launch = 0;
    if (ready.pop(&item, &launch)) {
      run(item, launch);
      continue;
    }
    if (finished.load(rl::memory_order_acquire))
      return;
    rl::yield(1, $);
  }
}

} // namespace weft_rl

#endif /* WEFT_TESTS_RL_REPLAY_HPP */
