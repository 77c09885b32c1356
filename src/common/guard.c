/* SPDX-License-Identifier: MIT */
/* Shutdown guards (guard.h): the threads' slots, their registry, the
 * membarrier set-up, and the slow ways in and out. */
#include "common/guard.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/fork.h"
#include "common/sync.h"

_Thread_local weft_guard_slot *weft_guard_tls __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_dlist registry; /* under registry_lock: every live slot */
/* under registry_lock: slots of threads that exited, for the next threads
 * (never freed: a program that starts a thread per request allocates as
 * many slots as it ever has threads at once, not one per thread) */
static weft_dlist spare;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key;
/* Written once by setup, read after setup_once: whether entrants may use
 * slots (weft_membarrier_ok_ says whether the closer's barrier is the
 * system call; under TSan it never is, and slots pair seq_cst). */
static bool fast_ok;

/* A thread that exits gives its slot back (it is inside no guard then). */
static void slot_exit(void *p)
{
  weft_guard_slot *s = p;
  WEFT_ASSERT(s->depth == 0); /* a thread leaves every call before it exits */
  pthread_mutex_lock(&registry_lock);
  weft_dlist_remove(&registry, &s->link);
  weft_dlist_push(&spare, &s->link);
  pthread_mutex_unlock(&registry_lock);
  weft_guard_tls = NULL;
}

static void fork_child(void)
{
  /* The child's only thread is the forking one: the other slots are of
   * threads that do not exist here (and that are inside nothing the child
   * can close: what they were in was inherited, and is stale). Registration
   * is per process: the child registers again, or goes the slow way. */
  weft_guard_slot *mine = weft_guard_tls;
  for (weft_dlist_node *n = registry.head, *next; n; n = next) {
    next = n->next;
    weft_guard_slot *s = weft_dlist_entry(n, weft_guard_slot, link);
    if (s == mine)
      continue;
    /* the parent's other threads' slots: spares, emptied */
    for (int k = 0; k < WEFT_GUARD_DEPTH; k++)
      atomic_store_explicit(&s->in[k], NULL, memory_order_relaxed); /* one thread here */
    s->depth = 0;
    weft_dlist_remove(&registry, n);
    weft_dlist_push(&spare, n);
  }
  if (!WEFT_TSAN && !weft_membarrier_ok_) /* the child's registration failed (sync.c) */
    fast_ok = false;
  if (mine)
    mine->fast = fast_ok;
}

static void fork_prepare(void)
{
  pthread_mutex_lock(&registry_lock);
}

static void fork_parent(void)
{
  pthread_mutex_unlock(&registry_lock);
}

static void fork_child_unlock(void)
{
  fork_child();
  pthread_mutex_unlock(&registry_lock);
}

static void setup(void)
{
  weft_membarrier_setup();
  /* Under TSan the entries are seq_cst (guard.h): no system call needed. */
  fast_ok = pthread_key_create(&slot_key, slot_exit) == 0 && (WEFT_TSAN || weft_membarrier_ok_);
  weft_fork_register(WEFT_FORK_GUARDS, fork_prepare, fork_parent, fork_child_unlock);
}

void weft_guard_init(weft_guard *g)
{
  pthread_once(&setup_once, setup);
  atomic_init(&g->closed, 0);
  atomic_init(&g->slow, 0);
}

/* A slot for the calling thread, registered; NULL if none can be made. */
static weft_guard_slot *make_slot(void)
{
  pthread_mutex_lock(&registry_lock);
  weft_guard_slot *s = NULL;
  if (spare.head) {
    s = weft_dlist_entry(spare.head, weft_guard_slot, link);
    weft_dlist_remove(&spare, spare.head);
  }
  pthread_mutex_unlock(&registry_lock);
  if (!s) {
    s = weft_aligned_alloc(WEFT_CACHE_LINE, sizeof *s);
    if (!s)
      return NULL;
    for (int k = 0; k < WEFT_GUARD_DEPTH; k++)
      atomic_init(&s->in[k], NULL);
    s->depth = 0;
  }
  s->fast = true;
  pthread_mutex_lock(&registry_lock);
  if (pthread_setspecific(slot_key, s) != 0) {
    weft_dlist_push(&spare, &s->link);
    s = NULL;
  } else {
    weft_dlist_push(&registry, &s->link);
  }
  pthread_mutex_unlock(&registry_lock);
  if (!s)
    return NULL;
  weft_guard_tls = s;
  return s;
}

int weft_guard_enter_slow(weft_guard *g, bool refuse)
{
  pthread_once(&setup_once, setup);
  if (fast_ok && !weft_guard_tls && make_slot())
    return weft_guard_enter(g, refuse); /* now with a slot: the fast way */
  /* seq_cst (both): pairs with the closer's store of closed and its read
   * of slow: either we see it closed, or it waits for us. */
  atomic_fetch_add_explicit(&g->slow, 1, memory_order_seq_cst);
  if (refuse && atomic_load_explicit(&g->closed, memory_order_seq_cst)) {
    /* seq_cst: as above. */
    atomic_fetch_sub_explicit(&g->slow, 1, memory_order_seq_cst);
    return WEFT_GUARD_REFUSED;
  }
  return WEFT_GUARD_SLOW;
}

void weft_guard_close(weft_guard *g)
{
  /* seq_cst: pairs with the entrants' reads of closed (see guard.h). */
  atomic_store_explicit(&g->closed, 1, memory_order_seq_cst);
}

/* Whether some thread's slot says it is inside g. */
static bool any_slot_inside(const weft_guard *g)
{
  bool inside = false;
  pthread_mutex_lock(&registry_lock);
  for (weft_dlist_node *n = registry.head; n && !inside; n = n->next)
    for (int k = 0; k < WEFT_GUARD_DEPTH && !inside; k++)
      /* seq_cst: after the store of closed in the total order, so it reads
       * the entry's store or a later one, not an older value of the slot
       * (acquire alone could; the relacy model found it), and acquire: it
       * pairs with the release store of the leave. */
      inside = atomic_load_explicit(&weft_dlist_entry(n, weft_guard_slot, link)->in[k],
                                    memory_order_seq_cst) == g;
  pthread_mutex_unlock(&registry_lock);
  return inside;
}

void weft_guard_wait_empty(weft_guard *g)
{
  /* The heavy side of the asymmetric pair (common/sync.h): a full barrier
   * in every thread of the process, after closed was set and before the
   * slots are read (a seq_cst fence where the entries are seq_cst). */
  weft_fence_heavy(&g->slow);
  /* seq_cst: pairs with the slow entrants' increment (see enter_slow). */
  while (atomic_load_explicit(&g->slow, memory_order_seq_cst) != 0 || any_slot_inside(g))
    sched_yield();
}
