/*
 * relacy harness: a graph's gate keeping its vars between launches
 * (src/deps/keep.c, the launch in graph_api.c, its end in replay.c).
 *
 * One var v, under its spinlock: whether a request holds it, which
 * requests wait (the gate's, the pusher's), and its keeper mark. The
 * gate's hold word (OFF, RUN, RUN|WANTED, KEPT, PART) and the graph's
 * running flag are atomics with the C code's orders.
 *
 * Threads:
 *   launcher  launches the graph twice: takes running (acquire CAS); a
 *             kept gate resumes (KEPT -> RUN: the node starts at once) or
 *             registers again on v (PART), a fresh one registers (RUN);
 *             once the gate holds v, the node is handed to the worker
 *             (release/acquire: the pool's hand-off).
 *   worker    runs each launch's node (a write of v's cell) and its end:
 *             RUN -> KEPT (release CAS), then clears running; or, WANTED,
 *             lets go of v under its lock (granting a waiter) first.
 *   pusher    pushes one operator that writes v: under v's lock it makes a
 *             keeper yield (RUN: marks WANTED; KEPT/PART: acquire CAS to
 *             PART, then lets go of the gate's hold) and appends; it runs
 *             once granted and completes under the lock, granting the gate
 *             if it waits.
 *
 * Checks: v's cell is an rl::var written by the launches' nodes and by the
 * pushed operator: any two of them not ordered by the protocol are a
 * reported data race. At the end the cell counts 3 writes and the pushed
 * operator ran once.
 *
 * Mutants (-DWEFT_MUTANT=n, run by mutants.sh; each must be caught):
 *   1  the end's CAS to KEPT relaxed            (keep.c, weft_keep_end)
 *   2  the yield's CAS to PART relaxed          (keep.c, weft_keep_yield_slow)
 *   3  a yield that lets go of v during a launch (no RUN check)
 *   4  a resume that stores RUN after reading KEPT, without a CAS
 */
#include "rl_common.hpp"

namespace {

enum { OFF = 0, KEPT = 1, PART = 2, RUN = 4, WANTED = 8 };
constexpr int LAUNCHES = 2;

#if WEFT_MUTANT == 1
#define K_END rl::memory_order_relaxed
#else
#define K_END rl::memory_order_release
#endif
#if WEFT_MUTANT == 2
#define K_YIELD rl::memory_order_relaxed
#else
#define K_YIELD rl::memory_order_acquire
#endif

using weft_rl::spinlock;

struct keep_test : rl::test_suite<keep_test, 3> {
  /* the var, under lock */
  spinlock lock;
  rl::var<int> held;        /* a request holds v */
  rl::var<int> q[3], qn;    /* waiting requests, oldest first: 1 + gate, or PUSH */
  rl::var<int> keeper;      /* 1 + the gate v names as its keeper, or 0 */
  rl::atomic<int> granted[3]; /* grants handed over (release), per request */
  rl::var<int> cell;        /* what v guards */
  /* the graph and its gates (a launch after a WANTED end takes a fresh one) */
  rl::atomic<int> running;
  rl::atomic<int> hold[LAUNCHES];
  rl::var<int> kept;        /* 1 + the gate the graph keeps (launcher and end, by running) */
  rl::var<int> cur;         /* the launch's gate (written before its hand-off) */
  rl::var<int> fresh;       /* gates taken so far (launcher) */
  rl::atomic<int> start[LAUNCHES]; /* the node handed to the worker */
  int pushed_ran;
  static constexpr int PUSH = 2; /* request index of the pushed operator */

  void before()
  {
    lock.init();
    held($) = 0;
    qn($) = 0;
    keeper($) = 0;
    for (int i = 0; i < 3; i++)
      granted[i].store(0, rl::memory_order_relaxed);
    cell($) = 0;
    running.store(0, rl::memory_order_relaxed);
    for (int i = 0; i < LAUNCHES; i++) {
      hold[i].store(OFF, rl::memory_order_relaxed);
      start[i].store(0, rl::memory_order_relaxed);
    }
    kept($) = 0;
    cur($) = 0;
    fresh($) = 0;
    pushed_ran = 0;
  }

  void after()
  {
    RL_ASSERT(cell($) == LAUNCHES + 1);
    RL_ASSERT(pushed_ran == 1);
  }

  /* Under lock: request r appends; true if granted at once. */
  bool append(int r)
  {
    if (!held($)) {
      held($) = 1;
      return true;
    }
    int n = qn($);
    q[n]($) = r;
    qn($) = n + 1;
    return false;
  }

  /* Under lock: the holder completes: v goes to the oldest waiter, or is free. */
  void complete_v()
  {
    int n = qn($);
    if (!n) {
      held($) = 0;
      return;
    }
    int r = q[0]($);
    for (int i = 1; i < n; i++)
      q[i - 1]($) = q[i]($);
    qn($) = n - 1;
    granted[r].store(1, rl::memory_order_release); /* its dispatch */
  }

