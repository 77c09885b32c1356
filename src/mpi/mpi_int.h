/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi's internals (src/mpi; the public contract is
 * include/weft/weft_mpi.h). Written on weft's public API only: libweft_mpi
 * links libweft and MPI.
 *
 * Threads:
 *   - the submitting thread: the application's, the one that calls every
 *     weft_mpi_* function but weft_mpi_var_data;
 *   - operator threads: the engine's workers (and whichever thread runs an
 *     async transfer operator inline); they run the wrappers (submit.c) and
 *     hand transfers to the progress thread;
 *   - the progress thread (progress.c): the thread that calls MPI between
 *     attach and detach (others only under call_lock: a send operator's
 *     own MPI_Isend, a datatype query, attach and detach's own calls; see
 *     there).
 */
#ifndef WEFT_MPI_INT_H
#define WEFT_MPI_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/weft_mpi.h"

/* A registered var, one per (attachment, var). Allocated by register, freed
 * by the free operator var_delete pushes, or by detach. */
typedef struct mpi_dvar {
  /* Immutable after register. */
  weft_var *var;
  uint32_t id; /* registration index, the same on every rank; tag id + 1 */
  int owner;
  int count;
  MPI_Datatype type;
  /* Every byte count elements of type may touch lies in [buf + span_lo,
   * buf + span_lo + bytes) (mpi_type_span); span_lo <= 0. */
  ptrdiff_t span_lo;
  size_t bytes;
  size_t type_size; /* bytes of data a transfer carries */
  bool cache_ours;  /* buf is a cache weft allocated (freed with the dvar) */
  /* Written by the submitting thread before the first operator that uses it
   * is pushed (a push publishes it to the operator threads). */
  void *buf;
  /* Submitting thread only: the ranks holding a valid copy. */
  uint64_t *valid;
  /* Under map_lock: weft_mpi_var_delete was called (the free operator,
   * which frees the dvar, may not have run yet). */
  bool deleted;
  /* Operator threads, ordered by the var's queue: writers (operators that
   * write the var, receives into it) set it, readers read it. 0, or the
   * failure the value this rank holds stands for. */
  int failed;
  /* Set by the progress thread when it abandons a transfer of this var
   * (a broken attachment): MPI may still use the buffer, so weft never
   * frees it. Read after a done signal or the thread's join. */
  bool abandoned;
} mpi_dvar;

typedef enum {
  JOB_SEND,      /* a transfer out: data, or an empty message for a failure */
  JOB_RECV,      /* a transfer in */
  JOB_ALLGATHER, /* wait.c's collectives: bytes from each rank */
  JOB_ABORT,     /* cancel every pending transfer with job->status */
  JOB_HEARTBEAT, /* the progress thread's own receive of heartbeats */
} job_kind;

/* One unit of work for the progress thread. Transfers are queued by their
 * operators and freed by the progress thread once signalled; collectives
 * and aborts live on the waiting thread's stack. */
typedef struct mpi_job {
  job_kind kind;
  struct mpi_job *next; /* under mpi->lock while queued */
  mpi_dvar *d;          /* transfers */
  int peer;             /* transfers: the other rank; -1 for collectives */
  bool send_failure;    /* JOB_SEND: the var holds a failure */
  weft_done *done;      /* transfers: the operator's completion */
  const void *sendbuf;  /* JOB_ALLGATHER: this rank's bytes, */
  void *recvbuf;        /* everyone's, size * bytes */
  int nbytes;
  int status;           /* collectives/aborts: the result, under mpi->lock */
  bool finished;        /* collectives/aborts: set under mpi->lock, + coll_cv */
  bool abandoned;       /* collectives: MPI still owns the buffers (under mpi->lock) */
  double posted_s;      /* progress thread: when it was posted */
  /* JOB_SEND: posted already by its operator's thread (mpi_send_now), with
   * this request; the progress thread only completes it. */
  bool posted;
  MPI_Request req;
} mpi_job;

struct weft_mpi {
  /* Immutable after attach. */
  weft_engine *eng;
  MPI_Comm comm; /* the duplicate; MPI_ERRORS_RETURN */
  int rank, size;
  int tag_ub;
  int timeout_ms; /* 0: none */
  size_t valid_words;

  /* Submitting thread only. */
  uint32_t next_id;
  uint64_t seq_hash; /* of every sequence call since attach */
  uint64_t seq_calls;

  /* The registry: weft_var * -> mpi_dvar *, open addressing, under
   * map_lock (operator threads look up through weft_mpi_var_data). */
  pthread_mutex_t map_lock;
  mpi_dvar **map;
  size_t map_cap, map_used; /* used counts tombstones too */

