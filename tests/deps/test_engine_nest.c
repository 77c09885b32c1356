/*
 * Operators run nested on one thread, whatever runs them there (weft.h,
 * "nesting"): an operator X that pushes at max_inflight, paces a long run
 * of pushes, waits for a fork-join group, waits on a var or launches a
 * graph may run other operators on its own thread meanwhile. A wait inside
 * one of those (Z) for what cannot finish before X does returns
 * WEFT_EDEADLK at once, and a wait that another thread can satisfy waits
 * and returns 0.
 *
 * First each of the three paths alone, at 1, 2 and 4 threads: with the
 * other workers held (so that Z surely runs on X's thread), and free (Z
 * may be stolen: then its wait is an ordinary one). Then a randomized test
 * that builds trees of operators whose bodies mix those calls (pushes at a
 * cap, pacing, group waits, var waits on ancestors and children, graph
 * launches whose nodes wait too) up to depth 4, and checks that every run
 * ends, that every operator ran once, and that each WEFT_EDEADLK has a
 * cycle behind it, computed by the test from its own record of who runs
 * on top of whom on each thread and who waits for whom.
 */
#include "engine_util.h"

static void setup(void)
{
  te_setup();
}

/* ------------------------------------------------------ one path at a time */

typedef enum nest_path { NEST_CAP, NEST_PACE, NEST_GROUP } nest_path;

static const char *const path_names[] = {"a push at max_inflight", "pacing",
                                         "weft_group_wait"};

typedef struct nest_case {
  weft_engine *eng;
  weft_pool *pool;
  nest_path path;
  int pace_ops; /* NEST_PACE: the pushes before and after Z */
  weft_var *a, *u;
  pthread_t x_thread;
  atomic_int x_running, x_done;
  atomic_int z_ran, z_nested; /* z_nested: Z ran on X's thread while X ran */
  int rc_z;
  atomic_int hogs_running, release_hogs;
  atomic_long fillers_ran;
} nest_case;

static int nest_hog_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_case *c = arg;
  atomic_fetch_add(&c->hogs_running, 1);
  TU_CHECK(TU_WAIT_UNTIL(atomic_load(&c->release_hogs), 3 * TU_DEADLINE_S), "hog never released");
  return 0;
}

static int nest_filler_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add(&((nest_case *)arg)->fillers_ran, 1);
  return 0;
}

static int nest_leaf_task(void *arg)
{
  (void)arg;
  return 0;
}

static int nest_z_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_case *c = arg;
  bool nested = atomic_load(&c->x_running) && pthread_equal(pthread_self(), c->x_thread);
  atomic_store(&c->z_nested, nested);
  c->rc_z = weft_var_wait(c->eng, c->a); /* a: X's */
  atomic_fetch_add(&c->z_ran, 1);
  return 0;
}

/* n operators that read after_z (NULL: none). */
static void nest_fill(nest_case *c, int n, weft_var *after_z)
{
  for (int i = 0; i < n; i++) {
    int rc = after_z ? te_push(c->eng, nest_filler_fn, c, TE_V(after_z), TE_NONE, 0)
                     : te_push(c->eng, nest_filler_fn, c, TE_NONE, TE_NONE, 0);
    TU_CHECK(rc == 0, "filler push = %d", rc);
  }
}

/* X writes a; Z (writes u) waits on a. */
static int nest_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_case *c = arg;
  c->x_thread = pthread_self();
  atomic_store(&c->x_running, 1);
  weft_group g;
  if (c->path == NEST_GROUP) {
    weft_group_init(&g, c->pool);
    int s = weft_group_spawn(&g, nest_leaf_task, NULL);
    TU_CHECK(s == 0, "spawn = %d", s);
  }
  int p = te_push(c->eng, nest_z_fn, c, TE_NONE, TE_V(c->u), 0);
  TU_CHECK(p == 0, "push of Z = %d", p);
  switch (c->path) {
  case NEST_CAP: /* over the cap: this push helps, and Z is what there is to run */
    nest_fill(c, 1, NULL);
    break;
  case NEST_PACE: /* past the pace mark, and all of them wait for Z: pacing runs Z */
    nest_fill(c, c->pace_ops, c->u);
    break;
  case NEST_GROUP: { /* the newest task first: Z */
    int w = weft_group_wait(&g);
    TU_CHECK(w == 0, "group wait = %d", w);
    break;
  }
  }
  atomic_store(&c->x_running, 0);
  atomic_store(&c->x_done, 1);
  return 0;
}

