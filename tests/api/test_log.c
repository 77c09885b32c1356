/* SPDX-License-Identifier: MIT */
/*
 * The log callback (weft_set_log_callback): the library's messages go to
 * fn(arg, msg) on the thread that raised them, without the "weft: " prefix
 * or a newline, and nothing goes to stderr; fn NULL restores stderr; many
 * threads may log at once, and the callback may be swapped meanwhile
 * without a message reaching one fn with the other's arg, or reaching a fn
 * after the call that replaced it returned.
 *
 * The messages come from weft_pool_create with WEFT_NUM_THREADS=abc, which
 * fails with WEFT_EINVAL and one message naming the variable and value.
 */
#include "../common/testutil.h"

#include <sys/stat.h>
#include <sys/wait.h>

#define BAD_VAR "WEFT_NUM_THREADS"
#define BAD_VALUE "abc"

static void setup(void)
{
  tu_clear_weft_env();
  setenv(BAD_VAR, BAD_VALUE, 1);
}

static void teardown(void)
{
  weft_set_log_callback(NULL, NULL);
}

/* One bad create: must fail with WEFT_EINVAL (checked on any thread). */
static void bad_create(void)
{
  weft_pool *p = NULL;
  int rc = weft_pool_create(&p, NULL);
  TU_CHECK(rc == WEFT_EINVAL, "weft_pool_create with %s=%s = %d (%s)", BAD_VAR, BAD_VALUE, rc,
           weft_strerror(rc));
  TU_CHECK(p == NULL, "a failed create left a pool");
}

/* What a callback saw; its arg. */
typedef struct sink {
  pthread_mutex_t lock;
  long calls;          /* under lock */
  char first[512];     /* under lock: the first message */
  char ref[512];       /* set before use: the message every call must carry */
  long mismatched;     /* under lock: messages that differ from ref */
  atomic_int retired;  /* 1 while this sink is not the callback */
  atomic_long after_retired;
} sink;

static void sink_init(sink *s)
{
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
}

static _Thread_local long calls_on_this_thread;

static void record(void *arg, const char *msg)
{
  sink *s = arg;
  calls_on_this_thread++;
  if (atomic_load(&s->retired))
    atomic_fetch_add(&s->after_retired, 1);
  pthread_mutex_lock(&s->lock);
  if (s->calls == 0)
    snprintf(s->first, sizeof s->first, "%s", msg);
  if (s->ref[0] && strcmp(msg, s->ref) != 0)
    s->mismatched++;
  s->calls++;
  pthread_mutex_unlock(&s->lock);
}

