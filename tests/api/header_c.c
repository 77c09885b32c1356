/* SPDX-License-Identifier: MIT */
/*
 * weft.h on its own, as strict C11 (compiled by header_compile.sh with
 * -std=c11 -pedantic -Wall -Wextra -Werror), linked against the shared
 * library and run. Nothing is included before the header: it must be
 * self-contained, and including it twice must be harmless.
 */
#include <weft/weft.h>
#include <weft/weft.h>

#include <stdio.h>
#include <string.h>

_Static_assert(WEFT_EINVAL < 0 && WEFT_ENOMEM < 0 && WEFT_EAGAIN < 0 && WEFT_ESHUTDOWN < 0 &&
                   WEFT_EDEADLK < 0 && WEFT_ENODEV < 0 && WEFT_EDEVICE < 0,
               "error codes are negative");
_Static_assert(sizeof(weft_group) >= sizeof(void *), "weft_group is a complete type");

static int add_one(void *arg)
{
  ++*(int *)arg;
  return 0;
}

static int sum_range(size_t begin, size_t end, void *arg)
{
  (void)arg;
  return begin < end ? 0 : 1;
}

static int launch_fn(void *arg, int id, int num_tasks)
{
  (void)arg;
  return id >= 0 && id < num_tasks ? 0 : 1;
}

int main(void)
{
  weft_task_fn tf = add_one;
  weft_range_fn rf = sum_range;
  weft_launch_fn lf = launch_fn;
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 2;
  cfg.name = "hdr";
  weft_pool *pool = NULL;
  int rc = weft_pool_create(&pool, &cfg);
  if (rc != 0) {
    fprintf(stderr, "create: %s\n", weft_strerror(rc));
    return 1;
  }
  int x = 0;
  weft_group g;
  weft_group_init(&g, pool);
  if (weft_group_spawn(&g, tf, &x) != 0 || weft_group_wait(&g) != 0 || x != 1)
    return 2;
  if (weft_parallel_for(pool, 0, 1000, 0, rf, NULL) != 0)
    return 3;
  if (weft_parallel_launch(pool, lf, NULL, 8) != 0)
    return 4;
  weft_worker_stats st[2];
  if (weft_pool_stats(pool, st, 2) != 2 || weft_pool_num_threads(pool) != 2)
    return 5;
  if (weft_current_worker() != -1)
    return 6;
  if (weft_pool_destroy(pool) != 0)
    return 7;
  printf("weft %s from C11: ok\n", WEFT_VERSION_STRING);
  return strlen(weft_strerror(WEFT_EINVAL)) > 0 ? 0 : 8;
}
