/* SPDX-License-Identifier: MIT */
/*
 * WEFT_ASSERT(expr): an invariant the code relies on (a wait counter never
 * below zero, a deque's indices, an operator finished once). Checked in
 * debug, test and sanitizer builds; compiled out where NDEBUG is defined
 * (meson's b_ndebug=if-release: release builds, the bench). A failure prints
 * "weft: assertion failed: FILE:LINE: FUNC: EXPR" on stderr and aborts.
 *
 * Compiled out, the expression is still type-checked (sizeof) but never
 * evaluated: it must have no side effect the program relies on.
 */
#ifndef WEFT_COMMON_ASSERT_H
#define WEFT_COMMON_ASSERT_H

#ifdef NDEBUG
#define WEFT_ASSERT(expr) ((void)sizeof((expr) ? 1 : 0))
#define WEFT_ASSERTS_ON 0
#else
#define WEFT_ASSERT(expr)                                                          \
  ((expr) ? (void)0 : weft_assert_fail(#expr, __FILE__, __LINE__, __func__))
#define WEFT_ASSERTS_ON 1
#endif

_Noreturn void weft_assert_fail(const char *expr, const char *file, int line, const char *func);

#endif /* WEFT_COMMON_ASSERT_H */
