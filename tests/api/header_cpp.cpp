// SPDX-License-Identifier: MIT
// weft.h from C++17 (compiled by header_compile.sh with -std=c++17 -Wall
// -Wextra -pedantic -Werror), linked against the C library and run: the
// declarations must have C linkage and the types must be usable from C++.
#include <weft/weft.h>
#include <weft/weft.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(WEFT_EINVAL != WEFT_ENOMEM, "distinct codes");
static_assert(std::is_trivially_copyable<weft_group>::value, "weft_group is plain data");
static_assert(std::is_standard_layout<weft_pool_config>::value, "config is plain data");

namespace {

std::atomic<int> counter{0};

extern "C" int count_task(void *)
{
  counter.fetch_add(1);
  return 0;
}

int range_fn(std::size_t b, std::size_t e, void *)
{
  counter.fetch_add(static_cast<int>(e - b));
  return 0;
}

int launch_fn(void *, int, int)
{
  counter.fetch_add(1);
  return 0;
}

} // namespace

int main()
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 2;
  weft_pool *pool = nullptr;
  int rc = weft_pool_create(&pool, &cfg);
  if (rc != 0) {
    std::fprintf(stderr, "create: %s\n", weft_strerror(rc));
    return 1;
  }
  weft_group g;
  weft_group_init(&g, pool);
  for (int i = 0; i < 10; i++)
    if (weft_group_spawn(&g, count_task, nullptr) != 0)
      return 2;
  if (weft_group_wait(&g) != 0 || counter.load() != 10)
    return 3;
  if (weft_parallel_for(pool, 0, 100, 0, range_fn, nullptr) != 0 || counter.load() != 110)
    return 4;
  if (weft_parallel_launch(pool, launch_fn, nullptr, 5) != 0 || counter.load() != 115)
    return 5;
  if (weft_pool_destroy(pool) != 0)
    return 6;
  std::printf("weft %s from C++17: ok\n", WEFT_VERSION_STRING);
  return std::strlen(weft_strerror(0)) > 0 ? 0 : 7;
}
