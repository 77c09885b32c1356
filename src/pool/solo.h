/* SPDX-License-Identifier: MIT */
/*
 * The solo injection queues: WEFT_SOLO_QUEUES more injection queues in
 * each pool, each filled by one thread outside the pool at a time (its
 * owner), with no CAS on its tail (weft_inject_push_solo). The usual
 * producer from outside is a user's thread driving the pool or an engine
 * on it, and there may be several (a data loader, a second model, a
 * serving front end): each claims the lowest free queue at its first
 * submission (a CAS of its token into solo_owner[i]) and keeps it until
 * it exits, so that no two of them write one line per submission (a
 * shared tail, cells side by side). Outside threads past the queues use
 * the shared injection queue, as before. Consumers take from all of them
 * (search.c), and every emptiness check looks at all of them (idle.c,
 * split.c): the shared queue and solo[0, nsolo), the queues ever claimed.
 *
 * A thread notes its claims (the pool's uid, the queue's index) so that
 * its exit can give them back: a registry of live pools, by uid, under a
 * global lock, tells which pools it may still touch (taken only at create,
 * destroy and a claiming thread's exit). A claim passes its producer's
 * state (tail, the copy of head) on: release when given back, acquire
 * when taken.
 */
#ifndef WEFT_POOL_SOLO_H
#define WEFT_POOL_SOLO_H
#include "pool/layer.h" /* layer guard: no include from a lower layer */

#include "pool/core.h"

/* Gives pool its uid and lists it as live (create). */
void weft_solo_register(weft_pool *pool);
/* Unlists it (destroy, before it is freed). */
void weft_solo_unregister(weft_pool *pool);

/* The slow path of weft_solo_queue: a claim, or a note made again. */
weft_inject *weft_solo_claim(weft_pool *pool);

/* The calling thread's last note: the uid of a pool one of whose solo
 * queues it owns (0: none), and that queue. */
extern _Thread_local uint64_t weft_solo_last WEFT_TLS;
extern _Thread_local weft_inject *weft_solo_last_q WEFT_TLS;

/* A solo queue of pool's if the calling thread (outside the pool) owns one
 * or can claim one now; NULL: use the shared injection queue. */
static inline weft_inject *weft_solo_queue(weft_pool *pool)
{
  if (__builtin_expect(weft_solo_last == pool->uid, 1))
    return weft_solo_last_q;
  return weft_solo_claim(pool);
}

/* How many solo queues consumers look at: solo[0, n). acquire: pairs with
 * the claim's release, before the claimer's first push. */
static inline int weft_solo_count(weft_pool *pool)
{
  return atomic_load_explicit(&pool->nsolo, memory_order_acquire);
}

#endif /* WEFT_POOL_SOLO_H */
