/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "common/env.h"
#include "common/error.h"
#include "weft/weft.h"

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
  char msg[WEFT_ENV_MSG_MAX];
  int rc = weft_env_int_read(name, lo, hi, out, msg, sizeof msg);
  if (rc < 0)
    weft_log("%s", msg);
  return rc;
}
