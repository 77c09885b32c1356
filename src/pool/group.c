/*
 * Fork-join groups. Pending tasks are counted in two parts (see
 * weft_group_impl): `local`, touched only on the owner's thread, and `state`,
 * an atomic word holding everyone else's count << 2 plus two waiter bits.
 * Before a waiter sleeps it moves `local` into `state` and sets its bit
 * (weft_group_arm), so that a finisher elsewhere can tell from its own
 * fetch_sub result that it was the last and whom to wake: a thread outside
 * the pool sleeping on the word (futex), or a worker parked on the pool's
 * eventcount. That finisher never touches the group (which lives on the
 * waiter's stack) after the count reaches zero; the futex wake it may then
 * issue uses only the address, and a spurious wake-up there is harmless.
 */
#include <stdbool.h>

#include "common/sync.h"
#include "pool/group.h"
#include "pool/pool_ext.h"

_Static_assert(sizeof(weft_group_impl) <= sizeof(weft_group), "weft_group too small");
_Static_assert(_Alignof(weft_group_impl) <= _Alignof(weft_group), "weft_group misaligned");

void weft_group_fail(weft_group_impl *g, int rc)
{
  int expected = 0;
  /* relaxed: published to the waiter by the release in task_done (or read on
   * the waiter's own thread). */
  atomic_compare_exchange_strong_explicit(&g->status, &expected, rc, memory_order_relaxed,
                                          memory_order_relaxed);
}

void weft_group_task_done(weft_group_impl *g, weft_worker *w, int rc)
{
  if (rc)
    weft_group_fail(g, rc);
  if (w && w == g->owner) {
    g->local--;
    return;
  }
  weft_pool *pool = g->pool; /* g may be gone after the fetch_sub */
  /* release: publishes the task's effects and status to the waiter; pairs
   * with the acquire loads of state in wait. acquire: the waiter's arming. */
  uint32_t old = atomic_fetch_sub_explicit(&g->state, WEFT_GROUP_ONE, memory_order_acq_rel);
  if (weft_group_state_count(old) != 1)
    return;
  if (old & WEFT_GROUP_SLEEPING)
    weft_futex_wake(&g->state, 1);
  if (old & WEFT_GROUP_PARKED) {
    /* The waiter is parked on the eventcount among idle workers: wake them
     * all (it is one of them); the others find nothing and park again. */
    weft_fence_sc(&pool->nsearching);
    weft_ec_notify(&pool->ec, true);
  }
}

bool weft_group_arm(weft_group_impl *g, weft_worker *w, uint32_t flag)
{
  if (w && w == g->owner && g->local) {
    /* relaxed: only the count matters; the CAS below orders it. */
    atomic_fetch_add_explicit(&g->state, (uint32_t)g->local * WEFT_GROUP_ONE,
                              memory_order_relaxed);
    g->local = 0;
  }
  /* acquire: pairs with the finishers' release (a count of zero means done). */
  uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
  for (;;) {
    if (weft_group_state_count(s) == 0)
      return false;
    if (s & flag)
      return true;
    /* acq_rel: the finisher's fetch_sub reads this flag (and, for a parked
     * worker, everything before it, the eventcount prewait included). */
    if (atomic_compare_exchange_weak_explicit(&g->state, &s, s | flag, memory_order_acq_rel,
                                              memory_order_acquire))
      return true;
  }
}

void weft_group_init(weft_group *pub, weft_pool *pool)
{
  if (!pub)
    return;
  weft_group_impl *g = (weft_group_impl *)pub;
  g->pool = pool;
  g->owner = pool ? weft_worker_of(pool) : NULL;
  g->local = 0;
  atomic_init(&g->state, 0);
  atomic_init(&g->status, 0);
  g->magic = pool ? WEFT_GROUP_MAGIC : 0;
}

int weft_group_spawn_task(weft_group_impl *g, weft_worker *w, int (*fn)(void *), void *arg,
                          size_t lo, size_t hi)
{
  weft_pool *pool = g->pool;
  weft_task *t = weft_task_alloc(&pool->tasks, w ? &w->tasks : NULL);
  if (!t)
    return WEFT_ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->lo = lo;
  t->hi = hi;
  t->group = g;
  t->embedded = false;
  if (w && w == g->owner)
    g->local++;
  else /* relaxed: the spawner is the waiter or a running member of g, so the
        * count cannot reach zero meanwhile; the queue publishes the task. */
    atomic_fetch_add_explicit(&g->state, WEFT_GROUP_ONE, memory_order_relaxed);
  int rc = weft_pool_enqueue(pool, w, t);
  if (rc) {
    weft_task_free(&pool->tasks, w ? &w->tasks : NULL, t);
    weft_group_task_done(g, w, 0);
  }
  return rc;
}

int weft_group_spawn(weft_group *pub, weft_task_fn fn, void *arg)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || !fn || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  weft_worker *w = weft_worker_of(g->pool);
  if (w) /* the pool's own worker: the fast path, no registration */
    return weft_group_spawn_task(g, w, fn, arg, 0, 0);
  bool guest;
  int rc = weft_pool_guest_enter(g->pool, true, &guest);
  if (rc)
    return rc;
  rc = weft_group_spawn_task(g, NULL, fn, arg, 0, 0);
  if (guest)
    weft_pool_guest_leave(g->pool);
  return rc;
}

