/* SPDX-License-Identifier: MIT */
/*
 * Early release after a device error, on a backend: a device error on one
 * stream must not complete the operators of the device's other streams
 * early (the prefixes er_ and ER_: early release).
 *
 * Readers (GPU operators) each launch a long "kernel" that keeps reading its
 * buffer, a canary word in memory both sides reach (early_release_words.h), and record
 * every observation. While they read, an operator on another stream of the
 * same device fails the device (CUDA: __trap, a sticky error that aborts
 * every kernel of the context). Then a CPU writer per buffer overwrites the
 * canary: it writes the var its reader reads, so it must not run while that
 * reader's kernel can still read. A writer released early shows either way:
 * the kernel reads the overwritten canary (its "bad" count), or the writer,
 * watching the reader's heartbeat for ER_WATCH_US before it writes, sees it
 * still beating.
 *
 * What the contract says and the scenario checks (docs/api.md, "Guarantees";
 * docs/design.md, "The GPU layer"):
 *   - 0 buffers released early, over all readers;
 *   - every operator accounted for: each reader's and the failing op's fn
 *     ran once, each writer ran once (a reader writes nothing of the
 *     buffer, so its failure does not skip the writer), the failing op's
 *     CPU reader was skipped, and a GPU operator pushed after the failure
 *     fails without running;
 *   - the failing op's var, its reader's var and weft_wait_all report
 *     WEFT_EDEVICE (once), with a "weft: " log line naming the error;
 *   - weft_engine_destroy returns (the suite's timeout turns a hang into a
 *     failure), and returns 0: the failure was reported.
 * The readers' own status is the backend's: CUDA aborts them (WEFT_EDEVICE),
 * the host backend lets another stream's work finish (0).
 *
 * Placement (src/gpu/executor.c, choose_lane): a compute operator with a
 * pending same-device predecessor goes to that predecessor's stream, any
 * other to the next compute worker in turn (of a predecessor's successors,
 * only the first follows it). ER_SPREAD: n readers with no predecessor on
 * WEFT_GPU_WORKERS n + 1 workers, a stream each, all reading when the
 * device fails; the failing op gets the last stream. ER_ONE_STREAM: every
 * reader writes an anchor var, a chain in which each follows the one
 * before, so all n queue on one stream (WEFT_GPU_WORKERS 2); the failing op
 * gets the other one. The
 * scenario checks the streams it got, so a change of placement fails it
 * with that message rather than making it pass vacuously.
 *
 * A suite file defines a er_backend and calls er_run() in each test (each
 * Criterion test runs in a process of its own: CUDA's sticky error
 * poisons only that one).
 */
#ifndef WEFT_TESTS_GPU_EARLY_RELEASE_H
#define WEFT_TESTS_GPU_EARLY_RELEASE_H

#include <stdatomic.h>

#include "../deps/engine_util.h"
#include "early_release_words.h"

enum { ER_MAX_READERS = 4 };
/* How long a writer watches its reader's heartbeat before it writes: far
 * longer than a beat (a bus round trip on CUDA, 100 us on the host). */
#define ER_WATCH_US 5000
/* Beats that may land during the watch from a reader already stopped (its
 * last records still in flight on the bus). */
#define ER_STALE_BEATS 2

typedef struct er_backend {
  const char *name;       /* WEFT_GPU_BACKEND */
  const char *log_needle; /* what the log line of the device error names */
  void *(*alloc)(size_t bytes); /* zeroed memory the host and device work reach */
  void (*free)(void *p);
  /* Enqueue a reader of r on stream: it reads until r->stop or a few
   * seconds pass, unless the device error ends it first. 0 or an error. */
  int (*read)(void *stream, er_reader *r);
  /* The same reader, reading until r->stop however long that takes (the
   * watchdog's scenarios, watchdog.h: the test ends it), or, should the
   * test never stop it, for TU_DEADLINE_S. 0 or an error. */
  int (*hold)(void *stream, er_reader *r);
  /* Enqueue work on stream that sets t->ran, then fails the device. */
  int (*trap)(void *stream, er_trap *t);
  /* NULL, or makes the first read and trap launch no different from the
   * others, before any of them (CUDA: loads the kernels, which lazy module
   * loading would do at the first launch, waiting for the readers). 0 or
   * an error. */
  int (*load)(void);
} er_backend;

typedef enum { ER_SPREAD, ER_ONE_STREAM } er_layout;

