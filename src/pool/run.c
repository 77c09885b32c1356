/*
 * Running one task record. The record is freed before its function runs, so
 * that what the function spawns reuses it hot; an embedded record (the
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

/* weft_run_task's tail with profiling on: a "task" or "pfor" span on pt,
 * which is the thread's current track meanwhile (operators record on it). */
static void run_task_profiled(weft_worker *w, weft_prof_track *pt, int (*fn)(void *), void *arg,
                              size_t lo, size_t hi, weft_group_impl *g, int mode)
{
  weft_prof_track *prev = weft_prof_tls;
  weft_prof_tls = pt;
  int64_t t0 = weft_prof_now();
  int rc = fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  weft_prof_span_builtin(pt, fn ? WEFT_PROF_TASK : WEFT_PROF_PFOR, t0, weft_prof_now());
  weft_prof_tls = prev;
  if (mode == WEFT_TASK_ARG_HEAP)
    weft_free(arg);
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    weft_stat_inc(&w->tasks_run);
}

/* weft_run_task once the record's fields are read (and it is freed): runs
 * fn (or the piece) and counts it. heap: arg is a copy of weft_*_arg's,
 * freed once fn returned. */
static inline __attribute__((always_inline)) void
run_body(weft_pool *pool, weft_worker *w, int (*fn)(void *), void *arg, size_t lo, size_t hi,
         weft_group_impl *g, bool heap)
{
  /* Profiling off: w->prof and pool->prof are NULL, one branch. */
  weft_prof_track *pt = w    ? w->prof
                        : pool->prof ? weft_prof_thread_track(pool->prof, "weft caller")
                                     : NULL;
  task_depth++;
  if (pt) {
    run_task_profiled(w, pt, fn, arg, lo, hi, g, heap ? WEFT_TASK_ARG_HEAP : WEFT_TASK_ARG_PTR);
    task_depth--;
    return;
  }
  int rc = fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  task_depth--;
  if (heap)
    weft_free(arg);
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    weft_stat_inc(&w->tasks_run);
}

/* A task whose argument is stored with it (weft_*_arg: never a piece, never
 * embedded). Its bytes move to this frame with the three words read: fn
 * gets the copy's copy, valid until it returns, so that the record can
 * still be freed first. Out of line: the common path reads one byte more. */
static __attribute__((noinline)) void run_task_arg(weft_pool *pool, weft_worker *w, weft_task *t)
{
  WEFT_ASSERT(t->fn && !t->embedded);
  union {
    _Alignas(WEFT_ARG_ALIGN) unsigned char bytes[WEFT_TASK_ARG_INLINE];
    struct {
      void *arg;
      size_t lo, hi;
    } words;
  } copy;
  int (*fn)(void *) = t->fn;
  weft_group_impl *g = t->group;
  bool heap = t->argmode == WEFT_TASK_ARG_HEAP;
  void *arg = t->arg;
  if (!heap) {
    copy.words.arg = t->arg;
    copy.words.lo = t->lo;
    copy.words.hi = t->hi;
    arg = copy.bytes;
  }
  weft_task_free(&pool->tasks, w ? &w->tasks : NULL, t);
  run_body(pool, w, fn, arg, 0, 0, g, heap);
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
    weft_task_free(&pool->tasks, w ? &w->tasks : NULL, t);
  run_body(pool, w, fn, arg, lo, hi, g, false);
}
