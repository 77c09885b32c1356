/*
 * Operators whose argument is stored with them (weft_push_arg,
 * weft_op_new_arg): fn gets its own copy of the bytes, aligned as weft.h
 * says; the drop runs exactly once, after the last use (an operator that
 * ran, one skipped after a failure, an async one after both its signal and
 * its return, a reusable one after its deletion and last push, a recorded
 * one at its graph's destroy or with a lost capture); bad input is
 * WEFT_EINVAL and drops nothing. Every case on the threaded engine and on
 * the naive one (the reference). Public API only.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

/* What the drops saw: each copy dropped once (drops), and the sum of the
 * tags of the copies dropped. */
static atomic_long drops, drop_tags, runs, run_tags;

static void reset_counts(void)
{
  atomic_store(&drops, 0);
  atomic_store(&drop_tags, 0);
  atomic_store(&runs, 0);
  atomic_store(&run_tags, 0);
}

/* An argument of `size` bytes: a tag, then a pattern derived from it. */
enum { MAXARG = 256 };
typedef struct arg_bytes {
  long tag;
  long size;
  unsigned char pattern[MAXARG - 2 * sizeof(long)];
} arg_bytes;

static arg_bytes make_arg(long tag, size_t size)
{
  arg_bytes a;
  memset(&a, 0, sizeof a);
  a.tag = tag;
  a.size = (long)size;
  for (size_t i = 0; i + 2 * sizeof(long) < size; i++)
    a.pattern[i] = (unsigned char)(tag * 31 + (long)i);
  return a;
}

/* Whether the copy at p holds what make_arg(tag, size) made. */
static bool arg_intact(const void *p)
{
  const arg_bytes *a = p;
  for (long i = 0; i + 2 * (long)sizeof(long) < a->size; i++)
    if (a->pattern[i] != (unsigned char)(a->tag * 31 + i))
      return false;
  return true;
}

static void count_drop(void *p)
{
  TU_CHECK(p != NULL, "drop of a non-empty argument got NULL");
  if (!p)
    return;
  TU_CHECK(arg_intact(p), "dropped copy of tag %ld corrupted", ((arg_bytes *)p)->tag);
  atomic_fetch_add(&drops, 1);
  atomic_fetch_add(&drop_tags, ((arg_bytes *)p)->tag);
}

static int arg_fn(const weft_run_ctx *rc, void *p)
{
  (void)rc;
  TU_CHECK((uintptr_t)p % WEFT_ARG_ALIGN == 0, "argument at %p", p);
  TU_CHECK(arg_intact(p), "copy of tag %ld corrupted at its run", ((arg_bytes *)p)->tag);
  /* Not dropped yet: the drop comes after the last use. */
  atomic_fetch_add(&runs, 1);
  atomic_fetch_add(&run_tags, ((arg_bytes *)p)->tag);
  return ((arg_bytes *)p)->tag < 0 ? (int)((arg_bytes *)p)->tag : 0;
}

static int push_a(weft_engine *e, long tag, size_t size, weft_var *const *r, size_t nr,
                  weft_var *const *w, size_t nw, unsigned flags)
{
  weft_op_desc d = te_desc(arg_fn, NULL);
  d.reads = r;
  d.num_reads = nr;
  d.writes = w;
  d.num_writes = nw;
  d.flags = flags;
  arg_bytes a = make_arg(tag, size);
  int rc = weft_push_arg(e, &d, &a, size, count_drop);
  memset(&a, 0xee, sizeof a); /* the caller's bytes may be reused at once */
  return rc;
}

/* Sizes on both sides of the inline room, and the largest. */
static const size_t sizes[] = {2 * sizeof(long), WEFT_OP_ARG_INLINE, WEFT_OP_ARG_INLINE + 1,
                               MAXARG};

