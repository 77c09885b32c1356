/* SPDX-License-Identifier: MIT */
/*
 * Engines with millions of live handles: a graph of a few million nodes
 * mapped one var to a node (a binary tree of depth 24 has 2^25 - 1; a
 * 2048 x 2048 grid 4,194,304) must not run into a fixed table size below
 * what memory and the handle encoding allow. Each test crosses 4,194,304
 * live handles, the capacity the handle tables once had (4096 chunks of
 * 1024 slots), in every build (the sanitizers' scale does not apply: the
 * point is the count); the per-handle memory is a var's 128 bytes (or a
 * reusable operator's): about 0.6 GB for the vars, 0.7 GB for the operators
 * (under ThreadSanitizer, whose shadow and sync state come on top, the vars'
 * test alone: 6.5 GB, half a minute). Public API only.
 */
#include "engine_util.h"

/* The old capacity, and how far past it the tests go. */
#define OLD_CAP (4096L * 1024L)
#define PAST_CAP (OLD_CAP + 1000L)

static void setup(void)
{
  te_setup();
}

/* Writes the value at arg into the cell it names: an operator whose effect
 * the test reads back. */
typedef struct stamp {
  long *cell;
  long value;
  atomic_int ran;
} stamp;

static int stamp_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  stamp *s = arg;
  *s->cell = s->value;
  atomic_fetch_add(&s->ran, 1);
  return 0;
}

/* Pushes a stamp writing var (and reading read, if not NULL). */
static void push_stamp(weft_engine *e, weft_var *read, weft_var *write, stamp *s)
{
  weft_op_desc d = te_desc(stamp_fn, s);
  d.reads = read ? &read : NULL;
  d.num_reads = read ? 1 : 0;
  d.writes = &write;
  d.num_writes = 1;
  int rc = weft_push(e, &d);
  cr_assert_eq(rc, 0, "weft_push = %d (%s)", rc, weft_strerror(rc));
}

Test(engine_many, vars_past_four_million_are_all_created_usable_and_deleted, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  te t = te_new("threaded", 2, -1);
  weft_var **v = malloc(sizeof *v * (size_t)PAST_CAP);
  cr_assert_not_null(v);
  for (long i = 0; i < PAST_CAP; i++) {
    v[i] = NULL;
    int rc = weft_var_new(t.eng, &v[i]);
    if (rc != 0 || !v[i])
      cr_assert_fail("weft_var_new of var %ld (%ld live) = %d (%s), var %p", i + 1, i, rc,
               weft_strerror(rc), (void *)v[i]);
  }
  /* Distinct handles: the first, one past the old capacity and the last
   * against their neighbours (a table that wrapped around would repeat the
   * early handles). */
  cr_assert_neq(v[0], v[OLD_CAP]);
  cr_assert_neq(v[0], v[PAST_CAP - 1]);
  cr_assert_neq(v[OLD_CAP - 1], v[OLD_CAP]);
  cr_assert_neq(v[PAST_CAP - 2], v[PAST_CAP - 1]);

  /* Operators on the first var, on the vars either side of the old
   * capacity and on the last, and one that orders the first chunk's var
   * with the newest's: each runs and its write is seen. */
  long cell[4] = {0, 0, 0, 0};
  stamp s[4] = {{&cell[0], 11, 0}, {&cell[1], 22, 0}, {&cell[2], 33, 0}, {&cell[3], 44, 0}};
  push_stamp(t.eng, NULL, v[0], &s[0]);
  push_stamp(t.eng, NULL, v[OLD_CAP - 1], &s[1]);
  push_stamp(t.eng, v[OLD_CAP - 1], v[OLD_CAP], &s[2]);
  push_stamp(t.eng, v[0], v[PAST_CAP - 1], &s[3]);
  long check[4] = {0, OLD_CAP - 1, OLD_CAP, PAST_CAP - 1};
  for (int k = 0; k < 4; k++) {
    int rc = weft_var_wait(t.eng, v[check[k]]);
    cr_assert_eq(rc, 0, "weft_var_wait(var %ld) = %d (%s)", check[k] + 1, rc, weft_strerror(rc));
    cr_assert_eq(atomic_load(&s[k].ran), 1, "the operator writing var %ld ran %d times",
                 check[k] + 1, atomic_load(&s[k].ran));
    cr_assert_eq(cell[k], s[k].value, "the operator writing var %ld left %ld", check[k] + 1,
                 cell[k]);
  }

  for (long i = 0; i < PAST_CAP; i++) {
    int rc = weft_var_delete(t.eng, v[i]);
    if (rc != 0)
      cr_assert_fail("weft_var_delete of var %ld = %d (%s)", i + 1, rc, weft_strerror(rc));
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  /* Dead, from the first chunk and the newest. */
  cr_assert_eq(weft_var_delete(t.eng, v[0]), WEFT_EINVAL);
  cr_assert_eq(weft_var_delete(t.eng, v[PAST_CAP - 1]), WEFT_EINVAL);
  /* ... and their slots are used again: one more var works. */
  weft_var *again = te_var(t.eng);
  cr_assert_neq(again, v[0], "a new var has the handle of a deleted one");
  cr_assert_neq(again, v[PAST_CAP - 1], "a new var has the handle of a deleted one");
  stamp s2 = {&cell[0], 55, 0};
  push_stamp(t.eng, NULL, again, &s2);
  cr_assert_eq(weft_var_wait(t.eng, again), 0);
  cr_assert_eq(cell[0], 55);
  cr_assert_eq(weft_var_delete(t.eng, again), 0);
  free(v);
  cr_assert_eq(te_free(&t), 0);
}

static int noop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_long *)arg, 1);
  return 0;
}

