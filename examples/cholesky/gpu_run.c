/* SPDX-License-Identifier: MIT */
/*
 * The steps, operators and buffers of one factorisation (gpu_run.h).
 */
#include "gpu_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const run_mode_names[4] = {"gpu", "hybrid", "hybrid-panel", "cpu-reference"};

/* The hybrid modes' split: MAGMA's hybrid ?potrf gives the CPU the
 * diagonal block (POTRF), the kernel a GPU runs worst, small and
 * latency-bound, while the GPU goes on with the updates of the step before;
 * hybrid-panel gives it the panel's TRSMs as well. */
bool on_cpu(run_mode m, op_kind kind)
{
  switch (m) {
  case MODE_GPU:
    return false;
  case MODE_HYBRID:
    return kind == OP_POTRF;
  case MODE_HYBRID_PANEL:
    return kind == OP_POTRF || kind == OP_TRSM;
  default:
    return true;
  }
}

/* Where the kernels read and write a tile: its device buffer, or its host
 * copy (work in cpu-reference mode). */
static void *dev_tile(const void *ctx, size_t i, size_t j)
{
  const run *r = ctx;
  return r->dtile[i * r->nt + j];
}

static void *host_tile(const void *ctx, size_t i, size_t j)
{
  const run *r = ctx;
  return tiled_at(r->htiles, i, j);
}

/* ------------------------------------------------------------------ plan */

enum { AT_DEV = 1, AT_HOST = 2 }; /* where a tile's current value is */

static gstep *add_step(run *r, int kind)
{
  gstep *g = &r->steps[r->nsteps++];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->r = r;
  return g;
}

/* A copy of tile (i, j) to the device or to the host. */
static void add_copy(run *r, size_t i, size_t j, bool to_device, unsigned char *at)
{
  size_t t = i * r->nt + j;
  gstep *g = add_step(r, to_device ? STEP_H2D : STEP_D2H);
  void *d = r->dtile[t], *h = host_tile(r, i, j);
  g->copy = (tile_copy){to_device ? d : h, to_device ? h : d, r->tile_bytes, to_device};
  g->reads[g->nreads++] = to_device ? r->hvar[t] : r->dvar[t];
  g->write = to_device ? r->dvar[t] : r->hvar[t];
  at[t] |= to_device ? AT_DEV : AT_HOST;
  r->ncopies++;
}

/* The tiles s's kernel uses: the one it writes (which it also reads: every
 * kernel updates its tile in place) first, then those it only reads. */
static int step_tiles(const chol_step *s, size_t ij[3][2])
{
  size_t i = s->i, j = s->j, k = s->k;
  switch (s->kind) {
  case OP_POTRF:
    ij[0][0] = k, ij[0][1] = k;
    return 1;
  case OP_TRSM:
    ij[0][0] = i, ij[0][1] = k, ij[1][0] = k, ij[1][1] = k;
    return 2;
  case OP_SYRK:
    ij[0][0] = i, ij[0][1] = i, ij[1][0] = i, ij[1][1] = k;
    return 2;
  default:
    ij[0][0] = i, ij[0][1] = j, ij[1][0] = i, ij[1][1] = k, ij[2][0] = j, ij[2][1] = k;
    return 3;
  }
}

/* The steps in push order: plan.c's kernels in the sequential algorithm's
 * order, each preceded by the copies that bring its tiles' current values
 * where it runs; at the end, copies to the device of the tiles whose
 * newest value is on the host (the factor is read back from the device).
 * The vars order each copy after the kernels before it on the same buffer
 * and before those after, as any other operator. */
