/* SPDX-License-Identifier: MIT */
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
 * With LAUNCHES > 0 the same pipeline is then captured once as a graph
 * (weft_graph_begin_capture / end_capture) and launched LAUNCHES times,
 * each launch after an ordinary push that starts a new round (fill reads
 * the round's var, so each launch waits for it and each round's values
 * differ): the GPU operators of a replay go to the device workers and
 * complete on their events as pushed ones do.
 *
 * usage: gpu_cuda_streams [CHUNKS [LAUNCHES]]   (defaults 32, 0)
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
  const int *round; /* the round in progress: set by next_round, ordered by its var */
  int errors;
  int checks; /* check runs: one per run of the pipeline */
} chunk;

static int expected(const chunk *c, int i)
{
  return c->index * 7 + i + *c->round * 1000;
}

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
    c->host_in[i] = expected(c, i);
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
    if (c->host_out[i] != expected(c, i))
      c->errors++;
  c->checks++;
  return 0;
}

static int next_round(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  ++*(int *)arg;
  return 0;
}

/* Chunk k's five operators, on GPU g; fill reads the round's var rv. */
static int push_chunk(weft_engine *eng, chunk *ck, weft_var **v, weft_var *rv, int g)
{
  weft_var *in = v[0], *dev = v[1], *out = v[2];
  int rc = push_one(eng, fill, ck, rv, in, -1, WEFT_PROP_NORMAL);
  rc = rc ? rc : push_one(eng, upload, ck, in, dev, g, WEFT_PROP_COPY_TO_GPU);
  rc = rc ? rc : push_one(eng, square, ck, NULL, dev, g, WEFT_PROP_NORMAL);
  rc = rc ? rc : push_one(eng, download, ck, dev, out, g, WEFT_PROP_COPY_FROM_GPU);
  return rc ? rc : push_one(eng, check, ck, out, NULL, -1, WEFT_PROP_NORMAL);
}

int main(int argc, char **argv)
{
  int nchunks = argc > 1 ? atoi(argv[1]) : 32;
  int launches = argc > 2 ? atoi(argv[2]) : 0;
  if (nchunks < 1 || launches < 0)
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
  weft_var *rv = NULL;
  int round = 0;
  if (!c || !v)
    return 1;
  rc = weft_var_new(eng, &rv);
  for (int k = 0; k < nchunks && !rc; k++) {
    chunk *ck = &c[k];
    ck->index = k;
    ck->round = &round;
    int g = k % ndev;
    if (cudaSetDevice(g) != cudaSuccess || cudaMallocHost((void **)&ck->host_in, N * sizeof(int)) ||
        cudaMallocHost((void **)&ck->host_out, N * sizeof(int)) ||
        cudaMalloc((void **)&ck->dev_in, N * sizeof(int)) ||
        cudaMalloc((void **)&ck->dev_out, N * sizeof(int))) {
      fprintf(stderr, "CUDA allocation failed\n");
      return 1;
    }
    for (int j = 0; j < 3 && !rc; j++)
      rc = weft_var_new(eng, &v[3 * k + j]);
    rc = rc ? rc : push_chunk(eng, ck, &v[3 * k], rv, g);
  }
  /* The same operators captured once, then launched round after round. */
  weft_graph *graph = NULL;
  if (!rc && launches) {
    rc = weft_graph_begin_capture(eng);
    for (int k = 0; k < nchunks && !rc; k++)
      rc = push_chunk(eng, &c[k], &v[3 * k], rv, k % ndev);
    int erc = weft_graph_end_capture(eng, &graph);
    rc = rc ? rc : erc;
  }
  /* check reads the round without its var: the pushed run is over before
   * the first next_round (a launch's check is ordered with the rounds by
   * the launch as a whole, which reads rv). */
  if (!rc && launches)
    rc = weft_wait_all(eng);
  for (int l = 0; l < launches && !rc; l++) {
    /* after the previous launch (which reads rv), before this one */
    rc = push_one(eng, next_round, &round, NULL, rv, -1, WEFT_PROP_NORMAL);
    if (!rc) /* queued behind the previous launch while that one runs */
      rc = weft_graph_launch(graph);
  }
  int wrc = weft_wait_all(eng);
  int grc = graph ? weft_graph_destroy(graph) : 0;
  int drc = weft_engine_destroy(eng);
  int errors = 0;
  for (int k = 0; k < nchunks; k++) {
    errors += c[k].errors;
    if (c[k].checks != 1 + launches) {
      fprintf(stderr, "chunk %d was checked %d times, not %d\n", k, c[k].checks, 1 + launches);
      errors++;
    }
    cudaFreeHost(c[k].host_in);
    cudaFreeHost(c[k].host_out);
    cudaFree(c[k].dev_in);
    cudaFree(c[k].dev_out);
  }
  printf("%d chunks of %d ints through %d CUDA device(s), pushed once and launched %d times as a "
         "graph (round %d): %d wrong values\n",
         nchunks, N, ndev, launches, round, errors);
  free(c);
  free(v);
  if (rc || wrc || grc || drc) {
    fprintf(stderr, "push %s, wait_all %s, graph destroy %s, destroy %s\n", weft_strerror(rc),
            weft_strerror(wrc), weft_strerror(grc), weft_strerror(drc));
    return 1;
  }
  return errors || round != launches ? 1 : 0;
}
