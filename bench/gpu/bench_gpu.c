/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu: the GPU layer against the hardware's own floors (a launch, a
 * launch and sync, a dependent pair across streams, an event poll, a host
 * function round trip, a CUDA graph per kernel), each beside weft's row for
 * the same shape (docs/results.md, "GPU bench").
 *
 *   bench_gpu [--quick] [--modes hostword,event,blocking] [--reps R]
 *             [--host] [--timeout S]
 *
 * The raw CUDA floors (bench_gpu_cuda.c), measured once, no weft:
 *   F1  launch floor: N one-thread kernels back to back on one stream,
 *       wall / N (N = 10000, --quick 2000).
 *   F2  graph floor: the same N kernels captured as one CUDA graph
 *       (cudaStreamBeginCapture), launched; wall / N.
 *   F3  the extra cost per kernel of an event record after it, and of a
 *       cross-stream hop (record, then the other stream waits on it; the
 *       kernels alternate between two streams), each minus F1.
 *   F4  ns per cudaEventQuery on a pending and on a completed event, alone
 *       and while another thread launches kernels.
 * The weft rows, once per completion mode (WEFT_GPU_COMPLETION, set before
 * each mode's engine is created; a fresh engine per mode):
 *   C1  weft chain: N GPU operators on one var, each launching one kernel
 *       that checks and increments a counter (so each needs the previous
 *       one's write); first push to weft_var_wait's return, / N.
 *   C2  the CPU time of the completion threads (every thread whose name
 *       starts with "weft-gpu-": user + system, the kernel's per-thread CPU
 *       clocks) / wall: during each C1 run, and during one 200 ms kernel.
 *   C3  completion latency: a GPU operator whose kernel spins L (0, 10 us,
 *       100 us, 1 ms, 20 ms of the GPU's global timer) and then writes a
 *       sequence number into pinned, mapped host memory; a thread of ours
 *       spins on that word and stamps when it changes; a CPU operator
 *       reading the GPU operator's var stamps its start. Latency = start -
 *       stamp (CLOCK_MONOTONIC both); median and p99 over the samples.
 *   C4  copy/compute overlap (CUDA only, bench_gpu_cuda.c).
 *   C5  cross-stream chain: C1 with consecutive operators on the two
 *       compute workers (WEFT_GPU_WORKERS=2), so that every hop is a
 *       cross-stream wait (an event record, then the other stream waits).
 *       weft puts a GPU operator behind the first predecessor it waits for
 *       on the device (src/gpu/executor.c, choose_lane), so a plain chain
 *       stays on one stream. Here link j writes o[j % 2] and t: its first
 *       device wait is link j-2's (on o[j % 2]), which puts it on j-2's
 *       stream, the other one than j-1's; t orders every link after the
 *       previous one. Two anchors, one per stream (o[0], o[1]: round robin
 *       for their first two submissions), and a CPU gate on t hold the
 *       chain until all of it is pushed (so no link is granted before it
 *       is pushed); the clock starts when they let go. The streams the
 *       links ran on are recorded: the row names the share of the hops
 *       that crossed streams (100% expected; see row_cross for the
 *       var-order detail that makes it so).
 *   C6  replayed chain: C1's N operators captured once as a weft graph
 *       (weft_graph_begin_capture / end_capture), launched R times; each
 *       launch to weft_var_wait's return, / N. Twice: plain operators
 *       (each launched by its worker, waiting for the one before on the
 *       device), then with WEFT_OP_GPU_GRAPH (the chain is one run,
 *       recorded at the first launch and replayed as one device graph).
 * Every figure checks its result: the chain counters must end at exactly
 * the links launched with no link finding a wrong value (on the device), the
 * CPU successor must see the flag its GPU operator wrote, the copied bytes
 * must be what the kernel made of them. A wrong result: exit 1. A missed
 * target is not a wrong result (the table says NO).
 *
 * Output: one JSON line per figure as it is measured (harness.h's format,
 * with "figure", "mode", "median", "min", "max", "floor", "target", "met"),
 * then the table: figure, mode, value (median [min-max] over the
 * repetitions, or over the samples for C3), floor, target, met.
 *
 * --host: the weft rows C1, C2, C3, C5, C6 on the host backend
 * (WEFT_GPU_BACKEND=host: emulated devices; each "kernel" is a
 * weft_gpu_host_enqueue item doing the same check, spin and flag write) at
 * small sizes, no CUDA call at all; the targets are not judged there (met
 * "-"). Without --host and without a usable CUDA device (no driver, no
 * device, or a build without CUDA) one line says so and the exit status is
 * 77 (skipped), but only where no GPU is present (tests/gpu/gpu_present.h:
 * /dev/nvidia<N>): a GPU that CUDA cannot use fails the bench (exit 1), the
 * line naming the driver's and the runtime's CUDA versions. --timeout S (default 290, 0: none): a run still going
 * after S seconds prints where it was and exits 1 (a hung device operator
 * would otherwise wait for weft's watchdog: the bench sets
 * WEFT_GPU_WATCHDOG_MS to 30000 unless the environment has it).
 */
#include "bench_gpu_shared.h"
/* whether a GPU is present without CUDA (shared with the CUDA suites) */
#include "../../tests/gpu/gpu_present.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


/* --------------------------------------------------- completion threads */

/* Per-thread CPU time of every thread of this process whose name starts
 * with "weft-gpu-" (the completion path's threads). The kernel's CPU
 * clock of a thread (what pthread_getcpuclockid gives for a pthread_t,
 * built from the tid as glibc does: ~tid << 3 | CPUCLOCK_SCHED |
 * CPUCLOCK_PERTHREAD) has nanosecond resolution; /proc's stat counts ticks
 * of 10 ms, too coarse for a 50 ms run. */
enum { MAX_WATCHED = 64 };
typedef struct cpu_snap {
  int n;
  long tid[MAX_WATCHED];
  uint64_t ns[MAX_WATCHED];
} cpu_snap;

static void cpu_snapshot(cpu_snap *s)
{
  s->n = 0;
  DIR *dir = opendir("/proc/self/task");
  if (!dir)
    return;
  struct dirent *e;
  while ((e = readdir(dir)) && s->n < MAX_WATCHED) {
    long tid = atol(e->d_name);
    if (tid <= 0)
      continue;
    char path[64], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f)
      continue; /* gone meanwhile */
    if (!fgets(comm, sizeof comm, f))
      comm[0] = 0;
    fclose(f);
    if (strncmp(comm, "weft-gpu-", 9) != 0)
      continue;
    clockid_t clk = (clockid_t)((unsigned)~(unsigned)tid << 3 | 6u);
    struct timespec ts;
    if (clock_gettime(clk, &ts) != 0)
      continue;
    s->tid[s->n] = tid;
    s->ns[s->n++] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  }
  closedir(dir);
}

/* CPU ns the watched threads spent between a and b; *nthreads: how many
 * were seen at b. A thread born in between counts from 0. */
static uint64_t cpu_between(const cpu_snap *a, const cpu_snap *b, int *nthreads)
{
  uint64_t sum = 0;
  for (int i = 0; i < b->n; i++) {
    uint64_t before = 0;
    for (int k = 0; k < a->n; k++)
      if (a->tid[k] == b->tid[i])
        before = a->ns[k];
    sum += b->ns[i] - before;
  }
  *nthreads = b->n;
  return sum;
}

/* ------------------------------------------------------ the device side */

/* One link of a chain (C1, C5, C6). */
typedef struct link_arg {
  gb_dev *d;
  int slot;
  unsigned i, n;
  void **streams; /* C5: the stream each link ran on, else NULL */
} link_arg;

static void host_step(void *arg)
{
  link_arg *a = arg;
  unsigned *c = &a->d->counter[a->slot];
  if (*c % a->n != a->i)
    a->d->errors[a->slot]++;
  ++*c;
}

static int link_op(const weft_run_ctx *rc, void *arg)
{
  link_arg *a = arg;
  if (a->streams)
    a->streams[a->i] = rc->stream;
  if (a->d->host)
    return weft_gpu_host_enqueue(rc->stream, host_step, a);
#if BENCH_GPU_CUDA
  int e = gb_cuda_step(rc->stream, &a->d->counter[a->slot], &a->d->errors[a->slot], a->i, a->n);
  if (e)
    fprintf(stderr, "bench_gpu: link %u: launch failed: %s\n", a->i, gb_cuda_error_name(e));
  return e;
#else
  return -1; /* unreachable: d->host is set in a build without CUDA */
#endif
}

/* A kernel spinning ns, then writing seq to the flag (flag: 1) (C2, C3). */
typedef struct spin_arg {
  gb_dev *d;
  uint64_t ns;
  unsigned seq;
  int flag;
  uint64_t t_start;  /* C3's successor: when it started */
  int bad;           /* C3's successor: the flag was not there */
} spin_arg;

static void host_spin(void *arg)
{
  spin_arg *a = arg;
  uint64_t end = bench_now_ns() + a->ns;
  while (bench_now_ns() < end)
    bench_cpu_relax();
  if (a->flag)
    __atomic_store_n(&a->d->mapped[GB_W_FLAG], a->seq, __ATOMIC_RELEASE);
}

static int spin_op(const weft_run_ctx *rc, void *arg)
{
  spin_arg *a = arg;
  if (a->d->host)
    return weft_gpu_host_enqueue(rc->stream, host_spin, a);
#if BENCH_GPU_CUDA
  int e = gb_cuda_spin(rc->stream, a->ns, a->flag ? &a->d->mapped_dev[GB_W_FLAG] : NULL, a->seq);
  if (e)
    fprintf(stderr, "bench_gpu: spin kernel: launch failed: %s\n", gb_cuda_error_name(e));
  return e;
#else
  return -1; /* unreachable, as in link_op */
#endif
}

/* C5's anchors: a kernel that holds its stream until the release word is set. */
typedef struct hold_arg {
  gb_dev *d;
  atomic_int called; /* its fn ran: it was submitted, to its stream */
} hold_arg;

static void host_hold(void *arg)
{
  hold_arg *a = arg;
  uint64_t end = bench_now_ns() + GB_HOLD_TIMEOUT_NS;
  while (!__atomic_load_n(&a->d->mapped[GB_W_RELEASE], __ATOMIC_ACQUIRE))
    if (bench_now_ns() > end) {
      __atomic_store_n(&a->d->mapped[GB_W_TIMED_OUT], 1u, __ATOMIC_RELEASE);
      return;
    } else {
      bench_cpu_relax();
    }
}

static int hold_op(const weft_run_ctx *rc, void *arg)
{
  hold_arg *a = arg;
  atomic_store(&a->called, 1);
  if (a->d->host)
    return weft_gpu_host_enqueue(rc->stream, host_hold, a);
#if BENCH_GPU_CUDA
  int e = gb_cuda_hold(rc->stream, &a->d->mapped_dev[GB_W_RELEASE],
                       &a->d->mapped_dev[GB_W_TIMED_OUT], GB_HOLD_TIMEOUT_NS);
  if (e)
    fprintf(stderr, "bench_gpu: hold kernel: launch failed: %s\n", gb_cuda_error_name(e));
  return e;
#else
  return -1; /* unreachable, as in link_op */
#endif
}

static int read_slot(const gb_dev *d, int slot, unsigned *counter, unsigned *errors)
{
  if (d->host) {
    *counter = d->counter[slot];
    *errors = d->errors[slot];
    return 0;
  }
#if BENCH_GPU_CUDA
  return gb_cuda_read_slot(d, slot, counter, errors);
#else
  return -1;
#endif
}

/* A chain counter's values when a figure begins: the slots keep counting
 * across modes (each figure's chains are whole, so the count stays a
 * multiple of its length, which the links' check needs). */
typedef struct slot_base {
  unsigned counter, errors;
} slot_base;

static slot_base slot_begin(const gb_dev *d, int slot, const char *what)
{
  slot_base b = {0, 0};
  if (read_slot(d, slot, &b.counter, &b.errors))
    bench_fail("%s: reading the chain counter failed", what);
  return b;
}

/* The figure's chains ran want links since b, each finding its
 * predecessor's value. */
static void check_slot(const gb_dev *d, int slot, const char *what, slot_base b,
                       unsigned long long want)
{
  unsigned c = 0, e = 0;
  if (read_slot(d, slot, &c, &e)) {
    bench_fail("%s: reading the chain counter back failed", what);
    return;
  }
  if (c - b.counter != (unsigned)want || e != b.errors)
    bench_fail("%s: the chain ran %u links (want %u), %u of them found a wrong value", what,
               c - b.counter, (unsigned)want, e - b.errors);
}

/* ---------------------------------------------------------- weft helpers */


/* A weft call's failure, named; returns rc. */
static int wcheck(int rc, const char *what)
{
  if (rc)
    bench_fail("%s: %s", what, weft_strerror(rc));
  return rc;
}

/* ------------------------------------------------------------ one mode */

typedef struct mode_ctx {
  const gb_opts *o;
  gb_dev *d;
  const gb_floors *fl;
  const char *mode;
  weft_engine *eng;
  unsigned n;      /* links per chain */
  double c1_ns;    /* C1's median, C5's floor */
} mode_ctx;

static const char *rt_of(const mode_ctx *m)
{
  return m->d->host ? "weft-host" : "weft";
}

/* met for a target: -1 on the host backend or without a floor. */
static int judged(const mode_ctx *m, double limit, double value, int upper)
{
  if (m->d->host || !isfinite(limit))
    return -1;
  return upper ? value <= limit : value >= limit;
}

/* C1, with C2 around each run. */
static void row_chain(mode_ctx *m)
{
  gb_stage("C1 weft chain");
  unsigned n = m->n;
  link_arg *args = calloc(n, sizeof *args);
  bench_series ns, cpu;
  bench_series_init(&ns, m->o->reps);
  bench_series_init(&cpu, m->o->reps);
  weft_var *v = NULL;
  int nthreads = 0;
  if (!args || wcheck(weft_var_new(m->eng, &v), "C1: weft_var_new"))
    goto out;
  for (unsigned i = 0; i < n; i++)
    args[i] = (link_arg){m->d, GB_SLOT_C1, i, n, NULL};
  slot_base base = slot_begin(m->d, GB_SLOT_C1, "C1");
  int runs = 0;
  for (int r = -1; r < m->o->reps && !bench_failed(); r++) { /* r = -1: warm-up */
    cpu_snap a, b;
    cpu_snapshot(&a);
    uint64_t t0 = bench_now_ns();
    int rc = 0;
    for (unsigned i = 0; i < n && !rc; i++)
      rc = gb_push(m->eng, link_op, &args[i], NULL, 0, &v, 1, 0, WEFT_PROP_NORMAL);
    int wrc = weft_var_wait(m->eng, v);
    uint64_t t1 = bench_now_ns();
    cpu_snapshot(&b);
    runs++;
    if (wcheck(rc, "C1: weft_push") || wcheck(wrc, "C1: the chain failed"))
      break;
    if (r >= 0) {
      bench_series_add(&ns, (double)(t1 - t0) / n);
      bench_series_add(&cpu, 100.0 * (double)cpu_between(&a, &b, &nthreads) / (double)(t1 - t0));
    }
  }
  check_slot(m->d, GB_SLOT_C1, "C1", base, (unsigned long long)runs * n);
  m->c1_ns = gb_median(&ns);
  char floor[40] = "-", target[40] = "-", extra[96];
  if (isfinite(m->fl->f1)) {
    snprintf(floor, sizeof floor, "F1 %.0f", m->fl->f1);
    snprintf(target, sizeof target, "<= %.0f (1.2 x F1)", 1.2 * m->fl->f1);
  }
  snprintf(extra, sizeof extra, ",\"ops\":%u", n);
  gb_row(rt_of(m), "C1", "weft chain", m->mode, "ns/op", &ns, floor, target,
         judged(m, 1.2 * m->fl->f1, m->c1_ns, 1), extra);
  snprintf(extra, sizeof extra, ",\"threads_watched\":%d", nthreads);
  char name[64];
  snprintf(name, sizeof name, "completion CPU, chain (%d thr)", nthreads);
  gb_row(rt_of(m), "C2", name, m->mode, "%", &cpu, "-", "<= 10%", judged(m, 10, gb_median(&cpu), 1),
         extra);
out:
  if (v)
    weft_var_delete(m->eng, v);
  free(args);
  bench_series_free(&ns);
  bench_series_free(&cpu);
}

/* C2 during one long kernel (200 ms; --host --quick: 20 ms). */
static void row_idle_cpu(mode_ctx *m)
{
  gb_stage("C2 completion CPU during a long kernel");
  uint64_t len = m->d->host && m->o->quick ? 20000000u : 200000000u;
  int reps = m->o->quick ? 1 : 3;
  bench_series cpu;
  bench_series_init(&cpu, reps);
  weft_var *g = NULL;
  int nthreads = 0;
  if (wcheck(weft_var_new(m->eng, &g), "C2: weft_var_new"))
    goto out;
  for (int r = 0; r < reps && !bench_failed(); r++) {
    spin_arg a = {.d = m->d, .ns = len};
    cpu_snap s0, s1;
    cpu_snapshot(&s0);
    uint64_t t0 = bench_now_ns();
    int rc = gb_push(m->eng, spin_op, &a, NULL, 0, &g, 1, 0, WEFT_PROP_NORMAL);
    int wrc = weft_var_wait(m->eng, g);
    uint64_t t1 = bench_now_ns();
    cpu_snapshot(&s1);
    if (wcheck(rc, "C2: weft_push") || wcheck(wrc, "C2: the long kernel failed"))
      break;
    if (t1 - t0 < len)
      bench_fail("C2: the %llu ms kernel completed after %.1f ms", (unsigned long long)(len / 1000000),
                 (double)(t1 - t0) / 1e6);
    bench_series_add(&cpu, 100.0 * (double)cpu_between(&s0, &s1, &nthreads) / (double)(t1 - t0));
  }
  char name[64], extra[64];
  snprintf(name, sizeof name, "completion CPU, %llu ms kernel (%d thr)",
           (unsigned long long)(len / 1000000), nthreads);
  snprintf(extra, sizeof extra, ",\"threads_watched\":%d", nthreads);
  gb_row(rt_of(m), "C2", name, m->mode, "%", &cpu, "-", "<= 1% (~0)", judged(m, 1, gb_median(&cpu), 1),
         extra);
out:
  if (g)
    weft_var_delete(m->eng, g);
  bench_series_free(&cpu);
}

/* C3's observer: stamps each new value of the flag. */
typedef struct observer {
  const unsigned *flag;
  uint64_t *seen; /* seen[seq]: when seq appeared (0: not yet) */
  unsigned cap;
  atomic_int stop;
} observer;

static void *observe(void *arg)
{
  observer *ob = arg;
  unsigned last = 0; /* what the flag was reset to before this thread began: it may start late */
  while (!atomic_load_explicit(&ob->stop, memory_order_relaxed)) {
    unsigned v = __atomic_load_n(ob->flag, __ATOMIC_ACQUIRE);
    if (v == last) {
      bench_cpu_relax();
      continue;
    }
    uint64_t t = bench_now_ns();
    if (v < ob->cap)
      __atomic_store_n(&ob->seen[v], t, __ATOMIC_RELEASE);
    last = v;
  }
  return NULL;
}

static int successor_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  spin_arg *a = arg;
  a->t_start = bench_now_ns();
  if (__atomic_load_n(&a->d->mapped[GB_W_FLAG], __ATOMIC_ACQUIRE) != a->seq)
    a->bad = 1;
  return 0;
}

/* C3: completion latency at each kernel length. */
static void row_latency(mode_ctx *m)
{
  gb_stage("C3 completion latency");
  static const uint64_t len_full[] = {0, 10000, 100000, 1000000, 20000000};
  static const int samples_full[] = {200, 200, 200, 100, 20}, samples_quick[] = {50, 50, 50, 20, 5};
  static const uint64_t len_host[] = {0, 100000, 1000000};
  static const int samples_host[] = {50, 50, 20}, samples_host_quick[] = {10, 10, 0};
  const uint64_t *len = m->d->host ? len_host : len_full;
  const int *samples = m->d->host ? (m->o->quick ? samples_host_quick : samples_host)
                                  : (m->o->quick ? samples_quick : samples_full);
  int nlen = m->d->host ? 3 : 5;
  unsigned total = 1;
  for (int k = 0; k < nlen; k++)
    total += (unsigned)samples[k] + 1; /* + 1: an untimed first sample per length */
  observer ob = {.flag = &m->d->mapped[GB_W_FLAG], .cap = total + 1};
  ob.seen = calloc(ob.cap, sizeof *ob.seen);
  weft_var *gv = NULL, *cv = NULL;
  pthread_t th;
  int started = 0;
  __atomic_store_n(&m->d->mapped[GB_W_FLAG], 0u, __ATOMIC_RELEASE);
  if (!ob.seen || wcheck(weft_var_new(m->eng, &gv), "C3: weft_var_new") ||
      wcheck(weft_var_new(m->eng, &cv), "C3: weft_var_new"))
    goto out;
  if (pthread_create(&th, NULL, observe, &ob)) {
    bench_fail("C3: pthread_create failed");
    goto out;
  }
  started = 1;
  unsigned seq = 0;
  for (int k = 0; k < nlen && !bench_failed(); k++) {
    if (samples[k] == 0)
      continue;
    bench_series lat;
    bench_series_init(&lat, samples[k]);
    int late = 0; /* the observer stamped after the successor started */
    for (int s = -1; s < samples[k] && !bench_failed(); s++) {
      spin_arg a = {.d = m->d, .ns = len[k], .seq = ++seq, .flag = 1};
      int rc = gb_push(m->eng, spin_op, &a, NULL, 0, &gv, 1, 0, WEFT_PROP_NORMAL);
      rc = rc ? rc : gb_push(m->eng, successor_op, &a, &gv, 1, &cv, 1, -1, WEFT_PROP_NORMAL);
      int wrc = weft_var_wait(m->eng, cv);
      if (wcheck(rc, "C3: weft_push") || wcheck(wrc, "C3: the GPU operator failed"))
        break;
      if (a.bad) {
        bench_fail("C3: the successor of operator %u ran before its flag was written", a.seq);
        break;
      }
      uint64_t deadline = bench_now_ns() + 1000000000u, t;
      while ((t = __atomic_load_n(&ob.seen[a.seq], __ATOMIC_ACQUIRE)) == 0 &&
             bench_now_ns() < deadline)
        bench_cpu_relax();
      if (t == 0) {
        bench_fail("C3: the observer never saw flag %u", a.seq);
        break;
      }
      if (s >= 0) {
        late += a.t_start < t;
        bench_series_add(&lat, ((double)a.t_start - (double)t) / 1000.0);
      }
    }
    char name[64], extra[96], lname[24];
    if (len[k] >= 1000000)
      snprintf(lname, sizeof lname, "%llu ms", (unsigned long long)(len[k] / 1000000));
    else
      snprintf(lname, sizeof lname, "%llu us", (unsigned long long)(len[k] / 1000));
    snprintf(extra, sizeof extra, ",\"kernel_ns\":%llu,\"observer_late\":%d",
             (unsigned long long)len[k], late);
    if (lat.n) {
      snprintf(name, sizeof name, "latency, %s kernel, median", lname);
      gb_row(rt_of(m), "C3", name, m->mode, "us", &lat, "-", "<= 10 us",
             judged(m, 10, gb_median(&lat), 1), extra);
      bench_series p99;
      bench_series_init(&p99, 1);
      bench_series_add(&p99, gb_quantile(&lat, 0.99));
      snprintf(name, sizeof name, "latency, %s kernel, p99", lname);
      gb_row(rt_of(m), "C3", name, m->mode, "us", &p99, "-", "<= 50 us", judged(m, 50, p99.v[0], 1),
             extra);
      bench_series_free(&p99);
    }
    bench_series_free(&lat);
  }
out:
  if (started) {
    atomic_store(&ob.stop, 1);
    pthread_join(th, NULL);
  }
  if (gv)
    weft_var_delete(m->eng, gv);
  if (cv)
    weft_var_delete(m->eng, cv);
  free(ob.seen);
}

/* C5's gate: a CPU operator on t that returns once main has pushed the
 * whole chain. */
static int gate_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  if (bench_event_wait(arg, 10000000000u)) {
    bench_fail("C5: the gate was not opened within 10 s");
    return -1;
  }
  return 0;
}

