/* SPDX-License-Identifier: MIT */
#include "pool/park.h"

#include <limits.h>

#include "common/assert.h"
#include "common/sync.h"

void weft_ec_init(weft_ec *ec)
{
  atomic_init(&ec->seq, 0);
  atomic_init(&ec->waiters, 0);
}

uint32_t weft_ec_prewait(weft_ec *ec)
{
  /* seq_cst: the announcement must precede the caller's re-check of the
   * queues; pairs with the submitter's fence before it reads waiters. */
  atomic_fetch_add_explicit(&ec->waiters, 1, memory_order_seq_cst);
  /* seq_cst: read the key after announcing, so a notify that misses our
   * announcement cannot have bumped seq before this load. */
  return atomic_load_explicit(&ec->seq, memory_order_seq_cst);
}

void weft_ec_cancel(weft_ec *ec)
{
  /* relaxed: the count only steers notifiers; nothing is published. */
  uint32_t old = atomic_fetch_sub_explicit(&ec->waiters, 1, memory_order_relaxed);
  WEFT_ASSERT(old >= 1); /* prewait -> cancel: the caller announced itself */
}

void weft_ec_commit(weft_ec *ec, uint32_t key)
{
  /* acquire: pairs with the release bump of seq in notify (TSan sees the
   * hand-off here, since it gets no ordering from the futex itself). */
  while (atomic_load_explicit(&ec->seq, memory_order_acquire) == key)
    weft_futex_wait(&ec->seq, key, -1);
  /* relaxed: as in cancel. */
  uint32_t old = atomic_fetch_sub_explicit(&ec->waiters, 1, memory_order_relaxed);
  WEFT_ASSERT(old >= 1); /* prewait -> commit: the caller announced itself */
}

bool weft_ec_notify(weft_ec *ec, bool all)
{
  if (atomic_load_explicit(&ec->waiters, memory_order_relaxed) == 0)
    return false;
  /* release: pairs with the acquire load of seq in commit. */
  atomic_fetch_add_explicit(&ec->seq, 1, memory_order_release);
  weft_futex_wake(&ec->seq, all ? INT_MAX : 1);
  return true;
}
