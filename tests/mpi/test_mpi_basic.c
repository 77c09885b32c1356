/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi (src/mpi) under mpirun: the calls' contract, transfers and their
 * cache, write-back to the owner, failures across ranks, sequence mismatch,
 * var deletion, derived datatypes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_tap.h"
#include <weft/weft_mpi.h>

typedef struct env {
  weft_engine *eng;
  weft_mpi *mpi;
} env;

static void up(mt_ctx *t, env *e)
{
  MT_CHECK(t, weft_engine_create(&e->eng, NULL) == 0, "engine");
  MT_CHECK(t, weft_mpi_attach(e->eng, MPI_COMM_WORLD, NULL, &e->mpi) == 0, "attach");
}

static void down(mt_ctx *t, env *e, int want)
{
  int rc = weft_mpi_detach(e->mpi);
  MT_CHECK(t, rc == want, "detach returned %d, want %d", rc, want);
  MT_CHECK(t, weft_engine_destroy(e->eng) == 0 || want, "engine destroy");
}

static weft_var *new_var(mt_ctx *t, env *e, int owner, void *buf, int count, MPI_Datatype type)
{
  weft_var *v = NULL;
  MT_CHECK(t, weft_var_new(e->eng, &v) == 0, "var_new");
  int rc = weft_mpi_var_register(e->mpi, v, owner, t->rank == owner ? buf : NULL, count, type);
  MT_CHECK(t, rc == 0, "register (owner %d): %d", owner, rc);
  return v;
}

/* ------------------------------------------------------------------ cases */

static void nop_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  (void)arg;
  weft_done_signal(done, 0);
}

/* With WEFT_MPI_TIMEOUT_MS=value (on every rank) attach fails with
 * WEFT_EINVAL, leaves no attachment, and prints a line naming the variable
 * and the value. */
static void attach_env_einval(mt_ctx *t, weft_engine *eng, const char *value)
{
  setenv("WEFT_MPI_TIMEOUT_MS", value, 1);
  fflush(stderr);
  char path[] = "/tmp/weft-mpi-env-XXXXXX";
  int file = mkstemp(path), saved = dup(2);
  MT_CHECK(t, file >= 0 && saved >= 0, "mkstemp/dup");
  unlink(path);
  dup2(file, 2); /* stderr to a file (not a pipe: nothing can block on it) */
  weft_mpi *mpi = (weft_mpi *)&mpi;
  int rc = weft_mpi_attach(eng, MPI_COMM_WORLD, NULL, &mpi);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char err[2048];
  ssize_t n = pread(file, err, sizeof err - 1, 0);
  err[n > 0 ? (size_t)n : 0] = '\0';
  close(file);
  unsetenv("WEFT_MPI_TIMEOUT_MS");
  MT_CHECK(t, rc == WEFT_EINVAL, "WEFT_MPI_TIMEOUT_MS=\"%s\": attach = %d, not WEFT_EINVAL",
           value, rc);
  MT_CHECK(t, mpi == NULL, "WEFT_MPI_TIMEOUT_MS=\"%s\": out not cleared on failure", value);
  if (rc == 0 && mpi)
    weft_mpi_detach(mpi);
  char named[64];
  snprintf(named, sizeof named, "malformed WEFT_MPI_TIMEOUT_MS=\"%s\"", value);
  MT_CHECK(t, strstr(err, named) != NULL,
           "WEFT_MPI_TIMEOUT_MS=\"%s\": no line naming the variable and the value; stderr "
           "was \"%s\"",
           value, err);
}

