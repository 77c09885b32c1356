/* SPDX-License-Identifier: MIT */
/* Internal diagnostics: one line (no prefix, no newline) to the callback set
 * with weft_set_log_callback, else to stderr as "weft: <line>\n". Truncated
 * to 511 bytes. Any thread; never blocks on a setter. */
#ifndef WEFT_COMMON_ERROR_H
#define WEFT_COMMON_ERROR_H

#if defined(__GNUC__)
#define WEFT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WEFT_PRINTF(a, b)
#endif

void weft_log(const char *fmt, ...) WEFT_PRINTF(1, 2);

#endif /* WEFT_COMMON_ERROR_H */
