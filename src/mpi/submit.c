/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi_push: which rank runs an operator, which transfers it needs, and
 * the operators that carry them out.
 *
 * Every rank runs this same code on the same sequence, so every rank knows,
 * without asking, which ranks hold a valid copy of every var (dvar->valid):
 * the owner always does (a write elsewhere is sent back to it), a rank that
 * received a copy does until the var is written again. Each rank then pushes
 * only its own part: the operator where it runs, a send where it owns data
 * another rank lacks, a receive where it lacks data.
 *
 * Messages: the tag is the var's id + 1 (0 is the heartbeat's). Between two
 * ranks at most one transfer of a var is in flight at a time (a second one
 * needs a write in between, which waits for the first on both ranks), so
 * MPI's non-overtaking order is all the matching needs. A failure travels as
 * an empty message: the receiver marks its copy failed (WEFT_EREMOTE).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_int.h"

static bool is_valid(const mpi_dvar *d, int rank)
{
  return d->valid[rank / 64] >> (rank % 64) & 1;
}

static void set_valid(mpi_dvar *d, int rank)
{
  d->valid[rank / 64] |= 1ull << (rank % 64);
}

/* ---------------------------------------------------------------- transfers */

typedef struct transfer_arg {
  weft_mpi *mpi;
  mpi_dvar *d;
  int peer;
} transfer_arg;

/* The job for a transfer operator's run; frees t. NULL (the operator
 * signalled with WEFT_ENOMEM) without memory. */
static mpi_job *job_for(transfer_arg *t, job_kind kind, weft_done *done)
{
  mpi_job *job = calloc(1, sizeof *job);
  if (!job) {
    if (kind == JOB_RECV)
      t->d->failed = WEFT_ENOMEM; /* what this rank's copy now stands for */
    free(t);
    weft_done_signal(done, WEFT_ENOMEM);
    return NULL;
  }
  job->kind = kind;
  job->d = t->d;
  job->peer = t->peer;
  job->done = done;
  free(t);
  return job;
}

/* The send operator reads the var: it runs once the value is final here. */
static void send_op(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  transfer_arg *t = arg;
  weft_mpi *mpi = t->mpi;
  bool failure = t->d->failed != 0; /* ordered by the var's queue */
  mpi_job *job = job_for(t, JOB_SEND, done);
  if (!job)
    return;
  job->send_failure = failure;
  mpi_send_now(mpi, job);
}

/* The receive operator writes the var: nothing here uses it meanwhile. */
static void recv_op(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  transfer_arg *t = arg;
  weft_mpi *mpi = t->mpi;
  mpi_job *job = job_for(t, JOB_RECV, done);
  if (job)
    mpi_enqueue(mpi, job);
}

/* This rank's part of moving d's value from rank src to rank dst. */
static int transfer(weft_mpi *mpi, mpi_dvar *d, int src, int dst)
{
  bool sending = mpi->rank == src, receiving = mpi->rank == dst;
  if (!sending && !receiving)
    return 0;
  if (receiving && !d->buf) {
    /* The first copy to arrive here: its cache, stable until delete. The
     * block covers every byte MPI may touch (registry.c, mpi_type_span);
     * buf sits span_lo bytes into it, where the datatype's origin is. */
    size_t bytes = (d->bytes + 63) & ~(size_t)63;
    char *block = aligned_alloc(64, bytes ? bytes : 64);
    if (!block)
      return WEFT_ENOMEM;
    d->buf = block - d->span_lo;
    d->cache_ours = true;
  }
  transfer_arg *t = malloc(sizeof *t);
  if (!t)
    return WEFT_ENOMEM;
  t->mpi = mpi;
  t->d = d;
  t->peer = sending ? dst : src;
  weft_op_desc desc = {0};
  desc.async_fn = sending ? send_op : recv_op;
  desc.arg = t;
  if (sending) {
    desc.reads = &d->var;
    desc.num_reads = 1;
  } else {
    desc.writes = &d->var;
    desc.num_writes = 1;
  }
  /* Inline where it becomes ready (it only queues a job), failure or not. */
  desc.prop = WEFT_PROP_ASYNC;
  desc.flags = WEFT_OP_NOSKIP;
  desc.name = sending ? "weft_mpi send" : "weft_mpi recv";
  int rc = weft_push(mpi->eng, &desc);
  if (rc)
    free(t);
  return rc;
}

/* ------------------------------------------------------------ the operator */

typedef struct op_arg {
  weft_op_fn fn;
  void *arg;
  unsigned flags; /* the application's */
  size_t nuse, nwrite;
  mpi_dvar *use[]; /* the writes first, then the reads */
} op_arg;

/* Runs the application's operator unless a var it uses holds a failure (as
 * the engine skips one), and records its outcome on the vars it writes,
 * where the send operators find it. Pushed with WEFT_OP_NOSKIP, since the
 * engine cannot see failures that came by message. */
static int run_op(const weft_run_ctx *rc, void *arg)
{
  op_arg *o = arg;
  int status = 0;
  if (!(o->flags & WEFT_OP_NOSKIP))
    for (size_t i = 0; i < o->nuse && !status; i++)
      status = o->use[i]->failed;
  if (!status)
    status = o->fn(rc, o->arg);
  for (size_t i = 0; i < o->nwrite; i++)
    o->use[i]->failed = status;
  free(o);
  return status;
}

