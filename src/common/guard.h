/*
 * A shutdown guard: any number of threads enter and leave it, often and
 * cheaply (every push to an engine, every submission to a pool from a
 * thread outside it); once in its life a closer refuses new entrants and
 * waits until nobody is inside, before it frees what the guard protects.
 *
 * The entrants' side is asymmetric, as liburcu's membarrier flavour is: an
 * entrant notes the guard in its own thread's slot (a plain store into a
 * line only it writes) and reads the guard's closed flag, with only a
 * compiler barrier between; the closer sets the flag, then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which puts a full barrier
 * into every running thread of the process, then reads every slot. For
 * each entrant, its barrier falls either before its slot store (which the
 * closer then sees) or after it, and so before its read of the flag (which
 * then reads closed). So an entry costs no locked instruction, and the
 * closer pays one system call.
 *
 * Where that is not available (the system call refused, a thread whose
 * slot could not be made, calls nested deeper than WEFT_GUARD_DEPTH),
 * entrants count themselves in the guard with seq_cst read-modify-writes,
 * as before. Under ThreadSanitizer (which does not model membarrier) the
 * slot store and the flag's read are seq_cst, pairing with the closer's
 * seq_cst store and reads: a symmetric Dekker pair, which TSan checks.
 */
#ifndef WEFT_COMMON_GUARD_H
#define WEFT_COMMON_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlist.h"
#include "common/sync.h"
#include "common/tunables.h"

typedef struct weft_guard {
  _Atomic int closed;   /* atomic: set once by weft_guard_close */
  _Atomic int64_t slow; /* atomic: entrants counted the slow way, inside now */
} weft_guard;

/* One per thread that entered a guard the fast way: the guards it is
 * inside, innermost last (calls nest: an inline operator may push to
 * another engine). in[] is written by its thread alone, read by closers. */
typedef struct weft_guard_slot {
  _Alignas(WEFT_CACHE_LINE) _Atomic(const weft_guard *) in[WEFT_GUARD_DEPTH];
  int depth; /* owner only */
  /* owner only: entries may go the fast way (false in a fork child whose
   * membarrier registration failed: the slot then only serves the leaves
   * of entries made before the fork) */
  bool fast;
  weft_dlist_node link; /* under the registry's lock (guard.c): registry or spares */
} weft_guard_slot;

/* What weft_guard_enter returns, for weft_guard_leave. */
enum { WEFT_GUARD_REFUSED = 0, WEFT_GUARD_FAST, WEFT_GUARD_SLOW };

/* The calling thread's slot, or NULL before its first entry. */
extern _Thread_local weft_guard_slot *weft_guard_tls __attribute__((tls_model("initial-exec")));

#if WEFT_TSAN
#define WEFT_GUARD_ENTRY_MO memory_order_seq_cst
#else
#define WEFT_GUARD_ENTRY_MO memory_order_relaxed
#endif

void weft_guard_init(weft_guard *g);
/* The entry without a usable slot: registers one, or counts in g->slow. */
int weft_guard_enter_slow(weft_guard *g, bool refuse);

/* Enters g; refuse: not once g is closed (WEFT_GUARD_REFUSED then, and the
 * caller is not inside). Returns what weft_guard_leave takes. */
static inline int weft_guard_enter(weft_guard *g, bool refuse)
{
  weft_guard_slot *s = weft_guard_tls;
  if (__builtin_expect(!s || !s->fast || s->depth >= WEFT_GUARD_DEPTH, 0))
    return weft_guard_enter_slow(g, refuse);
  int d = s->depth++;
  /* relaxed (seq_cst under TSan): the closer's membarrier orders it before
   * the read below, as the header says; the closer reads it with seq_cst. */
  atomic_store_explicit(&s->in[d], g, WEFT_GUARD_ENTRY_MO);
  atomic_signal_fence(memory_order_seq_cst); /* the compiler keeps the order */
  /* relaxed (seq_cst under TSan): see above; pairs with weft_guard_close. */
  if (refuse && atomic_load_explicit(&g->closed, WEFT_GUARD_ENTRY_MO)) {
    s->depth--;
    /* release: as in leave (nothing was done inside). */
    atomic_store_explicit(&s->in[d], NULL, memory_order_release);
    return WEFT_GUARD_REFUSED;
  }
  return WEFT_GUARD_FAST;
}

/* Leaves g (ticket: what weft_guard_enter returned, not REFUSED). */
static inline void weft_guard_leave(weft_guard *g, int ticket)
{
  if (ticket == WEFT_GUARD_FAST) {
    weft_guard_slot *s = weft_guard_tls;
    int d = --s->depth;
    /* release: everything done inside before the closer, which reads the
     * slot with seq_cst (an acquire), frees what g protects. */
    atomic_store_explicit(&s->in[d], NULL, memory_order_release);
  } else {
    /* release: as above, for the closer's acquire read of slow. */
    atomic_fetch_sub_explicit(&g->slow, 1, memory_order_release);
  }
}

/* Refuses entrants that ask to be refused, from now on. */
void weft_guard_close(weft_guard *g);
/* Whether g was closed, for a caller that needs no entry (what it touches
 * is kept alive otherwise) and only refuses work once a closer began: a
 * hint (relaxed: a close under way may be seen a moment late). */
static inline bool weft_guard_closed(const weft_guard *g)
{
  return atomic_load_explicit(&((weft_guard *)g)->closed, memory_order_relaxed) != 0;
}
/* Waits until no thread is inside g: every entry that was not refused has
 * left (the caller is not inside g). */
void weft_guard_wait_empty(weft_guard *g);

#endif /* WEFT_COMMON_GUARD_H */
