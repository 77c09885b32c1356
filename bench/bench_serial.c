/*
 * bench_serial: the serial baselines, the same kernels with no runtime at all.
 *
 *   bench_serial --workload fib|pfor_imb|pfor_fine --threads N --reps R [--quick]
 *
 * --threads is accepted and ignored (one thread; the JSON says threads 1).
 * The runner derives "perfect split" = serial time / threads from it.
 * fib here is the plain recursion (no spawns), the work fib(30) does.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char RT[] = "serial";

/* keeps the compiler from hoisting a repetition's work out of the loop */
static volatile int fib_n = BENCH_FIB_N;

/* fib through a volatile argument, so the compiler cannot fold the call. */
static uint64_t fib_opaque(int n) {
  fib_n = n;
  return bench_fib_serial(fib_n);
}

static volatile size_t imb_n = BENCH_IMB_N, fine_n = BENCH_FINE_N;

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib", "pfor_imb", "pfor_fine", NULL};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  bench_series s;
  bench_series_init(&s, a.reps);

  if (!strcmp(a.workload, "fib")) {
    bench_time_fib(&a, &s, fib_opaque, NULL);
    bench_emit(RT, "fib", 1, "ms", &s, NULL);
  } else if (!strcmp(a.workload, "pfor_imb")) {
    uint64_t want = bench_imb_expected();
    for (int r = 0; r < a.reps; r++) {
      uint64_t t0 = bench_now_ns();
      uint64_t v = bench_imb_range(0, imb_n);
      uint64_t t1 = bench_now_ns();
      bench_check_u64("pfor_imb sum", v, want);
      bench_series_add(&s, (double)(t1 - t0) / 1e6);
    }
    bench_emit(RT, "pfor_imb", 1, "ms", &s, NULL);
  } else {
    uint32_t *out = bench_fine_alloc();
    for (int r = -1; r < a.reps; r++) {
      uint32_t seed = bench_fine_seed(r + 1);
      uint64_t t0 = bench_now_ns();
      bench_fine_range(out, 0, fine_n, seed);
      uint64_t t1 = bench_now_ns();
      size_t bad = bench_fine_check(out, seed);
      if (bad)
        bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
      if (r >= 0)
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
    }
    bench_emit(RT, "pfor_fine", 1, "ms", &s, NULL);
    free(out);
  }
  bench_series_free(&s);
  return bench_exit_code();
}
