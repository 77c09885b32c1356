/* SPDX-License-Identifier: MIT */
/*
 * fork() handling (README "Hazards"). A child of fork() has only the thread
 * that forked: every pool and engine it inherited lost its workers, so they
 * are unusable there. Each pool and engine records the process's fork
 * generation at create; the child handler bumps it, and every call on an
 * object of an older generation returns WEFT_ESHUTDOWN without touching the
 * object's locks or threads.
 *
 * Process-wide locks (not those of one object) must be consistent in the
 * child: each subsystem that owns one registers prepare/parent/child
 * handlers in a fixed slot. prepare runs the slots in ascending order (it
 * takes the locks), parent and child in descending order (they release).
 */
#ifndef WEFT_COMMON_FORK_H
#define WEFT_COMMON_FORK_H

#include <stdatomic.h>

/* The slots, in lock order. */
enum {
  WEFT_FORK_ENGINE_SYNC = 0, /* deps/inflight.c: the free list of sync blocks */
  WEFT_FORK_DONE_TOKENS,     /* deps/done.c: the async completion-token table */
  WEFT_FORK_GRAPHS,          /* graph/registry.c: the engines' graphs */
  WEFT_FORK_OBJ_REGISTRY,    /* common/objstore.c: the registry of live stores */
  WEFT_FORK_SOLO_REGISTRY,   /* pool/solo.c: the registry of live pools */
  WEFT_FORK_GUARDS,          /* common/guard.c: the registry of threads' guard slots */
  /* common/sync.c: the process's membarrier registration (after GUARDS:
   * child handlers run last slot first, and the guards' reads its outcome) */
  WEFT_FORK_MEMBARRIER,
  WEFT_FORK_NSLOTS
};

/* Installs the pthread_atfork handlers (once; later calls do nothing). */
void weft_fork_init(void);
/* Sets slot's handlers (any of them NULL: nothing), installing the atfork
 * handlers if needed. A slot is set once, by its subsystem's pthread_once. */
void weft_fork_register(int slot, void (*prepare)(void), void (*parent)(void),
                        void (*child)(void));

/* atomic, relaxed: changed only by the child handler, while the child has a
 * single thread; read at every API entry. */
extern _Atomic unsigned long weft_fork_gen_;

static inline unsigned long weft_fork_generation(void)
{
  return atomic_load_explicit(&weft_fork_gen_, memory_order_relaxed);
}

/* Whether an object created in generation gen was inherited through fork. */
static inline int weft_fork_stale(unsigned long gen)
{
  return gen != weft_fork_generation();
}

#endif /* WEFT_COMMON_FORK_H */
