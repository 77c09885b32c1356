/* SPDX-License-Identifier: MIT */
/*
 * The library's one integer reader of environment variables
 * (src/common/env.h: weft_env_int_read, and weft_env_int on it): the engine,
 * the pool, the GPU layer and libweft_mpi (WEFT_MPI_TIMEOUT_MS) all read
 * through it, so one set of rules holds for every variable: an optional
 * sign and decimal digits, nothing around them (" 5" and "5 " are
 * malformed), in range; unset or empty means unset. A malformed value gives
 * WEFT_EINVAL and one line naming the variable and the value (weft_env_int
 * logs it; libweft_mpi prints it under its own prefix).
 * tests/api/check_env_readers.sh checks that src/ reads the environment
 * nowhere else.
 */
#include <limits.h>

#include "../common/testutil.h"
#include "common/env.h"

#define VAR "WEFT_TEST_ENV_READER"

typedef struct want {
  const char *value;
  long lo, hi;
  int rc;    /* 0, 1 (unset) or WEFT_EINVAL */
  long out;  /* when rc is 0 */
} want;

static const want cases[] = {
    {"5", 0, 10, 0, 5},
    {"+5", 0, 10, 0, 5},
    {"-3", -5, 5, 0, -3},
    {"0", 0, 0, 0, 0},
    {"007", 0, 10, 0, 7},
    {"86400000", 0, 86400000, 0, 86400000},
    {"", 0, 10, 1, 0},
    {" 5", 0, 10, WEFT_EINVAL, 0},
    {"\t5", 0, 10, WEFT_EINVAL, 0},
    {"\n5", 0, 10, WEFT_EINVAL, 0},
    {"5 ", 0, 10, WEFT_EINVAL, 0},
    {"5\n", 0, 10, WEFT_EINVAL, 0},
    {"0x5", 0, 10, WEFT_EINVAL, 0},
    {"1e3", 0, 10000, WEFT_EINVAL, 0},
    {"1.5", 0, 10, WEFT_EINVAL, 0},
    {"5ms", 0, 10, WEFT_EINVAL, 0},
    {"+", 0, 10, WEFT_EINVAL, 0},
    {"-", 0, 10, WEFT_EINVAL, 0},
    {"+-5", -10, 10, WEFT_EINVAL, 0},
    {"abc", 0, 10, WEFT_EINVAL, 0},
    {"11", 0, 10, WEFT_EINVAL, 0},
    {"-1", 0, 10, WEFT_EINVAL, 0},
    {"86400001", 0, 86400000, WEFT_EINVAL, 0},
    {"99999999999999999999", 0, LONG_MAX, WEFT_EINVAL, 0},
};

Test(env_reader, one_set_of_rules, .init = tu_clear_weft_env, .timeout = TU_TIMEOUT(30))
{
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const want *c = &cases[i];
    cr_assert_eq(setenv(VAR, c->value, 1), 0);
    long out = -12345;
    char msg[WEFT_ENV_MSG_MAX] = "";
    int rc = weft_env_int_read(VAR, c->lo, c->hi, &out, msg, sizeof msg);
    cr_assert_eq(rc, c->rc, "\"%s\" in [%ld, %ld]: %d, want %d", c->value, c->lo, c->hi, rc,
                 c->rc);
    if (rc == 0) {
      cr_assert_eq(out, c->out, "\"%s\": %ld, want %ld", c->value, out, c->out);
    } else {
      cr_assert_eq(out, -12345, "\"%s\": out written on %d", c->value, rc);
    }
    if (rc < 0) {
      char named[64];
      snprintf(named, sizeof named, "malformed " VAR "=\"%s\"", c->value);
      cr_assert(strstr(msg, named), "\"%s\": the line \"%s\" does not name it", c->value, msg);
    }
  }
  cr_assert_eq(unsetenv(VAR), 0);
  long out = -12345;
  char msg[WEFT_ENV_MSG_MAX];
  cr_assert_eq(weft_env_int_read(VAR, 0, 10, &out, msg, sizeof msg), 1, "unset");
  cr_assert_eq(out, -12345);
}

static char logged[WEFT_ENV_MSG_MAX];
static int nlogged;

static void log_line(void *arg, const char *msg)
{
  (void)arg;
  snprintf(logged, sizeof logged, "%s", msg);
  nlogged++;
}

/* weft_env_int (the pool's, the engine's and the GPU layer's reader) is the
 * same reader with its line sent to the log: one line, the same text. */
Test(env_reader, weft_env_int_logs_the_same_line, .init = tu_clear_weft_env,
     .timeout = TU_TIMEOUT(30))
{
  weft_set_log_callback(log_line, NULL);
  cr_assert_eq(setenv(VAR, " 5", 1), 0);
  long out = -12345;
  char msg[WEFT_ENV_MSG_MAX];
  int rc = weft_env_int(VAR, 0, 10, &out);
  weft_set_log_callback(NULL, NULL);
  cr_assert_eq(rc, WEFT_EINVAL);
  cr_assert_eq(out, -12345);
  cr_assert_eq(nlogged, 1, "%d lines logged", nlogged);
  cr_assert_eq(weft_env_int_read(VAR, 0, 10, &out, msg, sizeof msg), WEFT_EINVAL);
  cr_assert_str_eq(logged, msg);
  cr_assert_eq(setenv(VAR, "+7", 1), 0);
  cr_assert_eq(weft_env_int(VAR, 0, 10, &out), 0);
  cr_assert_eq(out, 7);
  cr_assert_eq(unsetenv(VAR), 0);
  cr_assert_eq(weft_env_int(VAR, 0, 10, &out), 1);
  cr_assert_eq(nlogged, 1);
}
