/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the pthreadpool drop-in's call (src/compat/pthreadpool):
 * the caller fills the slots and opens the crew (crew.c), members join
 * (CAS, acquire), claim their own slot's items one at a time (fetch_add of
 * lo, run.c run_own), steal the upper half of another slot into their own
 * (CAS of hi, then a store of the own slot, run.c steal_half and
 * member_items) and leave (fetch_sub, release); the caller runs member 0,
 * closes the crew (fetch_or) and waits until every member that joined has
 * left (acquire loads; the futex sleep is only a sleep).
 *
 * Checks: every item runs exactly once (a per-item count in a plain
 * rl::var: two runs are a count of 2 and a data race); the caller, after
 * the wait, sees every item's result (a plain rl::var written by whoever
 * ran it: a missing order is a reported race); a member that joined saw the
 * call's description (a plain rl::var written before the open).
 *
 * Mutants: 1 the leave relaxed; 2 the open relaxed; 3 a steal that leaves
 * its first stolen item in the victim's slot too; 4 an owner claim that
 * takes the item at hi.
 */
#include "rl_common.hpp"

namespace {

constexpr int kMembers = 3; /* the caller and two workers */
constexpr int kItems = 7;
constexpr unsigned kClosed = 0x80000000u;
constexpr unsigned kJoinedOne = 0x10000u;

static unsigned long long pack(unsigned lo, unsigned hi)
{
  return (unsigned long long)hi << 32 | lo;
}

struct ptp_test : rl::test_suite<ptp_test, kMembers> {
  rl::atomic<unsigned long long> slot[kMembers];
  rl::atomic<unsigned> crew;
  rl::var<int> call;            /* the call's description (tp->call) */
  rl::var<int> runs[kItems];    /* times each item ran */
  rl::var<int> result[kItems];  /* what the item wrote */

  void before()
  {
    crew.store(kClosed, rl::memory_order_relaxed);
    for (int m = 0; m < kMembers; m++)
      slot[m].store(0, rl::memory_order_relaxed);
    for (int i = 0; i < kItems; i++) {
      runs[i]($) = 0;
      result[i]($) = 0;
    }
  }

  void run_item(int i)
  {
    RL_ASSERT(i >= 0 && i < kItems);
    runs[i]($) = runs[i]($) + 1;
    result[i]($) = 100 + i;
  }

  void run_own(int id)
  {
    for (;;) {
      unsigned long long r = slot[id].fetch_add(1, rl::memory_order_relaxed);
      unsigned lo = (unsigned)r, hi = (unsigned)(r >> 32);
      if (WEFT_MUTANT == 4 ? lo > hi : lo >= hi)
        return;
      run_item((int)lo);
    }
  }

  bool steal_half(int v, unsigned *from, unsigned *to)
  {
    unsigned long long r = slot[v].load(rl::memory_order_relaxed);
    for (;;) {
      unsigned lo = (unsigned)r, hi = (unsigned)(r >> 32);
      if (lo >= hi)
        return false;
      unsigned mid = lo + (hi - lo) / 2;
      unsigned keep = WEFT_MUTANT == 3 && mid + 1 < hi ? mid + 1 : mid;
      if (slot[v].compare_exchange_weak(r, pack(lo, keep), rl::memory_order_relaxed,
                                        rl::memory_order_relaxed)) {
        *from = mid;
        *to = hi;
        return true;
      }
    }
  }

  void member_items(int id)
  {
    RL_ASSERT(call($) == 42); /* the description, published by the open */
    for (;;) {
      run_own(id);
      unsigned from = 0, to = 0;
      bool got = false;
      for (int k = 1; k < kMembers && !got; k++)
        got = steal_half((id + k) % kMembers, &from, &to);
      if (!got)
        return;
      slot[id].store(pack(from, to), rl::memory_order_relaxed);
    }
  }

  void caller()
  {
    for (int m = 0; m < kMembers; m++) {
      unsigned lo = (unsigned)(kItems * m / kMembers), hi = (unsigned)(kItems * (m + 1) / kMembers);
      slot[m].store(pack(lo, hi), rl::memory_order_relaxed);
    }
    call($) = 42;
    crew.store(0, WEFT_RL_MO(WEFT_MUTANT == 2, relaxed, release));
    member_items(0);
    unsigned s = crew.fetch_or(kClosed, rl::memory_order_acq_rel) | kClosed;
    while (((s = crew.load(rl::memory_order_acquire)) & 0xffffu) != 0)
      rl::yield(1, $);
    for (int i = 0; i < kItems; i++) {
      RL_ASSERT(runs[i]($) == 1);
      RL_ASSERT(result[i]($) == 100 + i);
    }
  }

  void member(int self)
  {
    unsigned s = crew.load(rl::memory_order_acquire);
    unsigned id = 0;
    for (;;) {
      if (s & kClosed)
        return;
      if (crew.compare_exchange_weak(s, s + kJoinedOne + 1, rl::memory_order_acquire,
                                     rl::memory_order_acquire)) {
        id = ((s >> 16) & 0x7fffu) + 1;
        break;
      }
    }
    RL_ASSERT(id >= 1 && id < (unsigned)kMembers);
    (void)self;
    member_items((int)id);
    crew.fetch_sub(1, WEFT_RL_MO(WEFT_MUTANT == 1, relaxed, release));
  }

  void thread(unsigned self)
  {
    if (self == 0)
      caller();
    else
      member((int)self);
  }
};

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "the leave relaxed", "the open relaxed",
                                      "a steal that leaves an item behind too",
                                      "an owner claim that takes the item at hi"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  /* The random scheduler only: the caller's wait is a spin loop, which the
   * context-bound scheduler reports as a livelock once its preemptions are
   * spent (as in rl_graph.cpp). */
  weft_rl::run_one<ptp_test>("pthreadpool call, 3 threads", rl::sched_random, 200000, 0, out);
  return weft_rl::finish("ptp", names[WEFT_MUTANT], out);
}
