/* SPDX-License-Identifier: MIT */
/* weft bench harness: clocks, checks, arguments and JSON output (harness.h). */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* ---------------------------------------------------------------- clocks */

static uint64_t ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts_ns(&ts);
}

/* CPU time of every thread of the process. CLOCK_PROCESS_CPUTIME_ID alone is
 * not enough: Linux sums each thread's runtime as of its last accounting
 * update, which for a thread running on another CPU lags by up to a tick
 * (4 ms at HZ=250), so the tail of a burst was charged to the idle window
 * after it. Reading a thread's own CPU clock (by TID) makes the kernel bring
 * that thread's runtime up to date first. */
uint64_t bench_cpu_ns(void) {
  uint64_t sum = 0;
  DIR *d = opendir("/proc/self/task");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9')
        continue;
      pid_t tid = (pid_t)atoi(e->d_name);
      clockid_t clk = (clockid_t)((~(unsigned)tid << 3) | 6u); /* CPUCLOCK_SCHED | PERTHREAD */
      struct timespec ts;
      if (clock_gettime(clk, &ts) == 0)
        sum += ts_ns(&ts);
    }
    closedir(d);
  }
  struct timespec ts; /* also covers threads that exited meanwhile */
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts_ns(&ts) > sum ? ts_ns(&ts) : sum;
}

void bench_sleep_until_ns(uint64_t deadline_ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
  ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

void bench_sleep_ns(uint64_t ns) { bench_sleep_until_ns(bench_now_ns() + ns); }

/* ------------------------------------------------------------- arguments */

static void usage(const char *prog, const char *const *supported) {
  fprintf(stderr, "usage: %s --workload W --threads N --reps R [--quick]\n  W:", prog);
  for (const char *const *w = supported; *w; w++)
    fprintf(stderr, " %s", *w);
  fprintf(stderr, "\n");
  exit(2);
}

static int parse_int(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 1 || v > 100000)
    return -1;
  *out = (int)v;
  return 0;
}

void bench_parse_args(int argc, char **argv, const char *rt, const char *const *supported,
                      bench_args *out) {
  (void)rt;
  out->workload = NULL;
  out->threads = 1;
  out->reps = 5;
  out->quick = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      out->quick = 1;
    } else if (!strcmp(a, "--workload") && i + 1 < argc) {
      out->workload = argv[++i];
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      if (parse_int(argv[++i], &out->threads))
        usage(argv[0], supported);
    } else if (!strcmp(a, "--reps") && i + 1 < argc) {
      if (parse_int(argv[++i], &out->reps))
        usage(argv[0], supported);
    } else {
      usage(argv[0], supported);
    }
  }
  if (!out->workload)
    usage(argv[0], supported);
  for (const char *const *w = supported; *w; w++)
    if (!strcmp(*w, out->workload))
      return;
  fprintf(stderr, "%s: workload '%s' not supported by this runtime\n", argv[0], out->workload);
  usage(argv[0], supported);
}

/* -------------------------------------------------------------- kernels */

uint64_t bench_fib_serial(int n) {
  if (n < 2)
    return (uint64_t)n;
  return bench_fib_serial(n - 1) + bench_fib_serial(n - 2);
}

/* The chunk kernels below are noinline as well as aligned: the build links
 * with LTO, which otherwise copies them into each caller (a runtime's chunk
 * function, a C++ lambda's trampoline), wherever that lands, and each
 * executable then runs its own placement of the loop. */
__attribute__((noinline, aligned(64))) uint64_t bench_imb_range(size_t begin, size_t end) {
  uint64_t s = 0;
  for (size_t i = begin; i < end; i++)
    s += bench_imb_iter(i);
  return s;
}

/* Aligned: this tight loop's speed depends on where it lands in the binary
 * (2x between two links of one bench_weft: 2.8 vs 5.5 ms for pfor_fine;
 * 2x between bench_weft and bench_weftxx while LTO inlined it into their
 * chunk functions); at a 64-byte boundary it lands the same way in every
 * executable. */
__attribute__((noinline, aligned(64))) void bench_fine_range(uint32_t *out, size_t begin,
                                                             size_t end, uint32_t seed) {
  for (size_t i = begin; i < end; i++)
    out[i] = bench_fine_f(i, seed);
}

__attribute__((noinline, aligned(64))) double bench_reduce_range(const double *x, size_t begin,
                                                                 size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; i++)
    s += x[i];
  return s;
}

uint64_t bench_imb_expected(void) {
  /* step: x -> M x + A. After s steps: x -> P[s] x + Q[s]. */
  static uint64_t P[BENCH_IMB_MAX_STEPS + 1], Q[BENCH_IMB_MAX_STEPS + 1];
  P[0] = 1;
  Q[0] = 0;
  for (unsigned s = 1; s <= BENCH_IMB_MAX_STEPS; s++) {
    P[s] = P[s - 1] * BENCH_IMB_MUL;
    Q[s] = Q[s - 1] * BENCH_IMB_MUL + BENCH_IMB_ADD;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < BENCH_IMB_N; i++) {
    uint64_t s = bench_imb_steps(i);
    sum += P[s] * bench_imb_seed(i) + Q[s];
  }
  return sum;
}

uint32_t *bench_fine_alloc(void) {
  uint32_t *p = (uint32_t *)malloc(sizeof(uint32_t) * BENCH_FINE_N);
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memset(p, 0, sizeof(uint32_t) * BENCH_FINE_N);
  return p;
}

size_t bench_fine_check(const uint32_t *out, uint32_t seed) {
  size_t bad = 0;
  for (size_t i = 0; i < BENCH_FINE_N; i++)
    bad += out[i] != bench_fine_f(i, seed);
  return bad;
}

double *bench_reduce_alloc(void) {
  double *x = (double *)malloc(sizeof(double) * BENCH_REDUCE_N);
  if (!x) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < BENCH_REDUCE_N; i++)
    x[i] = (double)(i % 1024);
  return x;
}

/* The 80 MB of inputs, on a 2-core VM with 480 MiB of shared L3: the sum
 * took 4.8-5.4 ms at the first repetitions and 2.7-3.0 ms after 10-15 at 2
 * threads, weft, oneTBB and OpenMP alike (and one thread's serial passes
 * as well, which did not warm what two threads then read), a ramp that
 * often began after a few flat repetitions, and a short idle undid it.
 * So each runtime repeats its own reduce, untimed, for BENCH_REDUCE_WARM_NS
 * before its timed repetitions. */
