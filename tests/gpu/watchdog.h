/* SPDX-License-Identifier: MIT */
/*
 * The watchdog's promise on a backend (test_host_faults.c, test_cuda_faults.c),
 * early_release.h's early release reached through WEFT_GPU_WATCHDOG_MS
 * instead of a device error: device work that runs past the watchdog fails, and its
 * device with it, but keeps its vars' buffers until the device says it
 * stopped. No operator runs on a var whose buffer that work may still read,
 * and weft_var_wait on such a var does not return 0 while it runs.
 *
 * The held work is early_release.h's reader (er_backend.hold): it reads its
 * buffer's canary until the test sets its stop flag, however long that takes, and
 * counts the reads that saw the buffer overwritten. With the watchdog at
 * 100 ms, the test waits for the watchdog's log line, then gives a writer
 * released too early WD_GRACE_S to run (an engine that releases it at the
 * watchdog runs it within microseconds), then lets the held work end.
 *
 * wd_reader_keeps_its_buffer: a GPU reader R of x held past the watchdog,
 * then a CPU writer W of x, and a weft_var_wait(x) on a thread of its own.
 * W runs once, after R's work ended; the wait returns 0, after that too.
 * R fails with WEFT_EDEVICE (the var it writes), a GPU operator pushed once
 * the watchdog fired fails at once without running (while R's work still
 * runs), weft_wait_all reports WEFT_EDEVICE once, engine destroy returns 0,
 * and the log line names WEFT_GPU_WATCHDOG_MS, GPU 0 and R.
 *
 * wd_stream_order_keeps_the_buffer: one compute worker, so one stream: R1
 * held past the watchdog, R2 reading y queued behind it (its work reads y
 * once, when R1's has ended), then a CPU writer W of y. W runs after R2's
 * work, which read y as it was before W; R2 fails with WEFT_EDEVICE as R1
 * does (it ran behind work the watchdog gave up on).
 *
 * A suite file includes early_release.h, fills er_backend.hold and calls
 * these in its tests; WEFT_GPU_COMPLETION comes from the environment.
 */
#ifndef WEFT_TESTS_GPU_WATCHDOG_H
#define WEFT_TESTS_GPU_WATCHDOG_H

#include <pthread.h>

#include "early_release.h"

#define WD_WATCHDOG_MS "100"
/* How long a writer or a wait released at the watchdog gets to show it,
 * after the watchdog's line: far longer than a dispatch. */
#define WD_GRACE_S (0.3 * WEFT_TEST_TIMEOUT_MULT)

/* A GPU operator whose device work is a reader of r (er_backend.hold). */
typedef struct wd_gpu {
  const er_backend *be;
  er_reader *r;
  void *_Atomic stream; /* where its fn ran */
  atomic_int runs;      /* its fn ran */
} wd_gpu;

static int wd_hold_fn(const weft_run_ctx *rc, void *arg)
{
  wd_gpu *g = arg;
  atomic_store(&g->stream, rc->stream);
  atomic_fetch_add(&g->runs, 1);
  int err = g->be->hold(rc->stream, g->r);
  TU_CHECK(err == 0, "%s: launching a held reader failed: %d", g->be->name, err);
  return err ? WEFT_EDEVICE : 0;
}

/* A CPU writer of the buffer r's work reads: what it found, then the
 * overwrite. */
typedef struct wd_writer {
  er_reader *r;
  atomic_int runs;
  atomic_int saw_started, saw_finished; /* r's work, when the writer ran */
  atomic_int saw;                       /* the canary, before the overwrite */
} wd_writer;

static int wd_write_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  wd_writer *w = arg;
  atomic_store(&w->saw_started, atomic_load(&w->r->started));
  atomic_store(&w->saw_finished, atomic_load(&w->r->finished));
  atomic_store(&w->saw, atomic_load(&w->r->canary));
  atomic_store(&w->r->canary, ER_OVERWRITTEN);
  atomic_fetch_add(&w->runs, 1);
  return 0;
}

/* weft_var_wait(v) on a thread of its own; whether r's work had ended when
 * it returned. */
