/* SPDX-License-Identifier: MIT */
/*
 * The progress thread: the thread that calls MPI while an attachment is
 * live. It posts the jobs operators and the submitting thread queue
 * (MPI_Isend, MPI_Irecv, MPI_Iallgather), completes them with MPI_Testsome,
 * and signals their operators (weft_done_signal), so no worker ever blocks
 * on a transfer. Other threads call MPI only under call_lock, which the
 * progress thread holds while it posts and polls: a send operator posting
 * its own MPI_Isend when the lock is free (mpi_send_now), the submitting
 * thread asking a datatype's size, attach and detach. Under
 * MPI_THREAD_SERIALIZED every attachment's call_lock is the process's one
 * mpi_serial_lock, so two attachments' threads never call MPI at once.
 *
 * Polling: right after a completion it polls without pause (a transfer's
 * successor is often the next transfer), for WEFT_MPI_POLL_SPIN_NS; then it
 * sleeps between polls, from WEFT_MPI_POLL_SLEEP_MIN_NS doubling to _MAX, on
 * work_cv, so a new job wakes it at once. With nothing pending it sleeps on
 * work_cv until a job comes (or a heartbeat is due): no CPU is spent.
 *
 * Liveness: with a timeout T, every progress thread sends an empty message
 * (tag 0) to every other rank each T / WEFT_MPI_HEARTBEATS_PER_TIMEOUT. A
 * job pending for longer than T on a rank heard from last more than T ago
 * means that rank is dead, stopped or hung: the attachment breaks
 * (WEFT_ETIMEDOUT) and every pending job fails.
 *
 * Breaking: an attachment breaks on a rank when an MPI call fails there
 * (WEFT_ECOMM) or a rank times out. Every pending transfer fails and none
 * is posted from then on. The rank goes on taking part in the wait's
 * collectives, which report the break on every rank alike (wait.c), unless
 * it fell silent: after a timeout, or a failure of the collectives or of
 * tag 0's receive themselves, it posts no collective and sends no
 * heartbeat any more, so ranks waiting on it time out. A transfer's own
 * MPI failure also sends every other rank a notice (a one-int message on
 * tag 0): their transfers with this rank would never end, so theirs break
 * too (WEFT_ECOMM), and their waits end, whatever the timeout. Each
 * progress thread keeps a receive posted on tag 0 (with more than one
 * rank) for heartbeats and notices.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/tunables.h"
#include "mpi/mpi_int.h"

#define HEARTBEAT_TAG 0

/* A notice's one int (a heartbeat has none): the code this rank's
 * attachment broke with. Static: MPI may read it after the call returned. */
static const int notice_ecomm = WEFT_ECOMM;

/* How an attachment breaks (break_attachment), mildest first. */
typedef enum {
  BREAK_TOLD = 1, /* another rank's notice: keep talking */
  BREAK_NOTIFY,   /* a transfer's MPI failure here: keep talking, tell the others */
  BREAK_SILENT,   /* a timeout, or collectives or tag 0 failing: fall silent */
} break_how;

/* The progress thread's own (no lock), freed after its join. */
struct progress {
  weft_mpi *mpi;
  /* The posted jobs and their requests, [0, n); the tag 0 receive is one
   * of them when there is one. */
  MPI_Request *reqs;
  mpi_job **jobs;
  int n, cap;
  int work; /* posted jobs other than the tag 0 receive */
  mpi_job heartbeat; /* the tag 0 receive's job */
  int ctl_word;      /* its buffer: a notice's code */
  bool silent;       /* broken and silent: no collective, no heartbeat */
  double *last_heard; /* per rank, seconds */
  double next_beat;
  int *idx;
  MPI_Status *st;
};
typedef struct progress progress;

static void finish_waited(weft_mpi *mpi, mpi_job *job, int status)
{
  pthread_mutex_lock(&mpi->lock);
  job->status = status;
  job->finished = true;
  pthread_cond_broadcast(&mpi->coll_cv);
  pthread_mutex_unlock(&mpi->lock);
}

