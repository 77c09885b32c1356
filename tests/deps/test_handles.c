/* SPDX-License-Identifier: MIT */
/*
 * The handle table (src/deps/handles.h) through its internals: chunks that
 * double as the table grows, stale and forged handles across that growth,
 * lock-free lookups racing it, the fixed part's size and what it
 * allocates, and the encoding's limit (WEFT_ELIMIT), reached through the
 * testing hook that lowers it; then the engine's calls at that limit
 * (weft_var_new, weft_op_new, an async operator's token), each with its
 * message.
 */
#include "engine_util.h"

#include "common/alloc.h"
#include "common/tunables.h"
#include "deps/handles.h"

#define B ((long)WEFT_HANDLE_BATCH_SLOTS)

/* A slot type as the engine's are: the slot first, then a payload. */
typedef struct item {
  weft_slot slot;
  _Atomic long payload; /* atomic, relaxed: published with its handle */
} item;

static void setup(void)
{
  te_setup();
  weft_test_handle_limit(0);
}

static void table(weft_handles *h)
{
  int rc = weft_handles_init(h, sizeof(item), 16);
  cr_assert_eq(rc, 0, "weft_handles_init = %d (%s)", rc, weft_strerror(rc));
}

static item *alloc_item(weft_handles *h, uintptr_t *handle, long payload)
{
  weft_slot *s = NULL;
  int rc = weft_handles_alloc(h, &s, handle);
  cr_assert_eq(rc, 0, "weft_handles_alloc = %d (%s)", rc, weft_strerror(rc));
  cr_assert_not_null(s);
  item *it = (item *)s;
  atomic_store_explicit(&it->payload, payload, memory_order_relaxed);
  return it;
}

static void kill_and_free(weft_handles *h, uintptr_t handle)
{
  weft_slot *s = weft_handles_get(h, handle);
  cr_assert_not_null(s, "a live handle %#lx does not resolve", (unsigned long)handle);
  cr_assert(weft_slot_kill(s, weft_handle_gen(handle)));
  weft_handles_free(h, s);
}

/* The handle resolves to its own slot, holding payload. */
static void assert_resolves(weft_handles *h, uintptr_t handle, item *it, long payload)
{
  item *got = (item *)weft_handles_get(h, handle);
  cr_assert_eq(got, it, "handle %#lx (index %lu) resolves to %p, not its slot %p",
               (unsigned long)handle, (unsigned long)(handle & 0xffffffffu) - 1, (void *)got,
               (void *)it);
  cr_assert_eq(atomic_load(&got->payload), payload, "handle index %lu: payload %ld, not %ld",
               (unsigned long)(handle & 0xffffffffu) - 1, atomic_load(&got->payload), payload);
}

/* ------------------------------------------------------------- footprint */

Test(handles, an_empty_table_is_a_few_lines_and_allocates_one_chunk_per_doubling,
     .init = setup, .timeout = TU_TIMEOUT(30))
{
  /* No fixed directory sized for the largest table: an engine holds two. */
  cr_assert_leq(sizeof(weft_handles), 8 * WEFT_CACHE_LINE, "a table is %zu bytes",
                sizeof(weft_handles));
  weft_handles h;
  weft_test_fail_alloc_at(0); /* counts from here */
  table(&h);
  cr_assert_eq(weft_test_alloc_calls(), 0, "init allocated");
  /* Chunks of B, 2B, 4B, 8B slots: one allocation as each is reached. */
  long total = 0;
  for (int k = 0; k < 4; k++) {
    for (long i = 0; i < (B << k); i++, total++) {
      uintptr_t x;
      alloc_item(&h, &x, total);
      cr_assert_eq((long)(x & 0xffffffffu) - 1, total, "slot %ld came out of order", total);
    }
    cr_assert_eq(weft_test_alloc_calls(), k + 1, "%ld slots took %ld allocations", total,
                 weft_test_alloc_calls());
  }
  uintptr_t x;
  alloc_item(&h, &x, total);
  cr_assert_eq(weft_test_alloc_calls(), 5);
  weft_handles_destroy(&h, NULL);
}

