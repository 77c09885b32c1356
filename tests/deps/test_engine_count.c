/* SPDX-License-Identifier: MIT */
/*
 * The in-flight counts (src/deps/inflight.c): a thread outside the pool
 * that pushes owns one of the engine's WEFT_OUTSIDE_TALLIES outside
 * tallies and counts there with a plain store, handshaking with
 * weft_wait_all's epoch flip through a compiler barrier on its side and a
 * membarrier on the waiter's; threads past that many share a tally.
 *
 * Checked: a weft_wait_all waits for every operator pushed before it began,
 * whichever kind of tally counted it, while pushers on both kinds keep
 * pushing; the tallies are claimed one thread each and given back when the
 * thread exits; a thread's notes of its claims follow engines that come
 * and go (more of them, one after another, than it can note at once).
 */
#include <sched.h>

#include "common/tunables.h"
#include "deps/engine.h"
#include "deps/inflight.h"
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

/* Outside tallies of eng that some thread owns now. */
static int owned_tallies(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  int first = atomic_load(&sy->ntally) - 1 - WEFT_OUTSIDE_TALLIES, n = 0;
  for (int i = first; i < first + WEFT_OUTSIDE_TALLIES; i++)
    n += atomic_load(&sy->tally[i].owner) != NULL;
  return n;
}

/* Pushes counted in every tally, both slots. */
static uint64_t counted_pushes(weft_engine *eng)
{
  weft_engine_sync *sy = eng->sync;
  uint64_t n = 0;
  for (int i = 0; i < atomic_load(&sy->ntally); i++)
    n += atomic_load(&sy->tally[i].pushed[0]) + atomic_load(&sy->tally[i].pushed[1]);
  return n;
}

/* ------------------------------- wait_all against pushers of both kinds */

enum { NPUSHERS = WEFT_OUTSIDE_TALLIES + 2, NROUNDS = 300 };

typedef struct race {
  weft_engine *eng;
  weft_var *v[NPUSHERS];
  atomic_long pushed[NPUSHERS];   /* each pusher's returned pushes */
  atomic_long finished[NPUSHERS]; /* each pusher's operators that ran */
  atomic_int stop;
  int push_rc[NPUSHERS];
} race;

static race g_race;

typedef struct race_op {
  int who;
} race_op;

static race_op race_ops[NPUSHERS];

static int race_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  race_op *o = arg;
  /* A little work, so that a push is often still in flight when a
   * wait_all begins. */
  volatile int spin = 0;
  for (int i = 0; i < 200; i++)
    spin += i;
  atomic_fetch_add(&g_race.finished[o->who], 1);
  return 0;
}

static void *race_pusher(void *arg)
{
  int who = (int)(intptr_t)arg;
  while (!atomic_load(&g_race.stop)) {
    int rc = te_push(g_race.eng, race_fn, &race_ops[who], TE_NONE, TE_V(g_race.v[who]), 0);
    if (rc) {
      g_race.push_rc[who] = rc;
      break;
    }
    long pushed = atomic_fetch_add(&g_race.pushed[who], 1) + 1;
    /* A few in flight at a time: enough to race the waits, few enough
     * that each wait drains quickly (a sanitizer build is slow). */
    while (pushed - atomic_load(&g_race.finished[who]) > 16 && !atomic_load(&g_race.stop))
      sched_yield();
  }
  return NULL;
}

/* What one race of pushers against waits saw. */
typedef struct race_outcome {
  int late;         /* waits that returned before an op pushed before them finished */
  int owned;        /* outside tallies owned while all pushed */
  int owned_after;  /* outside tallies owned once every pusher exited */
  long pushed;      /* pushes that returned */
  long unfinished;  /* of those, ops that never ran */
  uint64_t counted; /* pushes counted in the tallies (a push that met a flip: twice) */
  bool drained;     /* both epochs drained at the end */
} race_outcome;

