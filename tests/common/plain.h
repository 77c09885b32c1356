/* SPDX-License-Identifier: MIT */
/*
 * Helpers for test programs that do not use Criterion (the soak, the fuzz
 * target) as well as for the Criterion suites (engine_util.h includes this).
 */
#ifndef WEFT_TESTS_PLAIN_H
#define WEFT_TESTS_PLAIN_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* A 64-bit mix (a finaliser of the MurmurHash3 kind): op bodies' values. */
static inline uint64_t te_mix(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* Resident set size in bytes (/proc/self/statm), -1 on error. */
static inline long te_rss(void)
{
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f)
    return -1;
  long size = 0, res = -1;
  if (fscanf(f, "%ld %ld", &size, &res) != 2)
    res = -1;
  fclose(f);
  return res < 0 ? -1 : res * sysconf(_SC_PAGESIZE);
}

#endif /* WEFT_TESTS_PLAIN_H */
