/* SPDX-License-Identifier: MIT */
/*
 * WEFT_PROFILE: the Chrome trace written at destroy (docs/config.md and the
 * README, "Profiling"). Each workload runs under
 * WEFT_PROFILE=<tmp>/trace.json, then tests/api/check_trace.py parses the
 * file with python3's json module and checks its shape: one named track per
 * worker, well-formed spans that nest properly on each track, the operators'
 * spans by name and count, the steals and parks the workload forces, the cap
 * on events.
 *
 * Bad input: WEFT_PROFILE set but empty fails create with WEFT_EINVAL and a
 * line naming it; an unwritable path is reported by destroy, which succeeds.
 */
#include "../common/testutil.h"

#include "common/prof.h"

static char g_dir[64];
static char g_path[128];

static void setup(void)
{
  tu_clear_weft_env();
  unsetenv("WEFT_PROFILE");
  unsetenv("WEFT_ENGINE");
  unsetenv("WEFT_MAX_INFLIGHT");
  unsetenv("WEFT_GPU_BACKEND");
  weft_test_prof_max_events(0);
  snprintf(g_dir, sizeof g_dir, "/tmp/weft-prof-XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
  snprintf(g_path, sizeof g_path, "%s/trace.json", g_dir);
}

static void teardown(void)
{
  unlink(g_path);
  rmdir(g_dir);
}

/* Runs the checker on g_path; args: its options after TRACE WORKERS. */
static void check_trace(int workers, const char *args)
{
  const char *script = getenv("WEFT_TEST_TRACE_CHECK");
  cr_assert_not_null(script, "WEFT_TEST_TRACE_CHECK (tests/api/meson.build) is not set");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "python3 '%s' '%s' %d %s", script, g_path, workers, args);
  fflush(stdout);
  int rc = system(cmd);
  cr_assert_eq(rc, 0, "the trace check failed (%d): %s", rc, cmd);
}

static bool file_exists(const char *p)
{
  return access(p, F_OK) == 0;
}

/* ------------------------------------------------------------ workloads */

static weft_pool *g_pool;

static int noop_task(void *arg)
{
  (void)arg;
  return 0;
}

typedef struct fib_arg {
  int n;
  long r;
} fib_arg;

static int fib_task(void *arg)
{
  fib_arg *a = arg;
  if (a->n < 2) {
    a->r = a->n;
    return 0;
  }
  fib_arg x = {a->n - 1, 0}, y = {a->n - 2, 0};
  weft_group g;
  weft_group_init(&g, g_pool);
  TU_CHECK(weft_group_spawn(&g, fib_task, &x) == 0, "spawn failed");
  fib_task(&y);
  TU_CHECK(weft_group_wait(&g) == 0, "group wait failed");
  a->r = x.r + y.r;
  return 0;
}

/* A task that spawns a child and spins until the child has started: the
 * child can only run if another worker steals it from the spawner's deque. */
static atomic_int g_child_started, g_parent_done;

static int child_task(void *arg)
{
  (void)arg;
  atomic_store(&g_child_started, 1);
  return 0;
}

static int stealing_parent(void *arg)
{
  (void)arg;
  weft_group g;
  weft_group_init(&g, g_pool);
  TU_CHECK(weft_group_spawn(&g, child_task, NULL) == 0, "spawn failed");
  double t0 = tu_now();
  while (!atomic_load(&g_child_started) && tu_now() - t0 < TU_DEADLINE_S)
    sched_yield();
  TU_CHECK(atomic_load(&g_child_started), "the child was never stolen");
  TU_CHECK(weft_group_wait(&g) == 0, "group wait failed");
  atomic_store(&g_parent_done, 1);
  return 0;
}

static atomic_long g_pfor_sum;

static int pfor_body(size_t b, size_t e, void *arg)
{
  (void)arg;
  long s = 0;
  for (size_t i = b; i < e; i++)
    s += (long)i;
  atomic_fetch_add(&g_pfor_sum, s);
  return 0;
}

static int op_body(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (*(long *)arg)++; /* vars serialise the writers of one counter */
  return 0;
}

static atomic_long g_reused_runs;

static int reused_body(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  (void)arg;
  atomic_fetch_add(&g_reused_runs, 1); /* readers of one var run together */
  return 0;
}

#define NVARS 4

/* Pushes n operators named "opA", "opB" and unnamed ("op") in turn, each
 * writing one of NVARS vars, plus a reusable operator "reused" pushed
 * nreused times; waits for all. Counts are checked by the caller. */
