/* SPDX-License-Identifier: MIT */
/*
 * Completion tokens of async operators. weft_done_signal carries no engine,
 * so the tokens live in one process-wide table of generation-tagged slots:
 * a token is live from the start of the operator's async_fn until its first
 * signal, and a second signal finds it dead (detected, reported, ignored)
 * instead of touching a recycled operator.
 */
#ifndef WEFT_DEPS_DONE_H
#define WEFT_DEPS_DONE_H
#include "deps/layer.h" /* layer guard: no include from a lower layer */

#include "deps/opr.h"

typedef struct weft_done_impl {
  weft_slot slot;
  /* atomic, relaxed: written before the token is handed out (published by
   * the caller), read by a signal, which a stale signal may do while the
   * slot's next user writes it (its kill then fails, so the value is unused). */
  _Atomic(weft_opr *) opr;
} weft_done_impl;

/* A live token for op in *out: 0, WEFT_ENOMEM, or WEFT_ELIMIT (as many
 * tokens are live as a handle can address; with a message). */
int weft_done_token(weft_opr *op, weft_done **out);
/* Kills done and returns its operator; NULL (with a message) for a token
 * already signalled, no token, or an operator of an engine inherited
 * through fork. */
weft_opr *weft_done_take(weft_done *done, int status);

#endif /* WEFT_DEPS_DONE_H */
