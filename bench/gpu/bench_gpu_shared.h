/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu: what its parts share (bench_gpu.c: options, the weft rows;
 * bench_gpu_table.c: the rows, the table, the watchdog, gb_push;
 * bench_gpu_cuda.c: the raw CUDA floors, the device side of the
 * weft rows on CUDA and the copy/compute overlap; bench_gpu_kernels.cu:
 * the kernels). See bench_gpu.c for what each figure measures.
 */
#ifndef WEFT_BENCH_GPU_SHARED_H
#define WEFT_BENCH_GPU_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include <weft/weft.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One chain counter per figure, so that a wrong value names its figure. */
enum {
  GB_SLOT_F1,
  GB_SLOT_F2,
  GB_SLOT_F3R,
  GB_SLOT_F3W,
  GB_SLOT_F4,
  GB_SLOT_C1,
  GB_SLOT_C5,
  GB_SLOT_C6,
  GB_SLOTS
};

/* Where the "device" side of the weft rows lives. */
typedef struct gb_dev {
  int host;          /* 1: the host backend (WEFT_GPU_BACKEND=host) */
  unsigned *counter; /* GB_SLOTS chain counters: device memory (cuda) or host memory */
  unsigned *errors;  /* GB_SLOTS counts of links that found the wrong value */
  unsigned *mapped;  /* GB_WORDS words the CPU and the device both see (cuda: pinned,
                        mapped host memory), as the CPU addresses them */
  unsigned *mapped_dev; /* the same words as the device addresses them (host: = mapped) */
} gb_dev;

/* The mapped words. */
enum {
  GB_W_FLAG,      /* C3: the sequence number the last kernel wrote as it ended */
  GB_W_RELEASE,   /* C5: non-zero lets the anchors' hold kernels end */
  GB_W_TIMED_OUT, /* C5: a hold kernel gave up waiting */
  GB_WORDS = 16
};
#define GB_HOLD_TIMEOUT_NS 10000000000ull /* a hold kernel gives up after 10 s */

/* The command line. */
typedef struct gb_opts {
  int host, quick, reps;
  int nmodes;
  const char *modes[3]; /* WEFT_GPU_COMPLETION values, in the order given */
} gb_opts;

/* Floors measured by the F rows; NAN where not measured (--host). */
typedef struct gb_floors {
  double f1, f2, f3w; /* ns per kernel: launch, graph node, cross-stream hop's extra */
} gb_floors;

/* A row of the table (and its JSON line): the samples' median [min-max].
 * floor and target are texts for the table ("-" for none); met is 1
 * (yes), 0 (NO) or -1 (no target, or the host backend's emulation). */
void gb_row(const char *rt, const char *fig, const char *name, const char *mode,
            const char *unit, const bench_series *s, const char *floor, const char *target,
            int met, const char *extra_json);

/* What the harness's stage is, for the watchdog's message (bench_gpu.c). */
void gb_stage(const char *what);

/* A push with one call: reads and writes of at most a few vars, on the CPU
 * (gpu < 0) or on GPU gpu with prop. */
int gb_push(weft_engine *eng, weft_op_fn fn, void *arg, weft_var *const *reads, size_t nr,
            weft_var *const *writes, size_t nw, int gpu, weft_prop prop);
/* gb_push with the descriptor's flags (WEFT_OP_*). */
int gb_push_flags(weft_engine *eng, weft_op_fn fn, void *arg, weft_var *const *reads, size_t nr,
                  weft_var *const *writes, size_t nw, int gpu, weft_prop prop, unsigned flags);

double gb_median(const bench_series *s);
/* The q-quantile (0..1) of s's samples. */
double gb_quantile(const bench_series *s, double q);
/* Prints the table of every gb_row so far (after the JSON lines). */
void gb_print_table(void);
/* From now on, a run still going after seconds prints gb_stage's last
 * stage and exits 1. */
void gb_watchdog_start(int seconds);

#if BENCH_GPU_CUDA
/* --- bench_gpu_kernels.cu: launchers, each returns the launch's cudaError_t --- */
/* One link of a chain: counter must be i mod n (every earlier link ran, in
 * order), else errors is incremented; counter is then incremented. */
int gb_cuda_step(void *stream, unsigned *counter, unsigned *errors, unsigned i, unsigned n);
/* Spins ns of the GPU's global timer, then (flag not NULL) writes seq to
 * *flag (mapped host memory) as its last act. */
int gb_cuda_spin(void *stream, uint64_t ns, unsigned *flag, unsigned seq);
/* One thread: holds the stream until *release is non-zero, or until
 * timeout_ns have passed: then sets *timed_out (both mapped host words). */
int gb_cuda_hold(void *stream, const unsigned *release, unsigned *timed_out, uint64_t timeout_ns);
/* C4's compute stage: out[i] = GB_STAGE_VALUE(in[i], key) for i < n, and
 * the kernel lasts at least ns. */
int gb_cuda_stage(void *stream, const unsigned *in, unsigned *out, size_t n, unsigned key,
                  uint64_t ns);

/* --- bench_gpu_cuda.c --- */
/* 0 when a CUDA device is usable (name: its name), else -1 with why in name. */
int gb_cuda_probe(char *name, size_t cap);
int gb_cuda_dev_open(gb_dev *d);
void gb_cuda_dev_close(gb_dev *d);
/* Reads one slot's counter and error count back (the work on it is over). */
int gb_cuda_read_slot(const gb_dev *d, int slot, unsigned *counter, unsigned *errors);
/* The F rows: printed as rows, medians into fl. */
void gb_cuda_floors(const gb_opts *o, gb_dev *d, gb_floors *fl);
/* C4 for one completion mode (eng: that mode's engine; mode NULL: the
 * hand-written CUDA loop, measured once). */
void gb_cuda_overlap(const gb_opts *o, weft_engine *eng, const char *mode);
/* Frees C4's buffers (allocated by its first call). */
void gb_cuda_overlap_free(void);
/* The name of a cudaError_t returned by a launcher (bench_gpu_cuda.c). */
const char *gb_cuda_error_name(int e);
#endif

/* C4's data: what the compute stage makes of input word x for chunk key
 * (the kernel and the CPU's check both use it). */
#define GB_STAGE_VALUE(x, key) ((unsigned)(x) * 2654435761u + (unsigned)(key))

#ifdef __cplusplus
}
#endif

#endif /* WEFT_BENCH_GPU_SHARED_H */
