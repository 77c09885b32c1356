/*
 * relacy harness: a captured graph's replay counters (src/deps/replay.c,
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
 * Mutants (-DWEFT_MUTANT=n, run by mutants.sh; each must be caught):
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
#include "rl_common.hpp"

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

using weft_rl::spinlock;

struct graph_test : rl::test_suite<graph_test, 3> {
  rl::atomic<int> pending[N];
  rl::atomic<int> counter[3];
  rl::atomic<int> running;
  rl::atomic<int> finished; /* the launcher is done: workers may stop once idle */
  rl::var<int> cell[N];     /* what each node writes: the launch number */
  int launch_of[N];         /* plain: the launch each node ran for last (checked in after) */

  /* The pool: ready nodes on a stack under a spinlock. */
  spinlock qlock;
  rl::var<int> qn;
  rl::var<int> q[N];
  rl::var<int> qlaunch[N];  /* the launch each queued node belongs to (its epoch) */

  void before()
  {
    for (int i = 0; i < N; i++) {
      pending[i].store(npred[i], rl::memory_order_relaxed);
      cell[i]($) = 0;
      launch_of[i] = 0;
    }
    for (int c = 0; c < 3; c++)
      counter[c].store(counter_init[c], rl::memory_order_relaxed);
    running.store(0, rl::memory_order_relaxed);
    finished.store(0, rl::memory_order_relaxed);
    qlock.init();
    qn($) = 0;
  }

  void enqueue(int node, int launch)
  {
    qlock.lock();
    int n = qn($);
    q[n]($) = node;
    qlaunch[n]($) = launch;
    qn($) = n + 1;
    qlock.unlock();
  }

  bool dequeue(int *node, int *launch)
  {
    qlock.lock();
    int n = qn($);
    bool got = n > 0;
    if (got) {
      *node = q[n - 1]($);
      *launch = qlaunch[n - 1]($);
      qn($) = n - 1;
    }
    qlock.unlock();
    return got;
  }

  /* weft_gnode_finish's count_off. */
  bool count_off(int c)
  {
    for (;;) {
#if WEFT_MUTANT == 1 /* the sink counts relaxed: resets do not reach the next launch */
      int was = counter[c].fetch_sub(1, rl::memory_order_relaxed);
#else
      int was = counter[c].fetch_sub(1, rl::memory_order_acq_rel);
#endif
      RL_ASSERT(was >= 1);
      if (was != 1)
        return false;
      counter[c].store(counter_init[c], rl::memory_order_relaxed);
      if (counter_parent[c] < 0)
        return true;
      c = counter_parent[c];
    }
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
#if WEFT_MUTANT == 2 /* the successor's count taken off relaxed */
        int was = pending[e].fetch_sub(1, rl::memory_order_relaxed);
#else
        int was = pending[e].fetch_sub(1, rl::memory_order_acq_rel);
#endif
        RL_ASSERT(was >= 1);
        if (was != 1)
          continue;
      }
      enqueue(e & ~SOLE, launch);
    }
    if (counter_of[i] >= 0 && count_off(counter_of[i])) {
#if WEFT_MUTANT == 3 /* the launch's end published relaxed */
      running.store(0, rl::memory_order_relaxed);
#else
      running.store(0, rl::memory_order_release);
#endif
    }
  }

  void launcher()
  {
    for (int l = 1; l <= LAUNCHES; l++) {
      for (;;) {
        int idle = 0;
        if (running.compare_exchange_strong(idle, 1, rl::memory_order_acquire,
                                            rl::memory_order_relaxed))
          break;
        rl::yield(1, $); /* WEFT_EBUSY: the previous launch still runs */
      }
      for (int r = 0; r < 3; r++) /* the gate's start and the roots' fan-out, in one */
        enqueue(roots[r], l);
    }
    while (running.load(rl::memory_order_acquire))
      rl::yield(1, $); /* weft_wait_all */
    finished.store(1, rl::memory_order_release);
  }

  void worker()
  {
    for (;;) {
      int node = -1, launch = 0;
      if (dequeue(&node, &launch)) {
        run(node, launch);
        continue;
      }
      if (finished.load(rl::memory_order_acquire))
        return;
      rl::yield(1, $);
    }
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
    for (int c = 0; c < 3; c++)
      RL_ASSERT(counter[c].load(rl::memory_order_relaxed) == counter_init[c]);
  }
};

} // namespace

int main()
{
  weft_rl::outcome out;
  /* The random scheduler only: the launcher and the idle workers wait in
   * spin loops (WEFT_EBUSY retries, an empty queue), which relacy's
   * context-bound scheduler reports as livelocks once its preemptions are
   * spent; blocking primitives instead (a mutex and a condition variable)
   * would order the launches themselves and hide the orders under test. */
  weft_rl::run_one<graph_test>("graph replay, 3 launches", rl::sched_random, 200000, 0, out);
  static const char *const names[] = {"none", "the sink counts relaxed",
                                      "a successor's count taken off relaxed",
                                      "the launch's end published relaxed"};
  return weft_rl::finish("graph", names[WEFT_MUTANT], out);
}
