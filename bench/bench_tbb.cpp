/*
 * bench_tbb: the bench workloads (harness.h) on oneTBB, the peer for weft.
 *
 *   bench_tbb --workload W --threads N --reps R [--quick]
 *
 * --threads N: tbb::task_arena arena(N) (one slot reserved for the calling
 * thread, N-1 workers) and everything timed runs inside arena.execute, so N
 * threads compute; a global_control caps TBB at N threads in all.
 * fib: tbb::task_group per call (run fib(n-1), fib(n-2) inline, wait).
 * pfor: tbb::parallel_for over a blocked_range with the default
 * auto_partitioner. idle: the burst runs in arena.execute.
 * wake: arena.enqueue from main, a thread outside the arena; that arena is
 * task_arena(N, 0) (no slot reserved for main) and global_control allows
 * N + 1 threads, so N TBB workers serve it, like N weft workers.
 */
#include "harness.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

static const char RT[] = "tbb";

static uint64_t fib(int n) {
  if (n < 2)
    return (uint64_t)n;
  uint64_t x = 0, y;
  tbb::task_group g;
  g.run([&x, n] { x = fib(n - 1); });
  y = fib(n - 2);
  g.wait();
  return x + y;
}

static uint64_t run_imb(size_t begin) {
  std::atomic<uint64_t> sum{0};
  tbb::parallel_for(tbb::blocked_range<size_t>(begin, BENCH_IMB_N),
                    [&sum](const tbb::blocked_range<size_t> &r) {
                      sum.fetch_add(bench_imb_range(r.begin(), r.end()),
                                    std::memory_order_relaxed);
                    });
  return sum.load();
}

static void run_fine(uint32_t *out, uint32_t seed) {
  tbb::parallel_for(tbb::blocked_range<size_t>(0, BENCH_FINE_N),
                    [out, seed](const tbb::blocked_range<size_t> &r) {
                      bench_fine_range(out, r.begin(), r.end(), seed);
                    });
}

struct burst_ctx {
  tbb::task_arena *arena;
  uint32_t *out;
  int round;
};

static void burst(void *p) {
  burst_ctx *b = static_cast<burst_ctx *>(p);
  b->arena->execute([b] {
    for (int k = 0; k < 5; k++) {
      bench_check_u64("burst fib", fib(BENCH_BURST_FIB_N), BENCH_BURST_FIB_RESULT);
      uint32_t seed = bench_fine_seed(b->round++);
      run_fine(b->out, seed);
      if (bench_fine_check(b->out, seed))
        bench_fail("burst pfor_fine: wrong slots");
    }
  });
}

static int submit(void *ctx, bench_task_fn fn, void *arg) {
  static_cast<tbb::task_arena *>(ctx)->enqueue([fn, arg] { fn(arg); });
  return 0;
}

int main(int argc, char **argv) {
  static const char *const supported[] = {"fib", "pfor_imb", "pfor_fine", "idle", "wake", nullptr};
  bench_args a;
  bench_parse_args(argc, argv, RT, supported, &a);
  const int n = a.threads;
  const bool wake = !std::strcmp(a.workload, "wake");
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism,
                         static_cast<size_t>(wake ? n + 1 : n));
  tbb::task_arena arena(n, wake ? 0 : 1);
  arena.initialize();

  bench_series s;
  bench_series_init(&s, a.reps);
  uint32_t *out = nullptr;

  if (!std::strcmp(a.workload, "fib")) {
    arena.execute([&] { bench_time_fib(&a, &s, fib, nullptr); });
    char extra[64];
    std::snprintf(extra, sizeof extra, ",\"spawns\":%u", BENCH_FIB_SPAWNS);
    bench_emit(RT, "fib", n, "ms", &s, extra);
  } else if (!std::strcmp(a.workload, "pfor_imb")) {
    uint64_t want = bench_imb_expected();
    arena.execute([&] {
      for (int r = -1; r < a.reps; r++) {
        uint64_t t0 = bench_now_ns();
        uint64_t v = run_imb(r < 0 ? BENCH_IMB_WARM_BEGIN : 0);
        uint64_t t1 = bench_now_ns();
        if (r < 0)
          continue;
        bench_check_u64("pfor_imb sum", v, want);
        bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    });
    bench_emit(RT, "pfor_imb", n, "ms", &s, ",\"partitioner\":\"auto\"");
  } else if (!std::strcmp(a.workload, "pfor_fine")) {
    out = bench_fine_alloc();
    arena.execute([&] {
      for (int r = -1; r < a.reps; r++) {
        uint32_t seed = bench_fine_seed(r + 1);
        uint64_t t0 = bench_now_ns();
        run_fine(out, seed);
        uint64_t t1 = bench_now_ns();
        size_t bad = bench_fine_check(out, seed);
        if (bad)
          bench_fail("pfor_fine: %zu of %u slots wrong", bad, BENCH_FINE_N);
        if (r >= 0)
          bench_series_add(&s, (double)(t1 - t0) / 1e6);
      }
    });
    bench_emit(RT, "pfor_fine", n, "ms", &s, ",\"partitioner\":\"auto\"");
  } else if (!std::strcmp(a.workload, "idle")) {
    out = bench_fine_alloc();
    burst_ctx b{&arena, out, 0};
    bench_idle_run(RT, &a, burst, &b);
  } else {
    bench_wake_run(RT, &a, submit, &arena,
                   "task_arena(N,0).enqueue from main; N workers");
  }
  bench_series_free(&s);
  std::free(out);
  return bench_exit_code();
}
