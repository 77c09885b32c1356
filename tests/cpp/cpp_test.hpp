// Helpers shared by the C++ suites (header only; each suite is one
// executable). The C suites' testutil.h is C only (stdatomic.h, statement
// expressions), so the few helpers the C++ suites need are here, spelled
// for C++, under the same rules:
//  - assertions (cr_assert*) only on the test's own thread; other threads
//    record problems with CT_CHECK, and ct::assert_no_errors() turns them
//    into a failure on the test thread;
//  - nothing asserts on time: deadlines only turn a hang into a failure;
//  - iteration counts go through ct::scaled (WEFT_TEST_SCALE, else
//    WEFT_TEST_SCALE_DEFAULT, which sanitizer builds set).
//
// CT_TEST(Suite, Name, Seconds) defines a test with a watchdog of Seconds
// (times WEFT_TEST_TIMEOUT_MULT): a Criterion test, or under ThreadSanitizer
// (-DWEFT_TEST_MINI_RUNNER, tests/meson.build) one of tests/common/
// minirunner.h, which runs it in a child process of its own as Criterion
// does. The mini runner's own Test() initialises its options with C
// designated initialisers, which C++17 lacks, so CT_TEST registers with it
// directly.
#ifndef WEFT_TESTS_CPP_TEST_HPP
#define WEFT_TESTS_CPP_TEST_HPP

#ifdef WEFT_TEST_MINI_RUNNER
#include "../common/minirunner.h"
#else
#include <criterion/criterion.h>
#endif

#include <weft/weft.hpp>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define CT_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_HAVE_LSAN 1
#endif
#endif
#ifdef CT_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#ifndef WEFT_TEST_TIMEOUT_MULT
#define WEFT_TEST_TIMEOUT_MULT 1
#endif
#define CT_TIMEOUT(seconds) (static_cast<double>(seconds) * WEFT_TEST_TIMEOUT_MULT)

