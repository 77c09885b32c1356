/* SPDX-License-Identifier: MIT */
/*
 * Chase-Lev deque (src/pool/deque.h): sequential behaviour against a
 * reference model, then exactly-once delivery with one owner and 1, 2, 4
 * thieves, from initial capacity 2 (so the array grows many times while
 * thieves read it), free-running and with every thread pinned to one CPU
 * (preemption at every point instead of true parallelism).
 */
#include "../common/testutil.h"

#include "pool/deque.h"

static void *enc(long i)
{
  return (void *)(uintptr_t)(i + 1);
}

static long dec(void *p)
{
  return (long)(uintptr_t)p - 1;
}

/* ------------------------------------------------------------- sequential */

Test(deque, empty_deque, .timeout = TU_TIMEOUT(10))
{
  weft_deque dq;
  cr_assert_eq(weft_deque_init(&dq, 2), 0);
  cr_assert(weft_deque_looks_empty(&dq));
  cr_assert_null(weft_deque_take(&dq), "take on an empty deque returned an item");
  void *out = (void *)0x1;
  cr_assert_eq(weft_deque_steal(&dq, &out), WEFT_STEAL_EMPTY,
               "steal on an empty deque did not report EMPTY");
  /* Empty again after one item went in and out at each end. */
  cr_assert_eq(weft_deque_push(&dq, enc(1)), 0);
  cr_assert(!weft_deque_looks_empty(&dq));
  cr_assert_eq(weft_deque_take(&dq), enc(1));
  cr_assert_null(weft_deque_take(&dq));
  cr_assert_eq(weft_deque_push(&dq, enc(2)), 0);
  cr_assert_eq(weft_deque_steal(&dq, &out), WEFT_STEAL_OK);
  cr_assert_eq(out, enc(2));
  cr_assert_eq(weft_deque_steal(&dq, &out), WEFT_STEAL_EMPTY);
  cr_assert_null(weft_deque_take(&dq));
  weft_deque_destroy(&dq);
}

Test(deque, lifo_for_owner_fifo_for_thieves, .timeout = TU_TIMEOUT(10))
{
  const long n = 5000;
  weft_deque dq;
  cr_assert_eq(weft_deque_init(&dq, 2), 0);
  for (long i = 0; i < n; i++)
    cr_assert_eq(weft_deque_push(&dq, enc(i)), 0, "push %ld failed", i);
  /* Thieves take the oldest, the owner the newest. */
  for (long i = 0; i < n / 2; i++) {
    void *out = NULL;
    cr_assert_eq(weft_deque_steal(&dq, &out), WEFT_STEAL_OK, "steal %ld", i);
    cr_assert_eq(dec(out), i, "steal %ld returned item %ld", i, dec(out));
  }
  for (long i = n - 1; i >= n / 2; i--) {
    void *p = weft_deque_take(&dq);
    cr_assert_not_null(p, "take returned NULL with items left");
    cr_assert_eq(dec(p), i, "take returned item %ld, expected %ld", dec(p), i);
  }
  cr_assert_null(weft_deque_take(&dq));
  weft_deque_destroy(&dq);
}

/* Random push/take/steal from one thread against an array model; the
 * indices run far past the capacity so masking and growth are exercised. */