/* C5: the chain across two streams (see the header). */
static void row_cross(mode_ctx *m)
{
  gb_stage("C5 cross-stream chain");
  unsigned n = m->n;
  link_arg *args = calloc(n, sizeof *args);
  void **streams = calloc(n, sizeof *streams);
  bench_series ns, cross;
  bench_series_init(&ns, m->o->reps);
  bench_series_init(&cross, m->o->reps);
  weft_var *o[2] = {NULL, NULL}, *t = NULL, *v3[3] = {NULL, NULL, NULL};
  int runs = 0;
  unsigned *words = m->d->mapped;
  for (int i = 0; i < 3; i++)
    if (wcheck(weft_var_new(m->eng, &v3[i]), "C5: weft_var_new"))
      goto out;
  /* t is the var whose handle's slot index (its low 32 bits) is the
   * largest: a launched operator releases its vars in slot order
   * (src/deps/push.c, insert_use; deps/executor.c, weft_exec_op_launched), so
   * link j gives o[j % 2] to link j+2 before t to link j+1, whose launch
   * then gives t to j+2: j+2's first device wait is always j's. */
  for (int i = 0; i < 2; i++)
    for (int k = i + 1; k < 3; k++)
      if ((uint32_t)(uintptr_t)v3[k] < (uint32_t)(uintptr_t)v3[i]) {
        weft_var *x = v3[i];
        v3[i] = v3[k];
        v3[k] = x;
      }
  o[0] = v3[0];
  o[1] = v3[1];
  t = v3[2];
  if (!args || !streams)
    goto out;
  for (unsigned i = 0; i < n; i++)
    args[i] = (link_arg){m->d, GB_SLOT_C5, i, n, streams};
  slot_base base = slot_begin(m->d, GB_SLOT_C5, "C5");
  for (int r = -1; r < m->o->reps && !bench_failed(); r++) { /* r = -1: warm-up */
    /* Nothing of this runs yet: each anchor holds its stream until
     * released, the gate holds t until opened, and every link waits for
     * an anchor and for the gate (through t). */
    __atomic_store_n(&words[GB_W_RELEASE], 0u, __ATOMIC_RELEASE);
    hold_arg anchor[2] = {{.d = m->d}, {.d = m->d}};
    bench_event go;
    bench_event_init(&go);
    int rc = gb_push(m->eng, hold_op, &anchor[0], NULL, 0, &o[0], 1, 0, WEFT_PROP_NORMAL);
    rc = rc ? rc : gb_push(m->eng, hold_op, &anchor[1], NULL, 0, &o[1], 1, 0, WEFT_PROP_NORMAL);
    rc = rc ? rc : gb_push(m->eng, gate_op, &go, NULL, 0, &t, 1, -1, WEFT_PROP_NORMAL);
    /* The anchors are on their streams before link 0 and 1 come: their
     * submissions took consecutive turns of the round robin. */
    uint64_t deadline = bench_now_ns() + 5000000000u;
    while (!rc && !(atomic_load(&anchor[0].called) && atomic_load(&anchor[1].called)) &&
           bench_now_ns() < deadline)
      bench_cpu_relax();
    if (!rc && !(atomic_load(&anchor[0].called) && atomic_load(&anchor[1].called)))
      bench_fail("C5: the anchor operators did not start within 5 s");
    for (unsigned j = 0; j < n && !rc; j++) {
      weft_var *w[2] = {o[j % 2], t};
      rc = gb_push(m->eng, link_op, &args[j], NULL, 0, w, 2, 0, WEFT_PROP_NORMAL);
    }
    uint64_t t0 = bench_now_ns();
    __atomic_store_n(&words[GB_W_RELEASE], 1u, __ATOMIC_RELEASE);
    bench_event_post(&go); /* also when a push failed: what was pushed must end */
    int wrc = weft_var_wait(m->eng, t);
    uint64_t t1 = bench_now_ns();
    int arc = weft_var_wait(m->eng, o[0]);
    arc = arc ? arc : weft_var_wait(m->eng, o[1]);
    bench_event_destroy(&go);
    runs++;
    if (wcheck(rc, "C5: weft_push") || wcheck(wrc, "C5: the chain failed") ||
        wcheck(arc, "C5: an anchor failed") || bench_failed())
      break;
    if (__atomic_load_n(&words[GB_W_TIMED_OUT], __ATOMIC_ACQUIRE)) {
      bench_fail("C5: an anchor's hold kernel was not released within 10 s");
      break;
    }
    unsigned sw = 0;
    for (unsigned i = 1; i < n; i++)
      sw += streams[i] != streams[i - 1];
    if (r >= 0) {
      bench_series_add(&ns, (double)(t1 - t0) / n);
      bench_series_add(&cross, 100.0 * sw / (n - 1));
    }
  }
  check_slot(m->d, GB_SLOT_C5, "C5", base, (unsigned long long)runs * n);
  if (ns.n) {
    double med = gb_median(&ns), cr = gb_median(&cross);
    double limit = m->c1_ns + m->fl->f3w;
    char name[64], floor[40] = "-", target[40] = "-", extra[160];
    snprintf(name, sizeof name, "cross-stream chain (%.0f%% hops)", cr);
    if (isfinite(limit)) {
      snprintf(floor, sizeof floor, "C1 %.0f + F3w %.0f", m->c1_ns, m->fl->f3w);
      snprintf(target, sizeof target, "<= %.0f (C1 + F3w)", limit);
    }
    int k = snprintf(extra, sizeof extra, ",\"ops\":%u,\"cross_stream_hops_pct\":[", n);
    for (int i = 0; i < cross.n && k > 0 && (size_t)k < sizeof extra; i++)
      k += snprintf(extra + k, sizeof extra - (size_t)k, "%s%.1f", i ? "," : "", cross.v[i]);
    if (k > 0 && (size_t)k < sizeof extra)
      snprintf(extra + k, sizeof extra - (size_t)k, "]");
    gb_row(rt_of(m), "C5", name, m->mode, "ns/op", &ns, floor, target, judged(m, limit, med, 1),
           extra);
    if (cr < 90)
      printf("bench_gpu: C5 (%s): only %.0f%% of the hops crossed streams: the figure is mostly a "
             "one-stream chain\n",
             m->mode, cr);
  }
out:
  for (int i = 0; i < 3; i++)
    if (v3[i])
      weft_var_delete(m->eng, v3[i]);
  free(args);
  free(streams);
  bench_series_free(&ns);
  bench_series_free(&cross);
}

