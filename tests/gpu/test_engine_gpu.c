/* SPDX-License-Identifier: MIT */
/*
 * GPU operators in the engine, on the host backend's emulated devices:
 * completion follows the stream, not fn's return; chains and device-side
 * waits across streams; copies on the copy workers; two devices at once;
 * the random-DAG differential with a third of its ops on GPU streams (with
 * jitter) against the naive engine; device errors and the watchdog; no
 * devices; bad input; an idle executor burns no CPU and starts no thread.
 */
#include <stdatomic.h>

#include "../deps/differential.h"
#include "gpu/gpu.h"
#include "gpu/host.h"
#include "host_engine.h"

/* ------------------------------------------ completion is the stream's */

typedef struct slow {
  atomic_int value;
  atomic_int seen; /* what the dependent CPU op read */
} slow;

static void slow_item(void *arg)
{
  slow *s = arg;
  tu_sleep_us(50000); /* long after fn returned */
  atomic_store(&s->value, 42);
}

static int slow_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, slow_item, arg);
}

static int read_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  slow *s = arg;
  atomic_store(&s->seen, atomic_load(&s->value));
  return 0;
}

Test(gpu_engine, completion_follows_the_stream, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  cr_assert_eq(weft_gpu_count(t.eng), 2);
  weft_var *v = te_var(t.eng), *u = te_var(t.eng);
  slow s;
  atomic_init(&s.value, 0);
  atomic_init(&s.seen, -1);
  cr_assert_eq(push_rw(t.eng, gpu_desc(slow_fn, &s, 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(read_fn, &s), v, u), 0); /* a CPU successor */
  cr_assert_eq(weft_var_wait(t.eng, u), 0);
  cr_assert_eq(atomic_load(&s.seen), 42, "the CPU successor ran before the stream's work");
  /* A var wait is released by the poller too. */
  atomic_store(&s.value, 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(slow_fn, &s, 1), NULL, v), 0);
  cr_assert_eq(weft_var_wait(t.eng, v), 0);
  cr_assert_eq(atomic_load(&s.value), 42, "weft_var_wait returned before the stream's work");
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------ a GPU op chain */

typedef struct chain {
  uint64_t x; /* touched only by stream items, in var order */
  void *streams[4];
  atomic_int nstreams;
} chain;

typedef struct chain_link {
  chain *c;
  uint64_t k;
} chain_link;

static void link_item(void *arg)
{
  chain_link *l = arg;
  l->c->x = l->c->x * 3 + l->k;
}

static int link_fn(const weft_run_ctx *rc, void *arg)
{
  chain_link *l = arg;
  chain *c = l->c;
  int n = atomic_load(&c->nstreams); /* fns of one var run one at a time */
  bool known = false;
  for (int i = 0; i < n; i++)
    known |= c->streams[i] == rc->stream;
  if (!known && n < 4) {
    c->streams[n] = rc->stream;
    atomic_store(&c->nstreams, n + 1);
  }
  return weft_gpu_host_enqueue(rc->stream, link_item, l);
}

Test(gpu_engine, chain_of_1000_ops_on_one_var, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_test_host_jitter(20);
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  enum { N = 1000 };
  static chain_link links[N];
  chain c = {.x = 1};
  atomic_init(&c.nstreams, 0);
  uint64_t want = 1;
  for (int i = 0; i < N; i++) {
    links[i] = (chain_link){&c, (uint64_t)i};
    want = want * 3 + (uint64_t)i;
    cr_assert_eq(push_rw(t.eng, gpu_desc(link_fn, &links[i], 0), NULL, v), 0);
  }
  cr_assert_eq(weft_var_wait(t.eng, v), 0);
  cr_assert_eq(c.x, want, "the chain ran out of order: %llu, expected %llu",
               (unsigned long long)c.x, (unsigned long long)want);
  cr_log_info("chain of %d GPU ops ran on %d stream(s)", N, atomic_load(&c.nstreams));
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------ a long chain of writers stays on the device */

/* 40 GPU writers of one var, the first one's device work held until every
 * other was launched: each waits on the device for its predecessor alone
 * (the newest write fence covers the older ones), so none goes to the host
 * however many are in flight (past WEFT_OPR_DEV_WAITS fences, they did). */
enum { WCHAIN = 40 };

typedef struct wchain {
  atomic_int launched; /* fns that ran */
  atomic_int next;     /* the work items in order */
  atomic_int bad;
} wchain;

typedef struct wlink {
  wchain *c;
  int index;
} wlink;

static void wlink_item(void *arg)
{
  wlink *l = arg;
  if (l->index == 0) /* held until every writer was launched */
    TU_CHECK(TU_WAIT_UNTIL(atomic_load(&l->c->launched) == WCHAIN, TU_DEADLINE_S),
             "only %d of %d writers launched while the first one's work was pending "
             "(host round trips)", atomic_load(&l->c->launched), WCHAIN);
  if (atomic_fetch_add(&l->c->next, 1) != l->index)
    atomic_fetch_add(&l->c->bad, 1);
}

static int wlink_fn(const weft_run_ctx *rc, void *arg)
{
  wlink *l = arg;
  atomic_fetch_add(&l->c->launched, 1);
  return weft_gpu_host_enqueue(rc->stream, wlink_item, arg);
}

Test(gpu_engine, a_chain_of_writers_waits_on_the_device_however_long, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  wchain c;
  atomic_init(&c.launched, 0);
  atomic_init(&c.next, 0);
  atomic_init(&c.bad, 0);
  wlink l[WCHAIN];
  for (int i = 0; i < WCHAIN; i++) {
    l[i] = (wlink){&c, i};
    cr_assert_eq(push_rw(t.eng, gpu_desc(wlink_fn, &l[i], 0), NULL, v), 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&c.next), WCHAIN);
  cr_assert_eq(atomic_load(&c.bad), 0, "a writer's work ran out of order");
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------- a successor on another stream waits on device */

typedef struct xs {
  atomic_int b_launched; /* B's fn ran */
  atomic_int x;
  atomic_int checked;
  void *sa, *sb;
} xs;

static void a_item(void *arg)
{
  xs *p = arg;
  /* A's work completes only after B was launched: B cannot have waited for
   * A on the host. */
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&p->b_launched), TU_DEADLINE_S),
           "B was not launched while A's work was pending (a host round trip?)");
  tu_sleep_us(2000);
  atomic_store(&p->x, 1);
}

