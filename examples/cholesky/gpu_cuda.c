/* SPDX-License-Identifier: MIT */
/*
 * gpu_dev.h's cuda device: tiles in cudaMalloc'd memory, each tile call
 * enqueued on the weft operator's stream through cuBLAS (TRSM, SYRK, GEMM)
 * or cuSOLVER (POTRF), and cusolverDn?potrf on the whole matrix as the
 * reference.
 *
 * Handles: one cuBLAS and one cuSOLVER handle per compute stream (made on
 * the stream's first call, gpu_dev.c), bound to that stream once, with
 * fixed workspaces, so that nothing allocates while the factorisation runs
 * (cholesky_gpu.c makes them before its timed runs and reports any made
 * later). The stream is set once, not before each call: a handle here only
 * ever serves its own stream, and cublasSetStream would also drop the
 * workspace set by cublasSetWorkspace (it resets it to cuBLAS's pool).
 *
 * The CUDA runtime is this program's own static copy (cudart_static, as
 * libweft's); the streams weft hands over are driver streams, valid in
 * every runtime of the process, and cuBLAS and cuSOLVER take them as they
 * are.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dev.h"

/* cuBLAS's recommended workspace for Hopper and later (cublasSetWorkspace). */
enum { BLAS_WORKSPACE_BYTES = 32 << 20 };

static int cuda_ok(cudaError_t e, const char *what)
{
  if (e == cudaSuccess)
    return 0;
  fprintf(stderr, "cholesky_gpu: %s: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return -1;
}

static int blas_ok(cublasStatus_t s, const char *what)
{
  if (s == CUBLAS_STATUS_SUCCESS)
    return 0;
  fprintf(stderr, "cholesky_gpu: %s: %s\n", what, cublasGetStatusName(s));
  return -1;
}

static int solver_ok(cusolverStatus_t s, const char *what)
{
  if (s == CUSOLVER_STATUS_SUCCESS)
    return 0;
  static const char *names[] = {"SUCCESS",          "NOT_INITIALIZED", "ALLOC_FAILED",
                                "INVALID_VALUE",    "ARCH_MISMATCH",   "MAPPING_ERROR",
                                "EXECUTION_FAILED", "INTERNAL_ERROR",  "MATRIX_TYPE_NOT_SUPPORTED",
                                "NOT_SUPPORTED"};
  unsigned k = (unsigned)s;
  fprintf(stderr, "cholesky_gpu: %s: CUSOLVER_STATUS_%s (%u)\n", what,
          k < sizeof names / sizeof names[0] ? names[k] : "?", k);
  return -1;
}

int gpu_cuda_devices(char *why, size_t len)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, len, "cudaGetDeviceCount: %s", cudaGetErrorName(e));
    return 0;
  }
  if (n == 0)
    snprintf(why, len, "cudaGetDeviceCount: no device");
  return n;
}

/* tile_call's characters to cuBLAS's enums, one for one (tile_call.c does
 * the same for CBLAS's). */
static cublasSideMode_t side_of(char x) { return x == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT; }

static cublasFillMode_t fill_of(char x)
{
  return x == 'L' ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
}

static cublasOperation_t op_of(char x) { return x == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T; }

static cublasDiagType_t diag_of(char x)
{
  return x == 'N' ? CUBLAS_DIAG_NON_UNIT : CUBLAS_DIAG_UNIT;
}

/* ---------------------------------------------------- per-stream handles */

typedef struct cuda_state {
  cudaStream_t stream;
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  void *blas_ws;   /* BLAS_WORKSPACE_BYTES */
  void *solver_ws; /* lwork elements of the precision */
  int lwork;
} cuda_state;

static void cuda_stream_close(void *state)
{
  cuda_state *s = state;
  if (s->solver)
    cusolverDnDestroy(s->solver);
  if (s->blas)
    cublasDestroy(s->blas);
  cudaFree(s->solver_ws);
  cudaFree(s->blas_ws);
  free(s);
}

