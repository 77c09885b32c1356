/* SPDX-License-Identifier: MIT */
/*
 * The tile kernels as BLAS calls (tile_call.h), and their CBLAS/LAPACKE run.
 */
#include "tile_call.h"

#include <cblas.h>
#include <lapacke.h>

tile_call tile_call_of(const chol_step *s, precision prec, size_t b, tile_call_tile_fn tile,
                       const void *ctx, int *info)
{
  int nb = (int)b;
  tile_call c = {.kind = s->kind, .prec = prec};
  switch (s->kind) {
  case OP_POTRF: /* A_kk = L_kk L_kk^T, L_kk overwrites the lower triangle */
    c.uplo = 'L';
    c.n = nb;
    c.a = tile(ctx, s->k, s->k);
    c.lda = nb;
    c.info = info;
    break;
  case OP_TRSM: /* X L_kk^T = A_ik: side R, lower, transposed, non-unit; X overwrites B */
    c.side = 'R';
    c.uplo = 'L';
    c.transa = 'T';
    c.diag = 'N';
    c.m = nb; /* rows of B */
    c.n = nb; /* columns of B (and the order of A) */
    c.alpha = 1;
    c.a = tile(ctx, s->k, s->k);
    c.lda = nb;
    c.b = tile(ctx, s->i, s->k);
    c.ldb = nb;
    break;
  case OP_SYRK: /* C = -A A^T + C, lower triangle of C only */
    c.uplo = 'L';
    c.transa = 'N';
    c.n = nb; /* order of C */
    c.k = nb; /* columns of A */
    c.alpha = -1;
    c.beta = 1;
    c.a = tile(ctx, s->i, s->k);
    c.lda = nb;
    c.c = tile(ctx, s->i, s->i);
    c.ldc = nb;
    break;
  case OP_GEMM: /* C = -A B^T + C */
    c.transa = 'N';
    c.transb = 'T';
    c.m = nb;
    c.n = nb;
    c.k = nb;
    c.alpha = -1;
    c.beta = 1;
    c.a = tile(ctx, s->i, s->k);
    c.lda = nb;
    c.b = tile(ctx, s->j, s->k);
    c.ldb = nb;
    c.c = tile(ctx, s->i, s->j);
    c.ldc = nb;
    break;
  }
  return c;
}

/* The characters to CBLAS's enums, one for one (gpu_cuda.c does the same
 * for cuBLAS's). */
static enum CBLAS_SIDE side_of(char x) { return x == 'L' ? CblasLeft : CblasRight; }

static enum CBLAS_UPLO uplo_of(char x) { return x == 'L' ? CblasLower : CblasUpper; }

static enum CBLAS_TRANSPOSE trans_of(char x) { return x == 'N' ? CblasNoTrans : CblasTrans; }

static enum CBLAS_DIAG diag_of(char x) { return x == 'N' ? CblasNonUnit : CblasUnit; }

int tile_call_run_cblas(const tile_call *c)
{
  const enum CBLAS_ORDER cm = CblasColMajor;
  bool f = c->prec == PREC_FLOAT;
  float fa = (float)c->alpha, fb = (float)c->beta;
  switch (c->kind) {
  case OP_POTRF: {
    int info = f ? LAPACKE_spotrf_work(LAPACK_COL_MAJOR, c->uplo, c->n, c->a, c->lda)
                 : LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, c->uplo, c->n, c->a, c->lda);
    *c->info = info;
    return info;
  }
  case OP_TRSM:
    if (f)
      cblas_strsm(cm, side_of(c->side), uplo_of(c->uplo), trans_of(c->transa), diag_of(c->diag),
                  c->m, c->n, fa, c->a, c->lda, c->b, c->ldb);
    else
      cblas_dtrsm(cm, side_of(c->side), uplo_of(c->uplo), trans_of(c->transa), diag_of(c->diag),
                  c->m, c->n, c->alpha, c->a, c->lda, c->b, c->ldb);
    return 0;
  case OP_SYRK:
    if (f)
      cblas_ssyrk(cm, uplo_of(c->uplo), trans_of(c->transa), c->n, c->k, fa, c->a, c->lda, fb, c->c,
                  c->ldc);
    else
      cblas_dsyrk(cm, uplo_of(c->uplo), trans_of(c->transa), c->n, c->k, c->alpha, c->a, c->lda,
                  c->beta, c->c, c->ldc);
    return 0;
  case OP_GEMM:
    if (f)
      cblas_sgemm(cm, trans_of(c->transa), trans_of(c->transb), c->m, c->n, c->k, fa, c->a, c->lda,
                  c->b, c->ldb, fb, c->c, c->ldc);
    else
      cblas_dgemm(cm, trans_of(c->transa), trans_of(c->transb), c->m, c->n, c->k, c->alpha, c->a,
                  c->lda, c->b, c->ldb, c->beta, c->c, c->ldc);
    return 0;
  }
  return 0;
}
