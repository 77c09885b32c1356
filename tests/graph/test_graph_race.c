/* SPDX-License-Identifier: MIT */
/*
 * A graph's launch or destroy racing its engine's destroy on another thread
 * (weft.h, "A graph belongs to the engine..."). Both read the graph's engine
 * before they enter it: that window is held open here by the white-box hook
 * weft_graph_window_hook while weft_engine_destroy runs. The destroy must
 * not free the engine under the caller (ASan: heap-use-after-free before
 * the fix), the launch must answer WEFT_ESHUTDOWN, the graph's destroy must
 * free the graph once the engine has let go of it, and a stress loop races
 * launches and destroys with engine destroys without the hook. A capture
 * whose engine is destroyed while it is open ends with WEFT_ESHUTDOWN
 * without touching the freed engine (ASan: heap-use-after-free before),
 * and one left open at its thread's exit is freed (LSan: a leak before).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>

#include "graph/capture.h"
#include "graph/graph.h"
#include "../deps/engine_util.h"

static void setup(void)
{
  te_setup();
}

static int add_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add_explicit((atomic_long *)arg, 1, memory_order_relaxed);
  return 0;
}

/* A graph of n operators writing one var, captured on e. */
static weft_graph *small_graph(weft_engine *e, atomic_long *ran, int n)
{
  weft_var *v = te_var(e);
  cr_assert_eq(weft_graph_begin_capture(e), 0);
  for (int i = 0; i < n; i++)
    cr_assert_eq(te_push(e, add_fn, ran, TE_NONE, TE_V(v), 0), 0);
  weft_graph *g = NULL;
  cr_assert_eq(weft_graph_end_capture(e, &g), 0);
  cr_assert_not_null(g);
  return g;
}

/* The window, held open: tells the test it is there, then waits for the
 * engine's destroy to return, up to 1 s. A destroy that waits for the
 * window (the fix) never returns meanwhile: the wait runs out and the call
 * goes on into a live engine that refuses it. Before the fix the destroy
 * returned, and the call went on into freed memory. */
static sem_t in_window, destroyed;

static void hold_window(weft_graph *g)
{
  (void)g;
  weft_graph_window_hook = NULL; /* once */
  sem_post(&in_window);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  while (sem_timedwait(&destroyed, &until) != 0 && errno == EINTR)
    ;
}

typedef struct call {
  weft_graph *g;
  int rc;
} call;

static void *launch_thread(void *arg)
{
  call *c = arg;
  c->rc = weft_graph_launch(c->g);
  return NULL;
}

static void *graph_destroy_thread(void *arg)
{
  call *c = arg;
  c->rc = weft_graph_destroy(c->g);
  return NULL;
}

typedef struct destroyer {
  weft_engine *eng;
  int rc;
} destroyer;

static void *engine_destroy_thread(void *arg)
{
  destroyer *d = arg;
  d->rc = weft_engine_destroy(d->eng);
  sem_post(&destroyed);
  return NULL;
}

/* Runs fn(g) on a thread with the window held, destroys the engine beside
 * it, and returns what fn's call returned. */
static int race_in_window(weft_engine *e, weft_graph *g, void *(*fn)(void *))
{
  sem_init(&in_window, 0, 0);
  sem_init(&destroyed, 0, 0);
  call c = {g, 1};
  destroyer d = {e, 1};
  pthread_t caller, killer;
  weft_graph_window_hook = hold_window;
  cr_assert_eq(pthread_create(&caller, NULL, fn, &c), 0);
  while (sem_wait(&in_window) != 0)
    ;
  cr_assert_eq(pthread_create(&killer, NULL, engine_destroy_thread, &d), 0);
  te_join(caller);
  te_join(killer);
  cr_assert_eq(d.rc, 0, "engine destroy = %d (%s)", d.rc, weft_strerror(d.rc));
  sem_destroy(&in_window);
  sem_destroy(&destroyed);
  return c.rc;
}

Test(graph_race, launch_in_its_window_while_the_engine_is_destroyed, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  atomic_long ran = 0;
  weft_graph *g = small_graph(t.eng, &ran, 8);
  cr_assert_eq(weft_graph_launch(g), 0);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  cr_assert_eq(atomic_load(&ran), 8);
  int rc = race_in_window(t.eng, g, launch_thread);
  cr_assert_eq(rc, WEFT_ESHUTDOWN, "a launch that lost the race = %d (%s)", rc,
               weft_strerror(rc));
  cr_assert_eq(atomic_load(&ran), 8, "the refused launch ran operators");
  cr_assert_eq(weft_graph_launch(g), WEFT_ESHUTDOWN);
  cr_assert_eq(weft_graph_destroy(g), 0);
  tu_destroy(t.pool);
}

Test(graph_race, destroy_in_its_window_while_the_engine_is_destroyed, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new(NULL, 2, 0);
  atomic_long ran = 0;
  weft_graph *g = small_graph(t.eng, &ran, 8);
  cr_assert_eq(weft_graph_launch(g), 0); /* leaves a kept gate on its var */
  cr_assert_eq(weft_wait_all(t.eng), 0);
  int rc = race_in_window(t.eng, g, graph_destroy_thread);
  cr_assert_eq(rc, 0, "the graph's destroy = %d (%s)", rc, weft_strerror(rc));
  tu_destroy(t.pool);
}

/* No hook: threads launch and destroy graphs while the engine is destroyed
 * under them, many rounds. Every launch answers 0 or WEFT_ESHUTDOWN, every
 * graph is destroyed exactly once (ASan and LSan check the memory). */