/* Returns the drops seen, over every size. */
static long each_copy_runs_and_drops_once(const char *kind, int threads)
{
  long total = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    reset_counts();
    te t = te_new(kind, threads, 0);
    weft_var *v[4];
    for (int i = 0; i < 4; i++)
      v[i] = te_var(t.eng);
    long n = tu_scaled(4000, 400), want = 0;
    for (long i = 1; i <= n; i++) {
      weft_var *a = v[i % 4], *b = v[(i / 4) % 4];
      cr_assert_eq(push_a(t.eng, i, sizes[s], TE_V(a), TE_V(b), 0), 0);
      want += i;
    }
    cr_assert_eq(weft_wait_all(t.eng), 0);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
    cr_assert_eq(atomic_load(&runs), n, "%s, %zu bytes: %ld runs of %ld", kind, sizes[s],
                 atomic_load(&runs), n);
    cr_assert_eq(atomic_load(&drops), n, "%s, %zu bytes: %ld drops of %ld", kind, sizes[s],
                 atomic_load(&drops), n);
    cr_assert_eq(atomic_load(&drop_tags), want, "%s, %zu bytes: each copy dropped once", kind,
                 sizes[s]);
    cr_assert_eq(atomic_load(&run_tags), want);
    total += atomic_load(&drops);
  }
  return total;
}

Test(engine_arg, threaded_each_copy_runs_and_drops_once, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long drops_seen = each_copy_runs_and_drops_once("threaded", 2);
  cr_assert_eq(drops_seen, (long)(sizeof sizes / sizeof *sizes) * tu_scaled(4000, 400), "one drop per push, every size");
}

Test(engine_arg, naive_each_copy_runs_and_drops_once, .init = setup, .timeout = TU_TIMEOUT(60))
{
  long drops_seen = each_copy_runs_and_drops_once("naive", 1);
  cr_assert_eq(drops_seen, (long)(sizeof sizes / sizeof *sizes) * tu_scaled(4000, 400), "one drop per push, every size");
}

/* A failed writer skips its readers: their copies are dropped unrun. */
/* Returns the drops seen, over every size. */
static long skipped_operators_drop(const char *kind)
{
  long total = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    reset_counts();
    te t = te_new(kind, 2, 0);
    weft_var *x = te_var(t.eng), *y = te_var(t.eng);
    cr_assert_eq(push_a(t.eng, -5, sizes[s], TE_NONE, TE_V(x), 0), 0); /* fails with -5 */
    for (long i = 1; i <= 10; i++)
      cr_assert_eq(push_a(t.eng, 100 * i, sizes[s], TE_V(x), TE_V(y), 0), 0); /* skipped */
    cr_assert_eq(push_a(t.eng, 1, sizes[s], TE_V(x), TE_NONE, WEFT_OP_NOSKIP), 0); /* runs */
    cr_assert_eq(weft_wait_all(t.eng), -5);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
    cr_assert_eq(atomic_load(&runs), 2, "%s, %zu bytes: the failing op and the NOSKIP one ran",
                 kind, sizes[s]);
    cr_assert_eq(atomic_load(&drops), 12, "%s, %zu bytes: %ld drops of 12", kind, sizes[s],
                 atomic_load(&drops));
    cr_assert_eq(atomic_load(&drop_tags), -5 + 100 * 55 + 1);
    total += atomic_load(&drops);
  }
  return total;
}

Test(engine_arg, threaded_skipped_operators_drop, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(skipped_operators_drop("threaded"), 12 * (long)(sizeof sizes / sizeof *sizes), "12 drops a size, run or skipped");
}

Test(engine_arg, naive_skipped_operators_drop, .init = setup, .timeout = TU_TIMEOUT(60))
{
  cr_assert_eq(skipped_operators_drop("naive"), 12 * (long)(sizeof sizes / sizeof *sizes), "12 drops a size, run or skipped");
}

/* An async operator: the drop waits for both its signal and its return. */
typedef struct async_arg {
  long tag;
  long size;
  atomic_int *returned;
  atomic_int *dropped_early;
} async_arg;

static atomic_int async_drops;

static void async_drop(void *p)
{
  async_arg *a = p;
  if (!atomic_load(a->returned))
    atomic_store(a->dropped_early, 1);
  atomic_fetch_add(&async_drops, 1);
}

