/* SPDX-License-Identifier: MIT */
/*
 * Recording a thread's pushes while it captures (capture.h).
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "deps/ext.h"
#include "graph/capture.h"
#include "graph/def.h"
#include "graph/registry.h"

/* The capture whose sink is s. */
static inline weft_capture *capture_of(weft_push_sink *s)
{
  return (weft_capture *)((char *)s - offsetof(weft_capture, sink));
}

/* Every open capture of every engine: for an engine's destroy (which
 * orphans its own) and a thread's exit (which frees its own). Begin and end
 * only: not on any push path. */
static pthread_mutex_t captures_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_dlist captures; /* under captures_lock */
/* The thread-exit destructor's key: its value is the thread's capture. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exit_key_rc;

static void capture_free(weft_capture *c)
{
  for (size_t i = 0; i < c->nboxes; i++) /* none of it will run: a lost capture */
    weft_arg_box_unref(c->boxes[i]);
  weft_free(c->boxes);
  weft_free(c->recs);
  weft_free(c->uses);
  weft_free(c);
}

/* Takes c off the list unless its engine's destroy already did. */
static void capture_unlist(weft_capture *c)
{
  pthread_mutex_lock(&captures_lock);
  if (!atomic_load_explicit(&c->sink.orphaned, memory_order_relaxed))
    weft_dlist_remove(&captures, &c->link);
  pthread_mutex_unlock(&captures_lock);
}

/* A thread exits with its capture open (weft.h: "lost"): freed here. */
static void capture_at_exit(void *arg)
{
  weft_capture *c = arg;
  capture_unlist(c);
  if (weft_tls_sink == &c->sink)
    weft_tls_sink = NULL;
  capture_free(c);
}

static void exit_key_create(void)
{
  exit_key_rc = pthread_key_create(&exit_key, capture_at_exit);
}

int weft_capture_begin(weft_engine *eng)
{
  if (weft_tls_sink)
    return WEFT_EBUSY;
  pthread_once(&exit_once, exit_key_create);
  if (exit_key_rc)
    return WEFT_ENOMEM; /* no key left: a capture could not be freed at exit */
  weft_capture *c = weft_malloc(sizeof *c);
  if (!c)
    return WEFT_ENOMEM;
  memset(c, 0, sizeof *c);
  c->sink.eng = eng;
  c->sink.opr = weft_tls_opr;
  atomic_init(&c->sink.orphaned, false);
  if (pthread_setspecific(exit_key, c)) {
    weft_free(c);
    return WEFT_ENOMEM;
  }
  pthread_mutex_lock(&captures_lock);
  weft_dlist_push(&captures, &c->link); /* inside eng (guarded): alive */
  pthread_mutex_unlock(&captures_lock);
  weft_tls_sink = &c->sink;
  return 0;
}

/* The calling thread's capture is over: off the list, the key and TLS. */
static void capture_close(weft_capture *c)
{
  weft_tls_sink = NULL;
  pthread_setspecific(exit_key, NULL);
  capture_unlist(c);
}

void weft_capture_orphan_all(weft_engine *eng)
{
  pthread_mutex_lock(&captures_lock);
  for (weft_dlist_node *n = captures.head, *next; n; n = next) {
    next = n->next;
    weft_capture *c = weft_dlist_entry(n, weft_capture, link);
    if (c->sink.eng != eng)
      continue;
    weft_dlist_remove(&captures, n);
    /* relaxed: read under this lock (end, exit), or as a hint by
     * weft_capturing on the capture's own thread, which the user orders
     * after this destroy before it reuses the address. */
    atomic_store_explicit(&c->sink.orphaned, true, memory_order_relaxed);
  }
  pthread_mutex_unlock(&captures_lock);
}

size_t weft_capture_count_open(void)
{
  size_t n = 0;
  pthread_mutex_lock(&captures_lock);
  for (weft_dlist_node *i = captures.head; i; i = i->next)
    n++;
  pthread_mutex_unlock(&captures_lock);
  return n;
}

int weft_capture_push(weft_push_sink *sink, const weft_op_desc *d, const weft_var_use *uses,
                      int n, struct weft_arg_box *box)
{
  weft_capture *c = capture_of(sink);
  if (!weft_graph_grow((void **)&c->recs, &c->caprecs, c->nrecs, 1, sizeof *c->recs) ||
      !weft_graph_grow((void **)&c->uses, &c->capuses, c->nuses, (size_t)n, sizeof *c->uses) ||
      (box && !weft_graph_grow((void **)&c->boxes, &c->capboxes, c->nboxes, 1, sizeof *c->boxes)))
    return WEFT_ENOMEM;
  if (box)
    c->boxes[c->nboxes++] = box;
  weft_rec_set(&c->recs[c->nrecs++], d, c->nuses, n);
  memcpy(&c->uses[c->nuses], uses, sizeof *uses * (size_t)n);
  c->nuses += (size_t)n;
  return 0;
}

int weft_capture_end(weft_engine *eng, struct weft_graph **out)
{
  weft_push_sink *s = weft_tls_sink;
  if (!s || s->eng != eng || weft_tls_opr != s->opr)
    return WEFT_EINVAL; /* none, another engine's, or from an operator run meanwhile */
  weft_capture *c = capture_of(s);
  /* Under the lock, eng is alive unless the capture was orphaned (the
   * orphaning runs before the free and takes this lock). */
  int guest = 0, rc;
  pthread_mutex_lock(&captures_lock);
  rc = atomic_load_explicit(&c->sink.orphaned, memory_order_relaxed)
           ? WEFT_ESHUTDOWN
           : weft_engine_enter(eng, &guest);
  pthread_mutex_unlock(&captures_lock);
  capture_close(c);
  if (rc) { /* its engine is going away: the capture ends with nothing */
    capture_free(c);
    return rc;
  }
  weft_recording rec = {c->sink.eng, c->recs, c->nrecs, c->uses, c->nuses, NULL, 0, NULL, false,
                        false};
  struct weft_graph *g = weft_graph_new(c->sink.eng);
  if (g && weft_graph_build(g, &rec, NULL)) {
    weft_graph_free(g); /* nothing built: out of memory */
    g = NULL;
  }
  if (g) {
    /* The recorded arguments are the graph's now, and the recording its
     * definition (def.h): the i-th recorded push is node i, to which
     * weft_graph_add and weft_graph_edge may add. */
    g->boxes = c->boxes;
    g->nboxes = c->nboxes;
    g->capboxes = c->capboxes;
    c->boxes = NULL;
    c->nboxes = 0;
    weft_gdef *def = g->def;
    def->recs = c->recs;
    def->nrecs = c->nrecs;
    def->caprecs = c->caprecs;
    def->uses = c->uses;
    def->nuses = c->nuses;
    def->capuses = c->capuses;
    c->recs = NULL;
    c->uses = NULL;
  }
  capture_free(c);
  if (g)
    weft_graph_track(g); /* inside the engine: its destroy waits for us */
  weft_engine_leave(eng, guest);
  *out = g;
  return g ? 0 : WEFT_ENOMEM;
}