typedef struct wd_waiter {
  weft_engine *eng;
  weft_var *v;
  er_reader *r;
  pthread_t thread;
  atomic_int returned;
  atomic_int rc;
  atomic_int finished_at_return;
} wd_waiter;

static void *wd_wait_main(void *arg)
{
  wd_waiter *w = arg;
  int rc = weft_var_wait(w->eng, w->v);
  atomic_store(&w->finished_at_return, atomic_load(&w->r->finished));
  atomic_store(&w->rc, rc);
  atomic_store(&w->returned, 1);
  return NULL;
}

static void wd_waiter_start(wd_waiter *w, weft_engine *eng, weft_var *v, er_reader *r)
{
  w->eng = eng;
  w->v = v;
  w->r = r;
  atomic_init(&w->returned, 0);
  atomic_init(&w->rc, 1);
  atomic_init(&w->finished_at_return, 0);
  cr_assert_eq(pthread_create(&w->thread, NULL, wd_wait_main, w), 0);
}

static void wd_gpu_init(wd_gpu *g, const er_backend *be, er_reader *r)
{
  g->be = be;
  g->r = r;
  atomic_init(&g->stream, NULL);
  atomic_init(&g->runs, 0);
}

static void wd_writer_init(wd_writer *w, er_reader *r)
{
  w->r = r;
  atomic_init(&w->runs, 0);
  atomic_init(&w->saw_started, -1);
  atomic_init(&w->saw_finished, -1);
  atomic_init(&w->saw, -1);
}

/* Pushes g's operator on GPU 0, named name, reading r and writing w. */
static int wd_push_gpu(weft_engine *e, wd_gpu *g, const char *name, weft_var *r, weft_var *w)
{
  weft_op_desc d = te_desc(wd_hold_fn, g);
  d.ctx.type = WEFT_DEV_GPU; /* device 0 */
  d.name = name;
  d.reads = &r;
  d.num_reads = 1;
  d.writes = &w;
  d.num_writes = 1;
  return weft_push(e, &d);
}

/* An engine on be with the watchdog at WD_WATCHDOG_MS and workers compute
 * workers per device; false (destroyed again) without a device. */
static bool wd_engine(te *t, const er_backend *be, const char *workers)
{
  setenv("WEFT_GPU_BACKEND", be->name, 1);
  setenv("WEFT_GPU_WATCHDOG_MS", WD_WATCHDOG_MS, 1);
  setenv("WEFT_GPU_WORKERS", workers, 1);
  const char *mode = getenv("WEFT_GPU_COMPLETION");
  cr_log_info("watchdog on %s: WEFT_GPU_WATCHDOG_MS=%s, WEFT_GPU_WORKERS=%s, "
              "WEFT_GPU_COMPLETION=%s",
              be->name, WD_WATCHDOG_MS, workers, mode ? mode : "(default)");
  *t = te_new(NULL, 2, 0);
  if (weft_gpu_count(t->eng) >= 1)
    return true;
  cr_assert_eq(te_free(t), 0);
  return false;
}

/* What a scenario saw, for the test's own verdict: whether the CPU writer
 * of the buffer ran only after the device work the watchdog gave up on
 * ended, whether weft_var_wait on it returned only then, and the held
 * operator's var status (the scenario asserts the rest itself). */
typedef struct wd_verdict {
  bool writer_after_work, wait_after_work;
  int held_status;
} wd_verdict;

