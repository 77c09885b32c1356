#include <stdarg.h>
#include <stdio.h>

#include "common/error.h"
#include "weft/weft.h"

const char *weft_version(void)
{
  return WEFT_VERSION_STRING;
}

const char *weft_strerror(int code)
{
  switch (code) {
  case 0: return "success";
  case WEFT_EINVAL: return "invalid argument (WEFT_EINVAL)";
  case WEFT_ENOMEM: return "out of memory (WEFT_ENOMEM)";
  case WEFT_EAGAIN: return "resource temporarily unavailable: a thread could not be created (WEFT_EAGAIN)";
  case WEFT_ESHUTDOWN: return "shutting down (WEFT_ESHUTDOWN)";
  case WEFT_EDEADLK: return "the wait would deadlock (WEFT_EDEADLK)";
  case WEFT_ENODEV: return "no such device (WEFT_ENODEV)";
  case WEFT_EDEVICE: return "device failure (WEFT_EDEVICE)";
  default: return "unknown error";
  }
}

void weft_log(const char *fmt, ...)
{
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One write per line so lines from several threads do not interleave. */
  fprintf(stderr, "weft: %s\n", line);
}
