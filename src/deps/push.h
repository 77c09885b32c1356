/* SPDX-License-Identifier: MIT */
/*
 * Pushing operators: checking and normalising a descriptor, registering the
 * operator on its vars (all their locks, in index order, so its requests
 * take the same place on every queue relative to any other operator's),
 * back pressure (max_inflight, pacing), and the naive engine's synchronous
 * path.
 */
#ifndef WEFT_DEPS_PUSH_H
#define WEFT_DEPS_PUSH_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include <stdbool.h>

#include "deps/opr.h"

/* Checks everything in desc but its vars: 0 or a WEFT_E* code. */
int weft_push_check_desc(const weft_engine *eng, const weft_op_desc *d);
/* Normalises desc's vars into out[] (room for num_reads + num_writes):
 * every handle live, sorted by slot index, one entry per var, read+write
 * counted as write. Returns the count, or WEFT_EINVAL for a dead handle. */
int weft_push_normalize(weft_engine *eng, const weft_op_desc *d, weft_var_use *out);
/* Pushes an operator on the given normalised vars (internal ops too).
 * admitted: the caller took a place under max_inflight for it (released at
 * completion; on failure the caller gives it back). */
int weft_push_opr(weft_engine *eng, const weft_op_desc *desc, const weft_var_use *uses, int nuses,
                  int internal, weft_op_tmpl *tmpl, bool admitted);
/* Registers op (filled in, op->var[k] == uses[k].var) on its vars: counts
 * it in the current epoch, appends a request to each var under all their
 * locks, and dispatches it if every one is granted at once. WEFT_EINVAL if
 * a var died: then nothing is appended, and the caller frees op and
 * uncounts it (weft_engine_count_done of op->slot). */
int weft_push_register(weft_engine *eng, weft_opr *op, const weft_var_use *uses, int n,
                       bool admitted);
/* Takes a place under max_inflight (when it is set) before a push: an
 * outside pusher waits for one, or takes one over the cap once none has
 * freed for WEFT_CAP_STALL_NS while an async operator waits for its signal
 * (tunables.h); inside the engine's work it helps while over the cap, then
 * goes over it. weft_push_unadmit gives it back (a push that failed). */
void weft_push_admit(weft_engine *eng, bool out);
void weft_push_unadmit(weft_engine *eng);
/* A user push of normalised uses, with back pressure (or the naive path);
 * the caller has entered the engine (out: from outside its work). */
int weft_push_uses(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                   weft_op_tmpl *tmpl, bool out);
/* The naive engine's push of normalised uses (weft_push_uses on a naive
 * engine: run here and now), for a replay that passes failures on by
 * itself (a graph's explicit edges): skip is a status to skip it with, as
 * a failed var's (unless WEFT_OP_NOSKIP; 0: none), and *ended receives the
 * status it ended with, its own or the one it was skipped with (0 if the
 * push failed: the return value). */
int weft_push_naive(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                    int skip, int *ended);
/* weft_push_uses for weft_push_arg (d->arg NULL): the operator's argument
 * is a copy of data[0..size), in its block up to WEFT_OP_ARG_INLINE bytes,
 * else in a box (arg.h); drop runs once it finished. On an error nothing
 * was kept and drop is not called. */
int weft_push_uses_arg(weft_engine *eng, const weft_op_desc *d, const weft_var_use *uses, int n,
                       bool out, const void *data, size_t size, weft_arg_drop_fn drop);

/* Whether the calling thread runs one of eng's operators. */
bool weft_engine_inside_op(const weft_engine *eng);
/* A call from outside the engine's work registers (destroy waits for it)
 * and is refused with WEFT_ESHUTDOWN once destroy began. guest: it came
 * from outside. */
int weft_engine_enter(weft_engine *eng, int *guest);
void weft_engine_leave(weft_engine *eng, int guest);

/* The body of a public call on eng: enters the engine, returns call's
 * value (call may use guest: whether it came from outside), leaves. */
#define WEFT_GUARDED(guest, call)                 \
  do {                                            \
    int guest;                                    \
    int rc_ = weft_engine_enter(eng, &guest);     \
    if (rc_)                                      \
      return rc_;                                 \
    rc_ = (call);                                 \
    weft_engine_leave(eng, guest);                \
    return rc_;                                   \
  } while (0)

#endif /* WEFT_DEPS_PUSH_H */