static int resolve(weft_mpi *mpi, weft_var *const *vars, size_t n, const char *what,
                   mpi_dvar **out)
{
  for (size_t i = 0; i < n; i++) {
    out[i] = vars[i] ? mpi_lookup(mpi, vars[i], true) : NULL;
    if (!out[i]) {
      mpi_log(mpi, "weft_mpi_push: %s[%zu] is not a var registered with weft_mpi_var_register",
              what, i);
      return WEFT_EINVAL;
    }
  }
  return 0;
}

static int check_desc(const weft_mpi *mpi, const weft_op_desc *desc)
{
  const char *why = NULL;
  if (!desc->fn)
    why = desc->async_fn ? "async_fn: distributed operators take fn" : "no fn";
  else if (desc->async_fn)
    why = "both fn and async_fn";
  else if (desc->ctx.type != WEFT_DEV_CPU)
    why = "a GPU ctx: distributed operators run on the CPU";
  else if (desc->prop == WEFT_PROP_COPY_TO_GPU || desc->prop == WEFT_PROP_COPY_FROM_GPU)
    why = "a GPU copy prop";
  else if ((desc->num_reads && !desc->reads) || (desc->num_writes && !desc->writes))
    why = "a NULL var array with a non-zero count";
  if (why)
    mpi_log(mpi, "weft_mpi_push: %s", why);
  return why ? WEFT_EINVAL : 0;
}

int weft_mpi_push(weft_mpi *mpi, const weft_op_desc *desc, int exec_rank)
{
  if (!mpi || !desc)
    return WEFT_EINVAL;
  if (mpi->ended)
    return mpi->ended;
  int rc = check_desc(mpi, desc);
  if (rc)
    return rc;
  /* The vars, writes first, repeats dropped (a var both read and written
   * counts as written): on the stack for the usual few. */
  size_t nw = desc->num_writes, nr = desc->num_reads;
  mpi_dvar *use_small[16];
  mpi_dvar **use = nw + nr <= 16 ? use_small : malloc((nw + nr) * sizeof *use);
  if (!use)
    return WEFT_ENOMEM;
  op_arg *o = NULL;
  if ((rc = resolve(mpi, desc->writes, nw, "writes", use)) ||
      (rc = resolve(mpi, desc->reads, nr, "reads", use + nw)))
    goto out;
  if (exec_rank == WEFT_MPI_OWNER) {
    if (!nw) {
      mpi_log(mpi, "weft_mpi_push: an operator that writes nothing needs an exec_rank");
      rc = WEFT_EINVAL;
      goto out;
    }
    exec_rank = use[0]->owner;
  } else if (exec_rank < 0 || exec_rank >= mpi->size) {
    mpi_log(mpi, "weft_mpi_push: exec_rank %d is not a rank of the communicator (size %d)",
            exec_rank, mpi->size);
    rc = WEFT_EINVAL;
    goto out;
  }
  size_t n = 0, nwrite = 0;
  for (size_t i = 0; i < nw + nr; i++) {
    size_t j = 0;
    while (j < n && use[j] != use[i])
      j++;
    if (j == n) {
      use[n++] = use[i];
      nwrite += i < nw;
    }
  }

  mpi_seq_fold(mpi, 0x7075736800000000ull ^ ((uint64_t)nwrite << 16) ^ (uint64_t)exec_rank);
  for (size_t i = 0; i < n; i++)
    mpi_seq_fold(mpi, use[i]->id);

  /* A failure below leaves this rank's view ahead of or behind the others':
   * the collective wait reports it as a mismatch if it matters. */
  for (size_t i = 0; i < n; i++) {
    mpi_dvar *d = use[i];
    if (is_valid(d, exec_rank)) {
      if (exec_rank != d->owner && mpi->rank == exec_rank)
        atomic_fetch_add_explicit(&mpi->n_cache_hits, 1, memory_order_relaxed);
      continue;
    }
    if ((rc = transfer(mpi, d, d->owner, exec_rank)))
      goto out;
    set_valid(d, exec_rank);
  }

  /* The operator itself, on its rank only (its wrapper owns o from then). */
  if (mpi->rank == exec_rank) {
    o = malloc(sizeof *o + n * sizeof(mpi_dvar *));
    if (!o) {
      rc = WEFT_ENOMEM;
      goto out;
    }
    o->fn = desc->fn;
    o->arg = desc->arg;
    o->flags = desc->flags;
    o->nuse = n;
    o->nwrite = nwrite;
    memcpy(o->use, use, n * sizeof *use);
    weft_op_desc mine = *desc;
    mine.fn = run_op;
    mine.arg = o;
    mine.flags = desc->flags | WEFT_OP_NOSKIP;
    if ((rc = weft_push(mpi->eng, &mine))) {
      free(o);
      goto out;
    }
    atomic_fetch_add_explicit(&mpi->n_ops, 1, memory_order_relaxed);
  }

  /* The written vars: valid on the writer only, then back on the owner. */
  for (size_t i = 0; i < nwrite; i++) {
    mpi_dvar *d = use[i];
    memset(d->valid, 0, mpi->valid_words * sizeof *d->valid);
    set_valid(d, exec_rank);
    if (exec_rank != d->owner) {
      int trc = transfer(mpi, d, exec_rank, d->owner);
      if (trc && !rc)
        rc = trc;
      set_valid(d, d->owner);
    }
  }

out:
  if (use != use_small)
    free(use);
  return rc;
}
