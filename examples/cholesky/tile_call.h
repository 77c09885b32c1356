/* SPDX-License-Identifier: MIT */
/*
 * One tile kernel of the right-looking tiled Cholesky (A = L L^T, lower) as
 * the BLAS/LAPACK call it makes, in the BLAS's own argument terms: which
 * tile is A, B or C, and side, uplo, trans, diag, m, n, k, alpha, beta, the
 * leading dimensions. cholesky_gpu.c runs the same description either
 * through cuBLAS and cuSOLVER (gpu_cuda.c) or through CBLAS and LAPACKE
 * (tile_call_run_cblas), so the argument mapping, the part that is easy to
 * get wrong, is written once, here, and checked on any machine by the
 * CBLAS path (--mode cpu-reference against LAPACK's ?potrf of the whole
 * matrix); only the one-for-one substitution of the library remains for a
 * device to check.
 *
 * Layout: every tile is b x b, column-major, leading dimension b; element
 * (r, c) of tile (i, j) is the matrix's (i b + r, j b + c) and sits at
 * tile[c * b + r] (tiles.c). The matrix's lower triangle is stored (tiles
 * (i, j) with j <= i); only the lower triangle of a diagonal tile is read
 * or written by the factorisation.
 *
 * The kernels at step k (tiles.h gives the same in words):
 *   POTRF (k, k):    A_kk = L_kk L_kk^T            ?potrf(uplo L, n b, A A_kk)
 *   TRSM  (i, k):    A_ik = A_ik L_kk^-T           ?trsm(side R, uplo L, trans T,
 *                                                    diag N, m b, n b, alpha 1,
 *                                                    A L_kk, B A_ik)
 *   SYRK  (i, i):    A_ii = A_ii - A_ik A_ik^T     ?syrk(uplo L, trans N, n b, k b,
 *                                                    alpha -1, A A_ik, beta 1, C A_ii)
 *   GEMM  (i, j):    A_ij = A_ij - A_ik A_jk^T     ?gemm(transa N, transb T, m b, n b,
 *                                                    k b, alpha -1, A A_ik, B A_jk,
 *                                                    beta 1, C A_ij)
 */
#ifndef CHOLESKY_TILE_CALL_H
#define CHOLESKY_TILE_CALL_H

#include "plan.h"
#include "tiles.h"

typedef struct tile_call {
  op_kind kind; /* OP_POTRF, OP_TRSM, OP_SYRK, OP_GEMM */
  precision prec;
  /* The BLAS characters: side 'L'/'R', uplo 'L'/'U', trans 'N'/'T', diag
   * 'N'/'U' (0 where the routine has no such argument). */
  char side, uplo, transa, transb, diag;
  int m, n, k;
  double alpha, beta; /* converted to float for the single-precision routines */
  /* Written: POTRF a; TRSM b; SYRK and GEMM c. The others are only read. */
  void *a, *b, *c;
  int lda, ldb, ldc;
  int *info; /* POTRF: where its info goes (device memory for a device's POTRF) */
} tile_call;

/* The buffer of tile (i, j) (host or device memory), given ctx. */
typedef void *(*tile_call_tile_fn)(const void *ctx, size_t i, size_t j);

/* The call s's kernel makes on b x b tiles of precision prec; info: where a
 * POTRF's info goes (ignored for the others). */
tile_call tile_call_of(const chol_step *s, precision prec, size_t b, tile_call_tile_fn tile,
                       const void *ctx, int *info);

/* Runs c on this thread: CBLAS (CblasColMajor) and LAPACKE (LAPACK_COL_MAJOR)
 * with c's arguments translated one for one. Returns a POTRF's info (0: done,
 * > 0: the leading minor of that order is not positive definite), also
 * stored in *c->info; 0 for the others. */
int tile_call_run_cblas(const tile_call *c);

#endif /* CHOLESKY_TILE_CALL_H */