/* hold: the other threads - 1 workers run hogs until X is done. Returns
 * whether Z ran nested in X (then its wait was checked to be WEFT_EDEADLK). */
static bool nest_run(nest_path path, int threads, bool hold)
{
  int hogs = hold ? threads - 1 : 0;
  /* The cap: the hogs and X fill it, so X's pushes are over it. Pacing
   * needs none: its mark is WEFT_PACE_OPS (WEFT_PACE_OPS_ALONE alone). */
  int cap = path == NEST_CAP ? hogs + 1 : 0;
  te t = te_new("threaded", threads, cap);
  nest_case *c = calloc(1, sizeof *c); /* leaked on a hang */
  cr_assert_not_null(c);
  c->eng = t.eng;
  c->pool = t.pool;
  c->path = path;
  c->pace_ops = (threads == 1 ? 4096 : 16384) + 2 * 256;
  c->a = te_var(t.eng);
  c->u = te_var(t.eng);
  c->rc_z = 12345;
  const char *what = path_names[path];
  for (int i = 0; i < hogs; i++)
    cr_assert_eq(te_push(t.eng, nest_hog_fn, c, TE_NONE, TE_NONE, 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&c->hogs_running) == hogs, TU_DEADLINE_S),
            "%s, %d threads: %d of %d hogs started", what, threads,
            atomic_load(&c->hogs_running), hogs);
  cr_assert_eq(te_push(t.eng, nest_x_fn, c, TE_NONE, TE_V(c->a), 0), 0);
  bool ended = TU_WAIT_UNTIL(atomic_load(&c->x_done) && atomic_load(&c->z_ran), TU_DEADLINE_S);
  cr_assert(ended,
            "%s, %d threads%s: X returned %d, Z returned %d (Z nested in X: %d): a wait "
            "nested on X's thread for X's var hung",
            what, threads, hold ? ", the others held" : "", atomic_load(&c->x_done),
            atomic_load(&c->z_ran), atomic_load(&c->z_nested));
  atomic_store(&c->release_hogs, 1);
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  bool nested = atomic_load(&c->z_nested);
  if (hold)
    cr_assert(nested, "%s, %d threads, the others held: Z did not run on X's thread", what,
              threads);
  int want = nested ? WEFT_EDEADLK : 0;
  cr_assert_eq(c->rc_z, want, "%s, %d threads%s: Z's wait on X's var (Z nested in X: %d) = %d (%s)",
               what, threads, hold ? ", the others held" : "", nested, c->rc_z,
               weft_strerror(c->rc_z));
  cr_assert_eq(atomic_load(&c->z_ran), 1);
  long fill = path == NEST_CAP ? 1 : path == NEST_PACE ? c->pace_ops : 0;
  cr_assert_eq(atomic_load(&c->fillers_ran), fill);
  free(c);
  cr_assert_eq(te_free(&t), 0);
  return nested;
}

/* Every thread count, held and free; returns how many held runs had Z
 * nested in X (each of them: WEFT_EDEADLK, checked by nest_run). */
static int nest_path_all(nest_path path)
{
  static const int threads[] = {1, 2, 4};
  int held_nested = 0;
  for (int i = 0; i < 3; i++) {
    held_nested += nest_run(path, threads[i], true);
    (void)nest_run(path, threads[i], false);
  }
  return held_nested;
}

Test(nest, a_push_at_the_cap_runs_z_inside_x_so_its_wait_on_xs_var_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(nest_path_all(NEST_CAP), 3, "Z ran nested in X in fewer than the 3 held runs");
}