static _Atomic long finis;

static void count_fini(weft_slot *s)
{
  item *it = (item *)s;
  atomic_fetch_add(&finis, 1);
  atomic_store(&it->payload, -1 - atomic_load(&it->payload)); /* seen once */
}

Test(handles, destroy_finalises_every_initialised_slot_once, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  weft_handles h;
  table(&h);
  long n = B + B / 2; /* the first chunk and half a batch of the second */
  for (long i = 0; i < n; i++) {
    uintptr_t x;
    alloc_item(&h, &x, i + 1);
  }
  weft_handles_destroy(&h, count_fini);
  /* The slots handed out and the rest of their batch (zeroed). */
  cr_assert_eq(atomic_load(&finis), 2 * B, "fini ran %ld times over %ld initialised slots",
               atomic_load(&finis), 2 * B);
}

/* ----------------------------------------------------- stale and forged */

Test(handles, stale_handles_read_dead_across_growth_and_slot_reuse, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_handles h;
  table(&h);
  /* Five chunks and a part of the sixth. */
  long n = B * 31 + 100;
  uintptr_t *hd = malloc(sizeof *hd * (size_t)n);
  item **it = malloc(sizeof *it * (size_t)n);
  cr_assert(hd && it);
  for (long i = 0; i < n; i++)
    it[i] = alloc_item(&h, &hd[i], i);
  /* First chunk, either side of every chunk boundary, the newest. */
  long probe[] = {0, B - 1, B, 3 * B - 1, 3 * B, 7 * B - 1, 7 * B, 15 * B, 31 * B, n - 1};
  for (size_t p = 0; p < sizeof probe / sizeof probe[0]; p++)
    assert_resolves(&h, hd[probe[p]], it[probe[p]], probe[p]);

  /* Kill a slot of the first chunk and one of the newest; the next two
   * allocations reuse them (the free list is LIFO) under new generations. */
  kill_and_free(&h, hd[1]);
  kill_and_free(&h, hd[n - 1]);
  cr_assert_null(weft_handles_get(&h, hd[1]), "a killed handle still resolves");
  cr_assert_null(weft_handles_get(&h, hd[n - 1]), "a killed handle still resolves");
  cr_assert_not(weft_slot_kill(&it[1]->slot, weft_handle_gen(hd[1])), "killed twice");
  uintptr_t r1, r2;
  item *s1 = alloc_item(&h, &r1, 1000001);
  item *s2 = alloc_item(&h, &r2, 1000002);
  cr_assert_eq(s1, it[n - 1], "the freed slot of the newest chunk was not reused first");
  cr_assert_eq(s2, it[1], "the freed slot of the first chunk was not reused");
  cr_assert_neq(r1, hd[n - 1], "a reused slot kept its handle");
  cr_assert_neq(r2, hd[1], "a reused slot kept its handle");
  cr_assert_null(weft_handles_get(&h, hd[1]), "the stale handle resolves to the slot's new life");
  cr_assert_null(weft_handles_get(&h, hd[n - 1]),
                 "the stale handle resolves to the slot's new life");
  assert_resolves(&h, r1, it[n - 1], 1000001);
  assert_resolves(&h, r2, it[1], 1000002);

  /* Grow on into two more chunks: nothing moves, the stale ones stay dead. */
  long more = B * 64;
  for (long i = 0; i < more; i++) {
    uintptr_t x;
    item *y = alloc_item(&h, &x, n + i);
    if (i == more - 1)
      assert_resolves(&h, x, y, n + i);
  }
  cr_assert_null(weft_handles_get(&h, hd[1]));
  cr_assert_null(weft_handles_get(&h, hd[n - 1]));
  assert_resolves(&h, r1, it[n - 1], 1000001);
  assert_resolves(&h, r2, it[1], 1000002);
  for (size_t p = 0; p < sizeof probe / sizeof probe[0] - 1; p++) /* all but the killed last */
    assert_resolves(&h, hd[probe[p]], it[probe[p]], probe[p]);
  free(hd);
  free(it);
  weft_handles_destroy(&h, NULL);
}