static void bad_input(mt_ctx *t)
{
  env e;
  MT_CHECK(t, weft_engine_create(&e.eng, NULL) == 0, "engine");
  weft_mpi_config cfg;
  weft_mpi_config_default(&cfg);
  cfg.reserved[3] = &cfg;
  MT_CHECK(t, weft_mpi_attach(e.eng, MPI_COMM_WORLD, &cfg, &e.mpi) == WEFT_EINVAL, "reserved");
  weft_mpi_config_default(&cfg);
  cfg.timeout_ms = -5;
  MT_CHECK(t, weft_mpi_attach(e.eng, MPI_COMM_WORLD, &cfg, &e.mpi) == WEFT_EINVAL, "timeout");
  /* Read by the library's one integer reader (src/common/env.h), with the
   * rules and the message of WEFT_NUM_THREADS and the rest: spaces around
   * the number are malformed too (a raw strtol once took " 5"). */
  const char *bad[] = {"12x", " 5", "\t5", "\n5", "5 ", "0x10", "1e3", "-1", "86400001", "+"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    attach_env_einval(t, e.eng, bad[i]);
  /* A bad value on one rank only: every rank's attach fails, none hangs. */
  if (t->rank == t->size - 1)
    setenv("WEFT_MPI_TIMEOUT_MS", "-3", 1);
  MT_CHECK(t, weft_mpi_attach(e.eng, MPI_COMM_WORLD, NULL, &e.mpi) == WEFT_EINVAL,
           "attach with a bad value on the last rank");
  MT_CHECK(t, e.mpi == NULL, "out cleared on failure");
  unsetenv("WEFT_MPI_TIMEOUT_MS");
  MT_CHECK(t, weft_mpi_attach(NULL, MPI_COMM_WORLD, NULL, &e.mpi) == WEFT_EINVAL, "NULL eng");
  MT_CHECK(t, weft_mpi_attach(e.eng, MPI_COMM_WORLD, NULL, &e.mpi) == 0, "attach");
  MT_CHECK(t, weft_mpi_rank(e.mpi) == t->rank && weft_mpi_size(e.mpi) == t->size, "rank/size");
  MT_CHECK(t, weft_mpi_rank(NULL) == WEFT_EINVAL, "rank(NULL)");

  int buf[4] = {0};
  weft_var *v = NULL, *loose = NULL;
  weft_var_new(e.eng, &v);
  weft_var_new(e.eng, &loose);
  MT_CHECK(t, weft_mpi_var_register(e.mpi, v, -1, buf, 4, MPI_INT) == WEFT_EINVAL, "owner -1");
  MT_CHECK(t, weft_mpi_var_register(e.mpi, v, t->size, buf, 4, MPI_INT) == WEFT_EINVAL,
           "owner = size");
  MT_CHECK(t, weft_mpi_var_register(e.mpi, v, 0, buf, 0, MPI_INT) == WEFT_EINVAL, "count 0");
  void *mybuf = t->rank == 0 ? buf : NULL;
  MT_CHECK(t, weft_mpi_var_register(e.mpi, v, 0, mybuf, 4, MPI_INT) == 0, "register");
  MT_CHECK(t, weft_mpi_var_register(e.mpi, v, 0, mybuf, 4, MPI_INT) == WEFT_EINVAL, "twice");
  MT_CHECK(t, weft_mpi_var_owner(e.mpi, v) == 0, "owner");
  MT_CHECK(t, weft_mpi_var_owner(e.mpi, loose) == WEFT_EINVAL, "owner of unregistered");
  MT_CHECK(t, weft_mpi_var_data(e.mpi, loose) == NULL, "data of unregistered");
  MT_CHECK(t, weft_mpi_var_data(e.mpi, v) == (t->rank == 0 ? (void *)buf : NULL), "data");

  weft_op_desc d = {0};
  d.fn = mt_nop;
  d.writes = &loose;
  d.num_writes = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == WEFT_EINVAL, "unregistered var");
  d.writes = &v;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, t->size) == WEFT_EINVAL, "exec_rank = size");
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, -7) == WEFT_EINVAL, "exec_rank -7");
  d.ctx.type = WEFT_DEV_GPU;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == WEFT_EINVAL, "GPU ctx");
  d.ctx.type = WEFT_DEV_CPU;
  d.fn = NULL;
  d.async_fn = nop_async;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == WEFT_EINVAL, "async_fn");
  d.fn = mt_nop;
  d.async_fn = NULL;
  d.writes = NULL;
  d.num_writes = 0;
  d.reads = &v;
  d.num_reads = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == WEFT_EINVAL, "reads only, no rank");
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, t->size - 1) == 0, "reads only, a rank");
  MT_CHECK(t, weft_mpi_push(NULL, &d, 0) == WEFT_EINVAL, "NULL mpi");
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  weft_mpi_stats st;
  MT_CHECK(t, weft_mpi_get_stats(e.mpi, &st) == 0, "stats");
  MT_CHECK(t, st.ops_pushed == (t->rank == t->size - 1), "ops_pushed %llu",
           (unsigned long long)st.ops_pushed);
  down(t, &e, 0);
}

