/* SPDX-License-Identifier: MIT */
/*
 * Pool configuration: thread counts (config, WEFT_NUM_THREADS, the CPUs the
 * process may use), thread names, WEFT_AFFINITY / config.affinity, spin
 * counts. Criterion runs each test in its own process, so setenv and
 * sched_setaffinity here touch only the test that calls them.
 */
#include "../common/testutil.h"

static void setup(void)
{
  tu_clear_weft_env();
}

static int create_with(weft_pool **out, int threads, int spin, const char *affinity,
                       const char *name)
{
  weft_pool_config cfg;
  weft_pool_config_default(&cfg);
  cfg.num_threads = threads;
  cfg.spin_count = spin;
  cfg.affinity = affinity;
  cfg.name = name;
  *out = NULL;
  return weft_pool_create(out, &cfg);
}

/* Runs n tasks and waits for all of them. */
static atomic_long g_ran;

static int count_task(void *arg)
{
  (void)arg;
  atomic_fetch_add(&g_ran, 1);
  return 0;
}

static void run_some(weft_pool *p, long n)
{
  long before = atomic_load(&g_ran);
  for (long i = 0; i < n; i++)
    cr_assert_eq(weft_pool_submit(p, count_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_ran) == before + n, TU_DEADLINE_S),
            "%ld of %ld tasks ran", atomic_load(&g_ran) - before, n);
}

Test(config, defaults_are_automatic, .init = setup, .timeout = TU_TIMEOUT(10))
{
  weft_pool_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  weft_pool_config_default(&cfg);
  cr_assert_eq(cfg.num_threads, 0);
  cr_assert_eq(cfg.spin_count, -1);
  cr_assert_null(cfg.affinity);
  cr_assert_null(cfg.name);
}

/* ------------------------------------------------------------ thread count */

Test(config, explicit_num_threads, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const int counts[] = {1, 2, 3, 5, 8, 16};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    weft_pool *p;
    cr_assert_eq(create_with(&p, counts[i], -1, NULL, NULL), 0);
    cr_assert_eq(weft_pool_num_threads(p), counts[i]);
    run_some(p, 100);
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
}