Test(deque, matches_reference_model, .timeout = TU_TIMEOUT(30))
{
  const long ops = tu_scaled(400000, 20000);
  long cap = 1 << 20;
  long *model = malloc((size_t)cap * sizeof *model);
  cr_assert_not_null(model);
  long head = 0, tail = 0; /* model holds [head, tail) */
  long next = 0;
  uint64_t rng = 12345;
  weft_deque dq;
  cr_assert_eq(weft_deque_init(&dq, 2), 0);
  for (long op = 0; op < ops; op++) {
    uint64_t r = tu_rand(&rng) % 100;
    /* Phases that favour growth, then shrinking, then balance. */
    long phase = (op / 5000) % 3;
    long push_pct = phase == 0 ? 70 : phase == 1 ? 30 : 50;
    if ((long)r < push_pct && tail < cap) {
      cr_assert_eq(weft_deque_push(&dq, enc(next)), 0);
      model[tail++] = next++;
    } else if (r % 2 == 0) {
      void *p = weft_deque_take(&dq);
      if (head == tail) {
        cr_assert_null(p, "op %ld: take returned %ld from an empty deque", op, dec(p));
      } else {
        long want = model[--tail];
        cr_assert_not_null(p, "op %ld: take returned NULL, expected %ld", op, want);
        cr_assert_eq(dec(p), want, "op %ld: take returned %ld, expected %ld", op, dec(p), want);
      }
    } else {
      void *out = NULL;
      weft_steal_result sr = weft_deque_steal(&dq, &out);
      if (head == tail) {
        cr_assert_eq(sr, WEFT_STEAL_EMPTY, "op %ld: steal on empty returned %d", op, (int)sr);
      } else {
        long want = model[head++];
        /* Nobody races a single thread: a RETRY here is wrong. */
        cr_assert_eq(sr, WEFT_STEAL_OK, "op %ld: uncontended steal returned %d", op, (int)sr);
        cr_assert_eq(dec(out), want, "op %ld: steal returned %ld, expected %ld", op, dec(out),
                     want);
      }
    }
    if (head == tail) {
      head = tail = 0; /* keep the model small; the deque's indices keep growing */
    }
  }
  weft_deque_destroy(&dq);
  free(model);
}

/* One item in and out at the thieves' end, over and over: top and bottom
 * grow far past the capacity of 2 without the array growing. */
Test(deque, indices_run_past_capacity, .timeout = TU_TIMEOUT(30))
{
  const long rounds = tu_scaled(1000000, 10000);
  weft_deque dq;
  cr_assert_eq(weft_deque_init(&dq, 2), 0);
  for (long i = 0; i < rounds; i++) {
    cr_assert_eq(weft_deque_push(&dq, enc(i)), 0);
    if (i % 3 == 0) {
      cr_assert_eq(weft_deque_push(&dq, enc(-5)), 0);
      cr_assert_eq(dec(weft_deque_take(&dq)), -5);
    }
    void *out = NULL;
    cr_assert_eq(weft_deque_steal(&dq, &out), WEFT_STEAL_OK);
    cr_assert_eq(dec(out), i, "round %ld: stole %ld", i, dec(out));
  }
  cr_assert_null(weft_deque_take(&dq));
  weft_deque_destroy(&dq);
}

/* ------------------------------------------------------------- concurrent */

typedef struct run {
  weft_deque dq;
  long n;
  int thieves;
  int pin_cpu;        /* -1: not pinned */
  bool thieves_only;  /* owner pushes everything first, never takes */
  atomic_uint *seen;  /* per item: how many times it came out */
  atomic_int ready;
  atomic_int go;
  atomic_int owner_done;
  atomic_int empty_seen; /* thieves-only: some steal has returned EMPTY */
  atomic_long stolen, taken, retries, empties, after_empty;
} run;

static void record(run *r, void *p)
{
  long i = dec(p);
  if (i < 0 || i >= r->n) {
    TU_CHECK(0, "deque returned a value that was never pushed: %p", p);
    return;
  }
  atomic_fetch_add_explicit(&r->seen[i], 1, memory_order_relaxed);
}

