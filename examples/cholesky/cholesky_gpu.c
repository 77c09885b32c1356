/* SPDX-License-Identifier: MIT */
/*
 * The tiled Cholesky of cholesky.c (A = L L^T, lower, right-looking, one
 * weft var per tile, the operators in the sequential algorithm's order of
 * plan.c) with its tiles resident on a GPU: GEMM, SYRK and TRSM through
 * cuBLAS and POTRF through cuSOLVER, one weft GPU operator per tile kernel
 * (ctx {WEFT_DEV_GPU, 0}), whose fn enqueues the call on the operator's
 * stream (rc->stream) and returns; weft tracks completion. Compared, in the
 * same process, with one cusolverDn?potrf call on the whole matrix.
 *
 *   cholesky_gpu [--n N] [--b B] [--prec double|float] [--mode M]
 *                [--backend cuda|host] [--reps R] [--threads T]
 *                [--gpu-workers W] [--check] [--not-spd] [--seed S]
 *
 *   --n, --b     matrix order and tile size (b divides n); 16384, 1024
 *   --mode       where the kernels run:
 *                  gpu            all four on the GPU
 *                  hybrid         POTRF on a CPU worker (LAPACKE on a host copy
 *                                 of the tile), TRSM, SYRK and GEMM on the GPU:
 *                                 MAGMA's hybrid ?potrf, which gives the CPU the
 *                                 diagonal block, the kernel a GPU runs worst
 *                                 (small, latency-bound), while the GPU's
 *                                 updates of step k go on
 *                  hybrid-panel   POTRF and the panel's TRSMs on CPU workers, the
 *                                 trailing updates (SYRK, GEMM) on the GPU
 *                  cpu-reference  all four on CPU workers, through the very same
 *                                 call descriptions (tile_call.h) run by CBLAS
 *                                 and LAPACKE: proves the argument mapping
 *                                 against LAPACK's ?potrf without a device
 *                In the hybrid modes each tile's value is tracked at plan time
 *                (device, host, or both); a kernel on the other side gets a weft
 *                copy operator first (WEFT_PROP_COPY_FROM_GPU / COPY_TO_GPU into
 *                pinned host copies of the tiles), and a tile left newest on the
 *                host is copied back at the end. Those copies are timed.
 *   --backend    cuda (default), or host: weft's emulated devices
 *                (WEFT_GPU_BACKEND=host) with CBLAS calls on the emulated
 *                streams and LAPACK as the reference: every operator, copy
 *                and check of the program runs on a machine without a GPU
 *   --reps       timed factorisations (after one untimed, which loads the
 *                libraries' kernels); 3. The reference runs as many.
 *   --gpu-workers  WEFT_GPU_WORKERS (compute streams); weft's default
 *   --threads    CPU workers (default: weft's automatic count)
 *   --check      also ||A - L L^T||_F / (||A||_F n eps) < 10 on the last
 *                factor (host, OpenBLAS on every core)
 *   --not-spd    row n/2 is made indefinite: the first failing POTRF must be
 *                tile (n/2)/b's, at the reference's row; exit 0 only then
 *
 * Timed: weft from the first push to weft_wait_all's return, with the tiles
 * already on the device (uploaded with cudaMemcpy before, downloaded after,
 * untimed); the reference from its call to its stream's synchronisation,
 * its matrix uploaded and its workspace allocated before. Each factor is
 * compared with the reference's (max |L - L_ref| / max |L_ref| < 1e-10 in
 * double, 1e-3 in float: the CPU example's bounds against LAPACK), and
 * every POTRF's devInfo (info) is read back after the run and must be 0.
 *
 * Prints one line of figures and checks, then one JSON line (the bench
 * driver's: bench/cholesky/run_gpu.py). GFLOP/s count n^3/3. Exit status 0
 * when every check passed, 1 when one failed (not SPD included, without
 * --not-spd), 2 on bad arguments or setup failure, 77 without a CUDA device
 * (checked before anything else touches CUDA).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <weft/weft.h>

#include "gpu_run.h"

typedef struct options {
  size_t n, b;
  precision prec;
  run_mode mode;
  const char *backend;
  int reps, threads, gpu_workers;
  bool check, not_spd;
  unsigned long long seed;
} options;

/* --------------------------------------------------------------- options */

