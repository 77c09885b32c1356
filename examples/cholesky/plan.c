/* SPDX-License-Identifier: MIT */
/*
 * The tiled Cholesky's operators, shared by cholesky.c and cholesky_mpi.c
 * (plan.h).
 */
#include "plan.h"

const char *const chol_op_names[4] = {"potrf", "trsm", "syrk", "gemm"};

size_t chol_count_steps(size_t nt)
{
  size_t n = 0;
  for (size_t k = 0; k < nt; k++)
    n += 1 + (nt - k - 1) * 2 + (nt - k - 1) * (nt - k - 2) / 2;
  return n;
}

size_t chol_plan(chol_step *out, size_t nt, void *ctx)
{
  size_t n = 0;
  for (size_t k = 0; k < nt; k++) {
    out[n++] = (chol_step){OP_POTRF, k, k, k, ctx};
    for (size_t i = k + 1; i < nt; i++)
      out[n++] = (chol_step){OP_TRSM, i, k, k, ctx};
    for (size_t i = k + 1; i < nt; i++) {
      out[n++] = (chol_step){OP_SYRK, i, i, k, ctx};
      for (size_t j = k + 1; j < i; j++)
        out[n++] = (chol_step){OP_GEMM, i, j, k, ctx};
    }
  }
  return n;
}

/* The critical path first, as StarPU's cholesky_implicit does: earlier
 * steps before later ones, and within a step POTRF, then TRSM, then the
 * updates of the next step's panel (column k + 1), then the rest. */
int chol_priority(const chol_step *s, size_t nt)
{
  int base = 4 * (int)(nt - s->k);
  switch (s->kind) {
  case OP_POTRF:
    return base + 3;
  case OP_TRSM:
    return base + 2;
  default:
    return base + (s->j == s->k + 1 ? 1 : 0);
  }
}

/* Each operator reads what its kernel reads and writes what it writes. */
weft_op_desc chol_step_desc(chol_step *s, size_t nt, bool prio, weft_op_fn fn, chol_var_fn var_of,
                            chol_access *acc)
{
  size_t nreads = 0;
  switch (s->kind) {
  case OP_POTRF:
    acc->write = var_of(s->ctx, s->k, s->k);
    break;
  case OP_TRSM:
    acc->reads[nreads++] = var_of(s->ctx, s->k, s->k);
    acc->write = var_of(s->ctx, s->i, s->k);
    break;
  case OP_SYRK:
    acc->reads[nreads++] = var_of(s->ctx, s->i, s->k);
    acc->write = var_of(s->ctx, s->i, s->i);
    break;
  default:
    acc->reads[nreads++] = var_of(s->ctx, s->i, s->k);
    acc->reads[nreads++] = var_of(s->ctx, s->j, s->k);
    acc->write = var_of(s->ctx, s->i, s->j);
    break;
  }
  return (weft_op_desc){.fn = fn,
                        .arg = s,
                        .prop = prio ? WEFT_PROP_PRIORITIZED : WEFT_PROP_NORMAL,
                        .priority = prio ? chol_priority(s, nt) : 0,
                        .reads = acc->reads,
                        .num_reads = nreads,
                        .writes = &acc->write,
                        .num_writes = 1,
                        .name = chol_op_names[s->kind]};
}

void chol_counts_reset(chol_counts *n)
{
  /* Relaxed: the pushes that follow hand the operators to the workers,
   * which orders these stores before every operator's update. */
  for (int k = 0; k < 4; k++)
    atomic_store_explicit(&n->ran[k], 0, memory_order_relaxed);
  atomic_store_explicit(&n->potrf_max, -1, memory_order_relaxed);
  atomic_store_explicit(&n->failed_k, -1, memory_order_relaxed);
}

int chol_run_step(const chol_step *s, const tiled *t, chol_tile_fn tile_of, chol_counts *n)
{
  atomic_fetch_add_explicit(&n->ran[s->kind], 1, memory_order_relaxed);
  switch (s->kind) {
  case OP_POTRF: {
    long k = (long)s->k, m = atomic_load_explicit(&n->potrf_max, memory_order_relaxed);
    while (k > m && !atomic_compare_exchange_weak_explicit(
                        &n->potrf_max, &m, k, memory_order_relaxed, memory_order_relaxed))
      ;
    if (tile_potrf(t, tile_of(s->ctx, s->k, s->k))) {
      atomic_store_explicit(&n->failed_k, k, memory_order_relaxed);
      return CHOL_NOT_SPD;
    }
    return 0;
  }
  case OP_TRSM:
    tile_trsm(t, tile_of(s->ctx, s->k, s->k), tile_of(s->ctx, s->i, s->k));
    return 0;
  case OP_SYRK:
    tile_syrk(t, tile_of(s->ctx, s->i, s->k), tile_of(s->ctx, s->i, s->i));
    return 0;
  case OP_GEMM:
    tile_gemm(t, tile_of(s->ctx, s->i, s->k), tile_of(s->ctx, s->j, s->k),
              tile_of(s->ctx, s->i, s->j));
    return 0;
  }
  return 0;
}
