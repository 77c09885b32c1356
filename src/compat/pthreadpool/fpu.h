/* SPDX-License-Identifier: MIT */
/*
 * PTHREADPOOL_FLAG_DISABLE_DENORMALS: denormal inputs read as zero and
 * denormal results flush to zero on every thread taking part in a call,
 * for the call's duration (x86: MXCSR's DAZ and FTZ bits; AArch64: FPCR.FZ).
 * Elsewhere the flag has no effect, as in pthreadpool.
 */
#ifndef PTP_FPU_H
#define PTP_FPU_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
typedef uint32_t ptp_fpu_state;
static inline ptp_fpu_state ptp_fpu_save(void)
{
  return _mm_getcsr();
}
static inline void ptp_fpu_restore(ptp_fpu_state s)
{
  _mm_setcsr(s);
}
static inline void ptp_fpu_flush_denormals(ptp_fpu_state s)
{
  _mm_setcsr(s | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
}
#elif defined(__aarch64__)
typedef uint64_t ptp_fpu_state;
static inline ptp_fpu_state ptp_fpu_save(void)
{
  uint64_t v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return v;
}
static inline void ptp_fpu_restore(ptp_fpu_state s)
{
  __asm__ __volatile__("msr fpcr, %0" : : "r"(s));
}
static inline void ptp_fpu_flush_denormals(ptp_fpu_state s)
{
  ptp_fpu_restore(s | (UINT64_C(1) << 24)); /* FZ */
}
#else
typedef int ptp_fpu_state;
static inline ptp_fpu_state ptp_fpu_save(void)
{
  return 0;
}
static inline void ptp_fpu_restore(ptp_fpu_state s)
{
  (void)s;
}
static inline void ptp_fpu_flush_denormals(ptp_fpu_state s)
{
  (void)s;
}
#endif

/* A call's items on this thread, between these two: with
 * PTHREADPOOL_FLAG_DISABLE_DENORMALS (flush) the state is saved and set on
 * enter and restored on leave; otherwise neither touches it. */
static inline ptp_fpu_state ptp_fpu_enter(int flush)
{
  ptp_fpu_state s = flush ? ptp_fpu_save() : (ptp_fpu_state)0;
  if (flush)
    ptp_fpu_flush_denormals(s);
  return s;
}

static inline void ptp_fpu_leave(int flush, ptp_fpu_state s)
{
  if (flush)
    ptp_fpu_restore(s);
}

#endif /* PTP_FPU_H */