static void usage(const char *why)
{
  if (why)
    fprintf(stderr, "cholesky_gpu: %s\n", why);
  fprintf(stderr, "usage: cholesky_gpu [--n N] [--b B (dividing N)] [--prec double|float] "
                  "[--mode gpu|hybrid|hybrid-panel|cpu-reference] [--backend cuda|host] "
                  "[--reps R (1-1000)] [--threads T] [--gpu-workers W (1-64)] [--check] "
                  "[--not-spd] [--seed S]\n");
  exit(2);
}

static unsigned long long number(const char *opt, const char *s)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || s[0] == '-') {
    char why[160];
    snprintf(why, sizeof why, "%s takes a non-negative integer, not \"%s\"", opt, s);
    usage(why);
  }
  return v;
}

/* A number from lo to hi. */
static int bounded(const char *opt, const char *s, unsigned long long lo, unsigned long long hi)
{
  unsigned long long v = number(opt, s);
  if (v < lo || v > hi) {
    char why[160];
    snprintf(why, sizeof why, "%s must be %llu to %llu, not %s", opt, lo, hi, s);
    usage(why);
  }
  return (int)v;
}

static int pick(const char *opt, const char *v, const char *const *names, int n)
{
  for (int k = 0; k < n; k++)
    if (!strcmp(v, names[k]))
      return k;
  char why[160];
  snprintf(why, sizeof why, "%s: unknown value \"%s\"", opt, v);
  usage(why);
  return -1;
}

static options parse(int argc, char **argv)
{
  static const char *const precs[] = {"float", "double"}, *const backends[] = {"cuda", "host"};
  options o = {16384, 1024, PREC_DOUBLE, MODE_GPU, "cuda", 3, 0, 0, false, false, 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check"))
      o.check = true;
    else if (!strcmp(a, "--not-spd"))
      o.not_spd = true;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
      usage(NULL);
    else if (strncmp(a, "--", 2) || !strcmp(a, "--"))
      usage("arguments are options (--name value)");
    else if (!v) {
      char why[160];
      snprintf(why, sizeof why, "%s takes a value (or is unknown)", a);
      usage(why);
    } else if (!strcmp(a, "--n"))
      o.n = (size_t)number(a, v), i++;
    else if (!strcmp(a, "--b"))
      o.b = (size_t)number(a, v), i++;
    else if (!strcmp(a, "--reps"))
      o.reps = bounded(a, v, 1, 1000), i++;
    else if (!strcmp(a, "--threads"))
      o.threads = bounded(a, v, 0, 4096), i++; /* 0: automatic */
    else if (!strcmp(a, "--gpu-workers"))
      o.gpu_workers = bounded(a, v, 1, 64), i++; /* WEFT_GPU_WORKERS' range */
    else if (!strcmp(a, "--seed"))
      o.seed = number(a, v), i++;
    else if (!strcmp(a, "--prec") || !strcmp(a, "--precision"))
      o.prec = (precision)pick(a, v, precs, 2), i++;
    else if (!strcmp(a, "--mode"))
      o.mode = (run_mode)pick(a, v, run_mode_names, 4), i++;
    else if (!strcmp(a, "--backend"))
      o.backend = backends[pick(a, v, backends, 2)], i++;
    else {
      char why[160];
      snprintf(why, sizeof why, "unknown option %s", a);
      usage(why);
    }
  }
  if (o.b == 0 || o.n == 0 || o.n % o.b)
    usage("--b must be at least 1 and divide --n");
  /* The reference indexes the whole matrix with an int (cuSOLVER's and
   * LAPACKE's 32-bit interfaces). */
  if (o.n > 46340)
    usage("--n must be at most 46340 (the reference's n * n must fit an int)");
  return o;
}

/* ----------------------------------------------------------------- checks */

/* With --not-spd: the first POTRF that failed is the bad tile's, at the
 * reference's row; a CPU POTRF's failure reached weft_wait_all and the
 * POTRFs after it never ran (all depend on it); a device POTRF's failure is
 * in its devInfo only, and the later ones ran (on garbage). */