static int a_fn(const weft_run_ctx *rc, void *arg)
{
  ((xs *)arg)->sa = rc->stream;
  return weft_gpu_host_enqueue(rc->stream, a_item, arg);
}

static void b_item(void *arg)
{
  xs *p = arg;
  TU_CHECK(atomic_load(&p->x) == 1, "B's work ran before A's (no device-side wait)");
  atomic_store(&p->checked, 1);
}

static int b_fn(const weft_run_ctx *rc, void *arg)
{
  xs *p = arg;
  p->sb = rc->stream;
  atomic_store(&p->b_launched, 1);
  return weft_gpu_host_enqueue(rc->stream, b_item, arg);
}

Test(gpu_engine, successor_on_another_stream_waits_on_the_device, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  xs p;
  atomic_init(&p.b_launched, 0);
  atomic_init(&p.x, 0);
  atomic_init(&p.checked, 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(a_fn, &p, 0), NULL, v), 0);
  weft_op_desc b = gpu_desc(b_fn, &p, 0);
  b.prop = WEFT_PROP_COPY_FROM_GPU; /* a copy worker: another stream */
  cr_assert_eq(push_rw(t.eng, b, v, w), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&p.checked), 1);
  cr_assert_neq(p.sa, p.sb, "the copy ran on the compute stream");
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------------- copies */

typedef struct cp {
  int host_in[64], dev[64], host_out[64];
  void *compute_stream, *copy_stream[2];
  int round;   /* fill's: rounds filled in */
  int checked; /* check's: rounds checked */
} cp;

static void to_item(void *arg)
{
  cp *c = arg;
  memcpy(c->dev, c->host_in, sizeof c->dev);
}
static void twice_item(void *arg)
{
  cp *c = arg;
  for (int i = 0; i < 64; i++)
    c->dev[i] *= 2;
}
static void from_item(void *arg)
{
  cp *c = arg;
  memcpy(c->host_out, c->dev, sizeof c->dev);
}
static int to_fn(const weft_run_ctx *rc, void *arg)
{
  ((cp *)arg)->copy_stream[0] = rc->stream;
  return weft_gpu_host_enqueue(rc->stream, to_item, arg);
}
static int twice_fn(const weft_run_ctx *rc, void *arg)
{
  ((cp *)arg)->compute_stream = rc->stream;
  return weft_gpu_host_enqueue(rc->stream, twice_item, arg);
}
static int from_fn(const weft_run_ctx *rc, void *arg)
{
  ((cp *)arg)->copy_stream[1] = rc->stream;
  return weft_gpu_host_enqueue(rc->stream, from_item, arg);
}
static int fill_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cp *c = arg;
  c->round++;
  for (int i = 0; i < 64; i++)
    c->host_in[i] = c->round * 100 + i;
  return 0;
}
static int check_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  cp *c = arg;
  c->checked++; /* the checks run in order (each reads out after its copy) */
  for (int i = 0; i < 64; i++)
    TU_CHECK(c->host_out[i] == 2 * (c->checked * 100 + i), "round %d: out[%d] = %d",
             c->checked, i, c->host_out[i]);
  return 0;
}