Test(config, env_num_threads, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {"1", "3", "6"};
  for (size_t i = 0; i < 3; i++) {
    setenv("WEFT_NUM_THREADS", vals[i], 1);
    weft_pool *p = NULL;
    cr_assert_eq(weft_pool_create(&p, NULL), 0, "cfg NULL with WEFT_NUM_THREADS=%s", vals[i]);
    cr_assert_eq(weft_pool_num_threads(p), atoi(vals[i]));
    run_some(p, 50);
    cr_assert_eq(weft_pool_destroy(p), 0);
    /* Same through a default config. */
    cr_assert_eq(create_with(&p, 0, -1, NULL, NULL), 0);
    cr_assert_eq(weft_pool_num_threads(p), atoi(vals[i]));
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
}

/* weft_pool_default_threads says what an automatic pool would start. */
Test(config, default_threads_is_what_automatic_starts, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const char *vals[] = {NULL, "0", "5"};
  for (size_t i = 0; i < 3; i++) {
    if (vals[i])
      setenv("WEFT_NUM_THREADS", vals[i], 1);
    int n = weft_pool_default_threads();
    cr_assert(n >= 1, "WEFT_NUM_THREADS=%s: %d", vals[i] ? vals[i] : "(unset)", n);
    weft_pool *p = NULL;
    cr_assert_eq(weft_pool_create(&p, NULL), 0);
    cr_assert_eq(weft_pool_num_threads(p), n, "WEFT_NUM_THREADS=%s: default %d, pool %d",
                 vals[i] ? vals[i] : "(unset)", n, weft_pool_num_threads(p));
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
  cr_assert_eq(weft_pool_default_threads(), 5);
  tu_capture cap;
  char err[1024];
  setenv("WEFT_NUM_THREADS", "many", 1);
  tu_capture_begin(&cap);
  int rc = weft_pool_default_threads();
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL);
  cr_assert(tu_line_has_all(err, "weft: ", "WEFT_NUM_THREADS", "many"), "stderr: %s", err);
}

Test(config, explicit_num_threads_beats_env, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p;
  setenv("WEFT_NUM_THREADS", "5", 1);
  cr_assert_eq(create_with(&p, 2, -1, NULL, NULL), 0);
  cr_assert_eq(weft_pool_num_threads(p), 2, "explicit 2 with WEFT_NUM_THREADS=5");
  cr_assert_eq(weft_pool_destroy(p), 0);
  /* An explicit field means the variable is not read: malformed is fine. */
  setenv("WEFT_NUM_THREADS", "abc", 1);
  cr_assert_eq(create_with(&p, 3, -1, NULL, NULL), 0,
               "explicit num_threads, yet a malformed WEFT_NUM_THREADS failed create");
  cr_assert_eq(weft_pool_num_threads(p), 3);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

Test(config, explicit_spin_and_affinity_beat_env, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p;
  setenv("WEFT_SPIN_COUNT", "abc", 1);
  setenv("WEFT_AFFINITY", "bogus", 1);
  cr_assert_eq(create_with(&p, 2, 0, "none", NULL), 0,
               "explicit spin_count and affinity, yet malformed variables failed create");
  run_some(p, 100);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

Test(config, default_num_threads_is_allowed_cpus, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cpu_set_t set;
  int allowed = tu_allowed_cpus(&set);
  cr_assert_gt(allowed, 0);
  weft_pool *p = NULL;
  cr_assert_eq(weft_pool_create(&p, NULL), 0);
  int n = weft_pool_num_threads(p);
  /* A cgroup quota may lower it; nothing may raise it. */
  cr_assert(n >= 1 && n <= allowed, "default pool has %d threads, process may use %d CPUs", n,
            allowed);
  run_some(p, 100);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

Test(config, default_num_threads_follows_affinity_mask, .init = setup, .timeout = TU_TIMEOUT(30))
{
  int cpu = tu_first_allowed_cpu();
  cr_assert_eq(tu_pin_self(cpu), 0, "sched_setaffinity");
  weft_pool *p = NULL;
  cr_assert_eq(weft_pool_create(&p, NULL), 0);
  cr_assert_eq(weft_pool_num_threads(p), 1,
               "process restricted to CPU %d, default pool has %d threads", cpu,
               weft_pool_num_threads(p));
  run_some(p, 100);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

Test(config, spin_counts, .init = setup, .timeout = TU_TIMEOUT(30))
{
  const int spins[] = {0, 1, 10, 1000};
  for (size_t i = 0; i < sizeof spins / sizeof spins[0]; i++) {
    weft_pool *p;
    cr_assert_eq(create_with(&p, 2, spins[i], NULL, NULL), 0, "spin_count %d", spins[i]);
    run_some(p, 200);
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
  const char *env[] = {"0", "7", "5000"};
  for (size_t i = 0; i < 3; i++) {
    setenv("WEFT_SPIN_COUNT", env[i], 1);
    weft_pool *p;
    cr_assert_eq(create_with(&p, 2, -1, NULL, NULL), 0, "WEFT_SPIN_COUNT=%s", env[i]);
    run_some(p, 200);
    cr_assert_eq(weft_pool_destroy(p), 0);
  }
}

/* ------------------------------------------------------------ thread names */

/* Returns how many workers' names it found as expected (all threads). */
static int check_names(const char *name, const char *prefix, int threads)
{
  int base = tu_thread_baseline();
  weft_pool *p;
  cr_assert_eq(create_with(&p, threads, -1, NULL, name), 0);
  int checked = 0;
  for (int w = 0; w < threads; w++) {
    char want[64], other[64];
    snprintf(want, sizeof want, "%s-w%d", prefix, w);
    want[15] = '\0'; /* the kernel keeps 15 characters */
    /* Truncation may give several workers the same name. */
    int expect = 0;
    for (int v = 0; v < threads; v++) {
      snprintf(other, sizeof other, "%s-w%d", prefix, v);
      other[15] = '\0';
      expect += strcmp(other, want) == 0;
    }
    /* A worker may name itself just after create returns: wait for it. */
    int found = 0;
    TU_WAIT_UNTIL((found = tu_threads_named(want)) >= expect, 10.0);
    cr_assert_eq(found, expect, "%d threads named \"%s\", expected %d", found, want, expect);
    checked++;
  }
  cr_assert_eq(tu_thread_count(), base + threads, "%d threads before create, %d after (%d workers)",
               base, tu_thread_count(), threads);
  cr_assert_eq(weft_pool_destroy(p), 0);
  cr_assert_eq(tu_wait_thread_count(base), base, "threads left after destroy");
  return checked;
}

Test(names, default_weft_wN, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_names(NULL, "weft", 4), 4);
}

Test(names, custom_name_wN, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_names("io", "io", 3), 3);
}

Test(names, twelve_workers_two_digits, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_names("calc", "calc", 12), 12);
}

Test(names, long_name_truncated, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_names("averyveryverylongname", "averyveryverylongname", 2), 2);
}

/* Inside a task, the thread's name matches weft_current_worker(). */
typedef struct name_probe {
  atomic_int bad;
  atomic_long ran;
  char first_bad[64];
} name_probe;

static int name_task(void *arg)
{
  name_probe *x = arg;
  char comm[64], want[64];
  tu_my_comm(comm, sizeof comm);
  snprintf(want, sizeof want, "pn-w%d", weft_current_worker());
  if (strcmp(comm, want) != 0 && atomic_exchange(&x->bad, 1) == 0)
    snprintf(x->first_bad, sizeof x->first_bad, "%s (worker %d)", comm, weft_current_worker());
  atomic_fetch_add(&x->ran, 1);
  return 0;
}

Test(names, name_matches_worker_index, .init = setup, .timeout = TU_TIMEOUT(30))
{
  weft_pool *p;
  cr_assert_eq(create_with(&p, 4, -1, NULL, "pn"), 0);
  name_probe x = {0};
  for (int i = 0; i < 2000; i++)
    cr_assert_eq(weft_pool_submit(p, name_task, &x), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&x.ran) == 2000, TU_DEADLINE_S));
  cr_assert_eq(atomic_load(&x.bad), 0, "a task ran on a thread named %s", x.first_bad);
  cr_assert_eq(weft_pool_destroy(p), 0);
}