static uintptr_t forge(uint64_t index, uint32_t gen)
{
  return (uintptr_t)(((uint64_t)gen << 32) | (index + 1));
}

Test(handles, forged_handles_resolve_to_nothing, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_handles h;
  table(&h);
  uintptr_t none[] = {0, forge(0, 1), forge(0, 0), (uintptr_t)0xffffffffu,
                      (uintptr_t)UINT64_MAX, forge(5000, 1)};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    cr_assert_null(weft_handles_get(&h, none[i]), "an empty table resolved %#lx",
                   (unsigned long)none[i]);
  uintptr_t x;
  item *it = alloc_item(&h, &x, 7);
  cr_assert_eq(x, forge(0, 1), "the first handle is index 0, generation 1");
  assert_resolves(&h, x, it, 7);
  uintptr_t bad[] = {
      0,
      forge(0, 0),                      /* the right index, an even generation */
      forge(0, 3),                      /* a generation not yet reached */
      forge(1, 1),                      /* initialised, never handed out */
      forge((uint64_t)B, 1),            /* the next chunk, not yet allocated */
      forge(WEFT_HANDLE_MAX_SLOTS - 1, 1), /* the highest index */
      (uintptr_t)0xffffffffu,           /* the same index, generation 0 */
      (uintptr_t)UINT64_MAX,            /* ... generation 2^32 - 1 */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_null(weft_handles_get(&h, bad[i]), "forged handle %#lx resolved",
                   (unsigned long)bad[i]);
  weft_handles_destroy(&h, NULL);
}

/* ------------------------------------------------------- the race */

/* A writer allocates through many chunks and publishes each handle; readers
 * resolve the published ones (each must be its slot, with its payload) and
 * forged ones around the growing edge (each must be nothing or a live slot
 * of that index). Under ThreadSanitizer this checks that a lookup never
 * reads a slot or a chunk pointer before the table published it. */
typedef struct race {
  weft_handles h;
  long n;
  _Atomic uintptr_t *pub; /* [n]: 0 until published; release / acquire */
  _Atomic long published; /* how many, in order; release / acquire */
  _Atomic int stop;
} race;

static void *race_reader(void *arg)
{
  race *r = arg;
  uint64_t seed = (uint64_t)(uintptr_t)&seed | 1;
  long checks = 0;
  while (!atomic_load(&r->stop)) {
    long np = atomic_load_explicit(&r->published, memory_order_acquire);
    if (np > 0) {
      long i = (long)(tu_rand(&seed) % (uint64_t)np);
      uintptr_t x = atomic_load_explicit(&r->pub[i], memory_order_acquire);
      item *it = (item *)weft_handles_get(&r->h, x);
      TU_CHECK(it != NULL, "published handle %ld does not resolve", i);
      if (it) {
        TU_CHECK(it->slot.index == (uint32_t)i, "handle %ld resolved to slot %u", i,
                 it->slot.index);
        TU_CHECK(atomic_load_explicit(&it->payload, memory_order_relaxed) == i,
                 "handle %ld: payload %ld", i,
                 atomic_load_explicit(&it->payload, memory_order_relaxed));
      }
    }
    /* Forged: an index at or past the edge, generation 1. */
    uint64_t j = (uint64_t)np + tu_rand(&seed) % (2 * (uint64_t)B);
    item *f = (item *)weft_handles_get(&r->h, forge(j, 1));
    TU_CHECK(!f || f->slot.index == (uint32_t)j, "forged index %lu resolved to slot %u",
             (unsigned long)j, f ? f->slot.index : 0u);
    checks++;
  }
  TU_CHECK(checks > 0, "a reader checked nothing");
  return NULL;
}

Test(handles, lookups_racing_growth_see_only_published_slots, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  race *r = calloc(1, sizeof *r);
  cr_assert_not_null(r);
  table(&r->h);
  /* At least 9 chunks (511 B slots) in every build. */
  r->n = tu_scaled(1024 * B, 512 * B);
  r->pub = calloc((size_t)r->n, sizeof *r->pub);
  cr_assert_not_null(r->pub);
  pthread_t rd[2];
  for (int k = 0; k < 2; k++)
    cr_assert_eq(pthread_create(&rd[k], NULL, race_reader, r), 0);
  for (long i = 0; i < r->n; i++) {
    uintptr_t x;
    weft_slot *s = NULL;
    int rc = weft_handles_alloc(&r->h, &s, &x);
    if (rc)
      cr_assert_fail("alloc %ld = %d (%s)", i, rc, weft_strerror(rc));
    atomic_store_explicit(&((item *)s)->payload, i, memory_order_relaxed);
    /* release (both): the payload before the handle, the handle before
     * the count; pair with the readers' acquires. */
    atomic_store_explicit(&r->pub[i], x, memory_order_release);
    atomic_store_explicit(&r->published, i + 1, memory_order_release);
  }
  atomic_store(&r->stop, 1);
  for (int k = 0; k < 2; k++)
    te_join(rd[k]);
  tu_assert_no_errors();
  weft_handles_destroy(&r->h, NULL);
  free(r->pub);
  free(r);
}

/* ------------------------------------------------------------ the limit */

Test(handles, the_limit_returns_elimit_and_a_freed_slot_is_used_again, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  /* The limit inside the second chunk: that chunk is cut short. */
  long limit = B + B / 2 + 7;
  weft_test_handle_limit((uint32_t)limit);
  weft_handles h;
  table(&h);
  weft_test_handle_limit(0); /* the table keeps the limit it was made with */
  uintptr_t *hd = malloc(sizeof *hd * (size_t)limit);
  cr_assert_not_null(hd);
  for (long i = 0; i < limit; i++)
    alloc_item(&h, &hd[i], i);
  weft_slot *s = NULL;
  uintptr_t x = 0;
  cr_assert_eq(weft_handles_alloc(&h, &s, &x), WEFT_ELIMIT, "slot %ld past a limit of %ld",
               limit + 1, limit);
  cr_assert_eq(weft_handles_alloc(&h, &s, &x), WEFT_ELIMIT, "the limit holds on a retry");
  cr_assert_null(weft_handles_get(&h, forge((uint64_t)limit, 1)));
  item *last = (item *)weft_handles_get(&h, hd[limit - 1]);
  cr_assert_not_null(last, "the last slot below the limit does not resolve");
  /* A freed slot is used again; then the limit holds again. */
  kill_and_free(&h, hd[limit - 1]);
  uintptr_t again;
  item *it = alloc_item(&h, &again, 42);
  cr_assert_eq(it, last);
  cr_assert_null(weft_handles_get(&h, hd[limit - 1]));
  assert_resolves(&h, again, it, 42);
  cr_assert_eq(weft_handles_alloc(&h, &s, &x), WEFT_ELIMIT);
  free(hd);
  weft_handles_destroy(&h, NULL);

  /* A limit of one slot, and the default restored for the next table. */
  weft_test_handle_limit(1);
  table(&h);
  alloc_item(&h, &x, 1);
  cr_assert_eq(weft_handles_alloc(&h, &s, &x), WEFT_ELIMIT);
  weft_handles_destroy(&h, NULL);
  weft_test_handle_limit(0);
  table(&h);
  cr_assert_eq(h.limit, WEFT_HANDLE_MAX_SLOTS);
  weft_handles_destroy(&h, NULL);
}

Test(handles, a_failed_chunk_allocation_changes_nothing, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  weft_handles h;
  table(&h);
  weft_slot *s = NULL;
  uintptr_t x = 0;
  weft_test_fail_alloc_at(1);
  cr_assert_eq(weft_handles_alloc(&h, &s, &x), WEFT_ENOMEM);
  weft_test_fail_alloc_at(0);
  cr_assert_null(weft_handles_get(&h, forge(0, 1)), "a slot of the failed chunk resolves");
  item *it = alloc_item(&h, &x, 3);
  cr_assert_eq(x, forge(0, 1), "the retry did not start at slot 0");
  assert_resolves(&h, x, it, 3);
  weft_handles_destroy(&h, NULL);
}

/* ------------------------------------------------ the engine at the limit */

#define ENGINE_LIMIT 2500L

Test(handles, var_new_at_the_limit_returns_elimit_with_a_message, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_test_handle_limit((uint32_t)ENGINE_LIMIT);
  te t = te_new("threaded", 2, -1);
  weft_var *v[ENGINE_LIMIT];
  for (long i = 0; i < ENGINE_LIMIT; i++)
    v[i] = te_var(t.eng);
  tu_logbuf lb = TU_LOGBUF_INIT;
  weft_set_log_callback(tu_log_cb, &lb);
  weft_var *extra = (weft_var *)(uintptr_t)1;
  int rc = weft_var_new(t.eng, &extra);
  weft_set_log_callback(NULL, NULL);
  cr_assert_eq(rc, WEFT_ELIMIT, "var %ld past a limit of %ld: %d (%s)", ENGINE_LIMIT + 1,
               ENGINE_LIMIT, rc, weft_strerror(rc));
  cr_assert_null(extra, "a refused var_new left a handle");
  cr_assert(strstr(lb.text, "weft_var_new") && strstr(lb.text, "2500"),
            "the message names the call and the limit: %s", lb.text);
  /* The engine still works; a deleted var's slot is free once its deletion
   * ran. */
  atomic_int ran = 0;
  cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_NONE, TE_V(v[ENGINE_LIMIT - 1]), 0), 0);
  cr_assert_eq(weft_var_delete(t.eng, v[0]), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 1);
  weft_var *again = te_var(t.eng);
  cr_assert_eq(te_push(t.eng, te_count_fn, &ran, TE_NONE, TE_V(again), 0), 0);
  cr_assert_eq(weft_var_wait(t.eng, again), 0);
  cr_assert_eq(atomic_load(&ran), 2);
  weft_set_log_callback(tu_log_cb, &lb);
  rc = weft_var_new(t.eng, &extra);
  weft_set_log_callback(NULL, NULL);
  cr_assert_eq(rc, WEFT_ELIMIT, "the limit, again after a deletion and a new var");
  cr_assert_eq(te_free(&t), 0);
}

