/* SPDX-License-Identifier: MIT */
/*
 * Waiting by helping (help.h): a wait inside the pool's work runs other
 * work meanwhile; pacing; helping at max_inflight, with a bounded depth.
 */
#include <time.h>

#include "common/assert.h"
#include "common/sync.h"
#include "deps/dispatch.h"
#include "deps/help.h"
#include "deps/inflight.h"
#include "pool/pool_ext.h"

void weft_engine_wait(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg), void *arg)
{
  weft_engine_wait_sliced(eng, pred, arg, -1);
}

void weft_engine_wait_sliced(weft_engine *eng, bool (*pred)(weft_engine *eng, void *arg),
                             void *arg, int64_t slice_ns)
{
  /* Inside the pool's work (an operator, a task) a wait helps run work; a
   * thread outside sleeps until a completion wakes it. */
  bool help = weft_pool_worker_index(eng->pool) >= 0 || weft_pool_in_task(eng->pool);
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  for (;;) {
    if (pred(eng, arg))
      return;
    if (weft_opr_run_inline_one()) /* queued behind the op that waits */
      continue;
    if (help && weft_pool_help_one(eng->pool)) {
      sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
      continue;
    }
    weft_engine_sync *sy = eng->sync;
    /* seq_cst: announce, then re-check; pairs with weft_engine_sync_notify. */
    atomic_fetch_add_explicit(&sy->waiters, 1, memory_order_seq_cst);
    /* acquire: pairs with the release bump in weft_engine_sync_notify. */
    uint32_t seq = atomic_load_explicit(&sy->idle_seq, memory_order_acquire);
    if (!pred(eng, arg))
      weft_futex_wait(&sy->idle_seq, seq, help ? sleep_ns : slice_ns);
    atomic_fetch_sub_explicit(&sy->waiters, 1, memory_order_relaxed);
    if (sleep_ns < WEFT_HELP_SLEEP_MAX_NS)
      sleep_ns *= 2;
  }
}

/* Whether this thread is pacing: an operator it runs meanwhile (helping)
 * pushes on without pacing, so helping never nests. */
static _Thread_local bool pacing __attribute__((tls_model("initial-exec")));

void weft_engine_pace(weft_engine *eng)
{
  if (pacing)
    return;
  uint64_t mark = weft_pool_num_threads(eng->pool) == 1 ? WEFT_PACE_OPS_ALONE : WEFT_PACE_OPS;
  uint64_t left = weft_engine_backlog(eng);
  if (left <= mark)
    return;
  pacing = true;
  /* Progress is a new low: finishes alone could be other pushers' work
   * while what is left waits for the calling operator (its own vars). The
   * clock is read only while there is none (stalled_at: since when; 0:
   * progress at the last look), not once per operator helped. */
  uint64_t low = left;
  int64_t stalled_at = 0;
  while ((left = weft_engine_backlog(eng)) > mark / 2) {
    if (left < low) {
      low = left;
      stalled_at = 0;
    } else {
      int64_t now = weft_now_ns();
      if (!stalled_at)
        stalled_at = now;
      else if (now - stalled_at > WEFT_PACE_STALL_NS)
        break; /* no progress: push on */
    }
    /* The backlog reads every tally (two lines a worker): it is read again
     * only after up to WEFT_PACE_HELP_BATCH helps, and never after more
     * helps than the count stood above the goal (a help that runs an
     * operator finishes at least one, so the backlog stays near the goal;
     * one that finds nothing pauses and looks again). */
    uint64_t helps = left - mark / 2;
    if (helps > WEFT_PACE_HELP_BATCH)
      helps = WEFT_PACE_HELP_BATCH;
    for (uint64_t h = 0; h < helps; h++)
      if (!weft_opr_run_inline_one() && !weft_pool_help_one(eng->pool)) {
        for (int i = 0; i < 32; i++)
          weft_cpu_pause();
        break; /* nothing to help with: look at the count again */
      }
  }
  pacing = false;
}

/* A thread outside the pool that paced and found no progress: it paces
 * again only once the backlog passes this mark (WEFT_PACE_OUTSIDE_OPS
 * beyond what was left then), so ops that wait for this very thread cost
 * it one stall per WEFT_PACE_OUTSIDE_OPS pushes, not one per check. */
static _Thread_local uint64_t outside_resume_above __attribute__((tls_model("initial-exec")));