Test(gpu_engine, copies_are_ordered_by_their_vars, .init = setup, .timeout = TU_TIMEOUT(60))
{
  weft_gpu_test_host_jitter(100);
  te t = te_new(NULL, 2, 0);
  weft_var *in = te_var(t.eng), *dev = te_var(t.eng), *out = te_var(t.eng);
  cp c = {0};
  int rounds = (int)tu_scaled(50, 10);
  for (int r = 0; r < rounds; r++) {
    weft_op_desc to = gpu_desc(to_fn, &c, 1), from = gpu_desc(from_fn, &c, 1);
    to.prop = WEFT_PROP_COPY_TO_GPU;
    from.prop = WEFT_PROP_COPY_FROM_GPU;
    cr_assert_eq(push_rw(t.eng, te_desc(fill_fn, &c), NULL, in), 0);
    cr_assert_eq(push_rw(t.eng, to, in, dev), 0);
    cr_assert_eq(push_rw(t.eng, gpu_desc(twice_fn, &c, 1), NULL, dev), 0);
    cr_assert_eq(push_rw(t.eng, from, dev, out), 0);
    cr_assert_eq(push_rw(t.eng, te_desc(check_fn, &c), out, NULL), 0);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(c.round, rounds);
  cr_assert_eq(c.checked, rounds);
  cr_assert(c.copy_stream[0] && c.copy_stream[1] && c.compute_stream);
  cr_assert_neq(c.copy_stream[0], c.copy_stream[1], "to and from the GPU share a stream");
  cr_assert_neq(c.copy_stream[0], c.compute_stream);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------ two devices overlap */

static atomic_int met;

static void meet_item(void *arg)
{
  (void)arg;
  atomic_fetch_add(&met, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&met) >= 2, TU_DEADLINE_S),
           "the two devices' work did not overlap");
}

static int meet_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, meet_item, arg);
}

Test(gpu_engine, ops_on_two_devices_overlap, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 1, 0);
  weft_var *a = te_var(t.eng), *b = te_var(t.eng);
  atomic_store(&met, 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(meet_fn, NULL, 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(meet_fn, NULL, 1), NULL, b), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&met), 2);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------ differential */

Test(gpu_engine, differential_a_third_on_gpu_1_thread, .init = setup, .timeout = TU_TIMEOUT(120))
{
  weft_gpu_test_host_jitter(20);
  cr_assert_eq(differential_gpu(1, false, 3), 3 * DV);
}

Test(gpu_engine, differential_a_third_on_gpu_2_threads, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  weft_gpu_test_host_jitter(20);
  cr_assert_eq(differential_gpu(2, true, 3), 3 * DV);
}

Test(gpu_engine, differential_a_third_on_gpu_4_threads, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  weft_gpu_test_host_jitter(20);
  cr_assert_eq(differential_gpu(4, true, 3), 3 * DV);
}

/* The same in a captured graph, replayed with ordinary pushes and outside
 * waits between launches (differential.h): GPU operators of a graph go to
 * their device's workers and complete with their stream's work. */
Test(gpu_engine, graph_differential_a_third_on_gpu_1_thread, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  weft_gpu_test_host_jitter(20);
  cr_assert_eq(differential_graph(1, false, 3), 3 * DV);
}

Test(gpu_engine, graph_differential_a_third_on_gpu_4_threads, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  weft_gpu_test_host_jitter(20);
  cr_assert_eq(differential_graph(4, true, 3), 3 * DV);
}

static int gpu_fail_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  return D_FAIL;
}

/* A GPU operator of a graph that fails: its CPU reader is skipped, every
 * launch, and weft_wait_all reports the failure. */
Test(gpu_engine, graph_gpu_failure_skips_its_reader, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 2, 0);
  cr_assert_geq(weft_gpu_count(t.eng), 1);
  weft_var *a = te_var(t.eng);
  atomic_int gpu_runs, cpu_runs;
  atomic_init(&gpu_runs, 0);
  atomic_init(&cpu_runs, 0);
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(gpu_fail_fn, &gpu_runs, 0), NULL, a), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(te_count_fn, &cpu_runs), a, NULL), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(t.eng, &g), 0);
  for (int r = 0; r < 4; r++) {
    cr_assert_eq(weft_graph_launch(g), 0);
    cr_assert_eq(weft_wait_all(t.eng), D_FAIL, "launch %d", r);
    cr_assert_eq(atomic_load(&gpu_runs), r + 1);
    cr_assert_eq(atomic_load(&cpu_runs), 0, "the reader of the failed var ran");
  }
  cr_assert_eq(weft_graph_destroy(g), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------------ device errors */

static atomic_int ran_fn;

static int fail_dev_fn(const weft_run_ctx *rc, void *arg)
{
  (void)arg;
  atomic_fetch_add(&ran_fn, 1);
  return weft_gpu_host_test_inject_error(rc->stream);
}

static int count_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&ran_fn, 1);
  return 0;
}