bool bench_reduce_timed(int *r, uint64_t first_ns) {
  if (*r >= 0)
    return true;
  if (bench_now_ns() - first_ns < BENCH_REDUCE_WARM_NS)
    *r = -2; /* the loop's increment: -1, another untimed one */
  return false;
}

double bench_reduce_expected(void) {
  /* 9765 full periods of 0..1023 and a partial one: integers far below 2^53 */
  uint64_t full = BENCH_REDUCE_N / 1024, rest = BENCH_REDUCE_N % 1024;
  return (double)(full * (1023u * 1024u / 2) + rest * (rest - 1) / 2);
}

int bench_wake_samples_idle(const bench_args *a) { return a->quick ? 2 * a->reps : 4 * a->reps; }
int bench_wake_samples_hot(const bench_args *a) { return a->quick ? 20 * a->reps : 80 * a->reps; }

/* --------------------------------------------------------------- output */

void bench_series_init(bench_series *s, int cap) {
  s->n = 0;
  s->cap = cap > 0 ? cap : 1;
  s->v = (double *)malloc(sizeof(double) * (size_t)s->cap);
  if (!s->v) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
}

void bench_series_add(bench_series *s, double v) {
  if (s->n == s->cap) {
    s->cap *= 2;
    double *nv = (double *)realloc(s->v, sizeof(double) * (size_t)s->cap);
    if (!nv) {
      fprintf(stderr, "bench: out of memory\n");
      exit(1);
    }
    s->v = nv;
  }
  s->v[s->n++] = v;
}

void bench_series_free(bench_series *s) {
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char fail_reason[256];
static int fail_count;

void bench_fail(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&fail_lock);
  if (fail_count++ == 0)
    memcpy(fail_reason, buf, sizeof buf);
  pthread_mutex_unlock(&fail_lock);
  fprintf(stderr, "bench: CHECK FAILED: %s\n", buf);
}

int bench_failed(void) {
  pthread_mutex_lock(&fail_lock);
  int n = fail_count;
  pthread_mutex_unlock(&fail_lock);
  return n != 0;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void bench_emit(const char *rt, const char *metric, int threads, const char *unit,
                const bench_series *s, const char *extra) {
  FILE *f = stdout;
  if (s->n == 0)
    bench_fail("%s: no samples", metric);
  fputs("{\"rt\":", f);
  json_string(f, rt);
  fputs(",\"workload\":", f);
  json_string(f, metric);
  fprintf(f, ",\"threads\":%d,\"unit\":", threads);
  json_string(f, unit);
  fputs(",\"samples\":[", f);
  for (int i = 0; i < s->n; i++)
    fprintf(f, "%s%.6g", i ? "," : "", s->v[i]);
  fputs("],\"check\":", f);
  pthread_mutex_lock(&fail_lock);
  if (fail_count)
    json_string(f, fail_reason);
  else
    json_string(f, "ok");
  pthread_mutex_unlock(&fail_lock);
  if (extra)
    fputs(extra, f);
  fputs("}\n", f);
  fflush(f);
}

int bench_exit_code(void) { return bench_failed() ? 1 : 0; }

/* ---------------------------------------------------------------- checks */

void bench_check_u64(const char *what, uint64_t got, uint64_t want) {
  if (got != want)
    bench_fail("%s: got %llu, expected %llu", what, (unsigned long long)got,
               (unsigned long long)want);
}

/* ---------------------------------------------------------------- events */

void bench_event_init(bench_event *e) {
  if (sem_init(&e->sem, 0, 0)) {
    perror("bench: sem_init");
    exit(1);
  }
}

void bench_event_destroy(bench_event *e) { sem_destroy(&e->sem); }

void bench_event_post(bench_event *e) { sem_post(&e->sem); }

int bench_event_wait(bench_event *e, uint64_t timeout_ns) {
  uint64_t deadline = bench_now_ns() + timeout_ns;
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline / 1000000000ull);
  ts.tv_nsec = (long)(deadline % 1000000000ull);
  for (;;) {
    int rc = sem_clockwait(&e->sem, CLOCK_MONOTONIC, &ts);
    if (rc == 0)
      return 0;
    if (errno == EINTR)
      continue;
    return -1;
  }
}

/* ------------------------------------------------------------------ wake */

typedef struct wake_probe {
  _Atomic uint64_t start_ns; /* when the task began */
  _Atomic uint64_t end_ns;   /* when it finished (idle starts) */
  atomic_int done;           /* busy mode: set by the task */
  int busy;                  /* set by the submitter before submitting */
  bench_event ev;            /* blocked mode: posted by the task */
} wake_probe;

static int wake_probe_task(void *arg) {
  wake_probe *p = (wake_probe *)arg;
  atomic_store_explicit(&p->start_ns, bench_now_ns(), memory_order_relaxed);
  atomic_store_explicit(&p->end_ns, bench_now_ns(), memory_order_relaxed);
  if (p->busy)
    atomic_store_explicit(&p->done, 1, memory_order_release);
  else
    bench_event_post(&p->ev);
  return 0;
}

/* One probe: waits until idle_until, submits, waits for the start. Returns
 * the latency in ns, or -1 after a failure (already reported). */
