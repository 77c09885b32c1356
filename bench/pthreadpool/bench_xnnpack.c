/* SPDX-License-Identifier: MIT */
/*
 * bench_xnnpack: XNNPACK inference latency and pthreadpool dispatch cost,
 * for comparing the stock libpthreadpool.so.0 with weft's drop-in
 * replacement: build once, run once with each library (LD_LIBRARY_PATH),
 * on the same machine.
 *
 *   bench_xnnpack --threads N [--reps R] [--quick] [--case NAME[,NAME]]
 *
 *   --threads N   pthreadpool_create(N), N >= 1
 *   --reps R      timed samples per case; default 100 for the network, 200
 *                 for the others, or with --quick 20 and 50
 *   --quick       the smaller defaults and fewer warm-up runs
 *   --case NAMES  only the cases named (comma-separated; repeatable), e.g.
 *                 for a profiler; default all
 *
 * Cases, each after warm-up runs:
 *   mobilenet_v1     one inference of MobileNet v1 (tests/compat/
 *                    xnn_mobilenet.h: 224x224x3, random weights, softmax)
 *   conv1x1          1x1 convolution, 7x7x1024 -> 1024 (xnn_run_operator)
 *   dwconv3x3        depthwise 3x3, 112x112x32, stride 1, padding 1
 *   fc               fully connected, 1x1024 -> 1000
 *   pfor_empty_1, pfor_empty_100, pfor_empty_10000
 *                    pthreadpool_parallelize_1d over 1, 100, 10000 items
 *                    whose body only does counter[i]++; a sample times a
 *                    batch of calls and is divided by the batch size, the
 *                    batch sized in warm-up to take ~1 ms (1 to 1000 calls)
 * One JSON object per case on stdout, e.g.
 *   {"bench":"xnnpack","case":"mobilenet_v1","threads":2,"unit":"us",
 *    "median_us":6301.2,"p99_us":...,"min_us":...,"max_us":...,
 *    "samples":100,"lib":"/lib/x86_64-linux-gnu/libpthreadpool.so.0"}
 * XNNPACK cases are in microseconds per run; the pfor cases in nanoseconds
 * per call ("unit":"ns", median_ns, ...; plus "items" and "batch").
 * "threads" is pthreadpool_get_threads_count; "lib" is the shared object
 * that provides pthreadpool_create (dladdr). p99 is nearest-rank.
 *
 * Checks: every XNNPACK output is finite and bit-identical to the case's
 * first run (memcmp, outside the timed region); after each pfor case every
 * counter must equal the number of calls made. Exit status 1 on a failed
 * check or XNNPACK error, 2 on a usage error.
 *
 * Build (Debian 12: libxnnpack-dev, libpthreadpool-dev):
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Itests/compat \
 *       bench/pthreadpool/bench_xnnpack.c -o bench_xnnpack \
 *       -lXNNPACK -lpthreadpool -lm -ldl
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "xnn_mobilenet.h"

#include <errno.h>
#include <time.h>

typedef struct {
  size_t threads;
  size_t reps; /* 0: the per-case default */
  int quick;
  const char *cases[16]; /* --case: the names to run; none: all */
  size_t ncases;
} options;

/* Environment every case reports. */
typedef struct {
  pthreadpool_t pool;
  size_t threads;
  const char *lib;
  options opt;
} bench_env;

/* ---- command line ---- */

static void usage(void)
{
  fprintf(stderr, "usage: bench_xnnpack --threads N [--reps R] [--quick] [--case NAME[,NAME]]\n"
                  "cases: mobilenet_v1 conv1x1 dwconv3x3 fc pfor_empty_1 pfor_empty_100 "
                  "pfor_empty_10000\n");
  exit(2);
}

static size_t parse_count(const char *s)
{
  return xm_parse_count(s, 10000000, usage);
}

static const char *const case_names[] = {"mobilenet_v1", "conv1x1",      "dwconv3x3",
                                         "fc",           "pfor_empty_1", "pfor_empty_100",
                                         "pfor_empty_10000"};

