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

#include "tiles.h"

typedef enum { OP_POTRF, OP_TRSM, OP_SYRK, OP_GEMM } op_kind;

typedef struct chol_op {
  op_kind kind;
  size_t i, j, k;
  struct chol *c;
} chol_op;

typedef struct chol {
  tiled *work;
  weft_var **var; /* var[i * nt + j], j <= i */
  chol_op *ops;
  size_t nops;
  _Atomic long ran[4];    /* operators run, by kind */
  _Atomic long potrf_max; /* the largest k whose POTRF ran */
  _Atomic long failed_k;  /* the k whose POTRF found the matrix not SPD, or -1 */
  bool prio;              /* the critical path first (--no-prio: off) */
} chol;

typedef struct options {
  size_t n, b;
  int threads, reps;
  precision prec;
  const char *engine;
  bool check, lapack, not_spd, lapack_bench, gemm_ceiling, no_prio;
  unsigned long long seed;
} options;

/* A failed POTRF's status: what weft_wait_all returns (README). */
#define CHOL_NOT_SPD 4242

static int run_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  chol_op *o = arg;
  chol *c = o->c;
  tiled *t = c->work;
  atomic_fetch_add_explicit(&c->ran[o->kind], 1, memory_order_relaxed);
  switch (o->kind) {
  case OP_POTRF: {
    long k = (long)o->k, m = atomic_load_explicit(&c->potrf_max, memory_order_relaxed);
    while (k > m && !atomic_compare_exchange_weak_explicit(
                        &c->potrf_max, &m, k, memory_order_relaxed, memory_order_relaxed))
      ;
    int info = tile_potrf(t, tiled_at(t, o->k, o->k));
    if (info) {
      atomic_store_explicit(&c->failed_k, (long)o->k, memory_order_relaxed);
      return CHOL_NOT_SPD;
    }
    return 0;
  }
  case OP_TRSM:
    tile_trsm(t, tiled_at(t, o->k, o->k), tiled_at(t, o->i, o->k));
    return 0;
  case OP_SYRK:
    tile_syrk(t, tiled_at(t, o->i, o->k), tiled_at(t, o->i, o->i));
    return 0;
  case OP_GEMM:
    tile_gemm(t, tiled_at(t, o->i, o->k), tiled_at(t, o->j, o->k), tiled_at(t, o->i, o->j));
    return 0;
  }
  return 0;
}

static weft_var *var_of(const chol *c, size_t i, size_t j)
{
  return c->var[i * c->work->nt + j];
}

/* The critical path first, as StarPU's cholesky_implicit does: earlier
 * steps before later ones, and within a step POTRF, then TRSM, then the
 * updates of the next step's panel (column k + 1), then the rest. */
static int priority_of(const chol_op *o, size_t nt)
{
  int base = 4 * (int)(nt - o->k);
  switch (o->kind) {
  case OP_POTRF:
    return base + 3;
  case OP_TRSM:
    return base + 2;
  default:
    return base + (o->j == o->k + 1 ? 1 : 0);
  }
}

/* The operators in the sequential algorithm's order; each reads what its
 * kernel reads and writes what it writes. */
static int push_all(weft_engine *eng, chol *c)
{
  static const char *const names[] = {"potrf", "trsm", "syrk", "gemm"};
  for (size_t n = 0; n < c->nops; n++) {
    chol_op *o = &c->ops[n];
    weft_var *reads[2];
    weft_var *write;
    size_t nreads = 0;
    switch (o->kind) {
    case OP_POTRF:
      write = var_of(c, o->k, o->k);
      break;
    case OP_TRSM:
      reads[nreads++] = var_of(c, o->k, o->k);
      write = var_of(c, o->i, o->k);
      break;
    case OP_SYRK:
      reads[nreads++] = var_of(c, o->i, o->k);
      write = var_of(c, o->i, o->i);
      break;
    default:
      reads[nreads++] = var_of(c, o->i, o->k);
      reads[nreads++] = var_of(c, o->j, o->k);
      write = var_of(c, o->i, o->j);
      break;
    }
    weft_op_desc d = {.fn = run_op,
                      .arg = o,
                      .prop = c->prio ? WEFT_PROP_PRIORITIZED : WEFT_PROP_NORMAL,
                      .priority = c->prio ? priority_of(o, c->work->nt) : 0,
                      .reads = reads,
                      .num_reads = nreads,
                      .writes = &write,
                      .num_writes = 1,
                      .name = names[o->kind]};
    int rc = weft_push(eng, &d);
    if (rc)
      return rc;
  }
  return 0;
}

static void plan_ops(chol *c)
{
  size_t nt = c->work->nt, n = 0;
  for (size_t k = 0; k < nt; k++) {
    c->ops[n++] = (chol_op){OP_POTRF, k, k, k, c};
    for (size_t i = k + 1; i < nt; i++)
      c->ops[n++] = (chol_op){OP_TRSM, i, k, k, c};
    for (size_t i = k + 1; i < nt; i++) {
      c->ops[n++] = (chol_op){OP_SYRK, i, i, k, c};
      for (size_t j = k + 1; j < i; j++)
        c->ops[n++] = (chol_op){OP_GEMM, i, j, k, c};
    }
  }
  c->nops = n;
}

static size_t count_ops(size_t nt)
{
  size_t n = 0;
  for (size_t k = 0; k < nt; k++)
    n += 1 + (nt - k - 1) * 2 + (nt - k - 1) * (nt - k - 2) / 2;
  return n;
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
  long failed = atomic_load(&c->failed_k), pmax = atomic_load(&c->potrf_max);
  bool ok = rc == CHOL_NOT_SPD && failed == (long)bad_tile && pmax == (long)bad_tile &&
            (size_t)atomic_load(&c->ran[OP_POTRF]) == bad_tile + 1;
  printf("cholesky: not SPD at tile %ld: weft_wait_all returned %d, POTRFs run %ld (up to tile "
         "%ld), operators run %ld of %zu: %s\n",
         failed, rc, atomic_load(&c->ran[OP_POTRF]), pmax,
         atomic_load(&c->ran[0]) + atomic_load(&c->ran[1]) + atomic_load(&c->ran[2]) +
             atomic_load(&c->ran[3]),
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
  c.ops = calloc(count_ops(nt), sizeof *c.ops);
  if (!c.var || !c.ops)
    return 2;
  for (size_t i = 0; i < nt; i++)
    for (size_t j = 0; j <= i; j++)
      if (weft_var_new(eng, &c.var[i * nt + j]))
        return 2;
  plan_ops(&c);

  double *t = calloc((size_t)o.reps, sizeof *t);
  bool ok = true;
  double worst_res = 0, worst_lapack = 0;
  for (int r = 0; r < o.reps && ok; r++) {
    tiled_copy(&work, &a);
    for (int k = 0; k < 4; k++)
      atomic_store(&c.ran[k], 0);
    atomic_store(&c.potrf_max, -1);
    atomic_store(&c.failed_k, -1);
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
