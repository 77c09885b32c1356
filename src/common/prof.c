/* SPDX-License-Identifier: MIT */
/*
 * The trace recorder: per-track chunked event buffers, name interning, and
 * the Chrome trace writer. See prof.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/env.h"
#include "common/error.h"
#include "common/fifo.h"
#include "common/prof.h"
#include "common/tunables.h"
#include "weft/weft.h"

_Thread_local weft_prof_track *weft_prof_tls __attribute__((tls_model("initial-exec")));

/* Bit 31 of an event's name index: an instant, not a span. */
#define EV_INSTANT 0x80000000u
#define EV_NO_ARG UINT32_MAX

typedef struct prof_event {
  int64_t t0, t1;    /* t1: spans only */
  int64_t arg;
  uint32_t name;     /* index in the track's names | EV_INSTANT */
  uint32_t arg_name; /* index in the track's names, or EV_NO_ARG */
} prof_event;

typedef struct prof_chunk {
  weft_fifo_node link; /* the track's chunks, oldest first */
  uint32_t n;
  prof_event ev[WEFT_PROF_CHUNK_EVENTS];
} prof_chunk;

/* Interning: the caller's pointer maps to a copy; the copy is compared on
 * every hit, so a pointer reused for another string gets a new entry. */
typedef struct name_slot {
  const char *key; /* the caller's pointer (never dereferenced later) */
  uint32_t id;
} name_slot;

struct weft_prof_track {
  weft_prof *prof;          /* immutable */
  weft_fifo_node link;      /* under prof->lock: the recorder's tracks */
  int tid;                  /* immutable: index in creation order */
  bool thread_owned;        /* immutable: made by weft_prof_thread_track */
  pthread_t owner;          /* immutable: the owner, when thread_owned */
  char name[64];            /* immutable */
  /* Owner only (then the writer, after the owner stopped). */
  weft_fifo chunks;         /* of prof_chunk, oldest first */
  uint64_t nevents, dropped;
  name_slot *slots;         /* open addressing, power-of-two size */
  uint32_t slot_cap, slot_used;
  char **names;             /* the copies, by id */
  uint32_t nnames, names_cap;
};

struct weft_prof {
  char *path;             /* immutable */
  char *process_name;     /* immutable */
  uint64_t id;            /* immutable: unique per recorder (thread caches) */
  int64_t t0;             /* immutable: the trace's time 0, ns */
  int64_t tick0;          /* immutable: weft_prof_now() at t0 */
  uint64_t max_events;    /* immutable: per track */
  pthread_mutex_t lock;   /* guards the track list and the counts below */
  weft_fifo tracks;       /* of weft_prof_track, in creation order */
  int ntracks, nthread_tracks;
};

/* atomic, relaxed: a counter handing out recorder ids, no data published. */
static _Atomic uint64_t next_prof_id = 1;
/* atomic, relaxed: the testing cap, read at open. */
static _Atomic long test_max_events;

/* The calling thread's own track in one recorder (weft_prof_thread_track). */
static _Thread_local struct {
  uint64_t prof_id;
  weft_prof_track *track;
} thread_cache;

void weft_test_prof_max_events(long n)
{
  atomic_store_explicit(&test_max_events, n, memory_order_relaxed);
}

static char *dup_str(const char *s)
{
  size_t n = strlen(s) + 1;
  char *c = weft_malloc(n);
  if (c)
    memcpy(c, s, n);
  return c;
}

int weft_prof_open(weft_prof **out, const char *cfg_path, const char *process_name)
{
  *out = NULL;
  const char *path = cfg_path;
  if (!path) {
    int rc = weft_env_nonempty("WEFT_PROFILE", &path);
    if (rc < 0)
      return rc;
    if (rc > 0)
      return 0; /* unset: off */
  }
  if (!*path)
    return 0; /* an explicit "": off */
  weft_prof *p = weft_calloc(1, sizeof *p);
  if (!p)
    return WEFT_ENOMEM;
  p->path = dup_str(path);
  p->process_name = dup_str(process_name);
  if (!p->path || !p->process_name || pthread_mutex_init(&p->lock, NULL)) {
    weft_free(p->path);
    weft_free(p->process_name);
    weft_free(p);
    return WEFT_ENOMEM;
  }
  p->id = atomic_fetch_add_explicit(&next_prof_id, 1, memory_order_relaxed);
  p->tick0 = weft_prof_now();
  p->t0 = weft_now_ns();
  long cap = atomic_load_explicit(&test_max_events, memory_order_relaxed);
  p->max_events = (uint64_t)(cap > 0 ? cap : WEFT_PROF_MAX_EVENTS);
  *out = p;
  return 0;
}