typedef struct er_shared {
  er_reader r[ER_MAX_READERS];
  er_trap trap;
} er_shared;

typedef struct er_buf {
  const er_backend *be;
  er_reader *r;
  void *_Atomic stream; /* where its reader's fn ran */
  atomic_int reads;     /* its reader's fn ran */
  atomic_int launched;  /* its reader's fn returned */
  atomic_int writes;    /* its writer ran */
  atomic_ullong alive;  /* beats its reader made while the writer watched */
  atomic_int saw;       /* the canary the writer found (before writing) */
} er_buf;

typedef struct er_fail {
  const er_backend *be;
  er_trap *t;
  void *_Atomic stream;
  atomic_int runs;
} er_fail;

static int er_read_fn(const weft_run_ctx *rc, void *arg)
{
  er_buf *b = arg;
  atomic_store(&b->stream, rc->stream);
  atomic_fetch_add(&b->reads, 1);
  int err = b->be->read(rc->stream, b->r);
  TU_CHECK(err == 0, "%s: launching a reader failed: %d", b->be->name, err);
  atomic_store(&b->launched, 1);
  return err ? WEFT_EDEVICE : 0;
}

static int er_trap_fn(const weft_run_ctx *rc, void *arg)
{
  er_fail *f = arg;
  atomic_store(&f->stream, rc->stream);
  atomic_fetch_add(&f->runs, 1);
  int err = f->be->trap(rc->stream, f->t);
  TU_CHECK(err == 0, "%s: launching the failing work failed: %d", f->be->name, err);
  return err ? WEFT_EDEVICE : 0;
}

/* The CPU writer: is the reader still beating? Then overwrite the buffer. */
static int er_write_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  er_buf *b = arg;
  unsigned long long before = atomic_load(&b->r->beats);
  tu_sleep_us(ER_WATCH_US);
  atomic_store(&b->alive, atomic_load(&b->r->beats) - before);
  atomic_store(&b->saw, atomic_load(&b->r->canary));
  atomic_store(&b->r->canary, ER_OVERWRITTEN);
  atomic_fetch_add(&b->writes, 1);
  return 0;
}

static int er_count_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

static int er_push(weft_engine *e, weft_op_fn fn, void *arg, bool gpu, weft_var *const *r,
                   size_t nr, weft_var *const *w, size_t nw)
{
  weft_op_desc d = te_desc(fn, arg);
  if (gpu)
    d.ctx.type = WEFT_DEV_GPU; /* device 0 */
  d.reads = r;
  d.num_reads = nr;
  d.writes = w;
  d.num_writes = nw;
  return weft_push(e, &d);
}

/* Whether the readers that should be reading when the device fails are:
 * every reader's fn returned, and the running ones' kernels started. */
static bool er_reading(er_buf *b, int n, er_layout layout)
{
  for (int i = 0; i < n; i++)
    if (!atomic_load(&b[i].launched) ||
        ((layout == ER_SPREAD || i == 0) && !atomic_load(&b[i].r->started)))
      return false;
  return true;
}

/* What a run saw, for the test's own verdict (er_run also checks every
 * point of the contract above as it goes). */
typedef struct er_result {
  int readers;     /* readers whose buffer's writer ran */
  int early;       /* buffers released early */
  int wait_all_rc; /* weft_wait_all's first result */
} er_result;