static int64_t wake_once(const char *metric, wake_probe *p, bench_submit_fn submit, void *ctx,
                         int busy, uint64_t idle_until) {
  if (busy) /* a busy submitter keeps its CPU through the gap too */
    while (bench_now_ns() < idle_until)
      bench_cpu_relax();
  else
    bench_sleep_until_ns(idle_until);
  atomic_store_explicit(&p->start_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  p->busy = busy;
  uint64_t t0 = bench_now_ns();
  int rc = submit(ctx, wake_probe_task, p);
  if (rc) {
    bench_fail("%s: submit failed (%d)", metric, rc);
    return -1;
  }
  if (busy) {
    while (!atomic_load_explicit(&p->done, memory_order_acquire)) {
      bench_cpu_relax();
      if (bench_now_ns() - t0 > BENCH_WAKE_TIMEOUT_NS) {
        bench_fail("%s: task did not run within %llu s", metric,
                   (unsigned long long)(BENCH_WAKE_TIMEOUT_NS / 1000000000ull));
        return -1;
      }
    }
  } else if (bench_event_wait(&p->ev, BENCH_WAKE_TIMEOUT_NS)) {
    bench_fail("%s: task did not run within %llu s", metric,
               (unsigned long long)(BENCH_WAKE_TIMEOUT_NS / 1000000000ull));
    return -1;
  }
  uint64_t t1 = atomic_load_explicit(&p->start_ns, memory_order_relaxed);
  if (t1 < t0) {
    bench_fail("%s: task start time before submission", metric);
    return -1;
  }
  return (int64_t)(t1 - t0);
}

static double median_of(double *v, int n) {
  /* insertion sort: n is small */
  for (int i = 1; i < n; i++) {
    double x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      j--;
    }
    v[j + 1] = x;
  }
  if (n == 0)
    return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_wake_run(const char *rt, const bench_args *a, bench_submit_fn submit, void *ctx,
                    const char *note) {
#ifdef PR_SET_TIMERSLACK
  /* sleep 0.2 ms as exactly as the kernel can (default slack is 50 us) */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  static wake_probe p;
  bench_event_init(&p.ev);
  char extra[512];
  extra[0] = 0;
  if (note)
    snprintf(extra, sizeof extra, ",\"note\":\"%s\"", note);

  /* warm-up: the runtime starts its threads, if it does so lazily. After a
   * failure every metric below prints no samples and the failure. */
  (void)wake_once("wake_warmup", &p, submit, ctx, 0, bench_now_ns());

  static const struct {
    const char *metric;
    int busy, hot;
  } kinds[3] = {{"wake_block", 0, 0}, {"wake_busy", 1, 0}, {"wake_hot", 1, 1}};
  /* wake_hot's submitter spins through the 0.2 ms gap and while it waits:
   * had it slept, the kernel would often wake it on the CPU of the very
   * worker that spins for its task (this VM's two CPUs share no scheduler
   * cache domain), and the figure would measure that preemption. */
  for (int k = 0; k < 3; k++) {
    int n = kinds[k].hot ? bench_wake_samples_hot(a) : bench_wake_samples_idle(a);
    uint64_t idle = kinds[k].hot ? BENCH_WAKE_HOT_IDLE_NS : BENCH_WAKE_IDLE_NS;
    bench_series s, gaps;
    bench_series_init(&s, n);
    bench_series_init(&gaps, n);
    for (int i = 0; i < n && !bench_failed(); i++) {
      uint64_t last_end = atomic_load_explicit(&p.end_ns, memory_order_relaxed);
      uint64_t until = last_end + idle;
      int64_t lat = wake_once(kinds[k].metric, &p, submit, ctx, kinds[k].busy, until);
      if (lat < 0)
        break;
      bench_series_add(&s, (double)lat / 1e3);
      /* the idle time the pool really had before this submission */
      uint64_t t_sub = atomic_load_explicit(&p.start_ns, memory_order_relaxed) - (uint64_t)lat;
      bench_series_add(&gaps, (double)(t_sub - last_end) / 1e3);
    }
    char ex[700];
    snprintf(ex, sizeof ex, "%s,\"idle_gap_us_median\":%.1f", extra, median_of(gaps.v, gaps.n));
    bench_emit(rt, kinds[k].metric, a->threads, "us", &s, ex);
    bench_series_free(&s);
    bench_series_free(&gaps);
  }
  /* p stays alive (static): a task that timed out may still touch it */
}

/* ------------------------------------------------------------------ idle */

uint64_t bench_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts_ns(&ts);
}