static void track_free(weft_prof_track *t)
{
  for (weft_fifo_node *n; (n = weft_fifo_pop(&t->chunks));)
    weft_free(weft_fifo_entry(n, prof_chunk, link));
  for (uint32_t i = 0; i < t->nnames; i++)
    weft_free(t->names[i]);
  weft_free(t->names);
  weft_free(t->slots);
  weft_free(t);
}

void weft_prof_destroy(weft_prof *p)
{
  if (!p)
    return;
  for (weft_fifo_node *n; (n = weft_fifo_pop(&p->tracks));)
    track_free(weft_fifo_entry(n, weft_prof_track, link));
  pthread_mutex_destroy(&p->lock);
  weft_free(p->path);
  weft_free(p->process_name);
  weft_free(p);
}

/* Under p->lock. */
static const char *const builtin_names[WEFT_PROF_NBUILTIN] = {"task", "pfor", "park", "steal",
                                                              "victim"};

static bool name_add(weft_prof_track *t, const char *s, uint32_t *id);

static weft_prof_track *track_make(weft_prof *p, const char *name)
{
  weft_prof_track *t = weft_calloc(1, sizeof *t);
  if (!t)
    return NULL;
  for (int i = 0; i < WEFT_PROF_NBUILTIN; i++) { /* ids 0.. in order */
    uint32_t id;
    if (!name_add(t, builtin_names[i], &id)) {
      track_free(t);
      return NULL;
    }
  }
  t->prof = p;
  t->tid = p->ntracks++;
  snprintf(t->name, sizeof t->name, "%s", name);
  weft_fifo_push(&p->tracks, &t->link);
  return t;
}

weft_prof_track *weft_prof_track_new(weft_prof *p, const char *name)
{
  if (!p || !name)
    return NULL;
  pthread_mutex_lock(&p->lock);
  weft_prof_track *t = track_make(p, name);
  pthread_mutex_unlock(&p->lock);
  return t;
}

weft_prof_track *weft_prof_thread_track(weft_prof *p, const char *prefix)
{
  if (!p)
    return NULL;
  if (thread_cache.prof_id == p->id)
    return thread_cache.track;
  pthread_t self = pthread_self();
  pthread_mutex_lock(&p->lock);
  weft_prof_track *t = NULL;
  for (weft_fifo_node *n = weft_fifo_peek(&p->tracks); n && !t; n = n->next) {
    weft_prof_track *c = weft_fifo_entry(n, weft_prof_track, link);
    if (c->thread_owned && pthread_equal(c->owner, self))
      t = c;
  }
  if (!t) {
    char name[64];
    snprintf(name, sizeof name, "%s %d", prefix, p->nthread_tracks);
    t = track_make(p, name);
    if (t) {
      p->nthread_tracks++;
      t->thread_owned = true;
      t->owner = self;
    }
  }
  pthread_mutex_unlock(&p->lock);
  if (t) {
    thread_cache.prof_id = p->id;
    thread_cache.track = t;
  }
  return t;
}

static inline uint32_t slot_of(const char *key, uint32_t cap)
{
  uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ULL;
  return (uint32_t)(h >> 32) & (cap - 1);
}

static bool slots_grow(weft_prof_track *t)
{
  uint32_t cap = t->slot_cap ? t->slot_cap * 2 : 64;
  name_slot *s = weft_calloc(cap, sizeof *s);
  if (!s)
    return false;
  for (uint32_t i = 0; i < t->slot_cap; i++) {
    if (!t->slots[i].key)
      continue;
    uint32_t j = slot_of(t->slots[i].key, cap);
    while (s[j].key)
      j = (j + 1) & (cap - 1);
    s[j] = t->slots[i];
  }
  weft_free(t->slots);
  t->slots = s;
  t->slot_cap = cap;
  return true;
}

