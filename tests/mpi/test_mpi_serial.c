/* SPDX-License-Identifier: MIT */
/*
 * Under MPI_THREAD_SERIALIZED no two MPI calls of the library overlap, also
 * with two attachments live at once (np 2; weft_mpi.h, "Threads").
 *
 * A shim (below; this executable exports it, tests/mpi/meson.build) defines
 * every MPI function the library calls, each calling its PMPI_ twin between
 * an increment and a decrement of one counter: a call that finds the counter
 * above zero started while another thread was inside MPI. Two engines are
 * attached to MPI_COMM_WORLD; both carry chains of transfers at once, the
 * second attachment is attached, gets its vars registered and is detached
 * while the first one's transfers run. Every rank checks that its shim saw
 * the library's calls and no overlap, and the chains' values.
 *
 * With --multiple the program initializes MPI_THREAD_MULTIPLE instead,
 * where each attachment has a lock of its own: the same run, its calls may
 * overlap (they are counted, not checked).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mpi_tap.h"

/* ---------------------------------------------------------------- the shim */

static atomic_int shim_inside;
static atomic_long shim_calls, shim_overlaps; /* relaxed: counts read after the threads joined */

static void enter(void)
{
  /* Acquire: the MPI call below stays after the increment (pairs with
   * leave's release on another thread's way out). */
  if (atomic_fetch_add_explicit(&shim_inside, 1, memory_order_acquire) != 0)
    atomic_fetch_add_explicit(&shim_overlaps, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&shim_calls, 1, memory_order_relaxed);
}

static int leave(int rc)
{
  /* Release: the MPI call above stays before the decrement (pairs with
   * enter's acquire on the next thread's way in). */
  atomic_fetch_sub_explicit(&shim_inside, 1, memory_order_release);
  return rc;
}

#define SHIM(call) (enter(), leave(call))

int MPI_Initialized(int *flag) { return SHIM(PMPI_Initialized(flag)); }
int MPI_Finalized(int *flag) { return SHIM(PMPI_Finalized(flag)); }
int MPI_Query_thread(int *provided) { return SHIM(PMPI_Query_thread(provided)); }
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) { return SHIM(PMPI_Comm_dup(comm, newcomm)); }
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
  return SHIM(PMPI_Comm_idup(comm, newcomm, request));
}
int MPI_Comm_free(MPI_Comm *comm) { return SHIM(PMPI_Comm_free(comm)); }
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
  return SHIM(PMPI_Comm_set_errhandler(comm, errhandler));
}
int MPI_Comm_rank(MPI_Comm comm, int *rank) { return SHIM(PMPI_Comm_rank(comm, rank)); }
int MPI_Comm_size(MPI_Comm comm, int *size) { return SHIM(PMPI_Comm_size(comm, size)); }
int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *value, int *flag)
{
  return SHIM(PMPI_Comm_get_attr(comm, keyval, value, flag));
}
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
  return SHIM(PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm));
}
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
  return SHIM(PMPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request));
}
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
  return SHIM(PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request));
}
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
  return SHIM(PMPI_Isend(buf, count, type, dest, tag, comm, request));
}
int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
  return SHIM(PMPI_Irecv(buf, count, type, source, tag, comm, request));
}
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
  return SHIM(PMPI_Test(request, flag, status));
}
int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
  return SHIM(PMPI_Testsome(incount, requests, outcount, indices, statuses));
}
int MPI_Wait(MPI_Request *request, MPI_Status *status) { return SHIM(PMPI_Wait(request, status)); }
int MPI_Cancel(MPI_Request *request) { return SHIM(PMPI_Cancel(request)); }
int MPI_Request_free(MPI_Request *request) { return SHIM(PMPI_Request_free(request)); }
int MPI_Get_count(const MPI_Status *status, MPI_Datatype type, int *count)
{
  return SHIM(PMPI_Get_count(status, type, count));
}
int MPI_Error_string(int code, char *string, int *len)
{
  return SHIM(PMPI_Error_string(code, string, len));
}
int MPI_Type_size(MPI_Datatype type, int *size) { return SHIM(PMPI_Type_size(type, size)); }
int MPI_Type_get_extent(MPI_Datatype type, MPI_Aint *lb, MPI_Aint *extent)
{
  return SHIM(PMPI_Type_get_extent(type, lb, extent));
}
int MPI_Type_get_true_extent(MPI_Datatype type, MPI_Aint *lb, MPI_Aint *extent)
{
  return SHIM(PMPI_Type_get_true_extent(type, lb, extent));
}

/* ------------------------------------------------------------------ cases */

/* A chain on one attachment: x (owner 0) and y (owner last) take turns,
 * each operator adding one to the other's value, each on the other rank:
 * every operator needs a transfer. */
typedef struct step {
  weft_mpi *mpi;
  weft_var *from, *to;
} step;