static wd_verdict wd_reader_keeps_its_buffer(const er_backend *be)
{
  te t;
  if (!wd_engine(&t, be, "2"))
    cr_skip_test("no %s device", be->name);
  er_reader *r = be->alloc(sizeof *r);
  cr_assert_not_null(r, "%s: could not allocate the words the device work shares", be->name);
  atomic_store(&r->canary, ER_CANARY);
  weft_var *x = te_var(t.eng), *rv = te_var(t.eng), *late = te_var(t.eng);
  wd_gpu g;
  wd_gpu_init(&g, be, r);
  wd_writer w;
  wd_writer_init(&w, r);
  atomic_int late_runs;
  atomic_init(&late_runs, 0);
  tu_logbuf lg = TU_LOGBUF_WATCH("WEFT_GPU_WATCHDOG_MS"); /* its line */
  weft_set_log_callback(tu_log_cb, &lg);

  TU_CHECK(wd_push_gpu(t.eng, &g, "held reader", x, rv) == 0, "push the held reader");
  bool started = TU_WAIT_UNTIL(atomic_load(&r->started), TU_DEADLINE_S);
  TU_CHECK(er_push(t.eng, wd_write_fn, &w, false, TE_NONE, TE_V(x)) == 0, "push the writer");
  wd_waiter wt;
  wd_waiter_start(&wt, t.eng, x, r);
  bool fired = TU_WAIT_UNTIL(atomic_load(&lg.seen), TU_DEADLINE_S);
  /* An engine that let go of x at the watchdog runs the writer and
   * returns the wait now. */
  (void)TU_WAIT_UNTIL(atomic_load(&w.runs) || atomic_load(&wt.returned), WD_GRACE_S);
  /* The device is failed: a GPU operator fails without running, at once
   * (it waits for nothing: not for the held work). */
  TU_CHECK(er_push(t.eng, er_count_fn, &late_runs, true, TE_NONE, TE_V(late)) == 0,
           "push a GPU op after the watchdog");
  int rc_late = weft_var_wait(t.eng, late);
  bool late_while_held = !atomic_load(&r->finished);
  atomic_store(&r->stop, 1); /* the held work ends */
  pthread_join(wt.thread, NULL);
  int rc_rv = weft_var_wait(t.eng, rv);
  int rc_all = weft_wait_all(t.eng), rc_all2 = weft_wait_all(t.eng);
  int rc_free = te_free(&t);
  weft_set_log_callback(NULL, NULL);

  cr_log_info("held reader: %s, %llu reads, %d saw the overwrite; writer ran %d time(s), "
              "found the reader %s, canary %d; weft_var_wait(x) = %d, returned %s the reader "
              "ended; log:\n%s",
              atomic_load(&r->finished) ? "ended" : "still running",
              (unsigned long long)atomic_load(&r->beats), atomic_load(&r->bad),
              atomic_load(&w.runs), atomic_load(&w.saw_finished) == 1 ? "ended" : "still running",
              atomic_load(&w.saw), atomic_load(&wt.rc),
              atomic_load(&wt.finished_at_return) ? "after" : "before", lg.text);
  cr_assert(started, "the held reader's work did not start within %.0f s", TU_DEADLINE_S);
  cr_assert(fired, "the watchdog did not fire within %.0f s (WEFT_GPU_WATCHDOG_MS=%s)",
            TU_DEADLINE_S, WD_WATCHDOG_MS);
  cr_assert_eq(atomic_load(&w.runs), 1, "the CPU writer of x ran %d times",
               atomic_load(&w.runs));
  cr_assert_eq(atomic_load(&w.saw_finished), 1,
               "the CPU writer of x ran while the device work the watchdog gave up on still "
               "read x");
  cr_assert_eq(atomic_load(&r->bad), 0, "the held reader read x overwritten %d times",
               atomic_load(&r->bad));
  cr_assert_eq(atomic_load(&w.saw), ER_CANARY, "the writer found canary %d",
               atomic_load(&w.saw));
  cr_assert(atomic_load(&wt.finished_at_return) || atomic_load(&wt.rc) != 0,
            "weft_var_wait(x) returned 0 while the device work still read x");
  cr_assert_eq(atomic_load(&wt.rc), 0, "weft_var_wait(x) = %d (%s): its last writer succeeded",
               atomic_load(&wt.rc), weft_strerror(atomic_load(&wt.rc)));
  cr_assert(atomic_load(&wt.finished_at_return), "weft_var_wait(x) returned before the work "
            "on x ended");
  cr_assert_eq(atomic_load(&g.runs), 1, "the held reader's fn ran %d times",
               atomic_load(&g.runs));
  cr_assert_eq(rc_rv, WEFT_EDEVICE, "the held reader's var = %d (%s)", rc_rv,
               weft_strerror(rc_rv));
  cr_assert_eq(rc_late, WEFT_EDEVICE, "a GPU op after the watchdog: its var = %d (%s)", rc_late,
               weft_strerror(rc_late));
  cr_assert_eq(atomic_load(&late_runs), 0, "a GPU op ran on the device the watchdog failed");
  cr_assert(late_while_held, "the GPU op after the watchdog waited for the held work");
  cr_assert_eq(rc_all, WEFT_EDEVICE, "weft_wait_all = %d (%s)", rc_all, weft_strerror(rc_all));
  cr_assert_eq(rc_all2, 0, "the failure was reported twice (second weft_wait_all = %d)", rc_all2);
  cr_assert_eq(rc_free, 0, "weft_engine_destroy = %d (%s)", rc_free, weft_strerror(rc_free));
  cr_assert(tu_line_has_all(lg.text, "WEFT_GPU_WATCHDOG_MS", "GPU 0", "held reader"),
            "no log line naming the watchdog, the device and the operator: \"%s\"", lg.text);
  tu_assert_no_errors();
  be->free(r);
  return (wd_verdict){atomic_load(&w.saw_finished) == 1, atomic_load(&wt.finished_at_return) != 0,
                      rc_rv};
}

