/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the parking protocol of src/pool/park.c (the eventcount)
 * as the workers of src/pool/idle.c use it, with the searching-worker
 * accounting (nsearching, wake_pending) and the submitter's side
 * (weft_pool_wake_exact after an injection-queue push, pool.c) and the
 * shutdown's (stop_workers, pool.c). Same memory orders as the C source.
 *
 * Thread 0 is the submitter: it pushes K tasks on the injection queue
 * (each followed by weft_pool_wake_exact), waits until all have run, and
 * stops the workers. Threads 1..2 are workers running weft_worker_main's
 * loop: injection queue, then idle (search, prewait, re-check, commit).
 *
 * Checks: relacy reports a deadlock when every thread is blocked, so a lost
 * wake-up (a worker asleep with work queued and no wake to come, while the
 * submitter waits for that work) fails the run; every task runs exactly
 * once; every worker exits. The "together" scenario's tasks wait for each
 * other (a barrier over both tasks), so it also fails if a task stays queued
 * while a worker sleeps and the other worker is busy: the rule "the last
 * searcher to find work wakes another if more is visible" is checked too.
 *
 * The futex is modelled as the kernel implements it: the wait reads the word
 * and queues the thread under the hash bucket's lock (an acq_rel RMW on a
 * word standing for that lock), the wake takes the lock and dequeues.
 * No spurious wake-ups: each would only add a turn of the loops around
 * futex_wait (and they multiply the context-bound search).
 *
 * Mutants (`rl_park n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  worker's fence before the re-check -> acq_rel   (idle.c, park)
 *   2  weft_pool_wake_exact's fence -> acq_rel          (idle.c)
 *   3  stop_searching's fence -> acq_rel                (idle.c)
 *   4  stop_workers' fence -> acq_rel                   (pool.c)
 */
#include "rl_ring.hpp"

namespace {

constexpr int kWorkers = 2;
constexpr int kTasks = 2;
enum { RUNNING = 0, EXITING = 2 };

/* --- futex (kernel model, see above) ---------------------------------- */
struct futex_model {
  rl::atomic<int> bucket_lock; /* stands for the hash bucket's spinlock */

  void wait(rl::atomic<int> &word, int expected)
  {
    rl::context &c = rl::ctx();
    int v;
    {
      rl::preemption_disabler pd(c); /* read + queue: one step under the lock */
      bucket_lock.fetch_add(0, rl::memory_order_acq_rel);
      v = word.load(rl::memory_order_relaxed);
    }
    if (v == expected)
      word.wait(c, false, false, $);
  }

  void wake(rl::atomic<int> &word, int n)
  {
    rl::context &c = rl::ctx();
    rl::preemption_disabler pd(c);
    bucket_lock.fetch_add(0, rl::memory_order_acq_rel);
    word.wake(c, n, $);
  }
};

struct park_test_base {
  futex_model futex;

  /* --- weft_ec (park.c) --- */
  rl::atomic<int> seq;     /* the futex word */
  rl::atomic<int> waiters;

  /* --- weft_pool (pool_internal.h), the parts the protocol uses --- */
  rl::atomic<int> nsearching;
  rl::atomic<int> wake_pending;
  rl::atomic<int> state;

  /* --- the injection queue (inject.c): its ring of sequence-numbered
   * cells, with room for every task of the scenario (the overflow list
   * never fills here; tests/reliability/rl_inject.cpp checks it) --- */
  rl_ring<kTasks> inject_ring;

  /* --- bookkeeping of the harness --- */
  rl::atomic<int> ran[kTasks + 1];
  rl::atomic<int> done;    /* tasks finished; the submitter waits on it */
  rl::atomic<int> started; /* "together" scenario: tasks started */
  bool together = false;

  void init()
  {
    seq.store(0, rl::memory_order_relaxed);
    waiters.store(0, rl::memory_order_relaxed);
    nsearching.store(0, rl::memory_order_relaxed);
    wake_pending.store(0, rl::memory_order_relaxed);
    state.store(RUNNING, rl::memory_order_relaxed);
    futex.bucket_lock.store(0, rl::memory_order_relaxed);
    inject_ring.init();
    for (auto &r : ran)
      r.store(0, rl::memory_order_relaxed);
    done.store(0, rl::memory_order_relaxed);
    started.store(0, rl::memory_order_relaxed);
  }

  /* weft_inject_push / weft_inject_pop / weft_inject_looks_empty (inject.c),
   * the ring's paths (a push never finds it full here) */
  void inject_push(int task)
  {
    bool pushed = inject_ring.push(task);
    RL_ASSERT(pushed); /* the ring holds every task of the scenario */
  }
  bool inject_looks_empty() { return inject_ring.looks_empty(); }
  int inject_pop() { return inject_ring.take(); }

  /* weft_ec_prewait / cancel / commit / notify (park.c) */
  int ec_prewait()
  {
    waiters.fetch_add(1, rl::memory_order_seq_cst);
    return seq.load(rl::memory_order_seq_cst);
  }
  void ec_cancel() { waiters.fetch_sub(1, rl::memory_order_relaxed); }
  void ec_commit(int key)
  {
    while (seq.load(rl::memory_order_acquire) == key)
      futex.wait(seq, key);
    waiters.fetch_sub(1, rl::memory_order_relaxed);
  }
  bool ec_notify(bool all)
  {
    if (waiters.load(rl::memory_order_relaxed) == 0)
      return false;
    seq.fetch_add(1, rl::memory_order_release);
    futex.wake(seq, all ? kWorkers : 1);
    return true;
  }

  /* weft_pool_any_work (idle.c): the injection queue (the only
   * queue of this model). */
  bool any_work() { return !inject_looks_empty(); }

  /* wake_one (idle.c) */
  void wake_one()
  {
    if (wake_pending.load(rl::memory_order_relaxed))
      return;
    if (wake_pending.exchange(1, rl::memory_order_seq_cst))
      return;
    if (!ec_notify(false))
      wake_pending.store(0, rl::memory_order_seq_cst);
  }

  /* weft_pool_wake_exact (idle.c) */
  void wake_exact()
  {
    WEFT_RL_FENCE(WEFT_MUTANT == 2); /* weft_fence_sc(&pool->nsearching) */
    if (nsearching.load(rl::memory_order_relaxed) == 0 && waiters.load(rl::memory_order_relaxed) > 0)
      wake_one();
  }

  /* start_searching (idle.c) */
  void start_searching()
  {
    nsearching.fetch_add(1, rl::memory_order_seq_cst);
    wake_pending.store(0, rl::memory_order_seq_cst);
  }

  /* stop_searching (idle.c) */
  void stop_searching()
  {
    if (nsearching.fetch_sub(1, rl::memory_order_seq_cst) == 1) {
      WEFT_RL_FENCE(WEFT_MUTANT == 3); /* weft_fence_sc(&pool->nsearching) */
      if (waiters.load(rl::memory_order_relaxed) > 0 && any_work())
        wake_one();
    }
  }

  /* weft_worker_idle (idle.c) without a group (g == NULL), so
   * without the busy count; the spin phase is one sweep (spin_count 0),
   * then the "only the last searcher spins" step (idle.c). */
  int worker_idle()
  {
    start_searching();
    for (;;) {
      bool searching = true;
      int t = inject_pop(); /* weft_find_nonlocal */
      if (t) {
        stop_searching();
        return t;
      }
      rl::yield(1, $); /* weft_spin_until: the spin round between sweeps */
      if (state.load(rl::memory_order_relaxed) == RUNNING) {
        int n = nsearching.load(rl::memory_order_relaxed);
        if (n > 1 && nsearching.compare_exchange_strong(n, n - 1, rl::memory_order_seq_cst))
          searching = false;
      }
      int key = ec_prewait();                             /* idle.c, weft_worker_idle */
      wake_pending.store(0, rl::memory_order_seq_cst);    /* idle.c, weft_worker_idle */
      if (searching)                                      /* idle.c, weft_worker_idle */
        nsearching.fetch_sub(1, rl::memory_order_seq_cst);
      WEFT_RL_FENCE(WEFT_MUTANT == 1);                    /* idle.c, weft_worker_idle */
      if (any_work()) {                                   /* idle.c, weft_worker_idle */
        ec_cancel();
        start_searching();
        rl::yield(1, $); /* a spin-loop turn: relacy then shows newer values */
        continue;
      }
      if (state.load(rl::memory_order_seq_cst) == EXITING) { /* idle.c, weft_worker_idle */
        ec_cancel();
        return 0;
      }
      ec_commit(key);                                     /* idle.c, weft_worker_idle */
      start_searching();
    }
  }

  void run_task(int t)
  {
    RL_ASSERT(t >= 1 && t <= kTasks);
    ran[t].fetch_add(1, rl::memory_order_relaxed);
    if (together) { /* wait until every task has started */
      int s = started.fetch_add(1, rl::memory_order_acq_rel) + 1;
      while (s < kTasks) {
        futex.wait(started, s);
        s = started.load(rl::memory_order_acquire);
      }
      futex.wake(started, kTasks);
    }
    done.fetch_add(1, rl::memory_order_release);
    futex.wake(done, 1);
  }

  /* weft_worker_main's loop (idle.c) */
  void worker()
  {
    for (;;) {
      int t = inject_pop(); /* weft_find_nonlocal */
      if (!t)
        t = worker_idle();
      if (!t)
        break;
      run_task(t);
    }
  }

  /* The submitter: weft_pool_enqueue from a non-worker thread (pool.c),
   * then a drain and stop_workers (pool.c). */
  void submitter()
  {
    for (int i = 1; i <= kTasks; i++) {
      inject_push(i);
      wake_exact();
    }
    int d;
    while ((d = done.load(rl::memory_order_acquire)) < kTasks)
      futex.wait(done, d);
    state.store(EXITING, rl::memory_order_seq_cst);
    WEFT_RL_FENCE(WEFT_MUTANT == 4); /* weft_fence_sc(&pool->nsearching) */
    ec_notify(true);
  }

  void check()
  {
    for (int i = 1; i <= kTasks; i++)
      RL_ASSERT(ran[i].load(rl::memory_order_relaxed) == 1);
    RL_ASSERT(inject_looks_empty()); /* every task was taken */
  }
};

template <bool TOGETHER>
struct park_test : rl::test_suite<park_test<TOGETHER>, 1 + kWorkers>, park_test_base {
  void before()
  {
    init();
    together = TOGETHER;
  }
  void thread(unsigned index)
  {
    if (index == 0)
      submitter();
    else
      worker();
  }
  void after() { check(); }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "park re-check fence seq_cst->acq_rel",
                                      "wake_exact fence seq_cst->acq_rel",
                                      "stop_searching fence seq_cst->acq_rel",
                                      "stop_workers fence seq_cst->acq_rel"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<park_test<false>>("park independent_tasks", 100000, 1, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<park_test<true>>("park together_tasks", 100000, 1, out);
  return weft_rl::finish("park", names[WEFT_MUTANT], out);
}
