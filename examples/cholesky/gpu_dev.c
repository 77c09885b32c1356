/* SPDX-License-Identifier: MIT */
/*
 * gpu_dev.h's common part: per-stream state, the whole-matrix helpers, and
 * the host device: weft's host backend (WEFT_GPU_BACKEND=host), whose
 * streams are FIFOs served by threads. There each call is CBLAS/LAPACKE
 * (tile_call_run_cblas) run on the stream's thread, and "device memory" is
 * ordinary memory, so that every operator, copy and dependency of
 * cholesky_gpu.c runs as it would on a GPU, on any machine.
 */
#include "gpu_dev.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <weft/weft.h>

/* ------------------------------------------------------ per-stream state */

/* One entry per compute stream that ran a call: WEFT_GPU_WORKERS is at most
 * 64 a device, and this program uses one device. */
enum { MAX_STREAMS = 256 };

typedef struct stream_entry {
  void *stream, *state;
  long timed_calls; /* lookups (one per kernel) while timed */
} stream_entry;

static struct {
  pthread_mutex_t lock; /* the table below; held while a state is made */
  const gpu_dev *dev;
  gpu_stream_cfg cfg;
  stream_entry e[MAX_STREAMS];
  int n;
  atomic_bool timed;
  atomic_int late;
} streams = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gpu_streams_init(const gpu_dev *d, gpu_stream_cfg cfg)
{
  pthread_mutex_lock(&streams.lock);
  streams.dev = d;
  streams.cfg = cfg;
  streams.n = 0;
  atomic_store(&streams.late, 0);
  pthread_mutex_unlock(&streams.lock);
}

/* Keyed by the stream, not by the thread: a weft device worker owns one
 * compute stream and is the only thread that runs operators on it, so a
 * state is used by one thread at a time, as cuBLAS and cuSOLVER handles
 * must be. The lock costs well under a microsecond a call, next to a
 * launch's several. */
void *gpu_stream_state(void *stream, int device)
{
  pthread_mutex_lock(&streams.lock);
  bool timed = atomic_load(&streams.timed);
  stream_entry *e = NULL;
  for (int k = 0; k < streams.n && !e; k++)
    if (streams.e[k].stream == stream)
      e = &streams.e[k];
  if (!e) {
    void *state = NULL;
    if (streams.n == MAX_STREAMS)
      fprintf(stderr, "cholesky_gpu: more than %d compute streams\n", MAX_STREAMS);
    else if ((state = streams.dev->stream_open(stream, device, &streams.cfg))) {
      e = &streams.e[streams.n++];
      *e = (stream_entry){stream, state, 0};
      if (timed)
        atomic_fetch_add(&streams.late, 1);
    }
  }
  if (e && timed)
    e->timed_calls++;
  pthread_mutex_unlock(&streams.lock);
  return e ? e->state : NULL;
}

void gpu_streams_timed(bool on) { atomic_store(&streams.timed, on); }

int gpu_streams_count(void)
{
  pthread_mutex_lock(&streams.lock);
  int n = streams.n;
  pthread_mutex_unlock(&streams.lock);
  return n;
}

int gpu_streams_calls(long *calls, int max)
{
  pthread_mutex_lock(&streams.lock);
  int n = streams.n < max ? streams.n : max;
  for (int k = 0; k < n; k++)
    calls[k] = streams.e[k].timed_calls;
  pthread_mutex_unlock(&streams.lock);
  return n;
}

int gpu_streams_late(void) { return atomic_load(&streams.late); }

void gpu_streams_close(void)
{
  pthread_mutex_lock(&streams.lock);
  for (int k = 0; k < streams.n; k++)
    streams.dev->stream_close(streams.e[k].state);
  streams.n = 0;
  pthread_mutex_unlock(&streams.lock);
}

/* ---------------------------------------------------- whole-matrix helpers */

void tiles_to_full(const tiled *t, void *full)
{
  size_t n = t->n, b = t->b, es = t->esize;
  char *m = full;
  for (size_t i = 0; i < t->nt; i++)
    for (size_t j = 0; j <= i; j++) {
      const char *tile = tiled_at(t, i, j);
      for (size_t c = 0; c < b; c++) /* column c of the tile: rows i b .. i b + b - 1 */
        memcpy(m + ((j * b + c) * n + i * b) * es, tile + c * b * es, b * es);
    }
}

