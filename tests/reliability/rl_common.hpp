/* SPDX-License-Identifier: MIT */
/*
 * Shared runner for the relacy harnesses (tests/reliability/rl_*.cpp).
 *
 * Each harness re-expresses one of weft's lock-free protocols in C++ over
 * relacy's modelled atomics (rl::atomic, rl::var, rl::atomic_thread_fence),
 * with the same memory orders as the C source, and runs every scenario under
 * relacy's random scheduler (a fixed number of iterations) and its
 * context-bound scheduler (exhaustive over the interleavings with at most
 * `bound` preemptions, and over the stale values a relaxed/acquire load may
 * return). relacy reports data races on rl::var, reads of uninitialised
 * atomics, user assertion failures, deadlocks (every thread blocked) and
 * livelocks.
 *
 * relacy_std.hpp (the std:: aliases) clashes with current libstdc++, so the
 * harnesses use relacy.hpp and the rl:: names. relacy runs threads as fibres
 * in one process; it does not work under ASan/TSan (see meson.build).
 *
 * Mutants: a harness run as `rl_NAME <n>` (see each harness's list) weakens
 * one order; main() then exits 0 only if a checker FAILED, printing which
 * check caught it, so that tests/reliability/mutants.sh can prove the
 * checkers have teeth. The mutant is chosen at run time (WEFT_MUTANT reads
 * weft_rl::mutant), so one executable holds a harness and all its mutants:
 * relacy's templates cost seconds of compiler time per build, and one build
 * per mutant once made the suite's build four times longer.
 */
#ifndef WEFT_TESTS_RL_COMMON_HPP
#define WEFT_TESTS_RL_COMMON_HPP

/* Standard headers first: relacy.hpp defines macros (new, delete, $...)
 * that break them. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include <relacy/relacy.hpp>

namespace weft_rl {

/* The mutant this run checks: 0 for none (the harness proper). Written once
 * by pick_mutant() before any scenario runs; read by the scenarios. */
inline int mutant = 0;

/* `rl_NAME` runs the harness, `rl_NAME <n>` its mutant n (1..count). Any
 * other argument is refused (exit 2), so that a typo cannot pass for a
 * harness run. */
inline void pick_mutant(int argc, char **argv, int count)
{
  if (argc == 1)
    return;
  char *end = nullptr;
  long n = argc == 2 ? std::strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || end == argv[1] || *end != '\0' || n < 1 || n > count) {
    std::fprintf(stderr, "usage: %s [MUTANT]  (MUTANT: 1..%d)\n", argv[0], count);
    std::exit(2);
  }
  mutant = (int)n;
}

} // namespace weft_rl

#define WEFT_MUTANT (weft_rl::mutant)

/* A memory order that mutant `mutated` weakens: rl::mo_WEAK when it runs,
 * rl::mo_STRONG otherwise (with relacy's `$`, as rl::memory_order_X
 * expands to). */
#define WEFT_RL_MO(mutated, weak, strong) ((mutated) ? rl::mo_##weak : rl::mo_##strong), $

namespace weft_rl {

struct outcome {
  int failed = 0;    /* scenario runs that found an error */
  int runs = 0;      /* scenario runs */
  unsigned long long iterations = 0;
};

/* Runs test T under one scheduler; prints one line of figures. */
template <typename T>
bool run_one(const char *name, rl::scheduler_type_e sched, unsigned long long iters, unsigned bound,
             outcome &out)
{
  rl::test_params p;
  /* Not an ostringstream: relacy writes to these streams while its own
   * allocator is active, and a growing string buffer would be freed by the
   * wrong allocator. /dev/null's buffer never grows. A normal build shows
   * relacy's report (with the failing execution's history) on stdout; a
   * mutant, expected to fail, only the verdict line. */
  static std::ofstream null_stream("/dev/null");
  std::fflush(stdout);
  p.search_type = sched;
  p.iteration_count = iters;
  p.context_bound = bound;
  p.output_stream = WEFT_MUTANT ? static_cast<std::ostream *>(&null_stream) : &std::cout;
  p.progress_stream = std::getenv("WEFT_RL_PROGRESS") ? &std::cerr : &null_stream;
  bool ok = rl::simulate<T>(p);
  out.runs++;
  char what[64];
  if (sched == rl::sched_random)
    std::snprintf(what, sizeof what, "random scheduler");
  else
    std::snprintf(what, sizeof what, "context-bound scheduler (bound %u)", bound);
  if (ok) {
    out.iterations += p.stop_iteration;
    std::printf("relacy %-28s %-36s %8llu iterations  OK\n", name, what,
                (unsigned long long)p.stop_iteration);
  } else {
    out.failed++;
    std::printf("relacy %-28s %-36s FAILED at iteration %llu: %s\n", name, what,
                (unsigned long long)p.stop_iteration, rl::test_result_str(p.test_result));
  }
  std::cout.flush();
  std::fflush(stdout);
  return ok;
}

/* Random scheduler, then context-bound; a mutant stops at its first catch. */
template <typename T>
void run_both(const char *name, unsigned long long random_iters, unsigned bound, outcome &out)
{
  if (!run_one<T>(name, rl::sched_random, random_iters, bound, out) && WEFT_MUTANT)
    return;
  run_one<T>(name, rl::sched_bound, 0, bound, out);
}

/* weft_spinlock (common/spinlock.h): an exchange to take it, relaxed
 * reads while it is held, a release store to give it back. */
struct spinlock {
  rl::atomic<int> locked;
  void init() { locked.store(0, rl::memory_order_relaxed); }
  void lock()
  {
    for (;;) {
      if (!locked.exchange(1, rl::memory_order_acquire))
        return;
      while (locked.load(rl::memory_order_relaxed))
        rl::yield(1, $); /* weft_cpu_pause / sched_yield */
    }
  }
  void unlock() { locked.store(0, rl::memory_order_release); }
};

/* The harness's exit status: 0 when every run passed; for a mutant build,
 * 0 when some run failed (the mutant was caught). */
inline int finish(const char *harness, const char *mutant, const outcome &out)
{
  if (!WEFT_MUTANT) {
    std::printf("relacy %s: %d runs, %llu iterations explored, %d failed\n", harness, out.runs,
                out.iterations, out.failed);
    return out.failed ? 1 : 0;
  }
  if (out.failed) {
    std::printf("MUTANT CAUGHT: %s (%s)\n", mutant, harness);
    return 0;
  }
  std::printf("MUTANT NOT CAUGHT: %s (%s): %d runs, %llu iterations passed\n", mutant, harness,
              out.runs, out.iterations);
  return 1;
}

} // namespace weft_rl

/* The fence mutation: acq_rel where the C code has seq_cst. */
#define WEFT_RL_FENCE(mutated)                                                                   \
  rl::atomic_thread_fence((mutated) ? rl::mo_acq_rel : rl::mo_seq_cst, $)

#endif