Test(gpu_engine, a_device_error_fails_the_op_its_dependents_and_the_device, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng), *u = te_var(t.eng), *z = te_var(t.eng), *k = te_var(t.eng);
  atomic_store(&ran_fn, 0);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  cr_assert_eq(push_rw(t.eng, gpu_desc(fail_dev_fn, NULL, 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(count_fn, NULL), v, u), 0); /* skipped */
  cr_assert_eq(weft_var_wait(t.eng, u), WEFT_EDEVICE);
  cr_assert_eq(atomic_load(&ran_fn), 1, "the dependent CPU op ran");
  /* Later work on the failed device fails without running; the other
   * device still works. */
  cr_assert_eq(push_rw(t.eng, gpu_desc(count_fn, NULL, 0), NULL, z), 0);
  cr_assert_eq(weft_var_wait(t.eng, z), WEFT_EDEVICE);
  cr_assert_eq(atomic_load(&ran_fn), 1, "an op ran on the failed device");
  cr_assert_eq(push_rw(t.eng, gpu_desc(count_fn, NULL, 1), NULL, k), 0);
  cr_assert_eq(weft_var_wait(t.eng, k), 0);
  cr_assert_eq(atomic_load(&ran_fn), 2);
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EDEVICE);
  cr_assert_eq(te_free(&t), 0);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert(strstr(err, "weft: "), "no log line for the device error: \"%s\"", err);
  tu_assert_no_errors();
}

/* Early release after a device error: a device error on one stream must
 * not complete the operators of the device's other streams early. A long
 * "kernel" on stream 0 reads a buffer (a canary) that a CPU operator then
 * overwrites (it writes the var the kernel reads); meanwhile an operator on
 * stream 1 (the next compute worker, round robin) fails the device. The
 * writer must wait for the kernel to finish. */
static atomic_int canary, canary_reading, canary_bad, overwrote;

static void long_read_item(void *arg)
{
  (void)arg;
  atomic_store(&canary_reading, 1);
  double end = tu_now() + 0.3 * WEFT_TEST_TIMEOUT_MULT;
  while (tu_now() < end) {
    if (atomic_load(&canary) != 42)
      atomic_fetch_add(&canary_bad, 1);
    tu_sleep_us(500);
  }
  atomic_store(&canary_reading, 0);
}

static int long_read_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, long_read_item, arg);
}

static int overwrite_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  if (atomic_load(&canary_reading))
    atomic_fetch_add(&canary_bad, 1);
  atomic_store(&canary, 0);
  atomic_fetch_add(&overwrote, 1);
  return 0;
}

Test(gpu_engine, a_device_error_does_not_release_another_streams_running_work, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  weft_var *buf = te_var(t.eng), *f = te_var(t.eng), *k = te_var(t.eng);
  atomic_store(&canary, 42);
  atomic_store(&canary_reading, 0);
  atomic_store(&canary_bad, 0);
  atomic_store(&overwrote, 0);
  atomic_store(&ran_fn, 0);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  cr_assert_eq(push_rw(t.eng, gpu_desc(long_read_fn, NULL, 0), buf, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&canary_reading), TU_DEADLINE_S), "the kernel never ran");
  cr_assert_eq(push_rw(t.eng, gpu_desc(fail_dev_fn, NULL, 0), NULL, f), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(overwrite_fn, NULL), NULL, buf), 0);
  cr_assert_eq(weft_var_wait(t.eng, f), WEFT_EDEVICE);
  cr_assert_eq(weft_var_wait(t.eng, buf), 0, "the kernel that completed was failed");
  cr_assert_eq(atomic_load(&overwrote), 1);
  cr_assert_eq(atomic_load(&canary_bad), 0,
               "the CPU writer overwrote the buffer while the kernel on the failed device's "
               "other stream still read it");
  /* Later work on the healthy device runs. */
  cr_assert_eq(push_rw(t.eng, gpu_desc(count_fn, NULL, 1), NULL, k), 0);
  cr_assert_eq(weft_var_wait(t.eng, k), 0);
  cr_assert_eq(atomic_load(&ran_fn), 2, "the failing op and the healthy device's op");
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EDEVICE);
  cr_assert_eq(weft_wait_all(t.eng), 0, "the error is reported once");
  cr_assert_eq(te_free(&t), 0);
  tu_capture_end(&cap, err, sizeof err);
  tu_assert_no_errors();
}

static atomic_int release_stuck;

static void stuck_item(void *arg)
{
  (void)arg;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&release_stuck), TU_DEADLINE_S), "never released");
}

static int stuck_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, stuck_item, arg);
}

/* Work pending past the watchdog fails, its device with it, and so does
 * its dependent: once the work ended (the device no longer uses its vars;
 * tests/gpu/watchdog.h checks that nothing runs on them before). */
