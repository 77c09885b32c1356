/* SPDX-License-Identifier: MIT */
/*
 * Waits that loop back (wait_cycle.h): the check a weft_var_wait inside an
 * operator makes before it waits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/spinlock.h"
#include "deps/ext.h"
#include "deps/wait_cycle.h"

_Thread_local const weft_nest *weft_tls_nest __attribute__((tls_model("initial-exec")));

/* A check's state (on the stack of the thread that checks; its arrays grow
 * onto the heap past the inline ones). */
#define LB_INLINE_SLOTS 128 /* a check over some 60 operators and vars allocates nothing */
#define LB_INLINE_WORK 64
#define LB_INLINE_USED 8

/* Map values: an operator found held is mapped to the request it was found
 * at (the walk that found it covered everything after it on that var), or
 * LB_ROOT for a root (it runs: every request of it is granted); a var whose
 * whole queue was found held, to LB_FULL. */
#define LB_ROOT ((const void *)1)
#define LB_FULL ((const void *)2)

typedef struct lb_check {
  weft_engine *eng;
  const weft_var_impl *target; /* the var waited on */
  uint64_t ticket;             /* the wait's (wait_cycle.h: weft_wait_list) */
  bool used_pending;           /* a listed wait was taken for registered */
  /* The listed waits taken for registered, each pinned (its users count)
   * until the check ends, so that their roots stay as they are meanwhile
   * (weft_wait_unlist waits for that). */
  weft_var_waiter **used;
  size_t nused, capused;
  /* Open addressing, linear probing, cap a power of two, at most half full:
   * keys are operators and vars (0: empty). */
  uintptr_t *keys;
  const void **vals;
  size_t cap, n;
  weft_opr **work; /* held operators whose vars are still to walk */
  size_t nwork, capwork;
  uintptr_t ikeys[LB_INLINE_SLOTS];
  const void *ivals[LB_INLINE_SLOTS];
  weft_opr *iwork[LB_INLINE_WORK];
  weft_var_waiter *iused[LB_INLINE_USED];
} lb_check;

enum { LB_GO = 0, LB_STOP = 1 }; /* a walk's result, besides an error code (< 0) */