static void append_samples(char *buf, size_t cap, const char *key, const bench_series *s) {
  size_t len = strlen(buf);
  len += (size_t)snprintf(buf + len, cap - len, ",\"%s\":[", key);
  for (int i = 0; i < s->n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%.6g", i ? "," : "", s->v[i]);
  if (len < cap)
    snprintf(buf + len, cap - len, "]");
}

void bench_idle_run(const char *rt, const bench_args *a, void (*burst)(void *ctx), void *ctx) {
  bench_series s1, s2, m1, m2;
  bench_series_init(&s1, a->reps);
  bench_series_init(&s2, a->reps);
  bench_series_init(&m1, a->reps);
  bench_series_init(&m2, a->reps);
  for (int r = 0; r < a->reps && !bench_failed(); r++) {
    burst(ctx);
    uint64_t t_end = bench_now_ns();
    uint64_t c0 = bench_cpu_ns(), me0 = bench_thread_cpu_ns();
    bench_sleep_until_ns(t_end + BENCH_IDLE_WINDOW_NS);
    uint64_t c1 = bench_cpu_ns(), me1 = bench_thread_cpu_ns();
    bench_sleep_until_ns(t_end + 2 * BENCH_IDLE_WINDOW_NS);
    uint64_t c2 = bench_cpu_ns(), me2 = bench_thread_cpu_ns();
    /* The runtime's threads only: the measuring thread's own share (its
     * sleep and the clock reads) is reported apart, as main_thread_cpu_ms. */
    double r1 = ((double)(c1 - c0) - (double)(me1 - me0)) / 1e6;
    double r2 = ((double)(c2 - c1) - (double)(me2 - me1)) / 1e6;
    bench_series_add(&s1, r1 > 0 ? r1 : 0); /* the two clocks are read apart */
    bench_series_add(&s2, r2 > 0 ? r2 : 0);
    bench_series_add(&m1, (double)(me1 - me0) / 1e6);
    bench_series_add(&m2, (double)(me2 - me1) / 1e6);
  }
  /* the sleeping main thread's own share (the floor any runtime pays) */
  char extra[1024];
  extra[0] = 0;
  append_samples(extra, sizeof extra, "main_thread_cpu_ms", &m1);
  bench_emit(rt, "idle_s1", a->threads, "cpu_ms", &s1, extra);
  extra[0] = 0;
  append_samples(extra, sizeof extra, "main_thread_cpu_ms", &m2);
  bench_emit(rt, "idle_s2", a->threads, "cpu_ms", &s2, extra);
  bench_series_free(&s1);
  bench_series_free(&s2);
  bench_series_free(&m1);
  bench_series_free(&m2);
}

void bench_time_fib(const bench_args *a, bench_series *s, uint64_t (*fib)(int n),
                    void (*after)(void)) {
  for (int r = -1; r < a->reps; r++) {
    uint64_t t0 = bench_now_ns();
    uint64_t v = fib(BENCH_FIB_N);
    uint64_t t1 = bench_now_ns();
    if (after)
      after();
    bench_check_u64("fib(30)", v, BENCH_FIB_RESULT);
    if (r >= 0)
      bench_series_add(s, (double)(t1 - t0) / 1e6);
  }
}

/* -------------------------------------------------------------- op lists */

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A value in [0, n), n > 0: the high half of a 64x32 product (no modulo bias
 * worth caring about at these sizes, and no division). */
static uint32_t rand_below(uint64_t *state, uint32_t n) {
  return (uint32_t)(((splitmix64(state) >> 32) * (uint64_t)n) >> 32);
}

int bench_is_dep_workload(const char *w) {
  return !strcmp(w, "chain") || !strcmp(w, "indep") || !strcmp(w, "dag") || !strcmp(w, "wave");
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  return p;
}

bench_slot *bench_vars_alloc(size_t nvars) {
  size_t bytes = sizeof(bench_slot) * (nvars ? nvars : 1);
  bench_slot *p = (bench_slot *)aligned_alloc(64, bytes); /* bytes: a multiple of 64 */
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memset(p, 0, bytes);
  return p;
}

void bench_vars_free(bench_slot *vals) { free(vals); }

void bench_vars_init(const bench_oplist *L, bench_slot *vals) {
  uint64_t st = BENCH_DEP_SEED ^ 0xA5A5A5A5A5A5A5A5ull;
  for (size_t v = 0; v < L->nvars; v++)
    vals[v].v = splitmix64(&st);
}

uint64_t bench_vars_checksum(const bench_slot *vals, size_t n) {
  uint64_t h = 0x84222325CBF29CE4ull;
  for (size_t v = 0; v < n; v++) {
    h ^= vals[v].v;
    h *= 0x100000001B3ull;
    h ^= h >> 29;
  }
  return h;
}

/* Four rounds of a multiply/xor-shift mixer (the moremur/splitmix finaliser
 * constants), each depending on the previous one: ~4 x (2 multiplies + 3
 * shifts/xors) on the critical path, ~12 ns at 3 GHz. The inputs enter
 * between rounds, so the result depends on all of them. */
/* The kernel's one body: inlined into both entry points below, which are
 * never inlined themselves, so that every runtime's executable runs the
 * same machine code whatever its link-time optimiser decides (when the
 * pushers rows made bench_weft call bench_op_kernel from more places, LTO
 * stopped inlining it into bench_op_exec: 12% more instructions per op in
 * the replay rows, callgrind, all of them the bench's). */
static inline uint64_t op_kernel(uint64_t w, uint64_t r0, uint64_t r1, uint64_t i) {
  uint64_t x = w ^ (i * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 27)) * 0x3C79AC492BA7B653ull;
  x = (x ^ (x >> 33)) * 0x1C69B3F74AC4AE35ull;
  x ^= r0;
  x = (x ^ (x >> 27)) * 0x3C79AC492BA7B653ull;
  x = (x ^ (x >> 33)) * 0x1C69B3F74AC4AE35ull;
  x += r1;
  x = (x ^ (x >> 27)) * 0x3C79AC492BA7B653ull;
  x = (x ^ (x >> 33)) * 0x1C69B3F74AC4AE35ull;
  x ^= i;
  x = (x ^ (x >> 27)) * 0x3C79AC492BA7B653ull;
  x = (x ^ (x >> 33)) * 0x1C69B3F74AC4AE35ull;
  return x ^ (x >> 27);
}

__attribute__((noinline)) uint64_t bench_op_kernel(uint64_t w, uint64_t r0, uint64_t r1,
                                                   uint64_t i) {
  return op_kernel(w, r0, r1, i);
}

__attribute__((noinline)) void bench_op_exec(bench_slot *vals, const bench_op *ops, size_t i) {
  const bench_op *o = &ops[i];
  uint64_t a = o->nr > 0 ? vals[o->r[0]].v : 0;
  uint64_t b = o->nr > 1 ? vals[o->r[1]].v : 0;
  vals[o->w].v = op_kernel(vals[o->w].v, a, b, (uint64_t)i);
}

void bench_oplist_run(bench_slot *vals, const bench_op *ops, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++)
    bench_op_exec(vals, ops, i);
}

void bench_oplist_make(bench_oplist *L, const char *w, int quick) {
  memset(L, 0, sizeof *L);
  uint64_t st = BENCH_DEP_SEED;
  if (!strcmp(w, "chain")) {
    L->workload = "chain";
    L->nops = quick ? BENCH_CHAIN_OPS_QUICK : BENCH_CHAIN_OPS;
    L->nvars = 1;
    L->ops = (bench_op *)xmalloc(sizeof(bench_op) * L->nops);
    for (size_t i = 0; i < L->nops; i++)
      L->ops[i] = (bench_op){0, 0, {0, 0}};
  } else if (!strcmp(w, "indep")) {
    L->workload = "indep";
    L->nops = quick ? BENCH_INDEP_OPS_QUICK : BENCH_INDEP_OPS;
    L->nvars = BENCH_INDEP_VARS;
    L->ops = (bench_op *)xmalloc(sizeof(bench_op) * L->nops);
    for (size_t i = 0; i < L->nops; i++)
      L->ops[i] = (bench_op){(uint32_t)(i % BENCH_INDEP_VARS), 0, {0, 0}};
  } else if (!strcmp(w, "dag")) {
    L->workload = "dag";
    L->nops = quick ? BENCH_DAG_OPS_QUICK : BENCH_DAG_OPS;
    L->nvars = BENCH_DAG_VARS;
    L->ops = (bench_op *)xmalloc(sizeof(bench_op) * L->nops);
    for (size_t i = 0; i < L->nops; i++) {
      bench_op *o = &L->ops[i];
      o->w = rand_below(&st, BENCH_DAG_VARS);
      o->nr = rand_below(&st, 3);
      o->r[0] = o->r[1] = 0;
      for (uint32_t k = 0; k < o->nr; k++) {
        uint32_t v;
        do
          v = rand_below(&st, BENCH_DAG_VARS);
        while (v == o->w || (k == 1 && v == o->r[0]));
        o->r[k] = v;
      }
    }
  } else if (!strcmp(w, "wave")) {
    uint32_t n = quick ? BENCH_WAVE_N_QUICK : BENCH_WAVE_N;
    L->workload = "wave";
    L->nops = L->nvars = (size_t)n * n;
    L->ops = (bench_op *)xmalloc(sizeof(bench_op) * L->nops);
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < n; j++) {
        bench_op *o = &L->ops[(size_t)i * n + j];
        o->w = i * n + j;
        o->nr = 0;
        o->r[0] = o->r[1] = 0;
        if (i > 0)
          o->r[o->nr++] = (i - 1) * n + j;
        if (j > 0)
          o->r[o->nr++] = i * n + (j - 1);
      }
  } else {
    fprintf(stderr, "bench: no op list for workload '%s'\n", w);
    exit(2);
  }
  L->ref = bench_vars_alloc(L->nvars);
  bench_vars_init(L, L->ref);
  bench_oplist_run(L->ref, L->ops, 0, L->nops);
  L->ref_sum = bench_vars_checksum(L->ref, L->nvars);
}

