/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: a graph run in lanes (src/graph/lanes.h, lanes.c): each
 * lane's sweeper runs its nodes in order, each after its waits for other
 * lanes' done counts; it publishes its own done right after each node a
 * wait of the other lane names (its publish points, lane_plan.c) and
 * before it spins, each time reading its own waiters with a
 * read-modify-write and queuing each lane whose bit it clears; a wait
 * unmet after the spin stops the lane: its need, one more count on the
 * launch's end (its hold), its bit set in the other lane's waiters, one
 * more look at that lane's done (if it got there, the lane clears the bit
 * and queues itself as a waker would: taking the bit back to go on could
 * take a later stop's bit, an ABA this harness found), then the hold let
 * go. The last count-off ends the launch.
 *
 * The graph: six nodes in capture order, a zigzag chain across two lanes
 * (0 -> 1 -> 2 -> 3 -> 4 -> 5; lane 0 runs 0, 2, 4 and lane 1 runs 1, 3,
 * 5), so every node but the first waits for the other lane, and the lanes
 * stop and wake each other. Every node but the last is a publish point: a
 * lane publishes after each, or before it spins, or at its end. Two
 * workers run the queued sweepers from a shared stack under a spinlock
 * (the pool's hand-off); they stop once nothing is queued or running.
 *
 * Mutants (`rl_lanes n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  a lane that publishes (before it stops, at its end) reads its
 *      waiters with a load, not a read-modify-write (lanes.c, wake)
 *   2  the waiter's bit set relaxed                (wait_lane's fetch_or)
 *   3  no second look at done after the bit is set (wait_lane)
 *   4  done published relaxed                      (publish)
 *   5  a stopped lane whose wait got met takes its bit back and goes on
 *      (the bit may be a later stop's of the same lane: two threads then
 *      run it)
 *   6  no hold on the launch from a stop's fetch_or to its last look (the
 *      waker runs the lane to the launch's end meanwhile: the look reads a
 *      freed graph; a review found it)
 *
 * Checks: every node runs exactly once, after its predecessor (plain
 * rl::var cells: a read not ordered after the write is a reported data
 * race); at the end both lanes are done, their waiters empty, and the
 * launch counted off once, after every stop's last look (a look after the
 * end would read a freed graph). A lost wake leaves a lane unfinished when
 * the workers stop.
 */
#include "rl_replay.hpp"

namespace {

constexpr int N = 6;     /* nodes */
constexpr int LANES = 2;
constexpr int PER = 3;   /* nodes a lane */
constexpr int SPINS = 1; /* looks at done before a lane stops */

/* lane p's k-th node is node 2k + p; it waits for lane 1 - p to have run
 * wait_done[p][k] nodes (0: no wait). */
const int wait_done[LANES][PER] = {{0, 1, 2}, {1, 2, 3}};

/* Whether lane p publishes right after its k-th node: a wait of the other
 * lane names it (lane_plan.c's publish points). */
bool publish_point(int p, int k)
{
  for (int j = 0; j < PER; j++)
    if (wait_done[1 - p][j] == k + 1)
      return true;
  return false;
}

struct lanes_test : rl::test_suite<lanes_test, 2> {
  struct lane {
    rl::atomic<int> done;
    rl::atomic<unsigned> waiters;
    rl::atomic<int> need;
    rl::var<int> cursor; /* holder-only */
    rl::var<int> seen;   /* holder-only: the other lane's done last read */
  } lanes[LANES];
  rl::var<int> cell[N];
  rl::atomic<int> ran[N];
  rl::atomic<int> tasks;  /* queued or running sweepers */
  rl::atomic<int> ended;  /* the launch's count-off: lanes still to end */
  rl::atomic<int> launch_ends;
  rl::atomic<int> freed; /* the launch ended: a stopping lane's look would be a use after free */
  weft_rl::ready_stack<4> ready;

  void before()
  {
    for (int p = 0; p < LANES; p++) {
      lanes[p].done.store(0, rl::memory_order_relaxed);
      lanes[p].waiters.store(0, rl::memory_order_relaxed);
      lanes[p].need.store(0, rl::memory_order_relaxed);
      lanes[p].cursor($) = 0;
      lanes[p].seen($) = 0;
    }
    for (int i = 0; i < N; i++) {
      cell[i]($) = 0;
      ran[i].store(0, rl::memory_order_relaxed);
    }
    ended.store(LANES, rl::memory_order_relaxed);
    launch_ends.store(0, rl::memory_order_relaxed);
    freed.store(0, rl::memory_order_relaxed);
    ready.init();
    /* weft_lanes_start: both sweepers queued */
    tasks.store(LANES, rl::memory_order_relaxed);
    ready.push(0, 1);
    ready.push(1, 1);
  }

  void queue_lane(int p)
  {
    tasks.fetch_add(1, rl::memory_order_relaxed); /* before the hand-off: no early stop */
    ready.push(p, 1);
  }

  void wake(int p, int done)
  {
    unsigned w = WEFT_MUTANT == 1 ? lanes[p].waiters.load(rl::memory_order_acquire)
                                  : lanes[p].waiters.fetch_or(0, rl::memory_order_acq_rel);
    for (int q = 0; q < LANES; q++) {
      unsigned bit = 1u << q;
      if (!(w & bit) || lanes[q].need.load(rl::memory_order_relaxed) > done)
        continue;
      if (lanes[p].waiters.fetch_and(~bit, rl::memory_order_acq_rel) & bit)
        queue_lane(q);
    }
  }

  void publish(int p, int done)
  {
    lanes[p].done.store(done, WEFT_RL_MO(WEFT_MUTANT == 4, relaxed, release));
    wake(p, done);
  }

  /* lanes.c's wait_lane: true once lane p may go on; false: stopped. */
  bool wait_lane(int p, int need)
  {
    int q = 1 - p;
    int d = lanes[q].done.load(rl::memory_order_acquire);
    if (d < need)
      publish(p, lanes[p].cursor($));
    for (int i = 0; d < need && i < SPINS; i++)
      d = lanes[q].done.load(rl::memory_order_acquire);
    if (d >= need) {
      lanes[p].seen($) = d;
      return true;
    }
    lanes[p].need.store(need, rl::memory_order_relaxed);
    unsigned bit = 1u << p;
    if (WEFT_MUTANT != 6)
      ended.fetch_add(1, rl::memory_order_relaxed); /* the hold on the launch */
    lanes[q].waiters.fetch_or(bit, WEFT_RL_MO(WEFT_MUTANT == 2, relaxed, acq_rel));
    RL_ASSERT(!freed.load(rl::memory_order_seq_cst)); /* the graph is alive */
    if (WEFT_MUTANT == 5) { /* the bit taken back, and the lane goes on */
      d = lanes[q].done.load(rl::memory_order_acquire);
      if (d >= need && (lanes[q].waiters.fetch_and(~bit, rl::memory_order_acq_rel) & bit)) {
        lanes[p].seen($) = d;
        count_off(); /* the hold */
        return true;
      }
    } else if (WEFT_MUTANT != 3) {
      if (lanes[q].done.load(rl::memory_order_acquire) >= need &&
          (lanes[q].waiters.fetch_and(~bit, rl::memory_order_acq_rel) & bit))
        queue_lane(p);
    }
    if (WEFT_MUTANT != 6)
      count_off(); /* the hold */
    return false;
  }

  void run_node(int i)
  {
    if (i > 0)
      RL_ASSERT(cell[i - 1]($) == 1); /* its predecessor ran before it */
    cell[i]($) = 1;
    ran[i].fetch_add(1, rl::memory_order_relaxed);
  }

  /* lanes.c's lane_task. */
  void sweep(int p)
  {
    int k = lanes[p].cursor($);
    for (; k < PER; k++) {
      int w = wait_done[p][k];
      if (w && lanes[p].seen($) < w) {
        lanes[p].cursor($) = k;
        if (!wait_lane(p, w))
          return;
      }
      run_node(2 * k + p);
      if (publish_point(p, k))
        publish(p, k + 1);
    }
    publish(p, PER);
    count_off();
  }

  /* A lane's end, or a stop's hold let go: the last ends the launch, and
   * the graph may be freed from then on. */
  void count_off()
  {
    if (ended.fetch_sub(1, rl::memory_order_acq_rel) == 1) {
      launch_ends.fetch_add(1, rl::memory_order_relaxed);
      freed.store(1, rl::memory_order_seq_cst);
    }
  }

  void thread(unsigned)
  {
    for (;;) {
      int item = -1, launch = 0;
      if (ready.pop(&item, &launch)) {
        sweep(item);
        tasks.fetch_sub(1, rl::memory_order_acq_rel);
        continue;
      }
      if (tasks.load(rl::memory_order_acquire) == 0)
        return;
      rl::yield(1, $);
    }
  }

  void after()
  {
    for (int i = 0; i < N; i++)
      RL_ASSERT(ran[i].load(rl::memory_order_relaxed) == 1);
    for (int p = 0; p < LANES; p++) {
      RL_ASSERT(lanes[p].done.load(rl::memory_order_relaxed) == PER);
      RL_ASSERT(lanes[p].waiters.load(rl::memory_order_relaxed) == 0);
    }
    RL_ASSERT(launch_ends.load(rl::memory_order_relaxed) == 1);
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none",
                                      "a publishing lane reads its waiters with a load",
                                      "the waiter's bit set relaxed",
                                      "no second look at done after the bit is set",
                                      "done published relaxed",
                                      "a stopped lane takes its bit back and goes on",
                                      "no hold on the launch during a stop"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<lanes_test>("lanes: stop and wake", 200000, 2, out);
  return weft_rl::finish("lanes", names[WEFT_MUTANT], out);
}