/* Six outside pushers against a stream of weft_wait_all; returns what the
 * test then checks. */
static race_outcome race_waits_against_pushers(int threads)
{
  memset(&g_race, 0, sizeof g_race);
  race_outcome out = {0};
  te t = te_new("threaded", threads, 0);
  g_race.eng = t.eng;
  pthread_t p[NPUSHERS];
  for (int i = 0; i < NPUSHERS; i++) {
    race_ops[i].who = i;
    g_race.v[i] = te_var(t.eng);
    cr_assert_eq(pthread_create(&p[i], NULL, race_pusher, (void *)(intptr_t)i), 0);
  }
  /* Every pusher has pushed (and so claimed a tally if one was free): on
   * a loaded machine the first ones started need not be the first to run. */
  for (int i = 0; i < NPUSHERS; i++)
    cr_assert(TU_WAIT_UNTIL(atomic_load(&g_race.pushed[i]) > 0, TU_DEADLINE_S),
              "pusher %d never pushed", i);
  long rounds = tu_scaled(NROUNDS, 50);
  for (int r = 0; r < rounds; r++) {
    long before[NPUSHERS];
    for (int i = 0; i < NPUSHERS; i++)
      before[i] = atomic_load(&g_race.pushed[i]);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    for (int i = 0; i < NPUSHERS; i++)
      if (atomic_load(&g_race.finished[i]) < before[i] && !out.late++)
        fprintf(stderr,
                "round %d: pusher %d: %ld pushed before the wait began, %ld finished after it\n", r,
                i, before[i], atomic_load(&g_race.finished[i]));
  }
  out.owned = owned_tallies(t.eng); /* while they all push */
  atomic_store(&g_race.stop, 1);
  for (int i = 0; i < NPUSHERS; i++) {
    te_join(p[i]);
    cr_assert_eq(g_race.push_rc[i], 0, "pusher %d: push = %d", i, g_race.push_rc[i]);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  out.owned_after = owned_tallies(t.eng);
  out.counted = counted_pushes(t.eng);
  out.drained = weft_engine_drained(t.eng, -1);
  for (int i = 0; i < NPUSHERS; i++) {
    out.pushed += atomic_load(&g_race.pushed[i]);
    out.unfinished += atomic_load(&g_race.pushed[i]) - atomic_load(&g_race.finished[i]);
  }
  cr_assert_eq(te_free(&t), 0);
  return out;
}

/* What is wrong with a race at threads workers (into why; NULL: nothing):
 * every wait must see what was pushed before it, the pushers own every
 * outside tally and give them back, and every push is counted and runs. */
static const char *race_fault(int threads, char *why, size_t n)
{
  race_outcome o = race_waits_against_pushers(threads);
  if (o.late)
    snprintf(why, n, "%d threads: %d waits returned before operators pushed before them finished",
             threads, o.late);
  else if (o.owned != WEFT_OUTSIDE_TALLIES)
    snprintf(why, n, "%d outside tallies owned by %d pushers", o.owned, NPUSHERS);
  else if (o.owned_after)
    snprintf(why, n, "%d tallies still owned after the pushers' exits", o.owned_after);
  /* A push that met a flip counts in the next epoch too (and finishes its
   * first count): at least every push, and drained. */
  else if (o.counted < (uint64_t)o.pushed)
    snprintf(why, n, "%llu pushes counted of %ld", (unsigned long long)o.counted, o.pushed);
  else if (!o.drained)
    snprintf(why, n, "an epoch did not drain");
  else if (o.unfinished)
    snprintf(why, n, "%ld pushed ops never ran", o.unfinished);
  else
    return NULL;
  return why;
}

Test(counts, wait_all_waits_for_every_earlier_push_owned_or_shared_2_threads, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  char why[160];
  const char *fault = race_fault(2, why, sizeof why);
  cr_assert_null(fault, "%s", fault);
}

Test(counts, wait_all_waits_for_every_earlier_push_owned_or_shared_1_thread, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  char why[160];
  const char *fault = race_fault(1, why, sizeof why);
  cr_assert_null(fault, "%s", fault);
}

/* ------------------------------------------------ claims come and go */

static int nop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

typedef struct holder {
  weft_engine *eng;
  weft_var *v;
  atomic_int pushed, release;
  int rc;
} holder;

/* Pushes once, then holds its claim until told to exit. */
static void *hold_claim(void *arg)
{
  holder *h = arg;
  h->rc = te_push(h->eng, nop_fn, NULL, TE_NONE, TE_V(h->v), 0);
  atomic_store(&h->pushed, 1);
  TU_WAIT_UNTIL(atomic_load(&h->release), TU_DEADLINE_S);
  return NULL;
}

Test(counts, an_exiting_thread_gives_its_tally_to_the_next_thread, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new("threaded", 1, 0);
  weft_var *v = te_var(t.eng);
  enum { WAVES = 3, N = WEFT_OUTSIDE_TALLIES };
  for (int wave = 0; wave < WAVES; wave++) {
    holder h[N];
    pthread_t p[N];
    for (int i = 0; i < N; i++) {
      h[i] = (holder){.eng = t.eng, .v = v};
      cr_assert_eq(pthread_create(&p[i], NULL, hold_claim, &h[i]), 0);
    }
    for (int i = 0; i < N; i++)
      cr_assert(TU_WAIT_UNTIL(atomic_load(&h[i].pushed), TU_DEADLINE_S));
    /* Every wave owns them all: the previous wave's exits gave them back. */
    cr_assert_eq(owned_tallies(t.eng), N, "wave %d: %d of %d tallies owned", wave,
                 owned_tallies(t.eng), N);
    for (int i = 0; i < N; i++) {
      atomic_store(&h[i].release, 1);
      te_join(p[i]);
      cr_assert_eq(h[i].rc, 0);
    }
    cr_assert_eq(owned_tallies(t.eng), 0, "wave %d: exits gave the tallies back", wave);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(counted_pushes(t.eng), (uint64_t)(WAVES * N));
  cr_assert_eq(te_free(&t), 0);
}

Test(counts, a_thread_owns_a_tally_in_each_of_many_engines_in_turn, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  /* More engines, one after another, than a thread notes claims in at
   * once: the notes of destroyed engines make room. And more live at once
   * than it can note: the ones past that share, and still count. */
  enum { SEQ = 3 * WEFT_OUTSIDE_CLAIMS, LIVE = WEFT_OUTSIDE_CLAIMS + 2 };
  for (int i = 0; i < SEQ; i++) {
    te t = te_new("threaded", 1, 0);
    cr_assert_eq(te_push(t.eng, nop_fn, NULL, TE_NONE, TE_V(te_var(t.eng)), 0), 0);
    cr_assert_eq(owned_tallies(t.eng), 1, "engine %d: the pushing thread owns a tally", i);
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(te_free(&t), 0);
  }
  te live[LIVE];
  for (int i = 0; i < LIVE; i++) {
    live[i] = te_new("threaded", 1, 0);
    for (int k = 0; k < 3; k++)
      cr_assert_eq(te_push(live[i].eng, nop_fn, NULL, TE_NONE, TE_V(te_var(live[i].eng)), 0), 0);
  }
  for (int i = 0; i < LIVE; i++) {
    cr_assert_eq(owned_tallies(live[i].eng), i < WEFT_OUTSIDE_CLAIMS,
                 "engine %d of %d live: owned %d", i, LIVE, owned_tallies(live[i].eng));
    cr_assert_eq(weft_wait_all(live[i].eng), 0);
    cr_assert_eq(counted_pushes(live[i].eng), 3u);
  }
  for (int i = 0; i < LIVE; i++)
    cr_assert_eq(te_free(&live[i]), 0);
}
