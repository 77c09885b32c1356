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
 *     done); the operators this thread
 *     runs X inside (each suspended in a weft_var_wait that ran X
 *     meanwhile: weft_tls_wait);
 *   - every request waiting on a var behind a granted request of a held
 *     operator (a held operator never lets go of it);
 *   - behind a held operator's waiting request r on a var, each request R
 *     after it that r, R or a write between them makes wait for r (a read
 *     after a read, with no write between, is granted with it);
 *   - the operator of each such request; and, for an operator's own
 *     weft_var_wait found held (an internal wait operator), that operator
 *     and those its thread runs it inside (its weft_var_waiter says which).
 * Held is for good while X runs, so a check racing with completions
 * elsewhere never sees a false loop: every operator it reads is held, its
 * block and requests stay as they are (but for appends at a queue's tail,
 * which it reads under the var's lock). An operator found waiting on one
 * var has appended to all of its vars (a push locks all its vars before it
 * appends to any), so its requests are all in place when the check locks
 * them. What the check cannot see is a loop another thread closes at the
 * same moment (a push or a wait racing with this one): that wait hangs as
 * it did before.
 *
 * Cost: one lock and walk of each var of the roots (a held operator's:
 * every var of its holder) and of the held operators, and nothing at all on the
 * push and run paths. A walk stops at the part of a queue an earlier walk
 * already covered; a var whose whole queue is held is walked once.
 */
#ifndef WEFT_DEPS_LOOPBACK_H
#define WEFT_DEPS_LOOPBACK_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdatomic.h>

#include "deps/engine.h"
#include "deps/opr.h"
#include "deps/var.h"

/* A weft_var_wait in progress (on its caller's stack): the argument of its
 * internal wait operator (WEFT_OPR_WAIT), and, while its thread waits in
 * it, a frame of that thread's weft_tls_wait chain. */
typedef struct weft_var_waiter {
  weft_var_impl *v; /* immutable: the var waited on */
  /* immutable: the operator of v's engine that called the wait (running on
   * this thread), or NULL */
  weft_opr *caller;
  /* immutable: the wait this thread was in when it called this one (the
   * previous weft_tls_wait), or NULL */
  const struct weft_var_waiter *up;
  int status;       /* written by the wait operator before it sets done */
  _Atomic int done; /* atomic: set once status is written */
} weft_var_waiter;

/* The innermost weft_var_wait this thread waits in, running other work
 * meanwhile (an operator run here now is run inside the caller of each
 * wait on the chain), or NULL. Owned by the thread. */
extern _Thread_local const weft_var_waiter *weft_tls_wait
    __attribute__((tls_model("initial-exec")));

/* Whether a wait on v by this thread, now inside an operator of eng (or
 * inside a wait inside one), would wait for one of the operators it runs
 * inside (see above): WEFT_EDEADLK, else 0; WEFT_ENOMEM if the check ran
 * out of memory. The threaded engine only. */
int weft_wait_loops(weft_engine *eng, const weft_var_impl *v);

#endif /* WEFT_DEPS_LOOPBACK_H */