static void *thief(void *arg)
{
  run *r = arg;
  if (r->pin_cpu >= 0)
    TU_CHECK(tu_pin_self(r->pin_cpu) == 0, "sched_setaffinity failed in a thief");
  atomic_fetch_add(&r->ready, 1);
  while (!atomic_load(&r->go))
    sched_yield();
  unsigned idle = 0;
  for (;;) {
    void *out = NULL;
    bool after_empty = atomic_load(&r->empty_seen);
    weft_steal_result sr = weft_deque_steal(&r->dq, &out);
    if (sr == WEFT_STEAL_OK) {
      /* Thieves-only, nothing is pushed any more: once a steal has said
       * EMPTY, no steal that starts later may find an item. */
      if (r->thieves_only && after_empty)
        atomic_fetch_add(&r->after_empty, 1);
      record(r, out);
      atomic_fetch_add_explicit(&r->stolen, 1, memory_order_relaxed);
      idle = 0;
    } else if (sr == WEFT_STEAL_RETRY) {
      /* Lost a race: the deque was not empty, so try again at once. */
      atomic_fetch_add_explicit(&r->retries, 1, memory_order_relaxed);
    } else {
      TU_CHECK(sr == WEFT_STEAL_EMPTY, "steal returned %d", (int)sr);
      atomic_fetch_add_explicit(&r->empties, 1, memory_order_relaxed);
      /* Thieves-only: nothing is ever pushed again, so EMPTY is final. */
      if (r->thieves_only) {
        atomic_store(&r->empty_seen, 1);
        break;
      }
      /* The owner sets the flag only once it has emptied the deque for
       * good and will push no more. */
      if (atomic_load(&r->owner_done)) {
        void *late = NULL;
        weft_steal_result again = weft_deque_steal(&r->dq, &late);
        TU_CHECK(again == WEFT_STEAL_EMPTY, "steal after the owner finished returned %d",
                 (int)again);
        if (again == WEFT_STEAL_OK)
          record(r, late);
        break;
      }
      if (++idle % 16 == 0)
        sched_yield();
    }
  }
  return NULL;
}

/* Returns how many items came out, each exactly once (n). */
static long run_once(long n, int thieves, int pin_cpu, bool thieves_only, uint64_t seed)
{
  run *r = calloc(1, sizeof *r);
  cr_assert_not_null(r);
  r->n = n;
  r->thieves = thieves;
  r->pin_cpu = pin_cpu;
  r->thieves_only = thieves_only;
  r->seen = calloc((size_t)n, sizeof *r->seen);
  cr_assert_not_null(r->seen);
  cr_assert_eq(weft_deque_init(&r->dq, 2), 0);

  if (pin_cpu >= 0)
    cr_assert_eq(tu_pin_self(pin_cpu), 0, "sched_setaffinity failed");

  long pushed = 0;
  if (thieves_only) {
    for (; pushed < n; pushed++)
      cr_assert_eq(weft_deque_push(&r->dq, enc(pushed)), 0);
  }

  pthread_t th[8];
  for (int t = 0; t < thieves; t++)
    cr_assert_eq(pthread_create(&th[t], NULL, thief, r), 0);
  while (atomic_load(&r->ready) < thieves)
    sched_yield();
  atomic_store(&r->go, 1);

  if (!thieves_only) {
    uint64_t rng = seed;
    while (pushed < n) {
      long burst = 1 + (long)(tu_rand(&rng) % 8);
      for (long j = 0; j < burst && pushed < n; j++, pushed++) {
        int rc = weft_deque_push(&r->dq, enc(pushed));
        TU_CHECK(rc == 0, "push of item %ld returned %d", pushed, rc);
      }
      long takes = (long)(tu_rand(&rng) % 5);
      for (long j = 0; j < takes; j++) {
        void *p = weft_deque_take(&r->dq);
        if (!p)
          break;
        record(r, p);
        atomic_fetch_add_explicit(&r->taken, 1, memory_order_relaxed);
      }
    }
    void *p;
    while ((p = weft_deque_take(&r->dq)) != NULL) {
      record(r, p);
      atomic_fetch_add_explicit(&r->taken, 1, memory_order_relaxed);
    }
    atomic_store(&r->owner_done, 1);
  }

  for (int t = 0; t < thieves; t++)
    pthread_join(th[t], NULL);

  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&r->after_empty), 0,
               "n=%ld thieves=%d pinned=%d: %ld steals found an item after another steal had "
               "reported EMPTY with nothing pushed since (a lost race reported as EMPTY?)",
               n, thieves, pin_cpu >= 0, atomic_load(&r->after_empty));
  long total = atomic_load(&r->stolen) + atomic_load(&r->taken);
  /* Everything left after the thieves quit would be a lost item. */
  void *left = weft_deque_take(&r->dq);
  cr_assert_null(left,
                 "n=%ld thieves=%d pinned=%d thieves_only=%d: item %ld still in the deque "
                 "after every thief saw EMPTY (a lost race reported as EMPTY?)",
                 n, thieves, pin_cpu >= 0, thieves_only, dec(left));
  for (long i = 0; i < n; i++) {
    unsigned s = atomic_load(&r->seen[i]);
    cr_assert_eq(s, 1,
                 "n=%ld thieves=%d pinned=%d thieves_only=%d: item %ld came out %u times "
                 "(stolen %ld, taken %ld, retries %ld)",
                 n, thieves, pin_cpu >= 0, thieves_only, i, s, atomic_load(&r->stolen),
                 atomic_load(&r->taken), atomic_load(&r->retries));
  }
  cr_assert_eq(total, n, "n=%ld: %ld items came out", n, total);

  weft_deque_destroy(&r->dq);
  free(r->seen);
  free(r);
  return total;
}

