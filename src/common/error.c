/* SPDX-License-Identifier: MIT */
/*
 * The error table (weft_strerror, weft_err_name: both generated from
 * WEFT_ERRNO_MAP in weft.h, the one list of codes) and the library's
 * messages (weft_log: the user's callback, else stderr).
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "common/error.h"
#include "weft/weft.h"

const char *weft_version(void)
{
  return WEFT_VERSION_STRING;
}

/* ------------------------------------------------------------ error table */

/* Every code lies in the range the header announces (a new code must move
 * WEFT_ERRNO_LAST_ too); two codes with one value would be two equal case
 * labels below, which does not compile. */
#define WEFT_ERRNO_RANGE_(name, code, msg)                                                \
  _Static_assert((code) <= WEFT_ERRNO_FIRST_ && (code) >= WEFT_ERRNO_LAST_,              \
                 "WEFT_" #name " lies outside [WEFT_ERRNO_LAST_, WEFT_ERRNO_FIRST_]");
WEFT_ERRNO_MAP(WEFT_ERRNO_RANGE_)
#undef WEFT_ERRNO_RANGE_

const char *weft_strerror(int code)
{
  switch (code) {
#define WEFT_ERRNO_MSG_(name, code, msg)                                                  \
  case WEFT_##name:                                                                       \
    return msg " (WEFT_" #name ")";
    WEFT_ERRNO_MAP(WEFT_ERRNO_MSG_)
#undef WEFT_ERRNO_MSG_
  case 0:
    return "success";
  default:
    return "unknown error";
  }
}

const char *weft_err_name(int code)
{
  switch (code) {
#define WEFT_ERRNO_NAME_(name, code, msg)                                                 \
  case WEFT_##name:                                                                       \
    return "WEFT_" #name;
    WEFT_ERRNO_MAP(WEFT_ERRNO_NAME_)
#undef WEFT_ERRNO_NAME_
  case 0:
    return "0";
  default:
    return NULL;
  }
}

/* ------------------------------------------------------------- messages */

/*
 * Where messages go: one of two sink records, the current one named by
 * log_cur. A setter fills the other record and publishes it, then waits
 * until no logging thread still uses the old one, so when
 * weft_set_log_callback returns the previous fn is neither running nor
 * about to run (its arg may be freed), and a record is rewritten only when
 * nobody reads it. Logging threads never block: they only count themselves
 * in and out of the record they use.
 *
 * A logger enters a record with: load log_cur, increment that record's
 * users, load log_cur again; equal: it is in (and may read fn and arg until
 * it decrements); different: a setter moved on meanwhile, so it decrements
 * and retries. The setter's store to log_cur and its load of the old
 * record's users, and the logger's increment and its second load of
 * log_cur, are all seq_cst: in their single total order either the setter's
 * load sees the increment (and waits for the decrement), or the logger's
 * second load sees the new record (and backs off without reading).
 */
typedef struct log_sink {
  /* Written only by the setter holding log_setting, while the record is not
   * log_cur; read by loggers that have entered it (above). */
  weft_log_fn fn; /* NULL: stderr */
  void *arg;
  /* atomic: loggers inside this record, plus those briefly counted in on
   * their way to finding it is no longer current. */
  atomic_int users;
} log_sink;

static log_sink log_sinks[2]; /* zero: stderr */
/* atomic, seq_cst (above): the record messages go to now. */
static _Atomic(log_sink *) log_cur = &log_sinks[0];
/* atomic: 1 while a setter is switching records; setters take turns. */
static atomic_int log_setting;
/* The record this thread has entered (its weft_log is inside that record's
 * fn), or NULL: what a fork inside a callback carries into the child. */
static _Thread_local log_sink *log_in;

/* fork(): the child has only the forking thread, so the counts of loggers
 * that were on other threads, and a setter's turn held by another thread,
 * would stay forever and hang the child's first weft_set_log_callback. The
 * forking thread itself may be inside a callback (it forked from there): it
 * stays counted in its record, and its own decrement comes when the callback
 * returns. log_cur names a complete record at every instant, so it needs
 * nothing. */
static void log_atfork_child(void)
{
  /* relaxed: the child has one thread. */
  for (int k = 0; k < 2; k++)
    atomic_store_explicit(&log_sinks[k].users, log_in == &log_sinks[k], memory_order_relaxed);
  atomic_store_explicit(&log_setting, 0, memory_order_relaxed);
}

static pthread_once_t log_atfork_once = PTHREAD_ONCE_INIT;

static void log_atfork_install(void)
{
  /* Fails only with ENOMEM; without the handler only a child forked while
   * another thread was logging or setting can hang in weft_set_log_callback. */
  (void)pthread_atfork(NULL, NULL, log_atfork_child);
}

/* Waits a little for a turn or for loggers to leave: yields at first, then
 * sleeps 50 us a round (a callback may take long, e.g. a blocking write). */
static void log_pause(unsigned *round)
{
  if ((*round)++ < 64) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
}

void weft_set_log_callback(weft_log_fn fn, void *arg)
{
  pthread_once(&log_atfork_once, log_atfork_install);
  unsigned round = 0;
  int expected = 0;
  /* acquire: pairs with the previous setter's release of its turn below, so
   * this setter sees the records as that one left them. */
  while (!atomic_compare_exchange_weak_explicit(&log_setting, &expected, 1, memory_order_acquire,
                                                memory_order_relaxed)) {
    expected = 0;
    log_pause(&round);
  }
  /* relaxed: only setters store log_cur, and this one holds the turn. */
  log_sink *old = atomic_load_explicit(&log_cur, memory_order_relaxed);
  log_sink *next = old == &log_sinks[0] ? &log_sinks[1] : &log_sinks[0];
  /* next is not current and its last users left before the previous setter
   * returned; a logger counted in there now only passes through (it finds
   * next is not log_cur and backs off without reading fn or arg). */
  next->fn = fn;
  next->arg = arg;
  /* seq_cst: publishes next's fn and arg to loggers that load log_cur (a
   * release); orders against their increment (header comment). */
  atomic_store_explicit(&log_cur, next, memory_order_seq_cst);
  /* seq_cst: pairs with a logger's seq_cst increment of old->users; the
   * acquire half also pairs with the release decrement of the last logger
   * leaving old, so its call to the old fn happened before we return. */
  round = 0;
  while (atomic_load_explicit(&old->users, memory_order_seq_cst) != 0)
    log_pause(&round);
  /* release: hands the records as written here to the next setter (its
   * acquire CAS above). */
  atomic_store_explicit(&log_setting, 0, memory_order_release);
}

void weft_log(const char *fmt, ...)
{
  pthread_once(&log_atfork_once, log_atfork_install);
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);

  log_sink *s;
  for (;;) {
    /* seq_cst: the acquire half pairs with the setter's store of log_cur,
     * making the record's fn and arg visible. */
    s = atomic_load_explicit(&log_cur, memory_order_seq_cst);
    /* seq_cst: pairs with the setter's load of users (header comment). */
    atomic_fetch_add_explicit(&s->users, 1, memory_order_seq_cst);
    /* seq_cst: still current after counting in, so no setter may rewrite s
     * until we leave; pairs with the setter's store of log_cur. */
    if (atomic_load_explicit(&log_cur, memory_order_seq_cst) == s)
      break;
    /* relaxed: we read nothing from s, so there is nothing to publish. */
    atomic_fetch_sub_explicit(&s->users, 1, memory_order_relaxed);
  }
  if (s->fn) {
    log_sink *outer = log_in; /* a callback may log in turn (it should not) */
    log_in = s;
    s->fn(s->arg, line);
    log_in = outer;
  } else {
    /* One write per line so lines from several threads do not interleave. */
    fprintf(stderr, "weft: %s\n", line);
  }
  /* release: our reads of s and the call to its fn happen before a setter
   * that sees the count drop (its seq_cst load) rewrites s or returns. */
  atomic_fetch_sub_explicit(&s->users, 1, memory_order_release);
}