/* Adds the comma-separated case names in s (each one of case_names). */
static void add_cases(options *o, char *s)
{
  const size_t known = sizeof case_names / sizeof *case_names;
  for (char *name = strtok(s, ","); name; name = strtok(NULL, ",")) {
    size_t k = 0;
    while (k < known && strcmp(name, case_names[k]) != 0)
      k++;
    if (k == known || o->ncases == sizeof o->cases / sizeof *o->cases)
      usage();
    o->cases[o->ncases++] = case_names[k];
  }
}

static options parse_args(int argc, char **argv)
{
  options o = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      o.quick = 1;
    else if (i + 1 >= argc)
      usage();
    else if (strcmp(argv[i], "--threads") == 0)
      o.threads = parse_count(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0)
      o.reps = parse_count(argv[++i]);
    else if (strcmp(argv[i], "--case") == 0)
      add_cases(&o, argv[++i]);
    else
      usage();
  }
  if (o.threads == 0)
    usage();
  return o;
}

/* Whether the case is to run (--case). */
static int wanted(const options *o, const char *name)
{
  for (size_t k = 0; k < o->ncases; k++)
    if (strcmp(o->cases[k], name) == 0)
      return 1;
  return o->ncases == 0;
}

/* Samples for a case: --reps, else the quick or full default. */
static size_t samples_for(const options *o, size_t quick, size_t full)
{
  return o->reps ? o->reps : o->quick ? quick : full;
}

/* ---- timing and statistics ---- */

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  double median, p99, min, max;
} stats;

/* Sorts s[0..n) (n >= 1) and summarizes it. */
static stats summarize(double *s, size_t n)
{
  qsort(s, n, sizeof *s, cmp_double);
  size_t rank99 = (size_t)ceil(0.99 * (double)n); /* nearest rank, 1-based */
  stats st;
  st.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  st.p99 = s[(rank99 ? rank99 : 1) - 1];
  st.min = s[0];
  st.max = s[n - 1];
  return st;
}