void bench_oplist_free(bench_oplist *L) {
  free(L->ops);
  bench_vars_free(L->ref);
  L->ops = NULL;
  L->ref = NULL;
}

size_t bench_oplist_verify(const bench_oplist *L, const bench_slot *vals, const char *rt) {
  uint64_t sum = bench_vars_checksum(vals, L->nvars);
  size_t bad = 0, first = 0;
  for (size_t v = 0; v < L->nvars; v++)
    if (vals[v].v != L->ref[v].v) {
      if (bad++ == 0)
        first = v;
    }
  if (bad)
    bench_fail("%s %s: %zu of %zu vars differ from the sequential run (first: var %zu), "
               "checksum %016llx, expected %016llx",
               rt, L->workload, bad, L->nvars, first, (unsigned long long)sum,
               (unsigned long long)L->ref_sum);
  else if (sum != L->ref_sum) /* cannot happen when every var matches */
    bench_fail("%s %s: checksum %016llx, expected %016llx", rt, L->workload,
               (unsigned long long)sum, (unsigned long long)L->ref_sum);
  return bad;
}

/* what the budget did since the last bench_dep_emit (which reports it) */
static int dep_cut_reps, dep_warmup_only;

void bench_dep_time(const char *rt, const bench_args *a, const bench_oplist *L,
                    bench_slot *vals, bench_dep_rep_fn rep, void *ctx, bench_series *s) {
  const uint64_t budget = a->quick ? BENCH_DEP_BUDGET_QUICK_NS : BENCH_DEP_BUDGET_NS;
  int reps = a->reps;
  for (int r = -1; r < reps && !bench_failed(); r++) {
    bench_vars_init(L, vals);
    uint64_t w0 = bench_now_ns();
    uint64_t ns = rep(ctx, L, vals);
    uint64_t wall = bench_now_ns() - w0;
    if (bench_oplist_verify(L, vals, rt) || bench_failed())
      break;
    if (r >= 0) {
      bench_series_add(s, (double)ns / (double)L->nops);
    } else if (wall > budget) {
      /* a pathologically slow runtime: its warm-up is its only sample */
      bench_series_add(s, (double)ns / (double)L->nops);
      dep_warmup_only = 1;
      break;
    } else if (wall * (uint64_t)reps > budget) {
      reps = (int)(budget / (wall ? wall : 1));
      if (reps < 1)
        reps = 1;
      if (!dep_cut_reps || reps < dep_cut_reps)
        dep_cut_reps = reps;
    }
  }
}

void bench_dep_emit(const char *rt, const bench_args *a, const bench_oplist *L,
                    const bench_series *s, const char *extra) {
  bench_dep_emit_metric(rt, a, L, L->workload, s, extra);
}

void bench_dep_emit_metric(const char *rt, const bench_args *a, const bench_oplist *L,
                           const char *metric, const bench_series *s, const char *extra) {
  char buf[4096];
  const char *cut =
      dep_warmup_only ? ",\"time_budget\":\"warm-up over the time budget: the only sample\"" : "";
  char cutbuf[96] = "";
  if (!dep_warmup_only && dep_cut_reps) {
    snprintf(cutbuf, sizeof cutbuf, ",\"time_budget\":\"repetitions cut to %d\"", dep_cut_reps);
    cut = cutbuf;
  }
  snprintf(buf, sizeof buf, ",\"ops\":%zu,\"vars\":%zu%s%s", L->nops, L->nvars, cut,
           extra ? extra : "");
  dep_cut_reps = dep_warmup_only = 0;
  bench_emit(rt, metric, a->threads, "ns/op", s, buf);
}

/* ---------------------------------------------------------- graph shapes */

int bench_is_graph_workload(const char *w) {
  return !strcmp(w, "graph_dag") || !strcmp(w, "graph_grid") || !strcmp(w, "graph_tree");
}

/* The nodes' kernel: the predecessors' values mixed in (in pred order), then
 * steps of the dependent multiply chain of pfor_imb. noinline and aligned
 * like the chunk kernels: one placement of it in every executable. */
static inline uint64_t gnode_mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__attribute__((noinline, aligned(64))) void bench_gnode_exec(const bench_gshape *G,
                                                             bench_gslot *s, size_t i) {
  uint64_t x = gnode_mix((uint64_t)i * 0x9E3779B97F4A7C15ull + BENCH_GRAPH_SEED);
  for (uint32_t k = G->pred0[i]; k < G->pred0[i + 1]; k++)
    x = gnode_mix(x ^ s[G->pred[k]].v);
  for (uint32_t k = 0; k < G->steps; k++)
    x = x * BENCH_IMB_MUL + BENCH_IMB_ADD;
  s[i].v = x;
  s[i].runs++;
}

/* pairs (pred, succ) -> G's pred lists, counted by successor, each node's
 * predecessors in the order the pairs list them */
