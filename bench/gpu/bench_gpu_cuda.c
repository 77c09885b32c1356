/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu on CUDA: the device check, the device side of the weft rows,
 * the raw floors F1-F4 and the copy/compute overlap C4 (bench_gpu.c's
 * header says what each figure is).
 *
 * The CUDA runtime here is the bench's own (cudart_static, linked as the
 * library links its copy). weft's streams (rc->stream) are driver streams
 * of the device's primary context, which both copies share: the kernels
 * launched here on them are ordered on them like weft's own work.
 *
 * C4: OV_CHUNKS chunks, each uploaded (pinned host -> device), transformed
 * by a kernel that lasts OV_STAGE_NS, and downloaded, the copies sized so
 * that each takes about as long as the kernel (the upload bandwidth is
 * measured first). Chunk c uses buffer slot c % OV_SLOTS. The stages are
 * timed alone first (cudaEvent elapsed times, median of 3); with them, the
 * shortest a perfect pipeline can take is
 *   ideal = up + kernel + down + (chunks - 1) x max(up, kernel, down)
 * and the figure is ideal / wall (100%: the busiest engine never waited
 * after the pipeline filled). busy / wall (chunks x max / wall) is in the
 * JSON too: 40 chunks cap it at 40/42 = 95% even for a perfect pipeline
 * (the fill and the drain), which is why the row is ideal / wall. Each
 * chunk's output is checked (a sample of 4096 words as it arrives, every
 * word of the last OV_SLOTS chunks at the end).
 *   hand-written: three streams (upload, kernel, download) and events; the
 *     host waits for chunk c - OV_SLOTS's download (and checks it) before
 *     it enqueues chunk c into the same slot.
 *   weft: per chunk, upload (WEFT_PROP_COPY_TO_GPU, writes din[s]),
 *     kernel (reads din[s], writes dout[s]), download
 *     (WEFT_PROP_COPY_FROM_GPU, reads dout[s], writes hout[s]), check (a
 *     CPU operator reading hout[s]), all pushed at once; weft_wait_all.
 */
#include "bench_gpu_shared.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed CUDA call fails the bench; returns non-zero then. */
static int ck(cudaError_t e, const char *what)
{
  if (e == cudaSuccess)
    return 0;
  bench_fail("%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return 1;
}

const char *gb_cuda_error_name(int e)
{
  return cudaGetErrorName((cudaError_t)e);
}

int gb_cuda_probe(char *name, size_t cap)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* The versions first: a driver older than the runtime (CUDA 13 needs
     * 580 or newer) is the usual cause on a GPU machine. */
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess)
      drv = -1;
    (void)cudaRuntimeGetVersion(&rt);
    snprintf(name, cap,
             "cudaGetDeviceCount: %s, %s; the driver supports CUDA %d.%d (cudaDriverGetVersion "
             "%d), the runtime is CUDA %d.%d",
             cudaGetErrorName(e), cudaGetErrorString(e), drv > 0 ? drv / 1000 : 0,
             drv > 0 ? drv % 1000 / 10 : 0, drv, rt / 1000, rt % 1000 / 10);
    (void)cudaGetLastError();
    return -1;
  }
  if (n == 0) {
    snprintf(name, cap, "0 devices");
    return -1;
  }
  struct cudaDeviceProp p;
  int drv = 0;
  if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess ||
      (e = cudaDriverGetVersion(&drv)) != cudaSuccess) {
    snprintf(name, cap, "device 0: %s, %s", cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
  }
  snprintf(name, cap, "%s (sm_%d%d, %d SMs, CUDA driver %d.%d), device 0 of %d", p.name, p.major,
           p.minor, p.multiProcessorCount, drv / 1000, drv % 1000 / 10, n);
  return 0;
}