Test(gpu_engine, the_watchdog_fails_overdue_work_and_its_dependents, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  setenv("WEFT_GPU_WATCHDOG_MS", "100", 1);
  te t = te_new(NULL, 1, 0);
  weft_var *v = te_var(t.eng), *u = te_var(t.eng);
  atomic_store(&release_stuck, 0);
  atomic_store(&ran_fn, 0);
  tu_logbuf lg = TU_LOGBUF_WATCH("WEFT_GPU_WATCHDOG_MS"); /* its line */
  weft_set_log_callback(tu_log_cb, &lg);
  cr_assert_eq(push_rw(t.eng, gpu_desc(stuck_fn, NULL, 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(count_fn, NULL), v, u), 0);
  bool fired = TU_WAIT_UNTIL(atomic_load(&lg.seen), TU_DEADLINE_S);
  atomic_store(&release_stuck, 1); /* the work ends */
  int rc = weft_var_wait(t.eng, u);
  int rc_all = weft_wait_all(t.eng);
  int rc_free = te_free(&t);
  weft_set_log_callback(NULL, NULL);
  cr_assert(fired, "the watchdog did not fire within %.0f s", TU_DEADLINE_S);
  cr_assert_eq(rc, WEFT_EDEVICE, "the dependent's var = %d", rc);
  cr_assert_eq(atomic_load(&ran_fn), 0, "the dependent of the failed work ran");
  cr_assert(tu_line_has_all(lg.text, "WEFT_GPU_WATCHDOG_MS", "GPU 0", NULL),
            "no watchdog line: \"%s\"", lg.text);
  cr_assert_eq(rc_all, WEFT_EDEVICE);
  cr_assert_eq(rc_free, 0);
  tu_assert_no_errors();
}

/* ------------------------------------------------ no devices, bad input */

static int nop_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  return 0;
}

static void nop_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  (void)arg;
  weft_done_signal(done, 0);
}

Test(gpu_engine, no_devices_means_enodev, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *backends[] = {"none", "cuda"};
  for (int i = 0; i < 2; i++) {
    setenv("WEFT_GPU_BACKEND", backends[i], 1);
    te t = te_new(NULL, 1, 0);
    if (i == 1 && weft_gpu_count(t.eng) > 0) { /* a machine with a GPU */
      cr_assert_eq(te_free(&t), 0);
      continue;
    }
    cr_assert_eq(weft_gpu_count(t.eng), 0, "%s: %d devices", backends[i],
                 weft_gpu_count(t.eng));
    weft_var *v = te_var(t.eng);
    cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, v), WEFT_ENODEV);
    cr_assert_eq(te_free(&t), 0);
  }
  cr_assert_eq(weft_gpu_count(NULL), 0);
}

Test(gpu_engine, bad_input, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 1, 0);
  weft_var *v = te_var(t.eng);
  cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 2), NULL, v), WEFT_ENODEV);
  cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, -1), NULL, v), WEFT_ENODEV);
  weft_op_desc d = gpu_desc(NULL, NULL, 0);
  d.async_fn = nop_async; /* a GPU op completes with its stream, not a signal */
  cr_assert_eq(push_rw(t.eng, d, NULL, v), WEFT_EINVAL);
  weft_op_desc c = te_desc(nop_fn, NULL);
  c.prop = WEFT_PROP_COPY_TO_GPU; /* a copy names its GPU */
  cr_assert_eq(push_rw(t.eng, c, NULL, v), WEFT_EINVAL);
  cr_assert_eq(te_free(&t), 0);
}

static int create_engine(void *ctx)
{
  weft_engine **e = ctx;
  return weft_engine_create(e, NULL);
}

Test(gpu_engine, malformed_environment, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int base = tu_thread_baseline();
  const char *cases[][2] = {
      {"WEFT_GPU_WORKERS", "0"},       {"WEFT_GPU_WORKERS", "two"},
      {"WEFT_GPU_COPY_WORKERS", "-1"}, {"WEFT_GPU_COPY_WORKERS", "99999"},
      {"WEFT_GPU_WATCHDOG_MS", "soon"}, {"WEFT_GPU_BACKEND", "opencl"},
      {"WEFT_GPU_HOST_DEVICES", "0"},
      /* last, in this order: setup() leaves these two set */
      {"WEFT_GPU_SPIN_US", "-5"},      {"WEFT_GPU_COMPLETION", "polling"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setup();
    setenv(cases[i][0], cases[i][1], 1);
    weft_engine *e = NULL;
    tu_expect_env_einval(cases[i][0], cases[i][1], "weft_engine_create", create_engine, &e, base);
    cr_assert_null(e);
  }
}

/* --------------------------------------------------- idle and threads */

static int threads_named_prefix(const char *prefix)
{
  int n = 0;
  for (int k = 0; k < 4; k++) {
    char name[16];
    snprintf(name, sizeof name, "%s%d", prefix, k);
    n += tu_threads_named(name);
  }
  return n;
}

/* CPU time (ticks) of the thread named name, or -1. */
static long thread_ticks(const char *name)
{
  DIR *d = opendir("/proc/self/task");
  long ticks = -1;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char path[300], buf[1024] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || (size_t)(close - open - 1) != strlen(name) ||
        strncmp(open + 1, name, strlen(name)) != 0)
      continue;
    unsigned long ut = 0, st = 0;
    /* fields after the name: state ppid pgrp session tty tpgid flags minflt
     * cminflt majflt cmajflt utime stime */
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
      ticks = (long)(ut + st);
  }
  if (d)
    closedir(d);
  return ticks;
}

