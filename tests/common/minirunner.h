/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the part of Criterion the suites use, for ThreadSanitizer
 * builds only: Criterion's sandbox (BoxFort) maps its shared arena at a
 * random fixed address that TSan's memory layout refuses, so a Criterion
 * binary built with -fsanitize=thread aborts before running anything
 * ("Could not initialize inheritable arena": a known limitation of Criterion).
 *
 * Same spelling as Criterion's classic API (Test(suite, name, .init, .fini,
 * .timeout), cr_assert*, cr_skip_test, cr_log_info), same model: each test
 * runs in its own child process (this program, re-executed), one at a time;
 * a parent-side timeout kills a hung child. The child exits through exit(), so TSan's report (exit code
 * 66) fails the test that caused it. Options: --filter PATTERN (fnmatch on
 * suite/name), --list, --tap[=FILE] (a TAP report as Criterion writes it:
 * FILE, or stderr without one or with "-"; tests/meson.build reads it from
 * stdout, protocol 'tap'); --jobs/-jN and --verbose are accepted and ignored.
 *
 * Assertions only work on the test's own thread (the suites never assert
 * elsewhere; see testutil.h).
 */
#ifndef WEFT_TESTS_MINIRUNNER_H
#define WEFT_TESTS_MINIRUNNER_H

#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct mr_extra {
  void (*init)(void);
  void (*fini)(void);
  double timeout;
  const char *description;
  bool disabled;
};

struct mr_test {
  const char *suite, *name;
  void (*fn)(void);
  struct mr_extra x;
  struct mr_test *next;
};

static struct mr_test *mr_head_;
static struct mr_test **mr_tail_ = &mr_head_;

static inline void mr_register_(struct mr_test *t)
{
  *mr_tail_ = t;
  mr_tail_ = &t->next;
}

