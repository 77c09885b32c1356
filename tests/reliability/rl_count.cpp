/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the in-flight counts' epoch handshake (src/deps/
 * inflight.c, weft_engine_count_push; src/deps/lifecycle.c, wait_all) as it
 * runs under ThreadSanitizer.
 *
 * A pusher that owns a tally counts its push there with a load and a store
 * (no read-modify-write: it is the tally's only writer), then reads the
 * epoch again; if a weft_wait_all flipped it meanwhile, it counts the push
 * finished in the old slot (a shared tally, by RMW) and counts again in the
 * new one. A pusher without a tally of its own does the same with a RMW on
 * the shared tally. The operator then goes to a worker (a release/acquire
 * hand-off), which runs it and counts it finished in its own tally. The
 * waiter flips the epoch, then waits until the old slot is drained: the
 * sum of the finished counts, then of the pushed ones, equal.
 *
 * Under TSan every step of the handshake is seq_cst. The production build
 * makes the owned tally's store and the epoch's reads relaxed, with only a
 * compiler barrier between, and gives the waiter a membarrier between its
 * flip and its reads; relacy cannot put a barrier into another thread, so
 * that variant is argued in inflight.c (as the guard's is: rl_guard.cpp),
 * not modelled. Mutant 1 is that variant without the membarrier: it must
 * fail.
 *
 * Checks: when the waiter's slot is drained, every operator counted in it
 * (its pusher read the waiter's old epoch on the re-read) has run, and its
 * result is visible to the waiter (a plain rl::var: an unordered read is a
 * reported data race).
 */
#include "rl_common.hpp"

namespace {

/* mutant 1: the production pair (relaxed), without the waiter's membarrier */
#define K_OWNED WEFT_RL_MO(WEFT_MUTANT == 1, relaxed, seq_cst)
/* mutant 3: a finish counted without publishing the operator's work */
#define K_DONE WEFT_RL_MO(WEFT_MUTANT == 3, relaxed, seq_cst)

enum { OWNED = 0, SHARED = 1, WORKER = 2, NTALLY = 3, NOPS = 2 };

struct count_test : rl::test_suite<count_test, 4> {
  rl::atomic<unsigned> epoch;
  rl::atomic<unsigned> pushed[NTALLY][2];
  rl::atomic<unsigned> done[NTALLY][2];
  rl::atomic<int> handed[NOPS];  /* 1: op i handed to the worker */
  rl::atomic<int> op_slot[NOPS]; /* the slot op i was counted in, +1 (0: not yet) */
  rl::var<int> result[NOPS];     /* op i's work */

  void before()
  {
    epoch.store(0, rl::memory_order_relaxed);
    for (int t = 0; t < NTALLY; t++)
      for (int s = 0; s < 2; s++) {
        pushed[t][s].store(0, rl::memory_order_relaxed);
        done[t][s].store(0, rl::memory_order_relaxed);
      }
    for (int i = 0; i < NOPS; i++) {
      handed[i].store(0, rl::memory_order_relaxed);
      op_slot[i].store(0, rl::memory_order_relaxed);
      result[i]($) = 0;
    }
  }

  unsigned read_epoch(bool owned)
  {
    if (owned)
      return epoch.load(K_OWNED);
    return epoch.load(rl::memory_order_seq_cst);
  }

  /* weft_engine_count_push, on an owned tally or the shared one */
  unsigned count_push(bool owned)
  {
    for (;;) {
      unsigned e = read_epoch(owned);
      if (owned) {
        unsigned c = pushed[OWNED][e & 1].load(rl::memory_order_relaxed);
        pushed[OWNED][e & 1].store(c + 1, K_OWNED);
      } else {
        pushed[SHARED][e & 1].fetch_add(1, rl::memory_order_seq_cst);
      }
      if (WEFT_MUTANT == 2) /* no re-read: the count may land in a slot already read */
        return e;
      if (read_epoch(owned) == e)
        return e;
      done[SHARED][e & 1].fetch_add(1, rl::memory_order_seq_cst); /* flipped: count again */
    }
  }

  void pusher(int i, bool owned)
  {
    unsigned e = count_push(owned);
    op_slot[i].store((int)(e & 1) + 1, rl::memory_order_relaxed);
    handed[i].store(1, rl::memory_order_release); /* the hand-off to a worker */
  }

  void worker()
  {
    for (int i = 0; i < NOPS; i++) {
      while (!handed[i].load(rl::memory_order_acquire))
        rl::yield(1, $);
      result[i]($) = 1; /* the operator runs */
      int s = op_slot[i].load(rl::memory_order_relaxed) - 1;
      unsigned c = done[WORKER][s].load(rl::memory_order_relaxed);
      done[WORKER][s].store(c + 1, K_DONE); /* its own tally: a plain store */
    }
  }

  bool drained(int s)
  {
    unsigned d = 0, p = 0;
    for (int t = 0; t < NTALLY; t++) /* seq_cst: as tally_drained */
      d += done[t][s].load(rl::memory_order_seq_cst);
    for (int t = 0; t < NTALLY; t++)
      p += pushed[t][s].load(rl::memory_order_seq_cst);
    return d == p;
  }

  /* wait_all: the flip, then the drain of the old slot */
  void waiter()
  {
    unsigned e = epoch.load(rl::memory_order_seq_cst);
    epoch.store(e + 1, rl::memory_order_seq_cst);
    int s = (int)(e & 1);
    while (!drained(s))
      rl::yield(1, $);
    /* Every operator counted in slot s has finished, and its work is
     * ours to read. relaxed: op_slot only says which; the drain's reads
     * order the rest. A slot not yet visible is an operator that counted
     * in the new epoch or is still on its way: not waited for. */
    for (int i = 0; i < NOPS; i++)
      if (op_slot[i].load(rl::memory_order_relaxed) == s + 1 && handed[i].load(rl::memory_order_relaxed))
        RL_ASSERT(result[i]($) == 1);
  }

  void thread(unsigned self)
  {
    if (self == 0)
      pusher(0, true);
    else if (self == 1)
      pusher(1, false);
    else if (self == 2)
      worker();
    else
      waiter();
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the relaxed owned count without a membarrier",
                                      "a push that does not read the epoch again",
                                      "a finish counted with relaxed"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<count_test>("count owned + shared pusher, worker, waiter", 200000, 3, out);
  return weft_rl::finish("count", names[WEFT_MUTANT], out);
}