Test(gpu_engine, an_idle_executor_burns_no_cpu_and_starts_threads_lazily, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 1, 0);
  weft_var *v = te_var(t.eng);
  cr_assert_eq(weft_gpu_count(t.eng), 2);
  cr_assert_eq(tu_threads_named("weft-gpu-poll"), 0, "a poller before any GPU op");
  cr_assert_eq(threads_named_prefix("weft-g0c"), 0, "workers before any GPU op");
  for (int i = 0; i < 100; i++)
    cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, v), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(tu_threads_named("weft-gpu-poll"), 1);
  cr_assert_eq(threads_named_prefix("weft-g0c"), 2, "WEFT_GPU_WORKERS defaults to 2");
  cr_assert_eq(threads_named_prefix("weft-g1c"), 0, "device 1 started without an op");
  tu_sleep_us(100000); /* past the poller's spin */
  long before = thread_ticks("weft-gpu-poll");
  tu_sleep_us(500000);
  long after = thread_ticks("weft-gpu-poll");
  cr_assert(before >= 0 && after >= 0);
  cr_assert_leq(after - before, 2, "the idle poller used %ld ticks in 0.5 s", after - before);
  cr_assert_eq(te_free(&t), 0);
  cr_assert_eq(tu_threads_named("weft-gpu-poll"), 0, "the poller outlived the engine");
}

/* Every thread the GPU layer starts calls the backend's thread_init, once
 * (CUDA puts it in relaxed capture mode there, so that a capture in global
 * mode elsewhere in the process does not refuse its calls: backend.h):
 * each started device's compute and copy workers, and the engine's
 * completion thread, with its waiter in the hostword and blocking modes.
 * The engine's destroy joins them all, so the count is then exact. */
Test(gpu_engine, every_gpu_thread_inits_the_backend_once, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  const char *mode = getenv("WEFT_GPU_COMPLETION");
  bool waiter = !mode || strcmp(mode, "event") != 0;
  enum { COMPUTE = 3, COPY = 2, DEVICES = 2 };
  setenv("WEFT_GPU_WORKERS", "3", 1);
  setenv("WEFT_GPU_COPY_WORKERS", "2", 1);
  long before = weft_gpu_host_test_thread_inits();
  te t = te_new(NULL, 2, 0);
  cr_assert_eq(weft_gpu_count(t.eng), DEVICES);
  weft_var *v = te_var(t.eng);
  cr_assert_eq(weft_gpu_host_test_thread_inits() - before, 0, "a thread_init before any GPU op");
  for (int dev = 0; dev < DEVICES; dev++)
    for (int i = 0; i < 2 * COMPUTE; i++)
      cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, dev), NULL, v), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(te_free(&t), 0);
  long want = DEVICES * (COMPUTE + COPY) + 1 + (waiter ? 1 : 0);
  long got = weft_gpu_host_test_thread_inits() - before;
  cr_assert_eq(got, want,
               "%ld thread_init calls for %d devices of %d compute and %d copy workers, a "
               "completion thread%s: want %ld",
               got, DEVICES, COMPUTE, COPY, waiter ? " and its waiter" : "", want);
}

/* A long device operation (0.4 s) costs the completion thread next to no
 * CPU in the hostword and blocking modes: after its spin it blocks, its
 * waiter sleeping in event_sync. The CPU successor still starts once the
 * work completed. (The event mode's back-off sleeps cost a little: logged,
 * not checked.) */
static void long_item(void *arg)
{
  tu_sleep_us(400000);
  atomic_store((atomic_int *)arg, 1);
}

static int long_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, long_item, arg);
}

static int after_long_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  TU_CHECK(atomic_load((atomic_int *)arg) == 1, "a CPU successor ran before the device work");
  return 0;
}

static long completion_ticks(void)
{
  long poll = thread_ticks("weft-gpu-poll"), wait = thread_ticks("weft-gpu-wait");
  return (poll > 0 ? poll : 0) + (wait > 0 ? wait : 0);
}

