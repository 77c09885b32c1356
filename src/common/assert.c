/* SPDX-License-Identifier: MIT */
#include "common/assert.h"

#include <stdio.h>
#include <stdlib.h>

/* Straight to stderr, not through the log callback: the process is about to
 * abort, and the callback's own state may be what broke. */
void weft_assert_fail(const char *expr, const char *file, int line, const char *func)
{
  fprintf(stderr, "weft: assertion failed: %s:%d: %s: %s\n", file, line, func, expr);
  fflush(stderr);
  abort();
}
