#include <errno.h>
#include <stdlib.h>

#include "common/env.h"
#include "common/error.h"
#include "weft/weft.h"

bool weft_parse_long(const char *s, long lo, long hi, long *out)
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

const char *weft_env_str(const char *name)
{
  const char *s = getenv(name);
  return (s && *s) ? s : NULL;
}

int weft_env_nonempty(const char *name, const char **out)
{
  const char *s = getenv(name);
  if (!s)
    return 1;
  if (!*s) {
    weft_log("malformed %s=\"\": expected a file path (unset it to turn it off)", name);
    return WEFT_EINVAL;
  }
  *out = s;
  return 0;
}

int weft_env_int(const char *name, long lo, long hi, long *out)
{
  const char *s = weft_env_str(name);
  if (!s)
    return 1;
  if (!weft_parse_long(s, lo, hi, out)) {
    weft_log("malformed %s=\"%s\": expected an integer in [%ld, %ld]", name, s, lo, hi);
    return WEFT_EINVAL;
  }
  return 0;
}