static void *cuda_stream_open(void *stream, int device, const gpu_stream_cfg *cfg)
{
  cuda_state *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "cholesky_gpu: out of memory\n");
    return NULL;
  }
  s->stream = stream;
  int b = (int)cfg->b;
  bool f = cfg->prec == PREC_FLOAT;
  /* weft's worker thread is bound to the device already (in libweft's
   * runtime); this runtime is told as well before the handles are made. */
  int rc = cuda_ok(cudaSetDevice(device), "cudaSetDevice");
  rc = rc ? rc : blas_ok(cublasCreate(&s->blas), "cublasCreate");
  rc = rc ? rc : blas_ok(cublasSetStream(s->blas, s->stream), "cublasSetStream");
  /* After cublasSetStream, which resets the workspace. */
  rc = rc ? rc
          : cuda_ok(cudaMalloc(&s->blas_ws, BLAS_WORKSPACE_BYTES), "cudaMalloc (cuBLAS workspace)");
  rc = rc ? rc
          : blas_ok(cublasSetWorkspace(s->blas, s->blas_ws, BLAS_WORKSPACE_BYTES),
                    "cublasSetWorkspace");
  rc = rc ? rc : solver_ok(cusolverDnCreate(&s->solver), "cusolverDnCreate");
  rc = rc ? rc : solver_ok(cusolverDnSetStream(s->solver, s->stream), "cusolverDnSetStream");
  if (!rc)
    rc = f ? solver_ok(cusolverDnSpotrf_bufferSize(s->solver, CUBLAS_FILL_MODE_LOWER, b,
                                                   cfg->sample_tile, b, &s->lwork),
                       "cusolverDnSpotrf_bufferSize")
           : solver_ok(cusolverDnDpotrf_bufferSize(s->solver, CUBLAS_FILL_MODE_LOWER, b,
                                                   cfg->sample_tile, b, &s->lwork),
                       "cusolverDnDpotrf_bufferSize");
  size_t ws = (size_t)(s->lwork > 0 ? s->lwork : 1) * (f ? sizeof(float) : sizeof(double));
  rc = rc ? rc : cuda_ok(cudaMalloc(&s->solver_ws, ws), "cudaMalloc (cuSOLVER workspace)");
  if (rc) {
    cuda_stream_close(s);
    return NULL;
  }
  return s;
}

static int cuda_enqueue_call(void *stream, void *state, const tile_call *c)
{
  cuda_state *s = state;
  if (s->stream != (cudaStream_t)stream) { /* the per-stream table is wrong */
    fprintf(stderr, "cholesky_gpu: a stream got another stream's handles\n");
    return -1;
  }
  bool f = c->prec == PREC_FLOAT;
  /* CUBLAS_POINTER_MODE_HOST (the default): alpha and beta are read before
   * the call returns, so these locals may go. */
  float fa = (float)c->alpha, fb = (float)c->beta;
  switch (c->kind) {
  case OP_POTRF:
    if (f)
      return solver_ok(cusolverDnSpotrf(s->solver, fill_of(c->uplo), c->n, c->a, c->lda,
                                        s->solver_ws, s->lwork, c->info),
                       "cusolverDnSpotrf");
    return solver_ok(cusolverDnDpotrf(s->solver, fill_of(c->uplo), c->n, c->a, c->lda, s->solver_ws,
                                      s->lwork, c->info),
                     "cusolverDnDpotrf");
  case OP_TRSM:
    if (f)
      return blas_ok(cublasStrsm(s->blas, side_of(c->side), fill_of(c->uplo), op_of(c->transa),
                                 diag_of(c->diag), c->m, c->n, &fa, c->a, c->lda, c->b, c->ldb),
                     "cublasStrsm");
    return blas_ok(cublasDtrsm(s->blas, side_of(c->side), fill_of(c->uplo), op_of(c->transa),
                               diag_of(c->diag), c->m, c->n, &c->alpha, c->a, c->lda, c->b, c->ldb),
                   "cublasDtrsm");
  case OP_SYRK:
    if (f)
      return blas_ok(cublasSsyrk(s->blas, fill_of(c->uplo), op_of(c->transa), c->n, c->k, &fa, c->a,
                                 c->lda, &fb, c->c, c->ldc),
                     "cublasSsyrk");
    return blas_ok(cublasDsyrk(s->blas, fill_of(c->uplo), op_of(c->transa), c->n, c->k, &c->alpha,
                               c->a, c->lda, &c->beta, c->c, c->ldc),
                   "cublasDsyrk");
  case OP_GEMM:
    if (f)
      return blas_ok(cublasSgemm(s->blas, op_of(c->transa), op_of(c->transb), c->m, c->n, c->k, &fa,
                                 c->a, c->lda, c->b, c->ldb, &fb, c->c, c->ldc),
                     "cublasSgemm");
    return blas_ok(cublasDgemm(s->blas, op_of(c->transa), op_of(c->transb), c->m, c->n, c->k,
                               &c->alpha, c->a, c->lda, c->b, c->ldb, &c->beta, c->c, c->ldc),
                   "cublasDgemm");
  }
  return 0;
}

static int cuda_enqueue_copy(void *stream, const tile_copy *cp)
{
  return cuda_ok(cudaMemcpyAsync(cp->dst, cp->src, cp->bytes,
                                 cp->to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                 (cudaStream_t)stream),
                 "cudaMemcpyAsync");
}

/* ------------------------------------------------------------- memory */