Test(nest, pacing_runs_z_inside_x_so_its_wait_on_xs_var_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(nest_path_all(NEST_PACE), 3, "Z ran nested in X in fewer than the 3 held runs");
}

Test(nest, a_group_wait_runs_z_inside_x_so_its_wait_on_xs_var_is_edeadlk, .init = setup,
     .timeout = TU_TIMEOUT(120))
{
  cr_assert_eq(nest_path_all(NEST_GROUP), 3, "Z ran nested in X in fewer than the 3 held runs");
}

/*
 * No false WEFT_EDEADLK: Z runs inside X (1 worker, X's group wait), and
 * waits on b, which X does not use and whose writer P, pushed by X before
 * Z, can run meanwhile (Z's wait runs it): 0, after P.
 */
typedef struct nest_free {
  weft_engine *eng;
  weft_pool *pool;
  weft_var *a, *b, *u;
  atomic_int p_ran, z_ran;
  int p_before_z_returned;
  int rc_z;
} nest_free;

static int nest_free_p_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_store(&((nest_free *)arg)->p_ran, 1);
  return 0;
}

static int nest_free_z_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_free *n = arg;
  n->rc_z = weft_var_wait(n->eng, n->b);
  n->p_before_z_returned = atomic_load(&n->p_ran);
  atomic_store(&n->z_ran, 1);
  return 0;
}

static int nest_free_x_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nest_free *n = arg;
  weft_group g;
  weft_group_init(&g, n->pool);
  TU_CHECK(te_push(n->eng, nest_free_p_fn, n, TE_NONE, TE_V(n->b), 0) == 0, "push P");
  TU_CHECK(te_push(n->eng, nest_free_z_fn, n, TE_NONE, TE_V(n->u), 0) == 0, "push Z");
  TU_CHECK(weft_group_wait(&g) == 0, "group wait");
  return 0;
}

Test(nest, a_nested_wait_that_helping_can_satisfy_returns_0, .init = setup,
     .timeout = TU_TIMEOUT(60))
{
  te t = te_new("threaded", 1, 0);
  nest_free *n = calloc(1, sizeof *n);
  cr_assert_not_null(n);
  *n = (nest_free){.eng = t.eng, .pool = t.pool, .rc_z = 12345};
  n->a = te_var(t.eng);
  n->b = te_var(t.eng);
  n->u = te_var(t.eng);
  cr_assert_eq(te_push(t.eng, nest_free_x_fn, n, TE_NONE, TE_V(n->a), 0), 0);
  cr_assert(TU_WAIT_UNTIL(atomic_load(&n->z_ran), TU_DEADLINE_S), "Z's wait on b hung");
  cr_assert_eq(weft_wait_all(t.eng), 0);
  tu_assert_no_errors();
  cr_assert_eq(n->rc_z, 0, "Z's wait on b = %d (%s)", n->rc_z, weft_strerror(n->rc_z));
  cr_assert(n->p_before_z_returned, "Z's wait on b returned before b's writer ran");
  free(n);
  cr_assert_eq(te_free(&t), 0);
}

/* -------------------------------------------------------- randomized nesting */

#define NN_MAX_OPS 40   /* operators of one tree */
#define NN_MAX_ACTS 6   /* actions of one operator's body */
#define NN_MAX_DEPTH 4  /* the root is at depth 0 */
#define NN_GNODES 3     /* nodes of the scenario's graph */
#define NN_STACKS 16    /* threads that run operators */
#define NN_STACK_MAX 64 /* operators on top of each other on one thread */
#define NN_IDS (NN_MAX_OPS + NN_GNODES + 1)

typedef enum nn_kind {
  NN_PUSH,       /* push child arg */
  NN_FILL,       /* push arg operators with no vars (at a cap, each push helps) */
  NN_PACE,       /* push arg such operators: past the pace mark, pacing helps */
  NN_GROUP,      /* spawn arg leaf tasks, then weft_group_wait (it helps) */
  NN_WAIT_ANC,   /* weft_var_wait on the var of the ancestor arg levels up (0: its own) */
  NN_WAIT_CHILD, /* weft_var_wait on the var of the child pushed by action arg */
  NN_LAUNCH,     /* launch the graph, unless a launch of it runs */
  NN_WAIT_GRAPH, /* weft_var_wait on a var the graph writes */
} nn_kind;

