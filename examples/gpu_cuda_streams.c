/*
 * The GPU layer on CUDA: the same chunk pipeline as gpu_host_streams.c, with
 * real device memory and the CUDA runtime's asynchronous calls on the stream
 * each operator is given (rc->stream is a cudaStream_t here).
 *
 *   fill(c)      CPU   writes host_in[c] (pinned memory)
 *   upload(c)    GPU copy to the device (WEFT_PROP_COPY_TO_GPU): cudaMemcpyAsync H2D
 *   square(c)    GPU   dev_out[c] = dev_in[c] (a device-to-device copy stands in for a
 *                      kernel, so that this file needs no nvcc)
 *   download(c)  GPU copy from the device: cudaMemcpyAsync D2H into host_out[c]
 *   check(c)     CPU   reads host_out[c]
 *
 * Each fn only enqueues and returns; weft tracks completion with an event on
 * the stream, makes square wait for upload on the device, and runs check
 * when the download has completed. Built when the toolkit is found; exits
 * 77 (skipped) on a machine without a CUDA device or driver.
 *
 * usage: gpu_cuda_streams [CHUNKS]   (default 32)
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <weft/weft.h>

#include "push_one.h"

enum { N = 1 << 16 }; /* ints per chunk */

typedef struct chunk {
  int *host_in, *host_out; /* pinned host memory */
  int *dev_in, *dev_out;   /* device memory */
  int index;
  int errors;
} chunk;

static int cuda_status(cudaError_t e)
{
  if (e == cudaSuccess)
    return 0;
  fprintf(stderr, "CUDA: %s\n", cudaGetErrorName(e));
  return -1; /* fails the operator: its writes are marked failed */
}

static int fill(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  chunk *c = arg;
  for (int i = 0; i < N; i++)
    c->host_in[i] = c->index * 7 + i;
  return 0;
}

static int upload(const weft_run_ctx *rc, void *arg)
{
  chunk *c = arg;
  return cuda_status(cudaMemcpyAsync(c->dev_in, c->host_in, N * sizeof(int),
                                     cudaMemcpyHostToDevice, (cudaStream_t)rc->stream));
}

static int square(const weft_run_ctx *rc, void *arg)
{
  chunk *c = arg;
  return cuda_status(cudaMemcpyAsync(c->dev_out, c->dev_in, N * sizeof(int),
                                     cudaMemcpyDeviceToDevice, (cudaStream_t)rc->stream));
}

static int download(const weft_run_ctx *rc, void *arg)
{
  chunk *c = arg;
  return cuda_status(cudaMemcpyAsync(c->host_out, c->dev_out, N * sizeof(int),
                                     cudaMemcpyDeviceToHost, (cudaStream_t)rc->stream));
}

static int check(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  chunk *c = arg;
  for (int i = 0; i < N; i++)
    if (c->host_out[i] != c->index * 7 + i)
      c->errors++;
  return 0;
}

int main(int argc, char **argv)
{
  int nchunks = argc > 1 ? atoi(argv[1]) : 32;
  if (nchunks < 1)
    return 2;
  setenv("WEFT_GPU_BACKEND", "cuda", 0);
  weft_engine *eng;
  int rc = weft_engine_create(&eng, NULL);
  if (rc) {
    fprintf(stderr, "weft_engine_create: %s\n", weft_strerror(rc));
    return 1;
  }
  int ndev = weft_gpu_count(eng);
  if (ndev == 0) {
    printf("no CUDA device: skipped\n");
    weft_engine_destroy(eng);
    return 77;
  }
  chunk *c = calloc((size_t)nchunks, sizeof *c);
  weft_var **v = calloc(3 * (size_t)nchunks, sizeof *v);
  if (!c || !v)
    return 1;
  for (int k = 0; k < nchunks && !rc; k++) {
    chunk *ck = &c[k];
    ck->index = k;
    int g = k % ndev;
    if (cudaSetDevice(g) != cudaSuccess || cudaMallocHost((void **)&ck->host_in, N * sizeof(int)) ||
        cudaMallocHost((void **)&ck->host_out, N * sizeof(int)) ||
        cudaMalloc((void **)&ck->dev_in, N * sizeof(int)) ||
        cudaMalloc((void **)&ck->dev_out, N * sizeof(int))) {
      fprintf(stderr, "CUDA allocation failed\n");
      return 1;
    }
    weft_var **in = &v[3 * k], **dev = &v[3 * k + 1], **out = &v[3 * k + 2];
    rc = weft_var_new(eng, in);
    rc = rc ? rc : weft_var_new(eng, dev);
    rc = rc ? rc : weft_var_new(eng, out);
    rc = rc ? rc : push_one(eng, fill, ck, NULL, *in, -1, WEFT_PROP_NORMAL);
    rc = rc ? rc : push_one(eng, upload, ck, *in, *dev, g, WEFT_PROP_COPY_TO_GPU);
    rc = rc ? rc : push_one(eng, square, ck, NULL, *dev, g, WEFT_PROP_NORMAL);
    rc = rc ? rc : push_one(eng, download, ck, *dev, *out, g, WEFT_PROP_COPY_FROM_GPU);
    rc = rc ? rc : push_one(eng, check, ck, *out, NULL, -1, WEFT_PROP_NORMAL);
  }
  int wrc = weft_wait_all(eng);
  int drc = weft_engine_destroy(eng);
  int errors = 0;
  for (int k = 0; k < nchunks; k++) {
    errors += c[k].errors;
    cudaFreeHost(c[k].host_in);
    cudaFreeHost(c[k].host_out);
    cudaFree(c[k].dev_in);
    cudaFree(c[k].dev_out);
  }
  printf("%d chunks of %d ints through %d CUDA device(s): %d wrong values\n", nchunks, N, ndev,
         errors);
  free(c);
  free(v);
  if (rc || wrc || drc) {
    fprintf(stderr, "push %s, wait_all %s, destroy %s\n", weft_strerror(rc), weft_strerror(wrc),
            weft_strerror(drc));
    return 1;
  }
  return errors ? 1 : 0;
}
