/* SPDX-License-Identifier: MIT */
/*
 * What the tiled Cholesky's two programs (cholesky.c on one process,
 * cholesky_mpi.c across MPI ranks) share: the operators of a right-looking
 * tiled factorisation (A = L L^T, lower) in the sequential algorithm's
 * order, their priorities, the tiles each reads and writes (as a
 * weft_op_desc), and the run of each one's kernel with the counters the
 * programs check (plan.c). Each program supplies where a tile's var and
 * buffer are: its own matrix, or weft_mpi's copy.
 *
 * C only (C11 atomics): tiles.h stays free of them, as a C++ file includes
 * it.
 */
#ifndef CHOLESKY_PLAN_H
#define CHOLESKY_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <weft/weft.h>

#include "tiles.h"

typedef enum { OP_POTRF, OP_TRSM, OP_SYRK, OP_GEMM } op_kind;

/* The operators' names, by kind (weft_op_desc.name). */
extern const char *const chol_op_names[4];

/* One operator: its kind on tiles (i, j) at step k (POTRF: (k, k); TRSM:
 * (i, k); SYRK: (i, i); GEMM: (i, j), reading (i, k) and (j, k)), and the
 * program's context, which the callbacks below receive. */
typedef struct chol_step {
  op_kind kind;
  size_t i, j, k;
  void *ctx;
} chol_step;

/* How many operators nt x nt tiles take. */
size_t chol_count_steps(size_t nt);

/* The operators in the sequential algorithm's order into out (room for
 * chol_count_steps(nt)), each with ctx. Returns how many. */
size_t chol_plan(chol_step *out, size_t nt, void *ctx);

/* s's priority: the critical path first (WEFT_PROP_PRIORITIZED). */
int chol_priority(const chol_step *s, size_t nt);

/* The var of tile (i, j), given a step's ctx. */
typedef weft_var *(*chol_var_fn)(const void *ctx, size_t i, size_t j);

/* The vars one operator reads and writes: what its weft_op_desc points to,
 * to be kept until it is pushed. */
typedef struct chol_access {
  weft_var *reads[2];
  weft_var *write;
} chol_access;

/* s's description: fn with s as its argument, reading what its kernel
 * reads and writing the tile it writes (var_of, into acc), prioritized
 * (chol_priority) when prio, plain otherwise. */
weft_op_desc chol_step_desc(chol_step *s, size_t nt, bool prio, weft_op_fn fn, chol_var_fn var_of,
                            chol_access *acc);

/* A failed POTRF's status: what the operator returns, and so what the
 * wait reports (README). */
#define CHOL_NOT_SPD 4242

/* What ran in one factorisation (on this rank): updated by the operators,
 * read after the wait. */
typedef struct chol_counts {
  _Atomic long ran[4];    /* operators run, by kind */
  _Atomic long potrf_max; /* the largest k whose POTRF ran */
  _Atomic long failed_k;  /* the k whose POTRF found the matrix not SPD, or -1 */
} chol_counts;

/* Before a factorisation's pushes: nothing ran, no POTRF failed. */
void chol_counts_reset(chol_counts *n);

/* The buffer of tile (i, j), given a step's ctx. */
typedef void *(*chol_tile_fn)(const void *ctx, size_t i, size_t j);

/* Runs s's kernel (tiles.c, on t's precision and tile size) on the tiles
 * tile_of gives and counts it in n. Returns 0, or CHOL_NOT_SPD when POTRF
 * found its tile not positive definite. */
int chol_run_step(const chol_step *s, const tiled *t, chol_tile_fn tile_of, chol_counts *n);

#endif /* CHOLESKY_PLAN_H */