typedef struct signal_job {
  weft_done *done;
  atomic_int go;
} signal_job;

static void *signaller(void *arg)
{
  signal_job *j = arg;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&j->go), TU_DEADLINE_S), "never told to signal");
  weft_done_signal(j->done, 0);
  return NULL;
}

static signal_job job;
static pthread_t job_thread;

static void async_fn(const weft_run_ctx *rc, void *p, weft_done *done)
{
  (void)rc;
  async_arg *a = p;
  job.done = done;
  atomic_store(&job.go, 0);
  TU_CHECK(pthread_create(&job_thread, NULL, signaller, &job) == 0, "thread");
  atomic_store(&job.go, 1); /* the signal may come before this returns */
  usleep(2000);
  TU_CHECK(atomic_load(&async_drops) == 0, "dropped while async_fn still runs");
  atomic_store(a->returned, 1);
}

Test(engine_arg, async_operators_drop_after_signal_and_return, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    te t = te_new(kinds[k], 2, 0);
    weft_var *x = te_var(t.eng);
    atomic_int returned = 0, early = 0;
    atomic_store(&async_drops, 0);
    async_arg a = {1, sizeof(async_arg), &returned, &early};
    weft_op_desc d = te_adesc(async_fn, NULL);
    d.writes = (weft_var *const[]){x};
    d.num_writes = 1;
    cr_assert_eq(weft_push_arg(t.eng, &d, &a, sizeof a, async_drop), 0);
    cr_assert_eq(weft_var_wait(t.eng, x), 0);
    pthread_join(job_thread, NULL);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
    cr_assert_eq(atomic_load(&async_drops), 1, "%s: %d drops", kinds[k],
                 atomic_load(&async_drops));
    cr_assert_eq(atomic_load(&early), 0, "%s: dropped before async_fn returned", kinds[k]);
  }
}

Test(engine_arg, reusable_operators_drop_after_delete_and_last_push, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      reset_counts();
      te t = te_new(kinds[k], 2, 0);
      weft_var *x = te_var(t.eng);
      weft_op_desc d = te_desc(arg_fn, NULL);
      d.writes = (weft_var *const[]){x};
      d.num_writes = 1;
      arg_bytes a = make_arg(9, sizes[s]);
      weft_op *op = NULL;
      cr_assert_eq(weft_op_new_arg(t.eng, &d, &a, sizes[s], count_drop, &op), 0);
      memset(&a, 0xee, sizeof a);
      for (int i = 0; i < 50; i++)
        cr_assert_eq(weft_op_push(t.eng, op), 0);
      cr_assert_eq(weft_op_delete(t.eng, op), 0);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      tu_assert_no_errors();
      cr_assert_eq(atomic_load(&runs), 50);
      cr_assert_eq(atomic_load(&drops), 1, "%s, %zu bytes: dropped once after its last push",
                   kinds[k], sizes[s]);
      /* One still live at the engine's destroy is dropped there. */
      a = make_arg(10, sizes[s]);
      cr_assert_eq(weft_op_new_arg(t.eng, &d, &a, sizes[s], count_drop, &op), 0);
      cr_assert_eq(weft_op_push(t.eng, op), 0);
      cr_assert_eq(te_free(&t), 0);
      tu_assert_no_errors();
      cr_assert_eq(atomic_load(&runs), 51);
      cr_assert_eq(atomic_load(&drops), 2, "%s, %zu bytes: a live one dropped at destroy",
                   kinds[k], sizes[s]);
      cr_assert_eq(atomic_load(&drop_tags), 19);
    }
  }
}

/* size 0: fn and the drop get NULL. */
static atomic_int null_runs, null_drops;

static int null_fn(const weft_run_ctx *rc, void *p)
{
  (void)rc;
  if (!p)
    atomic_fetch_add(&null_runs, 1);
  return 0;
}

static void null_drop(void *p)
{
  if (!p)
    atomic_fetch_add(&null_drops, 1);
}