/* A copy of s, as a new id. */
static bool name_add(weft_prof_track *t, const char *s, uint32_t *id)
{
  if (t->nnames == t->names_cap) {
    uint32_t cap = t->names_cap ? t->names_cap * 2 : 16;
    char **n = weft_malloc(sizeof *n * cap);
    if (!n)
      return false;
    if (t->nnames)
      memcpy(n, t->names, sizeof *n * t->nnames);
    weft_free(t->names);
    t->names = n;
    t->names_cap = cap;
  }
  char *c = dup_str(s);
  if (!c)
    return false;
  t->names[t->nnames] = c;
  *id = t->nnames++;
  return true;
}

static bool intern(weft_prof_track *t, const char *s, uint32_t *id)
{
  if ((t->slot_used + 1) * 2 > t->slot_cap && !slots_grow(t))
    return false;
  uint32_t j = slot_of(s, t->slot_cap);
  while (t->slots[j].key && t->slots[j].key != s)
    j = (j + 1) & (t->slot_cap - 1);
  name_slot *sl = &t->slots[j];
  if (sl->key && strcmp(t->names[sl->id], s) == 0) {
    *id = sl->id;
    return true;
  }
  if (!name_add(t, s, id))
    return false;
  if (!sl->key)
    t->slot_used++;
  sl->key = s;
  sl->id = *id;
  return true;
}

/* The next free event slot of t, or NULL (counted as dropped). */
static prof_event *slot_next(weft_prof_track *t)
{
  if (t->nevents >= t->prof->max_events) {
    t->dropped++;
    return NULL;
  }
  prof_chunk *c = t->chunks.tail ? weft_fifo_entry(t->chunks.tail, prof_chunk, link) : NULL;
  if (!c || c->n == WEFT_PROF_CHUNK_EVENTS) {
    c = weft_malloc(sizeof *c);
    if (!c) {
      t->dropped++;
      return NULL;
    }
    c->n = 0;
    weft_fifo_push(&t->chunks, &c->link);
  }
  return &c->ev[c->n];
}

/* Commits the slot slot_next returned. */
static inline void slot_commit(weft_prof_track *t, prof_event *e, uint32_t name, bool instant,
                               int64_t t0, int64_t t1, uint32_t arg_name, int64_t arg)
{
  e->name = name | (instant ? EV_INSTANT : 0);
  e->arg_name = arg_name;
  e->t0 = t0;
  e->t1 = t1;
  e->arg = arg;
  weft_fifo_entry(t->chunks.tail, prof_chunk, link)->n++; /* e's chunk (slot_next) */
  t->nevents++;
}

static void record(weft_prof_track *t, const char *name, bool instant, int64_t t0, int64_t t1,
                   const char *arg_name, int64_t arg)
{
  if (!t)
    return;
  prof_event *e = slot_next(t);
  if (!e)
    return;
  uint32_t n, a = EV_NO_ARG;
  if (!intern(t, name, &n) || (arg_name && !intern(t, arg_name, &a))) {
    t->dropped++;
    return;
  }
  slot_commit(t, e, n, instant, t0, t1, a, arg);
}

void weft_prof_span_builtin(weft_prof_track *t, weft_prof_builtin name, int64_t t0, int64_t t1)
{
  prof_event *e = t ? slot_next(t) : NULL;
  if (e)
    slot_commit(t, e, (uint32_t)name, false, t0, t1, EV_NO_ARG, 0);
}

void weft_prof_instant_builtin(weft_prof_track *t, weft_prof_builtin name, int64_t at,
                               int arg_name, int64_t arg)
{
  prof_event *e = t ? slot_next(t) : NULL;
  if (e)
    slot_commit(t, e, (uint32_t)name, true, at, at, arg_name < 0 ? EV_NO_ARG : (uint32_t)arg_name,
                arg);
}

void weft_prof_span(weft_prof_track *t, const char *name, int64_t t0_ns, int64_t t1_ns)
{
  record(t, name, false, t0_ns, t1_ns, NULL, 0);
}

void weft_prof_span_arg(weft_prof_track *t, const char *name, int64_t t0_ns, int64_t t1_ns,
                        const char *arg_name, int64_t arg)
{
  record(t, name, false, t0_ns, t1_ns, arg_name, arg);
}

void weft_prof_instant(weft_prof_track *t, const char *name, int64_t t_ns, const char *arg_name,
                       int64_t arg)
{
  record(t, name, true, t_ns, t_ns, arg_name, arg);
}

uint64_t weft_prof_dropped(const weft_prof_track *t)
{
  return t ? t->dropped : 0;
}

/* ------------------------------------------------------------------ writer */

