/* SPDX-License-Identifier: MIT */
/*
 * Tile storage and kernels (tiles.h). The precision-specific code is
 * written once, for a type T and a BLAS prefix, by the KERNELS macro.
 */
#include <stdbool.h>

#include "tiles.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double tiles_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int tiles_blas_init(void)
{
  if (openblas_get_parallel() == 0) {
    fprintf(stderr,
            "cholesky: this OpenBLAS is a sequential build (%s): it is not safe to "
            "call from several threads at once; install libopenblas0-pthread\n",
            openblas_get_config());
    return -1;
  }
  openblas_set_num_threads(1); /* one BLAS thread per call: weft runs the calls */
  return 0;
}

int tiled_alloc(tiled *t, precision prec, size_t n, size_t b)
{
  return tiled_alloc_some(t, prec, n, b, NULL, NULL);
}

int tiled_alloc_some(tiled *t, precision prec, size_t n, size_t b,
                     bool (*keep)(const void *ctx, size_t i, size_t j), const void *ctx)
{
  memset(t, 0, sizeof *t);
  if (b == 0 || n == 0 || n % b != 0)
    return -1;
  t->prec = prec;
  t->n = n;
  t->b = b;
  t->nt = n / b;
  t->esize = prec == PREC_FLOAT ? sizeof(float) : sizeof(double);
  t->tile = calloc(t->nt * t->nt, sizeof *t->tile);
  if (!t->tile)
    return -1;
  for (size_t i = 0; i < t->nt; i++)
    for (size_t j = 0; j <= i; j++)
      if ((!keep || keep(ctx, i, j)) &&
          !(t->tile[i * t->nt + j] = aligned_alloc(64, b * b * t->esize))) {
        tiled_free(t);
        return -1;
      }
  return 0;
}

void tiled_free(tiled *t)
{
  if (t->tile)
    for (size_t k = 0; k < t->nt * t->nt; k++)
      free(t->tile[k]);
  free(t->tile);
  t->tile = NULL;
}

void *tiled_at(const tiled *t, size_t i, size_t j)
{
  return t->tile[i * t->nt + j];
}

void tiled_copy(tiled *dst, const tiled *src)
{
  for (size_t i = 0; i < src->nt; i++)
    for (size_t j = 0; j <= i; j++)
      memcpy(tiled_at(dst, i, j), tiled_at(src, i, j), src->b * src->b * src->esize);
}

/* A symmetric entry (r, c) of the random matrix: a hash of (seed, min, max). */
static double entry(uint64_t seed, size_t r, size_t c)
{
  uint64_t x =
      seed ^ ((uint64_t)(r < c ? r : c) << 32 ^ (uint64_t)(r < c ? c : r)) * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return (double)(x >> 11) / 9007199254740992.0 - 0.5;
}

