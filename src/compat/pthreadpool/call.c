/* SPDX-License-Identifier: MIT */
/*
 * The call path: check the arguments, run serially where the pool would
 * not help (one thread, one tile, a call from inside a call), else share
 * the tiles among the caller and the pool's workers (pool.h).
 */
#include "compat/pthreadpool/pool.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "compat/pthreadpool/abi.h"
#include "compat/pthreadpool/crew.h"
#include "compat/pthreadpool/fpu.h"

/* The pool whose call's tiles the calling thread runs (caller and workers
 * alike); a call on that same pool from inside them runs serially. */
static _Thread_local const struct pthreadpool *tls_inside;

/* A parallel call, on the caller's stack while it runs: the items
 * [base, base + count) of the grid (a call of more than PTP_SEGMENT items
 * runs as several: a slot counts in 32 bits). */
typedef struct ptp_call {
  const ptp_grid *grid;
  struct pthreadpool *tp;
  size_t base;
  size_t members; /* slots in use: min(threads, items) */
} ptp_call;

#define PTP_SEGMENT ((size_t)1 << 31)

static uint64_t pack(uint32_t lo, uint32_t hi)
{
  return (uint64_t)hi << 32 | lo;
}

/* Takes the upper half of v's unclaimed items (the last one too) with one
 * CAS of hi; fails (false) when v has none. */
static bool steal_half(ptp_slot *v, uint32_t *from, uint32_t *to)
{
  /* relaxed: as the claims (grid.c). */
  uint64_t r = atomic_load_explicit(&v->range, memory_order_relaxed);
  for (;;) {
    uint32_t lo = (uint32_t)r, hi = (uint32_t)(r >> 32);
    if (lo >= hi)
      return false;
    uint32_t mid = lo + (hi - lo) / 2;
    if (atomic_compare_exchange_weak_explicit(&v->range, &r, pack(lo, mid), memory_order_relaxed,
                                              memory_order_relaxed)) {
      *from = mid;
      *to = hi;
      return true;
    }
  }
}

/* A member's work: its own slot from the front, then halves of the
 * others' from the back, each moved into its own slot first, so that
 * they stay open to thieves while it runs them: an item that waits for
 * the others holds only itself. */
static void member_items(const ptp_call *c, size_t id)
{
  ptp_slot *slots = c->tp->slots;
  ptp_slot *own = &slots[id];
  const size_t n = c->tp->threads;
  for (;;) {
    /* The kind's loop claims and runs the slot's tiles. */
    c->grid->kind->slot(c->grid, own, c->base);
    uint32_t from = 0, to = 0;
    bool got = false;
    for (size_t k = 1; k < n && !got; k++)
      got = steal_half(&slots[(id + k) % n], &from, &to);
    if (!got)
      return;
    /* relaxed: only this member claims from the front of its slot; a thief
     * that read its old (empty) value does not CAS it. */
    atomic_store_explicit(&own->range, pack(from, to), memory_order_relaxed);
  }
}

/* Runs member `id` of the call on this thread. */
static void run_member(const ptp_call *c, size_t id)
{
  const struct pthreadpool *prev = tls_inside;
  tls_inside = c->tp;
  int flush = (c->grid->flags & PTHREADPOOL_FLAG_DISABLE_DENORMALS) != 0;
  ptp_fpu_state fpu = ptp_fpu_enter(flush);
  member_items(c, id);
  ptp_fpu_leave(flush, fpu);
  tls_inside = prev;
}

/* Whether this thread runs on the CPU the caller last opened a call from.
 * A worker woken for a call is often put on the waker's CPU (the caller's,
 * busy with the call), and a busy machine can put the two together at any
 * time: they then share one CPU, and the call's halves run one after the
 * other, until the scheduler balances them, milliseconds later. */
static bool on_caller_cpu(struct pthreadpool *tp)
{
  int cpu = sched_getcpu();
  /* relaxed: a hint (run_segment). */
  return cpu >= 0 && cpu == atomic_load_explicit(&tp->caller_cpu, memory_order_relaxed);
}

/* On the caller's CPU: moves this member off it (ptp_move_off_cpu), at most
 * once every PTP_MOVE_GAP_NS a pool (three system calls; where the
 * scheduler keeps putting the two together, the member yields in between,
 * in linger). Returns whether it moved. */
static bool move_off_callers_cpu(struct pthreadpool *tp)
{
  if (tp->oversubscribed || !on_caller_cpu(tp))
    return false;
  int64_t now = ptp_now_ns();
  /* relaxed: a rate limit among the members. */
  int64_t prev = atomic_load_explicit(&tp->moved_ns, memory_order_relaxed);
  if (now - prev < PTP_MOVE_GAP_NS ||
      !atomic_compare_exchange_strong_explicit(&tp->moved_ns, &prev, now, memory_order_relaxed,
                                               memory_order_relaxed))
    return false;
  return ptp_move_off_cpu(sched_getcpu());
}