/* C6: C1's chain captured once and replayed; as_run: its operators carry
 * WEFT_OP_GPU_GRAPH (one run, one device graph a launch). */
static void row_replay(mode_ctx *m, bool as_run)
{
  gb_stage(as_run ? "C6 replayed chain, one run" : "C6 replayed chain");
  unsigned n = m->n;
  link_arg *args = calloc(n, sizeof *args);
  bench_series ns;
  bench_series_init(&ns, m->o->reps);
  weft_var *v = NULL;
  weft_graph *g = NULL;
  int launches = 0;
  if (!args || wcheck(weft_var_new(m->eng, &v), "C6: weft_var_new"))
    goto out;
  for (unsigned i = 0; i < n; i++)
    args[i] = (link_arg){m->d, GB_SLOT_C6, i, n, NULL};
  slot_base base = slot_begin(m->d, GB_SLOT_C6, "C6");
  int rc = weft_graph_begin_capture(m->eng);
  for (unsigned i = 0; i < n && !rc; i++)
    rc = gb_push_flags(m->eng, link_op, &args[i], NULL, 0, &v, 1, 0, WEFT_PROP_NORMAL,
                       as_run ? WEFT_OP_GPU_GRAPH : 0);
  int erc = weft_graph_end_capture(m->eng, &g);
  if (wcheck(rc, "C6: capture") || wcheck(erc, "C6: weft_graph_end_capture"))
    goto out;
  for (int r = -1; r < m->o->reps && !bench_failed(); r++) {
    uint64_t t0 = bench_now_ns();
    while ((rc = weft_graph_launch(g)) == WEFT_EBUSY)
      weft_var_wait(m->eng, v); /* the previous launch's end is still being recorded */
    int wrc = rc ? 0 : weft_var_wait(m->eng, v);
    uint64_t t1 = bench_now_ns();
    if (wcheck(rc, "C6: weft_graph_launch") || wcheck(wrc, "C6: the replayed chain failed"))
      break;
    launches++;
    if (r >= 0)
      bench_series_add(&ns, (double)(t1 - t0) / n);
  }
  check_slot(m->d, GB_SLOT_C6, "C6", base, (unsigned long long)launches * n);
  char floor[40] = "-", target[40] = "-", extra[64];
  if (isfinite(m->fl->f2)) {
    snprintf(floor, sizeof floor, "F2 %.0f", m->fl->f2);
    snprintf(target, sizeof target, "<= %.0f (1.5 x F2)", 1.5 * m->fl->f2);
  }
  snprintf(extra, sizeof extra, ",\"ops\":%u", n);
  gb_row(rt_of(m), "C6", as_run ? "replayed chain, one run" : "replayed chain", m->mode, "ns/op",
         &ns, floor, target,
         judged(m, 1.5 * m->fl->f2, gb_median(&ns), 1), extra);
out:
  if (g)
    wcheck(weft_graph_destroy(g), "C6: weft_graph_destroy");
  if (v)
    weft_var_delete(m->eng, v);
  free(args);
  bench_series_free(&ns);
}