static void *cuda_alloc(size_t bytes)
{
  void *p = NULL;
  return cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc") ? NULL : p;
}

static void cuda_free(void *p) { cudaFree(p); }

static void *cuda_host_alloc(size_t bytes)
{
  void *p = NULL;
  return cuda_ok(cudaMallocHost(&p, bytes), "cudaMallocHost") ? NULL : p;
}

static void cuda_host_free(void *p) { cudaFreeHost(p); }

/* Outside the operators, on the legacy default stream. weft's streams are
 * non-blocking, so these do not order themselves with them: the program
 * calls them only when the engine has drained, and calls cuda_sync before
 * it pushes again (a copy from pageable memory may return before its DMA
 * is done). */
static int cuda_to_device(void *dst, const void *src, size_t bytes)
{
  return cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (to device)");
}

static int cuda_to_host(void *dst, const void *src, size_t bytes)
{
  return cuda_ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (to host)");
}

static int cuda_sync(void) { return cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

/* ------------------------------------------------------------ reference */

static const char *cuda_ref_name(precision prec)
{
  return prec == PREC_FLOAT ? "cusolverDnSpotrf" : "cusolverDnDpotrf";
}

/* One cusolverDn?potrf call on the whole matrix (lower, lda n), on its own
 * stream: its workspace is allocated before, the matrix uploaded before
 * each run; the timed region is the call and the stream's synchronisation,
 * as weft's is its pushes and weft_wait_all. */
static int cuda_reference(const tiled *a, int reps, double *seconds, void *factor, int *info)
{
  size_t n = a->n, bytes = n * n * a->esize;
  bool f = a->prec == PREC_FLOAT;
  const char *name = cuda_ref_name(a->prec);
  void *d = NULL, *work = NULL;
  int *dinfo = NULL, lwork = 0;
  cudaStream_t st = NULL;
  cusolverDnHandle_t h = NULL;
  memset(factor, 0, bytes);
  tiles_to_full(a, factor); /* the input, staged here; the factor comes back here */
  int rc = cuda_ok(cudaMalloc(&d, bytes), "cudaMalloc (reference matrix)");
  rc = rc ? rc : cuda_ok(cudaMalloc((void **)&dinfo, sizeof *dinfo), "cudaMalloc (devInfo)");
  rc = rc ? rc : cuda_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  rc = rc ? rc : solver_ok(cusolverDnCreate(&h), "cusolverDnCreate");
  rc = rc ? rc : solver_ok(cusolverDnSetStream(h, st), "cusolverDnSetStream");
  if (!rc)
    rc = f ? solver_ok(
                 cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)n, d, (int)n, &lwork),
                 "cusolverDnSpotrf_bufferSize")
           : solver_ok(
                 cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, (int)n, d, (int)n, &lwork),
                 "cusolverDnDpotrf_bufferSize");
  rc = rc ? rc
          : cuda_ok(cudaMalloc(&work, (size_t)(lwork > 0 ? lwork : 1) * a->esize),
                    "cudaMalloc (reference workspace)");
  for (int r = -1; r < reps && !rc; r++) { /* r = -1: untimed (loads cuSOLVER's kernels) */
    rc = cuda_ok(cudaMemcpy(d, factor, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (reference)");
    rc = rc ? rc : cuda_sync();
    if (rc)
      break;
    double t0 = tiles_now_s();
    rc = f ? solver_ok(
                 cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, (int)n, d, (int)n, work, lwork, dinfo),
                 name)
           : solver_ok(
                 cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, (int)n, d, (int)n, work, lwork, dinfo),
                 name);
    rc = rc ? rc : cuda_ok(cudaStreamSynchronize(st), "cudaStreamSynchronize (reference)");
    if (!rc && r >= 0)
      seconds[r] = tiles_now_s() - t0;
  }
  rc = rc ? rc : cuda_ok(cudaMemcpy(info, dinfo, sizeof *info, cudaMemcpyDeviceToHost), "devInfo");
  rc = rc ? rc : cuda_to_host(factor, d, bytes);
  if (h)
    cusolverDnDestroy(h);
  if (st)
    cudaStreamDestroy(st);
  cudaFree(work);
  cudaFree(dinfo);
  cudaFree(d);
  return rc;
}

static const gpu_dev cuda_dev = {
    .name = "cuda",
    .ref_name = cuda_ref_name,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .to_device = cuda_to_device,
    .to_host = cuda_to_host,
    .sync = cuda_sync,
    .stream_open = cuda_stream_open,
    .stream_close = cuda_stream_close,
    .enqueue_call = cuda_enqueue_call,
    .enqueue_copy = cuda_enqueue_copy,
    .reference = cuda_reference,
};

const gpu_dev *gpu_dev_cuda(void) { return &cuda_dev; }
