/*
 * Environment and config-string parsing. Each parser returns 0 on success,
 * WEFT_EINVAL on a malformed value (after printing one line naming the
 * variable and the value), and 1 when the variable is unset or empty.
 */
#ifndef WEFT_COMMON_ENV_H
#define WEFT_COMMON_ENV_H

#include <stdbool.h>

/* Integer in [lo, hi]. */
int weft_env_int(const char *name, long lo, long hi, long *out);
/* The raw string (not copied), or NULL when unset or empty. */
const char *weft_env_str(const char *name);
/* A non-empty string such as a file path: 0 with *out set (not copied);
 * 1 when unset; WEFT_EINVAL when set but empty (with the line). */
int weft_env_nonempty(const char *name, const char **out);
/* Strict decimal integer in [lo, hi]; false when malformed. */
bool weft_parse_long(const char *s, long lo, long hi, long *out);

#endif /* WEFT_COMMON_ENV_H */
