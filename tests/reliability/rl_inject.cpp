/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the injection queue of src/pool/inject.c (a bounded MPMC
 * ring of sequence-numbered cells after D. Vyukov's, whose consumers write
 * nothing into the cells, with an overflow list under a lock), re-expressed
 * with relacy's atomics and the same memory orders. The ring has 2 cells
 * here, so a third task waits in the overflow.
 *
 * Checks: every pushed task is obtained exactly once (by a pop, or left in
 * the queue at the end), so a producer never fills a cell whose task is
 * not yet taken; a task's contents, written before its push (a plain
 * rl::var), are visible to its consumer (relacy reports a data race
 * otherwise); a lone
 * producer's tasks come out in its order, past the ring too (with several,
 * another producer's cell not yet filled can hide a task at head from the
 * second look, and the overflow may overtake it: inject.h); and the
 * emptiness check that the
 * parking handshake relies on: a producer that publishes, fences and then
 * sees no parker announced must be seen by the parker's check after its
 * own fence, even while a consumer moves head under that check.
 *
 * Mutants (`rl_inject n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  push publishes the cell relaxed, not release       (inject.c, push)
 *   2  a producer trusts its copy of head without reading head when the
 *      ring looks full                                     (inject.c, claim_free)
 *
 * Not modelled: the release of a consumer's claim and the acquire of a
 * producer's read of head (and its copy) order a consumer's read of a
 * cell's task before the next lap's fill; relacy does not produce the
 * load-buffering outcome they exclude (the read seeing the later fill), so
 * no mutant of them could be caught; the argument is in inject.c.
 *   3  at_head reads the cell's seq relaxed: a later lap at a stale
 *      head then need not move its re-read of head on   (inject.c)
 *   4  push fills the ring while the overflow holds tasks  (inject.c, push)
 *   5  pop takes the overflow without looking at the ring again under the
 *      lock                                               (inject.c, pop_batch)
 *   6  two producers push the solo way (claim_solo: no CAS) at once
 *                                                         (pool/solo.h's rule)
 *   7  the solo queue's hand-over between owners relaxed (no release as
 *      the owner gives it back, no acquire as the next claims it)
 *                                                         (pool/solo.c)
 */
#define RL_RING_K_PUBLISH WEFT_RL_MO(WEFT_MUTANT == 1, relaxed, release)
#define RL_RING_TRUST_COPY (WEFT_MUTANT == 2)
#define RL_RING_K_HEAD_SEQ WEFT_RL_MO(WEFT_MUTANT == 3, relaxed, acquire)
#include "rl_ring.hpp"

#define K_CLAIM WEFT_RL_MO(WEFT_MUTANT == 7, relaxed, acquire)
#define K_GIVE WEFT_RL_MO(WEFT_MUTANT == 7, relaxed, release)

namespace {

constexpr unsigned kRing = 2;
constexpr int kMaxTasks = 6;

/* The queue: the ring (rl_ring.hpp), and the overflow list under its lock. */
struct inject {
  rl_ring<kRing> ring;
  rl::mutex lock; /* the C code's spinlock: an acquire exchange, a release store */
  rl::var<int> ov[kMaxTasks];
  rl::var<int> ov_head, ov_tail;
  rl::atomic<int> noverflow;

  void init()
  {
    ring.init();
    ov_head($) = 0;
    ov_tail($) = 0;
    noverflow.store(0, rl::memory_order_relaxed);
  }

  /* weft_inject_push (solo: weft_inject_push_solo) */
  void push(int t, bool solo = false)
  {
    bool ring_ok = WEFT_MUTANT == 4 || noverflow.load(rl::memory_order_relaxed) == 0;
    if (ring_ok && ring.push(t, solo))
      return;
    lock.lock($);
    ov[ov_tail($)]($) = t;
    ov_tail($) = ov_tail($) + 1;
    noverflow.store(noverflow.load(rl::memory_order_relaxed) + 1, rl::memory_order_relaxed);
    lock.unlock($);
  }

  /* weft_inject_pop (pop_batch with max 1) */
  int pop()
  {
    int t = ring.take();
    if (t || noverflow.load(rl::memory_order_relaxed) == 0)
      return t;
    lock.lock($);
    if (WEFT_MUTANT != 5) {
      t = ring.take(); /* the look again under the lock */
      if (t) {
        lock.unlock($);
        return t;
      }
    }
    int left = noverflow.load(rl::memory_order_relaxed);
    if (left > 0) {
      t = ov[ov_head($)]($);
      ov_head($) = ov_head($) + 1;
      noverflow.store(left - 1, rl::memory_order_relaxed);
    }
    lock.unlock($);
    return t;
  }

  /* weft_inject_looks_empty */
  bool looks_empty()
  {
    return noverflow.load(rl::memory_order_relaxed) == 0 && ring.looks_empty();
  }
};

/* Producers 0..P-1 push N tasks each (ids p * N + 1 ..), consumers pop C
 * times each; what is left counts once more. SOLO: the producers push the
 * solo way (claim_solo), taking turns as owners of the queue (pool/solo.c:
 * producer p waits until it holds the owner token, pushes, gives it back);
 * with a mutant, all at once. */
template <int P, int N, int C, int CONSUMERS, bool SOLO = false>
struct queue_test : rl::test_suite<queue_test<P, N, C, CONSUMERS, SOLO>, P + CONSUMERS> {
  inject q;
  rl::var<int> payload[kMaxTasks + 1];
  rl::atomic<int> got[kMaxTasks + 1];
  rl::atomic<int> owner; /* solo_owner: 0 free, p + 1 held by producer p */

  void before()
  {
    q.init();
    owner.store(0, rl::memory_order_relaxed);
    for (int i = 0; i <= kMaxTasks; i++)
      got[i].store(0, rl::memory_order_relaxed);
  }

  void thread(unsigned index)
  {
    if ((int)index < P) {
      /* mutant 6: two producers pushing the solo way at once */
      if (SOLO && WEFT_MUTANT != 6) { /* weft_solo_claim: acquire the previous owner's pushes */
        int none = 0;
        while (!owner.compare_exchange_weak(none, (int)index + 1, K_CLAIM)) {
          none = 0;
          rl::yield(1, $);
        }
      }
      for (int i = 1; i <= N; i++) {
        int id = (int)index * N + i;
        payload[id]($) = 100 + id;
        q.push(id, SOLO);
      }
      if (SOLO && WEFT_MUTANT != 6) /* the thread's exit gives the queue back: release our pushes */
        owner.store(0, K_GIVE);
      return;
    }
    int last[P] = {};
    for (int i = 0; i < C; i++) {
      int t = q.pop();
      if (!t)
        continue;
      RL_ASSERT(t >= 1 && t <= P * N);
      RL_ASSERT(payload[t]($) == 100 + t); /* published with the task */
      got[t].fetch_add(1, rl::memory_order_relaxed);
      int p = (t - 1) / N;
      if (P == 1 && CONSUMERS == 1)
        RL_ASSERT(t > last[p]); /* a lone producer's order */
      last[p] = t;
    }
  }

  void after()
  {
    int last[P] = {};
    for (int t; (t = q.pop());) { /* single-threaded now: the rest, in order */
      got[t].fetch_add(1, rl::memory_order_relaxed);
      int p = (t - 1) / N;
      if (P == 1)
        RL_ASSERT(t > last[p]);
      last[p] = t;
    }
    for (int i = 1; i <= P * N; i++)
      RL_ASSERT(got[i].load(rl::memory_order_relaxed) == 1); /* exactly once */
  }
};

/* Two producers (the CAS on tail, the ring's wrap) and one consumer. */
using mpsc = queue_test<2, 2, 3, 1>;
/* One producer past the ring and two consumers (the CAS on head). */
using spmc = queue_test<1, 3, 1, 2>;
/* One producer past the ring (the overflow) and one consumer: order kept. */
using overflow_order = queue_test<1, 4, 2, 1>;
/* The solo queue: one owner past the ring and two consumers. */
using solo_spmc = queue_test<1, 3, 1, 2, true>;
/* Two threads owning the solo queue in turn (the hand-over), one consumer. */
using solo_handover = queue_test<2, 2, 2, 1, true>;

/* The parking handshake's emptiness check: tasks 1 and 2 fill the ring
 * before the threads start; a consumer takes two tasks while a producer
 * pushes task 3 (into cell 0 again, once task 1 is taken), fences and
 * reads the parker's flag, and the parker sets its flag, fences and checks
 * for emptiness, possibly from a head that the consumer has since moved
 * (cell 0 then shows a later lap). */
struct handshake_test : rl::test_suite<handshake_test, 3> {
  inject q;
  rl::atomic<int> parker;
  int saw_parker = -1, saw_empty = -1;

  void before()
  {
    q.init();
    q.push(1);
    q.push(2);
    parker.store(0, rl::memory_order_relaxed);
  }

  void thread(unsigned index)
  {
    if (index == 0) {
      q.push(3);
      rl::atomic_thread_fence(rl::mo_seq_cst, $); /* weft_pool_wake_exact */
      saw_parker = parker.load(rl::memory_order_relaxed);
    } else if (index == 1) {
      parker.store(1, rl::memory_order_relaxed); /* the prewait */
      rl::atomic_thread_fence(rl::mo_seq_cst, $); /* park's fence before the re-check */
      saw_empty = q.looks_empty();
    } else {
      for (int i = 0; i < 2; i++) {
        int t = q.pop();
        RL_ASSERT(t >= 0 && t <= 3);
      }
    }
  }

  void after()
  {
    RL_ASSERT(!(saw_parker == 0 && saw_empty == 1)); /* no lost wake-up */
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "push publishes the cell relaxed",
                                      "a producer trusts its copy of head when the ring looks full",
                                      "at_head reads the seq relaxed",
                                      "push fills the ring past a non-empty overflow",
                                      "pop takes the overflow without a second look at the ring",
                                      "two producers push the solo way at once",
                                      "the solo queue handed over relaxed"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<mpsc>("inject mpsc", 200000, 2, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<spmc>("inject spmc", 200000, 2, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<overflow_order>("inject overflow_order", 200000, 3, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<handshake_test>("inject handshake", 200000, 3, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<solo_spmc>("inject solo spmc", 200000, 2, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<solo_handover>("inject solo hand-over", 200000, 2, out);
  return weft_rl::finish("inject", names[WEFT_MUTANT], out);
}