Test(gpu_engine, a_long_device_op_costs_the_completion_thread_no_cpu, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  const char *mode = getenv("WEFT_GPU_COMPLETION");
  bool event_mode = mode && !strcmp(mode, "event");
  te t = te_new(NULL, 1, 0);
  weft_var *v = te_var(t.eng);
  atomic_int done = 0;
  cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, v), 0); /* starts the threads */
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(tu_threads_named("weft-gpu-wait"), event_mode ? 0 : 1,
               "a waiter thread in the hostword and blocking modes only");
  long before = completion_ticks();
  cr_assert_eq(push_rw(t.eng, gpu_desc(long_fn, &done, 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, te_desc(after_long_fn, &done), v, NULL), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  long used = completion_ticks() - before;
  cr_log_info("mode %s: the completion threads used %ld ticks during a 0.4 s device op",
              mode ? mode : "hostword", used);
  if (!event_mode)
    cr_assert_leq(used, 5, "the completion threads used %ld ticks (of 40) during a 0.4 s op",
                  used);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

Test(gpu_engine, events_are_reused, .init = setup, .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 16);
  weft_var *v[8];
  for (int i = 0; i < 8; i++)
    v[i] = te_var(t.eng);
  weft_gpu_test_create_calls(); /* reset the count */
  long n = tu_scaled(5000, 500);
  for (long i = 0; i < n; i++)
    cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, (int)(i % 2)), NULL, v[i % 8]), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  long created = weft_gpu_test_create_calls();
  cr_log_info("%ld GPU ops made %ld streams and events", n, created);
  /* 16 ops in flight at most (max_inflight) and a few more held by device
   * waits, plus 4 streams per device: far fewer than the ops. */
  cr_assert_lt(created, 100, "%ld creations for %ld ops: events are not reused", created, n);
  cr_assert_eq(te_free(&t), 0);
}

/* ------------------------------------------- regressions from a review */

/* The naive engine runs a GPU op's fn on the pushing thread; a fn that
 * pushes another GPU op (which runs right there) must not deadlock. */
static atomic_int nested_ran;

static void nested_item(void *arg)
{
  (void)arg;
  atomic_fetch_add(&nested_ran, 1);
}

static int inner_fn(const weft_run_ctx *rc, void *arg)
{
  (void)arg;
  return weft_gpu_host_enqueue(rc->stream, nested_item, NULL);
}

typedef struct nest {
  weft_engine *eng;
  weft_var *inner_var;
} nest;

static int outer_fn(const weft_run_ctx *rc, void *arg)
{
  nest *n = arg;
  int r = push_rw(n->eng, gpu_desc(inner_fn, NULL, rc->ctx.id), NULL, n->inner_var);
  TU_CHECK(r == 0, "nested GPU push = %d", r);
  return weft_gpu_host_enqueue(rc->stream, nested_item, NULL);
}

Test(gpu_engine, naive_gpu_op_pushing_a_gpu_op, .init = setup, .timeout = TU_TIMEOUT(30))
{
  te t = te_new("naive", 1, 0);
  nest n = {t.eng, te_var(t.eng)};
  weft_var *v = te_var(t.eng);
  atomic_store(&nested_ran, 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(outer_fn, &n, 0), NULL, v), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(outer_fn, &n, 1), NULL, v), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&nested_ran), 4);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* A device that cannot start fails its operators one after another; a
 * long chain of them must not recurse as deep as the chain. */
static int gate_open_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  TU_CHECK(TU_WAIT_UNTIL(atomic_load((atomic_int *)arg), TU_DEADLINE_S), "gate never opened");
  return 0;
}

Test(gpu_engine, a_long_chain_on_a_device_that_cannot_start, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  weft_var *v = te_var(t.eng);
  atomic_int gate;
  atomic_init(&gate, 0);
  weft_gpu_test_fail_create_at(1, WEFT_EAGAIN); /* every stream creation fails */
  cr_assert_eq(push_rw(t.eng, te_desc(gate_open_fn, &gate), NULL, v), 0);
  long n = tu_scaled(100000, 20000);
  for (long i = 0; i < n; i++)
    cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, v), 0);
  atomic_store(&gate, 1); /* the whole chain fails from one completion */
  cr_assert_eq(weft_var_wait(t.eng, v), WEFT_EAGAIN);
  weft_gpu_test_fail_create_at(0, 0);
  cr_assert_eq(weft_wait_all(t.eng), WEFT_EAGAIN);
  cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, v), 0); /* it starts now */
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* Operators the poller or a device worker make ready never run inline on
 * them: an ASYNC op released by the poller that waits for later GPU work
 * must not stop the poller. A wait inside a GPU op's fn is refused. */
typedef struct pw {
  weft_engine *eng;
  weft_var *u;
  atomic_int waited;
  atomic_int fn_wait_rc;
} pw;

static int async_waits_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  pw *p = arg;
  atomic_store(&p->waited, weft_var_wait(p->eng, p->u) == 0 ? 1 : -1);
  return 0;
}

static int gpu_waits_fn(const weft_run_ctx *rc, void *arg)
{
  pw *p = arg;
  atomic_store(&p->fn_wait_rc, weft_var_wait(p->eng, p->u));
  return weft_gpu_host_enqueue(rc->stream, nested_item, NULL);
}