/* Item counts 1..100k; small counts repeat many times, since their races
 * (owner and thief on the last item) are what goes wrong. Returns how many
 * items came out exactly once, over every run. */
static long exactly_once(int thieves, bool pinned, bool thieves_only)
{
  static const struct {
    long n;
    long reps;
  } plan[] = {{1, 800}, {2, 600}, {3, 400}, {10, 400}, {100, 100}, {1000, 40}, {100000, 3}};
  int cpu = pinned ? tu_first_allowed_cpu() : -1;
  if (pinned && tu_pin_self(cpu) != 0)
    cr_skip_test("sched_setaffinity is not permitted here");
  uint64_t seed = 0x5eed0000u + (uint64_t)thieves * 7 + (pinned ? 1 : 0);
  long items = 0;
  for (size_t k = 0; k < sizeof plan / sizeof plan[0]; k++) {
    long reps = tu_scaled(plan[k].reps, 1);
    for (long rep = 0; rep < reps; rep++)
      items += run_once(plan[k].n, thieves, cpu, thieves_only, seed + (uint64_t)rep * 131);
  }
  tu_assert_no_leaks(); /* retired arrays are freed by destroy */
  return items;
}

Test(deque, exactly_once_1_thief, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(1, false, false), 0);
}

Test(deque, exactly_once_2_thieves, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(2, false, false), 0);
}

Test(deque, exactly_once_4_thieves, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(4, false, false), 0);
}

Test(deque, exactly_once_1_thief_pinned, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(1, true, false), 0);
}

Test(deque, exactly_once_2_thieves_pinned, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(2, true, false), 0);
}

Test(deque, exactly_once_4_thieves_pinned, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(4, true, false), 0);
}

/* Thieves alone drain a full deque and quit at their first EMPTY. With no
 * push any more, EMPTY is only correct once every item is claimed, so a
 * steal that finds an item after some steal said EMPTY means a lost race was
 * reported as EMPTY (and in a pool, a worker would have parked on work). */
Test(deque, retry_is_not_empty_2_thieves, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(2, false, true), 0);
}

Test(deque, retry_is_not_empty_4_thieves, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(4, false, true), 0);
}

Test(deque, retry_is_not_empty_4_thieves_pinned, .timeout = TU_TIMEOUT(60))
{
  cr_assert_gt(exactly_once(4, true, true), 0);
}

/* --------------------------------------------------------------- hammer */

/*
 * The races on the last few items (owner's take against a thief's steal)
 * need many short rounds to show up: persistent thieves, one deque reused
 * for every round (so its indices also grow far past its capacity), and
 * 1 to 4 items per round.
 */
typedef struct hammer {
  weft_deque dq;
  int thieves;
  atomic_long go_round;   /* owner: round r may start */
  atomic_long done_round; /* owner: round r's items are all out of the deque */
  atomic_int acks;        /* thieves finished with the current round */
  atomic_int quit;
  atomic_uint seen[8];
  atomic_long stolen;
} hammer;

