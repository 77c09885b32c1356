/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the Criterion suites (header only; every suite is its
 * own executable, so everything here is static).
 *
 * Rules the suites follow:
 *  - Criterion assertions are made on the test's own thread only. Other
 *    threads (workers, thieves, submitters) record problems with TU_CHECK,
 *    and the test thread turns them into a failure with tu_assert_no_errors.
 *  - Nothing asserts on time. Deadlines (TU_WAIT_UNTIL, barriers in tasks)
 *    only turn a hang into a clear failure; Criterion's .timeout is the last
 *    watchdog.
 *  - Iteration counts go through tu_scaled: WEFT_TEST_SCALE (a positive
 *    factor, e.g. 0.2) multiplies them; without it WEFT_TEST_SCALE_DEFAULT,
 *    which tests/meson.build sets for sanitizer builds, else 1.
 */
#ifndef WEFT_TESTS_TESTUTIL_H
#define WEFT_TESTS_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef WEFT_TEST_MINI_RUNNER
#include "minirunner.h" /* ThreadSanitizer builds: see there */
#else
#include <criterion/criterion.h>
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

/* Criterion .timeout values are constants; sanitizer builds compile the
 * suites with a larger multiplier (tests/meson.build). */
#ifndef WEFT_TEST_TIMEOUT_MULT
#define WEFT_TEST_TIMEOUT_MULT 1
#endif
#define TU_TIMEOUT(seconds) ((double)(seconds) * WEFT_TEST_TIMEOUT_MULT)

/* Deadline for in-test waits: generous, never a performance claim. */
#define TU_DEADLINE_S (25.0 * WEFT_TEST_TIMEOUT_MULT)

/* ------------------------------------------------------------------ scale */

static inline double tu_scale(void)
{
  const char *names[] = {"WEFT_TEST_SCALE", "WEFT_TEST_SCALE_DEFAULT"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *s = getenv(names[i]);
    if (s && *s) {
      char *end = NULL;
      double v = strtod(s, &end);
      if (end && *end == '\0' && v > 0.0 && v <= 1000.0)
        return v;
    }
  }
  return 1.0;
}

/* n scaled, at least min. */
static inline long tu_scaled(long n, long min)
{
  double v = (double)n * tu_scale();
  long r = (long)v;
  return r < min ? min : r;
}

/* --------------------------------------------------------------- time etc */

