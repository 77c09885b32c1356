/* SPDX-License-Identifier: MIT */
/*
 * One factorisation of cholesky_gpu.c on weft: the steps in push order
 * (plan.c's kernels, and in the hybrid modes the copies that bring each
 * tile's newest value where its kernel runs), their operators, and the
 * buffers they use: the tiles on the device, their pinned host copies, a
 * var per buffer, each POTRF's info.
 */
#ifndef CHOLESKY_GPU_RUN_H
#define CHOLESKY_GPU_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <weft/weft.h>

#include "gpu_dev.h"
#include "plan.h"
#include "tile_call.h"
#include "tiles.h"

typedef enum { MODE_GPU, MODE_HYBRID, MODE_HYBRID_PANEL, MODE_CPU_REF } run_mode;
extern const char *const run_mode_names[4];

/* Whether kernel kind runs on a CPU worker in mode m. */
bool on_cpu(run_mode m, op_kind kind);

/* A step of the plan: a tile kernel, or a copy between a tile's two
 * buffers (the hybrid modes). */
enum { STEP_D2H = 4, STEP_H2D = 5 }; /* after op_kind's four */

typedef struct run run;

typedef struct gstep {
  int kind;       /* op_kind, or STEP_D2H / STEP_H2D */
  bool cpu;       /* a kernel on a CPU worker */
  chol_step s;    /* a kernel's step (its priority) */
  tile_call call; /* a kernel's call */
  tile_copy copy; /* a copy's */
  weft_var *reads[2];
  size_t nreads;
  weft_var *write;
  run *r;
} gstep;

struct run {
  run_mode mode;
  precision prec;
  const gpu_dev *dev; /* NULL in cpu-reference mode */
  size_t nt, b, tile_bytes;
  tiled *work;  /* the factor on the host (cpu-reference: where the kernels run) */
  void *dslab;  /* device tiles */
  void **dtile; /* [i * nt + j], j <= i */
  tiled host;   /* hybrid: pinned host copies of the tiles */
  void *hslab;
  tiled *htiles;           /* the CPU kernels' tiles: &host, or work in cpu-reference */
  weft_var **dvar, **hvar; /* a var per buffer of each tile */
  int *info_dev;           /* device: each device POTRF's info, by k */
  int *info_host;          /* each CPU POTRF's info; after a run, every POTRF's (-1: never ran) */
  gstep *steps;
  size_t nsteps, nkernels, ncopies;
};

/* Allocates r's buffers and vars (r's mode, prec, dev, nt, b, tile_bytes and
 * work set) and builds its steps; 0, or -1 (out of memory). */
int run_alloc(run *r, weft_engine *eng);
/* Deletes the vars (before the engine is destroyed). */
void run_free(run *r, weft_engine *eng);
/* Frees the buffers (after the engine is destroyed). */
void run_release(run *r);
/* Before a factorisation: the input a on the device (or in work), every
 * POTRF's info at -1 ("never ran"); all complete when this returns. */
int run_reset(run *r, const tiled *a);
/* After it: the factor in work, every POTRF's info in info_host. */
int run_collect(run *r);
/* Pushes r's steps in order. */
int push_all(weft_engine *eng, run *r);
/* Makes every compute stream's handles (gpu_stream_state) before anything
 * is timed; the caller waits for them. */
int push_prepare(weft_engine *eng);

#endif /* CHOLESKY_GPU_RUN_H */