#define KERNELS(T, P, EPS)                                                                         \
  static void fill_##P(tiled *t, uint64_t seed, long bad)                                          \
  {                                                                                                \
    for (size_t ti = 0; ti < t->nt; ti++)                                                          \
      for (size_t tj = 0; tj <= ti; tj++) {                                                        \
        T *a = tiled_at(t, ti, tj);                                                                \
        if (!a)                                                                                    \
          continue; /* a tile this process does not hold (cholesky_mpi) */                         \
        for (size_t c = 0; c < t->b; c++)                                                          \
          for (size_t r = 0; r < t->b; r++) {                                                      \
            size_t gr = ti * t->b + r, gc = tj * t->b + c;                                         \
            double v = entry(seed, gr, gc);                                                        \
            if (gr == gc)                                                                          \
              v += (long)gr == bad ? -(double)t->n : (double)t->n;                                 \
            a[c * t->b + r] = (T)v;                                                                \
          }                                                                                        \
      }                                                                                            \
  }                                                                                                \
  /* The full matrix (column-major, both triangles) of the lower tiles. */                         \
  static T *full_##P(const tiled *t, int lower_only)                                               \
  {                                                                                                \
    size_t n = t->n, b = t->b;                                                                     \
    T *m = calloc(n * n, sizeof(T));                                                               \
    if (!m)                                                                                        \
      return NULL;                                                                                 \
    for (size_t ti = 0; ti < t->nt; ti++)                                                          \
      for (size_t tj = 0; tj <= ti; tj++) {                                                        \
        const T *a = tiled_at(t, ti, tj);                                                          \
        for (size_t c = 0; c < b; c++)                                                             \
          for (size_t r = 0; r < b; r++) {                                                         \
            size_t gr = ti * b + r, gc = tj * b + c;                                               \
            if (gr < gc)                                                                           \
              continue; /* a diagonal tile's upper part is not the matrix's */                     \
            m[gc * n + gr] = a[c * b + r];                                                         \
            if (!lower_only)                                                                       \
              m[gr * n + gc] = a[c * b + r];                                                       \
          }                                                                                        \
      }                                                                                            \
    return m;                                                                                      \
  }                                                                                                \
  static double residual_##P(const tiled *a, const tiled *f)                                       \
  {                                                                                                \
    size_t n = a->n;                                                                               \
    T *m = full_##P(a, 0), *l = full_##P(f, 1);                                                    \
    double r = -1;                                                                                 \
    if (m && l) {                                                                                  \
      double na = 0;                                                                               \
      for (size_t k = 0; k < n * n; k++)                                                           \
        na += (double)m[k] * m[k];                                                                 \
      /* m -= L L^T (the lower triangle; the upper mirrors it), on every core: untimed, and at   \
       * one BLAS thread it cost 40 times the factorization at N 4096 on 16 cores */               \
      openblas_set_num_threads((int)sysconf(_SC_NPROCESSORS_ONLN));                                \
      cblas_##P##syrk(CblasColMajor, CblasLower, CblasNoTrans, (int)n, (int)n, -1, l, (int)n, 1,   \
                      m, (int)n);                                                                  \
      openblas_set_num_threads(1);                                                                 \
      double d = 0;                                                                                \
      for (size_t c = 0; c < n; c++)                                                               \
        for (size_t rr = c; rr < n; rr++) {                                                        \
          double x = m[c * n + rr];                                                                \
          d += (rr == c ? 1 : 2) * x * x;                                                          \
        }                                                                                          \
      r = sqrt(d) / (sqrt(na) * (double)n * EPS);                                                  \
    }                                                                                              \
    free(m);                                                                                       \
    free(l);                                                                                       \
    return r;                                                                                      \
  }                                                                                                \
  static double vs_lapack_##P(const tiled *a, const tiled *f)                                      \
  {                                                                                                \
    size_t n = a->n;                                                                               \
    T *m = full_##P(a, 0), *l = full_##P(f, 1);                                                    \
    double r = -1;                                                                                 \
    if (m && l && LAPACKE_##P##potrf(LAPACK_COL_MAJOR, 'L', (int)n, m, (int)n) == 0) {             \
      double dmax = 0, lmax = 0;                                                                   \
      for (size_t c = 0; c < n; c++)                                                               \
        for (size_t rr = c; rr < n; rr++) {                                                        \
          double x = m[c * n + rr], y = l[c * n + rr];                                             \
          dmax = fmax(dmax, fabs(x - y));                                                          \
          lmax = fmax(lmax, fabs(x));                                                              \
        }                                                                                          \
      r = dmax / lmax;                                                                             \
    }                                                                                              \
    free(m);                                                                                       \
    free(l);                                                                                       \
    return r;                                                                                      \
  }                                                                                                \
  static double lapack_seconds_##P(const tiled *a, int threads)                                    \
  {                                                                                                \
    T *m = full_##P(a, 0);                                                                         \
    if (!m)                                                                                        \
      return -1;                                                                                   \
    openblas_set_num_threads(threads);                                                             \
    double t0 = tiles_now_s();                                                                     \
    int info = LAPACKE_##P##potrf(LAPACK_COL_MAJOR, 'L', (int)a->n, m, (int)a->n);                 \
    double t1 = tiles_now_s();                                                                     \
    openblas_set_num_threads(1);                                                                   \
    free(m);                                                                                       \
    return info ? -1 : t1 - t0;                                                                    \
  }

KERNELS(float, s, FLT_EPSILON)
KERNELS(double, d, DBL_EPSILON)

void tiled_fill_spd(tiled *t, uint64_t seed, long bad)
{
  if (t->prec == PREC_FLOAT)
    fill_s(t, seed, bad);
  else
    fill_d(t, seed, bad);
}

double tiled_residual(const tiled *a, const tiled *f)
{
  return a->prec == PREC_FLOAT ? residual_s(a, f) : residual_d(a, f);
}

double tiled_vs_lapack(const tiled *a, const tiled *f)
{
  return a->prec == PREC_FLOAT ? vs_lapack_s(a, f) : vs_lapack_d(a, f);
}