  /* The progress thread's queue and state. */
  pthread_mutex_t lock;
  pthread_cond_t work_cv; /* the progress thread sleeps on it */
  pthread_cond_t coll_cv; /* the submitting thread waits for a collective */
  mpi_job *head, *tail;   /* under lock */
  bool sleeping;          /* under lock: the progress thread waits on work_cv */
  bool started;           /* under lock: attach let the thread make MPI calls */
  bool stop;              /* under lock */
  /* Held by whoever calls MPI on the attachment's behalf: the progress
   * thread while it posts and polls, an operator thread posting a send
   * (trylock), the submitting thread for a local call. Under
   * MPI_THREAD_SERIALIZED it is mpi_serial_lock, the one lock of the
   * process, which every attachment and attach itself share (never two MPI
   * calls of the library at once); under MPI_THREAD_MULTIPLE own_call_lock.
   * Immutable after attach. */
  pthread_mutex_t *call_lock;
  pthread_mutex_t own_call_lock;
  pthread_t thread;
  struct progress *progress; /* the progress thread's own state */
  /* 0, or the code the attachment broke with on this rank: WEFT_ECOMM (an
   * MPI call failed here, or another rank's notice said one failed there)
   * or WEFT_ETIMEDOUT, set by the progress thread; the code a wait ended
   * the attachment with, set by the submitting thread. Read by both.
   * Relaxed: a flag; what it stands for reaches the submitting thread
   * through the next wait's collectives, not through this word. */
  _Atomic int broken;
  /* Set by the progress thread when the attachment broke by this rank's
   * own doing (an MPI call failed here, a timeout), not by another rank's
   * notice: the wait names such a rank. Relaxed: read for a message only. */
  _Atomic bool broke_here;
  /* Submitting thread only: 0, or the code a wait returned when it ended
   * the attachment (every later call returns it at once). */
  int ended;

  /* Counters (relaxed: statistics). */
  _Atomic uint64_t n_ops, n_sends, n_recvs, n_bytes_sent, n_bytes_recv, n_cache_hits;
};

/* --- registry.c */
/* The var's dvar, or NULL. live: NULL also once weft_mpi_var_delete was
 * called (the submitting thread's view: the dvar may be freed any time
 * after); operator threads pass false (an operator pushed before the delete
 * still finds its vars). */
mpi_dvar *mpi_lookup(const weft_mpi *mpi, const weft_var *var, bool live);
void mpi_registry_free(weft_mpi *mpi);
/* The bytes that count elements of a type (extent > 0, count > 0, true
 * lower bound and true extent as MPI_Type_get_true_extent gives them) may
 * touch, from a buffer's origin: [*lo, *lo + *bytes), *lo <= 0 (the origin
 * itself is always inside or at the end). Element i's data lie at
 * i * extent + [true_lb, true_lb + true_extent); a type whose true extent
 * exceeds its extent (a matrix column resized to one element) reaches
 * past count * extent. false: the span does not fit a ptrdiff_t. */
static inline bool mpi_type_span(int count, MPI_Aint extent, MPI_Aint true_lb,
                                 MPI_Aint true_extent, ptrdiff_t *lo, size_t *bytes)
{
  ptrdiff_t last, hi;
  if (__builtin_mul_overflow((ptrdiff_t)count - 1, (ptrdiff_t)extent, &last) ||
      __builtin_add_overflow(last, (ptrdiff_t)true_lb, &hi) ||
      __builtin_add_overflow(hi, (ptrdiff_t)true_extent, &hi))
    return false;
  ptrdiff_t l = true_lb < 0 ? (ptrdiff_t)true_lb : 0;
  if (hi < 0)
    hi = 0;
  ptrdiff_t n;
  if (__builtin_sub_overflow(hi, l, &n))
    return false;
  *lo = l;
  *bytes = (size_t)n;
  return true;
}
void mpi_dvar_free(mpi_dvar *d);
/* After a collective wait (nothing runs): forgets every var's failure and,
 * when the wait reported one (on every rank alike), every cached copy: a
 * copy that received a failure kept its old bytes. */
void mpi_registry_after_wait(weft_mpi *mpi, bool failed);

/* --- typesig.c */
/* *sig: the signature of type (see there), the same on every rank for a
 * type built alike. Submitting thread; makes its MPI calls under
 * call_lock. 0; WEFT_EINVAL (a datatype past the walk's limits or one MPI
 * cannot describe: a message names var id); WEFT_ENOMEM. */
int mpi_type_signature(weft_mpi *mpi, uint32_t id, MPI_Datatype type, uint64_t *sig);

/* --- progress.c */
/* Starts the progress thread, held until mpi_progress_go (no MPI call). */
int mpi_progress_start(weft_mpi *mpi);
void mpi_progress_go(weft_mpi *mpi);
/* Stops and joins the progress thread (its heartbeat receive cancelled). */
void mpi_progress_stop(weft_mpi *mpi);
/* Hands job to the progress thread (any thread). */
void mpi_enqueue(weft_mpi *mpi, mpi_job *job);
/* A send, from its operator's thread: posted there under call_lock when the
 * progress thread is not calling MPI (and completed there when MPI finishes
 * it at once, as it does small messages), saving the hand-over; else
 * enqueued. */
void mpi_send_now(weft_mpi *mpi, mpi_job *job);
/* Enqueues a collective or abort job and waits until it finished; returns its
 * status. Submitting thread only. */
int mpi_run_job(weft_mpi *mpi, mpi_job *job);

/* --- base.c, the bottom file (calls nothing else here). */
/* The lock of every MPI call of the library under MPI_THREAD_SERIALIZED
 * (see weft_mpi.call_lock). */
extern pthread_mutex_t mpi_serial_lock;
/* One step of the sequence hash: h with the word v folded in (registry.c
 * also mixes a datatype's signature with it). */
uint64_t mpi_hash_fold(uint64_t h, uint64_t v);
/* The sequence hash, folded by every sequence call. */
void mpi_seq_fold(weft_mpi *mpi, uint64_t v);
/* Messages: "weft_mpi: rank R: <msg>" on stderr. */
void mpi_log(const weft_mpi *mpi, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* CLOCK_MONOTONIC, seconds. */
double mpi_now_s(void);

#endif /* WEFT_MPI_INT_H */