Test(engine_arg, size_zero_passes_null, .init = setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    atomic_store(&null_runs, 0);
    atomic_store(&null_drops, 0);
    te t = te_new(kinds[k], 2, 0);
    weft_var *x = te_var(t.eng);
    weft_op_desc d = te_desc(null_fn, NULL);
    d.writes = (weft_var *const[]){x};
    d.num_writes = 1;
    long junk = 5;
    cr_assert_eq(weft_push_arg(t.eng, &d, NULL, 0, null_drop), 0);
    cr_assert_eq(weft_push_arg(t.eng, &d, &junk, 0, null_drop), 0); /* data ignored */
    weft_op *op = NULL;
    cr_assert_eq(weft_op_new_arg(t.eng, &d, NULL, 0, null_drop, &op), 0);
    cr_assert_eq(weft_op_push(t.eng, op), 0);
    cr_assert_eq(weft_op_delete(t.eng, op), 0);
    cr_assert_eq(te_free(&t), 0);
    cr_assert_eq(atomic_load(&null_runs), 3, "%s", kinds[k]);
    cr_assert_eq(atomic_load(&null_drops), 3, "%s", kinds[k]);
  }
}

Test(engine_arg, bad_input_drops_nothing, .init = setup, .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    reset_counts();
    te t = te_new(kinds[k], 2, 0);
    weft_var *x = te_var(t.eng), *dead = te_var(t.eng);
    cr_assert_eq(weft_var_delete(t.eng, dead), 0);
    arg_bytes a = make_arg(3, 32);
    weft_op_desc d = te_desc(arg_fn, NULL);
    d.writes = (weft_var *const[]){x};
    d.num_writes = 1;
    cr_assert_eq(weft_push_arg(NULL, &d, &a, 32, count_drop), WEFT_EINVAL);
    cr_assert_eq(weft_push_arg(t.eng, NULL, &a, 32, count_drop), WEFT_EINVAL);
    cr_assert_eq(weft_push_arg(t.eng, &d, NULL, 32, count_drop), WEFT_EINVAL);
    weft_op_desc with_arg = d;
    with_arg.arg = &a; /* desc->arg must be NULL */
    cr_assert_eq(weft_push_arg(t.eng, &with_arg, &a, 32, count_drop), WEFT_EINVAL);
    weft_op_desc both = d;
    both.async_fn = async_fn; /* a bad descriptor, as for weft_push */
    cr_assert_eq(weft_push_arg(t.eng, &both, &a, 32, count_drop), WEFT_EINVAL);
    weft_op_desc on_dead = d;
    on_dead.writes = (weft_var *const[]){dead};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
      cr_assert_eq(weft_push_arg(t.eng, &on_dead, &a, sizes[s], count_drop), WEFT_EINVAL);
    weft_op *op = (weft_op *)&a;
    cr_assert_eq(weft_op_new_arg(t.eng, &with_arg, &a, 32, count_drop, &op), WEFT_EINVAL);
    cr_assert_null(op, "*out is NULL on an error");
    cr_assert_eq(weft_op_new_arg(t.eng, &d, NULL, 32, count_drop, &op), WEFT_EINVAL);
    cr_assert_eq(weft_op_new_arg(t.eng, &on_dead, &a, 32, count_drop, &op), WEFT_EINVAL);
    cr_assert_eq(weft_op_new_arg(t.eng, &d, &a, 32, count_drop, NULL), WEFT_EINVAL);
    cr_assert_eq(weft_op_new_arg(NULL, &d, &a, 32, count_drop, &op), WEFT_EINVAL);
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
    cr_assert_eq(atomic_load(&runs), 0, "%s", kinds[k]);
    cr_assert_eq(atomic_load(&drops), 0, "%s: an error drops nothing", kinds[k]);
  }
}

/* ------------------------------------------------------------ graphs */