/* x[r] owned by r; R rounds, each: for r in order, on r: x[r] = x[r-1] + r + 1. */
typedef struct ring_op {
  weft_mpi *mpi;
  weft_var *in, *out;
} ring_op;

static int ring_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  ring_op *o = arg;
  const int64_t *in = weft_mpi_var_data(o->mpi, o->in);
  int64_t *out = weft_mpi_var_data(o->mpi, o->out);
  int64_t add = (int64_t)weft_mpi_rank(o->mpi) + 1;
  for (int k = 0; k < 8; k++)
    out[k] = (in[k] * 3 + add + k) % 1000003;
  return 0;
}

static void ring(mt_ctx *t)
{
  enum { R = 40 };
  env e;
  up(t, &e);
  int n = t->size;
  int64_t mine[8] = {0};
  weft_var **x = calloc((size_t)n, sizeof *x);
  for (int r = 0; r < n; r++)
    x[r] = new_var(t, &e, r, mine, 8, MPI_INT64_T);
  /* One per push: an operator may run after the next round's push. */
  ring_op *ops = calloc((size_t)R * (size_t)(n > 0 ? n : 1), sizeof *ops);
  for (int round = 0; round < R; round++)
    for (int r = 0; r < n; r++) {
      ring_op *o = &ops[round * n + r];
      *o = (ring_op){e.mpi, x[(r + n - 1) % n], x[r]};
      weft_op_desc d = {0};
      d.fn = ring_fn;
      d.arg = o;
      d.reads = &o->in;
      d.num_reads = 1;
      d.writes = &o->out;
      d.num_writes = 1;
      MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == 0, "push");
    }
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  /* The same sequence, serially. */
  int64_t (*ref)[8] = calloc((size_t)n, sizeof *ref);
  for (int round = 0; round < R; round++)
    for (int r = 0; r < n; r++) {
      for (int k = 0; k < 8; k++)
        ref[r][k] = (ref[(r + n - 1) % n][k] * 3 + r + 1 + k) % 1000003;
    }
  for (int k = 0; k < 8; k++)
    MT_CHECK(t, mine[k] == ref[t->rank][k], "x[%d][%d] = %lld, want %lld", t->rank, k,
             (long long)mine[k], (long long)ref[t->rank][k]);
  weft_mpi_stats st;
  weft_mpi_get_stats(e.mpi, &st);
  if (n > 1)
    MT_CHECK(t, st.recvs == (uint64_t)R && st.sends == (uint64_t)R, "recvs %llu sends %llu",
             (unsigned long long)st.recvs, (unsigned long long)st.sends);
  down(t, &e, 0);
  free(ref);
  free(ops);
  free(x);
}

typedef struct sum_op {
  weft_mpi *mpi;
  weft_var *in, *out;
  int scale;
} sum_op;

static int sum_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  sum_op *o = arg;
  int *out = weft_mpi_var_data(o->mpi, o->out);
  if (o->in) {
    const int *in = weft_mpi_var_data(o->mpi, o->in);
    int s = 0;
    for (int k = 0; k < 16; k++)
      s += in[k];
    out[0] = s;
  } else {
    for (int k = 0; k < 16; k++)
      out[k] = o->scale * (k + 1);
  }
  return 0;
}

