/* SPDX-License-Identifier: MIT */
/*
 * WEFT_ASSERT (src/common/assert.h): live in every test build, and a failed
 * one prints file, line, function and expression on stderr, then aborts.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/testutil.h"
#include "common/assert.h"

Test(assert, live_in_test_builds, .timeout = 30)
{
  /* The suites check invariants through WEFT_ASSERT: a test build with
   * NDEBUG (assertions compiled out) checks none of them. scripts/test.sh
   * and the CI's sanitizer builds configure with assertions on; a plain
   * meson setup (release, b_ndebug=if-release) has them off, and says so. */
  if (!WEFT_ASSERTS_ON && !getenv("WEFT_TEST_REQUIRE_ASSERTS"))
    cr_skip_test("WEFT_ASSERT is compiled out in this build (NDEBUG): configure with "
                 "-Db_ndebug=false, as scripts/test.sh does");
  cr_assert_eq(WEFT_ASSERTS_ON, 1, "this test build compiles WEFT_ASSERT out (NDEBUG)");
}

static volatile int forty_one = 41;

enum { FAIL_LINE = __LINE__ + 4 }; /* the WEFT_ASSERT below */
static void fail_one(void)
{
  int x = forty_one;
  WEFT_ASSERT(x == 42);
}

static volatile int evaluations;

static int count_evaluation(void)
{
  return ++evaluations;
}

Test(assert, a_failed_assertion_names_the_place_and_aborts, .timeout = 30)
{
  if (!WEFT_ASSERTS_ON)
    cr_skip_test("WEFT_ASSERT is compiled out in this build (NDEBUG)");
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0, "fork failed");
  if (pid == 0) { /* the child: stderr into the pipe, then the failing assertion */
    dup2(fds[1], 2);
    close(fds[0]);
    fail_one();
    _exit(0); /* not reached when the assertion fires */
  }
  close(fds[1]);
  char buf[1024];
  size_t len = 0;
  ssize_t k;
  while (len < sizeof buf - 1 && (k = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)k;
  buf[len] = '\0';
  close(fds[0]);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
            "the child did not abort (status %#x); it printed: %s", st, buf);
  char where[64];
  snprintf(where, sizeof where, "test_assert.c:%d: fail_one: x == 42", (int)FAIL_LINE);
  cr_assert(strstr(buf, "weft: assertion failed: ") != NULL, "no prefix in: %s", buf);
  cr_assert(strstr(buf, where) != NULL, "expected \"%s\" in: %s", where, buf);
}

Test(assert, a_holding_assertion_evaluates_once_and_goes_on, .timeout = 30)
{
  evaluations = 0;
  WEFT_ASSERT(count_evaluation() == 1);
  cr_assert_eq(evaluations, 1, "the expression ran %d times", evaluations);
}