/* After serving a call, a member lingers a while for the next one, as
 * pthreadpool's workers do: a new call then finds it joining within
 * nanoseconds, where a task submitted anew waits for an idle worker's next
 * sweep (a microsecond or more). Returns true when a call newer than
 * `served` is open, false after PTP_LINGER_NS spent spinning once that
 * call closed (PTP_LINGER_OPEN_NS while it is still open), or when asked
 * to stop (the task then ends, and the worker idles as weft's workers do). */
static bool linger(struct pthreadpool *tp, uint32_t served)
{
  atomic_fetch_add_explicit(&tp->lingering, 1, memory_order_relaxed); /* relaxed: a count */
  int64_t left = PTP_LINGER_NS, open_left = PTP_LINGER_OPEN_NS, last = ptp_now_ns();
  bool found = false;
  for (unsigned spins = 1;; spins++) {
    /* relaxed: hints; the join's CAS (acquire) is what counts. */
    if (atomic_load_explicit(&tp->linger_off, memory_order_relaxed))
      break;
    bool open = !(atomic_load_explicit(&tp->crew, memory_order_relaxed) & PTP_CREW_CLOSED);
    if (open && atomic_load_explicit(&tp->gen, memory_order_relaxed) != served) {
      found = true;
      break;
    }
    ptp_cpu_relax();
    if ((spins & 255) == 0) {
      /* The time lingered is the time spent spinning: a gap between two
       * looks at the clock longer than PTP_LINGER_GAP_NS is time the member
       * was not running (preempted, or yielding to others), and does not
       * count. Nor, up to PTP_LINGER_OPEN_NS, does the time the call it
       * served is still open: the caller is finishing its last items (or
       * was preempted in one), and the next call comes after. On a machine
       * busy with other work the member thus still lingers when the caller
       * runs again, where a deadline on the clock would have sent it to
       * park while one of the two waited for a CPU. */
      int64_t now = ptp_now_ns(), d = now - last;
      last = now;
      if (d < PTP_LINGER_GAP_NS && ((open ? (open_left -= d) : (left -= d)) <= 0))
        break;
      /* The pool has more threads than the process's CPUs: yield, lest the
       * spin keep the caller (or another member) off its CPU. Else, on the
       * CPU the caller last opened a call from (see on_caller_cpu): move
       * off it, or yield. Not otherwise: on a machine busy with other work
       * a yield can cost the member a whole scheduler tick, and the next
       * call its help. */
      if (tp->oversubscribed || (on_caller_cpu(tp) && !move_off_callers_cpu(tp)))
        sched_yield();
    }
  }
  atomic_fetch_sub_explicit(&tp->lingering, 1, memory_order_relaxed);
  return found;
}

/* Whether some slot still holds an unclaimed item: a hint (the slots of
 * the call the caller last opened, or of one that just closed). */
static bool slots_have_items(const struct pthreadpool *tp)
{
  for (size_t m = 0; m < tp->threads; m++) {
    /* relaxed: a hint; the join's CAS (acquire) is what counts. */
    uint64_t r = atomic_load_explicit(&tp->slots[m].range, memory_order_relaxed);
    if ((uint32_t)r < (uint32_t)(r >> 32))
      return true;
  }
  return false;
}

/* A weft task: joins the pool's call under way, if any, as a member, then
 * lingers for the next. A member beyond the pool's slots (late tasks of an
 * earlier call may join too) has nothing to add and leaves at once. */
static int member_task(void *arg)
{
  struct pthreadpool *tp = arg;
  atomic_fetch_sub_explicit(&tp->queued, 1, memory_order_relaxed); /* relaxed: a count */
  uint32_t served = UINT32_MAX;
  do {
    /* A call whose items are all claimed already (a short one, that the
     * caller and the others ran before this member came): not joined, for
     * the caller would wait for this member to leave it, for nothing. gen
     * read first: a call opened since is found by the linger. */
    /* acquire: the slots the caller filled before the open seen (x86 loads
     * are so anyway). */
    atomic_thread_fence(memory_order_acquire);
    uint32_t gen = atomic_load_explicit(&tp->gen, memory_order_relaxed);
    if (!slots_have_items(tp)) {
      served = gen;
      continue;
    }
    /* About to take part on the caller's CPU (where a worker woken for the
     * call is often put): to another first. */
    (void)move_off_callers_cpu(tp);
    unsigned id = ptp_crew_join(tp);
    if (!id)
      continue;
    /* relaxed: written before the open the join acquired. */
    served = atomic_load_explicit(&tp->gen, memory_order_relaxed);
    if (id < tp->threads)
      run_member(tp->call, id);
    ptp_crew_leave(tp);
  } while (linger(tp, served));
  return 0;
}

