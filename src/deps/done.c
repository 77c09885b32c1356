/* SPDX-License-Identifier: MIT */
/* Completion tokens of async operators (done.h); the signal itself is in
 * dispatch.c, with the completion it starts. */
#include <inttypes.h>
#include <pthread.h>

#include "common/error.h"
#include "common/fork.h"
#include "common/sync.h"
#include "deps/done.h"
#include "deps/engine.h"

static weft_handles tokens;
static pthread_once_t tokens_once = PTHREAD_ONCE_INIT;
static int tokens_rc;

/* fork: the table's free list is consistent in the child (common/fork.h). */
static void tokens_fork_prepare(void)
{
  pthread_mutex_lock(&tokens.lock);
}

static void tokens_fork_release(void)
{
  pthread_mutex_unlock(&tokens.lock);
}

static void tokens_init(void)
{
  tokens_rc = weft_handles_init(&tokens, sizeof(weft_done_impl), 16);
  if (tokens_rc == 0)
    weft_fork_register(WEFT_FORK_DONE_TOKENS, tokens_fork_prepare, tokens_fork_release,
                       tokens_fork_release);
}

int weft_done_token(weft_opr *op, weft_done **out)
{
  pthread_once(&tokens_once, tokens_init);
  if (tokens_rc)
    return tokens_rc;
  uintptr_t h;
  weft_slot *s;
  int rc = weft_handles_alloc(&tokens, &s, &h);
  if (rc == WEFT_ELIMIT)
    weft_log("async operator %s: %" PRIu32 " async operators await their weft_done_signal, as "
             "many as tokens can address; it fails with WEFT_ELIMIT",
             op->name ? op->name : "(unnamed)", tokens.limit);
  if (rc)
    return rc;
  weft_done_impl *d = (weft_done_impl *)s;
  atomic_store_explicit(&d->opr, op, memory_order_relaxed);
  *out = (weft_done *)h;
  return 0;
}

weft_opr *weft_done_take(weft_done *done, int status)
{
  pthread_once(&tokens_once, tokens_init);
  weft_done_impl *d = tokens_rc ? NULL : (weft_done_impl *)weft_handles_get(&tokens, (uintptr_t)done);
  weft_opr *op = d ? atomic_load_explicit(&d->opr, memory_order_relaxed) : NULL;
  if (!d || !weft_slot_kill(&d->slot, weft_handle_gen((uintptr_t)done))) {
    weft_log("weft_done_signal(%p, %d): the operator was already signalled (or this is no "
             "token); ignored",
             (void *)done, status);
    return NULL;
  }
  weft_handles_free(&tokens, &d->slot);
  if (weft_fork_stale(op->eng->fork_gen)) { /* the operator of an engine inherited through fork */
    weft_log("weft_done_signal(%p, %d): the operator belongs to an engine of the parent "
             "process (fork); ignored",
             (void *)done, status);
    return NULL;
  }
  return op;
}