static void run_mode(const gb_opts *o, gb_dev *d, const gb_floors *fl, const char *mode)
{
  /* Read by weft_engine_create; the only thread here is this one (the
   * previous mode's engine and pool are gone). */
  setenv("WEFT_GPU_COMPLETION", mode, 1);
  mode_ctx m = {.o = o, .d = d, .fl = fl, .mode = mode, .c1_ns = NAN};
  m.n = d->host ? (o->quick ? 300 : 2000) : (o->quick ? 2000 : 10000);
  gb_stage("weft_engine_create");
  if (wcheck(weft_engine_create(&m.eng, NULL), "weft_engine_create"))
    return;
  if (weft_gpu_count(m.eng) < 1) {
    bench_fail("%s: the engine sees no GPU (WEFT_GPU_BACKEND=%s)", mode, getenv("WEFT_GPU_BACKEND"));
  } else {
    row_chain(&m);
    if (!bench_failed())
      row_idle_cpu(&m);
    if (!bench_failed())
      row_latency(&m);
#if BENCH_GPU_CUDA
    if (!bench_failed() && !d->host)
      gb_cuda_overlap(o, m.eng, mode);
#endif
    if (!bench_failed())
      row_cross(&m);
    if (!bench_failed())
      row_replay(&m, false);
    if (!bench_failed())
      row_replay(&m, true);
  }
  gb_stage("weft_engine_destroy");
  wcheck(weft_engine_destroy(m.eng), "weft_engine_destroy");
}

