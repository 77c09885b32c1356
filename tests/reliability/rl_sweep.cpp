/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: a swept graph's replay (src/graph/graph.h "Swept graphs",
 * replay.h weft_sweep_take, run.c sweep_task): every node's count is
 * its predecessors plus one for the sweep; the launch's sweeper walks the
 * nodes in capture order, chunk by chunk, and runs each node whose count
 * it takes to zero; a finishing node takes one off each successor's count
 * and releases (queues) the one it takes to zero; each node resets its own
 * count when it finishes; the sweeper counts itself off the top counter
 * when no chunk is left, beside the sinks, so the launch ends after both;
 * the next launch's gate resets the sweep (plain: its queuing of the
 * sweeper publishes it).
 *
 * The graph (capture order): roots 0 and 1 -> node 2 -> nodes 3 and 4, and
 * root 5 alone; chunks of 2 nodes. Node 0 stands for an operator the
 * sweeper does not run itself (a device operator, an async one): it queues
 * it; it runs the others where it takes them. Sinks 3, 4, 5: leaf counter {3, 4} (2),
 * leaf {5} (1), top counter 2 + the sweeper. A launcher launches it three
 * times (retrying while one runs); two workers run what is queued (nodes,
 * the sweeper) from a shared stack under a spinlock (the pool's hand-off:
 * release/acquire). In weft a swept graph's pool has one worker; the
 * second stands for the other threads that finish nodes and release their
 * successors meanwhile (an async operator's signal, a device's completion),
 * and for the sweeper queued behind other work and taken up again.
 *
 * Mutants (`rl_sweep n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  the sweeper's take relaxed              (replay.h, weft_sweep_take)
 *   2  the sweeper not counted in the launch's end (build.c, make_counters)
 *   3  a node's count reset without the sweep's (build.c, npred)
 *
 * Checks: every node runs exactly once per launch; a node sees the launch
 * number its predecessors wrote, in plain rl::var cells (an unordered
 * access is a reported data race), and its own cell holds the previous
 * launch's number; at the end every count and counter is back at its
 * start value.
 */
#include "rl_replay.hpp"

namespace {

constexpr int N = 6; /* nodes */
constexpr int CHUNK = 2;
constexpr int SWEEPERS = 1;
constexpr int LAUNCHES = 3;
constexpr int SWEEPER = 1 << 8; /* a queued item: the sweeper */

const int npred[N] = {0, 0, 2, 1, 1, 0};
const int rest_counts[2][N] = {{1, 1, 3, 2, 2, 1},
                                /* mutant 3: the count at rest misses the sweep's */
                                {0, 0, 2, 1, 1, 0}};
#define rest (rest_counts[WEFT_MUTANT == 3])
const int succ[N][2] = {{2, -1}, {2, -1}, {3, 4}, {-1, -1}, {-1, -1}, {-1, -1}};
const int counter_of[N] = {-1, -1, -1, 0, 0, 1};
const bool runs_here[N] = {false, true, true, true, true, true};
const int counter_inits[2][3] = {{2, 1, 2 + SWEEPERS},
                                  /* mutant 2: the top counter counts the sinks' leaves only */
                                  {2, 1, 2}};
#define counter_init (counter_inits[WEFT_MUTANT == 2])
const int counter_parent[3] = {2, 2, -1};

struct sweep_test : rl::test_suite<sweep_test, 3> {
  rl::atomic<int> pending[N];
  weft_rl::counter_tree<3> counters;
  rl::var<int> cursor;
  rl::atomic<int> running;
  rl::atomic<int> finished;
  rl::var<int> epoch;   /* the launch in progress (the gate's start writes it) */
  rl::var<int> cell[N]; /* what each node writes: the launch number */
  int runs[N];          /* plain: runs of each node, all launches */

  weft_rl::ready_stack<N + SWEEPERS> ready; /* the pool */

  void before()
  {
    for (int i = 0; i < N; i++) {
      pending[i].store(rest[i], rl::memory_order_relaxed);
      cell[i]($) = 0;
      runs[i] = 0;
    }
    counters.reset(counter_init, counter_parent);
    cursor($) = 0;
    running.store(0, rl::memory_order_relaxed);
    finished.store(0, rl::memory_order_relaxed);
    epoch($) = 0;
    ready.init();
  }

  void end_launch() { running.store(0, rl::memory_order_release); }

  /* A node's count taken off by a predecessor or the sweep: whether that
   * was the last (the taker runs it). */
  bool take(int i, bool relaxed)
  {
    int was = relaxed ? pending[i].load(rl::memory_order_relaxed)
                      : pending[i].load(rl::memory_order_acquire);
    if (was != 1)
      was = relaxed ? pending[i].fetch_sub(1, rl::memory_order_relaxed)
                    : pending[i].fetch_sub(1, rl::memory_order_acq_rel);
    RL_ASSERT(was >= 1);
    return was == 1;
  }

  /* A node runs (its fn), then finishes as weft_gnode_release does. */
  void run(int i, int launch)
  {
    RL_ASSERT(cell[i]($) == launch - 1); /* its previous run happened before */
    for (int p = 0; p < N; p++)
      for (int k = 0; k < 2; k++)
        if (succ[p][k] == i)
          RL_ASSERT(cell[p]($) == launch); /* every predecessor ran, for this launch */
    cell[i]($) = launch;
    runs[i]++;
    if (rest[i] > 1)
      pending[i].store(rest[i], rl::memory_order_relaxed);
    for (int k = 0; k < 2; k++) {
      int s = succ[i][k];
      if (s >= 0 && take(s, false))
        ready.push(s, launch);
    }
    if (counter_of[i] >= 0 && counters.count_off(counter_of[i], false))
      end_launch();
  }

  /* src/graph/run.c's sweep_task. */
  void sweep(int launch)
  {
    for (int lo; (lo = cursor($)) < N;) {
      cursor($) = lo + CHUNK;
      for (int i = lo; i < lo + CHUNK && i < N; i++) {
        bool mine = take(i, WEFT_MUTANT == 1); /* mutant 1: the sweeper's take relaxed */
        if (mine && runs_here[i])
          run(i, epoch($));
        else if (mine)
          ready.push(i, epoch($));
      }
      if (lo + CHUNK < N && lo == 0) { /* queued behind other work, once */
        ready.push(SWEEPER, launch);
        return;
      }
    }
    if (WEFT_MUTANT != 2 && counters.count_off(2, false)) /* counted off beside the sinks */
      end_launch();
    (void)launch;
  }

  void launcher()
  {
    for (int l = 1; l <= LAUNCHES; l++) {
      weft_rl::claim_launch(running);
      /* weft_graph_sweep_start, then the first sweeper queued */
      epoch($) = l;
      cursor($) = 0;
      ready.push(SWEEPER, l);
    }
    weft_rl::wait_launches(running, finished);
  }

  void thread(unsigned self)
  {
    if (self == 0)
      launcher();
    else
      weft_rl::serve(ready, finished, [this](int item, int launch) {
        if (item & SWEEPER)
          sweep(launch);
        else
          run(item, launch);
      });
  }

  void after()
  {
    for (int i = 0; i < N; i++) {
      RL_ASSERT(runs[i] == LAUNCHES);
      RL_ASSERT(pending[i].load(rl::memory_order_relaxed) == rest[i]);
    }
    counters.check_reset();
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the sweeper's take relaxed",
                                      "the sweeper not counted in the launch's end",
                                      "a node's count reset without the sweep's"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  /* The random scheduler only, as rl_graph.cpp (spin-waits). */
  weft_rl::run_one<sweep_test>("swept graph replay, 3 launches", rl::sched_random, 200000, 0, out);
  return weft_rl::finish("sweep", names[WEFT_MUTANT], out);
}
