/* SPDX-License-Identifier: MIT */
/*
 * relacy harness: the Chase-Lev deque of src/pool/deque.c, re-expressed
 * with relacy's atomics and the same memory orders (Le et al. + the array
 * publication), grow path and owner's top_seen cache included.
 *
 * Checks: every pushed item is obtained exactly once (by take, by steal, or
 * left in the deque at the end); the item's contents, written by the owner
 * before push (a plain rl::var), are visible to whoever obtains it (relacy
 * reports a data race otherwise); the grown array's fields and slots are
 * visible to a thief that loads the new array (a data race on mask, or a
 * read of an uninitialised slot, otherwise).
 *
 * Mutants (`rl_deque n` runs mutant n, as mutants.sh does; each must be caught):
 *   1  take's seq_cst fence weakened to acq_rel       (deque.c, take)
 *   2  steal's seq_cst fence weakened to acq_rel      (deque.c, steal)
 *   3  grow publishes the new array relaxed, not release (deque.c, grow)
 */
#include "rl_common.hpp"

namespace {

constexpr int kMaxItems = 4;
constexpr int kMaxCap = 8;

/* weft_deque_array: mask immutable once published (a plain var here, so a
 * read without happens-before is a reported race); atomic slots. */
struct darray {
  rl::var<long> mask;
  darray *retired;
  rl::atomic<long> slot[kMaxCap]; /* item ids; 0 is NULL */
};

/* array_new (deque.c) */
darray *array_new(long capacity)
{
  darray *a = new darray;
  a->mask($) = capacity - 1;
  a->retired = nullptr;
  for (long i = 0; i < capacity; i++)
    a->slot[i].store(0, rl::memory_order_relaxed); /* atomic_init */
  return a;
}

struct deque {
  rl::atomic<long> top;
  rl::atomic<long> bottom;
  rl::var<long> top_seen; /* owner only */
  rl::atomic<darray *> array;
  darray *retired;        /* owner only */

  /* weft_deque_init (deque.c) */
  void init(long capacity)
  {
    darray *a = array_new(capacity);
    top.store(0, rl::memory_order_relaxed);
    bottom.store(0, rl::memory_order_relaxed);
    top_seen($) = 0;
    array.store(a, rl::memory_order_relaxed);
    retired = nullptr;
  }

  /* weft_deque_destroy (deque.c) */
  void destroy()
  {
    delete array.load(rl::memory_order_relaxed);
    for (darray *r = retired, *next; r; r = next) {
      next = r->retired;
      delete r;
    }
  }

  /* grow (deque.c) */
  darray *grow(darray *a, long t, long b)
  {
    darray *na = array_new(2 * (a->mask($) + 1));
    RL_ASSERT(2 * (a->mask($) + 1) <= kMaxCap);
    for (long i = t; i < b; i++)
      na->slot[i & na->mask($)].store(a->slot[i & a->mask($)].load(rl::memory_order_relaxed),
                                      rl::memory_order_relaxed);
    /* mutant 3: no release */
    array.store(na, WEFT_RL_MO(WEFT_MUTANT == 3, relaxed, release));
    a->retired = retired;
    retired = a;
    return na;
  }

  /* weft_deque_push (deque.c) */
  void push(long item)
  {
    long b = bottom.load(rl::memory_order_relaxed);
    darray *a = array.load(rl::memory_order_relaxed);
    if (b - top_seen($) > a->mask($)) {
      long t = top.load(rl::memory_order_acquire);
      top_seen($) = t;
      if (b - t > a->mask($))
        a = grow(a, t, b);
    }
    a->slot[b & a->mask($)].store(item, rl::memory_order_relaxed);
    bottom.store(b + 1, rl::memory_order_release);
  }

  /* weft_deque_take (deque.c), the non-TSan branch */
  long take()
  {
    long b = bottom.load(rl::memory_order_relaxed) - 1;
    darray *a = array.load(rl::memory_order_relaxed);
    bottom.store(b, rl::memory_order_relaxed);
    WEFT_RL_FENCE(WEFT_MUTANT == 1); /* atomic_thread_fence(seq_cst) */
    long t = top.load(rl::memory_order_relaxed);
    if (t > b) {
      bottom.store(b + 1, rl::memory_order_relaxed);
      return 0;
    }
    long item = a->slot[b & a->mask($)].load(rl::memory_order_relaxed);
    if (t == b) {
      if (!top.compare_exchange_strong(t, t + 1, rl::memory_order_seq_cst))
        item = 0;
      bottom.store(b + 1, rl::memory_order_relaxed);
    }
    return item;
  }