/* -------------------------------------------------------------- main */

static void usage(const char *why)
{
  if (why)
    fprintf(stderr, "bench_gpu: %s\n", why);
  fprintf(stderr,
          "usage: bench_gpu [--quick] [--modes hostword,event,blocking] [--reps R] [--host]\n"
          "                 [--timeout S]\n"
          "  --quick    smaller chains and fewer samples\n"
          "  --modes    the WEFT_GPU_COMPLETION values to run the weft rows in (default all three)\n"
          "  --reps R   timed repetitions per figure, 1..100 (default 5, --quick 3)\n"
          "  --host     the weft rows on the host backend (emulated devices), no CUDA\n"
          "  --timeout  stop with exit 1 after S seconds (default 290; 0: never)\n");
  exit(2);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static void parse_modes(gb_opts *o, char *list)
{
  static const char *const known[] = {"hostword", "event", "blocking"};
  o->nmodes = 0;
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < 3 && strcmp(tok, known[k]) != 0)
      k++;
    if (k == 3) {
      fprintf(stderr, "bench_gpu: --modes: unknown mode \"%s\" (hostword, event, blocking)\n", tok);
      usage(NULL);
    }
    for (int i = 0; i < o->nmodes; i++)
      if (o->modes[i] == known[k]) {
        fprintf(stderr, "bench_gpu: --modes: \"%s\" twice\n", tok);
        usage(NULL);
      }
    o->modes[o->nmodes++] = known[k];
  }
  if (o->nmodes == 0)
    usage("--modes: no mode given");
}

