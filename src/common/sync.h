/* SPDX-License-Identifier: MIT */
/*
 * Low-level synchronisation: the seq_cst fence of the Dekker-style handshakes
 * (deque take/steal, park/wake), futex wait/wake, and the CPU pause.
 *
 * ThreadSanitizer ignores standalone fences and gets no ordering from raw
 * futex calls (CONTRIBUTING.md, "Memory orders and shared fields"). In a TSan
 * build (WEFT_TSAN) each fence becomes a seq_cst read-modify-write of a word
 * both sides touch, passed by the caller, and futex words are loaded with
 * acquire: the same guarantees, expressed as operations TSan models. The
 * production orders are untouched.
 */
#ifndef WEFT_COMMON_SYNC_H
#define WEFT_COMMON_SYNC_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#ifndef WEFT_TSAN
#define WEFT_TSAN 1
#endif
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) && !defined(WEFT_TSAN)
#define WEFT_TSAN 1
#endif
#endif
#ifndef WEFT_TSAN
#define WEFT_TSAN 0
#endif

/*
 * A store-load barrier between this thread's earlier stores and later loads.
 * `word` is a 64-bit atomic that every participant of the handshake touches
 * (TSan builds do a seq_cst RMW on it instead of the fence).
 */
#if WEFT_TSAN
#define weft_fence_sc(word) ((void)atomic_fetch_add_explicit((word), 0, memory_order_seq_cst))
#else
#define weft_fence_sc(word) ((void)(word), atomic_thread_fence(memory_order_seq_cst))
#endif

/*
 * The heavy side of an asymmetric pair, for a handshake whose one side runs
 * often and the other rarely (an entry to a guard against its closer:
 * common/guard.h). When the process is registered for
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (weft_membarrier_ok_), the
 * frequent side needs only a compiler barrier, and weft_fence_heavy runs
 * that system call, which puts a full barrier into every running thread of
 * the process: for each thread, it falls before that thread's light point
 * (whose later loads then see the heavy side's stores) or after it (its
 * earlier stores are then visible to the heavy side's later loads).
 * Unregistered, and under TSan (which does not model membarrier; the
 * frequent side then uses seq_cst operations), it is weft_fence_sc on word.
 */
/* Set once by weft_membarrier_setup (and by the fork child handler while
 * the child has one thread): the process is registered. */
extern _Bool weft_membarrier_ok_;
/* Registers (once; later calls do nothing). Called before any handshake
 * that uses the pair can begin: at a guard's creation (guard.c). */
void weft_membarrier_setup(void);
void weft_fence_heavy(_Atomic int64_t *word);

static inline void weft_cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* One step of a wait for another thread that holds something briefly: a
 * pause for the first `limit` steps (spins counts them), then a yield of
 * the CPU per step (the holder may have been preempted: let it run). */
static inline void weft_spin_step(unsigned *spins, unsigned limit)
{
  if (*spins < limit) {
    ++*spins;
    weft_cpu_pause();
  } else {
    sched_yield();
  }
}

/* Sleeps while *word == expected (spurious returns allowed; callers loop).
 * timeout_ns < 0: no timeout. */
void weft_futex_wait(_Atomic uint32_t *word, uint32_t expected, int64_t timeout_ns);
/* Wakes up to n waiters on word. */
void weft_futex_wake(_Atomic uint32_t *word, int n);

/* Monotonic clock, nanoseconds. */
int64_t weft_now_ns(void);

/* Pauses until the monotonic clock reaches deadline_ns; returns the time
 * then (or earlier than the deadline never). The clock is read every few
 * pauses, so a pause's length (5 to 150 cycles across CPUs) does not matter. */
int64_t weft_spin_until(int64_t deadline_ns);

#endif /* WEFT_COMMON_SYNC_H */