static void gshape_from_pairs(bench_gshape *G, const uint32_t (*e)[2], size_t ne) {
  G->pred0 = (uint32_t *)calloc(G->n + 1, sizeof *G->pred0);
  G->pred = (uint32_t *)xmalloc(sizeof *G->pred * ne);
  uint32_t *fill = (uint32_t *)xmalloc(sizeof *fill * G->n);
  if (!G->pred0) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  for (size_t k = 0; k < ne; k++)
    G->pred0[e[k][1] + 1]++;
  G->max_preds = 0;
  G->nsources = 0;
  for (size_t i = 0; i < G->n; i++) {
    if (G->pred0[i + 1] > G->max_preds)
      G->max_preds = G->pred0[i + 1];
    if (G->pred0[i + 1] == 0)
      G->nsources++;
    G->pred0[i + 1] += G->pred0[i];
  }
  memcpy(fill, G->pred0, sizeof *fill * G->n);
  for (size_t k = 0; k < ne; k++) {
    if (e[k][0] >= e[k][1]) {
      fprintf(stderr, "bench: graph edge %u -> %u against the node order\n", e[k][0], e[k][1]);
      exit(1);
    }
    G->pred[fill[e[k][1]]++] = e[k][0];
  }
  free(fill);
  G->nedges = ne;
  G->sources = (uint32_t *)xmalloc(sizeof *G->sources * (G->nsources ? G->nsources : 1));
  size_t j = 0;
  for (size_t i = 0; i < G->n; i++)
    if (G->pred0[i] == G->pred0[i + 1])
      G->sources[j++] = (uint32_t)i;
}

void bench_gshape_make(bench_gshape *G, const char *w) {
  memset(G, 0, sizeof *G);
  uint32_t(*e)[2] = NULL;
  size_t ne = 0;
  if (!strcmp(w, "graph_dag")) {
    const uint32_t L = BENCH_GDAG_LAYERS, W = BENCH_GDAG_WIDTH;
    G->workload = "graph_dag";
    G->n = (size_t)L * W;
    G->steps = BENCH_GDAG_STEPS;
    e = (uint32_t(*)[2])xmalloc(sizeof *e * G->n * BENCH_GDAG_MAX_OUT);
    uint64_t st = BENCH_GRAPH_SEED;
    for (uint32_t l = 0; l + 1 < L; l++)
      for (uint32_t k = 0; k < W; k++) {
        uint32_t from = l * W + k, outs = 1 + rand_below(&st, BENCH_GDAG_MAX_OUT);
        uint32_t to[BENCH_GDAG_MAX_OUT];
        for (uint32_t j = 0; j < outs; j++) {
          uint32_t t;
          int dup;
          do { /* distinct successors */
            t = (l + 1) * W + rand_below(&st, W);
            dup = 0;
            for (uint32_t q = 0; q < j; q++)
              dup |= to[q] == t;
          } while (dup);
          to[j] = t;
          e[ne][0] = from;
          e[ne][1] = t;
          ne++;
        }
      }
  } else if (!strcmp(w, "graph_grid")) {
    const uint32_t N = BENCH_GGRID_N;
    G->workload = "graph_grid";
    G->n = (size_t)N * N;
    e = (uint32_t(*)[2])xmalloc(sizeof *e * G->n * 2);
    for (uint32_t r = 0; r < N; r++)
      for (uint32_t c = 0; c < N; c++) {
        uint32_t i = r * N + c;
        if (c > 0) {
          e[ne][0] = i - 1;
          e[ne][1] = i;
          ne++;
        }
        if (r > 0) {
          e[ne][0] = i - N;
          e[ne][1] = i;
          ne++;
        }
      }
  } else if (!strcmp(w, "graph_tree")) {
    G->workload = "graph_tree";
    G->n = BENCH_GTREE_NODES;
    e = (uint32_t(*)[2])xmalloc(sizeof *e * G->n);
    for (uint32_t i = 1; i < G->n; i++) {
      e[ne][0] = (i - 1) / 2;
      e[ne][1] = i;
      ne++;
    }
  } else {
    fprintf(stderr, "bench: no graph shape for workload '%s'\n", w);
    exit(2);
  }
  gshape_from_pairs(G, (const uint32_t(*)[2])e, ne);
  free(e);
  /* the serial reference: the nodes in index order (a topological one) */
  bench_gslot *s = bench_gslots_alloc(G->n);
  for (size_t i = 0; i < G->n; i++)
    bench_gnode_exec(G, s, i);
  G->ref = (uint64_t *)xmalloc(sizeof *G->ref * G->n);
  for (size_t i = 0; i < G->n; i++)
    G->ref[i] = s[i].v;
  free(s);
}

void bench_gshape_free(bench_gshape *G) {
  free(G->pred0);
  free(G->pred);
  free(G->sources);
  free(G->ref);
  memset(G, 0, sizeof *G);
}

bench_gslot *bench_gslots_alloc(size_t n) {
  size_t bytes = sizeof(bench_gslot) * (n ? n : 1); /* a multiple of 64 */
  bench_gslot *p = (bench_gslot *)aligned_alloc(64, bytes);
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memset(p, 0, bytes);
  return p;
}

void bench_gslots_reset(const bench_gshape *G, bench_gslot *s) {
  for (size_t i = 0; i < G->n; i++) {
    s[i].v = 0;
    s[i].runs = 0;
  }
}

size_t bench_gshape_verify(const bench_gshape *G, const bench_gslot *s, const char *rt,
                           const char *what) {
  size_t bad_v = 0, bad_runs = 0, first = 0;
  uint64_t first_runs = 1;
  for (size_t i = 0; i < G->n; i++) {
    int wrong = 0;
    if (s[i].runs != 1) {
      bad_runs++;
      wrong = 1;
    } else if (s[i].v != G->ref[i]) {
      bad_v++;
      wrong = 1;
    }
    if (wrong && bad_v + bad_runs == 1) {
      first = i;
      first_runs = s[i].runs;
    }
  }
  if (bad_v || bad_runs)
    bench_fail("%s %s: %zu of %zu nodes wrong (%zu not run exactly once, %zu with a value "
               "other than the serial run's; first: node %zu, run %llu times)",
               rt, what, bad_v + bad_runs, G->n, bad_runs, bad_v, first,
               (unsigned long long)first_runs);
  return bad_v + bad_runs;
}

static int graph_cut_rounds;

