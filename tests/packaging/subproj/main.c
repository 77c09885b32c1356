/* SPDX-License-Identifier: MIT */
/* Uses weft as a meson subproject: a parallel loop, checked. */
#include <stdio.h>
#include <string.h>
#include <weft/weft.h>

static int fill(size_t begin, size_t end, void *arg)
{
  unsigned *out = arg;
  for (size_t i = begin; i < end; i++)
    out[i] = (unsigned)(3 * i + 1);
  return 0;
}

int main(void)
{
  static unsigned v[100000];
  weft_pool *pool;
  int rc = weft_pool_create(&pool, NULL);
  if (rc) {
    fprintf(stderr, "weft_pool_create: %s\n", weft_strerror(rc));
    return 1;
  }
  rc = weft_parallel_for(pool, 0, sizeof v / sizeof v[0], 0, fill, v);
  weft_pool_destroy(pool);
  size_t bad = 0;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    bad += v[i] != (unsigned)(3 * i + 1);
  int same_version = strcmp(weft_version(), WEFT_VERSION_STRING) == 0;
  printf("consumer: weft %s, parallel_for %s, %zu wrong\n", weft_version(), weft_strerror(rc), bad);
  return rc || bad || !same_version;
}