Test(engine_arg, recorded_pushes_keep_their_copy_until_graph_destroy, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      reset_counts();
      te t = te_new(kinds[k], 2, 0);
      weft_var *x = te_var(t.eng), *y = te_var(t.eng);
      weft_op_desc d = te_desc(arg_fn, NULL);
      d.writes = (weft_var *const[]){x};
      d.num_writes = 1;
      arg_bytes a = make_arg(20, sizes[s]);
      weft_op *op = NULL;
      cr_assert_eq(weft_op_new_arg(t.eng, &d, &a, sizes[s], count_drop, &op), 0);
      cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
      cr_assert_eq(push_a(t.eng, 1, sizes[s], TE_V(x), TE_V(y), 0), 0);
      cr_assert_eq(push_a(t.eng, 2, sizes[s], TE_V(y), TE_V(x), 0), 0);
      cr_assert_eq(weft_op_push(t.eng, op), 0);
      weft_graph *g = NULL;
      cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
      cr_assert_eq(atomic_load(&runs), 0, "recorded, not run");
      /* The reusable operator goes; the graph keeps its argument. */
      cr_assert_eq(weft_op_delete(t.eng, op), 0);
      cr_assert_eq(weft_wait_all(t.eng), 0);
      cr_assert_eq(atomic_load(&drops), 0, "%s, %zu bytes: the graph still holds them",
                   kinds[k], sizes[s]);
      int launches = 5;
      for (int i = 0; i < launches; i++) {
        cr_assert_eq(weft_graph_launch(g), 0);
        cr_assert_eq(weft_wait_all(t.eng), 0);
      }
      tu_assert_no_errors();
      cr_assert_eq(atomic_load(&runs), 3 * launches);
      cr_assert_eq(atomic_load(&run_tags), (1 + 2 + 20) * launches, "each launch's fn, its copy");
      cr_assert_eq(atomic_load(&drops), 0);
      cr_assert_eq(weft_graph_destroy(g), 0);
      tu_assert_no_errors();
      cr_assert_eq(atomic_load(&drops), 3, "%s, %zu bytes: %ld drops at the graph's destroy",
                   kinds[k], sizes[s], atomic_load(&drops));
      cr_assert_eq(atomic_load(&drop_tags), 23);
      cr_assert_eq(te_free(&t), 0);
    }
  }
}

Test(engine_arg, an_engine_destroyed_first_drops_its_graphs_arguments, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  reset_counts();
  te t = te_new("threaded", 2, 0);
  weft_var *x = te_var(t.eng);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_a(t.eng, 4, 32, TE_NONE, TE_V(x), 0), 0);
  cr_assert_eq(push_a(t.eng, 5, 200, TE_NONE, TE_V(x), 0), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&runs), 2);
  cr_assert_eq(atomic_load(&drops), 2, "the graph's operators went with the engine");
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(atomic_load(&drops), 2, "dropped once");
}

/* A capture its thread leaves open is lost: its arguments are dropped. */
static void *lose_capture(void *arg)
{
  weft_engine *e = arg;
  weft_var *x = NULL;
  TU_CHECK(weft_var_new(e, &x) == 0, "var");
  TU_CHECK(weft_graph_begin_capture(e) == 0, "begin");
  TU_CHECK(push_a(e, 6, 16, TE_NONE, TE_V(x), 0) == 0, "push");
  TU_CHECK(push_a(e, 7, 300 > MAXARG ? MAXARG : 300, TE_NONE, TE_V(x), 0) == 0, "push");
  return NULL;
}

Test(engine_arg, a_lost_capture_drops_its_arguments, .init = setup, .timeout = TU_TIMEOUT(60))
{
  reset_counts();
  te t = te_new("threaded", 2, 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, lose_capture, t.eng), 0);
  pthread_join(th, NULL);
  tu_assert_no_errors();
  cr_assert_eq(atomic_load(&drops), 2, "%ld drops at the capturing thread's exit",
               atomic_load(&drops));
  cr_assert_eq(atomic_load(&drop_tags), 13);
  cr_assert_eq(atomic_load(&runs), 0);
  cr_assert_eq(te_free(&t), 0);
}