typedef struct stress {
  weft_engine *eng;
  weft_graph *g[4];
  int launches, refused, bad;
} stress;

static void *stress_launcher(void *arg)
{
  stress *s = arg;
  for (int i = 0;; i++) {
    int rc = weft_graph_launch(s->g[i & 3]);
    if (rc == WEFT_ESHUTDOWN) {
      if (++s->refused > 8)
        return NULL;
    } else if (rc == 0 || rc == WEFT_EBUSY) { /* EBUSY: that graph's launch still runs */
      s->launches++;
    } else {
      s->bad++;
      return NULL;
    }
  }
}

Test(graph_race, launches_against_engine_destroys, .init = setup, .timeout = TU_TIMEOUT(120))
{
  int rounds = (int)(24 * tu_scale());
  for (int r = 0; r < rounds; r++) {
    te t = te_new(NULL, 2, 0);
    atomic_long ran = 0;
    stress s = {t.eng, {NULL}, 0, 0, 0};
    for (int k = 0; k < 4; k++)
      s.g[k] = small_graph(t.eng, &ran, 4);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stress_launcher, &s), 0);
    for (int spin = 0; spin < r * 50; spin++)
      sched_yield();
    int rc = weft_engine_destroy(t.eng);
    cr_assert_eq(rc, 0, "engine destroy = %d (%s)", rc, weft_strerror(rc));
    te_join(th);
    cr_assert_eq(s.bad, 0, "a launch answered neither 0, EBUSY nor ESHUTDOWN");
    for (int k = 0; k < 4; k++)
      cr_assert_eq(weft_graph_destroy(s.g[k]), 0);
    tu_destroy(t.pool);
  }
}

/* A thread captures on an engine that main destroys meanwhile. */
typedef struct capturer {
  weft_engine *eng;
  weft_var *v;
  sem_t began, destroyed;
  int end_rc;
  weft_graph *g;
  int after_rc;     /* a push to a fresh engine after the orphaned end */
  atomic_long ran;  /* what that push ran */
} capturer;

static void *capture_thread(void *arg)
{
  capturer *c = arg;
  cr_assert_eq(weft_graph_begin_capture(c->eng), 0);
  for (int i = 0; i < 100; i++)
    cr_assert_eq(te_push(c->eng, add_fn, &c->ran, TE_NONE, TE_V(c->v), 0), 0);
  sem_post(&c->began);
  while (sem_wait(&c->destroyed) != 0)
    ;
  c->g = (weft_graph *)&c->g; /* must come back NULL */
  c->end_rc = weft_graph_end_capture(c->eng, &c->g);
  /* A new engine, perhaps at the old one's address: not captured. */
  weft_engine *fresh = NULL;
  cr_assert_eq(weft_engine_create(&fresh, NULL), 0);
  weft_var *w = te_var(fresh);
  c->after_rc = te_push(fresh, add_fn, &c->ran, TE_NONE, TE_V(w), 0);
  cr_assert_eq(weft_wait_all(fresh), 0);
  cr_assert_eq(weft_engine_destroy(fresh), 0);
  return NULL;
}

Test(graph_race, end_capture_after_the_engine_was_destroyed, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  capturer c = {0};
  cr_assert_eq(weft_engine_create(&c.eng, NULL), 0);
  c.v = te_var(c.eng);
  sem_init(&c.began, 0, 0);
  sem_init(&c.destroyed, 0, 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, capture_thread, &c), 0);
  while (sem_wait(&c.began) != 0)
    ;
  cr_assert_eq(weft_capture_count_open(), 1);
  int rc = weft_engine_destroy(c.eng); /* not this thread's capture: no EBUSY */
  cr_assert_eq(rc, 0, "engine destroy = %d (%s)", rc, weft_strerror(rc));
  sem_post(&c.destroyed);
  te_join(th);
  cr_assert_eq(c.end_rc, WEFT_ESHUTDOWN, "end_capture after the destroy = %d (%s)", c.end_rc,
               weft_strerror(c.end_rc));
  cr_assert_null(c.g, "end_capture made a graph of a destroyed engine");
  cr_assert_eq(c.after_rc, 0);
  cr_assert_eq(atomic_load(&c.ran), 1, "the captured pushes ran, or the fresh one did not");
  cr_assert_eq(weft_capture_count_open(), 0);
  sem_destroy(&c.began);
  sem_destroy(&c.destroyed);
}

static void *capture_and_exit(void *arg)
{
  capturer *c = arg;
  cr_assert_eq(weft_graph_begin_capture(c->eng), 0);
  for (int i = 0; i < 1000; i++)
    cr_assert_eq(te_push(c->eng, add_fn, &c->ran, TE_NONE, TE_V(c->v), 0), 0);
  return NULL; /* the capture is left open */
}

Test(graph_race, a_capture_left_open_at_thread_exit_is_freed, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  capturer c = {0};
  cr_assert_eq(weft_engine_create(&c.eng, NULL), 0);
  c.v = te_var(c.eng);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, capture_and_exit, &c), 0);
  te_join(th);
  cr_assert_eq(weft_capture_count_open(), 0, "the exited thread's capture is still open");
  /* The engine works as before, and ran none of the captured pushes. */
  cr_assert_eq(te_push(c.eng, add_fn, &c.ran, TE_NONE, TE_V(c.v), 0), 0);
  cr_assert_eq(weft_wait_all(c.eng), 0);
  cr_assert_eq(atomic_load(&c.ran), 1);
  cr_assert_eq(weft_engine_destroy(c.eng), 0);
}