static void push_sum(mt_ctx *t, env *e, sum_op *o, int exec)
{
  MT_CHECK(t, mt_push(e->mpi, sum_fn, o, o->in, o->out, 0, exec) == 0, "push");
}

static void cache_reuse(mt_ctx *t)
{
  env e;
  up(t, &e);
  int a[16], out[16] = {0};
  weft_var *va = new_var(t, &e, 0, a, 16, MPI_INT);
  weft_var *vo = new_var(t, &e, 1, out, 16, MPI_INT);
  sum_op fill = {e.mpi, NULL, va, 1}, sum = {e.mpi, va, vo, 0};
  push_sum(t, &e, &fill, WEFT_MPI_OWNER);
  for (int i = 0; i < 3; i++)
    push_sum(t, &e, &sum, WEFT_MPI_OWNER);
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  weft_mpi_stats st;
  weft_mpi_get_stats(e.mpi, &st);
  if (t->rank == 1) {
    MT_CHECK(t, out[0] == 136, "sum %d, want 136", out[0]);
    MT_CHECK(t, st.recvs == 1 && st.cache_hits == 2, "recvs %llu hits %llu, want 1 and 2",
             (unsigned long long)st.recvs, (unsigned long long)st.cache_hits);
  }
  if (t->rank == 0)
    MT_CHECK(t, st.sends == 1 && st.bytes_sent == sizeof a, "sends %llu bytes %llu",
             (unsigned long long)st.sends, (unsigned long long)st.bytes_sent);
  /* The owner writes: the copy on rank 1 is stale, the next read fetches. */
  fill.scale = 2;
  push_sum(t, &e, &fill, WEFT_MPI_OWNER);
  push_sum(t, &e, &sum, WEFT_MPI_OWNER);
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  weft_mpi_get_stats(e.mpi, &st);
  if (t->rank == 1)
    MT_CHECK(t, out[0] == 272 && st.recvs == 2, "sum %d recvs %llu, want 272 and 2", out[0],
             (unsigned long long)st.recvs);
  down(t, &e, 0);
}

static void write_elsewhere(mt_ctx *t)
{
  env e;
  up(t, &e);
  int a[16] = {0}, out[16] = {0};
  int last = t->size - 1;
  weft_var *va = new_var(t, &e, 0, a, 16, MPI_INT);
  weft_var *vo = new_var(t, &e, last, out, 16, MPI_INT);
  sum_op fill = {e.mpi, NULL, va, 5}, sum = {e.mpi, va, vo, 0};
  push_sum(t, &e, &fill, last); /* rank `last` writes rank 0's var */
  push_sum(t, &e, &sum, WEFT_MPI_OWNER); /* on `last`: its own copy is valid */
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  if (t->rank == 0)
    for (int k = 0; k < 16; k++)
      MT_CHECK(t, a[k] == 5 * (k + 1), "owner's a[%d] = %d after a write on rank %d", k, a[k],
               last);
  weft_mpi_stats st;
  weft_mpi_get_stats(e.mpi, &st);
  if (t->rank == last)
    MT_CHECK(t, out[0] == 680 && st.cache_hits == (t->size > 1), "sum %d hits %llu", out[0],
             (unsigned long long)st.cache_hits);
  down(t, &e, 0);
}

typedef struct flag_op {
  weft_mpi *mpi;
  int status;
  int ran;
} flag_op;

static int flag_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  flag_op *o = arg;
  o->ran++;
  return o->status;
}

static void push_flag(mt_ctx *t, env *e, flag_op *o, weft_var *in, weft_var *out,
                      unsigned flags)
{
  MT_CHECK(t, mt_push(e->mpi, flag_fn, o, in, out, flags, WEFT_MPI_OWNER) == 0, "push");
}