int gb_cuda_dev_open(gb_dev *d)
{
  unsigned *words = NULL, *mapped = NULL;
  void *mapped_dev = NULL;
  if (ck(cudaMalloc((void **)&words, 2 * GB_SLOTS * sizeof *words), "cudaMalloc") ||
      ck(cudaMemset(words, 0, 2 * GB_SLOTS * sizeof *words), "cudaMemset") ||
      ck(cudaHostAlloc((void **)&mapped, GB_WORDS * sizeof *mapped, cudaHostAllocMapped),
         "cudaHostAlloc (mapped)") ||
      ck(cudaHostGetDevicePointer(&mapped_dev, mapped, 0), "cudaHostGetDevicePointer")) {
    fprintf(stderr, "bench_gpu: the device's buffers could not be set up\n");
    return -1;
  }
  memset(mapped, 0, GB_WORDS * sizeof *mapped);
  d->counter = words;
  d->errors = words + GB_SLOTS;
  d->mapped = mapped;
  d->mapped_dev = mapped_dev;
  return 0;
}

void gb_cuda_dev_close(gb_dev *d)
{
  cudaFree(d->counter);
  cudaFreeHost(d->mapped);
  d->counter = d->errors = d->mapped = d->mapped_dev = NULL;
}

int gb_cuda_read_slot(const gb_dev *d, int slot, unsigned *counter, unsigned *errors)
{
  if (ck(cudaMemcpy(counter, &d->counter[slot], sizeof *counter, cudaMemcpyDeviceToHost),
         "reading a chain counter") ||
      ck(cudaMemcpy(errors, &d->errors[slot], sizeof *errors, cudaMemcpyDeviceToHost),
         "reading a chain's error count"))
    return -1;
  return 0;
}

/* The F rows' chain check (bench_gpu.c has its own for the weft rows). */
static void check_chain(const gb_dev *d, int slot, const char *what, unsigned long long want)
{
  unsigned c = 0, e = 0;
  if (gb_cuda_read_slot(d, slot, &c, &e) == 0 && (c != (unsigned)want || e != 0))
    bench_fail("%s: the chain counter is %u (want %u), %u links found a wrong value", what, c,
               (unsigned)want, e);
}

/* n links of slot's chain on stream s (F1), each followed by a record of
 * ev (F3 record) or alternating between s and s2 through ev2[2] (F3 wait). */