typedef struct nn_act {
  nn_kind kind;
  int arg;
} nn_act;

typedef struct nn_run nn_run;

/* An operator of the tree, or (gnode) a node of the graph. */
typedef struct nn_op {
  nn_run *run;
  int id, parent, depth;
  bool gnode;
  bool waits; /* a node: waits on the root's var */
  weft_var *var;
  nn_act act[NN_MAX_ACTS];
  int nact;
  atomic_int ran;
} nn_op;

typedef struct nn_stack {
  pthread_t thread;
  int id[NN_STACK_MAX];
  int n;
} nn_stack;

struct nn_run {
  weft_engine *eng;
  weft_pool *pool;
  weft_graph *graph;
  weft_var *gvar[NN_GNODES];
  nn_op op[NN_MAX_OPS + NN_GNODES];
  int nops;
  int launch_id; /* the launch, as one more id of the model */
  atomic_int busy; /* operators and nodes pushed or launched and not returned */
  atomic_long fill_pushed, fill_ran, leaves_spawned, leaves_ran;
  atomic_int launches;
  /* The model, under mu: which ids are alive (pushed or launched and not
   * returned), whom each waits for (-1: no one), each thread's stack. */
  pthread_mutex_t mu;
  bool alive[NN_IDS];
  int waits_on[NN_IDS];
  nn_stack stack[NN_STACKS];
  int nstacks;
  /* Outcomes (under mu). */
  long waits, edeadlk_own, edeadlk_other, zero;
};

/* Totals over a test, for the checks that it exercised something. */
typedef struct nn_totals {
  long waits, edeadlk_own, edeadlk_other, zero, launches;
} nn_totals;

/* Under mu: this thread's stack. */
static nn_stack *nn_my_stack(nn_run *r)
{
  pthread_t self = pthread_self();
  for (int i = 0; i < r->nstacks; i++)
    if (pthread_equal(r->stack[i].thread, self))
      return &r->stack[i];
  if (r->nstacks == NN_STACKS)
    return NULL;
  nn_stack *s = &r->stack[r->nstacks++];
  s->thread = self;
  s->n = 0;
  return s;
}

/* Under mu: whether from's finish needs to's (transitively): the operator
 * on top of one on its thread's stack finishes first; a wait for an alive
 * operator needs it; the launch needs each alive node. */
static bool nn_needs(nn_run *r, int from, int to)
{
  bool seen[NN_IDS] = {false};
  int work[NN_IDS * 2], n = 0;
  work[n++] = from;
  seen[from] = true;
  while (n > 0) {
    int o = work[--n];
    if (o == to)
      return true;
    int next[NN_IDS + NN_STACKS];
    int k = 0;
    for (int s = 0; s < r->nstacks; s++)
      for (int i = 0; i + 1 < r->stack[s].n; i++)
        if (r->stack[s].id[i] == o)
          next[k++] = r->stack[s].id[i + 1];
    int w = r->waits_on[o];
    if (w >= 0 && r->alive[w])
      next[k++] = w;
    if (o == r->launch_id)
      for (int g = 0; g < NN_GNODES; g++)
        if (r->alive[r->nops + g])
          next[k++] = r->nops + g;
    for (int i = 0; i < k; i++)
      if (!seen[next[i]] && n < (int)(sizeof work / sizeof *work)) {
        seen[next[i]] = true;
        work[n++] = next[i];
      }
  }
  return false;
}