static void failure_everywhere(mt_ctx *t)
{
  env e;
  up(t, &e);
  int last = t->size - 1;
  int x[4] = {0}, y[4] = {0}, z[4] = {0}, w[4] = {0};
  weft_var *vx = new_var(t, &e, 0, x, 4, MPI_INT);
  weft_var *vy = new_var(t, &e, last, y, 4, MPI_INT);
  weft_var *vz = new_var(t, &e, 0, z, 4, MPI_INT);
  weft_var *vw = new_var(t, &e, last, w, 4, MPI_INT);
  flag_op a = {e.mpi, 77, 0}, b = {0}, c = {0}, f = {0};
  push_flag(t, &e, &a, NULL, vx, 0);           /* fails on 0 */
  push_flag(t, &e, &b, vx, vy, 0);             /* on last: skipped */
  push_flag(t, &e, &c, vy, vz, 0);             /* back on 0: skipped */
  push_flag(t, &e, &f, vx, vw, WEFT_OP_NOSKIP); /* on last: runs */
  int rc = weft_mpi_wait_all(e.mpi);
  MT_CHECK(t, rc == 77, "wait_all returned %d on rank %d, want 77", rc, t->rank);
  MT_CHECK(t, b.ran == 0 && c.ran == 0, "skipped operators ran: %d %d", b.ran, c.ran);
  if (t->rank == last)
    MT_CHECK(t, f.ran == 1, "the NOSKIP operator ran %d times", f.ran);
  /* Failures are cleared: the same vars work again. */
  a.status = 0;
  push_flag(t, &e, &a, NULL, vx, 0);
  push_flag(t, &e, &b, vx, vy, 0);
  push_flag(t, &e, &c, vy, vz, 0);
  rc = weft_mpi_wait_all(e.mpi);
  MT_CHECK(t, rc == 0, "second wait_all returned %d", rc);
  if (t->rank == last)
    MT_CHECK(t, b.ran == 1, "b ran %d", b.ran);
  if (t->rank == 0)
    MT_CHECK(t, c.ran == 1 && a.ran == 2, "c ran %d, a %d", c.ran, a.ran);
  down(t, &e, 0);
}

static void mismatch(mt_ctx *t)
{
  env e;
  up(t, &e);
  int a[4] = {0}, b[4] = {0};
  weft_var *va = new_var(t, &e, 0, a, 4, MPI_INT);
  weft_var *vb = new_var(t, &e, 1, b, 4, MPI_INT);
  flag_op o = {0};
  if (t->rank == 1) /* only rank 1 pushes: its receive has no sender */
    push_flag(t, &e, &o, va, vb, 0);
  int rc = weft_mpi_wait_all(e.mpi);
  MT_CHECK(t, rc == WEFT_EMISMATCH, "wait_all returned %d, want WEFT_EMISMATCH", rc);
  MT_CHECK(t, o.ran == 0, "the operator ran without its input");
  weft_op_desc d = {0};
  d.fn = flag_fn;
  d.arg = &o;
  d.writes = &va;
  d.num_writes = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, 0) == WEFT_EMISMATCH, "push after a mismatch");
  down(t, &e, WEFT_EMISMATCH);
}

static void var_delete(mt_ctx *t)
{
  env e;
  up(t, &e);
  int a[16] = {0}, out[16] = {0};
  weft_var *va = new_var(t, &e, 0, a, 16, MPI_INT);
  weft_var *vo = new_var(t, &e, t->size - 1, out, 16, MPI_INT);
  sum_op fill = {e.mpi, NULL, va, 3}, sum = {e.mpi, va, vo, 0};
  push_sum(t, &e, &fill, WEFT_MPI_OWNER);
  push_sum(t, &e, &sum, WEFT_MPI_OWNER);
  MT_CHECK(t, weft_mpi_var_delete(e.mpi, va) == 0, "delete");
  MT_CHECK(t, weft_mpi_var_owner(e.mpi, va) == WEFT_EINVAL, "owner after delete");
  MT_CHECK(t, weft_mpi_var_delete(e.mpi, va) == WEFT_EINVAL, "second delete");
  sum_op late = {e.mpi, va, vo, 0};
  weft_op_desc d = {0};
  d.fn = sum_fn;
  d.arg = &late;
  d.reads = &late.in;
  d.num_reads = 1;
  d.writes = &late.out;
  d.num_writes = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == WEFT_EINVAL, "push on a deleted var");
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  if (t->rank == t->size - 1)
    MT_CHECK(t, out[0] == 408, "sum %d", out[0]);
  down(t, &e, 0);
}