Test(handles, op_new_at_the_limit_returns_elimit_with_a_message, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  weft_test_handle_limit((uint32_t)ENGINE_LIMIT);
  te t = te_new("threaded", 2, -1);
  weft_var *var = te_var(t.eng);
  atomic_int ran = 0;
  weft_op_desc d = te_desc(te_count_fn, &ran);
  d.writes = &var;
  d.num_writes = 1;
  weft_op *op[ENGINE_LIMIT];
  for (long i = 0; i < ENGINE_LIMIT; i++) {
    int rc = weft_op_new(t.eng, &d, &op[i]);
    if (rc)
      cr_assert_fail("weft_op_new %ld = %d (%s)", i + 1, rc, weft_strerror(rc));
  }
  tu_logbuf lb = TU_LOGBUF_INIT;
  weft_set_log_callback(tu_log_cb, &lb);
  weft_op *extra = (weft_op *)(uintptr_t)1;
  int rc = weft_op_new(t.eng, &d, &extra);
  weft_set_log_callback(NULL, NULL);
  cr_assert_eq(rc, WEFT_ELIMIT, "operator %ld past a limit of %ld: %d (%s)", ENGINE_LIMIT + 1,
               ENGINE_LIMIT, rc, weft_strerror(rc));
  cr_assert_null(extra, "a refused op_new left a handle");
  cr_assert(strstr(lb.text, "weft_op_new") && strstr(lb.text, "2500"),
            "the message names the call and the limit: %s", lb.text);
  cr_assert_eq(weft_op_push(t.eng, op[ENGINE_LIMIT - 1]), 0);
  cr_assert_eq(weft_op_delete(t.eng, op[0]), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 1);
  weft_op *again = NULL;
  cr_assert_eq(weft_op_new(t.eng, &d, &again), 0, "a deleted operator's slot was not freed");
  cr_assert_eq(weft_op_push(t.eng, again), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 2);
  for (long i = 1; i < ENGINE_LIMIT; i++)
    cr_assert_eq(weft_op_delete(t.eng, op[i]), 0);
  cr_assert_eq(weft_op_delete(t.eng, again), 0);
  cr_assert_eq(weft_var_delete(t.eng, var), 0);
  cr_assert_eq(te_free(&t), 0);
}