static int launch_chain(const gb_dev *d, int slot, unsigned n, cudaStream_t s, cudaEvent_t ev,
                        cudaStream_t s2, cudaEvent_t *ev2)
{
  for (unsigned i = 0; i < n; i++) {
    cudaStream_t cur = s2 && (i & 1) ? s2 : s, other = cur == s ? s2 : s;
    int e = gb_cuda_step(cur, &d->counter[slot], &d->errors[slot], i, n);
    if (ck((cudaError_t)e, "a chain link's launch"))
      return -1;
    if (ev && ck(cudaEventRecord(ev, cur), "cudaEventRecord"))
      return -1;
    if (s2 && (ck(cudaEventRecord(ev2[i & 1], cur), "cudaEventRecord") ||
               ck(cudaStreamWaitEvent(other, ev2[i & 1], 0), "cudaStreamWaitEvent")))
      return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- F4 */

/* Launches chain links on its own stream until told to stop (F4's
 * "while another thread launches"). */
typedef struct launcher {
  const gb_dev *d;
  cudaStream_t s;
  atomic_int stop;
  unsigned long long launched; /* over all runs: the link index */
  int err;
} launcher;

static void *launch_loop(void *arg)
{
  launcher *l = arg;
  if (cudaSetDevice(0) != cudaSuccess) {
    l->err = 1;
    return NULL;
  }
  while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
    /* n = 2^31: no wrap within a run; the counter must equal the index */
    if (gb_cuda_step(l->s, &l->d->counter[GB_SLOT_F4], &l->d->errors[GB_SLOT_F4],
                     (unsigned)l->launched, 0x80000000u)) {
      l->err = 1;
      return NULL;
    }
    l->launched++;
  }
  return NULL;
}

/* ns per cudaEventQuery: on a pending event (behind a 60 ms kernel; at
 * most 20000 queries or 30 ms), then on the same event completed. */
static int time_queries(cudaStream_t s, cudaEvent_t ev, double *pending, double *done)
{
  enum { Q = 20000 };
  if (ck((cudaError_t)gb_cuda_spin(s, 60000000u, NULL, 0), "F4: the spin kernel's launch") ||
      ck(cudaEventRecord(ev, s), "F4: cudaEventRecord"))
    return -1;
  uint64_t t0 = bench_now_ns(), stop = t0 + 30000000u, t1 = t0;
  int count = 0;
  cudaError_t e = cudaErrorNotReady;
  while (count < Q && (t1 = bench_now_ns()) < stop && (e = cudaEventQuery(ev)) == cudaErrorNotReady)
    count++;
  (void)cudaGetLastError(); /* not-ready must not linger as this thread's last error */
  if (e != cudaErrorNotReady || count < 100) {
    bench_fail("F4: the event behind a 60 ms kernel was %s after %d queries",
               e == cudaSuccess ? "complete" : cudaGetErrorName(e), count);
    return -1;
  }
  *pending = (double)(t1 - t0) / count;
  if (ck(cudaStreamSynchronize(s), "F4: cudaStreamSynchronize"))
    return -1;
  t0 = bench_now_ns();
  for (int i = 0; i < Q; i++)
    if ((e = cudaEventQuery(ev)) != cudaSuccess) {
      bench_fail("F4: a completed event's query returned %s", cudaGetErrorName(e));
      return -1;
    }
  *done = (double)(bench_now_ns() - t0) / Q;
  return 0;
}

static void floor_queries(const gb_opts *o, gb_dev *d, cudaStream_t s, cudaEvent_t ev)
{
  gb_stage("F4 cudaEventQuery cost");
  bench_series f[4]; /* pending, done; alone, then contended */
  for (int k = 0; k < 4; k++)
    bench_series_init(&f[k], o->reps);
  launcher l = {.d = d};
  if (ck(cudaStreamCreateWithFlags(&l.s, cudaStreamNonBlocking), "cudaStreamCreate"))
    goto out;
  for (int r = 0; r < o->reps && !bench_failed(); r++) {
    double p, c;
    if (time_queries(s, ev, &p, &c))
      break;
    bench_series_add(&f[0], p);
    bench_series_add(&f[1], c);
    pthread_t th;
    atomic_store(&l.stop, 0);
    if (pthread_create(&th, NULL, launch_loop, &l)) {
      bench_fail("F4: pthread_create failed");
      break;
    }
    bench_sleep_ns(2000000); /* the launcher is going */
    int rc = time_queries(s, ev, &p, &c);
    atomic_store(&l.stop, 1);
    pthread_join(th, NULL);
    if (l.err)
      bench_fail("F4: the launching thread's launch failed");
    if (rc || l.err || ck(cudaStreamSynchronize(l.s), "F4: the launcher's stream"))
      break;
    bench_series_add(&f[2], p);
    bench_series_add(&f[3], c);
  }
  check_chain(d, GB_SLOT_F4, "F4's launching thread", l.launched);
  static const char *const names[4] = {"event query, pending", "event query, complete",
                                       "event query, pending, + launches",
                                       "event query, complete, + launches"};
  for (int k = 0; k < 4; k++)
    gb_row("cuda", "F4", names[k], NULL, "ns", &f[k], NULL, NULL, -1, NULL);
  cudaStreamDestroy(l.s);
out:
  for (int k = 0; k < 4; k++)
    bench_series_free(&f[k]);
}

/* --------------------------------------------------------------- F1-F3 */

void gb_cuda_floors(const gb_opts *o, gb_dev *d, gb_floors *fl)
{
  unsigned n = o->quick ? 2000 : 10000;
  cudaStream_t s = NULL, s2 = NULL;
  cudaEvent_t ev = NULL, ev2[2] = {NULL, NULL};
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  bench_series f1, f2, f3r, f3w;
  bench_series_init(&f1, o->reps);
  bench_series_init(&f2, o->reps);
  bench_series_init(&f3r, o->reps);
  bench_series_init(&f3w, o->reps);
  char extra[64];
  snprintf(extra, sizeof extra, ",\"kernels\":%u", n);
  if (ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate") ||
      ck(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "cudaStreamCreate") ||
      ck(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate") ||
      ck(cudaEventCreateWithFlags(&ev2[0], cudaEventDisableTiming), "cudaEventCreate") ||
      ck(cudaEventCreateWithFlags(&ev2[1], cudaEventDisableTiming), "cudaEventCreate"))
    goto out;

  gb_stage("F1 launch floor");
  int runs = 0;
  for (int r = -1; r < o->reps; r++) { /* r = -1: warm-up (module load, first launches) */
    uint64_t t0 = bench_now_ns();
    if (launch_chain(d, GB_SLOT_F1, n, s, NULL, NULL, NULL) ||
        ck(cudaStreamSynchronize(s), "F1: cudaStreamSynchronize"))
      goto out;
    runs++;
    if (r >= 0)
      bench_series_add(&f1, (double)(bench_now_ns() - t0) / n);
  }
  check_chain(d, GB_SLOT_F1, "F1", (unsigned long long)runs * n);
  fl->f1 = gb_median(&f1);
  gb_row("cuda", "F1", "launch floor", NULL, "ns/op", &f1, NULL, NULL, -1, extra);

  gb_stage("F2 graph floor");
  if (ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"))
    goto out;
  int lrc = launch_chain(d, GB_SLOT_F2, n, s, NULL, NULL, NULL);
  if (ck(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture") || lrc ||
      ck(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate"))
    goto out;
  runs = 0;
  for (int r = -1; r < o->reps; r++) {
    uint64_t t0 = bench_now_ns();
    if (ck(cudaGraphLaunch(exec, s), "cudaGraphLaunch") ||
        ck(cudaStreamSynchronize(s), "F2: cudaStreamSynchronize"))
      goto out;
    runs++;
    if (r >= 0)
      bench_series_add(&f2, (double)(bench_now_ns() - t0) / n);
  }
  check_chain(d, GB_SLOT_F2, "F2", (unsigned long long)runs * n);
  fl->f2 = gb_median(&f2);
  gb_row("cuda", "F2", "graph floor (per node)", NULL, "ns/op", &f2, NULL, NULL, -1, extra);

  gb_stage("F3 record and cross-stream wait cost");
  runs = 0;
  for (int r = -1; r < o->reps; r++) {
    uint64_t t0 = bench_now_ns();
    if (launch_chain(d, GB_SLOT_F3R, n, s, ev, NULL, NULL) ||
        ck(cudaStreamSynchronize(s), "F3: cudaStreamSynchronize"))
      goto out;
    uint64_t t1 = bench_now_ns();
    if (launch_chain(d, GB_SLOT_F3W, n, s, NULL, s2, ev2) ||
        ck(cudaStreamSynchronize(s), "F3: cudaStreamSynchronize") ||
        ck(cudaStreamSynchronize(s2), "F3: cudaStreamSynchronize"))
      goto out;
    uint64_t t2 = bench_now_ns();
    runs++;
    if (r >= 0) {
      bench_series_add(&f3r, (double)(t1 - t0) / n - fl->f1);
      bench_series_add(&f3w, (double)(t2 - t1) / n - fl->f1);
    }
  }
  check_chain(d, GB_SLOT_F3R, "F3 record", (unsigned long long)runs * n);
  check_chain(d, GB_SLOT_F3W, "F3 cross-stream", (unsigned long long)runs * n);
  fl->f3w = gb_median(&f3w);
  gb_row("cuda", "F3", "event record, over F1", NULL, "ns/op", &f3r, NULL, NULL, -1, extra);
  gb_row("cuda", "F3", "record + cross-stream wait, over F1", NULL, "ns/op", &f3w, NULL, NULL, -1,
         extra);

  floor_queries(o, d, s, ev);
out:
  if (exec)
    cudaGraphExecDestroy(exec);
  if (graph)
    cudaGraphDestroy(graph);
  for (int k = 0; k < 2; k++)
    if (ev2[k])
      cudaEventDestroy(ev2[k]);
  if (ev)
    cudaEventDestroy(ev);
  if (s2)
    cudaStreamDestroy(s2);
  if (s)
    cudaStreamDestroy(s);
  bench_series_free(&f1);
  bench_series_free(&f2);
  bench_series_free(&f3r);
  bench_series_free(&f3w);
}

/* ---------------------------------------------------------------- C4 */

enum { OV_SLOTS = 4, OV_CHUNKS = 40, OV_SAMPLES = 4096 };
#define OV_STAGE_NS 2000000u

static struct overlap {
  int ready;
  size_t words; /* per chunk */
  unsigned *h_in, *h_out[OV_SLOTS], *d_in[OV_SLOTS], *d_out[OV_SLOTS];
  double up, kern, down; /* ns per stage, each alone */
  double hand;           /* the hand-written loop's median figure (%) */
} ov = {.hand = NAN};

static unsigned input_word(size_t i)
{
  return (unsigned)i * 0x9E3779B9u ^ 0x5bd1e995u;
}

/* Chunk key's output in out: every word (all) or OV_SAMPLES spread over it
 * and the last. Returns the number of wrong words. */
static size_t check_chunk(const unsigned *out, unsigned key, int all)
{
  size_t bad = 0, step = all ? 1 : ov.words / OV_SAMPLES;
  for (size_t i = 0; i < ov.words; i += step)
    bad += out[i] != GB_STAGE_VALUE(input_word(i), key);
  bad += out[ov.words - 1] != GB_STAGE_VALUE(input_word(ov.words - 1), key);
  return bad;
}

/* Median elapsed ns of 3 runs of one stage alone on s. */
static double stage_alone(cudaStream_t s, int which)
{
  cudaEvent_t a = NULL, b = NULL;
  double t[3] = {NAN, NAN, NAN};
  size_t bytes = ov.words * sizeof(unsigned);
  if (ck(cudaEventCreate(&a), "cudaEventCreate") || ck(cudaEventCreate(&b), "cudaEventCreate"))
    goto out;
  for (int r = 0; r < 3; r++) {
    cudaError_t e = cudaEventRecord(a, s);
    if (e == cudaSuccess)
      e = which == 0   ? cudaMemcpyAsync(ov.d_in[0], ov.h_in, bytes, cudaMemcpyHostToDevice, s)
          : which == 1 ? (cudaError_t)gb_cuda_stage(s, ov.d_in[0], ov.d_out[0], ov.words, 0,
                                                    OV_STAGE_NS)
                       : cudaMemcpyAsync(ov.h_out[0], ov.d_out[0], bytes, cudaMemcpyDeviceToHost, s);
    float ms = 0;
    if (ck(e, "C4: a stage alone") || ck(cudaEventRecord(b, s), "cudaEventRecord") ||
        ck(cudaEventSynchronize(b), "cudaEventSynchronize") ||
        ck(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime"))
      goto out;
    t[r] = ms * 1e6;
  }
out:
  if (a)
    cudaEventDestroy(a);
  if (b)
    cudaEventDestroy(b);
  double lo = fmin(t[0], fmin(t[1], t[2])), hi = fmax(t[0], fmax(t[1], t[2]));
  return t[0] + t[1] + t[2] - lo - hi; /* NAN if any failed */
}

/* Buffers sized so that a copy takes about OV_STAGE_NS, then the stages
 * timed alone. */
static int overlap_setup(void)
{
  gb_stage("C4 setup");
  cudaStream_t s = NULL;
  if (ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"))
    return -1;
  /* the upload bandwidth, on 64 MiB */
  ov.words = (64u << 20) / sizeof(unsigned);
  if (ck(cudaHostAlloc((void **)&ov.h_in, ov.words * sizeof(unsigned), 0), "cudaHostAlloc") ||
      ck(cudaMalloc((void **)&ov.d_in[0], ov.words * sizeof(unsigned)), "cudaMalloc"))
    return -1;
  memset(ov.h_in, 0, ov.words * sizeof(unsigned));
  double up = stage_alone(s, 0);
  cudaFreeHost(ov.h_in);
  cudaFree(ov.d_in[0]);
  ov.h_in = ov.d_in[0] = NULL;
  if (!(up > 0))
    return -1;
  double bytes = (double)(64u << 20) * OV_STAGE_NS / up;
  bytes = fmin(fmax(bytes, 4u << 20), 256u << 20);
  ov.words = (size_t)(bytes / sizeof(unsigned)) & ~(size_t)1023;
  size_t b = ov.words * sizeof(unsigned);
  if (ck(cudaHostAlloc((void **)&ov.h_in, b, 0), "cudaHostAlloc"))
    return -1;
  for (int k = 0; k < OV_SLOTS; k++)
    if (ck(cudaHostAlloc((void **)&ov.h_out[k], b, 0), "cudaHostAlloc") ||
        ck(cudaMalloc((void **)&ov.d_in[k], b), "cudaMalloc") ||
        ck(cudaMalloc((void **)&ov.d_out[k], b), "cudaMalloc"))
      return -1;
  for (size_t i = 0; i < ov.words; i++)
    ov.h_in[i] = input_word(i);
  ov.up = stage_alone(s, 0);
  ov.kern = stage_alone(s, 1);
  ov.down = stage_alone(s, 2);
  cudaStreamDestroy(s);
  if (!(ov.up > 0 && ov.kern > 0 && ov.down > 0))
    return -1;
  if (check_chunk(ov.h_out[0], 0, 1)) {
    bench_fail("C4: a chunk run alone came back wrong");
    return -1;
  }
  ov.ready = 1;
  return 0;
}

void gb_cuda_overlap_free(void)
{
  cudaFreeHost(ov.h_in);
  for (int k = 0; k < OV_SLOTS; k++) {
    cudaFreeHost(ov.h_out[k]);
    cudaFree(ov.d_in[k]);
    cudaFree(ov.d_out[k]);
  }
  memset(&ov, 0, sizeof ov);
  ov.hand = NAN;
}

/* The last OV_SLOTS chunks, every word (after a run). */
static void check_last(const char *who)
{
  for (int c = OV_CHUNKS - OV_SLOTS; c < OV_CHUNKS; c++) {
    size_t bad = check_chunk(ov.h_out[c % OV_SLOTS], (unsigned)c, 1);
    if (bad)
      bench_fail("C4 (%s): chunk %d: %zu words wrong", who, c, bad);
  }
}

/* One run of the hand-written loop; its wall ns, 0 on failure. */
static uint64_t hand_run(cudaStream_t st[3], cudaEvent_t ev[3][OV_SLOTS])
{
  size_t b = ov.words * sizeof(unsigned);
  uint64_t t0 = bench_now_ns();
  for (int c = 0; c < OV_CHUNKS + OV_SLOTS; c++) {
    int s = c % OV_SLOTS;
    if (c >= OV_SLOTS) { /* chunk c - OV_SLOTS is done with slot s: check it */
      if (ck(cudaEventSynchronize(ev[2][s]), "C4: cudaEventSynchronize"))
        return 0;
      size_t bad = check_chunk(ov.h_out[s], (unsigned)(c - OV_SLOTS), 0);
      if (bad) {
        bench_fail("C4 (hand-written): chunk %d: %zu sampled words wrong", c - OV_SLOTS, bad);
        return 0;
      }
    }
    if (c >= OV_CHUNKS)
      continue;
    cudaError_t e = c >= OV_SLOTS ? cudaStreamWaitEvent(st[0], ev[1][s], 0) : cudaSuccess;
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(ov.d_in[s], ov.h_in, b, cudaMemcpyHostToDevice, st[0]);
    if (e == cudaSuccess)
      e = cudaEventRecord(ev[0][s], st[0]);
    if (e == cudaSuccess)
      e = cudaStreamWaitEvent(st[1], ev[0][s], 0);
    if (e == cudaSuccess)
      e = (cudaError_t)gb_cuda_stage(st[1], ov.d_in[s], ov.d_out[s], ov.words, (unsigned)c,
                                     OV_STAGE_NS);
    if (e == cudaSuccess)
      e = cudaEventRecord(ev[1][s], st[1]);
    if (e == cudaSuccess)
      e = cudaStreamWaitEvent(st[2], ev[1][s], 0);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(ov.h_out[s], ov.d_out[s], b, cudaMemcpyDeviceToHost, st[2]);
    if (e == cudaSuccess)
      e = cudaEventRecord(ev[2][s], st[2]);
    if (ck(e, "C4 (hand-written): enqueueing a chunk"))
      return 0;
  }
  return bench_now_ns() - t0;
}

/* weft's C4 operators. */
typedef struct ov_chunk {
  int c, s;
} ov_chunk;

static int ov_up(const weft_run_ctx *rc, void *arg)
{
  const ov_chunk *k = arg;
  return (int)cudaMemcpyAsync(ov.d_in[k->s], ov.h_in, ov.words * sizeof(unsigned),
                              cudaMemcpyHostToDevice, (cudaStream_t)rc->stream);
}

static int ov_kernel(const weft_run_ctx *rc, void *arg)
{
  const ov_chunk *k = arg;
  return gb_cuda_stage(rc->stream, ov.d_in[k->s], ov.d_out[k->s], ov.words, (unsigned)k->c,
                       OV_STAGE_NS);
}

static int ov_down(const weft_run_ctx *rc, void *arg)
{
  const ov_chunk *k = arg;
  return (int)cudaMemcpyAsync(ov.h_out[k->s], ov.d_out[k->s], ov.words * sizeof(unsigned),
                              cudaMemcpyDeviceToHost, (cudaStream_t)rc->stream);
}

static int ov_check(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  const ov_chunk *k = arg;
  size_t bad = check_chunk(ov.h_out[k->s], (unsigned)k->c, 0);
  if (bad)
    bench_fail("C4 (weft): chunk %d: %zu sampled words wrong", k->c, bad);
  return 0;
}

/* One run through weft; its wall ns, 0 on failure. */
static uint64_t weft_run(weft_engine *eng, weft_var *v[3][OV_SLOTS], ov_chunk *ch)
{
  uint64_t t0 = bench_now_ns();
  int rc = 0;
  for (int c = 0; c < OV_CHUNKS && !rc; c++) {
    int s = c % OV_SLOTS;
    ch[c] = (ov_chunk){c, s};
    weft_var *din = v[0][s], *dout = v[1][s], *hout = v[2][s];
    rc = gb_push(eng, ov_up, &ch[c], NULL, 0, &din, 1, 0, WEFT_PROP_COPY_TO_GPU);
    rc = rc ? rc : gb_push(eng, ov_kernel, &ch[c], &din, 1, &dout, 1, 0, WEFT_PROP_NORMAL);
    rc = rc ? rc : gb_push(eng, ov_down, &ch[c], &dout, 1, &hout, 1, 0, WEFT_PROP_COPY_FROM_GPU);
    rc = rc ? rc : gb_push(eng, ov_check, &ch[c], &hout, 1, NULL, 0, -1, WEFT_PROP_NORMAL);
  }
  int wrc = weft_wait_all(eng);
  uint64_t t = bench_now_ns() - t0;
  if (rc || wrc) {
    bench_fail("C4 (weft): push %s, the run %s", weft_strerror(rc), weft_strerror(wrc));
    return 0;
  }
  return t;
}

void gb_cuda_overlap(const gb_opts *o, weft_engine *eng, const char *mode)
{
  if (!ov.ready && overlap_setup()) {
    bench_fail("C4: setting up the chunks failed");
    return;
  }
  gb_stage(eng ? "C4 overlap through weft" : "C4 overlap, hand-written");
  double mx = fmax(ov.up, fmax(ov.kern, ov.down));
  double ideal = ov.up + ov.kern + ov.down + (OV_CHUNKS - 1) * mx;
  bench_series pct, busy;
  bench_series_init(&pct, o->reps);
  bench_series_init(&busy, o->reps);
  cudaStream_t st[3] = {NULL, NULL, NULL};
  cudaEvent_t ev[3][OV_SLOTS] = {{NULL}};
  weft_var *v[3][OV_SLOTS] = {{NULL}};
  ov_chunk ch[OV_CHUNKS];
  for (int k = 0; k < 3 && eng; k++)
    for (int s = 0; s < OV_SLOTS; s++) {
      int rc = weft_var_new(eng, &v[k][s]);
      if (rc) {
        bench_fail("C4: weft_var_new: %s", weft_strerror(rc));
        goto out;
      }
    }
  if (!eng)
    for (int k = 0; k < 3; k++) {
      if (ck(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking), "cudaStreamCreate"))
        goto out;
      for (int s = 0; s < OV_SLOTS; s++)
        if (ck(cudaEventCreateWithFlags(&ev[k][s], cudaEventDisableTiming), "cudaEventCreate"))
          goto out;
    }
  for (int r = -1; r < o->reps && !bench_failed(); r++) {
    uint64_t t = eng ? weft_run(eng, v, ch) : hand_run(st, ev);
    if (!t)
      break;
    if (r >= 0) {
      bench_series_add(&pct, 100.0 * ideal / (double)t);
      bench_series_add(&busy, 100.0 * OV_CHUNKS * mx / (double)t);
    }
  }
  if (!bench_failed())
    check_last(eng ? "weft" : "hand-written");
  char floor[40] = "-", extra[512];
  int n = snprintf(extra, sizeof extra,
                   ",\"chunks\":%d,\"chunk_bytes\":%zu,\"stage_ns\":{\"up\":%.0f,\"kernel\":%.0f,"
                   "\"down\":%.0f},\"ideal_ns\":%.0f,\"busy_over_wall_pct\":[",
                   OV_CHUNKS, ov.words * sizeof(unsigned), ov.up, ov.kern, ov.down, ideal);
  for (int i = 0; i < busy.n && n > 0 && (size_t)n < sizeof extra; i++)
    n += snprintf(extra + n, sizeof extra - (size_t)n, "%s%.1f", i ? "," : "", busy.v[i]);
  if (n > 0 && (size_t)n < sizeof extra)
    snprintf(extra + n, sizeof extra - (size_t)n, "]");
  if (!eng) {
    ov.hand = gb_median(&pct);
    gb_row("cuda", "C4", "overlap, hand-written 3 streams", NULL, "%", &pct, NULL, ">= 97%",
           pct.n ? ov.hand >= 97 : -1, extra);
  } else {
    if (isfinite(ov.hand))
      snprintf(floor, sizeof floor, "hand-written %.1f%%", ov.hand);
    gb_row("weft", "C4", "copy/compute overlap", mode, "%", &pct, floor, ">= 97%",
           pct.n ? gb_median(&pct) >= 97 : -1, extra);
  }
out:
  for (int k = 0; k < 3; k++) {
    for (int s = 0; s < OV_SLOTS; s++) {
      if (ev[k][s])
        cudaEventDestroy(ev[k][s]);
      if (v[k][s])
        weft_var_delete(eng, v[k][s]);
    }
    if (st[k])
      cudaStreamDestroy(st[k]);
  }
  bench_series_free(&pct);
  bench_series_free(&busy);
}
