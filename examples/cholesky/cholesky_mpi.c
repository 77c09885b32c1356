/* SPDX-License-Identifier: MIT */
/*
 * Tiled Cholesky factorisation (A = L L^T, lower, right-looking) across MPI
 * ranks with libweft_mpi (include/weft/weft_mpi.h): the algorithm, the
 * kernels (tiles.c) and the priorities of cholesky.c, with the tiles dealt
 * 2D block-cyclically over a p x q grid of ranks (p * q = ranks, p the
 * largest divisor of the rank count that is <= its square root): tile (i, j)
 * belongs to rank (i mod p) * q + (j mod q). Each rank allocates the tiles
 * it owns only; weft_mpi moves (and caches) the others' where an operator
 * needs them. Every operator runs on the owner of the tile it writes.
 *
 *   mpirun -np R cholesky_mpi [--n N] [--b B] [--threads T]
 *            [--precision float|double] [--reps R] [--check] [--not-spd [K]]
 *            [--seed S] [--no-prio]
 *
 *   --n, --b     matrix order and tile size (b divides n); 2048, 256
 *   --threads    weft's workers per rank (default: weft's automatic count,
 *                WEFT_NUM_THREADS)
 *   --reps       factorisations timed, all in one attachment (each of the
 *                matrix filled afresh); 3. A rep's time runs from the first
 *                push to weft_mpi_wait_all's return, the ranks having met
 *                in an empty weft_mpi_wait_all just before: every transfer
 *                is in it. The figure is the slowest rank's.
 *   --check      after the last rep (and the detach), rank 0 gathers the
 *                tiles and checks ||A - L L^T||_F / (||A||_F n eps) < 10
 *                and that L equals LAPACK's ?potrf of the same matrix to
 *                within 1e-10 (double) / 1e-3 (float), relatively
 *   --not-spd K  row K (default n/2) of the matrix is made indefinite: the
 *                POTRF of its tile must fail, every operator that depends on
 *                it must be skipped on every rank, and every rank's
 *                weft_mpi_wait_all must report the POTRF's status
 *   --no-prio    push every operator plainly (default: the critical path
 *                first, WEFT_PROP_PRIORITIZED)
 *
 * Rank 0 prints one line: the figures (median and min-max of the reps,
 * GFLOP/s counting n^3/3) and the checks. Every rank exits with the same
 * status: 0 when every check passed (with --not-spd: when the failure was
 * reported as it must be), 1 when one failed, 2 on bad arguments or setup
 * failure.
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft_mpi.h>

#include "plan.h"
#include "tiles.h"

typedef struct dchol {
  weft_mpi *mpi;
  tiled *mine; /* the tiles this rank owns; NULL elsewhere */
  size_t nt;
  int p, q;       /* the process grid */
  weft_var **var; /* var[i * nt + j], j <= i */
  chol_step *ops; /* each with this dchol as its ctx */
  size_t nops;
  bool prio;
  chol_counts counts; /* this rank's operators, as cholesky.c counts them */
} dchol;

typedef struct options {
  size_t n, b;
  int threads, reps;
  precision prec;
  bool check, not_spd, no_prio;
  long bad; /* --not-spd's row */
  unsigned long long seed;
} options;

static int world_rank;

static int owner_of(const dchol *c, size_t i, size_t j)
{
  return (int)(i % (size_t)c->p) * c->q + (int)(j % (size_t)c->q);
}

static weft_var *var_of(const void *ctx, size_t i, size_t j)
{
  const dchol *c = ctx;
  return c->var[i * c->nt + j];
}

/* The local buffer of tile (i, j): this rank's own, or weft_mpi's copy. */
static void *data_of(const void *ctx, size_t i, size_t j)
{
  const dchol *c = ctx;
  return weft_mpi_var_data(c->mpi, var_of(c, i, j));
}

/* cholesky.c's kernels and priorities (plan.c). */
static int run_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const chol_step *s = arg;
  dchol *c = s->ctx;
  return chol_run_step(s, c->mine, data_of, &c->counts);
}

/* The same sequence on every rank: each operator runs on the owner of the
 * tile it writes (WEFT_MPI_OWNER). */