static void run_ops(weft_engine *eng, int n, int nreused)
{
  weft_var *vars[NVARS];
  static long counters[NVARS];
  memset(counters, 0, sizeof counters);
  for (int v = 0; v < NVARS; v++)
    cr_assert_eq(weft_var_new(eng, &vars[v]), 0);
  const char *names[3] = {"opA", "opB", NULL};
  for (int i = 0; i < n; i++) {
    weft_op_desc d;
    memset(&d, 0, sizeof d);
    d.fn = op_body;
    d.arg = &counters[i % NVARS];
    d.writes = &vars[i % NVARS];
    d.num_writes = 1;
    d.name = names[i % 3];
    cr_assert_eq(weft_push(eng, &d), 0);
  }
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = reused_body;
  d.reads = &vars[0];
  d.num_reads = 1;
  d.name = "reused";
  weft_op *op;
  atomic_store(&g_reused_runs, 0);
  cr_assert_eq(weft_op_new(eng, &d, &op), 0);
  for (int i = 0; i < nreused; i++)
    cr_assert_eq(weft_op_push(eng, op), 0);
  cr_assert_eq(weft_op_delete(eng, op), 0);
  cr_assert_eq(weft_wait_all(eng), 0);
  long total = 0;
  for (int v = 0; v < NVARS; v++)
    total += counters[v];
  cr_assert_eq(total, n);
  cr_assert_eq(atomic_load(&g_reused_runs), nreused);
  for (int v = 0; v < NVARS; v++)
    cr_assert_eq(weft_var_delete(eng, vars[v]), 0);
}

/* --count options for run_ops(n, nreused). */
static void op_counts(char *buf, size_t size, int n, int nreused)
{
  snprintf(buf, size, "--count opA=%d --count opB=%d --count op=%d --count reused=%d",
           (n + 2) / 3, (n + 1) / 3, n / 3, nreused);
}

/* ---------------------------------------------------------------- tests */

/* Fork-join, a forced steal, parallel_for from outside the pool, and an
 * engine on the pool with named operators; idle workers park (spin 0). The
 * pool's destroy writes the trace. */
Test(profile, mixed_workload_trace, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(120))
{
  setenv("WEFT_PROFILE", g_path, 1);
  g_pool = tu_pool(2, 0);
  atomic_store(&g_child_started, 0);
  atomic_store(&g_parent_done, 0);
  cr_assert_eq(weft_pool_submit(g_pool, stealing_parent, NULL), 0);
  TU_WAIT_UNTIL(atomic_load(&g_parent_done), TU_DEADLINE_S);

  fib_arg f = {14, 0};
  weft_group g;
  weft_group_init(&g, g_pool);
  cr_assert_eq(weft_group_spawn(&g, fib_task, &f), 0);
  cr_assert_eq(weft_group_wait(&g), 0);
  cr_assert_eq(f.r, 377);

  /* A loop from outside the pool splits only while some worker is idle
   * (parked or searching): let both park first, or on a loaded machine a
   * worker still on its way to sleep leaves the loop unsplit and the trace
   * without a "pfor" span. */
  tu_sleep_us(20 * 1000);
  atomic_store(&g_pfor_sum, 0);
  cr_assert_eq(weft_parallel_for(g_pool, 0, 200000, 100, pfor_body, NULL), 0);
  cr_assert_eq(atomic_load(&g_pfor_sum), 200000L * 199999 / 2);

  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = g_pool;
  weft_engine *eng;
  cr_assert_eq(weft_engine_create(&eng, &ec), 0);
  const int n = (int)tu_scaled(3000, 30), nreused = 7;
  run_ops(eng, n, nreused);
  cr_assert_eq(weft_engine_destroy(eng), 0);
  cr_assert(!file_exists(g_path), "the engine wrote the trace of a pool it does not own");

  tu_sleep_us(50 * 1000); /* idle: both workers park */
  for (int i = 0; i < 20; i++)
    cr_assert_eq(weft_pool_submit(g_pool, noop_task, NULL), 0);
  tu_assert_no_errors();
  tu_destroy(g_pool);
  cr_assert(file_exists(g_path), "weft_pool_destroy wrote no trace at %s", g_path);
  char args[512];
  op_counts(args, sizeof args, n, nreused);
  strcat(args, " --require task --require pfor --require steal --require park");
  check_trace(2, args);
}

/* An engine that owns its pool: its destroy (through the pool's) writes. */
Test(profile, engine_owned_pool_trace, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  setenv("WEFT_PROFILE", g_path, 1);
  setenv("WEFT_NUM_THREADS", "3", 1);
  weft_engine *eng;
  cr_assert_eq(weft_engine_create(&eng, NULL), 0);
  const int n = 100, nreused = 3;
  run_ops(eng, n, nreused);
  cr_assert_eq(weft_engine_destroy(eng), 0);
  char args[512];
  op_counts(args, sizeof args, n, nreused);
  check_trace(3, args);
}

/* GPU operators (host backend): a span per operator on the track of the
 * worker that launched it (fn) and on the track of its stream (launch, or
 * the stream's previous completion, to the completion the poller saw). */
static void gpu_trace_item(void *arg)
{
  (void)arg;
}

