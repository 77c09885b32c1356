/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the shutdown guard (src/common/guard.{h,c}) as it runs
 * under ThreadSanitizer: an entrant notes the guard in its slot (seq_cst
 * store) and reads closed (seq_cst load); a slow entrant counts itself in
 * the guard (seq_cst read-modify-write) and reads closed; a leave clears
 * the slot or the count with release; the closer stores closed (seq_cst),
 * then reads the count and every slot until nobody is inside, then frees
 * what the guard protects.
 *
 * The production build replaces the entrants' seq_cst pair with a relaxed
 * store and load around a compiler barrier, and gives the closer a
 * membarrier(PRIVATE_EXPEDITED) between its store and its reads; relacy
 * cannot put a barrier into another thread, so that variant is argued in
 * guard.h (liburcu's membarrier flavour), not modelled. Mutant 1 is that
 * variant without the membarrier: it must fail.
 *
 * Checks: no entrant that got in uses the protected object after the
 * closer freed it (the object is a plain rl::var: an unordered use is also
 * a reported data race); an entrant that found the guard closed uses
 * nothing.
 */
#include "rl_common.hpp"

namespace {

/* mutant 1: the fast path's relaxed pair, without the closer's membarrier */
#define K_ENTRY WEFT_RL_MO(WEFT_MUTANT == 1, relaxed, seq_cst)
/* mutant 2: a leave that does not publish what was done inside */
#define K_LEAVE WEFT_RL_MO(WEFT_MUTANT == 2, relaxed, release)

struct guard_test : rl::test_suite<guard_test, 3> {
  rl::atomic<int> closed;
  rl::atomic<int> slow;
  rl::atomic<int> slot[2]; /* thread t's in[0]: 1 while inside */
  rl::var<int> object;     /* what the guard protects: 1 live, 0 freed */

  void before()
  {
    closed.store(0, rl::memory_order_relaxed);
    slow.store(0, rl::memory_order_relaxed);
    slot[0].store(0, rl::memory_order_relaxed);
    slot[1].store(0, rl::memory_order_relaxed);
    object($) = 1;
  }

  /* weft_guard_enter's fast path, a use, weft_guard_leave */
  void fast_entrant(int t)
  {
    slot[t].store(1, K_ENTRY);
    if (closed.load(K_ENTRY)) {
      slot[t].store(0, rl::memory_order_release);
      return; /* refused */
    }
    RL_ASSERT(object($) == 1); /* alive while inside */
    slot[t].store(0, K_LEAVE);
  }

  /* weft_guard_enter_slow, a use, the slow leave */
  void slow_entrant()
  {
    slow.fetch_add(1, rl::memory_order_seq_cst);
    if (closed.load(rl::memory_order_seq_cst)) {
      slow.fetch_sub(1, rl::memory_order_seq_cst);
      return;
    }
    RL_ASSERT(object($) == 1);
    slow.fetch_sub(1, K_LEAVE);
  }

  bool anyone_inside()
  {
    /* seq_cst: as weft_guard_wait_empty */
    if (slow.load(rl::memory_order_seq_cst) != 0)
      return true;
    /* mutant 4: acquire only: may read a value of the slot older than the entry */
    for (int t = 0; t < 2; t++)
      if (slot[t].load(WEFT_RL_MO(WEFT_MUTANT == 4, acquire, seq_cst)) != 0)
        return true;
    return false;
  }

  /* weft_guard_close, weft_guard_wait_empty, then the free */
  void closer()
  {
    if (WEFT_MUTANT == 3) { /* waits for the threads inside, then closes */
      while (anyone_inside())
        rl::yield(1, $);
      closed.store(1, rl::memory_order_seq_cst);
    } else {
      closed.store(1, rl::memory_order_seq_cst);
      while (anyone_inside())
        rl::yield(1, $);
    }
    object($) = 0; /* freed */
  }

  void thread(unsigned self)
  {
    if (self == 0)
      fast_entrant(0);
    else if (self == 1)
      fast_entrant(1), slow_entrant();
    else
      closer();
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the relaxed entry without a membarrier",
                                      "a leave without release", "the wait before the close",
                                      "the slots read with acquire, not seq_cst"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<guard_test>("guard 2 entrants + closer", 200000, 4, out);
  return weft_rl::finish("guard", names[WEFT_MUTANT], out);
}