/* A NaN anywhere fails the comparison (fmax would skip it). */
#define VS_FULL(T)                                                                                 \
  static double vs_full_##T(const tiled *f, const T *full)                                         \
  {                                                                                                \
    size_t n = f->n, b = f->b;                                                                     \
    double dmax = 0, lmax = 0;                                                                     \
    bool nan = false;                                                                              \
    for (size_t ti = 0; ti < f->nt; ti++)                                                          \
      for (size_t tj = 0; tj <= ti; tj++) {                                                        \
        const T *tile = tiled_at(f, ti, tj);                                                       \
        for (size_t c = 0; c < b; c++)                                                             \
          for (size_t r = ti == tj ? c : 0; r < b; r++) { /* the lower triangle */                 \
            double x = tile[c * b + r], y = full[(tj * b + c) * n + ti * b + r];                   \
            nan |= isnan(x) || isnan(y);                                                           \
            dmax = fmax(dmax, fabs(x - y));                                                        \
            lmax = fmax(lmax, fabs(y));                                                            \
          }                                                                                        \
      }                                                                                            \
    return nan ? INFINITY : lmax > 0 ? dmax / lmax : dmax > 0 ? INFINITY : 0;                      \
  }
VS_FULL(float)
VS_FULL(double)

double tiles_vs_full(const tiled *f, const void *full)
{
  return f->prec == PREC_FLOAT ? vs_full_float(f, full) : vs_full_double(f, full);
}

/* ------------------------------------------------------------ host device */

typedef struct host_state {
  void *stream; /* the stream it was made for: each call checks it */
} host_state;

static void *host_alloc(size_t bytes)
{
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p)
    fprintf(stderr, "cholesky_gpu: out of memory (%zu bytes)\n", bytes);
  return p;
}

static int host_copy_now(void *dst, const void *src, size_t bytes)
{
  memcpy(dst, src, bytes);
  return 0;
}

static int host_sync(void) { return 0; /* the copies above completed when they returned */ }

static void *host_stream_open(void *stream, int device, const gpu_stream_cfg *cfg)
{
  (void)device;
  (void)cfg;
  host_state *s = malloc(sizeof *s);
  if (!s) {
    fprintf(stderr, "cholesky_gpu: out of memory\n");
    return NULL;
  }
  s->stream = stream;
  return s;
}

static void host_stream_close(void *state) { free(state); }

/* On the emulated stream's thread, after everything enqueued before it. */
static void host_run_call(void *arg) { tile_call_run_cblas(arg); }

static void host_run_copy(void *arg)
{
  const tile_copy *cp = arg;
  memcpy(cp->dst, cp->src, cp->bytes);
}

static int enqueued(int rc)
{
  if (rc)
    fprintf(stderr, "cholesky_gpu: weft_gpu_host_enqueue: %s\n", weft_strerror(rc));
  return rc ? -1 : 0;
}

static int host_enqueue_call(void *stream, void *state, const tile_call *c)
{
  if (((host_state *)state)->stream != stream) { /* the per-stream table is wrong */
    fprintf(stderr, "cholesky_gpu: a stream got another stream's state\n");
    return -1;
  }
  return enqueued(weft_gpu_host_enqueue(stream, host_run_call, (void *)c));
}

static int host_enqueue_copy(void *stream, const tile_copy *cp)
{
  return enqueued(weft_gpu_host_enqueue(stream, host_run_copy, (void *)cp));
}

static const char *host_ref_name(precision prec)
{
  return prec == PREC_FLOAT ? "LAPACK spotrf" : "LAPACK dpotrf";
}

/* LAPACK's ?potrf on the whole matrix, on every core (OpenBLAS's threads;
 * one a call again afterwards, as tiles_blas_init set). */
static int host_reference(const tiled *a, int reps, double *seconds, void *factor, int *info)
{
  size_t n = a->n, bytes = n * n * a->esize;
  void *m = calloc(1, bytes);
  if (!m) {
    fprintf(stderr, "cholesky_gpu: out of memory (%zu bytes)\n", bytes);
    return -1;
  }
  tiles_to_full(a, m);
  openblas_set_num_threads((int)sysconf(_SC_NPROCESSORS_ONLN));
  for (int r = -1; r < reps; r++) { /* r = -1: untimed, as the device's first run */
    memcpy(factor, m, bytes);
    double t0 = tiles_now_s();
    *info = a->prec == PREC_FLOAT
                ? LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', (int)n, factor, (int)n)
                : LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (int)n, factor, (int)n);
    if (r >= 0)
      seconds[r] = tiles_now_s() - t0;
  }
  openblas_set_num_threads(1);
  free(m);
  return 0;
}

static const gpu_dev host_dev = {
    .name = "host",
    .ref_name = host_ref_name,
    .alloc = host_alloc,
    .free = free,
    .host_alloc = host_alloc,
    .host_free = free,
    .to_device = host_copy_now,
    .to_host = host_copy_now,
    .sync = host_sync,
    .stream_open = host_stream_open,
    .stream_close = host_stream_close,
    .enqueue_call = host_enqueue_call,
    .enqueue_copy = host_enqueue_copy,
    .reference = host_reference,
};

const gpu_dev *gpu_dev_host(void) { return &host_dev; }