#ifdef WEFT_TEST_MINI_RUNNER
#define CT_TEST(Suite, Name, Seconds)                                                              \
  static void mr_fn_##Suite##_##Name();                                                            \
  static mr_test mr_t_##Suite##_##Name = {#Suite,                                                  \
                                          #Name,                                                   \
                                          mr_fn_##Suite##_##Name,                                  \
                                          {nullptr, nullptr, CT_TIMEOUT(Seconds), nullptr, false}, \
                                          nullptr};                                                \
  __attribute__((constructor)) static void mr_reg_##Suite##_##Name()                               \
  {                                                                                                \
    mr_register_(&mr_t_##Suite##_##Name);                                                          \
  }                                                                                                \
  static void mr_fn_##Suite##_##Name()
#else
#define CT_TEST(Suite, Name, Seconds) Test(Suite, Name, .timeout = CT_TIMEOUT(Seconds))
#endif

// The status of a call, as an int for cr_assert_eq, with its name in the
// message: CT_EXPECT(eng.wait_all(), 0).
#define CT_EXPECT(call, want)                                                                      \
  do {                                                                                             \
    const int ct_got_ = (call).code();                                                             \
    const int ct_want_ = (want);                                                                   \
    cr_assert_eq(ct_got_, ct_want_, "%s = %d (%s), expected %d (%s)", #call, ct_got_,              \
                 weft_strerror(ct_got_), ct_want_, weft_strerror(ct_want_));                       \
  } while (0)

namespace ct {

inline double scale()
{
  for (const char *name : {"WEFT_TEST_SCALE", "WEFT_TEST_SCALE_DEFAULT"}) {
    const char *s = std::getenv(name);
    if (s && *s) {
      char *end = nullptr;
      double v = std::strtod(s, &end);
      if (end && *end == '\0' && v > 0.0 && v <= 1000.0)
        return v;
    }
  }
  return 1.0;
}

// n scaled, at least min.
inline long scaled(long n, long min)
{
  long r = static_cast<long>(static_cast<double>(n) * scale());
  return r < min ? min : r;
}

// Deadline for in-test waits: generous, never a performance claim.
inline double deadline_s()
{
  return 25.0 * WEFT_TEST_TIMEOUT_MULT;
}

// Polls cond until it holds or timeout_s passes; whether it held.
template <class F>
bool wait_until(F cond, double timeout_s = deadline_s())
{
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (unsigned i = 0;; i++) {
    if (cond())
      return true;
    if (std::chrono::steady_clock::now() > end)
      return false;
    if (i < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Problems seen off the test thread: the count and the first message.
inline std::atomic<long> &error_count()
{
  static std::atomic<long> n{0};
  return n;
}
inline std::mutex &error_mutex()
{
  static std::mutex m;
  return m;
}
inline char *error_text()
{
  static char text[512];
  return text;
}

__attribute__((format(printf, 3, 4))) inline void record_error(const char *file, int line,
                                                               const char *fmt, ...)
{
  if (error_count().fetch_add(1) == 0) {
    std::lock_guard<std::mutex> lock(error_mutex());
    int k = std::snprintf(error_text(), 512, "%s:%d: ", file, line);
    if (k < 0 || k >= 512)
      k = 0;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(error_text() + k, static_cast<size_t>(512 - k), fmt, ap);
    va_end(ap);
  }
}

inline void assert_no_errors()
{
  long n = error_count().load();
  if (n != 0) {
    char copy[512];
    {
      std::lock_guard<std::mutex> lock(error_mutex());
      std::memcpy(copy, error_text(), sizeof copy);
    }
    cr_assert_fail("%ld check(s) failed off the test thread; first: %s", n, copy);
  }
}

// Unsets every variable that pools and engines read, so that the
// environment cannot change what a test expects.
inline void clear_env()
{
  for (const char *v : {"WEFT_NUM_THREADS", "WEFT_SPIN_COUNT", "WEFT_AFFINITY", "WEFT_PROFILE",
                        "WEFT_ENGINE", "WEFT_MAX_INFLIGHT", "WEFT_GPU_BACKEND"})
    unsetenv(v);
}

// A pool config: threads workers, no pinning.
inline weft_pool_config pool_config(int threads)
{
  weft_pool_config c = weft::pool::default_config();
  c.num_threads = threads;
  c.affinity = "none";
  return c;
}

// Counts the live copies of a callable's capture and how many times it ran:
// a capture holding a tracker is destroyed exactly once when, after
// everything, made == destroyed (every copy, moved-from ones included,
// counts as made and as destroyed) and live() is 0.
struct counts {
  std::atomic<long> made{0};
  std::atomic<long> destroyed{0};
  std::atomic<long> calls{0};
  long live() const { return made.load() - destroyed.load(); }
};

class tracker {
public:
  explicit tracker(counts &c) : c_(&c), payload_(64, 'x') { c_->made++; }
  tracker(const tracker &o) : c_(o.c_), payload_(o.payload_) { c_->made++; }
  tracker(tracker &&o) noexcept : c_(o.c_), payload_(std::move(o.payload_)) { c_->made++; }
  tracker &operator=(const tracker &) = delete;
  ~tracker() { c_->destroyed++; }
  // Counts a call; false (and recorded) if the payload is gone.
  bool call() const
  {
    c_->calls++;
    return payload_.size() == 64;
  }

private:
  counts *c_;
  std::string payload_; // non-trivial: the capture goes to the heap
};

} // namespace ct

// Usable from any thread.
#define CT_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ct::record_error(__FILE__, __LINE__, __VA_ARGS__);                                           \
  } while (0)

// In an ASan build, fails the test if anything allocated so far is no
// longer reachable; elsewhere a no-op.
#ifdef CT_HAVE_LSAN
#define ct_assert_no_leaks()                                                                       \
  cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,                                              \
               "LeakSanitizer found unreachable memory (report above)")
#else
#define ct_assert_no_leaks() ((void)0)
#endif

#endif // WEFT_TESTS_CPP_TEST_HPP