/* ---------------------------------------------------------------- affinity */

typedef struct aff_probe {
  cpu_set_t process;   /* the process's mask before the pool */
  const char *list;    /* a cpu list, or NULL */
  atomic_int outside;  /* a worker's mask had a CPU the process may not use */
  atomic_int mismatch; /* a cpu-list worker was bound elsewhere */
  atomic_long ran;
} aff_probe;

static aff_probe g_aff;

/* Tasks check_affinity runs on the pool. */
enum { AFF_TASKS = 300 };

static int aff_task(void *arg)
{
  (void)arg;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0) {
    cpu_set_t extra;
    CPU_XOR(&extra, &mine, &g_aff.process);
    CPU_AND(&extra, &extra, &mine);
    if (CPU_COUNT(&extra) != 0 || CPU_COUNT(&mine) == 0)
      atomic_store(&g_aff.outside, 1);
    if (g_aff.list && strcmp(g_aff.list, "0") == 0) {
      /* Bound to CPU 0 alone, or (bind refused) left as the process was. */
      bool only0 = CPU_COUNT(&mine) == 1 && CPU_ISSET(0, &mine);
      if (!only0 && !CPU_EQUAL(&mine, &g_aff.process))
        atomic_store(&g_aff.mismatch, 1);
    }
  }
  atomic_fetch_add(&g_aff.ran, 1);
  return 0;
}

