/*
 * The solo injection queue: a second injection queue in each pool, filled
 * by one thread outside the pool at a time (its owner), with no CAS on
 * its tail (weft_inject_push_solo). The usual producer from outside is one
 * user's thread driving the pool or an engine on it; it claims the queue
 * at its first submission (a CAS of its token into solo_owner) and keeps
 * it until it exits. Other outside threads use the shared injection queue,
 * as before. Consumers take from both (search.c), and every emptiness
 * check looks at both (idle.c, split.c).
 *
 * A thread notes its claims (the pool's uid) so that its exit can give
 * them back: a registry of live pools, by uid, under a global lock, tells
 * which pools it may still touch (taken only at create, destroy and a
 * claiming thread's exit). A claim passes its producer's state (tail, the
 * copy of head) on: release when given back, acquire when taken.
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

/* The calling thread's last note: the uid of the pool whose solo queue it
 * owns (0: none). */
extern _Thread_local uint64_t weft_solo_last WEFT_TLS;

/* pool's solo queue if the calling thread (outside the pool) owns it or
 * can claim it now; NULL: use the shared injection queue. */
static inline weft_inject *weft_solo_queue(weft_pool *pool)
{
  if (__builtin_expect(weft_solo_last == pool->uid, 1))
    return &pool->solo;
  return weft_solo_claim(pool);
}

#endif /* WEFT_POOL_SOLO_H */
