/* SPDX-License-Identifier: MIT */
/*
 * bench_cholesky_omp: the tiled Cholesky of examples/cholesky with OpenMP
 * tasks and depend clauses instead of weft's vars: the same tiles, the same
 * kernels (examples/cholesky/tiles.c, threaded OpenBLAS with one thread a
 * call), the same operator order, pushed from one thread (omp single).
 * Built by gcc (libgomp) and by clang (LLVM libomp) (bench/cholesky/meson.build).
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

int main(int argc, char **argv)
{
  tiles_bench_args o;
  if (tiles_bench_args_parse(&o, argc, argv, "bench_cholesky_omp") || tiles_blas_init())
    return 2;
  omp_set_num_threads(o.threads);
  tiled a, w;
  if (tiled_alloc(&a, o.prec, o.n, o.b) || tiled_alloc(&w, o.prec, o.n, o.b))
    return 2;
  tiled_fill_spd(&a, 1, -1);
  double *t = calloc((size_t)o.reps, sizeof *t);
  int ok = 1;
  for (int r = 0; r < o.reps; r++) {
    tiled_copy(&w, &a);
    double t0 = omp_get_wtime();
    factor(&w);
    t[r] = omp_get_wtime() - t0;
    if (o.check) {
      double res = tiled_residual(&a, &w);
      if (!(res >= 0 && res < 10)) {
        fprintf(stderr, "cholesky_omp: FAILED: residual %.3g\n", res);
        ok = 0;
      }
    }
  }
  tiles_bench_report("cholesky_omp", &o, t);
  free(t);
  tiled_free(&a);
  tiled_free(&w);
  return ok ? 0 : 1;
}