  /* weft_deque_steal (deque.c), the non-TSan branch.
   * Returns 0 OK, 1 EMPTY, 2 RETRY. */
  int steal(long *out)
  {
    long t = top.load(rl::memory_order_acquire);
    WEFT_RL_FENCE(WEFT_MUTANT == 2); /* atomic_thread_fence(seq_cst) */
    long b = bottom.load(rl::memory_order_acquire);
    if (t >= b)
      return 1;
    darray *a = array.load(rl::memory_order_acquire);
    long item = a->slot[t & a->mask($)].load(rl::memory_order_relaxed);
    /* compare_exchange_strong(seq_cst, relaxed): relacy's CAS takes one order */
    if (!top.compare_exchange_strong(t, t + 1, rl::memory_order_seq_cst))
      return 2;
    *out = item;
    return 0;
  }
};

/* A scenario: thread 0 owns the deque (capacity CAP), pushes PUSHES items,
 * then takes TAKES times; threads 1..THIEVES each make STEALS steal calls. */
template <int THIEVES, long CAP, int PUSHES, int TAKES, int STEALS>
struct deque_test : rl::test_suite<deque_test<THIEVES, CAP, PUSHES, TAKES, STEALS>, 1 + THIEVES> {
  deque dq;
  rl::var<int> payload[kMaxItems + 1]; /* an item's contents */
  rl::atomic<int> got[kMaxItems + 1];  /* times each item was obtained */

  void before()
  {
    dq.init(CAP);
    for (int i = 0; i <= kMaxItems; i++)
      got[i].store(0, rl::memory_order_relaxed);
  }

  void obtained(long item)
  {
    RL_ASSERT(item >= 1 && item <= PUSHES);
    RL_ASSERT(payload[item]($) == 100 + (int)item); /* published with the item */
    got[item].fetch_add(1, rl::memory_order_relaxed);
  }

  void thread(unsigned index)
  {
    if (index == 0) {
      for (int i = 1; i <= PUSHES; i++) {
        payload[i]($) = 100 + i;
        dq.push(i);
      }
      for (int i = 0; i < TAKES; i++) {
        long item = dq.take();
        if (item)
          obtained(item);
      }
    } else {
      for (int i = 0; i < STEALS; i++) {
        long item = 0;
        if (dq.steal(&item) == 0)
          obtained(item);
      }
    }
  }

  void after()
  {
    /* What is left in [top, bottom) counts as obtained once more. */
    long t = dq.top.load(rl::memory_order_relaxed), b = dq.bottom.load(rl::memory_order_relaxed);
    darray *a = dq.array.load(rl::memory_order_relaxed);
    RL_ASSERT(t <= b);
    for (long i = t; i < b; i++) {
      long item = a->slot[i & a->mask($)].load(rl::memory_order_relaxed);
      RL_ASSERT(item >= 1 && item <= PUSHES);
      got[item].fetch_add(1, rl::memory_order_relaxed);
    }
    for (int i = 1; i <= PUSHES; i++)
      RL_ASSERT(got[i].load(rl::memory_order_relaxed) == 1); /* exactly once */
    dq.destroy();
  }
};

/* The take/steal race on the last items: a thief stealing twice while the
 * owner takes both (the store-load pattern that needs both fences). */
using race_last = deque_test<1, 2, 2, 2, 2>;
/* Two thieves and the owner on one item. */
using race_one = deque_test<2, 2, 1, 1, 1>;
/* Push past capacity 2 (grow, array published) while a thief steals, then
 * take what is left. */
using grow_steal = deque_test<1, 2, 3, 3, 2>;
/* Grow after a steal: top_seen is stale, push re-reads top. */
using grow_reuse = deque_test<1, 2, 4, 1, 1>;

} // namespace

int main(int argc, char **argv)
{
  static const char *const names[] = {"none", "take fence seq_cst->acq_rel",
                                      "steal fence seq_cst->acq_rel",
                                      "grow publishes the array relaxed"};
  weft_rl::pick_mutant(argc, argv, (int)(sizeof names / sizeof *names) - 1);
  weft_rl::outcome out;
  weft_rl::run_both<race_last>("deque race_last", 200000, 3, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<race_one>("deque race_one", 100000, 2, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<grow_steal>("deque grow_steal", 200000, 2, out);
  if (!(WEFT_MUTANT && out.failed))
    weft_rl::run_both<grow_reuse>("deque grow_reuse", 100000, 2, out);
  return weft_rl::finish("deque", names[WEFT_MUTANT], out);
}
