/*
 * bench_cholesky_omp: the tiled Cholesky of examples/cholesky with OpenMP
 * tasks and depend clauses instead of weft's vars: the same tiles, the same
 * kernels (examples/cholesky/tiles.c, threaded OpenBLAS with one thread a
 * call), the same operator order, pushed from one thread (omp single).
 * Built by gcc (libgomp) and by clang (LLVM libomp) (bench/meson.build).
 *
 *   bench_cholesky_omp --n N --b B --threads T [--precision float|double]
 *                      [--reps R] [--check]
 *
 * Prints one line, as examples/cholesky does:
 *   cholesky_omp: n N b B P, T threads: M ms [min-max], G GFLOP/s [min-max]
 * and exits 1 when --check finds a wrong factor, 2 on bad arguments.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiles.h"

static void factor(tiled *t)
{
  const size_t nt = t->nt;
  void **tp = t->tile; /* depend() keys: the tiles' slots in this array */
#pragma omp parallel
#pragma omp single
  for (size_t k = 0; k < nt; k++) {
#pragma omp task depend(inout : tp[k * nt + k])
    {
      if (tile_potrf(t, tp[k * nt + k]))
        fprintf(stderr, "cholesky_omp: not SPD at tile %zu\n", k);
    }
    for (size_t i = k + 1; i < nt; i++) {
#pragma omp task depend(in : tp[k * nt + k]) depend(inout : tp[i * nt + k])
      tile_trsm(t, tp[k * nt + k], tp[i * nt + k]);
    }
    for (size_t i = k + 1; i < nt; i++) {
#pragma omp task depend(in : tp[i * nt + k]) depend(inout : tp[i * nt + i])
      tile_syrk(t, tp[i * nt + k], tp[i * nt + i]);
      for (size_t j = k + 1; j < i; j++) {
#pragma omp task depend(in : tp[i * nt + k], tp[j * nt + k]) depend(inout : tp[i * nt + j])
        tile_gemm(t, tp[i * nt + k], tp[j * nt + k], tp[i * nt + j]);
      }
    }
  }
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  size_t n = 2048, b = 256;
  int threads = 1, reps = 3, check = 0;
  precision prec = PREC_DOUBLE;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(argv[i], "--check"))
      check = 1;
    else if (!strcmp(argv[i], "--n"))
      n = strtoul(v, NULL, 10), i++;
    else if (!strcmp(argv[i], "--b"))
      b = strtoul(v, NULL, 10), i++;
    else if (!strcmp(argv[i], "--threads"))
      threads = atoi(v), i++;
    else if (!strcmp(argv[i], "--reps"))
      reps = atoi(v), i++;
    else if (!strcmp(argv[i], "--precision"))
      prec = !strcmp(v, "float") ? PREC_FLOAT : PREC_DOUBLE, i++;
    else {
      fprintf(stderr, "usage: bench_cholesky_omp --n N --b B --threads T "
                      "[--precision float|double] [--reps R] [--check]\n");
      return 2;
    }
  }
  if (b == 0 || n % b || threads < 1 || reps < 1 || reps > 1000 || tiles_blas_init())
    return 2;
  omp_set_num_threads(threads);
  tiled a, w;
  if (tiled_alloc(&a, prec, n, b) || tiled_alloc(&w, prec, n, b))
    return 2;
  tiled_fill_spd(&a, 1, -1);
  double *t = calloc((size_t)reps, sizeof *t);
  int ok = 1;
  for (int r = 0; r < reps; r++) {
    tiled_copy(&w, &a);
    double t0 = omp_get_wtime();
    factor(&w);
    t[r] = omp_get_wtime() - t0;
    if (check) {
      double res = tiled_residual(&a, &w);
      if (!(res >= 0 && res < 10)) {
        fprintf(stderr, "cholesky_omp: FAILED: residual %.3g\n", res);
        ok = 0;
      }
    }
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  double f = (double)n * n * n / 3.0;
  printf("cholesky_omp: n %zu b %zu %s, %d threads: %.1f ms [%.1f-%.1f], %.2f GFLOP/s "
         "[%.2f-%.2f]\n",
         n, b, prec == PREC_FLOAT ? "float" : "double", threads, t[reps / 2] * 1e3, t[0] * 1e3,
         t[reps - 1] * 1e3, f / t[reps / 2] * 1e-9, f / t[reps - 1] * 1e-9, f / t[0] * 1e-9);
  free(t);
  tiled_free(&a);
  tiled_free(&w);
  return ok ? 0 : 1;
}
