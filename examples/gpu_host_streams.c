/* SPDX-License-Identifier: MIT */
/*
 * The GPU layer on the host backend: operators that run on device streams.
 *
 * A GPU operator's fn does not compute anything itself: it enqueues device
 * work on the stream it is given (rc->stream) and returns. The operator is
 * finished when that work has run on the stream. Here the "device" is the
 * host backend (WEFT_GPU_BACKEND=host): each stream is a thread, and
 * weft_gpu_host_enqueue plays the part of a kernel launch or of
 * cudaMemcpyAsync. With CUDA, fn would launch kernels on the cudaStream_t in
 * rc->stream instead; nothing else changes.
 *
 * Per chunk of a vector:
 *
 *   fill(c)      CPU   writes host_in[c]
 *   upload(c)    GPU copy to the device (WEFT_PROP_COPY_TO_GPU), host_in[c] -> dev[c]
 *   saxpy(c)     GPU   dev[c] = a * dev[c] + 1 (on a compute stream)
 *   download(c)  GPU copy from the device, dev[c] -> host_out[c]
 *   check(c)     CPU   reads host_out[c]
 *
 * upload and saxpy run on different streams: saxpy waits for upload on the
 * device (an event, no round trip through the host); check waits for the
 * download's stream work to complete. With two emulated devices, chunks
 * alternate between them.
 *
 * usage: gpu_host_streams [CHUNKS]   (default 64)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft.h>

#include "push_one.h"

enum { CHUNK = 4096 };

typedef struct chunk {
  float host_in[CHUNK], dev[CHUNK], host_out[CHUNK]; /* dev: "device memory" */
  int index;
  int errors;
} chunk;

/* --- device work (runs on the streams' threads) --- */

static void upload_work(void *arg)
{
  chunk *c = arg;
  memcpy(c->dev, c->host_in, sizeof c->dev);
}

static void saxpy_work(void *arg)
{
  chunk *c = arg;
  for (int i = 0; i < CHUNK; i++)
    c->dev[i] = 2.0f * c->dev[i] + 1.0f;
}

static void download_work(void *arg)
{
  chunk *c = arg;
  memcpy(c->host_out, c->dev, sizeof c->host_out);
}

/* --- operators --- */

static int fill(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  chunk *c = arg;
  for (int i = 0; i < CHUNK; i++)
    c->host_in[i] = (float)(c->index * CHUNK + i % 1000);
  return 0;
}

static int upload(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, upload_work, arg);
}

static int saxpy(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, saxpy_work, arg);
}

static int download(const weft_run_ctx *rc, void *arg)
{
  return weft_gpu_host_enqueue(rc->stream, download_work, arg);
}

static int check(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  chunk *c = arg;
  for (int i = 0; i < CHUNK; i++)
    if (c->host_out[i] != 2.0f * (float)(c->index * CHUNK + i % 1000) + 1.0f)
      c->errors++;
  return 0;
}

int main(int argc, char **argv)
{
  int nchunks = argc > 1 ? atoi(argv[1]) : 64;
  if (nchunks < 1)
    return 2;
  /* The host backend, unless the environment chose (e.g. cuda): this
   * example's device work is host-backend work. */
  setenv("WEFT_GPU_BACKEND", "host", 0);
  setenv("WEFT_GPU_HOST_DEVICES", "2", 0);
  weft_engine *eng;
  int rc = weft_engine_create(&eng, NULL);
  if (rc) {
    fprintf(stderr, "weft_engine_create: %s\n", weft_strerror(rc));
    return 1;
  }
  int ndev = weft_gpu_count(eng);
  if (ndev == 0) {
    fprintf(stderr, "no GPU devices (WEFT_GPU_BACKEND=%s)\n", getenv("WEFT_GPU_BACKEND"));
    weft_engine_destroy(eng);
    return 77; /* skipped */
  }
  chunk *c = calloc((size_t)nchunks, sizeof *c);
  weft_var **in = calloc((size_t)nchunks, sizeof *in), **dev = calloc((size_t)nchunks, sizeof *dev),
           **out = calloc((size_t)nchunks, sizeof *out);
  if (!c || !in || !dev || !out)
    return 1;
  for (int k = 0; k < nchunks && !rc; k++) {
    c[k].index = k;
    int g = k % ndev;
    rc = weft_var_new(eng, &in[k]);
    rc = rc ? rc : weft_var_new(eng, &dev[k]);
    rc = rc ? rc : weft_var_new(eng, &out[k]);
    rc = rc ? rc : push_one(eng, fill, &c[k], NULL, in[k], -1, WEFT_PROP_NORMAL);
    rc = rc ? rc : push_one(eng, upload, &c[k], in[k], dev[k], g, WEFT_PROP_COPY_TO_GPU);
    rc = rc ? rc : push_one(eng, saxpy, &c[k], NULL, dev[k], g, WEFT_PROP_NORMAL);
    rc = rc ? rc : push_one(eng, download, &c[k], dev[k], out[k], g, WEFT_PROP_COPY_FROM_GPU);
    rc = rc ? rc : push_one(eng, check, &c[k], out[k], NULL, -1, WEFT_PROP_NORMAL);
  }
  int wrc = weft_wait_all(eng);
  int errors = 0;
  for (int k = 0; k < nchunks; k++)
    errors += c[k].errors;
  int drc = weft_engine_destroy(eng);
  printf("%d chunks of %d floats through %d emulated device(s): %d wrong values\n", nchunks, CHUNK,
         ndev, errors);
  free(c);
  free(in);
  free(dev);
  free(out);
  if (rc || wrc || drc) {
    fprintf(stderr, "push %s, wait_all %s, destroy %s\n", weft_strerror(rc), weft_strerror(wrc),
            weft_strerror(drc));
    return 1;
  }
  return errors ? 1 : 0;
}