/* Under mu: the stacks, with whom each operator on them waits for. */
static void nn_dump(nn_run *r, char *buf, size_t size)
{
  size_t k = 0;
  buf[0] = 0;
  for (int s = 0; s < r->nstacks && k + 40 < size; s++) {
    k += (size_t)snprintf(buf + k, size - k, " [thread %d:", s);
    for (int i = 0; i < r->stack[s].n && k + 40 < size; i++)
      k += (size_t)snprintf(buf + k, size - k, " %d(waits %d)", r->stack[s].id[i],
                            r->waits_on[r->stack[s].id[i]]);
    k += (size_t)snprintf(buf + k, size - k, "]");
  }
  for (int i = 0; i < NN_IDS && k + 40 < size; i++)
    if (r->waits_on[i] >= 0)
      k += (size_t)snprintf(buf + k, size - k, " %d waits %d%s;", i, r->waits_on[i],
                            r->alive[r->waits_on[i]] ? "" : " (gone)");
}

static void nn_enter(nn_run *r, int id)
{
  pthread_mutex_lock(&r->mu);
  nn_stack *s = nn_my_stack(r);
  TU_CHECK(s && s->n < NN_STACK_MAX, "op %d: no room on this thread's stack", id);
  if (s && s->n < NN_STACK_MAX)
    s->id[s->n++] = id;
  pthread_mutex_unlock(&r->mu);
}

static void nn_leave(nn_run *r, int id)
{
  pthread_mutex_lock(&r->mu);
  nn_stack *s = nn_my_stack(r);
  TU_CHECK(s && s->n > 0 && s->id[s->n - 1] == id, "op %d: not on top of its thread's stack", id);
  if (s && s->n > 0)
    s->n--;
  r->alive[id] = false;
  atomic_fetch_sub(&r->busy, 1);
  if (r->op[id].gnode) { /* the launch ends with its last node */
    bool any = false;
    for (int g = 0; g < NN_GNODES; g++)
      any |= r->alive[r->nops + g];
    if (!any)
      r->alive[r->launch_id] = false;
  }
  pthread_mutex_unlock(&r->mu);
}

/* me waits on var, whose finish is target's (an operator, or the launch). */
static void nn_wait(nn_run *r, int me, int target, weft_var *var)
{
  pthread_mutex_lock(&r->mu);
  r->waits_on[me] = target;
  pthread_mutex_unlock(&r->mu);
  int rc = weft_var_wait(r->eng, var);
  pthread_mutex_lock(&r->mu);
  r->waits_on[me] = -1;
  r->waits++;
  if (rc == WEFT_EDEADLK) {
    /* The ones that wait for me still do: the cycle, if any, is there now. */
    bool cycle = target == me || (r->alive[target] && nn_needs(r, target, me));
    if (!cycle) {
      char buf[400];
      nn_dump(r, buf, sizeof buf);
      TU_CHECK(cycle, "op %d's wait for %d (%s): WEFT_EDEADLK with no cycle; stacks:%s", me,
               target, r->alive[target] ? "alive" : "gone", buf);
    }
    if (target == me)
      r->edeadlk_own++;
    else
      r->edeadlk_other++;
  } else {
    TU_CHECK(rc == 0, "op %d's wait for %d = %d (%s)", me, target, rc, weft_strerror(rc));
    r->zero++;
  }
  pthread_mutex_unlock(&r->mu);
}

static int nn_filler_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  atomic_fetch_add(&((nn_run *)arg)->fill_ran, 1);
  return 0;
}

static int nn_leaf_task(void *arg)
{
  atomic_fetch_add(&((nn_run *)arg)->leaves_ran, 1);
  return 0;
}

static void nn_fill(nn_run *r, int n)
{
  for (int i = 0; i < n; i++) {
    int rc = te_push(r->eng, nn_filler_fn, r, TE_NONE, TE_NONE, 0);
    TU_CHECK(rc == 0, "filler push = %d (%s)", rc, weft_strerror(rc));
    if (rc == 0)
      atomic_fetch_add(&r->fill_pushed, 1);
  }
}

static int nn_op_fn(const weft_run_ctx *rc, void *arg);

static void nn_push(nn_run *r, int child)
{
  nn_op *c = &r->op[child];
  int v = weft_var_new(r->eng, &c->var);
  TU_CHECK(v == 0, "weft_var_new = %d", v);
  if (v)
    return;
  pthread_mutex_lock(&r->mu);
  r->alive[child] = true;
  pthread_mutex_unlock(&r->mu);
  atomic_fetch_add(&r->busy, 1);
  int p = te_push(r->eng, nn_op_fn, c, TE_NONE, TE_V(c->var), 0);
  TU_CHECK(p == 0, "push of op %d = %d (%s)", child, p, weft_strerror(p));
}