static inline double tu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void tu_sleep_us(long us)
{
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Polls cond (yielding, then sleeping briefly) until it holds or timeout_s
 * passes; evaluates to whether it held. */
#define TU_WAIT_UNTIL(cond, timeout_s)                                  \
  __extension__({                                                       \
    double tu_deadline_ = tu_now() + (timeout_s);                       \
    bool tu_ok_ = false;                                                \
    for (unsigned tu_i_ = 0;; tu_i_++) {                                \
      if (cond) {                                                       \
        tu_ok_ = true;                                                  \
        break;                                                          \
      }                                                                 \
      if (tu_now() > tu_deadline_)                                      \
        break;                                                          \
      if (tu_i_ < 64)                                                   \
        sched_yield();                                                  \
      else                                                              \
        tu_sleep_us(200);                                               \
    }                                                                   \
    tu_ok_;                                                             \
  })

/* xorshift64*: cheap per-thread randomness. */
static inline uint64_t tu_rand(uint64_t *s)
{
  uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ------------------------------------------------- errors from other threads */

static atomic_long tu_errors_;
static pthread_mutex_t tu_errmu_ = PTHREAD_MUTEX_INITIALIZER;
static char tu_errmsg_[512];

static inline void tu_record_error(const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
static inline void tu_record_error(const char *file, int line, const char *fmt, ...)
{
  if (atomic_fetch_add(&tu_errors_, 1) == 0) {
    pthread_mutex_lock(&tu_errmu_);
    int k = snprintf(tu_errmsg_, sizeof tu_errmsg_, "%s:%d: ", file, line);
    if (k < 0 || (size_t)k >= sizeof tu_errmsg_)
      k = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_errmsg_ + k, sizeof tu_errmsg_ - (size_t)k, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&tu_errmu_);
  }
}

/* Usable from any thread (a task, a thief, a submitter). */
#define TU_CHECK(cond, ...)                                   \
  do {                                                        \
    if (!(cond))                                              \
      tu_record_error(__FILE__, __LINE__, __VA_ARGS__);       \
  } while (0)

static inline void tu_assert_no_errors(void)
{
  long n = atomic_load(&tu_errors_);
  if (n != 0) {
    pthread_mutex_lock(&tu_errmu_);
    char copy[sizeof tu_errmsg_];
    memcpy(copy, tu_errmsg_, sizeof copy);
    pthread_mutex_unlock(&tu_errmu_);
    cr_assert_fail("%ld check(s) failed off the test thread; first: %s", n, copy);
  }
}

/* ------------------------------------------------------------------ pools */

/* Unsets every variable weft_pool_create reads, so a developer's or CI's
 * environment cannot change what a test expects. */
static inline void tu_clear_weft_env(void)
{
  unsetenv("WEFT_NUM_THREADS");
  unsetenv("WEFT_SPIN_COUNT");
  unsetenv("WEFT_AFFINITY");
  unsetenv("WEFT_PROFILE");
}

/* A pool with explicit threads and spin count (-1: automatic), name NULL. */
static inline weft_pool *tu_pool(int threads, int spin)
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = threads;
  cfg.spin_count = spin;
  cfg.affinity = "none";
  weft_pool *p = NULL;
  int rc = weft_pool_create(&p, &cfg);
  cr_assert_eq(rc, 0, "weft_pool_create(%d threads, spin %d) = %d (%s)", threads, spin, rc,
               weft_strerror(rc));
  cr_assert_not_null(p, "weft_pool_create returned 0 but no pool");
  cr_assert_eq(weft_pool_num_threads(p), threads, "pool has %d threads, asked for %d",
               weft_pool_num_threads(p), threads);
  return p;
}

static inline void tu_destroy(weft_pool *p)
{
  int rc = weft_pool_destroy(p);
  cr_assert_eq(rc, 0, "weft_pool_destroy = %d (%s)", rc, weft_strerror(rc));
}

/* Sum of one stats field over every worker; -1 if stats failed. */
#define TU_STATS_SUM(pool, field)                                          \
  __extension__({                                                          \
    weft_worker_stats tu_st_[64];                                          \
    int tu_k_ = weft_pool_stats((pool), tu_st_, 64);                       \
    long long tu_sum_ = tu_k_ < 0 ? -1 : 0;                                \
    for (int tu_j_ = 0; tu_j_ < tu_k_; tu_j_++)                            \
      tu_sum_ += (long long)tu_st_[tu_j_].field;                           \
    tu_sum_;                                                               \
  })

/* --------------------------------------------------------- threads, procfs */

/* Entries in /proc/self/task: the threads of this process. */
static inline int tu_thread_count(void)
{
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* The thread count to compare against later: runtimes may start a helper
 * thread of their own at the first pthread_create (ThreadSanitizer does),
 * so start and join one thread first. */
static inline void *tu_noop_thread_(void *arg)
{
  return arg;
}

static inline int tu_thread_baseline(void)
{
  pthread_t t;
  if (pthread_create(&t, NULL, tu_noop_thread_, NULL) == 0)
    pthread_join(t, NULL);
  int n = tu_thread_count();
  /* Let a just-joined thread leave /proc, and a helper thread appear. */
  for (int i = 0; i < 20; i++) {
    tu_sleep_us(1000);
    int m = tu_thread_count();
    if (m == n && i >= 2)
      break;
    n = m;
  }
  return n;
}

/* A thread leaves /proc/self/task a moment after pthread_join returns, so
 * wait (bounded) for the count to settle at want. Returns the last count. */
static inline int tu_wait_thread_count(int want)
{
  int n = tu_thread_count();
  TU_WAIT_UNTIL((n = tu_thread_count()) == want, 10.0);
  return n;
}

/* Number of threads whose comm equals name exactly. */
static inline int tu_threads_named(const char *name)
{
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[300], comm[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue; /* the thread exited meanwhile */
    if (fgets(comm, sizeof comm, f)) {
      comm[strcspn(comm, "\n")] = '\0';
      if (strcmp(comm, name) == 0)
        n++;
    }
    fclose(f);
  }
  closedir(d);
  return n;
}

/* The calling thread's name. */
static inline void tu_my_comm(char *buf, size_t size)
{
  buf[0] = '\0';
  FILE *f = fopen("/proc/thread-self/comm", "r");
  if (!f)
    return;
  if (fgets(buf, (int)size, f))
    buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
}

/* CPUs this process may use, and the lowest one. */
static inline int tu_allowed_cpus(cpu_set_t *set)
{
  CPU_ZERO(set);
  if (sched_getaffinity(0, sizeof *set, set) != 0)
    return -1;
  return CPU_COUNT(set);
}

static inline int tu_first_allowed_cpu(void)
{
  cpu_set_t set;
  tu_allowed_cpus(&set);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set))
      return c;
  return 0;
}

/* Pins the calling thread to one CPU. */
static inline int tu_pin_self(int cpu)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set);
}