/* Items [base, base + count) on the pool's threads: slots filled (an even
 * share for each of the first `members`, the others empty), the crew
 * opened, member tasks submitted (as many as the call can use beyond those
 * still queued), the caller's own share run, then the crew closed and its
 * members waited for. Returns 0, or weft_pool_submit's error (the items
 * all ran all the same: the members take what a missing one leaves). */
static int run_segment(struct pthreadpool *tp, const ptp_grid *g, size_t base, size_t count)
{
  ptp_call c = {g, tp, base, tp->threads < count ? tp->threads : count};
  for (size_t m = 0; m < tp->threads; m++) {
    uint32_t lo = m < c.members ? (uint32_t)(count * m / c.members) : 0;
    uint32_t hi = m < c.members ? (uint32_t)(count * (m + 1) / c.members) : 0;
    /* relaxed: published by the crew's open (release). */
    atomic_store_explicit(&tp->slots[m].range, pack(lo, hi), memory_order_relaxed);
  }
  tp->call = &c;
  /* relaxed: both published by the open (release). Only the caller writes
   * gen (under call_lock), and linger_off only when it is set: the line is
   * the one the lingering members poll. */
  atomic_store_explicit(&tp->gen, atomic_load_explicit(&tp->gen, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  if (atomic_load_explicit(&tp->linger_off, memory_order_relaxed))
    atomic_store_explicit(&tp->linger_off, false, memory_order_relaxed);
  /* relaxed: a hint for the lingering members (linger). */
  atomic_store_explicit(&tp->caller_cpu, sched_getcpu(), memory_order_relaxed);
  ptp_crew_open(tp);
  int rc = 0;
  /* relaxed: estimates; a member more or less changes only how many help. */
  int want = (int)c.members - 1 - atomic_load_explicit(&tp->queued, memory_order_relaxed) -
             atomic_load_explicit(&tp->lingering, memory_order_relaxed);
  for (int k = 0; k < want && rc == 0; k++) {
    atomic_fetch_add_explicit(&tp->queued, 1, memory_order_relaxed); /* relaxed: a count */
    rc = weft_pool_submit(tp->workers, member_task, tp);
    if (rc)
      atomic_fetch_sub_explicit(&tp->queued, 1, memory_order_relaxed);
  }
  run_member(&c, 0);
  ptp_crew_close_and_wait(tp);
  return rc;
}

static int run_parallel(struct pthreadpool *tp, const ptp_grid *g)
{
  int rc = 0;
  for (size_t base = 0; base < g->total; base += PTP_SEGMENT) {
    size_t left = g->total - base;
    int r = run_segment(tp, g, base, left < PTP_SEGMENT ? left : PTP_SEGMENT);
    if (r && !rc)
      rc = r;
  }
  return rc;
}

static void run_serial(const ptp_grid *g)
{
  int flush = (g->flags & PTHREADPOOL_FLAG_DISABLE_DENORMALS) != 0;
  ptp_fpu_state fpu = ptp_fpu_enter(flush);
  g->kind->tiles(g, 0, g->total);
  ptp_fpu_leave(flush, fpu);
}

static void warn_flags(const char *who, uint32_t flags)
{
  static atomic_int warned;
  /* relaxed: only "once" matters. */
  if (!atomic_exchange_explicit(&warned, 1, memory_order_relaxed))
    ptp_complain(who, "unknown flags 0x%x ignored (known: 0x%x); said once", (unsigned)flags,
                 (unsigned)PTP_KNOWN_FLAGS);
}

void ptp_run(struct pthreadpool *tp, ptp_grid *g, const char *who)
{
  if (!g->fn) {
    ptp_complain(who, "NULL function: nothing run");
    return;
  }
  const char *why = "";
  if (ptp_grid_plan(g, &why)) {
    ptp_complain(who, "%s: nothing run", why);
    return;
  }
  if (g->flags & ~(uint32_t)PTP_KNOWN_FLAGS)
    warn_flags(who, g->flags);
  if (g->total == 0)
    return;
  /* Serially on the caller: no pool, one thread, one tile, or a call from
   * inside this pool's call. The pool is not touched after this test. */
  if (!tp || tp->threads <= 1 || g->total == 1 || tls_inside == tp) {
    run_serial(g);
    return;
  }
  ptp_enter(tp);
  pthread_mutex_lock(&tp->call_lock);
  int rc = run_parallel(tp, g);
  if (g->flags & PTHREADPOOL_FLAG_YIELD_WORKERS) {
    /* relaxed: a request (cleared by the next call's open). */
    atomic_store_explicit(&tp->linger_off, true, memory_order_relaxed);
    weft_pool_park_idle(tp->workers);
  }
  pthread_mutex_unlock(&tp->call_lock);
  /* Every item ran all the same (the members claim what a member that
   * could not be submitted leaves); weft said why on its log. */
  if (rc)
    ptp_complain(who, "weft_pool_submit returned %d: fewer threads took part", rc);
  ptp_leave(tp);
}
