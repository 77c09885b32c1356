/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu's shared bottom (bench_gpu_shared.h): the watchdog's stage and its
 * alarm, the rows and the closing table, and the one-call push. Both
 * bench_gpu.c (the weft rows) and bench_gpu_cuda.c (the CUDA floors and
 * the overlap) report through it.
 */
#include "bench_gpu_shared.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ watchdog */

static const char *volatile stage_now = "start";

void gb_stage(const char *what)
{
  stage_now = what;
}

static void put(const char *s)
{
  size_t n = 0;
  while (s[n])
    n++;
  ssize_t w = write(2, s, n);
  (void)w;
}

static void on_alarm(int sig)
{
  (void)sig;
  put("bench_gpu: still running after the --timeout, in: ");
  put(stage_now);
  put(": stopped\n");
  _exit(1);
}

void gb_watchdog_start(int seconds)
{
  signal(SIGALRM, on_alarm);
  alarm((unsigned)seconds);
}

/* ---------------------------------------------------------------- rows */

typedef struct row {
  char fig[4], name[64], mode[12], value[64], unit[8], floor[40], target[40];
  int met;
} row;

enum { MAX_ROWS = 128 };
static row rows[MAX_ROWS];
static int nrows;

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile (0..1) of s, nearest rank. */
double gb_quantile(const bench_series *s, double q)
{
  if (s->n == 0)
    return NAN;
  double *v = malloc((size_t)s->n * sizeof *v);
  if (!v) {
    fprintf(stderr, "bench_gpu: out of memory\n");
    exit(1);
  }
  memcpy(v, s->v, (size_t)s->n * sizeof *v);
  qsort(v, (size_t)s->n, sizeof *v, cmp_double);
  int k = (int)ceil(q * s->n) - 1;
  double r = v[k < 0 ? 0 : k >= s->n ? s->n - 1 : k];
  free(v);
  return r;
}

double gb_median(const bench_series *s)
{
  return gb_quantile(s, 0.5);
}

/* 3 significant digits or so, no exponent for bench-sized numbers. */
static void fmt_num(char *buf, size_t cap, double x)
{
  double a = fabs(x);
  snprintf(buf, cap, a >= 100 || a == 0 ? "%.0f" : a >= 10 ? "%.1f" : "%.2f", x);
}

static void slug(char *out, size_t cap, const char *fig, const char *name)
{
  size_t k = 0;
  for (const char *p = fig; *p && k + 2 < cap; p++)
    out[k++] = *p;
  out[k++] = '_';
  /* a parenthesis holds what was measured this time (threads, a share): not a name */
  for (const char *p = name; *p && *p != '(' && k + 2 < cap; p++) {
    char c = *p;
    int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    char o = alnum ? (c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c) : '_';
    if (o == '_' && out[k - 1] == '_')
      continue;
    out[k++] = o;
  }
  while (k > 0 && out[k - 1] == '_')
    k--;
  out[k] = 0;
}

void gb_row(const char *rt, const char *fig, const char *name, const char *mode,
            const char *unit, const bench_series *s, const char *floor, const char *target,
            int met, const char *extra_json)
{
  double med = gb_median(s), lo = gb_quantile(s, 0), hi = gb_quantile(s, 1);
  if (nrows < MAX_ROWS) {
    row *r = &rows[nrows++];
    snprintf(r->fig, sizeof r->fig, "%s", fig);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->mode, sizeof r->mode, "%s", mode ? mode : "-");
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    snprintf(r->floor, sizeof r->floor, "%s", floor ? floor : "-");
    snprintf(r->target, sizeof r->target, "%s", target ? target : "-");
    r->met = met;
    char a[16], b[16], c[16];
    fmt_num(a, sizeof a, med);
    fmt_num(b, sizeof b, lo);
    fmt_num(c, sizeof c, hi);
    if (s->n > 1)
      snprintf(r->value, sizeof r->value, "%s [%s-%s]", a, b, c);
    else
      snprintf(r->value, sizeof r->value, "%s", a);
  }
  char metric[64], extra[768];
  slug(metric, sizeof metric, fig, name);
  snprintf(extra, sizeof extra,
           ",\"figure\":\"%s\",\"mode\":\"%s\",\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,"
           "\"floor\":\"%s\",\"target\":\"%s\",\"met\":\"%s\"%s",
           fig, mode ? mode : "-", med, lo, hi, floor ? floor : "-", target ? target : "-",
           met < 0 ? "-" : met ? "yes" : "NO", extra_json ? extra_json : "");
  bench_emit(rt, metric, (int)sysconf(_SC_NPROCESSORS_ONLN), unit, s, extra);
}

void gb_print_table(void)
{
  printf("\n%-3s %-38s %-9s %-26s %-6s %-22s %-22s %s\n", "", "figure", "mode",
         "value: median [min-max]", "unit", "floor", "target", "met");
  for (int i = 0; i < nrows; i++) {
    const row *r = &rows[i];
    printf("%-3s %-38s %-9s %-26s %-6s %-22s %-22s %s\n", r->fig, r->name, r->mode, r->value,
           r->unit, r->floor, r->target, r->met < 0 ? "-" : r->met ? "yes" : "NO");
  }
}

/* ---------------------------------------------------------- weft helpers */

int gb_push(weft_engine *eng, weft_op_fn fn, void *arg, weft_var *const *reads, size_t nr,
            weft_var *const *writes, size_t nw, int gpu, weft_prop prop)
{
  return gb_push_flags(eng, fn, arg, reads, nr, writes, nw, gpu, prop, 0);
}

int gb_push_flags(weft_engine *eng, weft_op_fn fn, void *arg, weft_var *const *reads, size_t nr,
                  weft_var *const *writes, size_t nw, int gpu, weft_prop prop, unsigned flags)
{
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fn;
  d.arg = arg;
  d.reads = reads;
  d.num_reads = nr;
  d.writes = writes;
  d.num_writes = nw;
  d.ctx = gpu < 0 ? (weft_ctx){WEFT_DEV_CPU, 0} : (weft_ctx){WEFT_DEV_GPU, gpu};
  d.prop = prop;
  d.flags = flags;
  return weft_push(eng, &d);
}