/* Helping nests: a waiter runs a task, whose own wait may run another, and
 * so on. Bounded two ways, as oneTBB does: a worker stops taking other
 * workers' tasks once half of its stack is used (its own deque holds only
 * what it spawned, so popping it nests as deep as the task tree, no more),
 * and a thread outside the pool helps only at the outermost level. */
static _Thread_local int help_depth WEFT_TLS; /* outside threads: tasks being helped */

static bool stack_deep(const weft_worker *w)
{
  return (uintptr_t)__builtin_frame_address(0) < w->steal_floor;
}

/* A thread outside the pool runs one task it finds, counted busy while it
 * does (destroy's drain), marked as helping (no nested help). */
static bool help_from_outside(weft_pool *pool)
{
  weft_pool *prev_task_pool = weft_tls_task_pool;
  weft_busy_add(pool, +1); /* busy before taking */
  weft_task *t = weft_find_nonlocal(pool, NULL);
  if (t) {
    weft_tls_task_pool = pool;
    help_depth++;
    weft_run_task(pool, NULL, t);
    help_depth--;
    weft_tls_task_pool = prev_task_pool;
  }
  weft_busy_add(pool, -1);
  return t != NULL;
}

bool weft_pool_help_one(weft_pool *pool)
{
  weft_worker *w = weft_worker_of(pool);
  if (w) {
    weft_task *t = weft_deque_take(&w->deque);
    if (!t && !stack_deep(w))
      t = weft_find_nonlocal(pool, w);
    if (t)
      weft_run_task(pool, w, t);
    return t != NULL;
  }
  return help_depth == 0 && help_from_outside(pool);
}

/* Sleeps on g until it is done, waking now and then to help (run) w's own
 * deque (w non-NULL) or (help) what it can find elsewhere. */
static void wait_sleeping(weft_group_impl *g, weft_pool *pool, weft_worker *w, bool help)
{
  int64_t sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
  int idle_rounds = 0;
  while (weft_group_pending(g, w)) {
    weft_task *t = w ? weft_deque_take(&w->deque) : NULL;
    if (t) {
      weft_run_task(pool, w, t);
      continue;
    }
    if (help) {
      if (help_from_outside(pool)) {
        idle_rounds = 0;
        sleep_ns = WEFT_HELP_SLEEP_MIN_NS;
        continue;
      }
      if (++idle_rounds < WEFT_HELP_SPIN_ROUNDS) {
        weft_spin_until(weft_now_ns() + WEFT_SPIN_ROUND_NS);
        continue;
      }
    }
    if (!weft_group_arm(g, w, WEFT_GROUP_SLEEPING))
      break;
    /* acquire: as in weft_group_pending; the futex wait re-checks the word. */
    uint32_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (weft_group_state_count(s) && (s & WEFT_GROUP_SLEEPING))
      weft_futex_wait(&g->state, s, sleep_ns);
    if (sleep_ns < WEFT_HELP_SLEEP_MAX_NS)
      sleep_ns *= 2;
    idle_rounds = WEFT_HELP_SPIN_ROUNDS - 1; /* one search, then sleep again */
  }
}

/* A worker of g's pool waits: it runs its own deque, then what it finds
 * elsewhere, and when there is nothing it idles like any worker (searching,
 * then parked on the eventcount), so that it counts as idle for submitters
 * and for parallel loops that split work for idle workers. */
static void wait_as_worker(weft_group_impl *g, weft_pool *pool, weft_worker *w)
{
  while (weft_group_pending(g, w)) {
    weft_task *t = weft_deque_take(&w->deque);
    if (!t && stack_deep(w)) {
      wait_sleeping(g, pool, w, false);
      return;
    }
    if (!t)
      t = weft_find_nonlocal(pool, w);
    if (!t)
      t = weft_worker_idle(pool, w, g);
    if (!t)
      return; /* g is done */
    weft_run_task(pool, w, t);
  }
}

int weft_group_wait_impl(weft_group_impl *g, weft_worker *w)
{
  weft_pool *pool = g->pool;
  if (w)
    wait_as_worker(g, pool, w);
  else
    wait_sleeping(g, pool, NULL, help_depth == 0);
  int status = atomic_load_explicit(&g->status, memory_order_relaxed);
  /* Reset for reuse: no task of g is left to touch it. */
  g->local = 0;
  atomic_store_explicit(&g->state, 0, memory_order_relaxed);
  atomic_store_explicit(&g->status, 0, memory_order_relaxed);
  return status;
}

int weft_group_wait(weft_group *pub)
{
  weft_group_impl *g = (weft_group_impl *)pub;
  if (!g || g->magic != WEFT_GROUP_MAGIC || !g->pool)
    return WEFT_EINVAL;
  /* The owner's spawns are counted on its thread alone (weft_group_impl). */
  weft_worker *w = weft_worker_of(g->pool);
  if (g->owner && w != g->owner)
    return WEFT_EINVAL;
  if (w)
    return weft_group_wait_impl(g, w);
  /* Never refused: the group's tasks point at it until they finish. */
  bool guest;
  int rc = weft_pool_guest_enter(g->pool, false, &guest);
  if (rc)
    return rc; /* WEFT_ESHUTDOWN: a pool inherited through fork */
  rc = weft_group_wait_impl(g, NULL);
  if (guest)
    weft_pool_guest_leave(g->pool);
  return rc;
}