/* Prints s JSON-string-escaped (paths rarely need it, but be safe). */
static void print_json_string(const char *s)
{
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* One result line; `extra` is "" or more JSON members starting with ','. */
static void report(const bench_env *env, const char *name, const char *unit, stats st, size_t n,
                   const char *extra)
{
  printf("{\"bench\":\"xnnpack\",\"case\":\"%s\",\"threads\":%zu,"
         "\"unit\":\"%s\",\"median_%s\":%.3f,\"p99_%s\":%.3f,"
         "\"min_%s\":%.3f,\"max_%s\":%.3f,\"samples\":%zu%s,\"lib\":",
         name, env->threads, unit, unit, st.median, unit, st.p99, unit, st.min, unit, st.max, n,
         extra);
  print_json_string(env->lib);
  printf("}\n");
  fflush(stdout);
}

/* ---- XNNPACK cases: a run function and the buffer it writes ---- */

typedef struct {
  void (*run)(void *ctx);
  void *ctx;
  const float *out;
  size_t out_n;
} target;

static void fail_check(const char *name, const char *what)
{
  fprintf(stderr, "error: %s: %s\n", name, what);
  exit(1);
}

/* Output after a run: finite, and equal to `ref` (NULL: becomes ref). */
static void check_output(const char *name, const target *t, float **ref)
{
  size_t bytes = t->out_n * sizeof *t->out;
  if (!xm_all_finite(t->out, t->out_n))
    fail_check(name, "output has a non-finite value");
  if (*ref == NULL) {
    *ref = xm_alloc(bytes);
    memcpy(*ref, t->out, bytes);
  } else if (memcmp(*ref, t->out, bytes) != 0) {
    fail_check(name, "output differs from the first run's");
  }
}

/* Warm-up, then n timed runs (us each), each checked after its clock stops. */
static void time_target(const bench_env *env, const char *name, const target *t, size_t warm,
                        size_t n)
{
  double *us = xm_alloc(n * sizeof *us);
  float *ref = NULL;
  for (size_t i = 0; i < warm; i++) {
    t->run(t->ctx);
    check_output(name, t, &ref);
  }
  for (size_t i = 0; i < n; i++) {
    double t0 = now_ns();
    t->run(t->ctx);
    us[i] = (now_ns() - t0) / 1e3;
    check_output(name, t, &ref);
  }
  report(env, name, "us", summarize(us, n), n, "");
  free(ref);
  free(us);
}

static void run_net(void *ctx)
{
  xm_net_run(ctx);
}

static void bench_mobilenet(const bench_env *env)
{
  xm_net net;
  xm_net_build(&net, env->pool);
  target t = {run_net, &net, net.output, XM_CLASSES};
  time_target(env, "mobilenet_v1", &t, env->opt.quick ? 2 : 5, samples_for(&env->opt, 20, 100));
  xm_net_free(&net);
}

/* A single operator, its pool, and its buffers and weights. */
typedef struct {
  xnn_operator_t op;
  pthreadpool_t pool;
  float *in, *out, *kernel, *bias;
} op_case;

static void run_op(void *ctx)
{
  op_case *c = ctx;
  xm_check(xnn_run_operator(c->op, c->pool), "xnn_run_operator");
}

/* Random input, kernel (He-scaled for fan_in) and bias. */
static op_case op_case_alloc(pthreadpool_t pool, size_t in_n, size_t out_n, size_t kernel_n,
                             size_t bias_n, size_t fan_in)
{
  op_case c = {NULL,
               pool,
               xm_alloc(in_n * sizeof(float)),
               xm_alloc(out_n * sizeof(float)),
               xm_alloc(kernel_n * sizeof(float)),
               xm_alloc(bias_n * sizeof(float))};
  xm_rng r = xm_rng_seeded(0xB0A710ADu + (uint64_t)in_n);
  xm_fill(&r, c.in, in_n, 1.0f);
  xm_fill(&r, c.kernel, kernel_n, xm_he_scale(fan_in));
  xm_fill(&r, c.bias, bias_n, 0.05f);
  memset(c.out, 0, out_n * sizeof(float));
  return c;
}

static void op_case_time_and_free(const bench_env *env, const char *name, op_case *c, size_t out_n)
{
  target t = {run_op, c, c->out, out_n};
  time_target(env, name, &t, env->opt.quick ? 3 : 10, samples_for(&env->opt, 50, 200));
  xm_check(xnn_delete_operator(c->op), "xnn_delete_operator");
  free(c->in);
  free(c->out);
  free(c->kernel);
  free(c->bias);
}

/* NHWC convolution case: 1 x hw x hw x ch, k x k, stride 1, `groups` groups
 * of ch/groups channels (groups == ch: depthwise, HWGo kernel layout). */
static void bench_conv(const bench_env *env, const char *name, size_t hw, size_t ch, uint32_t k,
                       uint32_t groups)
{
  uint32_t pad = k / 2, flags = 0;
  size_t gc = ch / groups, img = hw * hw * ch;
  if (groups > 1)
    flags = XNN_FLAG_DEPTHWISE_CONVOLUTION;
  op_case c = op_case_alloc(env->pool, img, img, (size_t)k * k * gc * ch, ch, (size_t)k * k * gc);
  xm_check(xnn_create_convolution2d_nhwc_f32(pad, pad, pad, pad, k, k, 1, 1, 1, 1, groups, gc, gc,
                                             ch, ch, c.kernel, c.bias, -INFINITY, INFINITY, flags,
                                             &c.op),
           "xnn_create_convolution2d_nhwc_f32");
  xm_check(xnn_setup_convolution2d_nhwc_f32(c.op, 1, hw, hw, c.in, c.out, env->pool),
           "xnn_setup_convolution2d_nhwc_f32");
  op_case_time_and_free(env, name, &c, img);
}

static void bench_fc(const bench_env *env, size_t cin, size_t cout)
{
  op_case c = op_case_alloc(env->pool, cin, cout, cin * cout, cout, cin);
  xm_check(xnn_create_fully_connected_nc_f32(cin, cout, cin, cout, c.kernel, c.bias, -INFINITY,
                                             INFINITY, 0, &c.op),
           "xnn_create_fully_connected_nc_f32");
  xm_check(xnn_setup_fully_connected_nc_f32(c.op, 1, c.in, c.out, env->pool),
           "xnn_setup_fully_connected_nc_f32");
  op_case_time_and_free(env, "fc", &c, cout);
}

/* ---- pthreadpool_parallelize_1d with an (almost) empty body ---- */

/* Item i of a call owns counter[i]: a plain write, race-free because each
 * item runs exactly once per call and calls are joined before returning. */
static void pfor_body(void *ctx, size_t i)
{
  size_t *counter = ctx;
  counter[i]++;
}

static void pfor_batch(pthreadpool_t pool, size_t *counter, size_t items, size_t batch)
{
  for (size_t b = 0; b < batch; b++)
    pthreadpool_parallelize_1d(pool, pfor_body, counter, items, 0);
}

static void check_counters(const char *name, const size_t *counter, size_t items, size_t calls)
{
  for (size_t i = 0; i < items; i++) {
    if (counter[i] != calls) {
      fprintf(stderr, "error: %s: item %zu ran %zu times in %zu calls\n", name, i, counter[i],
              calls);
      exit(1);
    }
  }
}

/* Warm-up that also sizes the batch: single calls for >= 2 ms (at least 3,
 * at most 2000), then as many calls as fill ~1 ms, within [1, 1000].
 * Adds the calls made to *calls. */
static size_t pfor_calibrate(pthreadpool_t pool, size_t *counter, size_t items, size_t *calls)
{
  double t0 = now_ns(), elapsed;
  size_t n = 0;
  do {
    pthreadpool_parallelize_1d(pool, pfor_body, counter, items, 0);
    n++;
    elapsed = now_ns() - t0;
  } while ((elapsed < 2e6 && n < 2000) || n < 3);
  *calls += n;
  double batch = 1e6 / (elapsed / (double)n);
  return batch < 1.0 ? 1 : batch > 1000.0 ? 1000 : (size_t)batch;
}

static void bench_pfor(const bench_env *env, size_t items)
{
  char name[32], extra[64];
  snprintf(name, sizeof name, "pfor_empty_%zu", items);
  size_t n = samples_for(&env->opt, 50, 200), calls = 0;
  size_t *counter = calloc(items, sizeof *counter);
  double *ns = xm_alloc(n * sizeof *ns);
  if (counter == NULL)
    fail_check(name, "out of memory");
  size_t batch = pfor_calibrate(env->pool, counter, items, &calls);
  for (size_t i = 0; i < (env->opt.quick ? 1u : 3u); i++, calls += batch)
    pfor_batch(env->pool, counter, items, batch);
  for (size_t i = 0; i < n; i++, calls += batch) {
    double t0 = now_ns();
    pfor_batch(env->pool, counter, items, batch);
    ns[i] = (now_ns() - t0) / (double)batch;
  }
  check_counters(name, counter, items, calls);
  snprintf(extra, sizeof extra, ",\"items\":%zu,\"batch\":%zu", items, batch);
  report(env, name, "ns", summarize(ns, n), n, extra);
  free(ns);
  free(counter);
}

int main(int argc, char **argv)
{
  bench_env env;
  env.opt = parse_args(argc, argv);
  env.lib = xm_pool_lib();
  xm_check(xnn_initialize(NULL), "xnn_initialize");
  env.pool = pthreadpool_create(env.opt.threads);
  if (env.pool == NULL) {
    fprintf(stderr, "error: pthreadpool_create(%zu) returned NULL\n", env.opt.threads);
    return 1;
  }
  env.threads = pthreadpool_get_threads_count(env.pool);
  const options *o = &env.opt;
  if (wanted(o, "mobilenet_v1"))
    bench_mobilenet(&env);
  if (wanted(o, "conv1x1"))
    bench_conv(&env, "conv1x1", 7, 1024, 1, 1);
  if (wanted(o, "dwconv3x3"))
    bench_conv(&env, "dwconv3x3", 112, 32, 3, 32);
  if (wanted(o, "fc"))
    bench_fc(&env, 1024, 1000);
  if (wanted(o, "pfor_empty_1"))
    bench_pfor(&env, 1);
  if (wanted(o, "pfor_empty_100"))
    bench_pfor(&env, 100);
  if (wanted(o, "pfor_empty_10000"))
    bench_pfor(&env, 10000);
  pthreadpool_destroy(env.pool);
  xm_check(xnn_deinitialize(), "xnn_deinitialize");
  return 0;
}