static int gpu_trace_fn(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, gpu_trace_item, arg);
}

Test(profile, gpu_ops_on_stream_tracks, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  setenv("WEFT_PROFILE", g_path, 1);
  setenv("WEFT_NUM_THREADS", "2", 1);
  setenv("WEFT_GPU_BACKEND", "host", 1);
  weft_engine *eng;
  cr_assert_eq(weft_engine_create(&eng, NULL), 0);
  weft_var *v[3];
  for (int i = 0; i < 3; i++)
    cr_assert_eq(weft_var_new(eng, &v[i]), 0);
  const int n = 60;
  for (int i = 0; i < n; i++) {
    weft_op_desc d = {0};
    d.fn = gpu_trace_fn;
    d.ctx.type = WEFT_DEV_GPU;
    d.writes = &v[i % 3];
    d.num_writes = 1;
    d.name = i % 3 == 2 ? "gpucopy" : "gpuop";
    d.prop = i % 3 == 2 ? WEFT_PROP_COPY_TO_GPU : WEFT_PROP_NORMAL;
    cr_assert_eq(weft_push(eng, &d), 0);
  }
  cr_assert_eq(weft_engine_destroy(eng), 0);
  unsetenv("WEFT_GPU_BACKEND");
  check_trace(2, "--count-on stream:gpuop=40 "
                 "--count-on launches:gpuop=40 --count-on 'h2d stream:gpucopy=20' "
                 "--count-on launches:gpucopy=20");
}

/* Each track keeps at most the cap; the rest are dropped and counted. */
Test(profile, event_cap_drops_and_counts, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  weft_test_prof_max_events(20);
  setenv("WEFT_PROFILE", g_path, 1);
  g_pool = tu_pool(2, -1);
  for (int i = 0; i < 500; i++)
    cr_assert_eq(weft_pool_submit(g_pool, noop_task, NULL), 0);
  tu_destroy(g_pool);
  weft_test_prof_max_events(0);
  check_trace(2, "--max-events 20 --dropped");
}

/* The config field beats the environment (which is then not read); ""
 * turns profiling off. */
Test(profile, config_field, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  setenv("WEFT_PROFILE", "", 1); /* malformed, but not read */
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = 2;
  cfg.profile = g_path;
  weft_pool *p;
  cr_assert_eq(weft_pool_create(&p, &cfg), 0);
  cr_assert_eq(weft_pool_submit(p, noop_task, NULL), 0);
  tu_destroy(p);
  check_trace(2, "--require task");
  unlink(g_path);

  setenv("WEFT_PROFILE", g_path, 1);
  cfg.profile = "";
  cr_assert_eq(weft_pool_create(&p, &cfg), 0);
  cr_assert_eq(weft_pool_submit(p, noop_task, NULL), 0);
  tu_destroy(p);
  cr_assert(!file_exists(g_path), "profile \"\" (off) wrote a trace");
}

static int create_pool(void *ctx)
{
  (void)ctx;
  weft_pool *p = NULL;
  int rc = weft_pool_create(&p, NULL);
  if (rc == 0)
    weft_pool_destroy(p);
  return rc;
}

static int create_engine(void *ctx)
{
  (void)ctx;
  weft_engine *e = NULL;
  int rc = weft_engine_create(&e, NULL);
  if (rc == 0)
    weft_engine_destroy(e);
  return rc;
}

Test(profile, empty_env_is_einval, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  int base = tu_thread_baseline();
  setenv("WEFT_PROFILE", "", 1);
  tu_expect_env_einval("WEFT_PROFILE", "", "weft_pool_create(NULL)", create_pool, NULL, base);
  tu_expect_env_einval("WEFT_PROFILE", "", "weft_engine_create(NULL)", create_engine, NULL, base);
  tu_assert_no_leaks();
}

/* Create succeeds; destroy succeeds and prints one line naming the path and
 * the reason. */
Test(profile, unwritable_path_reported_at_destroy, .init = setup, .fini = teardown, .timeout = TU_TIMEOUT(60))
{
  char bad[192];
  snprintf(bad, sizeof bad, "%s/no-such-dir/trace.json", g_dir);
  setenv("WEFT_PROFILE", bad, 1);
  g_pool = tu_pool(2, -1);
  cr_assert_eq(weft_pool_submit(g_pool, noop_task, NULL), 0);
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = weft_pool_destroy(g_pool);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, 0, "destroy = %d (%s)", rc, weft_strerror(rc));
  cr_assert(tu_line_has_all(err, "weft: ", bad, strerror(ENOENT)),
            "no stderr line naming %s and \"%s\"; stderr was \"%s\"", bad, strerror(ENOENT),
            err);
  int lines = 0;
  for (const char *c = err; *c; c++)
    lines += *c == '\n';
  cr_assert_eq(lines, 1, "expected one line on stderr, got \"%s\"", err);
  tu_assert_no_leaks();
}