static bool not_spd_reported(const run *r, int wrc, int ref_info)
{
  size_t bad = r->work->n / 2, bad_tile = bad / r->b, first = r->nt;
  bool cpu = on_cpu(r->mode, OP_POTRF), ok = true;
  for (size_t k = 0; k < r->nt; k++) {
    int info = r->info_host[k];
    if (first == r->nt && info > 0)
      first = k;
    else if (first == r->nt)
      ok &= info == 0; /* those before it ran and passed */
    else
      ok &= cpu ? info == -1 : info >= 0; /* those after: skipped (CPU), run (device) */
  }
  long order = first < r->nt ? (long)(first * r->b) + r->info_host[first] : -1;
  ok &= first == bad_tile && order == (long)bad + 1 && ref_info == (int)bad + 1 &&
        wrc == (cpu ? CHOL_NOT_SPD : 0);
  printf("cholesky_gpu: not SPD: the first failing POTRF is tile %ld's (%s), leading minor of "
         "order %ld (expected tile %zu, order %zu; the reference's info %d); weft_wait_all "
         "returned %d: %s\n",
         first < r->nt ? (long)first : -1L, cpu ? "CPU" : "device", order, bad_tile, bad + 1,
         ref_info, wrc, ok ? "ok" : "FAILED");
  return ok;
}

/* Every POTRF ran and passed. */
static bool infos_ok(const run *r)
{
  for (size_t k = 0; k < r->nt; k++)
    if (r->info_host[k] != 0) {
      fprintf(stderr, "cholesky_gpu: FAILED: POTRF of tile %zu: info %d (%s)\n", k, r->info_host[k],
              r->info_host[k] < 0 ? "never ran" : "a leading minor is not positive definite");
      return false;
    }
  return true;
}

/* What a failed run's weft_wait_all status means. */
static const char *status_name(int rc)
{
  if (rc == CHOL_NOT_SPD)
    return "a CPU POTRF found its tile not positive definite";
  if (rc == -1)
    return "an operator failed: its message is above";
  return weft_strerror(rc); /* WEFT_EDEVICE: the device failed (the CUDA error is in the log) */
}

static void stats(double *t, int n, double flops, double g[3])
{
  qsort(t, (size_t)n, sizeof *t, tiles_cmp_double);
  g[0] = flops / t[n / 2] * 1e-9; /* median, min, max GFLOP/s */
  g[1] = flops / t[n - 1] * 1e-9;
  g[2] = flops / t[0] * 1e-9;
}

/* ------------------------------------------------------------------- main */