double lapack_potrf_seconds(const tiled *a, int threads)
{
  return a->prec == PREC_FLOAT ? lapack_seconds_s(a, threads) : lapack_seconds_d(a, threads);
}

int tile_potrf(const tiled *t, void *akk)
{
  int b = (int)t->b;
  if (t->prec == PREC_FLOAT)
    return LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', b, akk, b);
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', b, akk, b);
}

void tile_trsm(const tiled *t, const void *akk, void *aik)
{
  int b = (int)t->b;
  if (t->prec == PREC_FLOAT)
    cblas_strsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, b, b, 1.0f, akk, b,
                aik, b);
  else
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, b, b, 1.0, akk, b,
                aik, b);
}

void tile_syrk(const tiled *t, const void *aik, void *aii)
{
  int b = (int)t->b;
  if (t->prec == PREC_FLOAT)
    cblas_ssyrk(CblasColMajor, CblasLower, CblasNoTrans, b, b, -1.0f, aik, b, 1.0f, aii, b);
  else
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, b, b, -1.0, aik, b, 1.0, aii, b);
}

void tile_gemm(const tiled *t, const void *aik, const void *ajk, void *aij)
{
  int b = (int)t->b;
  if (t->prec == PREC_FLOAT)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0f, aik, b, ajk, b, 1.0f, aij,
                b);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0, aik, b, ajk, b, 1.0, aij,
                b);
}

int tiles_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tile_gemm_gflops(precision prec, size_t b)
{
  tiled t;
  if (tiled_alloc(&t, prec, 2 * b, b))
    return -1;
  tiled_fill_spd(&t, 7, -1);
  double g[5];
  int per = (int)(2e8 / ((double)b * b * b)) + 1; /* about 0.1 s a batch */
  for (int r = 0; r < 5; r++) {
    double t0 = tiles_now_s();
    for (int k = 0; k < per; k++)
      tile_gemm(&t, tiled_at(&t, 1, 0), tiled_at(&t, 1, 0), tiled_at(&t, 1, 1));
    g[r] = 2.0 * (double)b * b * b * per / (tiles_now_s() - t0) * 1e-9;
  }
  tiled_free(&t);
  qsort(g, 5, sizeof g[0], tiles_cmp_double);
  return g[2];
}

int tiles_bench_args_parse(tiles_bench_args *a, int argc, char **argv, const char *prog)
{
  *a = (tiles_bench_args){2048, 256, 1, 3, 0, PREC_DOUBLE};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--check"))
      a->check = 1;
    else if (!strcmp(argv[i], "--n"))
      a->n = strtoul(v, NULL, 10), i++;
    else if (!strcmp(argv[i], "--b"))
      a->b = strtoul(v, NULL, 10), i++;
    else if (!strcmp(argv[i], "--threads"))
      a->threads = atoi(v), i++;
    else if (!strcmp(argv[i], "--reps"))
      a->reps = atoi(v), i++;
    else if (!strcmp(argv[i], "--precision") && (!strcmp(v, "float") || !strcmp(v, "double")))
      a->prec = !strcmp(v, "float") ? PREC_FLOAT : PREC_DOUBLE, i++;
    else
      a->b = 0; /* refused below */
  }
  if (a->b == 0 || a->n == 0 || a->n % a->b || a->threads < 1 || a->reps < 1 || a->reps > 1000) {
    fprintf(stderr,
            "usage: %s --n N --b B (dividing N) --threads T [--precision float|double] "
            "[--reps R (1-1000)] [--check]\n",
            prog);
    return 2;
  }
  return 0;
}

void tiles_bench_report(const char *prog, const tiles_bench_args *a, double *t)
{
  size_t r = (size_t)a->reps;
  qsort(t, r, sizeof *t, tiles_cmp_double);
  double f = (double)a->n * (double)a->n * (double)a->n / 3.0;
  printf("%s: n %zu b %zu %s, %d threads: %.1f ms [%.1f-%.1f], %.2f GFLOP/s [%.2f-%.2f]\n", prog,
         a->n, a->b, a->prec == PREC_FLOAT ? "float" : "double", a->threads, t[r / 2] * 1e3,
         t[0] * 1e3, t[r - 1] * 1e3, f / t[r / 2] * 1e-9, f / t[r - 1] * 1e-9, f / t[0] * 1e-9);
}