static long sink_calls(sink *s)
{
  pthread_mutex_lock(&s->lock);
  long n = s->calls;
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* The message a bad create raises, as the callback receives it. */
static void reference_message(char *out, size_t size)
{
  sink s;
  sink_init(&s);
  weft_set_log_callback(record, &s);
  bad_create();
  weft_set_log_callback(NULL, NULL);
  tu_assert_no_errors();
  cr_assert_eq(s.calls, 1, "one bad create made %ld calls", s.calls);
  snprintf(out, size, "%s", s.first);
}

static long count_lines_with(const char *text, const char *needle)
{
  long n = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* ---------------------------------------------------------------- one thread */

Test(log, callback_gets_the_env_message_and_stderr_nothing, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(30))
{
  sink s;
  sink_init(&s);
  weft_set_log_callback(record, &s);
  calls_on_this_thread = 0;
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  bad_create();
  tu_capture_end(&cap, err, sizeof err);
  tu_assert_no_errors();
  cr_assert_eq(s.calls, 1, "the callback was called %ld times for one bad create", s.calls);
  cr_assert_eq(calls_on_this_thread, 1, "the callback did not run on the thread that logged");
  cr_assert_not_null(strstr(s.first, BAD_VAR), "message \"%s\" does not name %s", s.first, BAD_VAR);
  cr_assert_not_null(strstr(s.first, "\"" BAD_VALUE "\""), "message \"%s\" does not quote %s",
                     s.first, BAD_VALUE);
  cr_assert_null(strstr(s.first, "weft: "), "message \"%s\" carries the stderr prefix", s.first);
  cr_assert_null(strchr(s.first, '\n'), "message \"%s\" carries a newline", s.first);
  cr_assert_str_eq(err, "", "with a callback set, stderr got \"%s\"", err);

  /* fn NULL: the next message goes to stderr again, and not to the sink. */
  weft_set_log_callback(NULL, NULL);
  tu_capture_begin(&cap);
  bad_create();
  tu_capture_end(&cap, err, sizeof err);
  tu_assert_no_errors();
  cr_assert_eq(s.calls, 1, "the callback was called after it was replaced by NULL");
  char want[600];
  snprintf(want, sizeof want, "weft: %s\n", s.first);
  cr_assert_str_eq(err, want, "after restoring stderr");
}

/* A second sink replaces the first: the first gets nothing more. */
Test(log, replacing_the_callback, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(30))
{
  sink a, b;
  sink_init(&a);
  sink_init(&b);
  weft_set_log_callback(record, &a);
  bad_create();
  weft_set_log_callback(record, &b);
  bad_create();
  bad_create();
  tu_assert_no_errors();
  cr_assert_eq(a.calls, 1);
  cr_assert_eq(b.calls, 2);
}

/* ----------------------------------------------------------- many threads */

typedef struct logger_arg {
  long rounds;
  long done;             /* bad creates made */
  long calls_here;       /* callback calls on this thread */
  atomic_int *stop;      /* NULL: run rounds; else until set */
  atomic_long *progress; /* NULL, or counts every thread's bad creates */
} logger_arg;

static void *logger(void *p)
{
  logger_arg *a = p;
  calls_on_this_thread = 0;
  for (long i = 0; a->stop ? !atomic_load(a->stop) : i < a->rounds; i++) {
    bad_create();
    a->done++;
    if (a->progress)
      atomic_fetch_add(a->progress, 1);
  }
  a->calls_here = calls_on_this_thread;
  return NULL;
}

#define NLOGGERS 6

Test(log, many_threads_at_once, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  sink s;
  sink_init(&s);
  reference_message(s.ref, sizeof s.ref);
  weft_set_log_callback(record, &s);
  long rounds = tu_scaled(200, 20);
  logger_arg args[NLOGGERS];
  pthread_t t[NLOGGERS];
  for (int i = 0; i < NLOGGERS; i++) {
    args[i] = (logger_arg){.rounds = rounds};
    cr_assert_eq(pthread_create(&t[i], NULL, logger, &args[i]), 0);
  }
  for (int i = 0; i < NLOGGERS; i++)
    pthread_join(t[i], NULL);
  tu_assert_no_errors();
  cr_assert_eq(sink_calls(&s), NLOGGERS * rounds, "%d threads x %ld bad creates: %ld calls",
               NLOGGERS, rounds, sink_calls(&s));
  cr_assert_eq(s.mismatched, 0, "%ld of %ld messages differ from \"%s\"", s.mismatched, s.calls,
               s.ref);
  for (int i = 0; i < NLOGGERS; i++)
    cr_assert_eq(args[i].calls_here, rounds,
                 "thread %d made %ld bad creates, the callback ran %ld times on it", i, rounds,
                 args[i].calls_here);
}

/* Two fns for the two sinks of the swap test, each knowing its own sink, so
 * a fn called with the other's arg (a torn pair) is caught. */
static sink swap_sinks[2];

static void record0(void *arg, const char *msg)
{
  TU_CHECK(arg == &swap_sinks[0], "record0 called with arg %p, not sink 0 (%p)", arg,
           (void *)&swap_sinks[0]);
  record(&swap_sinks[0], msg);
}

static void record1(void *arg, const char *msg)
{
  TU_CHECK(arg == &swap_sinks[1], "record1 called with arg %p, not sink 1 (%p)", arg,
           (void *)&swap_sinks[1]);
  record(&swap_sinks[1], msg);
}

/*
 * While threads log, the main thread cycles the callback through sink a,
 * sink b and stderr (NULL). Each message reaches exactly one place, intact;
 * a sink's fn always gets that sink as arg (the fn, arg pair never tears);
 * and once weft_set_log_callback has replaced a sink, that sink is called
 * no more (it is marked retired right after the call returns).
 */
Test(log, swapped_while_others_log, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(90))
{
  sink *sinks = swap_sinks;
  weft_log_fn fns[2] = {record0, record1};
  sink_init(&sinks[0]);
  sink_init(&sinks[1]);
  reference_message(sinks[0].ref, sizeof sinks[0].ref);
  memcpy(sinks[1].ref, sinks[0].ref, sizeof sinks[1].ref);
  atomic_store(&sinks[0].retired, 1);
  atomic_store(&sinks[1].retired, 1);

  tu_capture cap;
  tu_capture_begin(&cap);

  atomic_int stop = 0;
  atomic_long progress = 0;
  logger_arg args[NLOGGERS];
  pthread_t t[NLOGGERS];
  for (int i = 0; i < NLOGGERS; i++) {
    args[i] = (logger_arg){.stop = &stop, .progress = &progress};
    cr_assert_eq(pthread_create(&t[i], NULL, logger, &args[i]), 0);
  }
  /* At least this many swaps, and on until the loggers have logged this
   * many messages (they may start late), or a deadline passes. */
  long min_swaps = tu_scaled(3000, 300);
  long min_msgs = tu_scaled(20000, 2000);
  double deadline = tu_now() + TU_DEADLINE_S;
  int cur = -1; /* -1: stderr */
  long swaps = 0;
  for (long k = 0; k < min_swaps || (atomic_load(&progress) < min_msgs && tu_now() < deadline);
       k++, swaps++) {
    int next = (int)(k % 3) - 1; /* 0, 1, stderr, 0, ... */
    if (next >= 0)
      atomic_store(&sinks[next].retired, 0);
    weft_set_log_callback(next >= 0 ? fns[next] : NULL, next >= 0 ? &sinks[next] : NULL);
    if (cur >= 0)
      atomic_store(&sinks[cur].retired, 1);
    cur = next;
    if (k % 64 == 0)
      sched_yield();
  }
  atomic_store(&stop, 1);
  long total = 0;
  for (int i = 0; i < NLOGGERS; i++) {
    pthread_join(t[i], NULL);
    total += args[i].done;
  }
  weft_set_log_callback(NULL, NULL);
  fflush(stderr);
  struct stat st;
  cr_assert_eq(fstat(cap.file, &st), 0);
  size_t errsize = (size_t)st.st_size + 1;
  char *err = malloc(errsize);
  cr_assert_not_null(err);
  tu_capture_end(&cap, err, errsize);
  tu_assert_no_errors();

  char line[sizeof swap_sinks[0].ref + 16];
  snprintf(line, sizeof line, "weft: %s\n", swap_sinks[0].ref);
  long on_stderr = count_lines_with(err, line);
  long any_stderr = count_lines_with(err, "weft: ");
  free(err);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(atomic_load(&sinks[i].after_retired), 0,
                 "sink %d was called %ld times after weft_set_log_callback replaced it", i,
                 atomic_load(&sinks[i].after_retired));
    cr_assert_eq(sinks[i].mismatched, 0, "sink %d: %ld messages differ from \"%s\"", i,
                 sinks[i].mismatched, sinks[i].ref);
  }
  cr_assert_eq(any_stderr, on_stderr, "%ld stderr lines, %ld of them intact", any_stderr,
               on_stderr);
  cr_assert_eq(sinks[0].calls + sinks[1].calls + on_stderr, total,
               "%ld bad creates: %ld + %ld callback calls and %ld stderr lines", total,
               sinks[0].calls, sinks[1].calls, on_stderr);
  cr_assert_geq(total, min_msgs, "the loggers made only %ld bad creates in %.0f s", total,
                TU_DEADLINE_S);
  cr_log_info("%ld swaps, %ld messages: %ld + %ld to the callbacks, %ld to stderr", swaps, total,
              sinks[0].calls, sinks[1].calls, on_stderr);
}

/* --------------------------------------------- a callback that forks */

/* In the child of a fork made inside a callback, the forking thread is
 * still counted in its record until the callback returns: a setter that
 * later switches away from that record must still wait for a logger inside
 * it (the child handler once zeroed the count, and the callback's own
 * decrement then left it at -1, so the next logger's entry read 0). */

static atomic_int slow_running;

static void slow_fn(void *arg, const char *msg)
{
  (void)arg;
  (void)msg;
  atomic_store(&slow_running, 1);
  tu_sleep_us(200 * 1000);
  atomic_store(&slow_running, 0);
}

static void *slow_logger(void *arg)
{
  (void)arg;
  bad_create(); /* logs into slow_fn */
  return NULL;
}

static pid_t child_pid = -1;

static void forking_fn(void *arg, const char *msg)
{
  (void)arg;
  (void)msg;
  child_pid = fork(); /* the child goes on from here, inside this callback */
}

/* In the child: 0 if the setter waited for the logger inside the old record. */
static int child_checks(void)
{
  alarm((unsigned)TU_TIMEOUT(20)); /* a hung setter is a failure too */
  weft_set_log_callback(slow_fn, NULL); /* into the other record */
  weft_set_log_callback(slow_fn, NULL); /* back into the forking one */
  pthread_t t;
  if (pthread_create(&t, NULL, slow_logger, NULL))
    return 2;
  if (!TU_WAIT_UNTIL(atomic_load(&slow_running), TU_TIMEOUT(10)))
    return 3;
  weft_set_log_callback(NULL, NULL); /* must wait until slow_fn returned */
  int early = atomic_load(&slow_running);
  pthread_join(t, NULL);
  return early ? 1 : 0;
}

Test(log, fork_inside_a_callback_keeps_the_setter_waiting, .init = setup, .fini = teardown,
     .timeout = TU_TIMEOUT(60))
{
  /* ThreadSanitizer kills a child of a multi-threaded process that starts a
   * thread (die_after_fork) and, past that, reports jemalloc's own mutexes,
   * taken by its fork handlers, as locked twice in the child: no model of
   * this test there. The plain and ASan+UBSan builds run it. */
  const char *san = getenv("WEFT_TEST_SANITIZE");
  if (san && strstr(san, "thread"))
    cr_skip_test("fork() with threads is not modelled under ThreadSanitizer");
  weft_set_log_callback(forking_fn, NULL);
  bad_create();
  if (child_pid == 0) /* the child, back from the callback */
    _exit(child_checks());
  cr_assert_gt(child_pid, 0, "fork failed");
  int st = 0;
  cr_assert_eq(waitpid(child_pid, &st, 0), child_pid);
  cr_assert(WIFEXITED(st), "the child did not exit (status %#x: a hung setter?)", st);
  cr_assert_eq(WEXITSTATUS(st), 0,
               "child check %d: 1 = weft_set_log_callback returned while the old callback "
               "still ran",
               WEXITSTATUS(st));
  tu_assert_no_errors();
}