static size_t lb_hash(uintptr_t k, size_t cap)
{
  return (size_t)((k >> 6) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static bool lb_get(const lb_check *c, const void *key, const void **val)
{
  uintptr_t k = (uintptr_t)key;
  for (size_t i = lb_hash(k, c->cap);; i = (i + 1) & (c->cap - 1)) {
    if (c->keys[i] == k) {
      *val = c->vals[i];
      return true;
    }
    if (c->keys[i] == 0)
      return false;
  }
}

static void lb_insert(uintptr_t *keys, const void **vals, size_t cap, uintptr_t k, const void *val)
{
  size_t i = lb_hash(k, cap);
  while (keys[i] != 0 && keys[i] != k)
    i = (i + 1) & (cap - 1);
  keys[i] = k;
  vals[i] = val;
}

/* Maps key (not yet in the map) to val. */
static int lb_put(lb_check *c, const void *key, const void *val)
{
  if (2 * (c->n + 1) > c->cap) {
    size_t cap = 2 * c->cap;
    uintptr_t *keys = weft_calloc(cap, sizeof *keys);
    const void **vals = weft_malloc(cap * sizeof *vals);
    if (!keys || !vals) {
      weft_free(keys);
      weft_free((void *)vals);
      return WEFT_ENOMEM;
    }
    for (size_t i = 0; i < c->cap; i++)
      if (c->keys[i])
        lb_insert(keys, vals, cap, c->keys[i], c->vals[i]);
    if (c->keys != c->ikeys) {
      weft_free(c->keys);
      weft_free((void *)c->vals);
    }
    c->keys = keys;
    c->vals = vals;
    c->cap = cap;
  }
  lb_insert(c->keys, c->vals, c->cap, (uintptr_t)key, val);
  c->n++;
  return 0;
}

/* op is held (found at request at, or LB_ROOT): its vars are to walk. */
static int lb_hold(lb_check *c, weft_opr *op, const void *at)
{
  if (c->nwork == c->capwork) {
    size_t cap = 2 * c->capwork;
    weft_opr **work = weft_malloc(cap * sizeof *work);
    if (!work)
      return WEFT_ENOMEM;
    memcpy(work, c->work, c->nwork * sizeof *work);
    if (c->work != c->iwork)
      weft_free(c->work);
    c->work = work;
    c->capwork = cap;
  }
  int rc = lb_put(c, op, at);
  if (rc)
    return rc;
  c->work[c->nwork++] = op;
  return 0;
}

/* A running operator of the engine (the caller of a wait), held for good
 * while the wait lasts: a root. A held operator's requests are its
 * holder's (ext.h: a graph node's, its launch's gate's, which holds every
 * var of the graph until the node is done). */
static int lb_root(lb_check *c, weft_opr *op)
{
  if (!op || op->eng != c->eng)
    return 0;
  if (op->internal == WEFT_OPR_HELD)
    op = op->eng->ext->holder(op); /* stable while op runs */
  const void *at;
  if (lb_get(c, op, &at))
    return 0;
  return lb_hold(c, op, LB_ROOT);
}

/* A wait's caller and the operators its thread runs that caller inside. */
static int lb_root_waits(lb_check *c, const weft_var_waiter *w)
{
  int rc = lb_root(c, w->caller);
  for (const weft_nest *f = w->up; f && !rc; f = f->up)
    rc = lb_root(c, (weft_opr *)f->op);
  return rc;
}

/* Under var's lock, a held request r on var: a wait listed with an
 * earlier ticket that is not registered yet (or is: then its own request
 * was walked too) will queue at var's tail, a write, behind r, so its roots
 * are held (wait_cycle.h). One on the target itself adds nothing: the
 * checked wait would queue beside it, behind the same requests. A listed
 * wait is pinned (users) before its roots are taken: it stays listed, and
 * its thread inside its weft_var_wait with them suspended, until the check
 * ends (lb_unpin), even if it never queues. One withdrawn (its thread about
 * to unlist it) is registered or never will be: it is not taken. */
static int lb_pending(lb_check *c, const weft_var_impl *var)
{
  if (var == c->target)
    return 0;
  int rc = 0;
  weft_spin_lock(&c->eng->loop_lock);
  for (weft_var_waiter *p = c->eng->loop_pending; p && !rc; p = p->pending_next) {
    const void *seen;
    if (p->ticket >= c->ticket || p->v != var || p->withdrawn || lb_get(c, p, &seen))
      continue;
    if (c->nused == c->capused) {
      size_t cap = 2 * c->capused;
      weft_var_waiter **used = weft_malloc(cap * sizeof *used);
      if (!used) {
        rc = WEFT_ENOMEM;
        break;
      }
      memcpy(used, c->used, c->nused * sizeof *used);
      if (c->used != c->iused)
        weft_free(c->used);
      c->used = used;
      c->capused = cap;
    }
    rc = lb_put(c, p, LB_ROOT); /* taken once */
    if (rc)
      break;
    p->users++;
    c->used[c->nused++] = p;
    c->used_pending = true;
    rc = lb_root_waits(c, p);
  }
  weft_spin_unlock(&c->eng->loop_lock);
  return rc;
}

/* The check is over: the listed waits it pinned may go. */
static void lb_unpin(lb_check *c)
{
  if (!c->nused)
    return;
  weft_spin_lock(&c->eng->loop_lock);
  for (size_t i = 0; i < c->nused; i++)
    c->used[i]->users--;
  weft_spin_unlock(&c->eng->loop_lock);
}

/* Under var's lock, the requests from x on (linked through next): each
 * one a held request makes wait (blocked: from x on already, or from the
 * first write on) is held, and so is its operator. LB_STOP where the rest
 * was covered before: a write of an operator already held (its own walk
 * covers what follows it), or the request an operator was found at. */
static int lb_walk(lb_check *c, const weft_var_impl *var, const weft_var_req *x, bool *blocked)
{
  for (; x; x = x->next) {
    if (x->write)
      *blocked = true;
    if (!*blocked)
      continue; /* a read granted with the held read before it */
    weft_opr *o = x->op;
    const void *at;
    if (lb_get(c, o, &at)) {
      if (x->write || at == x)
        return LB_STOP;
      continue;
    }
    if (var == c->target)
      return WEFT_EDEADLK; /* the wait would queue behind o */
    int rc = lb_hold(c, o, x);
    if (rc)
      return rc;
  }
  return LB_GO;
}

/* Op, held, has request r on var: holds what r makes wait there. */
static int lb_walk_var(lb_check *c, weft_var_impl *var, const weft_var_req *r, bool root)
{
  weft_varq *q = &var->q;
  weft_spin_lock(&q->lock);
  const weft_var_req *x = NULL;
  if (!root) /* waiting in the queue? */
    for (x = q->head; x && x != r; x = x->next) {
    }
  int rc;
  bool blocked = r->write;
  bool full = false;
  if (x) { /* waiting in the queue: what follows it */
    rc = lb_walk(c, var, r->next, &blocked);
  } else if (!r->write && !q->writer) {
    /* A granted read (a claimed segment needs a granted write): every
     * request waiting on var waits for it (a read waits for the write
     * ahead of it, which waits for this read). Its next is no queue link
     * (the grant list's). */
    blocked = full = true;
    rc = lb_walk(c, var, q->head, &blocked);
  } else {
    /* A granted write (then next is NULL, or the claimed segment it holds:
     * var_queue.h), or a request waiting in a segment that another
     * request holds (then next links the segment's rest, which no hand-over
     * rewrites before op's own finish). The segment goes first, then the
     * queue. */
    full = root && r->write;
    rc = lb_walk(c, var, r->next, &blocked);
    if (rc == LB_GO)
      rc = lb_walk(c, var, q->head, &blocked);
  }
  /* A listed wait queues at the tail, a write: behind r, held. */
  if (rc >= 0)
    rc = lb_pending(c, var);
  weft_spin_unlock(&q->lock);
  if (rc < 0)
    return rc;
  return full ? lb_put(c, var, LB_FULL) : 0;
}

/* Op is held: so is what waits for it on each of its vars. */
static int lb_visit(lb_check *c, weft_opr *op)
{
  const void *at = NULL;
  bool found = lb_get(c, op, &at);
  WEFT_ASSERT(found);
  (void)found;
  bool root = at == LB_ROOT;
  if (!root && op->internal == WEFT_OPR_WAIT) { /* an operator waits in it */
    int rc = lb_root_waits(c, (const weft_var_waiter *)op->arg);
    if (rc)
      return rc;
  }
  for (int k = 0; k < op->nvars; k++) {
    weft_var_impl *var = op->var[k];
    if (var == c->target)
      return WEFT_EDEADLK; /* the wait would queue behind op */
    const weft_var_req *r = &op->req[k];
    const void *full;
    if (r == at || lb_get(c, var, &full))
      continue; /* covered by the walk that found op, or var is held whole */
    int rc = lb_walk_var(c, var, r, root);
    if (rc)
      return rc;
  }
  return 0;
}

void (*weft_test_loop_listed)(void);
void (*weft_test_loop_recheck)(void);
void (*weft_test_loop_unpin)(void);

/* One check of w's wait (see weft_wait_loops); *used_pending: whether it
 * took a listed wait for registered. */
static int lb_check_once(weft_engine *eng, const weft_var_waiter *w, bool *used_pending)
{
  lb_check c;
  c.eng = eng;
  c.target = w->v;
  c.ticket = w->ticket;
  c.used_pending = false;
  c.keys = c.ikeys;
  c.vals = c.ivals;
  c.cap = LB_INLINE_SLOTS;
  c.n = 0;
  memset(c.ikeys, 0, sizeof c.ikeys);
  c.work = c.iwork;
  c.nwork = 0;
  c.capwork = LB_INLINE_WORK;
  c.used = c.iused;
  c.nused = 0;
  c.capused = LB_INLINE_USED;
  int rc = lb_root_waits(&c, w);
  while (!rc && c.nwork > 0)
    rc = lb_visit(&c, c.work[--c.nwork]);
  if (c.nused && weft_test_loop_unpin)
    weft_test_loop_unpin();
  lb_unpin(&c);
  if (c.used != c.iused)
    weft_free(c.used);
  if (c.keys != c.ikeys) {
    weft_free(c.keys);
    weft_free((void *)c.vals);
  }
  if (c.work != c.iwork)
    weft_free(c.work);
  *used_pending = c.used_pending;
  return rc;
}

/* Whether a wait listed before ticket is still listed. */
static bool lb_earlier_listed(weft_engine *eng, uint64_t ticket)
{
  bool any = false;
  weft_spin_lock(&eng->loop_lock);
  for (const weft_var_waiter *p = eng->loop_pending; p && !any; p = p->pending_next)
    any = p->ticket < ticket;
  weft_spin_unlock(&eng->loop_lock);
  return any;
}


int weft_wait_loops(weft_engine *eng, const weft_var_waiter *w)
{
  if (weft_test_loop_listed)
    weft_test_loop_listed();
  bool used_pending;
  int rc = lb_check_once(eng, w, &used_pending);
  if (rc != WEFT_EDEADLK || !used_pending)
    return rc;
  /* A loop through a listed wait, taken for registered: it may not be (its
   * own check may answer WEFT_EDEADLK, and then it never queues). Once
   * every earlier check is over (each is a bounded walk that waits for
   * nothing, and only for earlier tickets in turn: no cycle), those waits
   * are registered or gone, and a second check sees which. */
  if (weft_test_loop_recheck)
    weft_test_loop_recheck();
  for (unsigned spins = 0; lb_earlier_listed(eng, w->ticket);)
    weft_spin_step(&spins, 255);
  return lb_check_once(eng, w, &used_pending);
}

void weft_wait_list(weft_engine *eng, weft_var_waiter *w)
{
  weft_spin_lock(&eng->loop_lock);
  w->ticket = ++eng->loop_tickets;
  w->pending_next = eng->loop_pending;
  eng->loop_pending = w;
  weft_spin_unlock(&eng->loop_lock);
}

void weft_wait_unlist(weft_engine *eng, weft_var_waiter *w)
{
  weft_spin_lock(&eng->loop_lock);
  w->withdrawn = true; /* no check takes it from now on */
  for (unsigned spins = 0; w->users > 0;) {
    /* Checks that took it still read its roots: each is a bounded walk
     * that unpins before it waits for anything (weft_wait_loops). */
    weft_spin_unlock(&eng->loop_lock);
    weft_spin_step(&spins, 255);
    weft_spin_lock(&eng->loop_lock);
  }
  weft_var_waiter **p = &eng->loop_pending;
  while (*p != w)
    p = &(*p)->pending_next;
  *p = w->pending_next;
  weft_spin_unlock(&eng->loop_lock);
}
