/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: a captured graph's replay counters (src/graph/replay.c,
 * graph_api.c): each node's count of predecessors still to finish (the
 * dense pending array; a successor with one predecessor has none and is
 * released by it), reset by the node itself when it finishes; the sinks'
 * counter tree, each counter put back to its start value by whoever takes
 * it to zero; the running flag, released by the launch's last sink and
 * acquired by the next launch's CAS. Nothing is reset by the launcher, so
 * every reset must reach the next launch through those orders alone.
 *
 * The graph: roots 0 and 1 -> node 2 (two predecessors: a count) -> nodes
 * 3 and 4 (one predecessor each: no count), and root 5 alone. Sinks 3, 4,
 * 5: leaf counter {3, 4} (2) and leaf {5} (1) under a top counter (2), as
 * WEFT_GRAPH_FANIN = 2 would make it. A launcher thread launches it three
 * times (retrying while the previous launch runs, as the differential test
 * does); two workers run ready nodes from a shared stack under a spinlock
 * (the pool's hand-off: release/acquire).
 *
 * Mutants (`rl_graph n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  the sink counters taken off relaxed   (replay.c, count_off)
 *   2  a successor's count taken off relaxed (replay.c, weft_gnode_finish)
 *   3  running cleared relaxed               (replay.c, the launch's end)
 *
 * Checks: every node runs exactly once per launch; a node sees the launch
 * number its predecessors wrote, in plain rl::var cells (an unordered
 * access is a reported data race), and its own cell holds the previous
 * launch's number (the previous run of it happened before); at the end
 * every cell holds the last launch's number and every counter is back at
 * its start value.
 */
#include "rl_replay.hpp"

namespace {

constexpr int N = 6;       /* nodes */
constexpr int LAUNCHES = 3;
constexpr int SOLE = 1 << 30;

/* The graph, as build.c makes it. */
const int npred[N] = {0, 0, 2, 1, 1, 0};
const int succ[N][2] = {{2, -1}, {2, -1}, {3 | SOLE, 4 | SOLE}, {-1, -1}, {-1, -1}, {-1, -1}};
const int counter_of[N] = {-1, -1, -1, 0, 0, 1}; /* leaf counters of the sinks */
const int counter_init[3] = {2, 1, 2};
const int counter_parent[3] = {2, 2, -1};
const int roots[3] = {0, 1, 5};

struct graph_test : rl::test_suite<graph_test, 3> {
  rl::atomic<int> pending[N];
  weft_rl::counter_tree<3> counters;
  rl::atomic<int> running;
  rl::atomic<int> finished; /* the launcher is done: workers may stop once idle */
  rl::var<int> cell[N];     /* what each node writes: the launch number */
  int launch_of[N];         /* plain: the launch each node ran for last (checked in after) */

  weft_rl::ready_stack<N> ready; /* the pool */

  void before()
  {
    for (int i = 0; i < N; i++) {
      pending[i].store(npred[i], rl::memory_order_relaxed);
      cell[i]($) = 0;
      launch_of[i] = 0;
    }
    counters.reset(counter_init, counter_parent);
    running.store(0, rl::memory_order_relaxed);
    finished.store(0, rl::memory_order_relaxed);
    ready.init();
  }

  /* A node runs (its fn), then finishes as weft_gnode_finish does. */
  void run(int i, int launch)
  {
    RL_ASSERT(cell[i]($) == launch - 1); /* its previous run happened before */
    for (int p = 0; p < N; p++)
      for (int k = 0; k < 2; k++)
        if (succ[p][k] >= 0 && (succ[p][k] & ~SOLE) == i)
          RL_ASSERT(cell[p]($) == launch); /* every predecessor ran, for this launch */
    cell[i]($) = launch;
    launch_of[i] = launch;
    if (npred[i] > 1)
      pending[i].store(npred[i], rl::memory_order_relaxed);
    for (int k = 0; k < 2; k++) {
      int e = succ[i][k];
      if (e < 0)
        continue;
      if (!(e & SOLE)) {
        /* mutant 2: the successor's count taken off relaxed */
        int was = pending[e].fetch_sub(
            1, WEFT_RL_MO(WEFT_MUTANT == 2, relaxed, acq_rel));
        RL_ASSERT(was >= 1);
        if (was != 1)
          continue;
      }
      ready.push(e & ~SOLE, launch);
    }
    /* mutant 1: the sink counts relaxed: resets do not reach the next launch */
    if (counter_of[i] >= 0 && counters.count_off(counter_of[i], WEFT_MUTANT == 1)) {
      /* mutant 3: the launch's end published relaxed */
      running.store(0, WEFT_RL_MO(WEFT_MUTANT == 3, relaxed, release));
    }
  }

  void launcher()
  {
    for (int l = 1; l <= LAUNCHES; l++) {
      weft_rl::claim_launch(running);
      for (int r = 0; r < 3; r++) /* the gate's start and the roots' fan-out, in one */
        ready.push(roots[r], l);
    }
    weft_rl::wait_launches(running, finished);
  }

  void worker()
  {
    weft_rl::serve(ready, finished, [this](int node, int launch) { run(node, launch); });
  }

  void thread(unsigned self)
  {
    if (self == 0)
      launcher();
    else
      worker();
  }

  void after()
  {
    for (int i = 0; i < N; i++) {
      RL_ASSERT(launch_of[i] == LAUNCHES);
      RL_ASSERT(pending[i].load(rl::memory_order_relaxed) == npred[i]);
    }
    counters.check_reset();
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the sink counts relaxed",
                                      "a successor's count taken off relaxed",
                                      "the launch's end published relaxed"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  /* The random scheduler only: the launcher and the idle workers wait in
   * spin loops (WEFT_EBUSY retries, an empty queue), which relacy's
   * context-bound scheduler reports as livelocks once its preemptions are
   * spent; blocking primitives instead (a mutex and a condition variable)
   * would order the launches themselves and hide the orders under test. */
  weft_rl::run_one<graph_test>("graph replay, 3 launches", rl::sched_random, 200000, 0, out);
  return weft_rl::finish("graph", names[WEFT_MUTANT], out);
}
