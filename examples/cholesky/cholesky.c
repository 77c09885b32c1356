/* SPDX-License-Identifier: MIT */
/*
 * Tiled Cholesky factorisation (A = L L^T, lower, right-looking) on weft's
 * dependency engine: one var per tile, four kinds of operators (POTRF,
 * TRSM, SYRK, GEMM) that each call one serial BLAS/LAPACK routine on a
 * tile (tiles.c), and no hand-written edge: every dependency comes from the
 * vars an operator reads and writes, as in StarPU's cholesky_implicit.
 *
 *   cholesky [--n N] [--b B] [--threads T] [--precision float|double]
 *            [--engine threaded|naive] [--reps R] [--check] [--lapack]
 *            [--not-spd] [--seed S] [--lapack-bench] [--gemm-ceiling]
 *
 *   --n, --b       matrix order and tile size (b divides n); 2048, 256
 *   --threads      weft's workers (default: weft's automatic count)
 *   --reps         factorisations timed (each of a fresh copy); 3
 *   --check        ||A - L L^T||_F / (||A||_F n eps) < 10 after every rep
 *   --lapack       also: L equals LAPACK's ?potrf of the same matrix to
 *                  within 1e-10 (double) / 1e-3 (float), relatively
 *   --not-spd      row n/2 of the matrix is made indefinite: POTRF's info
 *                  must fail that operator, every operator that depends on
 *                  it must be skipped, and weft_wait_all must report it
 *   --no-prio      push every operator plainly (default: the critical path
 *                  first, WEFT_PROP_PRIORITIZED)
 *   --lapack-bench also time LAPACK's own ?potrf (its threads, --threads)
 *   --gemm-ceiling also time one core's GEMM on b x b tiles (the ceiling:
 *                  that times the threads)
 *
 * Prints one line: the figures (median and min-max of the reps, GFLOP/s
 * counting n^3/3) and the checks. Exit status 0 when every check passed,
 * 1 when one failed, 2 on bad arguments or setup failure.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

#include "plan.h"
#include "tiles.h"

typedef struct chol {
  tiled *work;
  weft_var **var; /* var[i * nt + j], j <= i */
  chol_step *ops; /* each with this chol as its ctx */
  size_t nops;
  chol_counts counts;
  bool prio; /* the critical path first (--no-prio: off) */
} chol;

typedef struct options {
  size_t n, b;
  int threads, reps;
  precision prec;
  const char *engine;
  bool check, lapack, not_spd, lapack_bench, gemm_ceiling, no_prio;
  unsigned long long seed;
} options;

static weft_var *var_of(const void *ctx, size_t i, size_t j)
{
  const chol *c = ctx;
  return c->var[i * c->work->nt + j];
}

static void *tile_of(const void *ctx, size_t i, size_t j)
{
  const chol *c = ctx;
  return tiled_at(c->work, i, j);
}

static int run_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const chol_step *s = arg;
  chol *c = s->ctx;
  return chol_run_step(s, c->work, tile_of, &c->counts);
}

/* The operators in the sequential algorithm's order (plan.c). */
static int push_all(weft_engine *eng, chol *c)
{
  for (size_t n = 0; n < c->nops; n++) {
    chol_access acc;
    weft_op_desc d = chol_step_desc(&c->ops[n], c->work->nt, c->prio, run_op, var_of, &acc);
    int rc = weft_push(eng, &d);
    if (rc)
      return rc;
  }
  return 0;
}

static void usage(void)
{
  fprintf(stderr, "usage: cholesky [--n N] [--b B] [--threads T] [--precision float|double] "
                  "[--engine threaded|naive] [--reps R] [--check] [--lapack] [--not-spd] "
                  "[--seed S] [--no-prio] [--lapack-bench] [--gemm-ceiling]\n");
  exit(2);
}

static unsigned long long number(const char *s)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || s[0] == '-')
    usage();
  return v;
}

