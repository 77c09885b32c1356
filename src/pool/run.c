/*
 * Running one task record. The record is freed before its function runs, so
 * that what the function spawns reuses it hot, unless it holds the
 * function's argument (weft_*_arg): then after; an embedded record (the
 * engine's operators) belongs to its owner and is never freed here.
 */
#include "pool/run.h"

#include "common/alloc.h"
#include "common/assert.h"
#include "pool/group.h"
#include "pool/pool_ext.h"
#include "pool/split.h"

_Thread_local bool weft_tls_in_main_loop WEFT_TLS;
/* Tasks running on this thread, nested ones included (weft_pool_top_task). */
static _Thread_local int task_depth WEFT_TLS;

bool weft_pool_top_task(void)
{
  return weft_tls_in_main_loop && task_depth == 1;
}

/* fn (or the piece) with profiling on: a "task" or "pfor" span on pt,
 * which is the thread's current track meanwhile (operators record on it).
 * Out of line: the common path stays short. */
static __attribute__((noinline)) int run_profiled(weft_prof_track *pt, int (*fn)(void *),
                                                  void *arg, size_t lo, size_t hi)
{
  weft_prof_track *prev = weft_prof_tls;
  weft_prof_tls = pt;
  int64_t t0 = weft_prof_now();
  int rc = fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  weft_prof_span_builtin(pt, fn ? WEFT_PROF_TASK : WEFT_PROF_PFOR, t0, weft_prof_now());
  weft_prof_tls = prev;
  return rc;
}

/* A stored argument's record (and heap copy) once its fn returned. */
static inline void release_stored(weft_pool *pool, weft_worker *w,
                                                     weft_task *t, void *arg)
{
  if (t->argmode == WEFT_TASK_ARG_HEAP)
    weft_free(arg);
  weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
}

/* weft_run_task once the record's fields are read: runs fn (or the piece)
 * and counts it. kept: the record, still ours, when fn's argument lives in
 * it or is a heap copy (weft_*_arg), freed once fn returned; else NULL
 * (the record was freed already). */
static inline __attribute__((always_inline)) void
run_body(weft_pool *pool, weft_worker *w, int (*fn)(void *), void *arg, size_t lo, size_t hi,
         weft_group_impl *g, weft_task *kept)
{
  /* Profiling off: w->prof and pool->prof are NULL, one branch. */
  weft_prof_track *pt = w    ? w->prof
                        : pool->prof ? weft_prof_thread_track(pool->prof, "weft caller")
                                     : NULL;
  task_depth++;
  int rc = pt ? run_profiled(pt, fn, arg, lo, hi) : fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  task_depth--;
  if (kept) /* a stored argument: done with it now */
    release_stored(pool, w, kept, arg);
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    weft_stat_inc(&w->tasks_run);
}

/* A task whose argument is stored with it (weft_*_arg: never a piece,
 * never embedded): fn gets the bytes in the record, which is freed once fn
 * returned. Out of line: the common path reads one byte more. */
static __attribute__((noinline)) void run_task_arg(weft_pool *pool, weft_worker *w, weft_task *t)
{
  WEFT_ASSERT(t->fn && !t->embedded);
  void *arg = t->argmode == WEFT_TASK_ARG_BYTES ? (void *)t->argbytes : t->arg;
  run_body(pool, w, t->fn, arg, 0, 0, t->group, t);
}

void weft_run_task(weft_pool *pool, weft_worker *w, weft_task *t)
{
  if (__builtin_expect(t->argmode != WEFT_TASK_ARG_PTR, 0)) {
    run_task_arg(pool, w, t);
    return;
  }
  int (*fn)(void *) = t->fn;
  void *arg = t->arg;
  size_t lo = t->lo, hi = t->hi;
  weft_group_impl *g = t->group;
  /* An embedded record is a plain submission (weft_pool_submit_embedded). */
  WEFT_ASSERT(!t->embedded || !g);
  /* Free first: the record is reused hot by whatever fn spawns. An
   * embedded record belongs to fn's argument, which fn may free. */
  if (!t->embedded)
    weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
  run_body(pool, w, fn, arg, lo, hi, g, NULL);
}