  void wait_grant(int r)
  {
    while (!granted[r].load(rl::memory_order_acquire))
      rl::yield(1, $);
  }

  /* weft_keep_resume: true when the gate still holds v */
  bool resume(int gi)
  {
#if WEFT_MUTANT == 4
    int s = hold[gi].load(rl::memory_order_relaxed);
    hold[gi].store(RUN, rl::memory_order_relaxed);
    return s == KEPT;
#else
    int s = hold[gi].load(rl::memory_order_relaxed);
    for (;;) {
      RL_ASSERT(s == KEPT || s == PART);
      if (hold[gi].compare_exchange_weak(s, RUN, rl::memory_order_relaxed,
                                         rl::memory_order_relaxed))
        return s == KEPT;
    }
#endif
  }

  /* weft_keep_yield_slow, under lock; r appends next (a gate or the op) */
  void yield_keeper(int r)
  {
    int gi = keeper($) - 1;
    int s = hold[gi].load(rl::memory_order_relaxed);
    for (;;) {
#if WEFT_MUTANT != 3
      if (s & RUN) {
        if (s & WANTED)
          return;
        if (hold[gi].compare_exchange_weak(s, s | WANTED, rl::memory_order_relaxed,
                                           rl::memory_order_relaxed))
          return;
        continue;
      }
#endif
      if (hold[gi].compare_exchange_weak(s, PART, K_YIELD, rl::memory_order_relaxed))
        break;
    }
    (void)r;
    keeper($) = 0;
    RL_ASSERT(qn($) == 0); /* nothing waits behind a kept var */
    complete_v();
  }

  void launcher()
  {
    for (int i = 0; i < LAUNCHES; i++) {
      int idle = 0;
      while (!running.compare_exchange_weak(idle, 1, rl::memory_order_acquire,
                                            rl::memory_order_relaxed)) {
        idle = 0;
        rl::yield(1, $);
      }
      bool all = false;
      int gi;
      if (kept($)) {
        gi = kept($) - 1;
        all = resume(gi);
      } else {
        gi = fresh($);
        fresh($) = gi + 1;
        hold[gi].store(RUN, rl::memory_order_relaxed);
        kept($) = gi + 1;
      }
      cur($) = gi;
      if (!all) { /* weft_push_register on the gate */
        bool got = false;
        lock.lock();
        if (keeper($) == gi + 1) {
          got = true; /* still held since the last launch */
        } else {
          if (keeper($))
            yield_keeper(gi);
          got = append(gi);
          if (!keeper($)) /* weft_keep_mark */
            keeper($) = gi + 1;
          else
            hold[gi].fetch_or(WANTED, rl::memory_order_relaxed);
        }
        lock.unlock();
        if (!got) {
          wait_grant(gi);
          granted[gi].store(0, rl::memory_order_relaxed);
        }
      }
      start[i].store(1, rl::memory_order_release); /* the pool's hand-off */
    }
  }

  void worker()
  {
    for (int i = 0; i < LAUNCHES; i++) {
      while (!start[i].load(rl::memory_order_acquire))
        rl::yield(1, $);
      int gi = cur($);
      cell($) = cell($) + 1; /* the node */
      int s = RUN;
      if (hold[gi].compare_exchange_strong(s, KEPT, K_END, rl::memory_order_relaxed)) {
        running.store(0, rl::memory_order_release);
        continue;
      }
      RL_ASSERT(s == (RUN | WANTED));
      kept($) = 0;
      running.store(0, rl::memory_order_release);
      lock.lock(); /* weft_opr_finish_vars on the gate */
      if (keeper($) == gi + 1)
        keeper($) = 0;
      complete_v();
      lock.unlock();
      hold[gi].store(OFF, rl::memory_order_relaxed); /* weft_gate_put */
    }
  }

  void pusher()
  {
    lock.lock();
    if (keeper($))
      yield_keeper(PUSH);
    bool got = append(PUSH);
    lock.unlock();
    if (!got)
      wait_grant(PUSH);
    cell($) = cell($) + 1; /* the pushed operator */
    pushed_ran++;
    lock.lock();
    complete_v();
    lock.unlock();
  }

  void thread(unsigned self)
  {
    if (self == 0)
      launcher();
    else if (self == 1)
      worker();
    else
      pusher();
  }
};

} // namespace

int main()
{
  weft_rl::outcome out;
  weft_rl::run_both<keep_test>("keep launcher, worker, pusher", 200000, 3, out);
  static const char *const names[] = {"none", "the end's CAS to KEPT relaxed",
                                      "the yield's CAS to PART relaxed",
                                      "a yield that lets go during a launch",
                                      "a resume without a CAS"};
  return weft_rl::finish("keep", names[WEFT_MUTANT], out);
}