static options parse(int argc, char **argv)
{
  options o = {2048, 256, 0, 3, PREC_DOUBLE, NULL, false, false, false, false, false, false, 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check"))
      o.check = true;
    else if (!strcmp(a, "--lapack"))
      o.lapack = true;
    else if (!strcmp(a, "--not-spd"))
      o.not_spd = true;
    else if (!strcmp(a, "--lapack-bench"))
      o.lapack_bench = true;
    else if (!strcmp(a, "--gemm-ceiling"))
      o.gemm_ceiling = true;
    else if (!strcmp(a, "--no-prio"))
      o.no_prio = true;
    else if (!v)
      usage();
    else if (!strcmp(a, "--n"))
      o.n = number(v), i++;
    else if (!strcmp(a, "--b"))
      o.b = number(v), i++;
    else if (!strcmp(a, "--threads"))
      o.threads = (int)number(v), i++;
    else if (!strcmp(a, "--reps"))
      o.reps = (int)number(v), i++;
    else if (!strcmp(a, "--seed"))
      o.seed = number(v), i++;
    else if (!strcmp(a, "--engine"))
      o.engine = v, i++;
    else if (!strcmp(a, "--precision")) {
      if (!strcmp(v, "float"))
        o.prec = PREC_FLOAT;
      else if (!strcmp(v, "double"))
        o.prec = PREC_DOUBLE;
      else
        usage();
      i++;
    } else
      usage();
  }
  if (o.b == 0 || o.n == 0 || o.n % o.b != 0 || o.reps < 1 || o.reps > 1000) {
    fprintf(stderr, "cholesky: --b must divide --n, and 1 <= --reps <= 1000\n");
    exit(2);
  }
  return o;
}

/* With --not-spd: the failure reached weft_wait_all, the POTRFs after the
 * failing one never ran (all depend on it), and nothing crashed. */
static bool not_spd_reported(const chol *c, int rc, size_t bad_tile)
{
  /* After weft_wait_all, which every operator's updates come before. */
  const chol_counts *n = &c->counts;
  long failed = atomic_load(&n->failed_k), pmax = atomic_load(&n->potrf_max);
  bool ok = rc == CHOL_NOT_SPD && failed == (long)bad_tile && pmax == (long)bad_tile &&
            (size_t)atomic_load(&n->ran[OP_POTRF]) == bad_tile + 1;
  printf("cholesky: not SPD at tile %ld: weft_wait_all returned %d, POTRFs run %ld (up to tile "
         "%ld), operators run %ld of %zu: %s\n",
         failed, rc, atomic_load(&n->ran[OP_POTRF]), pmax,
         atomic_load(&n->ran[0]) + atomic_load(&n->ran[1]) + atomic_load(&n->ran[2]) +
             atomic_load(&n->ran[3]),
         c->nops, ok ? "ok" : "FAILED");
  return ok;
}

