/* SPDX-License-Identifier: MIT */
/* Built against an installed weft with CMake (find_package(weft), weft::weft):
 * a parallel loop on a pool and a chain of operators on an engine, checked. */
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

static long acc;

static int add_one(const weft_run_ctx *rc, void *arg) /* writes acc */
{
  (void)rc;
  acc = acc * 2 + *(const int *)arg;
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
  size_t bad = 0;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    bad += v[i] != (unsigned)(3 * i + 1);

  /* 20 operators writing one var run in push order: acc = 2 * acc + k. */
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  weft_engine *eng = NULL;
  weft_var *var = NULL;
  static const int bits[20] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1};
  long expected = 0;
  if (!rc)
    rc = weft_engine_create(&eng, &ec);
  if (!rc)
    rc = weft_var_new(eng, &var);
  for (int k = 0; k < 20 && !rc; k++) {
    weft_op_desc op = {0};
    op.fn = add_one;
    op.arg = (void *)&bits[k];
    op.writes = &var;
    op.num_writes = 1;
    rc = weft_push(eng, &op);
    expected = expected * 2 + bits[k];
  }
  if (!rc)
    rc = weft_wait_all(eng);
  if (eng) {
    int rc2 = weft_engine_destroy(eng);
    if (!rc)
      rc = rc2;
  }
  weft_pool_destroy(pool);

  int same_version = strcmp(weft_version(), WEFT_VERSION_STRING) == 0 &&
                     strcmp(weft_version(), WEFT_TEST_EXPECTED_VERSION) == 0;
  printf("consumer: weft %s (CMake found %s), %s, %zu wrong, engine %ld (expected %ld)\n",
         weft_version(), WEFT_TEST_EXPECTED_VERSION, weft_strerror(rc), bad, acc, expected);
  return rc || bad || acc != expected || !same_version;
}