static wd_verdict wd_stream_order_keeps_the_buffer(const er_backend *be)
{
  te t;
  if (!wd_engine(&t, be, "1"))
    cr_skip_test("no %s device", be->name);
  er_reader *r = be->alloc(2 * sizeof *r); /* [0] R1's (held), [1] R2's: y */
  cr_assert_not_null(r, "%s: could not allocate the words the device work shares", be->name);
  atomic_store(&r[0].canary, ER_CANARY);
  atomic_store(&r[1].canary, ER_CANARY);
  atomic_store(&r[1].stop, 1); /* R2's work reads y once */
  weft_var *x = te_var(t.eng), *y = te_var(t.eng), *rv1 = te_var(t.eng), *rv2 = te_var(t.eng);
  wd_gpu g1, g2;
  wd_gpu_init(&g1, be, &r[0]);
  wd_gpu_init(&g2, be, &r[1]);
  wd_writer w;
  wd_writer_init(&w, &r[1]);
  tu_logbuf lg = TU_LOGBUF_WATCH("WEFT_GPU_WATCHDOG_MS"); /* its line */
  weft_set_log_callback(tu_log_cb, &lg);

  TU_CHECK(wd_push_gpu(t.eng, &g1, "held reader", x, rv1) == 0, "push R1");
  TU_CHECK(wd_push_gpu(t.eng, &g2, "reader behind it", y, rv2) == 0, "push R2");
  TU_CHECK(er_push(t.eng, wd_write_fn, &w, false, TE_NONE, TE_V(y)) == 0, "push the writer");
  wd_waiter wt;
  wd_waiter_start(&wt, t.eng, y, &r[1]);
  bool started = TU_WAIT_UNTIL(atomic_load(&r[0].started), TU_DEADLINE_S);
  bool fired = TU_WAIT_UNTIL(atomic_load(&lg.seen), TU_DEADLINE_S);
  (void)TU_WAIT_UNTIL(atomic_load(&w.runs) || atomic_load(&wt.returned), WD_GRACE_S);
  bool r2_waited = !atomic_load(&r[1].started); /* R2's work still behind R1's */
  atomic_store(&r[0].stop, 1); /* R1's work ends, then R2's runs */
  pthread_join(wt.thread, NULL);
  int rc_rv1 = weft_var_wait(t.eng, rv1), rc_rv2 = weft_var_wait(t.eng, rv2);
  int rc_all = weft_wait_all(t.eng), rc_all2 = weft_wait_all(t.eng);
  int rc_free = te_free(&t);
  weft_set_log_callback(NULL, NULL);

  cr_log_info("R1 on stream %p, R2 on stream %p; R2's work %s, %llu read(s), %d saw y "
              "overwritten; the writer ran %d time(s), found R2's work %s, canary %d; "
              "weft_var_wait(y) = %d, returned %s R2's work ended; log:\n%s",
              atomic_load(&g1.stream), atomic_load(&g2.stream),
              atomic_load(&r[1].finished) ? "ran" : "never ran",
              (unsigned long long)atomic_load(&r[1].beats), atomic_load(&r[1].bad),
              atomic_load(&w.runs),
              atomic_load(&w.saw_finished) == 1  ? "ended"
              : atomic_load(&w.saw_started) == 1 ? "running"
                                                 : "not started",
              atomic_load(&w.saw), atomic_load(&wt.rc),
              atomic_load(&wt.finished_at_return) ? "after" : "before", lg.text);
  cr_assert(started, "R1's work did not start within %.0f s", TU_DEADLINE_S);
  cr_assert(fired, "the watchdog did not fire within %.0f s (WEFT_GPU_WATCHDOG_MS=%s)",
            TU_DEADLINE_S, WD_WATCHDOG_MS);
  /* The premise: R2 was launched behind R1 on its stream before the
   * watchdog failed the device, and its work waited there. */
  cr_assert_eq(atomic_load(&g1.runs), 1, "R1's fn ran %d times", atomic_load(&g1.runs));
  cr_assert_eq(atomic_load(&g2.runs), 1, "R2's fn ran %d times (not launched before the "
               "watchdog failed the device?)", atomic_load(&g2.runs));
  cr_assert(atomic_load(&g1.stream) && atomic_load(&g1.stream) == atomic_load(&g2.stream),
            "R1 and R2 on streams %p and %p, expected one (WEFT_GPU_WORKERS=1)",
            atomic_load(&g1.stream), atomic_load(&g2.stream));
  cr_assert(r2_waited, "R2's work ran before R1's ended");
  cr_assert_eq(atomic_load(&w.runs), 1, "the CPU writer of y ran %d times",
               atomic_load(&w.runs));
  cr_assert_eq(atomic_load(&w.saw_finished), 1,
               "the CPU writer of y ran before R2's device work (which was %s), though R2 was "
               "pushed first",
               atomic_load(&w.saw_started) == 1 ? "running" : "not started");
  cr_assert_eq(atomic_load(&r[1].bad), 0, "R2's device work read the writer's y");
  cr_assert_eq(atomic_load(&w.saw), ER_CANARY, "the writer found canary %d",
               atomic_load(&w.saw));
  cr_assert(atomic_load(&wt.finished_at_return) || atomic_load(&wt.rc) != 0,
            "weft_var_wait(y) returned 0 before R2's device work ran");
  cr_assert_eq(atomic_load(&wt.rc), 0, "weft_var_wait(y) = %d (%s): its last writer succeeded",
               atomic_load(&wt.rc), weft_strerror(atomic_load(&wt.rc)));
  cr_assert(atomic_load(&wt.finished_at_return), "weft_var_wait(y) returned before R2's work "
            "ended");
  cr_assert_eq(rc_rv1, WEFT_EDEVICE, "R1's var = %d (%s)", rc_rv1, weft_strerror(rc_rv1));
  cr_assert_eq(rc_rv2, WEFT_EDEVICE, "R2's var = %d (%s): it ran behind work the watchdog "
               "gave up on", rc_rv2, weft_strerror(rc_rv2));
  cr_assert_eq(rc_all, WEFT_EDEVICE, "weft_wait_all = %d (%s)", rc_all, weft_strerror(rc_all));
  cr_assert_eq(rc_all2, 0, "the failure was reported twice (second weft_wait_all = %d)", rc_all2);
  cr_assert_eq(rc_free, 0, "weft_engine_destroy = %d (%s)", rc_free, weft_strerror(rc_free));
  cr_assert(tu_line_has_all(lg.text, "WEFT_GPU_WATCHDOG_MS", "GPU 0", "held reader"),
            "no log line naming the watchdog, the device and R1: \"%s\"", lg.text);
  tu_assert_no_errors();
  be->free(r);
  return (wd_verdict){atomic_load(&w.saw_finished) == 1, atomic_load(&wt.finished_at_return) != 0,
                      rc_rv2};
}

#endif /* WEFT_TESTS_GPU_WATCHDOG_H */