void bench_graph_time(const char *rt, const bench_args *a, const bench_gshape *G,
                      bench_gslot *s, bench_graph_mode *modes, int nmodes) {
  const uint64_t budget = a->quick ? BENCH_DEP_BUDGET_QUICK_NS : BENCH_DEP_BUDGET_NS;
  int reps = a->reps;
  graph_cut_rounds = 0;
  for (int m = 0; m < nmodes; m++)
    bench_series_init(&modes[m].s, a->reps);
  for (int r = -1; r < reps && !bench_failed(); r++) {
    uint64_t w0 = bench_now_ns();
    for (int m = 0; m < nmodes && !bench_failed(); m++) {
      bench_gslots_reset(G, s);
      uint64_t ns = modes[m].rep(modes[m].ctx, G, s);
      if (bench_gshape_verify(G, s, rt, modes[m].metric) || bench_failed())
        break;
      if (r >= 0)
        bench_series_add(&modes[m].s, (double)ns / (double)G->n);
    }
    uint64_t wall = bench_now_ns() - w0;
    if (r < 0 && wall * (uint64_t)reps > budget) {
      reps = (int)(budget / (wall ? wall : 1));
      if (reps < 1)
        reps = 1;
      graph_cut_rounds = reps;
    }
  }
}

void bench_graph_emit(const char *rt, const bench_args *a, const bench_gshape *G,
                      bench_graph_mode *m, const char *extra) {
  char buf[2048], cut[96] = "";
  if (graph_cut_rounds)
    snprintf(cut, sizeof cut, ",\"time_budget\":\"repetitions cut to %d\"", graph_cut_rounds);
  snprintf(buf, sizeof buf, ",\"nodes\":%zu,\"edges\":%zu,\"max_preds\":%u,\"steps\":%u%s%s",
           G->n, G->nedges, G->max_preds, G->steps, cut, extra ? extra : "");
  bench_emit(rt, m->metric, a->threads, "ns/node", &m->s, buf);
  bench_series_free(&m->s);
}

/* ---------------------------------------------------------------- fanout */

uint32_t *bench_fanout_alloc(void) {
  uint32_t *p = (uint32_t *)aligned_alloc(64, sizeof(uint32_t) * BENCH_FANOUT_TASKS);
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memset(p, 0, sizeof(uint32_t) * BENCH_FANOUT_TASKS);
  return p;
}

__attribute__((noinline)) void bench_fanout_task(uint32_t *slots, size_t k, uint32_t seed) {
  slots[k] += bench_fanout_val(k, seed);
}

void bench_fanout_run(const char *rt, const bench_args *a, bench_fanout_rep_fn rep, void *ctx,
                      const char *extra) {
  uint32_t *slots = bench_fanout_alloc();
  bench_series s;
  bench_series_init(&s, a->reps);
  for (int r = -1; r < a->reps && !bench_failed(); r++) {
    uint32_t seed = bench_fine_seed(r + 7);
    memset(slots, 0, sizeof(uint32_t) * BENCH_FANOUT_TASKS);
    uint64_t ns = rep(ctx, slots, seed);
    size_t ok = 0, missing = 0, first_bad = BENCH_FANOUT_TASKS;
    for (size_t k = 0; k < BENCH_FANOUT_TASKS; k++) {
      uint32_t want = bench_fanout_val(k, seed);
      if (slots[k] == want) {
        ok++;
      } else {
        missing += slots[k] == 0;
        if (first_bad == BENCH_FANOUT_TASKS)
          first_bad = k;
      }
    }
    if (ok != BENCH_FANOUT_TASKS) {
      bench_fail("%s fanout: %zu of %u tasks ran exactly once (%zu never ran; first wrong: "
                 "task %zu)", rt, ok, BENCH_FANOUT_TASKS, missing, first_bad);
      break;
    }
    if (r >= 0)
      bench_series_add(&s, (double)ns / (double)BENCH_FANOUT_TASKS);
  }
  char buf[1024];
  snprintf(buf, sizeof buf, ",\"tasks\":%u%s", BENCH_FANOUT_TASKS, extra ? extra : "");
  bench_emit(rt, "fanout", a->threads, "ns/task", &s, buf);
  bench_series_free(&s);
  free(slots);
}

/* -------------------------------------------------------------- pipeline */

#define PIPE_ROUNDS_PRE 3
#define PIPE_ROUNDS_COMPUTE 12

/* a 64-bit mixer (the murmur3 finaliser's shape, other constants) */
static inline uint64_t pipe_mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ull;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}

static void pipe_load(uint64_t *out, size_t n, size_t k) {
  uint64_t base = (uint64_t)k * n + 0x51ED270B27A1F3C5ull;
  for (size_t i = 0; i < n; i++)
    out[i] = pipe_mix(base + i);
}

static void pipe_rounds(uint64_t *out, const uint64_t *in, size_t n, uint64_t salt, int rounds) {
  for (size_t i = 0; i < n; i++) {
    uint64_t x = in[i] ^ salt;
    for (int r = 0; r < rounds; r++)
      x = pipe_mix(x + (uint64_t)r);
    out[i] = x;
  }
}

static uint64_t pipe_fold(const uint64_t *in, size_t n, uint64_t sink, size_t k) {
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i++)
    acc += in[i] * (2 * (uint64_t)i + 1);
  return pipe_mix(sink ^ acc ^ ((uint64_t)k << 32));
}

/* the stage's work on (in, out); write-back folds in into the sink */
static void pipe_work(bench_pipe *P, int s, size_t k, const uint64_t *in, uint64_t *out) {
  switch (s) {
  case BENCH_PIPE_LOAD:
    pipe_load(out, P->words, k);
    break;
  case BENCH_PIPE_PRE:
    pipe_rounds(out, in, P->words, (uint64_t)k, PIPE_ROUNDS_PRE);
    break;
  case BENCH_PIPE_COMPUTE:
    pipe_rounds(out, in, P->words, 0x9E3779B97F4A7C15ull, PIPE_ROUNDS_COMPUTE);
    break;
  default:
    P->sink = pipe_fold(in, P->words, P->sink, k);
    break;
  }
}

void bench_pipe_stage(bench_pipe *P, int s, size_t k) {
  int b = (int)(k & 1);
  const uint64_t *in = s > 0 ? P->slot[s - 1][b] : NULL;
  uint64_t *out = s < 3 ? P->slot[s][b] : NULL;
  pipe_work(P, s, k, in, out);
}

static _Atomic size_t pipe_live, pipe_peak;