/* Returns how many tasks ran and checked their worker's mask (AFF_TASKS). */
static long check_affinity(const char *mode, bool via_env)
{
  tu_allowed_cpus(&g_aff.process);
  g_aff.list = mode;
  atomic_store(&g_aff.outside, 0);
  atomic_store(&g_aff.mismatch, 0);
  atomic_store(&g_aff.ran, 0);
  weft_pool *p;
  int rc;
  if (via_env) {
    setenv("WEFT_AFFINITY", mode, 1);
    rc = create_with(&p, 3, -1, NULL, NULL);
  } else {
    rc = create_with(&p, 3, -1, mode, NULL);
  }
  cr_assert_eq(rc, 0, "affinity \"%s\" (%s): create = %d (%s); a refused bind must not fail",
               mode, via_env ? "WEFT_AFFINITY" : "config", rc, weft_strerror(rc));
  for (int i = 0; i < AFF_TASKS; i++)
    cr_assert_eq(weft_pool_submit(p, aff_task, NULL), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&g_aff.ran) == AFF_TASKS, TU_DEADLINE_S),
            "affinity \"%s\": %ld of %d tasks ran", mode, atomic_load(&g_aff.ran), AFF_TASKS);
  cr_assert_eq(atomic_load(&g_aff.outside), 0,
               "affinity \"%s\": a worker was bound to a CPU the process may not use", mode);
  cr_assert_eq(atomic_load(&g_aff.mismatch), 0,
               "affinity \"0\": a worker was bound to something other than CPU 0");
  cr_assert_eq(weft_pool_destroy(p), 0);
  return atomic_load(&g_aff.ran);
}

Test(affinity, env_none, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("none", true), AFF_TASKS);
}

Test(affinity, env_compact, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("compact", true), AFF_TASKS);
}

Test(affinity, env_scatter, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("scatter", true), AFF_TASKS);
}

Test(affinity, env_cpu_list_0, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cpu_set_t s;
  tu_allowed_cpus(&s);
  if (!CPU_ISSET(0, &s))
    cr_skip_test("this process may not use CPU 0");
  cr_assert_eq(check_affinity("0", true), AFF_TASKS);
}

Test(affinity, config_none, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("none", false), AFF_TASKS);
}

Test(affinity, config_compact, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("compact", false), AFF_TASKS);
}

Test(affinity, config_scatter, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cr_assert_eq(check_affinity("scatter", false), AFF_TASKS);
}

Test(affinity, config_cpu_list_0, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cpu_set_t s;
  tu_allowed_cpus(&s);
  if (!CPU_ISSET(0, &s))
    cr_skip_test("this process may not use CPU 0");
  cr_assert_eq(check_affinity("0", false), AFF_TASKS);
}

Test(affinity, cpu_list_of_all_allowed_cpus, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cpu_set_t s;
  tu_allowed_cpus(&s);
  char list[256] = "";
  size_t len = 0;
  for (int c = 0; c < CPU_SETSIZE && len + 8 < sizeof list; c++)
    if (CPU_ISSET(c, &s))
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", len ? "," : "", c);
  cr_assert_eq(check_affinity(list, false), AFF_TASKS);
}

/* A CPU outside the process's mask is "a CPU the process may not use". */
Test(affinity, cpu_outside_process_mask_is_einval, .init = setup, .timeout = TU_TIMEOUT(30))
{
  cpu_set_t s;
  if (tu_allowed_cpus(&s) < 2)
    cr_skip_test("needs two usable CPUs");
  int first = tu_first_allowed_cpu(), second = -1;
  for (int c = first + 1; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &s)) {
      second = c;
      break;
    }
  cr_assert_eq(tu_pin_self(first), 0);
  char list[16];
  snprintf(list, sizeof list, "%d", second);
  weft_pool *p;
  tu_capture cap;
  char err[4096];
  tu_capture_begin(&cap);
  int rc = create_with(&p, 2, -1, list, NULL);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL,
               "affinity \"%s\" while the process may only use CPU %d: create = %d", list, first,
               rc);
  setenv("WEFT_AFFINITY", list, 1);
  tu_capture_begin(&cap);
  rc = create_with(&p, 2, -1, NULL, NULL);
  tu_capture_end(&cap, err, sizeof err);
  cr_assert_eq(rc, WEFT_EINVAL, "WEFT_AFFINITY=%s while the process may only use CPU %d: %d",
               list, first, rc);
  cr_assert(tu_line_has_all(err, "weft: ", "WEFT_AFFINITY", list), "stderr was: \"%s\"", err);
}