static void *hammer_thief(void *arg)
{
  hammer *h = arg;
  long r = 0;
  for (;;) {
    long g;
    while ((g = atomic_load(&h->go_round)) == r && !atomic_load(&h->quit))
      sched_yield();
    if (atomic_load(&h->quit))
      return NULL;
    r = g;
    for (;;) {
      void *out = NULL;
      weft_steal_result sr = weft_deque_steal(&h->dq, &out);
      if (sr == WEFT_STEAL_OK) {
        long i = dec(out);
        if (i < 0 || i >= 8)
          TU_CHECK(0, "round %ld: stole %p, never pushed", r, out);
        else
          atomic_fetch_add(&h->seen[i], 1);
        atomic_fetch_add(&h->stolen, 1);
      } else if (sr == WEFT_STEAL_EMPTY && atomic_load(&h->done_round) == r) {
        break;
      }
    }
    atomic_fetch_add(&h->acks, 1);
  }
}

/* Returns how many rounds it checked (rounds). */
static long hammer_run(int thieves, long rounds)
{
  hammer *h = calloc(1, sizeof *h);
  cr_assert_not_null(h);
  long checked = 0;
  h->thieves = thieves;
  cr_assert_eq(weft_deque_init(&h->dq, 2), 0);
  pthread_t th[4];
  for (int t = 0; t < thieves; t++)
    cr_assert_eq(pthread_create(&th[t], NULL, hammer_thief, h), 0);
  uint64_t rng = 99 + (uint64_t)thieves;
  for (long r = 1; r <= rounds; r++) {
    int n = 1 + (int)(tu_rand(&rng) % 4);
    for (int i = 0; i < n; i++)
      atomic_store(&h->seen[i], 0);
    atomic_store(&h->acks, 0);
    atomic_store(&h->go_round, r);
    /* Push everything, then take: the thieves race for the same items. */
    int pattern = (int)(tu_rand(&rng) % 3);
    int pushed = 0;
    while (pushed < n) {
      cr_assert_eq(weft_deque_push(&h->dq, enc(pushed)), 0);
      pushed++;
      if (pattern == 1) {
        void *p = weft_deque_take(&h->dq);
        if (p)
          atomic_fetch_add(&h->seen[dec(p)], 1);
      }
    }
    if (pattern == 2)
      for (int spin = (int)(tu_rand(&rng) % 64); spin > 0; spin--)
        atomic_signal_fence(memory_order_seq_cst);
    void *p;
    while ((p = weft_deque_take(&h->dq)) != NULL) {
      long i = dec(p);
      cr_assert(i >= 0 && i < n, "round %ld: took %p", r, p);
      atomic_fetch_add(&h->seen[i], 1);
    }
    atomic_store(&h->done_round, r);
    while (atomic_load(&h->acks) < thieves)
      sched_yield();
    tu_assert_no_errors();
    for (int i = 0; i < n; i++)
      cr_assert_eq(atomic_load(&h->seen[i]), 1,
                   "round %ld (%d items, %d thieves, pattern %d): item %d came out %u times",
                   r, n, thieves, pattern, i, atomic_load(&h->seen[i]));
    checked++;
  }
  atomic_store(&h->quit, 1);
  for (int t = 0; t < thieves; t++)
    pthread_join(th[t], NULL);
  cr_log_info("%d thieves: %ld rounds, %ld items stolen", thieves, rounds, atomic_load(&h->stolen));
  weft_deque_destroy(&h->dq);
  free(h);
  return checked;
}

Test(deque, hammer_last_items_1_thief, .timeout = TU_TIMEOUT(60))
{
  const long rounds = tu_scaled(1000000, 5000);
  cr_assert_eq(hammer_run(1, rounds), rounds);
}

Test(deque, hammer_last_items_2_thieves, .timeout = TU_TIMEOUT(60))
{
  const long rounds = tu_scaled(500000, 5000);
  cr_assert_eq(hammer_run(2, rounds), rounds);
}

Test(deque, hammer_last_items_3_thieves, .timeout = TU_TIMEOUT(60))
{
  const long rounds = tu_scaled(200000, 2000);
  cr_assert_eq(hammer_run(3, rounds), rounds);
}