size_t bench_pipe_live_bytes(void) { return atomic_load(&pipe_live); }
size_t bench_pipe_peak_bytes(void) { return atomic_load(&pipe_peak); }

void bench_pipe_item_stage(bench_pipe *P, int s, size_t k) {
  bench_pipe_item *it = &P->item[k];
  size_t w = P->words;
  if (s == BENCH_PIPE_LOAD) {
    size_t bytes = 3 * w * sizeof(uint64_t);
    if (it->buf)
      bench_fail("pipeline: item %zu loaded twice", k);
    it->buf = (uint64_t *)malloc(bytes);
    if (!it->buf) {
      fprintf(stderr, "bench: out of memory\n");
      exit(1);
    }
    size_t now = atomic_fetch_add(&pipe_live, bytes) + bytes;
    size_t pk = atomic_load(&pipe_peak);
    while (now > pk && !atomic_compare_exchange_weak(&pipe_peak, &pk, now)) {
    }
  } else if (!it->buf) {
    bench_fail("pipeline: stage %d of item %zu before its load", s, k);
    return;
  }
  uint64_t *b = it->buf;
  const uint64_t *in = s > 0 ? b + (size_t)(s - 1) * w : NULL;
  uint64_t *out = s < 3 ? b + (size_t)s * w : NULL;
  pipe_work(P, s, k, in, out);
  if (s == BENCH_PIPE_WB) {
    free(b);
    it->buf = NULL;
    atomic_fetch_sub(&pipe_live, 3 * w * sizeof(uint64_t));
  }
}

void bench_pipe_reset(bench_pipe *P) {
  P->sink = BENCH_PIPE_SINK_SEED;
  atomic_store(&pipe_peak, atomic_load(&pipe_live));
}

void bench_pipe_make(bench_pipe *P, int quick) {
  memset(P, 0, sizeof *P);
  P->items = quick ? BENCH_PIPE_ITEMS_QUICK : BENCH_PIPE_ITEMS;
  P->words = BENCH_PIPE_WORDS;
  for (int s = 0; s < 3; s++)
    for (int b = 0; b < 2; b++) {
      P->slot[s][b] = (uint64_t *)aligned_alloc(64, P->words * sizeof(uint64_t));
      if (!P->slot[s][b]) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
      }
      memset(P->slot[s][b], 0, P->words * sizeof(uint64_t));
    }
  P->item = (bench_pipe_item *)aligned_alloc(64, sizeof(bench_pipe_item) * P->items);
  if (!P->item) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  memset(P->item, 0, sizeof(bench_pipe_item) * P->items);
  /* the sequential reference, on the static slots */
  bench_pipe_reset(P);
  for (size_t k = 0; k < P->items; k++)
    for (int s = 0; s < 4; s++)
      bench_pipe_stage(P, s, k);
  P->expected = P->sink;
}

void bench_pipe_free(bench_pipe *P) {
  for (int s = 0; s < 3; s++)
    for (int b = 0; b < 2; b++)
      free(P->slot[s][b]);
  for (size_t k = 0; k < P->items; k++)
    free(P->item[k].buf);
  free(P->item);
  memset(P, 0, sizeof *P);
}

static const char *const pipe_variant_name[3] = {"static", "alloc", "bp"};

void bench_pipe_time(const char *rt, const bench_args *a, bench_pipe *P, int variant,
                     bench_pipe_rep_fn rep, void *ctx, bench_series *rate, bench_series *mem) {
  for (int r = -1; r < a->reps && !bench_failed(); r++) {
    bench_pipe_reset(P);
    uint64_t ns = rep(ctx, P, variant);
    if (P->sink != P->expected) {
      bench_fail("%s pipeline (%s): checksum %016llx, expected %016llx (the sequential run's)",
                 rt, pipe_variant_name[variant], (unsigned long long)P->sink,
                 (unsigned long long)P->expected);
      break;
    }
    if (bench_pipe_live_bytes() != 0) {
      bench_fail("%s pipeline (%s): %zu bytes of item buffers still live after the run", rt,
                 pipe_variant_name[variant], bench_pipe_live_bytes());
      break;
    }
    if (r < 0)
      continue;
    bench_series_add(rate, (double)P->items / ((double)(ns ? ns : 1) / 1e9));
    if (mem)
      bench_series_add(mem, (double)bench_pipe_peak_bytes() / (1024.0 * 1024.0));
  }
}

void bench_pipe_run(const char *rt, const bench_args *a, bench_pipe_rep_fn rep, void *ctx,
                    int has_bp, const char *extra, void (*done)(void *ctx, bench_pipe *P)) {
  bench_pipe P;
  bench_pipe_make(&P, a->quick);
  bench_series s[3], m[3];
  for (int v = 0; v < 3; v++) {
    bench_series_init(&s[v], a->reps);
    bench_series_init(&m[v], a->reps);
  }
  char buf[1024];
  snprintf(buf, sizeof buf,
           ",\"items\":%zu,\"buffer_kb\":%zu,\"item_kb\":%zu,\"mem\":\"peak bytes live in item "
           "buffers, counted by the workload (MiB)\"%s",
           P.items, P.words * 8 / 1024, 3 * P.words * 8 / 1024, extra ? extra : "");
  bench_pipe_time(rt, a, &P, BENCH_PIPE_STATIC, rep, ctx, &s[0], NULL);
  bench_emit(rt, "pipeline", a->threads, "items/s", &s[0], buf);
  bench_pipe_time(rt, a, &P, BENCH_PIPE_ALLOC, rep, ctx, &s[1], &m[1]);
  bench_emit(rt, "pipe_alloc", a->threads, "items/s", &s[1], buf);
  bench_emit(rt, "pipe_alloc_mem", a->threads, "MiB", &m[1], buf);
  if (has_bp) {
    bench_pipe_time(rt, a, &P, BENCH_PIPE_BP, rep, ctx, &s[2], &m[2]);
    bench_emit(rt, "pipe_bp", a->threads, "items/s", &s[2], buf);
    bench_emit(rt, "pipe_bp_mem", a->threads, "MiB", &m[2], buf);
  }
  for (int v = 0; v < 3; v++) {
    bench_series_free(&s[v]);
    bench_series_free(&m[v]);
  }
  if (done)
    done(ctx, &P);
  bench_pipe_free(&P);
}