int main(int argc, char **argv)
{
  options o = parse(argc, argv);
  bool device = o.mode != MODE_CPU_REF, cuda = device && !strcmp(o.backend, "cuda");
  if (cuda) { /* before anything else touches CUDA, cuBLAS or cuSOLVER */
    char why[128] = "";
    if (gpu_cuda_devices(why, sizeof why) < 1) {
      printf("cholesky_gpu: no CUDA device (%s): skipped\n", why);
      return 77;
    }
  }
  if (tiles_blas_init())
    return 2;
  const gpu_dev *dev = !device ? NULL : cuda ? gpu_dev_cuda() : gpu_dev_host();
  const gpu_dev *ref = dev ? dev : gpu_dev_host(); /* cpu-reference: LAPACK */
  setenv("WEFT_GPU_BACKEND", device ? o.backend : "none", 1);
  if (o.gpu_workers) {
    char w[16];
    snprintf(w, sizeof w, "%d", o.gpu_workers);
    setenv("WEFT_GPU_WORKERS", w, 1);
  }

  tiled a, work;
  size_t n = o.n, esize = o.prec == PREC_FLOAT ? sizeof(float) : sizeof(double);
  void *factor = malloc(n * n * esize); /* the reference's */
  int reps = o.not_spd ? 0 : o.reps;
  double *t = calloc((size_t)o.reps, sizeof *t), *rt = calloc((size_t)o.reps, sizeof *rt);
  if (tiled_alloc(&a, o.prec, n, o.b) || tiled_alloc(&work, o.prec, n, o.b) || !factor || !t ||
      !rt) {
    fprintf(stderr, "cholesky_gpu: out of memory\n");
    return 2;
  }
  size_t bad = o.n / 2;
  tiled_fill_spd(&a, o.seed, o.not_spd ? (long)bad : -1);

  /* The reference first, alone on the device. */
  int ref_info = -1;
  if (ref->reference(&a, reps, rt, factor, &ref_info)) {
    fprintf(stderr, "cholesky_gpu: FAILED: the reference (%s) failed\n", ref->ref_name(o.prec));
    return 1;
  }

  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = o.threads;
  pc.name = "cholgpu";
  weft_pool *pool = NULL;
  weft_engine *eng = NULL;
  int rc = weft_pool_create(&pool, &pc);
  weft_engine_config ec;
  weft_engine_config_default(&ec);
  ec.pool = pool;
  if (!rc)
    rc = weft_engine_create(&eng, &ec);
  if (rc) {
    fprintf(stderr, "cholesky_gpu: weft: %s\n", weft_strerror(rc));
    return 2;
  }
  if (device && weft_gpu_count(eng) < 1) {
    printf("cholesky_gpu: weft sees no device on the %s backend: %s\n", o.backend,
           cuda ? "skipped" : "FAILED");
    weft_engine_destroy(eng);
    weft_pool_destroy(pool);
    return cuda ? 77 : 2;
  }

  run r = {.mode = o.mode,
           .prec = o.prec,
           .dev = dev,
           .nt = a.nt,
           .b = o.b,
           .tile_bytes = o.b * o.b * esize,
           .work = &work};
  if (run_alloc(&r, eng)) {
    fprintf(stderr, "cholesky_gpu: setting up the run failed (out of memory?)\n");
    return 2;
  }
  if (dev) {
    gpu_streams_init(dev, (gpu_stream_cfg){o.prec, o.b, r.dtile[0]});
    rc = push_prepare(eng);
    int wrc = weft_wait_all(eng);
    if (rc || wrc) {
      fprintf(stderr, "cholesky_gpu: FAILED: making the streams' handles: push %s, wait %d (%s)\n",
              weft_strerror(rc), wrc, status_name(wrc));
      return 1;
    }
  }

  bool ok = true;
  double vs_ref = 0, residual = -1;
  int wrc = 0;
  /* it 0: untimed (the libraries load their kernels), then the timed reps;
   * --not-spd: one run. Every run is checked. */
  for (int it = 0; it <= reps && ok; it++) {
    bool timed = it > 0;
    if (run_reset(&r, &a)) {
      fprintf(stderr, "cholesky_gpu: FAILED: uploading the matrix (run %d)\n", it);
      ok = false;
      break;
    }
    gpu_streams_timed(timed);
    double t0 = tiles_now_s();
    rc = push_all(eng, &r);
    wrc = weft_wait_all(eng);
    double t1 = tiles_now_s();
    gpu_streams_timed(false);
    if (rc) {
      fprintf(stderr, "cholesky_gpu: weft_push: %s\n", weft_strerror(rc));
      return 2;
    }
    if (run_collect(&r)) {
      fprintf(stderr, "cholesky_gpu: FAILED: reading the factor back (run %d)\n", it);
      ok = false;
      break;
    }
    if (o.not_spd) {
      ok = not_spd_reported(&r, wrc, ref_info);
      break;
    }
    if (wrc) {
      fprintf(stderr, "cholesky_gpu: FAILED: weft_wait_all returned %d (%s)\n", wrc,
              status_name(wrc));
      ok = false;
      break;
    }
    if (ref_info) {
      fprintf(stderr, "cholesky_gpu: FAILED: the reference's info is %d\n", ref_info);
      ok = false;
      break;
    }
    ok = infos_ok(&r);
    double d = tiles_vs_full(&work, factor), bound = o.prec == PREC_FLOAT ? 1e-3 : 1e-10;
    vs_ref = d > vs_ref ? d : vs_ref;
    if (!(d < bound)) {
      fprintf(stderr, "cholesky_gpu: FAILED: run %d: L differs from %s's by %.3g (bound %g)\n", it,
              ref->ref_name(o.prec), d, bound);
      ok = false;
    }
    if (timed)
      t[it - 1] = t1 - t0;
  }
  if (ok && o.check && !o.not_spd) {
    residual = tiled_residual(&a, &work);
    if (!(residual >= 0 && residual < 10)) {
      fprintf(stderr, "cholesky_gpu: FAILED: residual %.3g (bound 10)\n", residual);
      ok = false;
    }
  }

  /* Where the kernels went: weft sends a GPU operator to the stream of a
   * predecessor it waits for, so the streams' shares show how much of the
   * device work could overlap. */
  long calls[64] = {0};
  int nstreams = dev ? gpu_streams_calls(calls, 64) : 0, late = dev ? gpu_streams_late() : 0;
  char shares[64 * 24] = "", *sp = shares;
  for (int k = 0; k < nstreams; k++)
    sp += snprintf(sp, sizeof shares - (size_t)(sp - shares), "%s%ld", k ? "," : "", calls[k]);
  if (dev)
    gpu_streams_close(); /* the engine drained; its streams still live */
  run_free(&r, eng);
  int drc = weft_engine_destroy(eng);
  weft_pool_destroy(pool);
  run_release(&r);
  if (drc && !o.not_spd) {
    fprintf(stderr, "cholesky_gpu: FAILED: weft_engine_destroy returned %d\n", drc);
    ok = false;
  }

  if (ok && !o.not_spd) {
    double flops = (double)n * (double)n * (double)n / 3.0, g[3], rg[3];
    stats(t, o.reps, flops, g);
    stats(rt, o.reps, flops, rg);
    const char *prec = o.prec == PREC_FLOAT ? "float" : "double", *rn = ref->ref_name(o.prec);
    printf("cholesky_gpu: %s mode, %s backend, n %zu b %zu %s, %zu kernels + %zu copies, %d "
           "compute streams (device kernels of the timed runs on each: %s; handles made while "
           "timed: %d): weft %.1f ms [%.1f-%.1f], %.1f GFLOP/s [%.1f-%.1f]; %s %.1f ms "
           "[%.1f-%.1f], %.1f GFLOP/s [%.1f-%.1f]; ratio %.3f; vs %s %.3g",
           run_mode_names[o.mode], dev ? dev->name : "no", n, o.b, prec, r.nkernels, r.ncopies,
           nstreams, nstreams ? shares : "-", late, t[o.reps / 2] * 1e3, t[0] * 1e3,
           t[o.reps - 1] * 1e3, g[0], g[1], g[2], rn, rt[o.reps / 2] * 1e3, rt[0] * 1e3,
           rt[o.reps - 1] * 1e3, rg[0], rg[1], rg[2], g[0] / rg[0], rn, vs_ref);
    if (o.check)
      printf(", residual %.3g", residual);
    printf("\n");
    printf("{\"bench\":\"cholesky_gpu\",\"mode\":\"%s\",\"backend\":\"%s\",\"prec\":\"%s\","
           "\"n\":%zu,\"b\":%zu,\"reps\":%d,\"gpu_workers\":%d,\"kernels\":%zu,\"copies\":%zu,"
           "\"streams\":%d,\"stream_kernels\":[%s],\"late_streams\":%d,"
           "\"weft_gflops\":[%.2f,%.2f,%.2f],"
           "\"weft_ms\":[%.3f,%.3f,%.3f],\"ref\":\"%s\",\"ref_gflops\":[%.2f,%.2f,%.2f],"
           "\"ref_ms\":[%.3f,%.3f,%.3f],\"ratio\":%.4f,\"vs_ref\":%.3g,\"residual\":",
           run_mode_names[o.mode], dev ? dev->name : "none", prec, n, o.b, o.reps, o.gpu_workers,
           r.nkernels, r.ncopies, nstreams, shares, late, g[0], g[1], g[2], t[o.reps / 2] * 1e3,
           t[0] * 1e3, t[o.reps - 1] * 1e3, rn, rg[0], rg[1], rg[2], rt[o.reps / 2] * 1e3,
           rt[0] * 1e3, rt[o.reps - 1] * 1e3, g[0] / rg[0], vs_ref);
    if (o.check)
      printf("%.3g}\n", residual);
    else
      printf("null}\n");
  }
  tiled_free(&a);
  tiled_free(&work);
  free(factor);
  free(t);
  free(rt);
  return ok ? 0 : 1;
}