static er_result er_run(const er_backend *be, int n, er_layout layout)
{
  cr_assert(n >= 1 && n <= ER_MAX_READERS);
  char workers[16];
  snprintf(workers, sizeof workers, "%d", layout == ER_SPREAD ? n + 1 : 2);
  setenv("WEFT_GPU_BACKEND", be->name, 1);
  setenv("WEFT_GPU_WORKERS", workers, 1);
  const char *mode = getenv("WEFT_GPU_COMPLETION");
  cr_log_info("early release on %s: %d reader(s), %s, WEFT_GPU_WORKERS=%s, "
              "WEFT_GPU_COMPLETION=%s",
              be->name, n, layout == ER_SPREAD ? "a stream each" : "all on one stream", workers,
              mode ? mode : "(default)");
  te t = te_new(NULL, 2, 0);
  if (weft_gpu_count(t.eng) < 1) {
    cr_assert_eq(te_free(&t), 0);
    cr_skip_test("no %s device", be->name);
  }
  if (be->load) {
    int err = be->load();
    cr_assert_eq(err, 0, "%s: loading the readers' and the trap's kernels failed: %d", be->name,
                 err);
  }
  er_shared *sh = be->alloc(sizeof *sh);
  cr_assert_not_null(sh, "%s: could not allocate the words the device work shares", be->name);
  er_buf b[ER_MAX_READERS];
  er_fail fail;
  memset(&fail, 0, sizeof fail);
  fail.be = be;
  fail.t = &sh->trap;
  atomic_init(&fail.stream, NULL);
  atomic_init(&fail.runs, 0);
  atomic_int skipped_runs, late_runs;
  atomic_init(&skipped_runs, 0);
  atomic_init(&late_runs, 0);
  weft_var *buf[ER_MAX_READERS], *a = te_var(t.eng), *f = te_var(t.eng), *after = te_var(t.eng),
                                 *late = te_var(t.eng);
  for (int i = 0; i < n; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].be = be;
    b[i].r = &sh->r[i];
    atomic_init(&b[i].stream, NULL);
    atomic_init(&b[i].reads, 0);
    atomic_init(&b[i].launched, 0);
    atomic_init(&b[i].writes, 0);
    atomic_init(&b[i].alive, 0);
    atomic_init(&b[i].saw, -1);
    atomic_store(&sh->r[i].canary, ER_CANARY);
    buf[i] = te_var(t.eng);
  }

  tu_capture cap;
  char errlog[8192];
  tu_capture_begin(&cap);
  for (int i = 0; i < n; i++) {
    int rc;
    if (layout == ER_SPREAD)
      rc = er_push(t.eng, er_read_fn, &b[i], true, TE_V(buf[i]), TE_NONE);
    else /* each writes the anchor: a chain, each behind the one before */
      rc = er_push(t.eng, er_read_fn, &b[i], true, TE_V(buf[i]), TE_V(a));
    TU_CHECK(rc == 0, "push reader %d = %d", i, rc);
  }
  bool reading = TU_WAIT_UNTIL(er_reading(b, n, layout), TU_DEADLINE_S);
  /* The device fails while they read; the writers, the failing op's reader. */
  TU_CHECK(er_push(t.eng, er_trap_fn, &fail, true, TE_NONE, TE_V(f)) == 0, "push the failing op");
  for (int i = 0; i < n; i++)
    TU_CHECK(er_push(t.eng, er_write_fn, &b[i], false, TE_NONE, TE_V(buf[i])) == 0,
             "push writer %d", i);
  TU_CHECK(er_push(t.eng, er_count_fn, &skipped_runs, false, TE_V(f), TE_V(after)) == 0,
           "push the failing op's reader");
  int rc_f = weft_var_wait(t.eng, f), rc_buf[ER_MAX_READERS];
  for (int i = 0; i < n; i++)
    rc_buf[i] = weft_var_wait(t.eng, buf[i]);
  int rc_after = weft_var_wait(t.eng, after);
  /* The device failed (its failure was seen: rc_f): later work fails. */
  TU_CHECK(er_push(t.eng, er_count_fn, &late_runs, true, TE_NONE, TE_V(late)) == 0,
           "push a GPU op after the failure");
  int rc_late = weft_var_wait(t.eng, late);
  int rc_a = layout == ER_ONE_STREAM ? weft_var_wait(t.eng, a) : 0;
  int rc_all = weft_wait_all(t.eng), rc_all2 = weft_wait_all(t.eng);
  for (int i = 0; i < n; i++) /* a reader the failure did not stop (see the log) */
    atomic_store(&sh->r[i].stop, 1);
  double t0 = tu_now();
  int rc_free = te_free(&t);
  double teardown = tu_now() - t0;
  tu_capture_end(&cap, errlog, sizeof errlog);

  /* What happened, for the report (criterion --verbose). */
  int early = 0;
  char why[1024] = "";
  for (int i = 0; i < n; i++) {
    er_reader *r = &sh->r[i];
    unsigned long long alive = atomic_load(&b[i].alive);
    int bad = atomic_load(&r->bad);
    cr_log_info("reader %d: stream %p, %s, %llu reads, %d saw the overwrite (first at read "
                "%llu); its writer watched %llu beats, found canary %d; buffer var %d",
                i, atomic_load(&b[i].stream),
                !atomic_load(&r->started)    ? "never started"
                : atomic_load(&r->finished) ? "finished (its time was up, or stopped at teardown)"
                                             : "stopped by the device error",
                (unsigned long long)atomic_load(&r->beats), bad,
                (unsigned long long)atomic_load(&r->first_bad), alive, atomic_load(&b[i].saw),
                rc_buf[i]);
    if (bad || alive > ER_STALE_BEATS) {
      early++;
      size_t k = strlen(why);
      snprintf(why + k, sizeof why - k, " buffer %d (%d reads of the overwrite, %llu beats "
               "during the writer's watch);", i, bad, alive);
    }
  }
  cr_log_info("failing op: stream %p, its work %s; engine destroy took %.3f s; log:\n%s",
              atomic_load(&fail.stream), atomic_load(&sh->trap.ran) ? "ran" : "never ran",
              teardown, errlog);

  cr_assert(reading, "the readers were not all reading within %.0f s (launched, started)",
            TU_DEADLINE_S);
  cr_assert_eq(early, 0,
               "%d of %d buffers released early: a CPU writer ran while its reader, on another "
               "stream of the failed device, could still read:%s",
               early, n, why);
  /* Placement: the premise of the scenario. */
  void *fs = atomic_load(&fail.stream);
  for (int i = 0; i < n; i++) {
    void *s = atomic_load(&b[i].stream);
    cr_assert(s && s != fs, "reader %d ran on the failing op's stream (%p): placement changed "
              "(choose_lane), the scenario no longer tests early release", i, s);
    for (int k = 0; k < i; k++)
      cr_assert(layout == ER_SPREAD ? s != atomic_load(&b[k].stream)
                                    : s == atomic_load(&b[k].stream),
                "readers %d and %d: %s (placement changed: choose_lane)", k, i,
                layout == ER_SPREAD ? "one stream, expected a stream each"
                                    : "two streams, expected one");
  }
  /* Every operator accounted for. */
  for (int i = 0; i < n; i++) {
    cr_assert_eq(atomic_load(&b[i].reads), 1, "reader %d's fn ran %d times", i,
                 atomic_load(&b[i].reads));
    cr_assert_eq(atomic_load(&b[i].writes), 1, "writer %d ran %d times", i,
                 atomic_load(&b[i].writes));
    cr_assert_eq(rc_buf[i], 0, "buffer %d (its writer's var) = %d (%s)", i, rc_buf[i],
                 weft_strerror(rc_buf[i]));
  }
  cr_assert_eq(atomic_load(&fail.runs), 1, "the failing op's fn ran %d times",
               atomic_load(&fail.runs));
  cr_assert(atomic_load(&sh->trap.ran), "the failing work never ran on the device");
  cr_assert_eq(atomic_load(&skipped_runs), 0, "the failing op's CPU reader ran");
  cr_assert_eq(atomic_load(&late_runs), 0, "a GPU op ran on the failed device");
  cr_assert_eq(rc_f, WEFT_EDEVICE, "the failing op's var = %d (%s)", rc_f, weft_strerror(rc_f));
  cr_assert_eq(rc_after, WEFT_EDEVICE, "its reader's var = %d (%s)", rc_after,
               weft_strerror(rc_after));
  cr_assert_eq(rc_late, WEFT_EDEVICE, "the later GPU op's var = %d (%s)", rc_late,
               weft_strerror(rc_late));
  cr_assert(rc_a == 0 || rc_a == WEFT_EDEVICE, "the anchor reader's var = %d (%s)", rc_a,
            weft_strerror(rc_a));
  cr_assert_eq(rc_all, WEFT_EDEVICE, "weft_wait_all = %d (%s)", rc_all, weft_strerror(rc_all));
  cr_assert_eq(rc_all2, 0, "the failure was reported twice (second weft_wait_all = %d)", rc_all2);
  cr_assert_eq(rc_free, 0, "weft_engine_destroy = %d (%s)", rc_free, weft_strerror(rc_free));
  cr_assert(tu_line_has_all(errlog, "weft: ", be->log_needle, NULL),
            "no \"weft: \" log line naming the device error (%s): \"%s\"", be->log_needle,
            errlog);
  tu_assert_no_errors();
  be->free(sh);
  er_result res = {0, early, rc_all};
  for (int i = 0; i < n; i++)
    res.readers += atomic_load(&b[i].writes) == 1;
  return res;
}

#endif /* WEFT_TESTS_GPU_EARLY_RELEASE_H */