static void nn_launch(nn_run *r)
{
  pthread_mutex_lock(&r->mu);
  bool busy = r->alive[r->launch_id];
  if (!busy) {
    atomic_fetch_add(&r->busy, NN_GNODES);
    r->alive[r->launch_id] = true;
    for (int g = 0; g < NN_GNODES; g++)
      r->alive[r->nops + g] = true;
  }
  pthread_mutex_unlock(&r->mu);
  if (busy)
    return;
  int rc = weft_graph_launch(r->graph);
  if (rc == WEFT_EBUSY) { /* the last one's end still being recorded: none runs */
    pthread_mutex_lock(&r->mu);
    r->alive[r->launch_id] = false;
    for (int g = 0; g < NN_GNODES; g++)
      r->alive[r->nops + g] = false;
    atomic_fetch_sub(&r->busy, NN_GNODES);
    pthread_mutex_unlock(&r->mu);
    return;
  }
  TU_CHECK(rc == 0, "weft_graph_launch = %d (%s)", rc, weft_strerror(rc));
  if (rc == 0)
    atomic_fetch_add(&r->launches, 1);
}

static int nn_op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  nn_op *o = arg;
  nn_run *r = o->run;
  atomic_fetch_add(&o->ran, 1);
  nn_enter(r, o->id);
  if (o->gnode) {
    if (o->waits)
      nn_wait(r, o->id, 0, r->op[0].var); /* the root's */
    nn_leave(r, o->id);
    return 0;
  }
  for (int i = 0; i < o->nact; i++) {
    const nn_act *a = &o->act[i];
    switch (a->kind) {
    case NN_PUSH:
      nn_push(r, a->arg);
      break;
    case NN_FILL:
    case NN_PACE:
      nn_fill(r, a->arg);
      break;
    case NN_GROUP: {
      weft_group g;
      weft_group_init(&g, r->pool);
      for (int k = 0; k < a->arg; k++) {
        int s = weft_group_spawn(&g, nn_leaf_task, r);
        TU_CHECK(s == 0, "spawn = %d", s);
        if (s == 0)
          atomic_fetch_add(&r->leaves_spawned, 1);
      }
      int w = weft_group_wait(&g);
      TU_CHECK(w == 0, "group wait = %d", w);
      break;
    }
    case NN_WAIT_ANC: {
      int t = o->id;
      for (int k = 0; k < a->arg; k++)
        t = r->op[t].parent;
      nn_wait(r, o->id, t, r->op[t].var);
      break;
    }
    case NN_WAIT_CHILD: {
      int child = o->act[a->arg].arg;
      if (r->op[child].var) /* its push went through */
        nn_wait(r, o->id, child, r->op[child].var);
      break;
    }
    case NN_LAUNCH:
      nn_launch(r);
      break;
    case NN_WAIT_GRAPH:
      nn_wait(r, o->id, r->launch_id, r->gvar[0]);
      break;
    }
  }
  nn_leave(r, o->id);
  return 0;
}