static int build_plan(run *r)
{
  size_t nt = r->nt, nk = chol_count_steps(nt);
  chol_step *ks = calloc(nk, sizeof *ks);
  unsigned char *at = malloc(nt * nt);
  /* Each kernel may bring three tiles, and every tile may go back once. */
  r->steps = calloc(nk * 4 + nt * nt, sizeof *r->steps);
  if (!ks || !at || !r->steps) {
    free(ks);
    free(at);
    return -1;
  }
  memset(at, r->dev ? AT_DEV : AT_HOST, nt * nt); /* uploaded, or on the host only */
  chol_plan(ks, nt, r);
  for (size_t n = 0; n < nk; n++) {
    const chol_step *s = &ks[n];
    bool cpu = on_cpu(r->mode, s->kind);
    unsigned want = cpu ? AT_HOST : AT_DEV;
    size_t ij[3][2];
    int nij = step_tiles(s, ij);
    for (int u = 0; u < nij; u++)
      if (!(at[ij[u][0] * nt + ij[u][1]] & want))
        add_copy(r, ij[u][0], ij[u][1], !cpu, at);
    gstep *g = add_step(r, s->kind);
    g->cpu = cpu;
    g->s = *s;
    g->call = tile_call_of(s, r->prec, r->b, cpu ? host_tile : dev_tile, r,
                           cpu ? &r->info_host[s->k] : &r->info_dev[s->k]);
    weft_var **vars = cpu ? r->hvar : r->dvar;
    g->write = vars[ij[0][0] * nt + ij[0][1]];
    for (int u = 1; u < nij; u++)
      g->reads[g->nreads++] = vars[ij[u][0] * nt + ij[u][1]];
    at[ij[0][0] * nt + ij[0][1]] = (unsigned char)want; /* the other copy is stale */
    r->nkernels++;
  }
  for (size_t i = 0; r->dev && i < nt; i++)
    for (size_t j = 0; j <= i; j++)
      if (!(at[i * nt + j] & AT_DEV))
        add_copy(r, i, j, true, at);
  free(ks);
  free(at);
  return 0;
}

/* ------------------------------------------------------------- operators */

static int gpu_kernel(const weft_run_ctx *rc, void *arg)
{
  const gstep *g = arg;
  void *state = gpu_stream_state(rc->stream, rc->ctx.id);
  return state ? g->r->dev->enqueue_call(rc->stream, state, &g->call) : -1;
}

static int cpu_kernel(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const gstep *g = arg;
  int info = tile_call_run_cblas(&g->call);
  if (info < 0)
    fprintf(stderr, "cholesky_gpu: LAPACKE ?potrf: argument %d is illegal\n", -info);
  /* A failed POTRF fails its operator: everything after it is skipped and
   * weft_wait_all reports CHOL_NOT_SPD (as in cholesky.c). */
  return info > 0 ? CHOL_NOT_SPD : info < 0 ? -1 : 0;
}

static int copy_op(const weft_run_ctx *rc, void *arg)
{
  const gstep *g = arg;
  return g->r->dev->enqueue_copy(rc->stream, &g->copy);
}

/* Makes the compute streams' handles before anything is timed: operators
 * with no var and no predecessor go to the device's compute workers in
 * turn, so 64 (WEFT_GPU_WORKERS' maximum) reach every stream. Any stream
 * still without handles makes them on its first call (counted as late). */
static int prepare_op(const weft_run_ctx *rc, void *arg)
{
  (void)arg;
  return gpu_stream_state(rc->stream, rc->ctx.id) ? 0 : -1;
}

int push_prepare(weft_engine *eng)
{
  weft_op_desc d = {.fn = prepare_op, .ctx = {WEFT_DEV_GPU, 0}, .name = "prepare"};
  for (int k = 0; k < 64; k++) {
    int rc = weft_push(eng, &d);
    if (rc)
      return rc;
  }
  return 0;
}

int push_all(weft_engine *eng, run *r)
{
  static const char *const copy_names[] = {"d2h", "h2d"};
  for (size_t n = 0; n < r->nsteps; n++) {
    gstep *g = &r->steps[n];
    weft_op_desc d = {
        .arg = g, .reads = g->reads, .num_reads = g->nreads, .writes = &g->write, .num_writes = 1};
    if (g->kind == STEP_D2H || g->kind == STEP_H2D) {
      d.fn = copy_op;
      d.ctx = (weft_ctx){WEFT_DEV_GPU, 0};
      d.prop = g->kind == STEP_H2D ? WEFT_PROP_COPY_TO_GPU : WEFT_PROP_COPY_FROM_GPU;
      d.name = copy_names[g->kind == STEP_H2D];
    } else if (g->cpu) { /* the critical path first, as cholesky.c */
      d.fn = cpu_kernel;
      d.prop = WEFT_PROP_PRIORITIZED;
      d.priority = chol_priority(&g->s, r->nt);
      d.name = chol_op_names[g->kind];
    } else {
      d.fn = gpu_kernel;
      d.ctx = (weft_ctx){WEFT_DEV_GPU, 0};
      d.name = chol_op_names[g->kind];
    }
    int rc = weft_push(eng, &d);
    if (rc)
      return rc;
  }
  return 0;
}

/* --------------------------------------------------------------- buffers */