static int push_all(dchol *c)
{
  for (size_t n = 0; n < c->nops; n++) {
    chol_access acc;
    weft_op_desc d = chol_step_desc(&c->ops[n], c->nt, c->prio, run_op, var_of, &acc);
    int rc = weft_mpi_push(c->mpi, &d, WEFT_MPI_OWNER);
    if (rc)
      return rc;
  }
  return 0;
}

/* ------------------------------------------------------------ the command */

/* Every rank parses the same arguments and leaves the same way. */
static _Noreturn void leave(int status)
{
  MPI_Finalize();
  exit(status);
}

static _Noreturn void usage(const char *why)
{
  if (world_rank == 0) {
    if (why)
      fprintf(stderr, "cholesky_mpi: %s\n", why);
    fprintf(stderr, "usage: mpirun -np R cholesky_mpi [--n N] [--b B] [--threads T] "
                    "[--precision float|double] [--reps R] [--check] [--not-spd [K]] "
                    "[--seed S] [--no-prio]\n");
  }
  leave(2);
}

static unsigned long long number(const char *opt, const char *s)
{
  char *end;
  if (!s || !*s || s[0] == '-' || s[0] == '+') {
    static char msg[128];
    snprintf(msg, sizeof msg, "%s needs a non-negative number", opt);
    usage(msg);
  }
  unsigned long long v = strtoull(s, &end, 10);
  if (*end) {
    static char msg[128];
    snprintf(msg, sizeof msg, "%s: \"%s\" is not a number", opt, s);
    usage(msg);
  }
  return v;
}

static options parse(int argc, char **argv)
{
  options o = {.n = 2048, .b = 256, .reps = 3, .prec = PREC_DOUBLE, .bad = -1, .seed = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check"))
      o.check = true;
    else if (!strcmp(a, "--no-prio"))
      o.no_prio = true;
    else if (!strcmp(a, "--not-spd")) {
      o.not_spd = true;
      if (v && v[0] != '-') /* the row is optional */
        o.bad = (long)number(a, v), i++;
    } else if (!strcmp(a, "--n"))
      o.n = number(a, v), i++;
    else if (!strcmp(a, "--b"))
      o.b = number(a, v), i++;
    else if (!strcmp(a, "--threads")) {
      unsigned long long t = number(a, v);
      if (t > 4096)
        usage("--threads: at most 4096");
      o.threads = (int)t, i++;
    } else if (!strcmp(a, "--reps")) {
      unsigned long long r = number(a, v);
      if (r < 1 || r > 1000)
        usage("--reps: 1 to 1000");
      o.reps = (int)r, i++;
    } else if (!strcmp(a, "--seed"))
      o.seed = number(a, v), i++;
    else if (!strcmp(a, "--precision")) {
      if (v && !strcmp(v, "float"))
        o.prec = PREC_FLOAT;
      else if (v && !strcmp(v, "double"))
        o.prec = PREC_DOUBLE;
      else
        usage("--precision: float or double");
      i++;
    } else {
      static char msg[160];
      snprintf(msg, sizeof msg, "unknown option \"%.100s\"", a);
      usage(msg);
    }
  }
  if (o.b == 0 || o.n == 0 || o.n % o.b != 0)
    usage("--b must divide --n (both > 0)");
  if (o.b > 16384 || o.n > (size_t)1 << 24)
    usage("--b at most 16384, --n at most 2^24");
  if (o.not_spd && o.bad < 0)
    o.bad = (long)(o.n / 2);
  if (o.not_spd && (size_t)o.bad >= o.n)
    usage("--not-spd K: K must be a row of the matrix (< --n)");
  return o;
}

/* p x q = size, p the largest divisor <= sqrt(size). */
static void grid_of(int size, int *p, int *q)
{
  int best = 1;
  for (int d = 1; (long)d * d <= size; d++)
    if (size % d == 0)
      best = d;
  *p = best;
  *q = size / best;
}

typedef struct keep_mine {
  const dchol *c;
  int rank;
} keep_mine;

