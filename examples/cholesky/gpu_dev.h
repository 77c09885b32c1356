/* SPDX-License-Identifier: MIT */
/*
 * The device under cholesky_gpu.c, behind one table so that the program's
 * whole structure (its weft operators, copies, per-stream handles, the
 * devInfo check) also runs on weft's host backend (emulated devices,
 * WEFT_GPU_BACKEND=host) on a machine without a GPU:
 *   cuda  (gpu_cuda.c): cudaMalloc'd tiles, cuBLAS and cuSOLVER on the
 *         operator's stream, cusolverDn?potrf on the whole matrix as the
 *         reference;
 *   host  (gpu_dev.c): malloc'd "device" tiles, each call run by CBLAS and
 *         LAPACKE on the emulated stream's thread (weft_gpu_host_enqueue),
 *         LAPACK's ?potrf on the whole matrix as the reference.
 * Also here: per-stream state (a device's handles) made on a stream's first
 * use and the whole-matrix helpers both references use.
 */
#ifndef CHOLESKY_GPU_DEV_H
#define CHOLESKY_GPU_DEV_H

#include <stdbool.h>
#include <stddef.h>

#include "tile_call.h"
#include "tiles.h"

/* A copy between a tile's host and device buffers (a weft copy operator's
 * argument: it must live until the copy ran). */
typedef struct tile_copy {
  void *dst;
  const void *src;
  size_t bytes;
  bool to_device;
} tile_copy;

/* What a stream's state is made for: the precision and tile order of the
 * calls it will run, and a device tile (cuSOLVER's workspace query takes
 * one). */
typedef struct gpu_stream_cfg {
  precision prec;
  size_t b;
  void *sample_tile;
} gpu_stream_cfg;

typedef struct gpu_dev {
  const char *name; /* "cuda" | "host" */
  /* The reference's name in the output, by precision. */
  const char *(*ref_name)(precision prec);
  /* Device memory (NULL, with a message, on failure) and host memory that
   * the device copies to and from asynchronously (pinned). */
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
  void *(*host_alloc)(size_t bytes);
  void (*host_free)(void *p);
  /* Copies outside the operators; all complete once sync returns 0. */
  int (*to_device)(void *dst, const void *src, size_t bytes);
  int (*to_host)(void *dst, const void *src, size_t bytes);
  int (*sync)(void);
  /* A compute stream's state (cuda: a cuBLAS and a cuSOLVER handle bound to
   * the stream, and their fixed workspaces), made on the worker's thread
   * that owns the stream; NULL with a message on failure. */
  void *(*stream_open)(void *stream, int device, const gpu_stream_cfg *cfg);
  void (*stream_close)(void *state);
  /* Inside an operator: enqueue c (its buffers in device memory) or a copy
   * on the operator's stream; 0, or -1 with a message. */
  int (*enqueue_call)(void *stream, void *state, const tile_call *c);
  int (*enqueue_copy)(void *stream, const tile_copy *cp);
  /* The reference: factors the whole matrix a (lower, column-major n x n)
   * once untimed, then reps times, timing each into seconds[] (the matrix's
   * upload untimed); leaves the factor in factor (n * n elements, host) and
   * its info in *info. 0, or -1 with a message. */
  int (*reference)(const tiled *a, int reps, double *seconds, void *factor, int *info);
} gpu_dev;

const gpu_dev *gpu_dev_host(void);
/* gpu_cuda.c */
const gpu_dev *gpu_dev_cuda(void);
/* The CUDA devices this process sees (cudaGetDeviceCount); 0, with the
 * reason in why, when there is none or no driver. Calls nothing in cuBLAS
 * or cuSOLVER. */
int gpu_cuda_devices(char *why, size_t len);

/* Per-stream state, made by d->stream_open on a stream's first use and
 * kept until gpu_streams_close. While gpu_streams_timed(true), a state made
 * counts as late (it allocated inside a timed run). */
void gpu_streams_init(const gpu_dev *d, gpu_stream_cfg cfg);
void *gpu_stream_state(void *stream, int device);
void gpu_streams_timed(bool on);
int gpu_streams_count(void);
int gpu_streams_late(void);
/* How many calls each stream ran while timed, into calls (at most max
 * streams, in the order they were first used); returns how many. */
int gpu_streams_calls(long *calls, int max);
/* After the engine drained and before it is destroyed (the streams live). */
void gpu_streams_close(void);

/* The lower tiles of t into the column-major n x n matrix full (the upper
 * triangle outside the diagonal tiles left as it was). */
void tiles_to_full(const tiled *t, void *full);
/* max |L - L_full| / max |L_full| over the lower triangle; L = f's tiles. */
double tiles_vs_full(const tiled *f, const void *full);

#endif /* CHOLESKY_GPU_DEV_H */