typedef struct chain {
  weft_engine *eng;
  weft_mpi *mpi;
  int x[4], y[4];
  weft_var *vx, *vy;
  step s[2]; /* the operators' args: x to y, y to x */
  int pushed; /* operators so far: x holds it once they ran */
} chain;

static int step_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  step *s = arg;
  const int *from = weft_mpi_var_data(s->mpi, s->from);
  int *to = weft_mpi_var_data(s->mpi, s->to);
  to[0] = from[0] + 1;
  return 0;
}

enum { PAIRS = 60, ROUNDS = 3 };

static void chain_up(mt_ctx *t, chain *c)
{
  MT_CHECK(t, mt_attach(20000, &c->eng, &c->mpi), "engine and attach");
  int last = t->size - 1;
  MT_CHECK(t, weft_var_new(c->eng, &c->vx) == 0 && weft_var_new(c->eng, &c->vy) == 0, "vars");
  MT_CHECK(t, weft_mpi_var_register(c->mpi, c->vx, 0, t->rank == 0 ? c->x : NULL, 4, MPI_INT) == 0,
           "register x");
  MT_CHECK(t, weft_mpi_var_register(c->mpi, c->vy, last, t->rank == last ? c->y : NULL, 4,
                                    MPI_INT) == 0,
           "register y");
  c->s[0] = (step){c->mpi, c->vx, c->vy};
  c->s[1] = (step){c->mpi, c->vy, c->vx};
}

static void chain_push(mt_ctx *t, chain *c)
{
  step *s = c->s;
  int rc = 0;
  for (int i = 0; i < PAIRS && !rc; i++)
    if (!(rc = mt_push(c->mpi, step_fn, &s[0], c->vx, c->vy, 0, WEFT_MPI_OWNER)))
      rc = mt_push(c->mpi, step_fn, &s[1], c->vy, c->vx, 0, WEFT_MPI_OWNER);
  MT_CHECK(t, rc == 0, "push: %d", rc);
  c->pushed += 2 * PAIRS;
}

static void chain_down(mt_ctx *t, chain *c)
{
  int rc = weft_mpi_detach(c->mpi);
  MT_CHECK(t, rc == 0, "detach: %d", rc);
  if (t->rank == 0)
    MT_CHECK(t, c->x[0] == c->pushed, "x is %d after %d operators", c->x[0], c->pushed);
  MT_CHECK(t, weft_engine_destroy(c->eng) == 0, "engine destroy");
}

static bool multiple; /* --multiple: MPI_THREAD_MULTIPLE */

static void two_attachments(mt_ctx *t)
{
  long calls0 = atomic_load_explicit(&shim_calls, memory_order_relaxed);
  long over0 = atomic_load_explicit(&shim_overlaps, memory_order_relaxed);
  static chain a, b;
  chain_up(t, &a);
  chain_push(t, &a);
  chain_up(t, &b); /* while a's transfers run */
  for (int r = 0; r < ROUNDS; r++) {
    chain_push(t, &a);
    chain_push(t, &b);
    MT_CHECK(t, weft_mpi_wait_all(a.mpi) == 0, "wait a");
    MT_CHECK(t, weft_mpi_wait_all(b.mpi) == 0, "wait b");
  }
  chain_push(t, &a);
  chain_down(t, &b); /* while a's transfers run */
  chain_down(t, &a);
  long calls = atomic_load_explicit(&shim_calls, memory_order_relaxed) - calls0;
  long over = atomic_load_explicit(&shim_overlaps, memory_order_relaxed) - over0;
  fprintf(stderr, "rank %d: %ld MPI calls of the library, %ld of them while another thread "
                  "was inside MPI\n", t->rank, calls, over);
  /* Each attachment's transfers alone make hundreds of calls. */
  MT_CHECK(t, calls >= 2 * PAIRS, "the shim saw %ld calls: is it linked in?", calls);
  if (!multiple)
    MT_CHECK(t, over == 0, "%ld MPI calls overlapped another", over);
}

/* --multiple: mt_main with MPI_THREAD_MULTIPLE. */
static int main_multiple(int argc, char **argv)
{
  mt_ctx t = {0};
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &t.size);
  if (provided < MPI_THREAD_MULTIPLE || t.size < 2) {
    if (t.rank == 0)
      printf("1..0 # SKIP MPI_THREAD_MULTIPLE not provided, or one rank\n");
    MPI_Finalize();
    return 0;
  }
  multiple = true;
  two_attachments(&t);
  int mine = t.failed, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (t.rank == 0)
    printf("1..1\n%sok 1 - two attachments under MPI_THREAD_MULTIPLE (np %d)\n", any ? "not " : "",
           t.size);
  MPI_Finalize();
  return any;
}

static const mt_case cases[] = {
    {"two attachments under MPI_THREAD_SERIALIZED: no two MPI calls overlap", two_attachments, 2},
};

int main(int argc, char **argv)
{
  if (argc > 1 && !strcmp(argv[1], "--multiple"))
    return main_multiple(argc, argv);
  return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