Test(gpu_engine, executor_threads_run_no_user_op_inline_and_do_not_wait, .init = setup,
     .timeout = TU_TIMEOUT(30))
{
  te t = te_new(NULL, 2, 0);
  pw p = {t.eng, te_var(t.eng), 0, 1};
  weft_var *v = te_var(t.eng), *w = te_var(t.eng);
  slow s1, s2; /* live until wait_all: their items write them */
  atomic_init(&s1.value, 0);
  atomic_init(&s2.value, 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(slow_fn, &s1, 0), NULL, v), 0);
  weft_op_desc a = te_desc(async_waits_fn, &p);
  a.prop = WEFT_PROP_ASYNC;
  cr_assert_eq(push_rw(t.eng, a, v, w), 0);
  cr_assert_eq(push_rw(t.eng, gpu_desc(slow_fn, &s2, 0), NULL, p.u), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&p.waited), 1);
  cr_assert_eq(push_rw(t.eng, gpu_desc(gpu_waits_fn, &p, 0), NULL, w), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&p.fn_wait_rc), WEFT_EDEADLK);
  cr_assert_eq(te_free(&t), 0);
  tu_assert_no_errors();
}

/* After the watchdog failed a device, what is queued behind the stuck work
 * on its stream fails as soon as that work ends, not one watchdog period
 * each, and what is not launched yet fails at its worker. */
Test(gpu_engine, the_watchdog_fails_the_queue_behind_at_once, .init = setup,
     .timeout = TU_TIMEOUT(15))
{
  setenv("WEFT_GPU_WATCHDOG_MS", "200", 1);
  setenv("WEFT_GPU_WORKERS", "1", 1);
  te t = te_new(NULL, 1, 0);
  weft_var *v = te_var(t.eng), *u = te_var(t.eng);
  atomic_store(&release_stuck, 0);
  tu_logbuf lg = TU_LOGBUF_WATCH("WEFT_GPU_WATCHDOG_MS"); /* its line */
  weft_set_log_callback(tu_log_cb, &lg);
  cr_assert_eq(push_rw(t.eng, gpu_desc(stuck_fn, NULL, 0), NULL, v), 0);
  for (int i = 0; i < 100; i++) /* 20 s of watchdog periods, one after another */
    cr_assert_eq(push_rw(t.eng, gpu_desc(nop_fn, NULL, 0), NULL, u), 0);
  bool fired = TU_WAIT_UNTIL(atomic_load(&lg.seen), TU_DEADLINE_S);
  atomic_store(&release_stuck, 1); /* the stuck work ends: the queue behind it fails */
  int rc_u = weft_var_wait(t.eng, u);
  int rc = weft_wait_all(t.eng);
  int rc_free = te_free(&t);
  weft_set_log_callback(NULL, NULL);
  cr_assert(fired, "the watchdog did not fire within %.0f s", TU_DEADLINE_S);
  cr_assert_eq(rc_u, WEFT_EDEVICE, "the last of the queue behind: %d", rc_u);
  cr_assert_eq(rc, WEFT_EDEVICE);
  cr_assert_eq(rc_free, 0);
  tu_assert_no_errors();
}

/* ------------------------------------- an argument stored with the op */

/* A GPU operator's stored argument (weft_push_arg) is dropped once its
 * device work stopped, not when its fn returned. */
typedef struct dev_arg {
  atomic_int *device_done; /* set by the device work */
  atomic_int *dropped_early;
  atomic_int *drops;
} dev_arg;

static void slow_device_work(void *p)
{
  tu_sleep_us(3000);
  atomic_store((atomic_int *)p, 1);
}

static int dev_arg_fn(const weft_run_ctx *rc, void *p)
{
  dev_arg *a = p;
  return weft_gpu_host_enqueue(rc->stream, slow_device_work, a->device_done);
}

static void dev_arg_drop(void *p)
{
  dev_arg *a = p;
  if (!atomic_load(a->device_done))
    atomic_store(a->dropped_early, 1);
  atomic_fetch_add(a->drops, 1);
}

Test(gpu_engine, a_stored_argument_outlives_the_device_work, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  const char *kinds[] = {"threaded", "naive"};
  for (int k = 0; k < 2; k++) {
    te t = te_new(kinds[k], 2, 0);
    cr_assert_geq(weft_gpu_count(t.eng), 1);
    weft_var *x = te_var(t.eng);
    for (int i = 0; i < 10; i++) {
      atomic_int done = 0, early = 0, drops = 0;
      dev_arg a = {&done, &early, &drops};
      weft_op_desc d = gpu_desc(dev_arg_fn, NULL, i % 2);
      d.writes = (weft_var *const[]){x};
      d.num_writes = 1;
      cr_assert_eq(weft_push_arg(t.eng, &d, &a, sizeof a, dev_arg_drop), 0);
      cr_assert_eq(weft_var_wait(t.eng, x), 0);
      cr_assert_eq(atomic_load(&done), 1, "%s: the wait returned before the device work",
                   kinds[k]);
      /* The drop comes with the block's release, which may trail the wait a little. */
      cr_assert(TU_WAIT_UNTIL(atomic_load(&drops) == 1, TU_DEADLINE_S), "%s: %d drops",
                kinds[k], atomic_load(&drops));
      cr_assert_eq(atomic_load(&early), 0, "%s: dropped before its device work stopped",
                   kinds[k]);
    }
    cr_assert_eq(te_free(&t), 0);
    tu_assert_no_errors();
  }
}
