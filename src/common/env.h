/* SPDX-License-Identifier: MIT */
/*
 * Environment and config-string parsing. Each reader returns 0 on success,
 * WEFT_EINVAL on a malformed value (after printing one line naming the
 * variable and the value; weft_env_int_read hands that line to its caller
 * instead), and 1 when the variable is unset or empty.
 *
 * Every environment variable of the library is read here (src/common/env.c
 * and the inline functions below), so that every one follows the same
 * rules. The integer reader is inline so that libweft_mpi, which is built
 * on libweft's public symbols only, reads WEFT_MPI_TIMEOUT_MS with it too.
 */
#ifndef WEFT_COMMON_ENV_H
#define WEFT_COMMON_ENV_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"

/* The longest message weft_env_int_read writes, bytes (with the NUL; as
 * weft_log's lines). */
#define WEFT_ENV_MSG_MAX 512

/* Strict decimal integer in [lo, hi]: an optional sign, then digits only
 * (no spaces before or after, no base prefix, no fraction); false when
 * malformed or out of range. */
static inline bool weft_parse_long(const char *s, long lo, long hi, long *out)
{
  if (!s || !*s)
    return false;
  const char *p = s;
  if (*p == '-' || *p == '+')
    p++;
  if (*p < '0' || *p > '9')
    return false; /* no leading spaces, no empty digits */
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || *end != '\0' || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* The one reader of an integer environment variable: 1 when name is unset
 * or empty; 0 with *out set to its value in [lo, hi] (weft_parse_long);
 * WEFT_EINVAL when malformed, with msg (msg_size bytes, at most
 * WEFT_ENV_MSG_MAX needed) holding the line that names the variable and the
 * value, for the caller's log (no prefix, no newline). */
static inline int weft_env_int_read(const char *name, long lo, long hi, long *out, char *msg,
                                    size_t msg_size)
{
  const char *s = getenv(name);
  if (!s || !*s)
    return 1;
  if (!weft_parse_long(s, lo, hi, out)) {
    snprintf(msg, msg_size, "malformed %s=\"%s\": expected an integer in [%ld, %ld]", name, s,
             lo, hi);
    return WEFT_EINVAL;
  }
  return 0;
}

/* Integer in [lo, hi] (weft_env_int_read, its line to weft_log). */
int weft_env_int(const char *name, long lo, long hi, long *out);
/* The raw string (not copied), or NULL when unset or empty. */
const char *weft_env_str(const char *name);
/* A non-empty string such as a file path: 0 with *out set (not copied);
 * 1 when unset; WEFT_EINVAL when set but empty (with the line). */
int weft_env_nonempty(const char *name, const char **out);

#endif /* WEFT_COMMON_ENV_H */