int main(int argc, char **argv)
{
  gb_opts o = {.nmodes = 3, .modes = {"hostword", "event", "blocking"}};
  int reps = 0, timeout_s = 290;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      o.quick = 1;
    } else if (!strcmp(a, "--host")) {
      o.host = 1;
    } else if (!strcmp(a, "--modes") || !strcmp(a, "--reps") || !strcmp(a, "--timeout")) {
      if (i + 1 >= argc)
        usage("an option lacks its value");
      char *v = argv[++i];
      if (!strcmp(a, "--modes"))
        parse_modes(&o, v);
      else if (!strcmp(a, "--reps") && parse_int(v, 1, 100, &reps))
        usage("--reps: a number from 1 to 100");
      else if (!strcmp(a, "--timeout") && parse_int(v, 0, 86400, &timeout_s))
        usage("--timeout: seconds, 0 to 86400");
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(NULL);
    } else {
      fprintf(stderr, "bench_gpu: unknown argument \"%s\"\n", a);
      usage(NULL);
    }
  }
  o.reps = reps ? reps : o.quick ? 3 : 5;
  if (timeout_s) {
    gb_watchdog_start(timeout_s);
  }

  gb_dev d = {.host = o.host};
  gb_floors fl = {NAN, NAN, NAN};
  unsigned host_words[2 * GB_SLOTS + GB_WORDS] = {0};
  char what[320] = "host backend (emulated device)";
  if (o.host) {
    /* Set before any engine exists; the host backend's device work is the
     * items above, never CUDA. */
    setenv("WEFT_GPU_BACKEND", "host", 1);
    setenv("WEFT_GPU_HOST_DEVICES", "1", 1);
    d.counter = host_words;
    d.errors = host_words + GB_SLOTS;
    d.mapped = d.mapped_dev = host_words + 2 * GB_SLOTS;
  } else {
#if BENCH_GPU_CUDA
    if (gb_cuda_probe(what, sizeof what)) {
      /* A skip only where no GPU is present: a GPU CUDA cannot use (a
       * driver too old for the runtime, say) fails the bench. */
      char gpu[512];
      if (gpu_present("/", gpu, sizeof gpu)) {
        printf("bench_gpu: a GPU is present (%s) but there is no usable CUDA device (%s): "
               "FAILED\n",
               gpu, what);
        return 1;
      }
      printf("bench_gpu: no usable CUDA device (%s): skipped\n", what);
      return 77;
    }
    setenv("WEFT_GPU_BACKEND", "cuda", 1);
    if (gb_cuda_dev_open(&d))
      return 1; /* it said why */
#else
    printf("bench_gpu: built without CUDA (only --host runs here): skipped\n");
    return 77;
#endif
  }
  /* C5 needs two compute workers; a hung operator fails in 30 s, not in
   * the default 10 minutes (the user's own value is kept). */
  setenv("WEFT_GPU_WORKERS", "2", 1);
  setenv("WEFT_GPU_WATCHDOG_MS", "30000", 0);
  printf("bench_gpu: %s, %s, %d reps, modes", what, o.quick ? "quick" : "full", o.reps);
  for (int i = 0; i < o.nmodes; i++)
    printf("%s%s", i ? "," : " ", o.modes[i]);
  printf("\n");
  fflush(stdout);

#if BENCH_GPU_CUDA
  if (!o.host) {
    gb_cuda_floors(&o, &d, &fl);
    if (!bench_failed())
      gb_cuda_overlap(&o, NULL, NULL);
  }
#endif
  for (int i = 0; i < o.nmodes && !bench_failed(); i++)
    run_mode(&o, &d, &fl, o.modes[i]);
#if BENCH_GPU_CUDA
  if (!o.host) {
    gb_cuda_overlap_free();
    gb_cuda_dev_close(&d);
  }
#endif
  alarm(0);
  gb_print_table();
  if (bench_failed())
    printf("bench_gpu: a check FAILED (see above): exit 1\n");
  return bench_exit_code();
}