/* The body of operator id (and its subtree). */
static void nn_gen(nn_run *r, uint64_t *seed, int id, bool pace, int pace_ops)
{
  nn_op *o = &r->op[id];
  int nact = 1 + (int)(tu_rand(seed) % NN_MAX_ACTS);
  for (int i = 0; i < nact; i++) {
    nn_act a = {NN_FILL, 1};
    unsigned pick = (unsigned)(tu_rand(seed) % 100);
    if (pick < 30 && o->depth < NN_MAX_DEPTH && r->nops < NN_MAX_OPS) {
      int child = r->nops++;
      r->op[child] = (nn_op){.run = r, .id = child, .parent = id, .depth = o->depth + 1};
      a = (nn_act){NN_PUSH, child};
      o->act[o->nact++] = a;
      nn_gen(r, seed, child, false, pace_ops);
      continue;
    }
    if (pick < 42) {
      a = (nn_act){NN_FILL, 1 + (int)(tu_rand(seed) % 6)};
    } else if (pick < 55) {
      a = (nn_act){NN_GROUP, 1 + (int)(tu_rand(seed) % 3)};
    } else if (pick < 75) {
      /* Mostly an ancestor's (a cycle if it runs below on this thread),
       * now and then its own (always one). */
      int up = o->depth == 0 ? 0 : 1 + (int)(tu_rand(seed) % (unsigned)o->depth);
      if (tu_rand(seed) % 8 == 0)
        up = 0;
      a = (nn_act){NN_WAIT_ANC, up};
    } else if (pick < 87) {
      int pushed[NN_MAX_ACTS], np = 0;
      for (int k = 0; k < o->nact; k++)
        if (o->act[k].kind == NN_PUSH)
          pushed[np++] = k;
      if (np > 0)
        a = (nn_act){NN_WAIT_CHILD, pushed[tu_rand(seed) % (unsigned)np]};
    } else if (pick < 94) {
      a = (nn_act){NN_LAUNCH, 0};
    } else {
      a = (nn_act){NN_WAIT_GRAPH, 0};
    }
    o->act[o->nact++] = a;
  }
  if (pace && o->nact < NN_MAX_ACTS) /* the root paces, once, after its first actions */
    o->act[o->nact++] = (nn_act){NN_PACE, pace_ops};
}

/* One scenario: a tree from seed on threads workers, with max_inflight
 * cap (0: none); adds its outcomes to tot. */
