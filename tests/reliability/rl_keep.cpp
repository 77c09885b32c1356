/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: a graph's gate keeping its vars between launches
 * (src/graph/keep.c, the launch in graph_api.c and its registration in
 * src/deps/push.c, its end in replay.c).
 *
 * Two vars v0 and v1, each under its spinlock: whether a write holds it,
 * which requests wait (FIFO), and its keeper mark. The graph's one node
 * writes both. The gate's hold word (OFF, RUN, RUN|WANTED, KEPT, PART) and
 * the graph's running flag are atomics with the C code's orders. The
 * flag's values carry the launch's number here (IDLE before launch i is
 * 3i, RUNNING 3i + 1, ENDING 3i + 2, IDLE after it 3i + 3), so that the
 * checks below can tell a launch's own from the next one's.
 *
 * Threads:
 *   launcher  launches the graph twice: takes running (acquire CAS); a
 *             kept gate resumes (KEPT -> RUN: the node starts at once) or,
 *             having lost a var (PART), registers again: it takes both
 *             vars' locks (index order), turns RUN (weft_keep_run_locked),
 *             and appends to the vars it no longer holds; a fresh gate
 *             registers on both (RUN). Once the gate holds both, the node
 *             is handed to the worker (release/acquire: the pool's hand-off).
 *   worker    runs each launch's node (writes both vars' cells) and its
 *             end: running ENDING (relaxed), then RUN -> KEPT (release
 *             CAS), then clears running; or, WANTED, clears running and
 *             then lets go of both vars under their locks (granting
 *             waiters).
 *   pusher    pushes two operators: p writes v0, then h writes v0 and v1.
 *             Each push takes its vars' locks (index order), makes a
 *             keeper yield (RUN: marks WANTED; KEPT/PART: acquire CAS to
 *             PART, then lets go of the gate's hold) and appends; the op
 *             runs once granted everything and completes each var under
 *             its lock, granting the next waiter.
 *
 * The deadlock this catches (mutant 5): a gate made RUN before its
 * registration holds the locks. p takes v0 from the kept gate (PART); the
 * launcher turns the gate RUN; h gets v0 (free) and, on v1 (kept by a
 * launch that runs), queues behind the gate (WANTED); the gate then
 * registers on v0 behind h. Each waits for the other: relacy reports the
 * spin as a livelock.
 *
 * Checks: each var's cell is an rl::var written by the launches' node and
 * the pushed operators: any two not ordered by the protocol are a reported
 * data race. At the end v0's cell counts 4 writes and v1's 3. A yield that
 * takes a var from a gate after its launch's end (KEPT or PART) finds
 * running past that launch's RUNNING: a thread that then sees the var free
 * (a weft_var_wait) may launch again at once, never refused with
 * WEFT_EBUSY by the launch it waited for (graph.h, ENDING).
 *
 * Mutants (`rl_keep n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  the end's CAS to KEPT relaxed            (keep.c, weft_keep_end)
 *   2  the yield's CAS to PART relaxed          (keep.c, weft_keep_yield_slow)
 *   3  a yield that lets go of a var during a launch (no RUN check)
 *   4  a resume that stores RUN after reading KEPT, without a CAS
 *   5  a resume that makes a PART gate RUN before its registration takes
 *      the locks (keep.c, weft_keep_resume before weft_keep_run_locked)
 *   6  an end without ENDING: running stays RUNNING until after KEPT
 *      (replay.c, weft_gnode_finish_sink)
 */
#include "rl_common.hpp"

namespace {

enum { OFF = 0, KEPT = 1, PART = 2, RUN = 4, WANTED = 8 };
constexpr int LAUNCHES = 2;
constexpr int NV = 2;    /* vars */
constexpr int NREQ = 4;  /* requesters: gate 0, gate 1 (a fresh one), p, h */
constexpr int P = 2, H = 3;

#define K_END WEFT_RL_MO(WEFT_MUTANT == 1, relaxed, release)
#define K_YIELD WEFT_RL_MO(WEFT_MUTANT == 2, relaxed, acquire)

using weft_rl::spinlock;

struct keep_test : rl::test_suite<keep_test, 3> {
  /* each var, under its lock */
  spinlock lock[NV];
  rl::var<int> held[NV];          /* a write holds it */
  rl::var<int> q[NV][NREQ], qn[NV]; /* waiting requesters, oldest first */
  rl::var<int> keeper[NV];        /* 1 + the gate it names as its keeper, or 0 */
  rl::atomic<int> granted[NREQ][NV]; /* grants handed over (release) */
  rl::var<int> cell[NV];          /* what each var guards */
  /* the graph and its gates (a launch after a WANTED end takes a fresh one) */
  rl::atomic<int> running;
  rl::atomic<int> hold[LAUNCHES];
  rl::var<int> kept;        /* 1 + the gate the graph keeps (launcher and end, by running) */
  rl::var<int> cur;         /* the launch's gate (written before its hand-off) */
  rl::var<int> fresh;       /* gates taken so far (launcher) */
  rl::atomic<int> start[LAUNCHES]; /* the node handed to the worker */
  /* the number of the launch whose end made a gate KEPT last (relaxed:
   * ordered by the hold word's release CAS) */
  rl::atomic<int> last_end;

  void before()
  {
    for (int v = 0; v < NV; v++) {
      lock[v].init();
      held[v]($) = 0;
      qn[v]($) = 0;
      keeper[v]($) = 0;
      cell[v]($) = 0;
      for (int r = 0; r < NREQ; r++)
        granted[r][v].store(0, rl::memory_order_relaxed);
    }
    running.store(0, rl::memory_order_relaxed);
    last_end.store(-1, rl::memory_order_relaxed);
    for (int i = 0; i < LAUNCHES; i++) {
      hold[i].store(OFF, rl::memory_order_relaxed);
      start[i].store(0, rl::memory_order_relaxed);
    }
    kept($) = 0;
    cur($) = 0;
    fresh($) = 0;
  }

  void after()
  {
    RL_ASSERT(cell[0]($) == LAUNCHES + 2);
    RL_ASSERT(cell[1]($) == LAUNCHES + 1);
  }

  /* Under v's lock: requester r appends; true if granted at once. */
  bool append(int v, int r)
  {
    if (!held[v]($)) {
      held[v]($) = 1;
      return true;
    }
    int n = qn[v]($);
    q[v][n]($) = r;
    qn[v]($) = n + 1;
    return false;
  }

  /* Under v's lock: the holder completes: v goes to the oldest waiter, or
   * is free. */
  void complete_v(int v)
  {
    int n = qn[v]($);
    if (!n) {
      held[v]($) = 0;
      return;
    }
    int r = q[v][0]($);
    for (int i = 1; i < n; i++)
      q[v][i - 1]($) = q[v][i]($);
    qn[v]($) = n - 1;
    granted[r][v].store(1, rl::memory_order_release); /* its dispatch */
  }

  /* Until r holds every var in [v0, v1]; then clears its grants. */
  void wait_grants(int r, int v0, int v1)
  {
    for (int v = v0; v <= v1; v++) {
      while (!granted[r][v].load(rl::memory_order_acquire))
        rl::yield(1, $);
      granted[r][v].store(0, rl::memory_order_relaxed);
    }
  }

  /* weft_keep_resume: true when the gate still holds every var (KEPT ->
   * RUN); a PART gate stays PART (mutant 5: turns RUN here). */
  bool resume(int gi)
  {
    if (WEFT_MUTANT == 4) {
      int s = hold[gi].load(rl::memory_order_relaxed);
      if (s == KEPT)
        hold[gi].store(RUN, rl::memory_order_relaxed);
      return s == KEPT;
    }
    if (WEFT_MUTANT == 5) {
      int s = hold[gi].load(rl::memory_order_relaxed);
      for (;;) {
        RL_ASSERT(s == KEPT || s == PART);
        if (hold[gi].compare_exchange_weak(s, RUN, rl::memory_order_relaxed,
                                           rl::memory_order_relaxed))
          return s == KEPT;
      }
    }
    int s = KEPT;
    if (hold[gi].compare_exchange_strong(s, RUN, rl::memory_order_relaxed,
                                         rl::memory_order_relaxed))
      return true;
    RL_ASSERT(s == PART);
    return false;
  }

  /* weft_keep_run_locked, under every lock of the gate's vars */
  void run_locked(int gi)
  {
    int s = hold[gi].load(rl::memory_order_relaxed);
    if (WEFT_MUTANT != 5) {
      RL_ASSERT(s == RUN || s == PART);
      if (s == PART)
        hold[gi].store(RUN, rl::memory_order_relaxed);
    }
  }

  /* weft_keep_yield_slow, under v's lock, before another requester appends */
  void yield_keeper(int v)
  {
    int gi = keeper[v]($) - 1;
    int s = hold[gi].load(rl::memory_order_relaxed);
    for (;;) {
      if (WEFT_MUTANT != 3 && (s & RUN)) {
        if (s & WANTED)
          return;
        if (hold[gi].compare_exchange_weak(s, s | WANTED, rl::memory_order_relaxed,
                                           rl::memory_order_relaxed))
          return;
        continue;
      }
      if (hold[gi].compare_exchange_weak(s, PART, K_YIELD, rl::memory_order_relaxed))
        break;
    }
    /* Taken after an end (the next launch cannot register while v's lock
     * is ours, so that end is the last): running is past its RUNNING. */
    int ended = last_end.load(rl::memory_order_relaxed);
    RL_ASSERT(ended >= 0); /* a launch's end made the gate KEPT */
    RL_ASSERT(running.load(rl::memory_order_relaxed) >= 3 * ended + 2);
    keeper[v]($) = 0;
    RL_ASSERT(qn[v]($) == 0); /* nothing waits behind a kept var */
    complete_v(v);
  }

  void launcher()
  {
    for (int i = 0; i < LAUNCHES; i++) {
      int idle = 3 * i; /* IDLE: the last launch ended (ENDING: waited out) */
      while (!running.compare_exchange_weak(idle, 3 * i + 1, rl::memory_order_acquire,
                                            rl::memory_order_relaxed)) {
        idle = 3 * i;
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
        bool got[NV];
        for (int v = 0; v < NV; v++)
          lock[v].lock();
        run_locked(gi);
        for (int v = 0; v < NV; v++) {
          if (keeper[v]($) == gi + 1) {
            got[v] = true; /* still held since the last launch */
            continue;
          }
          if (keeper[v]($))
            yield_keeper(v);
          got[v] = append(v, gi);
          if (!keeper[v]($)) /* weft_keep_mark */
            keeper[v]($) = gi + 1;
          else
            hold[gi].fetch_or(WANTED, rl::memory_order_relaxed);
        }
        for (int v = NV - 1; v >= 0; v--)
          lock[v].unlock();
        for (int v = 0; v < NV; v++)
          if (!got[v])
            wait_grants(gi, v, v);
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
      for (int v = 0; v < NV; v++)
        cell[v]($) = cell[v]($) + 1; /* the node */
      if (WEFT_MUTANT != 6)
        running.store(3 * i + 2, rl::memory_order_relaxed); /* ENDING */
      last_end.store(i, rl::memory_order_relaxed);
      int s = RUN;
      if (hold[gi].compare_exchange_strong(s, KEPT, K_END, rl::memory_order_relaxed)) {
        running.store(3 * i + 3, rl::memory_order_release); /* IDLE */
        continue;
      }
      RL_ASSERT(s == (RUN | WANTED));
      kept($) = 0;
      running.store(3 * i + 3, rl::memory_order_release); /* IDLE */
      for (int v = 0; v < NV; v++) { /* weft_opr_finish_vars on the gate */
        lock[v].lock();
        if (keeper[v]($) == gi + 1)
          keeper[v]($) = 0;
        complete_v(v);
        lock[v].unlock();
      }
      hold[gi].store(OFF, rl::memory_order_relaxed); /* weft_gate_put */
    }
  }

  /* An operator r writing vars v0 .. v1: pushed, run once granted all,
   * completed. */
  void push_op(int r, int v0, int v1)
  {
    bool got[NV] = {false, false};
    for (int v = v0; v <= v1; v++)
      lock[v].lock();
    for (int v = v0; v <= v1; v++) {
      if (keeper[v]($))
        yield_keeper(v);
      got[v] = append(v, r);
    }
    for (int v = v1; v >= v0; v--)
      lock[v].unlock();
    for (int v = v0; v <= v1; v++)
      if (!got[v])
        wait_grants(r, v, v);
    for (int v = v0; v <= v1; v++)
      cell[v]($) = cell[v]($) + 1;
    for (int v = v0; v <= v1; v++) {
      lock[v].lock();
      complete_v(v);
      lock[v].unlock();
    }
  }

  void pusher()
  {
    push_op(P, 0, 0);
    push_op(H, 0, 1);
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

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the end's CAS to KEPT relaxed",
                                      "the yield's CAS to PART relaxed",
                                      "a yield that lets go during a launch",
                                      "a resume without a CAS",
                                      "a PART gate made RUN before its registration's locks",
                                      "an end without ENDING"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<keep_test>("keep launcher, worker, pusher", 200000, 2, out);
  return weft_rl::finish("keep", names[WEFT_MUTANT], out);
}