typedef struct vec_op {
  weft_mpi *mpi;
  weft_var *in, *out;
} vec_op;

static int vec_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  vec_op *o = arg;
  double *out = weft_mpi_var_data(o->mpi, o->out);
  if (!o->in) {
    for (int k = 0; k < 12; k++)
      out[k] = k * 0.5;
    return 0;
  }
  const double *in = weft_mpi_var_data(o->mpi, o->in);
  for (int k = 0; k < 12; k++)
    out[k] = in[k] * 2;
  return 0;
}

static void derived_type(mt_ctx *t)
{
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
  MPI_Type_commit(&triple);
  env e;
  up(t, &e);
  double a[12], b[12] = {0};
  weft_var *va = new_var(t, &e, 0, a, 4, triple);
  weft_var *vb = new_var(t, &e, t->size - 1, b, 4, triple);
  vec_op fill = {e.mpi, NULL, va}, twice = {e.mpi, va, vb};
  weft_op_desc d = {0};
  d.fn = vec_fn;
  d.arg = &fill;
  d.writes = &fill.out;
  d.num_writes = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == 0, "push");
  d.arg = &twice;
  d.writes = &twice.out;
  d.reads = &twice.in;
  d.num_reads = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == 0, "push");
  MT_CHECK(t, weft_mpi_wait_all(e.mpi) == 0, "wait_all");
  if (t->rank == t->size - 1)
    for (int k = 0; k < 12; k++)
      MT_CHECK(t, b[k] == k, "b[%d] = %g", k, b[k]);
  down(t, &e, 0);
  MPI_Type_free(&triple);
}

static int sleepy_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  struct timespec ts = {0, 250 * 1000 * 1000};
  for (int i = 0; i < 8; i++) /* 2 s: over three timeouts */
    nanosleep(&ts, NULL);
  return flag_fn(rc, arg);
}

/* A rank whose only worker computes for over three timeouts is alive: its
 * progress thread's heartbeats keep the others from declaring it dead. */
static void busy_rank_alive(mt_ctx *t)
{
  env e;
  MT_CHECK(t, mt_attach(600, &e.eng, &e.mpi), "engine and attach");
  int last = t->size - 1;
  int a[4] = {0}, b[4] = {0};
  weft_var *va = new_var(t, &e, last, a, 4, MPI_INT);
  weft_var *vb = new_var(t, &e, 0, b, 4, MPI_INT);
  flag_op slow = {0}, after = {0};
  weft_op_desc d = {0};
  d.fn = sleepy_fn;
  d.arg = &slow;
  d.writes = &va;
  d.num_writes = 1;
  MT_CHECK(t, weft_mpi_push(e.mpi, &d, WEFT_MPI_OWNER) == 0, "push");
  push_flag(t, &e, &after, va, vb, 0);
  int rc = weft_mpi_wait_all(e.mpi);
  MT_CHECK(t, rc == 0, "wait_all returned %d while rank %d computed", rc, last);
  if (t->rank == 0)
    MT_CHECK(t, after.ran == 1, "the successor ran %d times", after.ran);
  down(t, &e, 0);
}

int main(int argc, char **argv)
{
  static const mt_case cases[] = {
      {"bad_input", bad_input, 1},
      {"ring", ring, 1},
      {"cache_reuse", cache_reuse, 2},
      {"write_elsewhere", write_elsewhere, 1},
      {"failure_everywhere", failure_everywhere, 1},
      {"mismatch", mismatch, 2},
      {"var_delete", var_delete, 1},
      {"derived_type", derived_type, 1},
      {"busy_rank_alive", busy_rank_alive, 2},
  };
  return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