static void put_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(f, "\\%c", *c);
    else if (*c < 0x20)
      fprintf(f, "\\u%04x", *c);
    else
      fputc(*c, f);
  }
  fputc('"', f);
}

/* ns as microseconds with three decimals (exact). */
static void put_us(FILE *f, int64_t ns)
{
  uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  fprintf(f, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
}

/* Ticks to ns since the open: the rate measured between open and write. */
typedef struct tick_map {
  int64_t tick0;
  double ns_per_tick;
} tick_map;

static int64_t tick_ns(const tick_map *m, int64_t tick)
{
  double v = (double)(tick - m->tick0) * m->ns_per_tick; /* monotonic in tick: nesting holds */
  return (int64_t)(v >= 0 ? v + 0.5 : v - 0.5);
}

static void write_events(FILE *f, const tick_map *m, const weft_prof_track *t, long pid)
{
  for (const weft_fifo_node *n = weft_fifo_peek(&t->chunks); n; n = n->next) {
    const prof_chunk *c = weft_fifo_entry(n, prof_chunk, link);
    for (uint32_t i = 0; i < c->n; i++) {
      const prof_event *e = &c->ev[i];
      bool instant = e->name & EV_INSTANT;
      fputs(",\n{\"name\":", f);
      put_str(f, t->names[e->name & ~EV_INSTANT]);
      fprintf(f, ",\"ph\":\"%s\",\"pid\":%ld,\"tid\":%d,\"ts\":", instant ? "i\",\"s\":\"t" : "X",
              pid, t->tid);
      int64_t t0 = tick_ns(m, e->t0), t1 = tick_ns(m, e->t1);
      put_us(f, t0);
      if (!instant) {
        fputs(",\"dur\":", f);
        put_us(f, t1 > t0 ? t1 - t0 : 0);
      }
      if (e->arg_name != EV_NO_ARG) {
        fputs(",\"args\":{", f);
        put_str(f, t->names[e->arg_name]);
        fprintf(f, ":%" PRId64 "}", e->arg);
      }
      fputc('}', f);
    }
  }
}

int weft_prof_write(weft_prof *p)
{
  if (!p)
    return 0;
  int64_t tick1 = weft_prof_now(), ns1 = weft_now_ns();
  tick_map m = {p->tick0, 1.0};
  if (tick1 > p->tick0 && ns1 > p->t0)
    m.ns_per_tick = (double)(ns1 - p->t0) / (double)(tick1 - p->tick0);
  FILE *f = fopen(p->path, "w");
  if (!f) {
    int err = errno;
    weft_log("could not write the profile to %s: %s", p->path, strerror(err));
    return -err;
  }
  errno = 0;
  long pid = (long)getpid();
  pthread_mutex_lock(&p->lock);
  uint64_t dropped = 0;
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":0,\"args\":{\"name\":",
          pid);
  put_str(f, p->process_name);
  fputs("}}", f);
  for (const weft_fifo_node *n = weft_fifo_peek(&p->tracks); n; n = n->next) {
    const weft_prof_track *t = weft_fifo_entry(n, weft_prof_track, link);
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%d,\"args\":{\"name\":",
            pid, t->tid);
    put_str(f, t->name);
    fprintf(f, ",\"events\":%" PRIu64 ",\"dropped\":%" PRIu64 "}}", t->nevents, t->dropped);
    fprintf(f,
            ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%ld,\"tid\":%d,"
            "\"args\":{\"sort_index\":%d}}",
            pid, t->tid, t->tid);
    dropped += t->dropped;
  }
  for (const weft_fifo_node *n = weft_fifo_peek(&p->tracks); n; n = n->next)
    write_events(f, &m, weft_fifo_entry(n, weft_prof_track, link), pid);
  fprintf(f,
          "\n],\"otherData\":{\"weft_version\":\"%s\",\"max_events_per_track\":%" PRIu64
          ",\"dropped_events\":%" PRIu64 "}}\n",
          WEFT_VERSION_STRING, p->max_events, dropped);
  pthread_mutex_unlock(&p->lock);
  int err = ferror(f) ? (errno ? errno : EIO) : 0;
  if (fclose(f) != 0 && !err)
    err = errno ? errno : EIO;
  if (err) {
    weft_log("could not write the profile to %s: %s", p->path, strerror(err));
    return -err;
  }
  return 0;
}
