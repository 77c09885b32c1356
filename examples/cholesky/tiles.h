/* SPDX-License-Identifier: MIT */
/*
 * A symmetric positive definite matrix in tiles, and the four tile kernels
 * of a right-looking tiled Cholesky factorisation (A = L L^T, lower), in
 * single and double precision (tiles.c). Each kernel calls one serial
 * BLAS/LAPACK routine on b x b column-major tiles.
 *
 * OpenBLAS must be a threaded build used with one thread per call (the
 * kernels run concurrently on weft's workers): tiles_blas_init() sets that
 * and refuses a sequential build (Debian's libopenblas0-serial 0.3.21 is not
 * safe to call from several threads at once: wrong factors).
 */
#ifndef CHOLESKY_TILES_H
#define CHOLESKY_TILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PREC_FLOAT = 0, PREC_DOUBLE = 1 } precision;

/* The lower triangle of an N x N matrix as nt x nt tiles of b x b. */
typedef struct tiled {
  precision prec;
  size_t n, b, nt;
  size_t esize; /* bytes per element */
  void **tile;  /* tile[i * nt + j] for j <= i, NULL above */
} tiled;

/* 0, or -1 with a message (a sequential OpenBLAS). */
int tiles_blas_init(void);

int tiled_alloc(tiled *t, precision prec, size_t n, size_t b);
/* The same layout with only the tiles keep(ctx, i, j) accepts allocated (the
 * others NULL: another MPI rank's, cholesky_mpi.c); keep NULL: all. */
int tiled_alloc_some(tiled *t, precision prec, size_t n, size_t b,
                     bool (*keep)(const void *ctx, size_t i, size_t j), const void *ctx);
void tiled_free(tiled *t);
void *tiled_at(const tiled *t, size_t i, size_t j);

/* A random SPD matrix from seed (symmetric, entries in [-0.5, 0.5], N added
 * to the diagonal); not_spd: row/column `bad` gets -N on the diagonal.
 * Tiles left NULL (those another MPI rank holds) are skipped. */
void tiled_fill_spd(tiled *t, uint64_t seed, long bad);
void tiled_copy(tiled *dst, const tiled *src);

/* The kernels; potrf returns LAPACK's info (0: done, > 0: not SPD). */
int tile_potrf(const tiled *t, void *akk);
void tile_trsm(const tiled *t, const void *akk, void *aik);                  /* aik = aik L_kk^-T */
void tile_syrk(const tiled *t, const void *aik, void *aii);                  /* aii -= aik aik^T */
void tile_gemm(const tiled *t, const void *aik, const void *ajk, void *aij); /* -= aik ajk^T */

/* ||A - L L^T||_F / (||A||_F N eps), L the lower triangle of fact. */
double tiled_residual(const tiled *a, const tiled *fact);
/* max |L - L_lapack| / max |L_lapack|, L_lapack from LAPACK's ?potrf on the
 * whole of a (its own threads; -1 if LAPACK fails). */
double tiled_vs_lapack(const tiled *a, const tiled *fact);
/* One core's GEMM on b x b tiles (the kernel most of the flops go to):
 * GFLOP/s, the median of a few timed batches. */
double tile_gemm_gflops(precision prec, size_t b);
/* LAPACK's own ?potrf on the whole matrix, its own threads: seconds, or -1. */
double lapack_potrf_seconds(const tiled *a, int threads);

/* CLOCK_MONOTONIC in seconds. */
double tiles_now_s(void);

/* qsort's comparator for doubles, ascending. */
int tiles_cmp_double(const void *a, const void *b);

/* The command line of the bench's peers on these tiles (bench/
 * bench_cholesky_omp.c, bench_cholesky_tbb.cpp): --n N --b B --threads T
 * [--precision float|double] [--reps R] [--check]. */
typedef struct tiles_bench_args {
  size_t n, b;
  int threads, reps, check;
  precision prec;
} tiles_bench_args;

/* Returns 0, or 2 after a usage line naming prog. */
int tiles_bench_args_parse(tiles_bench_args *a, int argc, char **argv, const char *prog);

/* Sorts the reps' seconds t and prints the line the bench runner reads:
 * "<prog>: n N b B P, T threads: M ms [min-max], G GFLOP/s [min-max]". */
void tiles_bench_report(const char *prog, const tiles_bench_args *a, double *t);

#endif /* CHOLESKY_TILES_H */
