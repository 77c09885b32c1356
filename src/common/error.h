/* Internal diagnostics: one line on stderr, prefixed "weft: ". */
#ifndef WEFT_COMMON_ERROR_H
#define WEFT_COMMON_ERROR_H

#if defined(__GNUC__)
#define WEFT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WEFT_PRINTF(a, b)
#endif

void weft_log(const char *fmt, ...) WEFT_PRINTF(1, 2);

#endif /* WEFT_COMMON_ERROR_H */