static void nn_scenario(uint64_t seed0, int threads, int cap, bool pace, nn_totals *tot)
{
  uint64_t seed = seed0;
  te t = te_new("threaded", threads, cap);
  nn_run *r = calloc(1, sizeof *r); /* leaked on a hang */
  cr_assert_not_null(r);
  r->eng = t.eng;
  r->pool = t.pool;
  pthread_mutex_init(&r->mu, NULL);
  for (int i = 0; i < NN_IDS; i++)
    r->waits_on[i] = -1;
  r->nops = 1;
  r->op[0] = (nn_op){.run = r, .id = 0, .parent = -1, .depth = 0};
  int pace_ops = (threads == 1 ? 4096 : 16384) + 3 * 256;
  nn_gen(r, &seed, 0, pace, pace_ops);
  for (int g = 0; g < NN_GNODES; g++) {
    nn_op *n = &r->op[r->nops + g];
    *n = (nn_op){.run = r, .id = r->nops + g, .parent = 0, .depth = 1, .gnode = true};
    n->waits = tu_rand(&seed) % 2 == 0;
    r->gvar[g] = te_var(t.eng);
  }
  r->launch_id = r->nops + NN_GNODES;
  /* The graph: its nodes in a chain, each writing its own var. */
  cr_assert_eq(weft_graph_begin_capture(t.eng), 0);
  for (int g = 0; g < NN_GNODES; g++) {
    weft_op_desc d = te_desc(nn_op_fn, &r->op[r->nops + g]);
    weft_var *reads[1] = {g > 0 ? r->gvar[g - 1] : NULL};
    d.reads = reads;
    d.num_reads = g > 0 ? 1 : 0;
    d.writes = &r->gvar[g];
    d.num_writes = 1;
    cr_assert_eq(weft_push(t.eng, &d), 0);
  }
  cr_assert_eq(weft_graph_end_capture(t.eng, &r->graph), 0);
  r->op[0].var = te_var(t.eng);
  r->alive[0] = true;
  atomic_store(&r->busy, 1);
  cr_assert_eq(te_push(t.eng, nn_op_fn, &r->op[0], TE_NONE, TE_V(r->op[0].var), 0), 0);
  bool ended = TU_WAIT_UNTIL(atomic_load(&r->busy) == 0 &&
                                 atomic_load(&r->fill_ran) == atomic_load(&r->fill_pushed),
                             TU_DEADLINE_S);
  if (!ended) {
    pthread_mutex_lock(&r->mu);
    char buf[512];
    nn_dump(r, buf, sizeof buf);
    pthread_mutex_unlock(&r->mu);
    cr_assert_fail("seed %#llx, %d threads, max_inflight %d: the tree of %d operators hung"
                   " (%d not returned); stacks:%s",
                   (unsigned long long)seed0, threads, cap, r->nops, atomic_load(&r->busy), buf);
  }
  cr_assert_eq(weft_wait_all(t.eng), 0, "seed %#llx", (unsigned long long)seed0);
  tu_assert_no_errors();
  int launches = atomic_load(&r->launches);
  for (int i = 0; i < r->nops; i++) {
    bool pushed = i == 0 || r->op[i].var != NULL;
    cr_assert_eq(atomic_load(&r->op[i].ran), pushed ? 1 : 0, "seed %#llx: op %d ran %d times",
                 (unsigned long long)seed0, i, atomic_load(&r->op[i].ran));
  }
  for (int g = 0; g < NN_GNODES; g++)
    cr_assert_eq(atomic_load(&r->op[r->nops + g].ran), launches,
                 "seed %#llx: graph node %d ran %d times in %d launches",
                 (unsigned long long)seed0, g, atomic_load(&r->op[r->nops + g].ran), launches);
  cr_assert_eq(atomic_load(&r->fill_ran), atomic_load(&r->fill_pushed));
  cr_assert_eq(atomic_load(&r->leaves_ran), atomic_load(&r->leaves_spawned));
  tot->waits += r->waits;
  tot->edeadlk_own += r->edeadlk_own;
  tot->edeadlk_other += r->edeadlk_other;
  tot->zero += r->zero;
  tot->launches += launches;
  cr_assert_eq(weft_graph_destroy(r->graph), 0);
  cr_assert_eq(te_free(&t), 0);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static nn_totals nn_sweep(int threads)
{
  long n = tu_scaled(1000, 200);
  nn_totals tot = {0};
  for (long i = 0; i < n; i++) {
    uint64_t seed = 0x6e657374ull * 1000 + (uint64_t)threads * 100000 + (uint64_t)i;
    int cap = i % 3 == 0 ? 0 : (int)(i % 3) * threads; /* none, or a few per worker */
    nn_scenario(seed, threads, cap, i % 16 == 5, &tot);
  }
  cr_log_info("%d threads: %ld scenarios, %ld waits: %ld WEFT_EDEADLK on its own var, %ld on "
              "another's, %ld returned 0; %ld graph launches",
              threads, n, tot.waits, tot.edeadlk_own, tot.edeadlk_other, tot.zero, tot.launches);
  return tot;
}


Test(nest, random_nestings_end_and_each_edeadlk_closes_a_cycle_1_thread, .init = setup,
     .timeout = TU_TIMEOUT(240))
{
  nn_totals tot = nn_sweep(1);
  cr_assert_gt(tot.edeadlk_other, 0, "1 thread: no wait closed a cycle");
  cr_assert_gt(tot.zero, 0, "1 thread: no wait returned 0");
  cr_assert_gt(tot.launches, 0, "1 thread: no graph launch");
}

Test(nest, random_nestings_end_and_each_edeadlk_closes_a_cycle_2_threads, .init = setup,
     .timeout = TU_TIMEOUT(240))
{
  nn_totals tot = nn_sweep(2);
  cr_assert_gt(tot.edeadlk_other, 0, "2 threads: no wait closed a cycle");
  cr_assert_gt(tot.zero, 0, "2 threads: no wait returned 0");
  cr_assert_gt(tot.launches, 0, "2 threads: no graph launch");
}

Test(nest, random_nestings_end_and_each_edeadlk_closes_a_cycle_4_threads, .init = setup,
     .timeout = TU_TIMEOUT(240))
{
  nn_totals tot = nn_sweep(4);
  cr_assert_gt(tot.edeadlk_other, 0, "4 threads: no wait closed a cycle");
  cr_assert_gt(tot.zero, 0, "4 threads: no wait returned 0");
  cr_assert_gt(tot.launches, 0, "4 threads: no graph launch");
}