int run_alloc(run *r, weft_engine *eng)
{
  size_t nt = r->nt;
  r->dtile = calloc(nt * nt, sizeof *r->dtile);
  r->dvar = calloc(nt * nt, sizeof *r->dvar);
  r->hvar = calloc(nt * nt, sizeof *r->hvar);
  r->info_host = calloc(nt, sizeof *r->info_host);
  if (!r->dtile || !r->dvar || !r->hvar || !r->info_host)
    return -1;
  r->htiles = r->dev ? &r->host : r->work;
  bool hybrid = r->mode == MODE_HYBRID || r->mode == MODE_HYBRID_PANEL;
  /* Each tile at a 256-byte boundary (cudaMalloc's own alignment). */
  size_t stride = (r->tile_bytes + 255) / 256 * 256, ntiles = nt * (nt + 1) / 2;
  if (r->dev) {
    if (!(r->dslab = r->dev->alloc(stride * ntiles)) ||
        !(r->info_dev = r->dev->alloc(nt * sizeof *r->info_dev)))
      return -1;
    size_t t = 0;
    for (size_t i = 0; i < nt; i++)
      for (size_t j = 0; j <= i; j++)
        r->dtile[i * nt + j] = (char *)r->dslab + stride * t++;
  }
  if (hybrid) { /* pinned, so that the copy operators' copies are asynchronous */
    r->host = (tiled){.prec = r->prec,
                      .n = r->work->n,
                      .b = r->b,
                      .nt = nt,
                      .esize = r->work->esize,
                      .tile = calloc(nt * nt, sizeof(void *))};
    if (!r->host.tile || !(r->hslab = r->dev->host_alloc(stride * ntiles)))
      return -1;
    size_t t = 0;
    for (size_t i = 0; i < nt; i++)
      for (size_t j = 0; j <= i; j++)
        r->host.tile[i * nt + j] = (char *)r->hslab + stride * t++;
  }
  for (size_t i = 0; i < nt; i++) /* a var per buffer the run uses */
    for (size_t j = 0; j <= i; j++)
      if ((r->dev && weft_var_new(eng, &r->dvar[i * nt + j])) ||
          ((hybrid || !r->dev) && weft_var_new(eng, &r->hvar[i * nt + j])))
        return -1;
  return build_plan(r);
}

void run_free(run *r, weft_engine *eng)
{
  for (size_t t = 0; t < r->nt * r->nt; t++) {
    if (r->dvar && r->dvar[t])
      weft_var_delete(eng, r->dvar[t]);
    if (r->hvar && r->hvar[t])
      weft_var_delete(eng, r->hvar[t]);
  }
}

/* After the engine is destroyed (nothing runs on the device any more). */
void run_release(run *r)
{
  if (r->dev) {
    r->dev->free(r->dslab);
    r->dev->free(r->info_dev);
    if (r->hslab)
      r->dev->host_free(r->hslab);
  }
  free(r->host.tile);
  free(r->dtile);
  free(r->dvar);
  free(r->hvar);
  free(r->info_host);
  free(r->steps);
}

/* Before a factorisation: the input on the device (or in work), every
 * POTRF's info at -1 ("never ran"); all complete when this returns. */
int run_reset(run *r, const tiled *a)
{
  for (size_t k = 0; k < r->nt; k++)
    r->info_host[k] = -1;
  if (!r->dev) {
    tiled_copy(r->work, a);
    return 0;
  }
  int rc = r->dev->to_device(r->info_dev, r->info_host, r->nt * sizeof(int));
  for (size_t i = 0; i < r->nt && !rc; i++)
    for (size_t j = 0; j <= i && !rc; j++)
      rc = r->dev->to_device(r->dtile[i * r->nt + j], tiled_at(a, i, j), r->tile_bytes);
  return rc ? rc : r->dev->sync();
}

/* After it: the factor in work, every POTRF's info in info_host. */
int run_collect(run *r)
{
  if (!r->dev)
    return 0;
  int *dinfo = malloc(r->nt * sizeof *dinfo);
  int rc = dinfo ? r->dev->to_host(dinfo, r->info_dev, r->nt * sizeof(int)) : -1;
  for (size_t k = 0; k < r->nt && !rc; k++)
    if (!on_cpu(r->mode, OP_POTRF))
      r->info_host[k] = dinfo[k];
  for (size_t i = 0; i < r->nt && !rc; i++)
    for (size_t j = 0; j <= i && !rc; j++)
      rc = r->dev->to_host(tiled_at(r->work, i, j), r->dtile[i * r->nt + j], r->tile_bytes);
  free(dinfo);
  return rc ? rc : r->dev->sync();
}
