/*
 * The call path: check the arguments, run serially where the pool would
 * not help (one thread, one tile, a call from inside a call), else share
 * the tiles among the caller and the pool's workers (pool.h).
 */
#include "compat/pthreadpool/pool.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "compat/pthreadpool/abi.h"
#include "compat/pthreadpool/crew.h"
#include "compat/pthreadpool/fpu.h"

#define PTP_KNOWN_FLAGS (PTHREADPOOL_FLAG_DISABLE_DENORMALS | PTHREADPOOL_FLAG_YIELD_WORKERS)

/* The pool whose call's tiles the calling thread runs (caller and workers
 * alike); a call on that same pool from inside them runs serially. */
static _Thread_local const struct pthreadpool *tls_inside;

/* A parallel call, on the caller's stack while it runs. */
typedef struct ptp_call {
  const ptp_grid *grid;
  struct pthreadpool *tp;
  size_t members; /* slots in use: min(threads, tiles) */
} ptp_call;

/* Claims one item of s, if any is left: one locked RMW (a CAS loop that
 * stops at zero costs twice as much here). relaxed: the claim needs only
 * atomicity; the items' effects reach the caller through the group. */
static bool claim(ptp_slot *s)
{
  return atomic_fetch_sub_explicit(&s->left, 1, memory_order_relaxed) > 0;
}

/* A member's work: its own slot from the front, then the others' from the
 * back, nearest first. A member beyond the call's slots (a late task of an
 * earlier call may join, crew.h) only takes from the others. */
static void member_items(const ptp_call *c, size_t id)
{
  const ptp_grid *g = c->grid;
  ptp_slot *slots = c->tp->slots;
  if (id < c->members) {
    ptp_slot *own = &slots[id];
    size_t i = own->start;
    if (ptp_grid_is_1d(g)) {
      pthreadpool_task_1d_t f = (pthreadpool_task_1d_t)g->fn;
      while (claim(own))
        f(g->ctx, i++);
    } else {
      while (claim(own))
        ptp_grid_run_one(g, i++);
    }
  }
  for (size_t k = 1; k <= c->members; k++) {
    ptp_slot *v = &slots[(id + c->members - k) % c->members];
    while (claim(v)) /* relaxed: as claim */
      ptp_grid_run_one(g, atomic_fetch_sub_explicit(&v->end, 1, memory_order_relaxed) - 1);
  }
}

/* Runs member `id` of the call on this thread. */
static void run_member(const ptp_call *c, size_t id)
{
  const struct pthreadpool *prev = tls_inside;
  tls_inside = c->tp;
  if (c->grid->flags & PTHREADPOOL_FLAG_DISABLE_DENORMALS) {
    ptp_fpu_state fpu = ptp_fpu_save();
    ptp_fpu_flush_denormals(fpu);
    member_items(c, id);
    ptp_fpu_restore(fpu);
  } else {
    member_items(c, id);
  }
  tls_inside = prev;
}

/* A weft task: joins the pool's call under way, if any, as a member. */
static int member_task(void *arg)
{
  struct pthreadpool *tp = arg;
  atomic_fetch_sub_explicit(&tp->queued, 1, memory_order_relaxed); /* relaxed: a count */
  unsigned id = ptp_crew_join(tp);
  if (id) {
    run_member(tp->call, id);
    ptp_crew_leave(tp);
  }
  return 0;
}

/* The call on the pool's threads: slots filled, the crew opened, member
 * tasks submitted (as many as the call can use beyond those still queued),
 * the caller's own share run, then the crew closed and its members waited
 * for. Returns 0, or weft_pool_submit's error (the call still ran whole). */
static int run_parallel(struct pthreadpool *tp, const ptp_grid *g)
{
  ptp_call c = {g, tp, tp->threads < g->total ? tp->threads : g->total};
  for (size_t m = 0; m < c.members; m++) {
    ptp_slot *s = &tp->slots[m];
    s->start = g->total * m / c.members;
    size_t end = g->total * (m + 1) / c.members;
    /* relaxed: published by the crew's open (release). */
    atomic_store_explicit(&s->left, (ptrdiff_t)(end - s->start), memory_order_relaxed);
    atomic_store_explicit(&s->end, end, memory_order_relaxed);
  }
  tp->call = &c;
  ptp_crew_open(tp);
  int rc = 0;
  int want = (int)c.members - 1 - atomic_load_explicit(&tp->queued, memory_order_relaxed);
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

static void run_serial(const ptp_grid *g)
{
  if (g->flags & PTHREADPOOL_FLAG_DISABLE_DENORMALS) {
    ptp_fpu_state fpu = ptp_fpu_save();
    ptp_fpu_flush_denormals(fpu);
    ptp_grid_run(g, 0, g->total);
    ptp_fpu_restore(fpu);
  } else {
    ptp_grid_run(g, 0, g->total);
  }
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
  if (g->flags & PTHREADPOOL_FLAG_YIELD_WORKERS)
    weft_pool_park_idle(tp->workers);
  pthread_mutex_unlock(&tp->call_lock);
  /* Every item ran all the same (the members claim what a member that
   * could not be submitted leaves); weft said why on its log. */
  if (rc)
    ptp_complain(who, "weft_pool_submit returned %d: fewer threads took part", rc);
  ptp_leave(tp);
}
