/* SPDX-License-Identifier: MIT */
/*
 * Waits that loop back (weft.h, weft_var_wait). A weft_var_wait inside an
 * operator X can never be satisfied when what it waits for cannot finish
 * before X does: X holds its vars until it returns, and the wait holds X.
 * X writes a, pushes Y (reads a, writes b), waits on b: Y waits for X, X
 * for Y. Such a wait returns WEFT_EDEADLK at once instead.
 *
 * The check (weft_wait_loops) runs before the wait is pushed. It finds the
 * operators that cannot finish before X, following the var queues forward
 * from X, and answers WEFT_EDEADLK if one of them uses the var waited on
 * (the wait, a write at the var's tail, would wait for it). Those that
 * cannot finish before X ("held"):
 *   - the roots: X; X's holder when X is a held operator (ext.h: a graph
 *     node's launch's gate, which holds every var of the graph until X is
 *     done); the operators this thread runs X inside (each suspended below
 *     X on this thread's stack, whatever ran X there: weft_tls_nest);
 *   - every request waiting on a var behind a granted request of a held
 *     operator (a held operator never lets go of it);
 *   - behind a held operator's waiting request r on a var, each request R
 *     after it that r, R or a write between them makes wait for r (a read
 *     after a read, with no write between, is granted with it);
 *   - the operator of each such request; and, for an operator's own
 *     weft_var_wait found held (an internal wait operator), that operator
 *     and those its thread runs it inside (its weft_var_waiter says which);
 *     the same for a wait checked with an earlier ticket and not yet
 *     registered (loop_pending), as if at the tail of its var.
 * Held is for good while X runs, so a check racing with completions
 * elsewhere never sees a false loop: every operator it reads is held, its
 * block and requests stay as they are (but for appends at a queue's tail,
 * which it reads under the var's lock). An operator found waiting on one
 * var has appended to all of its vars (a push locks all its vars before it
 * appends to any), so its requests are all in place when the check locks
 * them. A listed wait's roots are read while the check pins it (users):
 * its thread stays in its weft_var_wait, so they stay suspended, even if
 * its own check answers WEFT_EDEADLK. Two waits checked at the same moment
 * that close a loop together
 * see each other through loop_pending: the later ticket's check finds the
 * loop, the earlier one's may not (and then it waits, once the later one
 * returned WEFT_EDEADLK, for what can finish). What the check cannot see is
 * a loop that a push on another thread closes at the same moment (the push
 * appends, behind a held operator, a request that a wait registered right
 * after the check queues behind): that wait never returns.
 *
 * Cost: one lock and walk of each var of the roots (a held operator's:
 * every var of its holder) and of the held operators, and nothing on the
 * push path; on the run path, two thread-local stores for an operator run
 * nested (none for one run from a worker's loop). A walk stops at the part of a queue an earlier walk
 * already covered; a var whose whole queue is held is walked once.
 */
#ifndef WEFT_DEPS_WAIT_CYCLE_H
#define WEFT_DEPS_WAIT_CYCLE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>

#include "deps/engine.h"
#include "deps/opr.h"
#include "deps/var.h"

/* A frame of this thread's nest chain (weft_tls_nest, innermost first):
 * an operator suspended on this thread while the thread runs another one
 * on top of it. dispatch.c's run_op pushes one whenever it runs an
 * operator on a thread that is already inside one, whichever call made it
 * run there: a weft_var_wait or weft_wait_all that helps, a push helping
 * at max_inflight, pacing, a weft_group_wait or weft_parallel_for inside
 * an operator (the pool helps), a graph launch's nodes run by any of them.
 * So every path that nests has the one rule: what runs on top of X runs
 * inside X. On the stack of its thread; immutable while linked. */
typedef struct weft_nest {
  const struct weft_opr *op;  /* immutable: the operator suspended (any engine's) */
  const struct weft_nest *up; /* immutable: the frame below, or NULL */
} weft_nest;

/* A weft_var_wait in progress (on its caller's stack) that runs the check
 * (wait_cycle.h): the argument of its internal wait operator (WEFT_OPR_WAIT),
 * and, while it is checked and registered, an entry of its engine's list
 * of such waits (loop_pending). */
typedef struct weft_var_waiter {
  weft_var_impl *v; /* immutable: the var waited on */
  /* immutable: the operator of v's engine that called the wait (running on
   * this thread), or NULL */
  weft_opr *caller;
  /* immutable: the operators this thread runs caller inside (weft_tls_nest
   * when the wait began), or NULL */
  const weft_nest *up;
  int status;       /* written by the wait operator before it sets done */
  _Atomic int done; /* atomic: set once status is written */
  /* Under the engine's loop_lock: the order of this wait's check among the
   * checks of its engine, its link in loop_pending while listed, how many
   * checks took it for registered and still read its roots (they pin it:
   * it stays listed, its thread in the wait, until they are done), and
   * whether it is being unlisted (no check takes it then). */
  uint64_t ticket;
  struct weft_var_waiter *pending_next;
  int users;
  bool withdrawn;
} weft_var_waiter;

/* The innermost frame of this thread's nest chain, or NULL (not nested).
 * Owned by the thread. */
extern _Thread_local const weft_nest *weft_tls_nest __attribute__((tls_model("initial-exec")));

/* Pushes frame (on the caller's stack) for op, the operator this thread
 * is about to suspend by running another on top of it (NULL: not nested,
 * nothing pushed); weft_nest_pop(frame, op) undoes it. */
static inline void weft_nest_push(weft_nest *frame, const struct weft_opr *op)
{
  if (!op)
    return;
  frame->op = op;
  frame->up = weft_tls_nest;
  weft_tls_nest = frame;
}

static inline void weft_nest_pop(const weft_nest *frame, const struct weft_opr *op)
{
  if (op)
    weft_tls_nest = frame->up;
}

/* A wait about to be checked: lists w (every field but ticket and
 * pending_next set) in its engine's loop_pending, with a ticket later than
 * every listed wait's. Such a wait's check sees each wait listed with an
 * earlier ticket as if it were already registered (at the tail of its
 * var), so of two waits checked at the same moment that close a loop
 * together, the later one sees it: exactly one of them is WEFT_EDEADLK. A
 * check that found its loop through such a wait checks again once every
 * earlier check is over (that wait may have found a loop of its own, and
 * then it never queues): no WEFT_EDEADLK rests on a wait that never was. */
void weft_wait_list(weft_engine *eng, weft_var_waiter *w);
/* Unlists w, once its wait operator is registered (or its check failed),
 * after the checks that took it for registered are done with it. */
void weft_wait_unlist(weft_engine *eng, weft_var_waiter *w);

/* Whether w's wait (listed), by this thread now inside an operator of
 * w's engine or nested inside one, would wait for one of the operators it
 * runs inside (see above): WEFT_EDEADLK, else 0; WEFT_ENOMEM if the check
 * ran out of memory. The threaded engine only. */
int weft_wait_loops(weft_engine *eng, const weft_var_waiter *w);

/* Test hooks (tests/deps/test_loop_check.c), NULL otherwise: listed is
 * called by weft_wait_loops before its check (its wait listed), unpin at
 * the end of a check that pinned listed waits, before it lets them go,
 * recheck when a check found its loop only through a listed wait and is
 * about to wait for the earlier checks. Set before the threads that call
 * them start. */
extern void (*weft_test_loop_listed)(void);
extern void (*weft_test_loop_unpin)(void);
extern void (*weft_test_loop_recheck)(void);

#endif /* WEFT_DEPS_WAIT_CYCLE_H */