/* Several users' threads pushing at once (a data loader, a second model, a
 * serving front end) share the backlog they see: each may keep the pace
 * ahead for itself, so the mark is the pace times the threads that own a
 * tally of the engine's (inflight.h); and while the others push, the
 * backlog need not reach a new low for the workers to be making progress,
 * so any finish is progress too (the longest wait still counts from the
 * last new low: what is left may wait for this very thread while the
 * others' operators keep finishing). With one mark for all and new lows
 * alone, each slept as soon as all together had the pace out, took the
 * others' pushes for a stall and pushed on, in turn: 3 pushers on 2
 * workers had 78000-107000 pushed and not run at once, against 4096 for
 * one (tests/deps/test_engine_pace.c; about 12500 now). */
void weft_engine_pace_outside(weft_engine *eng)
{
  uint64_t left = weft_engine_backlog(eng);
  uint64_t mark = (uint64_t)WEFT_PACE_OUTSIDE_OPS * (uint64_t)weft_engine_outside_pushers(eng);
  if (left <= mark) {
    outside_resume_above = 0;
    return;
  }
  if (left <= outside_resume_above)
    return;
  uint64_t low = left;
  int64_t low_at = weft_now_ns();
  uint64_t fin = weft_engine_finished(eng);
  int64_t moved_at = low_at;
  int64_t cpu_at = -1; /* the workers' CPU time once a stall was suspected; -1: not yet */
  while (left > mark / 2) {
    /* Sleep, not spin: the CPU is the workers' meanwhile (a user's thread
     * pushing shares the cores with them). */
    struct timespec ts = {0, WEFT_PACE_OUTSIDE_SLEEP_NS};
    nanosleep(&ts, NULL);
    left = weft_engine_backlog(eng);
    int64_t now = weft_now_ns();
    if (left < low) {
      low = left;
      low_at = moved_at = now;
      cpu_at = -1;
      continue;
    }
    uint64_t f = weft_engine_finished(eng);
    if (f != fin) {
      fin = f;
      moved_at = now;
      cpu_at = -1;
    }
    if (now - moved_at < WEFT_PACE_OUTSIDE_STALL_NS && now - low_at < WEFT_PACE_OUTSIDE_STALL_MAX_NS)
      continue;
    /* No progress for a while. Nothing ready queued in the pool: what is
     * left waits for operators that have not finished, maybe for this very
     * thread; push on. Ready work queued: the workers are slow or held.
     * Slow (descheduled on a loaded machine) is no reason to push on; held
     * is, once they have run long enough to tell (an operator holding the
     * only worker until this thread goes on would wait forever), or once
     * the longest wait passes whatever they did. */
    bool stalled = !weft_pool_any_work(eng->pool) || now - low_at >= WEFT_PACE_OUTSIDE_STALL_MAX_NS;
    if (!stalled) {
      int64_t cpu = weft_pool_workers_cpu_ns(eng->pool);
      if (cpu_at < 0)
        cpu_at = cpu;
      stalled = cpu - cpu_at >= WEFT_PACE_OUTSIDE_STALL_CPU_NS;
    }
    if (stalled) {
      outside_resume_above = left + WEFT_PACE_OUTSIDE_OPS;
      return;
    }
  }
  outside_resume_above = 0;
}

/* How deep this thread is in weft_engine_help_over_cap: an operator it runs
 * there may push at the cap and help again, and so on down a chain. */
static _Thread_local int help_depth __attribute__((tls_model("initial-exec")));

void weft_engine_help_over_cap(weft_engine *eng)
{
  /* An executor's thread (a GPU op's fn) never helps: it runs device work.
   * Past WEFT_HELP_DEPTH_MAX nested helps the push goes over the cap at
   * once: the stack stays bounded, and the cap is exceeded by at most one
   * operator per level. */
  if (weft_tls_executor || help_depth >= WEFT_HELP_DEPTH_MAX)
    return;
  help_depth++;
  /* seq_cst: pairs with the finishes' decrement of admitted (complete.c). */
  while (atomic_load_explicit(&eng->admitted, memory_order_seq_cst) > eng->max_inflight &&
         (weft_opr_run_inline_one() || weft_pool_help_one(eng->pool))) {
  }
  help_depth--;
  WEFT_ASSERT(help_depth >= 0);
}
