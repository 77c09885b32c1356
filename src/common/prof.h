/* SPDX-License-Identifier: MIT */
/*
 * The trace recorder behind WEFT_PROFILE (docs/config.md, "Profiling"):
 * tracks of events, written once as a Chrome trace (Trace Event Format JSON,
 * for Perfetto or chrome://tracing) by weft_prof_write.
 *
 * A weft_prof is one trace file. It holds tracks; a track is one row in the
 * viewer (a "thread": pid = the process, tid = the track's index in creation
 * order, named by a thread_name metadata event). Each track has exactly one
 * writer at a time, the thread that owns it (a pool worker, a device stream's
 * thread): recording is plain stores into the owner's chunked buffer, no
 * lock and no atomic read-modify-write. Tracks may be created from any
 * thread at any time before weft_prof_write.
 *
 * Who uses it: the pool (src/pool/) makes one track per worker at create,
 * records "task" / "pfor" spans, "steal" instants and "park" spans, and
 * writes the file at weft_pool_destroy, after the workers are joined. Threads
 * outside the pool that run its tasks (parallel_for callers, group waiters)
 * get a track of their own on first use (weft_prof_thread_track). The engine
 * (src/deps/) records each operator's span on the calling thread's current
 * track (weft_prof_tls), nested inside the "task" span that runs it; it
 * never owns a trace file.
 *
 * Memory is bounded: a track keeps at most WEFT_PROF_MAX_EVENTS events; later
 * ones are dropped and counted, and the counts are written in the trace
 * ("otherData": dropped_events, and "dropped" on each track's metadata).
 *
 * Times are ticks of weft_prof_now(): the CPU's time-stamp counter on x86-64
 * (a third of the cost of clock_gettime), else weft_now_ns. weft_prof_write
 * converts them to the monotonic clock's nanoseconds with the rate measured
 * between open and write, and shows microseconds from the open.
 */
#ifndef WEFT_COMMON_PROF_H
#define WEFT_COMMON_PROF_H

#include <stdbool.h>
#include <stdint.h>

#include "common/sync.h"

/* The recorder's clock, ticks (see above). Any thread. */
static inline int64_t weft_prof_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
  return (int64_t)__builtin_ia32_rdtsc();
#else
  return weft_now_ns();
#endif
}

typedef struct weft_prof weft_prof;
typedef struct weft_prof_track weft_prof_track;

/*
 * Resolves the profile setting and makes the recorder. cfg_path: a config's
 * value (NULL: automatic, read WEFT_PROFILE; "": off, the environment is not
 * read; else the path). *out is NULL when profiling is off. Returns 0,
 * WEFT_EINVAL when WEFT_PROFILE is set but empty (one `weft: ` line names
 * it), or WEFT_ENOMEM. The path is copied and not opened until
 * weft_prof_write: an unwritable path is reported there. process_name labels
 * the trace's process row (copied).
 */
int weft_prof_open(weft_prof **out, const char *cfg_path, const char *process_name);

/* Writes the trace to the path (replacing the file) and returns 0; on any
 * I/O failure prints one `weft: ` line naming the path and the errno string
 * and returns -errno. Call once, when no track is being recorded any more. */
int weft_prof_write(weft_prof *p);

/* Frees p and all its tracks (NULL: nothing). Does not write. */
void weft_prof_destroy(weft_prof *p);

/* A new track named name (copied, e.g. "weft worker 3", "gpu 0 stream 1"),
 * owned from now on by whichever single thread records into it. Any thread
 * may call this (it takes p's lock). Returns NULL when out of memory: every
 * recording call accepts a NULL track and does nothing. */
weft_prof_track *weft_prof_track_new(weft_prof *p, const char *name);

/* The calling thread's own track in p, made on first use and named
 * "<prefix> <k>" (k counts such tracks from 0). For threads that are not a
 * worker but run the pool's work now and then. Any thread; NULL when out of
 * memory. */
weft_prof_track *weft_prof_thread_track(weft_prof *p, const char *prefix);

/*
 * Recording: only the track's owner thread, one call at a time. name: any
 * string valid during the call (it is interned: copied once per distinct
 * string per track). A span is [t0_ns, t1_ns] in weft_prof_now() ticks;
 * spans on one track must be disjoint or properly nested (record a span when
 * it ends: inner spans first). arg_name/arg (optional: NULL) become the
 * event's "args": {arg_name: arg}.
 */
void weft_prof_span(weft_prof_track *t, const char *name, int64_t t0_ns, int64_t t1_ns);
void weft_prof_span_arg(weft_prof_track *t, const char *name, int64_t t0_ns, int64_t t1_ns,
                        const char *arg_name, int64_t arg);
/* An instant event ("ph":"i", thread scope) at t_ns. */
void weft_prof_instant(weft_prof_track *t, const char *name, int64_t t_ns,
                       const char *arg_name, int64_t arg);

/* Names every track knows without a lookup (the pool's hot path). */
typedef enum {
  WEFT_PROF_TASK = 0, /* "task" */
  WEFT_PROF_PFOR,     /* "pfor" */
  WEFT_PROF_PARK,     /* "park" */
  WEFT_PROF_STEAL,    /* "steal" */
  WEFT_PROF_VICTIM,   /* "victim" */
  WEFT_PROF_NBUILTIN
} weft_prof_builtin;
/* As weft_prof_span / weft_prof_instant (arg_name: a builtin, or -1). */
void weft_prof_span_builtin(weft_prof_track *t, weft_prof_builtin name, int64_t t0, int64_t t1);
void weft_prof_instant_builtin(weft_prof_track *t, weft_prof_builtin name, int64_t at,
                               int arg_name, int64_t arg);

/* Events dropped on t because it was full (owner thread, or after the owner
 * stopped recording). */
uint64_t weft_prof_dropped(const weft_prof_track *t);

/*
 * The calling thread's current track, NULL when it records nothing (always
 * NULL with profiling off). Pool workers set it to their track when they
 * start; a thread running a pool task for a profiled pool sets it for the
 * task's duration. Operators record on it (see weft_prof_op_begin).
 */
extern _Thread_local weft_prof_track *weft_prof_tls __attribute__((tls_model("initial-exec")));

/* An operator's span around its function: begin before the call, end after
 * (name NULL: "op"); on (false): no span (the engine's internal operators).
 * Off (no current track): one TLS load and one branch. */
typedef struct weft_prof_mark {
  weft_prof_track *track;
  int64_t t0;
} weft_prof_mark;

static inline weft_prof_mark weft_prof_op_begin(bool on)
{
  weft_prof_mark m = {on ? weft_prof_tls : NULL, 0};
  if (m.track)
    m.t0 = weft_prof_now();
  return m;
}

static inline void weft_prof_op_end(weft_prof_mark m, const char *name)
{
  if (m.track)
    weft_prof_span(m.track, name ? name : "op", m.t0, weft_prof_now());
}

/* Testing hook (not part of the public API): n > 0 caps every track of the
 * recorders opened from now on at n events; 0 restores the tunable. */
void weft_test_prof_max_events(long n);

#endif /* WEFT_COMMON_PROF_H */