/* A transfer's end: its operator completes; the job is freed. */
static void finish_transfer(weft_mpi *mpi, mpi_job *job, int status)
{
  if (job->kind == JOB_RECV) {
    /* Published to the var's next user by weft_done_signal's release. */
    job->d->failed = status;
    if (!status) {
      atomic_fetch_add_explicit(&mpi->n_recvs, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&mpi->n_bytes_recv, job->d->type_size, memory_order_relaxed);
    }
  } else if (!status) {
    atomic_fetch_add_explicit(&mpi->n_sends, 1, memory_order_relaxed);
    if (!job->send_failure)
      atomic_fetch_add_explicit(&mpi->n_bytes_sent, job->d->type_size, memory_order_relaxed);
  }
  weft_done_signal(job->done, status);
  free(job);
}

static int grow(progress *p)
{
  if (p->n < p->cap)
    return 0;
  int cap = p->cap ? p->cap * 2 : 64;
  MPI_Request *reqs = realloc(p->reqs, (size_t)cap * sizeof *reqs);
  if (reqs)
    p->reqs = reqs;
  mpi_job **jobs = realloc(p->jobs, (size_t)cap * sizeof *jobs);
  if (jobs)
    p->jobs = jobs;
  int *idx = realloc(p->idx, (size_t)cap * sizeof *idx);
  if (idx)
    p->idx = idx;
  MPI_Status *st = realloc(p->st, (size_t)cap * sizeof *st);
  if (st)
    p->st = st;
  if (!reqs || !jobs || !idx || !st)
    return WEFT_ENOMEM;
  p->cap = cap;
  return 0;
}

static void mpi_error(weft_mpi *mpi, const char *call, int err)
{
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, s, &len) != MPI_SUCCESS)
    snprintf(s, sizeof s, "error %d", err);
  mpi_log(mpi, "%s failed: %s", call, s);
}

/* Fails every posted transfer with status, and every posted collective
 * too when the attachment fell silent (else they stay posted: every rank
 * still takes part in them): receives are cancelled, sends and collectives
 * abandoned (their requests are left to MPI, and their buffers too: detach
 * does not free a buffer MPI may still use). The attachment is broken by
 * then, so no transfer is posted any more. */
static void abort_all(progress *p, int status)
{
  int keep = 0;
  p->work = 0;
  for (int i = 0; i < p->n; i++) {
    mpi_job *job = p->jobs[i];
    switch (job->kind) {
    case JOB_HEARTBEAT:
      p->reqs[keep] = p->reqs[i];
      p->jobs[keep++] = job;
      continue;
    case JOB_RECV: {
      int done = 0;
      MPI_Cancel(&p->reqs[i]);
      MPI_Test(&p->reqs[i], &done, MPI_STATUS_IGNORE);
      if (!done) { /* matched already: MPI may still write the buffer */
        MPI_Request_free(&p->reqs[i]);
        job->d->abandoned = true;
      }
      finish_transfer(p->mpi, job, status);
      break;
    }
    case JOB_SEND:
      MPI_Request_free(&p->reqs[i]); /* MPI may still read the buffer */
      job->d->abandoned = true;
      finish_transfer(p->mpi, job, status);
      break;
    default: /* a collective: MPI offers no way to cancel one */
      if (!p->silent) {
        p->reqs[keep] = p->reqs[i];
        p->jobs[keep++] = job;
        p->work++;
        continue;
      }
      pthread_mutex_lock(&p->mpi->lock);
      job->abandoned = true; /* its buffers stay MPI's */
      pthread_mutex_unlock(&p->mpi->lock);
      finish_waited(p->mpi, job, status);
      break;
    }
  }
  p->n = keep;
}

/* Tells every other rank that this rank's attachment broke (a transfer's
 * MPI failure): their transfers with this one would never end. */
