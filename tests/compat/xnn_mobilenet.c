/* SPDX-License-Identifier: MIT */
/*
 * xnn_mobilenet: runs MobileNet v1 (random weights, see xnn_mobilenet.h)
 * through XNNPACK on a pthreadpool and checks the results; the end-to-end
 * test of a libpthreadpool.so.0 replacement. Run once against the stock
 * library and once against the replacement (LD_LIBRARY_PATH) and compare
 * the two output files with cmp: they must be identical, as must the files
 * for different thread counts.
 *
 *   xnn_mobilenet --threads N --out FILE [--runs K] [--expect-lib SUBSTRING]
 *                 [--reject-lib SUBSTRING]
 *
 *   --threads N   pthreadpool_create(N), N >= 1; the pool must report N
 *                 threads (pthreadpool_get_threads_count)
 *   --out FILE    the final output's raw bytes (1000 native-endian floats,
 *                 the softmax of the logits) are written here
 *   --runs K      inferences to run, default 2; every output must be
 *                 bit-identical to the first (memcmp)
 *   --reject-lib  fail if that path contains SUBSTRING
 *   --expect-lib  fail unless the path of the shared object that provides
 *                 pthreadpool_create (dladdr) contains SUBSTRING
 *
 * stderr gets one line naming that shared object and the pool's thread
 * count, then a summary line. Exit status 0 when every check passed, 1
 * otherwise (with a message), 2 on a usage error.
 *
 * Build (Debian 12: libxnnpack-dev, libpthreadpool-dev):
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Itests/compat \
 *       tests/compat/xnn_mobilenet.c -o xnn_mobilenet \
 *       -lXNNPACK -lpthreadpool -lm -ldl
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "xnn_mobilenet.h"

#include <errno.h>

typedef struct {
  size_t threads;
  size_t runs;
  const char *out;
  const char *expect_lib;
  const char *reject_lib;
} options;

static void usage(void)
{
  fprintf(stderr, "usage: xnn_mobilenet --threads N --out FILE [--runs K] "
                  "[--expect-lib SUBSTRING]\n");
  exit(2);
}

static size_t parse_count(const char *s)
{
  return xm_parse_count(s, 1000000, usage);
}

static options parse_args(int argc, char **argv)
{
  options o = {0, 2, NULL, NULL, NULL};
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      usage();
    if (strcmp(argv[i], "--threads") == 0)
      o.threads = parse_count(argv[++i]);
    else if (strcmp(argv[i], "--runs") == 0)
      o.runs = parse_count(argv[++i]);
    else if (strcmp(argv[i], "--out") == 0)
      o.out = argv[++i];
    else if (strcmp(argv[i], "--expect-lib") == 0)
      o.expect_lib = argv[++i];
    else if (strcmp(argv[i], "--reject-lib") == 0)
      o.reject_lib = argv[++i];
    else
      usage();
  }
  if (o.threads == 0 || o.out == NULL)
    usage();
  return o;
}

/* Creates the pool, reports where pthreadpool came from, and checks both
 * the library (--expect-lib) and the pool's thread count. */
static pthreadpool_t open_pool(const options *o)
{
  const char *lib = xm_pool_lib();
  pthreadpool_t pool = pthreadpool_create(o->threads);
  if (pool == NULL) {
    fprintf(stderr, "error: pthreadpool_create(%zu) returned NULL\n", o->threads);
    exit(1);
  }
  size_t n = pthreadpool_get_threads_count(pool);
  fprintf(stderr, "xnn_mobilenet: pthreadpool_create from %s, threads %zu\n", lib, n);
  if (o->expect_lib != NULL && strstr(lib, o->expect_lib) == NULL) {
    fprintf(stderr,
            "error: pthreadpool comes from %s, expected a path "
            "containing \"%s\"\n",
            lib, o->expect_lib);
    exit(1);
  }
  if (o->reject_lib != NULL && strstr(lib, o->reject_lib) != NULL) {
    fprintf(stderr, "error: pthreadpool comes from %s, which contains \"%s\"\n", lib,
            o->reject_lib);
    exit(1);
  }
  if (n != o->threads) {
    fprintf(stderr,
            "error: pthreadpool_get_threads_count = %zu, created "
            "with %zu\n",
            n, o->threads);
    exit(1);
  }
  return pool;
}

/* Runs the network o->runs times; every output must equal the first. */
static void run_checked(xm_net *net, size_t runs)
{
  float *first = xm_alloc(XM_CLASSES * sizeof *first);
  for (size_t r = 0; r < runs; r++) {
    xm_net_run(net);
    if (r == 0) {
      memcpy(first, net->output, XM_CLASSES * sizeof *first);
    } else if (memcmp(first, net->output, XM_CLASSES * sizeof *first) != 0) {
      fprintf(stderr, "error: run %zu's output differs from run 0's\n", r);
      exit(1);
    }
  }
  free(first);
  if (!xm_all_finite(net->output, XM_CLASSES)) {
    fprintf(stderr, "error: output has a non-finite value\n");
    exit(1);
  }
}

static void write_output(const char *path, const float *out, size_t n)
{
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(out, sizeof *out, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "error: cannot write %s\n", path);
    exit(1);
  }
}

/* One line for the log: argmax, its probability, and the sum (~1). */
static void summarize(const float *out, size_t runs)
{
  size_t best = 0;
  double sum = 0.0;
  for (size_t i = 0; i < XM_CLASSES; i++) {
    sum += out[i];
    if (out[i] > out[best])
      best = i;
  }
  fprintf(stderr,
          "xnn_mobilenet: ok, %zu runs identical, argmax %zu "
          "(p=%.6f), sum %.6f\n",
          runs, best, (double)out[best], sum);
}

int main(int argc, char **argv)
{
  options o = parse_args(argc, argv);
  xm_check(xnn_initialize(NULL), "xnn_initialize");
  pthreadpool_t pool = open_pool(&o);
  xm_net net;
  xm_net_build(&net, pool);
  run_checked(&net, o.runs);
  write_output(o.out, net.output, XM_CLASSES);
  summarize(net.output, o.runs);
  xm_net_free(&net);
  pthreadpool_destroy(pool);
  xm_check(xnn_deinitialize(), "xnn_deinitialize");
  return 0;
}