int main(int argc, char **argv)
{
  options o = parse(argc, argv);
  if (tiles_blas_init())
    return 2;
  tiled a, work;
  if (tiled_alloc(&a, o.prec, o.n, o.b) || tiled_alloc(&work, o.prec, o.n, o.b)) {
    fprintf(stderr, "cholesky: out of memory\n");
    return 2;
  }
  long bad = o.not_spd ? (long)(o.n / 2) : -1;
  tiled_fill_spd(&a, o.seed, bad);

  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = o.threads;
  pc.name = "cholesky";
  weft_pool *pool = NULL;
  int rc = weft_pool_create(&pool, &pc);
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  ec.kind = o.engine;
  weft_engine *eng = NULL;
  if (rc == 0)
    rc = weft_engine_create(&eng, &ec);
  if (rc) {
    fprintf(stderr, "cholesky: weft: %s\n", weft_strerror(rc));
    return 2;
  }
  chol c = {.work = &work, .prio = !o.no_prio};
  size_t nt = a.nt;
  c.var = calloc(nt * nt, sizeof *c.var);
  c.ops = calloc(chol_count_steps(nt), sizeof *c.ops);
  if (!c.var || !c.ops)
    return 2;
  for (size_t i = 0; i < nt; i++)
    for (size_t j = 0; j <= i; j++)
      if (weft_var_new(eng, &c.var[i * nt + j]))
        return 2;
  c.nops = chol_plan(c.ops, nt, &c);

  double *t = calloc((size_t)o.reps, sizeof *t);
  bool ok = true;
  double worst_res = 0, worst_lapack = 0;
  for (int r = 0; r < o.reps && ok; r++) {
    tiled_copy(&work, &a);
    chol_counts_reset(&c.counts);
    double t0 = tiles_now_s();
    rc = push_all(eng, &c);
    int wrc = weft_wait_all(eng);
    t[r] = tiles_now_s() - t0;
    if (rc) {
      fprintf(stderr, "cholesky: weft_push: %s\n", weft_strerror(rc));
      return 2;
    }
    if (o.not_spd) {
      ok = not_spd_reported(&c, wrc, (size_t)bad / o.b);
      break;
    }
    if (wrc) {
      fprintf(stderr, "cholesky: FAILED: weft_wait_all returned %d\n", wrc);
      ok = false;
      break;
    }
    if (o.check) {
      double res = tiled_residual(&a, &work);
      worst_res = res > worst_res ? res : worst_res;
      if (!(res >= 0 && res < 10)) {
        fprintf(stderr, "cholesky: FAILED: rep %d: residual %.3g (bound 10)\n", r, res);
        ok = false;
      }
    }
    if (o.lapack) {
      double d = tiled_vs_lapack(&a, &work);
      double bound = o.prec == PREC_FLOAT ? 1e-3 : 1e-10;
      worst_lapack = d > worst_lapack ? d : worst_lapack;
      if (!(d >= 0 && d < bound)) {
        fprintf(stderr, "cholesky: FAILED: rep %d: L differs from LAPACK's by %.3g (bound %g)\n", r,
                d, bound);
        ok = false;
      }
    }
  }
  if (!o.not_spd && ok) {
    qsort(t, (size_t)o.reps, sizeof *t, tiles_cmp_double);
    double flops = (double)o.n * (double)o.n * (double)o.n / 3.0;
    double med = t[o.reps / 2];
    printf("cholesky: n %zu b %zu %s, %d threads, %s engine, %zu operators: %.1f ms "
           "[%.1f-%.1f], %.2f GFLOP/s [%.2f-%.2f]",
           o.n, o.b, o.prec == PREC_FLOAT ? "float" : "double", weft_pool_num_threads(pool),
           o.engine ? o.engine : "default", c.nops, med * 1e3, t[0] * 1e3, t[o.reps - 1] * 1e3,
           flops / med * 1e-9, flops / t[o.reps - 1] * 1e-9, flops / t[0] * 1e-9);
    if (o.check)
      printf(", residual %.3g", worst_res);
    if (o.lapack)
      printf(", vs LAPACK %.3g", worst_lapack);
    if (o.lapack_bench) {
      double s = lapack_potrf_seconds(&a, weft_pool_num_threads(pool));
      printf(", LAPACK ?potrf (%d threads) %.2f GFLOP/s", weft_pool_num_threads(pool),
             s > 0 ? flops / s * 1e-9 : 0.0);
    }
    if (o.gemm_ceiling)
      printf(", one-core GEMM on %zu x %zu tiles %.2f GFLOP/s", o.b, o.b,
             tile_gemm_gflops(o.prec, o.b));
    printf("\n");
  }
  for (size_t i = 0; i < nt; i++)
    for (size_t j = 0; j <= i; j++)
      weft_var_delete(eng, c.var[i * nt + j]);
  weft_engine_destroy(eng);
  weft_pool_destroy(pool);
  free(t);
  free(c.var);
  free(c.ops);
  tiled_free(&a);
  tiled_free(&work);
  return ok ? 0 : 1;
}