static void send_notices(progress *p)
{
  weft_mpi *mpi = p->mpi;
  for (int r = 0; r < mpi->size; r++) {
    MPI_Request req;
    if (r != mpi->rank && MPI_Isend(&notice_ecomm, 1, MPI_INT, r, HEARTBEAT_TAG, mpi->comm,
                                    &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

/* An MPI failure, another rank's notice or a dead rank: the attachment is
 * unusable from now on (its partners' transfers would never match), every
 * pending transfer fails (see the top of the file). */
static void break_attachment(progress *p, int code, break_how how)
{
  int expected = 0;
  bool first = atomic_compare_exchange_strong_explicit(&p->mpi->broken, &expected, code,
                                                       memory_order_relaxed,
                                                       memory_order_relaxed);
  if (how != BREAK_TOLD)
    atomic_store_explicit(&p->mpi->broke_here, true, memory_order_relaxed);
  if (how == BREAK_SILENT)
    p->silent = true;
  else if (how == BREAK_NOTIFY && first && !p->silent)
    send_notices(p);
  abort_all(p, atomic_load_explicit(&p->mpi->broken, memory_order_relaxed));
}

static void post_heartbeat_recv(progress *p)
{
  if (grow(p) ||
      MPI_Irecv(&p->ctl_word, 1, MPI_INT, MPI_ANY_SOURCE, HEARTBEAT_TAG, p->mpi->comm,
                &p->reqs[p->n]) != MPI_SUCCESS) {
    mpi_log(p->mpi, "cannot post the receive of tag 0: ranks may be declared dead, and "
                    "other ranks' MPI errors go unheard");
    return;
  }
  p->jobs[p->n++] = &p->heartbeat;
}

/* Posts one job; a job that cannot be posted ends at once: a transfer
 * once the attachment broke, a collective once it fell silent. */
static void post(progress *p, mpi_job *job)
{
  weft_mpi *mpi = p->mpi;
  if (job->kind == JOB_ABORT) {
    /* The wait ended the attachment: nothing is posted from now on. */
    p->silent = true;
    abort_all(p, job->status);
    finish_waited(mpi, job, 0);
    return;
  }
  bool collective = job->kind == JOB_ALLGATHER;
  int broken = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
  int err = MPI_SUCCESS;
  const char *call = "";
  if (!(collective ? p->silent : broken) && grow(p)) {
    mpi_log(mpi, "out of memory for the progress thread's table of requests");
    break_attachment(p, WEFT_ECOMM, BREAK_SILENT);
  }
  broken = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
  /* Why this job is not posted (0: it is). */
  int refused = collective ? (p->silent ? broken : 0) : broken;
  if (job->posted) { /* a send its operator's thread posted (mpi_send_now) */
    if (refused) {
      MPI_Request_free(&job->req); /* MPI may still read the buffer */
      job->d->abandoned = true;
      finish_transfer(mpi, job, refused);
      return;
    }
    p->reqs[p->n] = job->req;
  } else if (!refused) {
    MPI_Request *r = &p->reqs[p->n];
    mpi_dvar *d = job->d;
    switch (job->kind) {
    case JOB_SEND:
      call = "MPI_Isend";
      err = MPI_Isend(d->buf, job->send_failure ? 0 : d->count, d->type, job->peer,
                      (int)d->id + 1, mpi->comm, r);
      break;
    case JOB_RECV:
      call = "MPI_Irecv";
      err = MPI_Irecv(d->buf, d->count, d->type, job->peer, (int)d->id + 1, mpi->comm, r);
      break;
    default:
      call = "MPI_Iallgather";
      err = MPI_Iallgather(job->sendbuf, job->nbytes, MPI_BYTE, job->recvbuf, job->nbytes,
                           MPI_BYTE, mpi->comm, r);
      break;
    }
    if (err != MPI_SUCCESS) {
      mpi_error(mpi, call, err);
      break_attachment(p, WEFT_ECOMM, collective ? BREAK_SILENT : BREAK_NOTIFY);
      refused = atomic_load_explicit(&mpi->broken, memory_order_relaxed);
    }
  }
  if (refused) {
    if (collective)
      finish_waited(mpi, job, refused);
    else
      finish_transfer(p->mpi, job, refused);
    return;
  }
  job->posted_s = mpi_now_s();
  p->jobs[p->n++] = job;
  p->work++;
}

/* Ends one completed job; returns how it breaks the attachment (0: it
 * does not; the caller breaks it, and reposts tag 0's receive). */
static int complete(progress *p, mpi_job *job, MPI_Status *st, double now)
{
  weft_mpi *mpi = p->mpi;
  int status = 0;
  bool mpi_ok = st->MPI_ERROR == MPI_SUCCESS;
  if (!mpi_ok) {
    mpi_error(mpi, job->kind == JOB_SEND        ? "a send"
                   : job->kind == JOB_RECV      ? "a receive"
                   : job->kind == JOB_HEARTBEAT ? "the receive of tag 0"
                                                : "a collective",
              st->MPI_ERROR);
    status = WEFT_ECOMM;
  }
  switch (job->kind) {
  case JOB_HEARTBEAT: {
    if (!mpi_ok)
      return BREAK_SILENT;
    p->last_heard[st->MPI_SOURCE] = now;
    int n = 0;
    if (MPI_Get_count(st, MPI_INT, &n) != MPI_SUCCESS || n == 0)
      return 0; /* a heartbeat */
    if (!atomic_load_explicit(&mpi->broken, memory_order_relaxed))
      mpi_log(mpi, "rank %d's attachment broke (an MPI call failed there): this rank's "
                   "transfers fail too; the next weft_mpi_wait_all reports it on every rank",
              st->MPI_SOURCE);
    return BREAK_TOLD;
  }
  case JOB_RECV:
    p->last_heard[job->peer] = now;
    if (!status) {
      int got = 0;
      MPI_Get_count(st, job->d->type, &got);
      if (got == 0)
        status = WEFT_EREMOTE; /* the sender's copy held a failure */
    }
    finish_transfer(p->mpi, job, status);
    break;
  case JOB_SEND:
    finish_transfer(p->mpi, job, status);
    break;
  default:
    finish_waited(mpi, job, status);
    p->work--;
    return mpi_ok ? 0 : BREAK_SILENT;
  }
  p->work--;
  return mpi_ok ? 0 : BREAK_NOTIFY;
}

/* Tests every posted job once; returns how many completed. */
static int test_all(progress *p)
{
  if (!p->n)
    return 0;
  int out = 0;
  int err = MPI_Testsome(p->n, p->reqs, &out, p->idx, p->st);
  if (err != MPI_SUCCESS && err != MPI_ERR_IN_STATUS) {
    mpi_error(p->mpi, "MPI_Testsome", err);
    break_attachment(p, WEFT_ECOMM, BREAK_SILENT);
    return 1;
  }
  if (out == MPI_UNDEFINED || out <= 0)
    return 0;
  if (err == MPI_SUCCESS)
    for (int i = 0; i < out; i++)
      p->st[i].MPI_ERROR = MPI_SUCCESS; /* only set by MPI with ERR_IN_STATUS */
  double now = mpi_now_s();
  bool beat = false;
  int how = 0; /* the worst break_how the completions ask for */
  for (int i = 0; i < out; i++) {
    mpi_job *job = p->jobs[p->idx[i]];
    beat |= job == &p->heartbeat;
    int h = complete(p, job, &p->st[i], now);
    how = h > how ? h : how;
    p->jobs[p->idx[i]] = NULL;
  }
  /* Compact: completed requests are MPI_REQUEST_NULL, their jobs NULL. */
  int keep = 0;
  for (int i = 0; i < p->n; i++)
    if (p->jobs[i]) {
      p->reqs[keep] = p->reqs[i];
      p->jobs[keep++] = p->jobs[i];
    }
  p->n = keep;
  if (how)
    break_attachment(p, WEFT_ECOMM, (break_how)how);
  if (beat && !p->silent) /* tag 0's receive completed fine: the next one */
    post_heartbeat_recv(p);
  return out;
}

static void send_heartbeats(progress *p, double now)
{
  weft_mpi *mpi = p->mpi;
  p->next_beat = now + mpi->timeout_ms * 1e-3 / WEFT_MPI_HEARTBEATS_PER_TIMEOUT;
  /* A silent attachment takes part in nothing any more: the other ranks'
   * waits end with WEFT_ETIMEDOUT instead of hanging. */
  if (p->silent)
    return;
  for (int r = 0; r < mpi->size; r++) {
    if (r == mpi->rank)
      continue;
    MPI_Request req;
    if (MPI_Isend(&notice_ecomm, 0, MPI_INT, r, HEARTBEAT_TAG, mpi->comm, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

/* A rank this job waits on that has been silent longer than the timeout, or
 * -1. */
static int dead_peer(const progress *p, const mpi_job *job, double now)
{
  double t = p->mpi->timeout_ms * 1e-3;
  if (now - job->posted_s <= t)
    return -1;
  if (job->peer >= 0)
    return now - p->last_heard[job->peer] > t ? job->peer : -1;
  for (int r = 0; r < p->mpi->size; r++)
    if (r != p->mpi->rank && now - p->last_heard[r] > t)
      return r;
  return -1;
}

static void check_timeouts(progress *p, double now)
{
  for (int i = 0; i < p->n; i++) {
    mpi_job *job = p->jobs[i];
    if (job == &p->heartbeat)
      continue;
    int dead = dead_peer(p, job, now);
    if (dead < 0)
      continue;
    mpi_log(p->mpi, "rank %d has not answered for %.1f s (timeout %d ms, WEFT_MPI_TIMEOUT_MS): "
                    "it is dead, stopped or hung; pending transfers fail with WEFT_ETIMEDOUT",
            dead, now - p->last_heard[dead], p->mpi->timeout_ms);
    break_attachment(p, WEFT_ETIMEDOUT, BREAK_SILENT);
    return;
  }
}

static void wait_cv_until(weft_mpi *mpi, double until)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double left = until - ((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
  if (left <= 0)
    return;
  /* work_cv runs on CLOCK_MONOTONIC (mpi_progress_start). */
  long sec = (long)left;
  ts.tv_sec += sec;
  ts.tv_nsec += (long)((left - (double)sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&mpi->work_cv, &mpi->lock, &ts);
}

static void *progress_main(void *arg)
{
  progress *p = arg;
  weft_mpi *mpi = p->mpi;
  /* Short sleeps must be short: the default slack (50 us) would round each
   * one up. */
  prctl(PR_SET_TIMERSLACK, (unsigned long)WEFT_MPI_POLL_SLEEP_MIN_NS, 0, 0, 0);
  pthread_setname_np(pthread_self(), "weft-mpi");
  /* attach lets the thread go once every rank set up its attachment. */
  pthread_mutex_lock(&mpi->lock);
  while (!mpi->started && !mpi->stop)
    pthread_cond_wait(&mpi->work_cv, &mpi->lock);
  bool go = mpi->started;
  pthread_mutex_unlock(&mpi->lock);
  if (!go)
    return NULL;

  bool beats = mpi->timeout_ms > 0 && mpi->size > 1;
  double now = mpi_now_s(), last_done = now;
  long sleep_ns = WEFT_MPI_POLL_SLEEP_MIN_NS;
  for (int r = 0; r < mpi->size; r++)
    p->last_heard[r] = now;
  p->heartbeat.kind = JOB_HEARTBEAT;
  if (mpi->size > 1) { /* heartbeats and notices: also without a timeout */
    pthread_mutex_lock(mpi->call_lock);
    post_heartbeat_recv(p);
    if (beats)
      send_heartbeats(p, now);
    pthread_mutex_unlock(mpi->call_lock);
  }

  for (;;) {
    pthread_mutex_lock(&mpi->lock);
    if (!mpi->head && !mpi->stop) {
      /* Nothing pending: sleep until a job or the next heartbeat. Something
       * pending: a short sleep once the spin is over. */
      double until = p->work ? now + (now - last_done < WEFT_MPI_POLL_SPIN_NS * 1e-9
                                          ? 0
                                          : (double)sleep_ns * 1e-9)
                             : beats ? p->next_beat : -1;
      if (until != now) {
        mpi->sleeping = true;
        if (until < 0)
          pthread_cond_wait(&mpi->work_cv, &mpi->lock);
        else
          wait_cv_until(mpi, until);
        mpi->sleeping = false;
      }
    }
    mpi_job *jobs = mpi->head;
    mpi->head = mpi->tail = NULL;
    bool stop = mpi->stop;
    pthread_mutex_unlock(&mpi->lock);

    pthread_mutex_lock(mpi->call_lock);
    bool posted = jobs != NULL;
    while (jobs) {
      mpi_job *next = jobs->next;
      post(p, jobs);
      jobs = next;
    }
    if (stop && !p->work) {
      for (int i = 0; i < p->n; i++)
        if (p->jobs[i] == &p->heartbeat) {
          MPI_Cancel(&p->reqs[i]);
          MPI_Wait(&p->reqs[i], MPI_STATUS_IGNORE);
        }
      pthread_mutex_unlock(mpi->call_lock);
      return NULL;
    }
    now = mpi_now_s();
    if (posted) { /* a new transfer: its partner may be ready, poll closely */
      last_done = now;
      sleep_ns = WEFT_MPI_POLL_SLEEP_MIN_NS;
    }
    if (beats && now >= p->next_beat)
      send_heartbeats(p, now);
    int done = test_all(p);
    if (beats && p->work)
      check_timeouts(p, now);
    pthread_mutex_unlock(mpi->call_lock);

    if (done) {
      last_done = now;
      sleep_ns = WEFT_MPI_POLL_SLEEP_MIN_NS;
    } else if (now - last_done >= WEFT_MPI_POLL_SPIN_NS * 1e-9) {
      sleep_ns = sleep_ns * 2 > WEFT_MPI_POLL_SLEEP_MAX_NS ? WEFT_MPI_POLL_SLEEP_MAX_NS
                                                           : sleep_ns * 2;
    } else if (p->work) {
      sched_yield(); /* spinning: let the ranks' workers have the core */
    }
  }
}

int mpi_progress_start(weft_mpi *mpi)
{
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_destroy(&mpi->work_cv);
  pthread_cond_init(&mpi->work_cv, &ca);
  pthread_condattr_destroy(&ca);

  progress *p = calloc(1, sizeof *p);
  double *heard = calloc((size_t)mpi->size, sizeof *heard);
  if (!p || !heard) {
    free(p);
    free(heard);
    return WEFT_ENOMEM;
  }
  p->mpi = mpi;
  p->last_heard = heard;
  if (pthread_create(&mpi->thread, NULL, progress_main, p)) {
    free(heard);
    free(p);
    return WEFT_EAGAIN;
  }
  mpi->progress = p;
  return 0;
}

void mpi_progress_go(weft_mpi *mpi)
{
  pthread_mutex_lock(&mpi->lock);
  mpi->started = true;
  pthread_cond_signal(&mpi->work_cv);
  pthread_mutex_unlock(&mpi->lock);
}

void mpi_progress_stop(weft_mpi *mpi)
{
  pthread_mutex_lock(&mpi->lock);
  mpi->stop = true;
  pthread_cond_signal(&mpi->work_cv);
  pthread_mutex_unlock(&mpi->lock);
  pthread_join(mpi->thread, NULL);
  progress *p = mpi->progress;
  free(p->reqs);
  free(p->jobs);
  free(p->idx);
  free(p->st);
  free(p->last_heard);
  free(p);
  mpi->progress = NULL;
}

void mpi_send_now(weft_mpi *mpi, mpi_job *job)
{
  /* Only when the progress thread is not calling MPI itself; a broken
   * attachment's sends go through the progress thread, which fails them. */
  if (atomic_load_explicit(&mpi->broken, memory_order_relaxed) ||
      pthread_mutex_trylock(mpi->call_lock)) {
    mpi_enqueue(mpi, job);
    return;
  }
  mpi_dvar *d = job->d;
  int done = 0, tested = MPI_SUCCESS;
  int sent = MPI_Isend(d->buf, job->send_failure ? 0 : d->count, d->type, job->peer,
                       (int)d->id + 1, mpi->comm, &job->req);
  if (sent == MPI_SUCCESS)
    tested = MPI_Test(&job->req, &done, MPI_STATUS_IGNORE);
  pthread_mutex_unlock(mpi->call_lock);
  if (sent == MPI_SUCCESS && tested == MPI_SUCCESS && done) {
    finish_transfer(mpi, job, 0); /* an eager send: over already */
    return;
  }
  /* Pending, or an error: the progress thread takes it from here (it posts
   * it anew if MPI_Isend failed, and breaks the attachment then; a failed
   * test shows again in its MPI_Testsome). */
  job->posted = sent == MPI_SUCCESS;
  mpi_enqueue(mpi, job);
}

void mpi_enqueue(weft_mpi *mpi, mpi_job *job)
{
  job->next = NULL;
  pthread_mutex_lock(&mpi->lock);
  if (mpi->tail)
    mpi->tail->next = job;
  else
    mpi->head = job;
  mpi->tail = job;
  if (mpi->sleeping)
    pthread_cond_signal(&mpi->work_cv);
  pthread_mutex_unlock(&mpi->lock);
}

int mpi_run_job(weft_mpi *mpi, mpi_job *job)
{
  job->finished = false;
  mpi_enqueue(mpi, job);
  pthread_mutex_lock(&mpi->lock);
  while (!job->finished)
    pthread_cond_wait(&mpi->coll_cv, &mpi->lock);
  int status = job->status;
  pthread_mutex_unlock(&mpi->lock);
  return status;
}