/* ---------------------------------------------------------------- leaks */

#if defined(__SANITIZE_ADDRESS__)
#define TU_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_HAVE_LSAN 1
#endif
#endif
#ifdef TU_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* In an ASan build, fails the test if anything allocated so far is no
 * longer reachable (LeakSanitizer prints the report). Criterion would
 * otherwise pass a test whose process leaks at exit. Elsewhere a no-op.
 * (Allocations the library makes through jemalloc are invisible to it:
 * configure sanitizer builds with -Djemalloc=disabled.) */
#ifdef TU_HAVE_LSAN
#define tu_assert_no_leaks()                                          \
  cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,                 \
               "LeakSanitizer found unreachable memory (report above)")
#else
#define tu_assert_no_leaks() ((void)0)
#endif

/* ------------------------------------------------------- library messages */

/* The library's messages (weft_set_log_callback(tu_log_cb, &buf)), one a
 * line, as many as fit; seen is set once a message contains watch (if not
 * NULL). Initialise with TU_LOGBUF_INIT or TU_LOGBUF_WATCH("text"). */
typedef struct tu_logbuf {
  pthread_mutex_t mu;
  char text[4096];   /* under mu */
  const char *watch; /* immutable */
  atomic_int seen;
} tu_logbuf;
#define TU_LOGBUF_INIT {PTHREAD_MUTEX_INITIALIZER, "", NULL, 0}
#define TU_LOGBUF_WATCH(what) {PTHREAD_MUTEX_INITIALIZER, "", (what), 0}

static inline void tu_log_cb(void *arg, const char *msg)
{
  tu_logbuf *l = arg;
  pthread_mutex_lock(&l->mu);
  strncat(l->text, msg, sizeof l->text - strlen(l->text) - 2);
  strcat(l->text, "\n");
  pthread_mutex_unlock(&l->mu);
  if (l->watch && strstr(msg, l->watch))
    atomic_store(&l->seen, 1);
}

/* -------------------------------------------------------- stderr capture */

/* Captures what is written to fd 2 between begin and end into a temporary
 * file (a file, not a pipe: a chatty library cannot block on it). */
typedef struct tu_capture {
  int saved;
  int file;
} tu_capture;

static inline void tu_capture_begin(tu_capture *c)
{
  fflush(stderr);
  char path[] = "/tmp/weft-test-stderr-XXXXXX";
  c->file = mkstemp(path);
  cr_assert(c->file >= 0, "mkstemp failed: %s", strerror(errno));
  unlink(path);
  c->saved = dup(2);
  cr_assert(c->saved >= 0, "dup(2) failed");
  cr_assert(dup2(c->file, 2) == 2, "dup2 failed");
}

/* Restores fd 2 and returns what was written (NUL-terminated, truncated to
 * size - 1). */
static inline void tu_capture_end(tu_capture *c, char *buf, size_t size)
{
  fflush(stderr);
  dup2(c->saved, 2);
  close(c->saved);
  ssize_t n = pread(c->file, buf, size - 1, 0);
  buf[n > 0 ? (size_t)n : 0] = '\0';
  close(c->file);
}

/* Whether one line of text contains every one of the needles. */
static inline bool tu_line_has_all(const char *text, const char *a, const char *b, const char *c)
{
  const char *line = text;
  while (*line) {
    size_t len = strcspn(line, "\n");
    char tmp[1024];
    size_t k = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
    memcpy(tmp, line, k);
    tmp[k] = '\0';
    if ((!a || strstr(tmp, a)) && (!b || strstr(tmp, b)) && (!c || strstr(tmp, c)))
      return true;
    line += len;
    if (*line == '\n')
      line++;
  }
  return false;
}

/* With var=value in the environment, create(ctx) must fail with WEFT_EINVAL,
 * print one "weft: " line naming the variable and the value, and leave no
 * thread behind (base: the thread count before). what names the call.
 * Returns create's result. */
static inline int tu_expect_env_einval(const char *var, const char *value, const char *what,
                                       int (*create)(void *ctx), void *ctx, int base)
{
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = create(ctx);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL, "%s=\"%s\": %s = %d (%s)", var, value, what, rc,
               weft_strerror(rc));
  cr_assert(tu_line_has_all(err, "weft: ", var, value),
            "%s=\"%s\", %s: no stderr line with \"weft: \", the name and the value; stderr "
            "was \"%s\"",
            var, value, what, err);
  cr_assert_eq(tu_wait_thread_count(base), base, "%s=\"%s\", %s: threads left after the failure",
               var, value, what);
  return rc;
}

#endif /* WEFT_TESTS_TESTUTIL_H */
