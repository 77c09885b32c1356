/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the doorbell (src/common/doorbell.h) as the GPU stream
 * workers and the completion thread use it. Two ringers each publish one
 * item (a plain payload, then a release flag: the queue's append) and ring
 * (a seq_cst add to rings, a seq_cst load of parked, and under the lock a
 * signal if parked). The sleeper reads rings (seen), sweeps the items, and
 * when some are still missing takes the lock, arms (seq_cst store of
 * parked), and waits on the condition variable while no ring came after
 * seen, then disarms.
 *
 * Checks: no wake-up is lost (a sleeper left waiting after both ringers
 * finished is a deadlock, which relacy reports), and every item the
 * sleeper takes is complete (the payload is a plain rl::var: an unordered
 * read is a reported data race).
 */
#include "rl_common.hpp"

namespace {

/* mutant 1: the ring's add is a release, its load of parked an acquire */
#define K_RING WEFT_RL_MO(WEFT_MUTANT == 1, acq_rel, seq_cst)
#define K_RING_LOAD WEFT_RL_MO(WEFT_MUTANT == 1, acquire, seq_cst)
/* mutant 2: the sleeper arms with a release store */
#define K_ARM WEFT_RL_MO(WEFT_MUTANT == 2, release, seq_cst)
/* mutant 3: the sleeper's wait condition reads rings with acquire */
#define K_RUNG WEFT_RL_MO(WEFT_MUTANT == 3, acquire, seq_cst)

struct doorbell_test : rl::test_suite<doorbell_test, 3> {
  rl::atomic<unsigned long> rings;
  rl::atomic<int> parked;
  rl::mutex lock;
  rl::condition_variable cond;
  rl::atomic<int> posted[2]; /* ringer t's item is in the queue */
  rl::var<int> payload[2];   /* what the item carries */

  void before()
  {
    rings.store(0, rl::memory_order_relaxed);
    parked.store(0, rl::memory_order_relaxed);
    for (int t = 0; t < 2; t++) {
      posted[t].store(0, rl::memory_order_relaxed);
      payload[t]($) = 0;
    }
  }

  /* a submitter's append, then weft_doorbell_ring */
  void ringer(int t)
  {
    payload[t]($) = 1;
    posted[t].store(1, rl::memory_order_release);
    rings.fetch_add(1, K_RING);
    if (parked.load(K_RING_LOAD)) {
      if (WEFT_MUTANT == 4) { /* mutant 4: the signal without the lock */
        cond.notify_one($);
      } else {
        lock.lock($);
        cond.notify_one($);
        lock.unlock($);
      }
    }
  }

  /* the stream worker's loop: seen, the take, the park */
  void sleeper()
  {
    bool taken[2] = {false, false};
    int left = 2;
    while (left) {
      unsigned long seen = rings.load(rl::memory_order_seq_cst); /* weft_doorbell_seen */
      for (int t = 0; t < 2; t++)
        if (!taken[t] && posted[t].load(rl::memory_order_acquire)) {
          RL_ASSERT(payload[t]($) == 1);
          taken[t] = true;
          left--;
        }
      if (!left)
        break;
      lock.lock($);
      parked.store(1, K_ARM); /* weft_doorbell_arm */
      while (rings.load(K_RUNG) == seen) /* !weft_doorbell_rung */
        cond.wait(lock, $);
      parked.store(0, rl::memory_order_relaxed); /* weft_doorbell_disarm */
      lock.unlock($);
    }
  }

  void thread(unsigned self)
  {
    if (self < 2)
      ringer((int)self);
    else
      sleeper();
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the ring with acq_rel, not seq_cst",
                                      "the arm with release, not seq_cst",
                                      "the wait condition with acquire, not seq_cst",
                                      "the signal without the lock"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<doorbell_test>("doorbell 2 ringers + sleeper", 200000, 4, out);
  return weft_rl::finish("doorbell", names[WEFT_MUTANT], out);
}