/* tiled_alloc_some's filter: the tiles this rank owns. */
static bool is_mine(const void *ctx, size_t i, size_t j)
{
  const keep_mine *k = ctx;
  return owner_of(k->c, i, j) == k->rank;
}

/* After the detach: every tile to rank 0 (plain MPI), which compares the
 * factor with a same-seed undistributed copy. Returns, on every rank,
 * whether the checks passed; rank 0 prints the figures into line. */
static bool gather_and_check(const dchol *c, const options *o, char *line, size_t cap)
{
  int rank = world_rank;
  size_t nt = c->nt, b = o->b;
  MPI_Datatype type = o->prec == PREC_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  int count = (int)(b * b);
  int ok = 1;
  if (rank != 0) {
    for (size_t i = 0; i < nt; i++)
      for (size_t j = 0; j <= i; j++)
        if (owner_of(c, i, j) == rank)
          MPI_Send(tiled_at(c->mine, i, j), count, type, 0, 0, MPI_COMM_WORLD);
  } else {
    tiled a, work;
    bool mem = tiled_alloc(&a, o->prec, o->n, b) == 0;
    mem = tiled_alloc(&work, o->prec, o->n, b) == 0 && mem;
    for (size_t i = 0; i < nt; i++)
      for (size_t j = 0; j <= i; j++) {
        int from = owner_of(c, i, j);
        void *dst = mem ? tiled_at(&work, i, j) : NULL;
        if (from == 0) {
          if (dst)
            memcpy(dst, tiled_at(c->mine, i, j), b * b * c->mine->esize);
        } else if (dst) {
          MPI_Recv(dst, count, type, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          /* No room for the gather: drain the senders all the same. */
          void *scratch = malloc(b * b * c->mine->esize);
          if (!scratch)
            MPI_Abort(MPI_COMM_WORLD, 2);
          MPI_Recv(scratch, count, type, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          free(scratch);
        }
      }
    if (!mem) {
      fprintf(stderr, "cholesky_mpi: out of memory for --check on rank 0\n");
      ok = 0;
    } else {
      tiled_fill_spd(&a, o->seed, -1);
      double res = tiled_residual(&a, &work);
      double d = tiled_vs_lapack(&a, &work);
      double bound = o->prec == PREC_FLOAT ? 1e-3 : 1e-10;
      if (!(res >= 0 && res < 10)) {
        fprintf(stderr, "cholesky_mpi: FAILED: residual %.3g (bound 10)\n", res);
        ok = 0;
      }
      if (!(d >= 0 && d < bound)) {
        fprintf(stderr, "cholesky_mpi: FAILED: L differs from LAPACK's by %.3g (bound %g)\n", d,
                bound);
        ok = 0;
      }
      snprintf(line, cap, ", residual %.3g, vs LAPACK %.3g", res, d);
    }
    tiled_free(&a);
    tiled_free(&work);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok != 0;
}

/* With --not-spd, after the detach: the failure reached every rank's
 * weft_mpi_wait_all with the same status, the POTRFs after the failing one
 * never ran anywhere (all depend on it). Returns the verdict on every rank. */
static bool not_spd_reported(dchol *c, int wrc, size_t bad_tile)
{
  /* After weft_mpi_wait_all, which this rank's operators' updates come
   * before. */
  const chol_counts *n = &c->counts;
  long mine[7] = {atomic_load(&n->ran[0]), atomic_load(&n->ran[1]), atomic_load(&n->ran[2]),
                  atomic_load(&n->ran[3]), atomic_load(&n->potrf_max),
                  atomic_load(&n->failed_k), wrc},
       sum[7], max[7], min[7];
  MPI_Allreduce(mine, sum, 7, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(mine, max, 7, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(mine, min, 7, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
  long potrfs = sum[OP_POTRF], failed = max[5], pmax = max[4];
  bool same = min[6] == max[6];
  bool ok = same && max[6] == CHOL_NOT_SPD && failed == (long)bad_tile &&
            pmax == (long)bad_tile && potrfs == (long)bad_tile + 1;
  if (world_rank == 0) {
    printf("cholesky_mpi: not SPD at tile %ld: weft_mpi_wait_all returned ", failed);
    if (same)
      printf("%d on every rank", wrc);
    else
      printf("%ld to %ld (differing)", min[6], max[6]);
    printf(", POTRFs run %ld (up to tile %ld), operators run %ld of %zu: %s\n", potrfs, pmax,
           sum[0] + sum[1] + sum[2] + sum[3], c->nops, ok ? "ok" : "FAILED");
    fflush(stdout);
  }
  return ok;
}

int main(int argc, char **argv)
{
  int provided = 0, size = 1;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "cholesky_mpi: MPI_Init_thread failed\n");
    return 2;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_SERIALIZED) {
    if (world_rank == 0)
      fprintf(stderr, "cholesky_mpi: this MPI gives no MPI_THREAD_SERIALIZED (weft_mpi needs "
                      "it)\n");
    leave(2);
  }
  options o = parse(argc, argv);
  int rank = world_rank;
  if (tiles_blas_init())
    leave(2); /* the same library on every rank: every rank leaves */

  dchol c = {.prio = !o.no_prio, .nt = o.n / o.b};
  grid_of(size, &c.p, &c.q);
  size_t nt = c.nt;
  tiled mine;
  keep_mine keep = {&c, rank};
  int setup = tiled_alloc_some(&mine, o.prec, o.n, o.b, is_mine, &keep) ? 1 : 0;
  c.mine = &mine;
  c.var = calloc(nt * nt, sizeof *c.var);
  c.ops = calloc(chol_count_steps(nt), sizeof *c.ops);
  double *t = calloc((size_t)o.reps, sizeof *t);
  double *tmax = calloc((size_t)o.reps, sizeof *tmax);
  if (!c.var || !c.ops || !t || !tmax)
    setup = 1;

  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = o.threads;
  pc.name = "cholesky_mpi";
  weft_pool *pool = NULL;
  weft_engine *eng = NULL;
  int rc = setup ? 0 : weft_pool_create(&pool, &pc);
  if (!setup && rc == 0) {
    weft_engine_config ec;
    weft_engine_config_default(&ec);
    ec.pool = pool;
    rc = weft_engine_create(&eng, &ec);
  }
  if (rc) {
    fprintf(stderr, "cholesky_mpi: rank %d: weft: %s\n", rank, weft_strerror(rc));
    setup = 1;
  } else if (setup) {
    fprintf(stderr, "cholesky_mpi: rank %d: out of memory\n", rank);
  }
  /* Attach only if every rank can. */
  int any_setup = 0;
  MPI_Allreduce(&setup, &any_setup, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int status = 2;
  bool attached = false;
  if (!any_setup) {
    rc = weft_mpi_attach(eng, MPI_COMM_WORLD, NULL, &c.mpi);
    attached = rc == 0;
    if (rc) {
      fprintf(stderr, "cholesky_mpi: rank %d: weft_mpi_attach: %s\n", rank, weft_strerror(rc));
      /* WEFT_EINVAL comes before any communication and alike on every rank
       * (the same thread level and environment): every rank leaves below.
       * Anything else may leave the other ranks attached, waiting for this
       * one: stop them all. (No rank may ask the others with MPI once it is
       * attached: weft_mpi's progress thread owns MPI then.) */
      if (rc != WEFT_EINVAL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }

  /* MPI belongs to weft_mpi's progress thread from here to the detach. */
  MPI_Datatype type = o.prec == PREC_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
  int wrc = 0, prc = 0, reps_done = 0;
  bool registered = false;
  if (attached) {
    /* Every tile, in the same order on every rank: the owner's buffer there,
     * NULL elsewhere (weft_mpi's cache). */
    registered = true;
    for (size_t i = 0; i < nt && registered; i++)
      for (size_t j = 0; j <= i && registered; j++) {
        int owner = owner_of(&c, i, j);
        if ((rc = weft_var_new(eng, &c.var[i * nt + j])) ||
            (rc = weft_mpi_var_register(c.mpi, c.var[i * nt + j], owner,
                                        owner == rank ? tiled_at(&mine, i, j) : NULL,
                                        (int)(o.b * o.b), type))) {
          fprintf(stderr, "cholesky_mpi: rank %d: registering tile (%zu, %zu): %s\n", rank, i,
                  j, weft_strerror(rc));
          registered = false;
        }
      }
    c.nops = chol_plan(c.ops, nt, &c);
    for (int r = 0; r < o.reps && registered; r++) {
      tiled_fill_spd(&mine, o.seed, o.not_spd ? o.bad : -1);
      chol_counts_reset(&c.counts);
      /* The ranks meet (an empty collective wait), then the clock runs
       * from the first push until every rank's operators and transfers are
       * done. */
      if ((wrc = weft_mpi_wait_all(c.mpi)))
        break;
      double t0 = tiles_now_s();
      prc = push_all(&c);
      wrc = weft_mpi_wait_all(c.mpi);
      t[r] = tiles_now_s() - t0;
      reps_done = r + 1;
      if (prc) {
        fprintf(stderr, "cholesky_mpi: rank %d: weft_mpi_push: %s\n", rank, weft_strerror(prc));
        break;
      }
      if (wrc)
        break;
    }
  }
  weft_mpi_stats st = {0};
  int drc = 0;
  if (attached) {
    weft_mpi_get_stats(c.mpi, &st);
    drc = weft_mpi_detach(c.mpi);
    c.mpi = NULL;
  }
  /* MPI is the application's again. */

  char checks[160] = "";
  if (attached) {
    int bad_setup = !registered || prc || drc, any_bad = 0;
    MPI_Allreduce(&bad_setup, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (drc)
      fprintf(stderr, "cholesky_mpi: rank %d: weft_mpi_detach: %d (%s)\n", rank, drc,
              weft_strerror(drc));
    if (any_bad) {
      status = 2;
    } else if (o.not_spd) {
      status = not_spd_reported(&c, wrc, (size_t)o.bad / o.b) ? 0 : 1;
    } else if (wrc) {
      if (rank == 0)
        fprintf(stderr, "cholesky_mpi: FAILED: weft_mpi_wait_all returned %d (%s)\n", wrc,
                weft_strerror(wrc));
      status = 1;
    } else {
      status = o.check && !gather_and_check(&c, &o, checks, sizeof checks) ? 1 : 0;
      /* The slowest rank's time, rep by rep. */
      MPI_Reduce(t, tmax, reps_done, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      unsigned long long mv[2] = {st.sends, st.bytes_sent}, total[2] = {0, 0};
      MPI_Reduce(mv, total, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        qsort(tmax, (size_t)reps_done, sizeof *tmax, tiles_cmp_double);
        double flops = (double)o.n * (double)o.n * (double)o.n / 3.0;
        double med = tmax[reps_done / 2], lo = tmax[0], hi = tmax[reps_done - 1];
        printf("cholesky_mpi: n %zu b %zu %s, %d ranks x %d threads: %.1f ms [%.1f-%.1f], "
               "%.2f GFLOP/s [%.2f-%.2f], %dx%d grid, %zu operators, %llu transfers "
               "(%.1f MiB) per factorization%s%s\n",
               o.n, o.b, o.prec == PREC_FLOAT ? "float" : "double", size,
               weft_pool_num_threads(pool), med * 1e3, lo * 1e3, hi * 1e3, flops / med * 1e-9,
               flops / hi * 1e-9, flops / lo * 1e-9, c.p, c.q, c.nops,
               total[0] / (unsigned long long)reps_done,
               (double)total[1] / reps_done / (1024.0 * 1024.0), checks,
               status ? ": FAILED" : "");
        fflush(stdout);
      }
    }
  }

  if (c.var && eng)
    for (size_t i = 0; i < nt; i++)
      for (size_t j = 0; j <= i; j++)
        if (c.var[i * nt + j])
          weft_var_delete(eng, c.var[i * nt + j]);
  if (eng)
    weft_engine_destroy(eng);
  if (pool)
    weft_pool_destroy(pool);
  free(t);
  free(tmax);
  free(c.var);
  free(c.ops);
  tiled_free(&mine);
  MPI_Finalize();
  return status;
}