#define Test(Suite, Name, ...)                                                     \
  static void mr_fn_##Suite##_##Name(void);                                       \
  static struct mr_test mr_t_##Suite##_##Name;                                    \
  __attribute__((constructor)) static void mr_reg_##Suite##_##Name(void)          \
  {                                                                               \
    struct mr_extra x = {__VA_ARGS__};                                            \
    mr_t_##Suite##_##Name = (struct mr_test){#Suite, #Name, mr_fn_##Suite##_##Name, x, NULL}; \
    mr_register_(&mr_t_##Suite##_##Name);                                         \
  }                                                                               \
  static void mr_fn_##Suite##_##Name(void)

/* The message arguments are optional: the macros append "" so that the
 * format is never missing; printf ignores the extra argument. */
static inline void mr_fail_(const char *file, int line, const char *expr, const char *fmt, ...)
{
  fprintf(stderr, "[----] %s:%d: Assertion Failed\n[----]   %s\n", file, line, expr);
  if (fmt && *fmt) {
    va_list ap;
    va_start(ap, fmt);
    fputs("[----]   ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
  }
  fflush(stderr);
  exit(1);
}

static inline void mr_skip_(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("[SKIP] ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  exit(77);
}

static inline void mr_log_(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("[----] ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* text: the macro's arguments as written (stringified before expansion). */
#define MR_ASSERT_(text, cond, ...)                         \
  do {                                                      \
    if (!(cond))                                            \
      mr_fail_(__FILE__, __LINE__, text, __VA_ARGS__);      \
  } while (0)
#define MR_CMP_(op, text, a, b, ...)                        \
  do {                                                      \
    if (!((a)op(b)))                                        \
      mr_fail_(__FILE__, __LINE__, text, __VA_ARGS__);      \
  } while (0)
#define MR_STR_(op, text, a, b, ...)                        \
  do {                                                      \
    if (!(strcmp((a), (b)) op 0))                           \
      mr_fail_(__FILE__, __LINE__, text, __VA_ARGS__);      \
  } while (0)
#define MR_NULL_(op, text, p, ...) MR_CMP_(op, text, (const void *)(p), NULL, __VA_ARGS__)

#define cr_assert(...) MR_ASSERT_("cr_assert(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define MR_NOT_(text, cond, ...) MR_ASSERT_(text, !(cond), __VA_ARGS__)
#define cr_assert_not(...) MR_NOT_("cr_assert_not(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_eq(...) MR_CMP_(==, "cr_assert_eq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_neq(...) MR_CMP_(!=, "cr_assert_neq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_lt(...) MR_CMP_(<, "cr_assert_lt(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_leq(...) MR_CMP_(<=, "cr_assert_leq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_gt(...) MR_CMP_(>, "cr_assert_gt(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_geq(...) MR_CMP_(>=, "cr_assert_geq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_null(...) MR_NULL_(==, "cr_assert_null(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_not_null(...) \
  MR_NULL_(!=, "cr_assert_not_null(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_str_eq(...) MR_STR_(==, "cr_assert_str_eq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_str_neq(...) MR_STR_(!=, "cr_assert_str_neq(" #__VA_ARGS__ ")", __VA_ARGS__, "")
#define cr_assert_fail(...) mr_fail_(__FILE__, __LINE__, "cr_assert_fail", __VA_ARGS__, "")
#define cr_skip_test(...) mr_skip_(__VA_ARGS__, "")
#define cr_log_info(...) mr_log_(__VA_ARGS__, "")
#define cr_log_warn(...) mr_log_(__VA_ARGS__, "")

static inline double mr_now_(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* In the child: runs the test in this fresh process and exits. */
static inline void mr_child_(const struct mr_test *t)
{
  if (t->x.init)
    t->x.init();
  t->fn();
  if (t->x.fini)
    t->x.fini();
  fflush(stdout);
  fflush(stderr);
  exit(0);
}

/* Runs one test in a child process; 0 pass, 1 fail, 2 skip. The child
 * re-executes this program (fork + exec, not a bare fork), so it starts
 * with none of the parent's allocator or sanitizer state. */
static inline int mr_run_one_(const struct mr_test *t, const char *self)
{
  fflush(stdout);
  fflush(stderr);
  char full[256];
  snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
  double start = mr_now_();
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    execl("/proc/self/exe", self, "--mr-run-one", full, (char *)NULL);
    perror("exec /proc/self/exe");
    _exit(127);
  }
  int status = 0;
  bool timed_out = false;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      break;
    if (r < 0) {
      perror("waitpid");
      return 1;
    }
    if (t->x.timeout > 0 && mr_now_() - start > t->x.timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  double took = mr_now_() - start;
  if (timed_out) {
    fprintf(stderr, "[FAIL] %s::%s: Timed out. (%.2fs)\n", t->suite, t->name, took);
    return 1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    fprintf(stderr, "[PASS] %s::%s: (%.2fs)\n", t->suite, t->name, took);
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    fprintf(stderr, "[SKIP] %s::%s\n", t->suite, t->name);
    return 2;
  }
  if (WIFEXITED(status))
    fprintf(stderr, "[FAIL] %s::%s: exit status %d%s (%.2fs)\n", t->suite, t->name,
            WEXITSTATUS(status), WEXITSTATUS(status) == 66 ? " (ThreadSanitizer report)" : "",
            took);
  else
    fprintf(stderr, "[FAIL] %s::%s: CRASH! signal %d (%.2fs)\n", t->suite, t->name,
            WTERMSIG(status), took);
  return 1;
}

int main(int argc, char **argv)
{
  const char *filter = NULL;
  const char *tap_path = NULL;
  bool list = false;
  if (argc == 3 && strcmp(argv[1], "--mr-run-one") == 0) {
    for (const struct mr_test *t = mr_head_; t; t = t->next) {
      char full[256];
      snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
      if (strcmp(full, argv[2]) == 0)
        mr_child_(t);
    }
    fprintf(stderr, "no test %s\n", argv[2]);
    return 127;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
      filter = argv[++i];
    else if (strncmp(argv[i], "--filter=", 9) == 0)
      filter = argv[i] + 9;
    else if (strcmp(argv[i], "--list") == 0 || strcmp(argv[i], "-l") == 0)
      list = true;
    else if (strcmp(argv[i], "--tap") == 0)
      tap_path = "-";
    else if (strncmp(argv[i], "--tap=", 6) == 0)
      tap_path = argv[i] + 6;
    else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc)
      i++;
    /* -jN, --verbose[=n] and anything else: ignored */
  }
  /* TAP: the plan first (the tests the filter selects), then one line per
   * test as it ends: "ok N - suite::name", "not ok N - suite::name", or
   * "ok N - suite::name # SKIP" (skipped or disabled). */
  FILE *tap = NULL;
  if (tap_path && !list) {
    tap = (*tap_path == '\0' || strcmp(tap_path, "-") == 0) ? stderr : fopen(tap_path, "we");
    if (!tap) {
      perror(tap_path);
      return 1;
    }
    int planned = 0;
    for (const struct mr_test *t = mr_head_; t; t = t->next) {
      char full[256];
      snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
      planned += !filter || fnmatch(filter, full, 0) == 0;
    }
    fprintf(tap, "TAP version 13\n1..%d\n", planned);
    fflush(tap);
  }
  int pass = 0, fail = 0, skip = 0, num = 0;
  for (const struct mr_test *t = mr_head_; t; t = t->next) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
    if (filter && fnmatch(filter, full, 0) != 0)
      continue;
    if (list) {
      printf("%s::%s\n", t->suite, t->name);
      continue;
    }
    int r = 2;
    if (!t->x.disabled)
      r = mr_run_one_(t, argv[0]);
    pass += r == 0;
    fail += r == 1;
    skip += r == 2;
    if (tap) {
      fprintf(tap, "%s %d - %s::%s%s\n", r == 1 ? "not ok" : "ok", ++num, t->suite, t->name,
              r == 2 ? (t->x.disabled ? " # SKIP disabled" : " # SKIP") : "");
      fflush(tap);
    }
  }
  if (tap && tap != stderr)
    fclose(tap);
  if (!list)
    /* Criterion's closing line (a failure and a crash count alike here). */
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0\n",
            pass + fail + skip, pass, fail);
  return fail ? 1 : 0;
}

#endif /* WEFT_TESTS_MINIRUNNER_H */