/* An async operator that keeps its token until the test signals it. */
typedef struct holder {
  _Atomic(weft_done *) done;
  atomic_int started;
} holder;

static void hold_fn(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  holder *h = arg;
  atomic_store(&h->done, done);
  atomic_store(&h->started, 1);
}

Test(handles, an_async_operator_past_the_token_limit_fails_with_elimit, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, -1);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng), *c = te_var(t.eng);
  /* The token table is the process's, made at its first async operator:
   * this test's process has run none before. */
  weft_test_handle_limit(2);
  holder ha = {NULL, 0}, hb = {NULL, 0}, hc = {NULL, 0};
  weft_op_desc d = te_adesc(hold_fn, &ha);
  d.writes = &a;
  d.num_writes = 1;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  d.arg = &hb;
  d.writes = &b;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&ha.started) && atomic_load(&hb.started), TU_DEADLINE_S),
            "the two async operators did not start");
  tu_logbuf lb = TU_LOGBUF_INIT;
  weft_set_log_callback(tu_log_cb, &lb);
  d.arg = &hc;
  d.writes = &c;
  d.name = "third_async";
  cr_assert_eq(weft_push(t.eng, &d), 0);
  int rc = weft_var_wait(t.eng, c);
  weft_set_log_callback(NULL, NULL);
  cr_assert_eq(rc, WEFT_ELIMIT, "the third async operator's var: %d (%s)", rc,
               weft_strerror(rc));
  cr_assert_eq(atomic_load(&hc.started), 0, "an operator without a token ran");
  cr_assert(strstr(lb.text, "third_async") && strstr(lb.text, "2 async operators"),
            "the message names the operator and the limit: %s", lb.text);
  /* Their signals free the tokens: the next async operator runs. */
  weft_done_signal(atomic_load(&ha.done), 0);
  weft_done_signal(atomic_load(&hb.done), 0);
  cr_assert_eq(weft_var_wait(t.eng, a), 0);
  cr_assert_eq(weft_var_wait(t.eng, b), 0);
  holder hd = {NULL, 0};
  d.arg = &hd;
  d.name = NULL;
  cr_assert_eq(weft_push(t.eng, &d), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&hd.started), TU_DEADLINE_S));
  weft_done_signal(atomic_load(&hd.done), 0);
  cr_assert_eq(weft_var_wait(t.eng, c), 0);
  rc = weft_wait_all(t.eng);
  cr_assert_eq(rc, WEFT_ELIMIT, "weft_wait_all: %d (%s), not the third operator's failure", rc,
               weft_strerror(rc));
  cr_assert_eq(te_free(&t), 0);
}