Test(engine_many, reusable_ops_past_four_million_are_all_created_pushable_and_deleted,
     .init = setup, .timeout = TU_TIMEOUT(120))
{
  /* The table's code is the vars' (the test above), which ThreadSanitizer
   * sees there; 4M operators more would take it another half minute. The
   * plain and ASan+UBSan builds run this. */
  const char *san = getenv("WEFT_TEST_SANITIZE");
  if (san && strstr(san, "thread"))
    cr_skip_test("the vars' test covers the handle table under ThreadSanitizer");
  te t = te_new("threaded", 2, -1);
  weft_var *var = te_var(t.eng);
  atomic_long ran = 0;
  weft_op_desc d = te_desc(noop_fn, &ran);
  d.writes = &var;
  d.num_writes = 1;
  weft_op **op = malloc(sizeof *op * (size_t)PAST_CAP);
  cr_assert_not_null(op);
  for (long i = 0; i < PAST_CAP; i++) {
    op[i] = NULL;
    int rc = weft_op_new(t.eng, &d, &op[i]);
    if (rc != 0 || !op[i])
      cr_assert_fail("weft_op_new of operator %ld (%ld live) = %d (%s), op %p", i + 1, i, rc,
               weft_strerror(rc), (void *)op[i]);
  }
  cr_assert_neq(op[0], op[PAST_CAP - 1]);
  cr_assert_neq(op[OLD_CAP - 1], op[OLD_CAP]);
  long check[3] = {0, OLD_CAP, PAST_CAP - 1};
  for (int k = 0; k < 3; k++) {
    int rc = weft_op_push(t.eng, op[check[k]]);
    cr_assert_eq(rc, 0, "weft_op_push(operator %ld) = %d (%s)", check[k] + 1, rc,
                 weft_strerror(rc));
  }
  cr_assert_eq(weft_var_wait(t.eng, var), 0);
  cr_assert_eq(atomic_load(&ran), 3, "3 pushes ran %ld times", atomic_load(&ran));
  for (long i = 0; i < PAST_CAP; i++) {
    int rc = weft_op_delete(t.eng, op[i]);
    if (rc != 0)
      cr_assert_fail("weft_op_delete of operator %ld = %d (%s)", i + 1, rc, weft_strerror(rc));
  }
  cr_assert_eq(weft_op_push(t.eng, op[0]), WEFT_EINVAL, "a deleted operator was pushed");
  cr_assert_eq(weft_op_push(t.eng, op[PAST_CAP - 1]), WEFT_EINVAL,
               "a deleted operator was pushed");
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 3);
  free(op);
  cr_assert_eq(weft_var_delete(t.eng, var), 0);
  cr_assert_eq(te_free(&t), 0);
}
