/* SPDX-License-Identifier: MIT */
/*
 * Running one task record. The record is freed before its function runs, so
 * that what the function spawns reuses it hot; an argument stored in it
 * (weft_*_arg) is handed to the function from the running frame. An
 * embedded record (the engine's operators) belongs to its owner and is
 * never freed here.
 */
#include "pool/run.h"

#include <string.h>

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

/* weft_run_task once the record's fields are read (and the record freed):
 * runs fn (or the piece) and counts it. */
static inline __attribute__((always_inline)) void
run_body(weft_pool *pool, weft_worker *w, int (*fn)(void *), void *arg, size_t lo, size_t hi,
         weft_group_impl *g)
{
  /* Profiling off: w->prof and pool->prof are NULL, one branch. */
  weft_prof_track *pt = w    ? w->prof
                        : pool->prof ? weft_prof_thread_track(pool->prof, "weft caller")
                                     : NULL;
  task_depth++;
  int rc = pt ? run_profiled(pt, fn, arg, lo, hi) : fn ? fn(arg) : weft_pfor_piece(arg, lo, hi);
  task_depth--;
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    weft_stat_inc(&w->tasks_run);
}

/* A task whose argument is a heap copy of weft_*_arg's, freed once fn
 * returned (before the group hears of it: its waiter may be the copy's
 * last user). Out of line: rare, and the common path stays short. */
static __attribute__((noinline)) void run_task_heap(weft_pool *pool, weft_worker *w,
                                                    weft_task *t)
{
  int (*fn)(void *) = t->fn;
  void *heap = t->arg;
  weft_group_impl *g = t->group;
  WEFT_ASSERT(fn && !t->embedded);
  weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
  weft_prof_track *pt = w    ? w->prof
                        : pool->prof ? weft_prof_thread_track(pool->prof, "weft caller")
                                     : NULL;
  task_depth++;
  int rc = pt ? run_profiled(pt, fn, heap, 0, 0) : fn(heap);
  task_depth--;
  weft_free(heap);
  if (g)
    weft_group_task_done(g, w, rc);
  if (w)
    weft_stat_inc(&w->tasks_run);
}

void weft_run_task(weft_pool *pool, weft_worker *w, weft_task *t)
{
  int (*fn)(void *) = t->fn;
  void *arg = t->arg;
  size_t lo = t->lo, hi = t->hi;
  weft_group_impl *g = t->group;
  /* A stored argument (weft_*_arg: never a piece, never embedded) in the
   * record: its bytes are the words just read (argbytes overlays arg, lo
   * and hi), and fn gets them in this frame, so that the record is free to
   * go first like any other. */
  size_t bytes[WEFT_TASK_ARG_INLINE / sizeof(size_t)];
  _Static_assert(sizeof bytes == WEFT_TASK_ARG_INLINE && _Alignof(size_t) >= WEFT_ARG_ALIGN,
                 "the frame's copy holds a record's inline argument, aligned as weft.h says");
  if (__builtin_expect(t->argmode != WEFT_TASK_ARG_PTR, 0)) {
    if (t->argmode != WEFT_TASK_ARG_BYTES) {
      run_task_heap(pool, w, t);
      return;
    }
    WEFT_ASSERT(fn && !t->embedded);
    memcpy(bytes, t->argbytes, sizeof bytes);
    arg = bytes;
  }
  /* An embedded record is a plain submission (weft_pool_submit_embedded). */
  WEFT_ASSERT(!t->embedded || !g);
  /* Free first: the record is reused hot by whatever fn spawns. An
   * embedded record belongs to fn's argument, which fn may free. */
  if (!t->embedded)
    weft_task_free(&pool->tasks, weft_task_cache_of(pool, w), t);
  run_body(pool, w, fn, arg, lo, hi, g);
}
