/* SPDX-License-Identifier: MIT */
/*
 * The var queue (src/deps/var_queue.h): sequential cases, a randomized
 * comparison with a reference model of MXNet's rules, and a multi-threaded
 * stress of the registration protocol the engine uses (an operator appends
 * to all its vars under all their locks, taken in index order), checking
 * that every operator runs exactly once, that no writer overlaps a reader or
 * writer of the same var, that writes of a var run in push order, and that
 * every read sees the value of the last write pushed before it.
 * Requests are mostly simple, so claimed segments (handed on without the
 * queue, given back when the next request needs it) are part of every run.
 */
#include "../common/testutil.h"

#include "common/tunables.h"
#include "deps/var_queue.h"

/* ------------------------------------------------------------- sequential */

static weft_var_req req(void *op, bool write)
{
  weft_var_req r = {.op = op, .write = write};
  return r;
}

/* A request of a plain CPU operator: its grant may claim a segment. */
static weft_var_req sreq(void *op, bool write)
{
  weft_var_req r = {.op = op, .write = write, .simple = true};
  return r;
}

Test(var_queue, reads_run_together_writes_alone, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req r1 = req((void *)1, false), r2 = req((void *)2, false);
  weft_var_req w3 = req((void *)3, true), r4 = req((void *)4, false);
  weft_var_req w5 = req((void *)5, true);
  cr_assert(weft_varq_append(&q, &r1), "a read on an idle var waits");
  cr_assert(weft_varq_append(&q, &r2), "a second read waits behind a running read");
  cr_assert_not(weft_varq_append(&q, &w3), "a write was granted while reads run");
  cr_assert_not(weft_varq_append(&q, &r4), "a read jumped over a waiting write");
  cr_assert_not(weft_varq_append(&q, &w5));
  cr_assert_null(weft_varq_complete(&q, false, false), "the write started with a read still running");
  weft_var_req *g = weft_varq_complete(&q, false, false);
  cr_assert_eq(g, &w3, "the last read's completion did not grant the write");
  cr_assert_null(g->next);
  g = weft_varq_complete(&q, true, false);
  cr_assert_eq(g, &r4, "the write's completion did not grant the read behind it");
  cr_assert_null(g->next, "the write behind the read was granted with it");
  g = weft_varq_complete(&q, false, false);
  cr_assert_eq(g, &w5);
  cr_assert_null(weft_varq_complete(&q, true, false));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, write_completion_grants_every_read_up_to_the_next_write, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req w = req((void *)1, true), r[3], w2 = req((void *)9, true);
  cr_assert(weft_varq_append(&q, &w));
  for (int i = 0; i < 3; i++) {
    r[i] = req((void *)(uintptr_t)(2 + i), false);
    cr_assert_not(weft_varq_append(&q, &r[i]));
  }
  cr_assert_not(weft_varq_append(&q, &w2));
  weft_var_req *g = weft_varq_complete(&q, true, false);
  int n = 0;
  for (; g; g = g->next, n++)
    cr_assert_eq(g, &r[n], "reads granted out of order");
  cr_assert_eq(n, 3);
  cr_assert_eq(q.nreaders, 3);
  cr_assert_null(weft_varq_complete(&q, false, false));
  cr_assert_null(weft_varq_complete(&q, false, false));
  cr_assert_eq(weft_varq_complete(&q, false, false), &w2);
  cr_assert_null(weft_varq_complete(&q, true, false));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, writes_in_push_order, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = req((void *)(uintptr_t)(i + 1), true);
    cr_assert_eq(weft_varq_append(&q, &w[i]), i == 0);
  }
  for (int i = 1; i < 4; i++)
    cr_assert_eq(weft_varq_complete(&q, true, false), &w[i], "write %d not next", i);
  cr_assert_null(weft_varq_complete(&q, true, false));
  cr_assert(weft_varq_idle(&q));
}

/* ------------------------------------------------------ claimed segments */

Test(var_queue, a_granted_simple_write_claims_the_waiting_requests, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = sreq((void *)(uintptr_t)(i + 1), true);
    cr_assert_eq(weft_varq_append(&q, &w[i]), i == 0);
  }
  weft_var_req *g = weft_varq_complete(&q, true, true);
  cr_assert_eq(g, &w[1]);
  cr_assert_eq(weft_varq_claimed(&w[1]), &w[2], "the waiting writes were not claimed");
  cr_assert_eq(w[2].next, &w[3], "the segment's links changed");
  cr_assert_null(q.head, "claimed requests still queued");
  cr_assert(q.writer, "the var is not held while a segment is claimed");
  /* A request pushed now waits behind the segment. */
  weft_var_req late = sreq((void *)9, false);
  cr_assert_not(weft_varq_append(&q, &late), "a read jumped a claimed segment");
  /* Hand-overs without the queue: w[1] -> w[2] -> w[3]. */
  cr_assert(weft_varq_passable(&w[1]));
  cr_assert_eq(weft_varq_pass(&w[1]), &w[2]);
  cr_assert_null(weft_varq_claimed(&w[1]));
  cr_assert_eq(weft_varq_claimed(&w[2]), &w[3]);
  cr_assert_eq(weft_varq_pass(&w[2]), &w[3]);
  cr_assert_null(weft_varq_claimed(&w[3]), "the segment's last request claims nothing");
  /* The segment is used up: w[3]'s completion goes through the queue. */
  cr_assert_eq(weft_varq_complete(&q, true, true), &late);
  cr_assert_null(weft_varq_complete(&q, false, true));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, a_long_segment_is_handed_on_in_order_with_its_cursor_ahead,
     .timeout = TU_TIMEOUT(10))
{
  enum { N = 200 };
  static weft_var_req w[N];
  weft_varq q;
  weft_varq_init(&q);
  for (int i = 0; i < N; i++) {
    w[i] = sreq((void *)(uintptr_t)(i + 1), true);
    cr_assert_eq(weft_varq_append(&q, &w[i]), i == 0);
  }
  cr_assert_eq(weft_varq_complete(&q, true, true), &w[1]);
  weft_var_req *h = &w[1];
  for (int i = 2; i < N; i++) {
    cr_assert(weft_varq_passable(h));
    weft_var_req *n = weft_varq_pass(h);
    cr_assert_eq(n, &w[i], "hand-over %d went to request %ld", i, (long)(n - w));
    cr_assert_null(weft_varq_claimed(h), "a finished holder still holds the segment");
    if (n->ahead) { /* the prefetch cursor: a later request of the segment */
      long k = n->ahead - w;
      cr_assert(k > i && k < N && k <= i + WEFT_VARQ_AHEAD, "cursor at %ld, holder %d", k, i);
    } else {
      cr_assert_geq(i, N - 2, "no cursor with %d requests left", N - 1 - i);
    }
    h = n;
  }
  cr_assert_null(weft_varq_claimed(h));
  cr_assert_null(weft_varq_complete(&q, true, true));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, only_a_segment_of_writes_gets_a_cursor, .timeout = TU_TIMEOUT(10))
{
  /* w0 (granted), w1 (claims w2 w3 r4 w5): a read in the segment, so the
   * hand-overs walk nothing ahead (each step of a walk waits for a line). */
  weft_var_req w0 = sreq((void *)1, true), w1 = sreq((void *)2, true), w2 = sreq((void *)3, true);
  weft_var_req w3 = sreq((void *)4, true), r4 = sreq((void *)5, false), w5 = sreq((void *)6, true);
  weft_varq q;
  weft_varq_init(&q);
  cr_assert(weft_varq_append(&q, &w0));
  weft_var_req *rs[] = {&w1, &w2, &w3, &r4, &w5};
  for (int i = 0; i < 5; i++)
    cr_assert_not(weft_varq_append(&q, rs[i]));
  cr_assert_eq(weft_varq_complete(&q, true, true), &w1);
  cr_assert_not(w1.pure, "a segment with a read is taken for writes only");
  cr_assert_eq(weft_varq_pass(&w1), &w2);
  cr_assert_null(w2.ahead, "a cursor in a segment with a read");
  cr_assert_eq(weft_varq_pass(&w2), &w3);
  cr_assert_not(weft_varq_passable(&w3), "a read was passable");
  weft_varq_unclaim(&q, &w3);
  cr_assert_eq(weft_varq_complete(&q, true, true), &r4);
  cr_assert_eq(weft_varq_complete(&q, false, true), &w5);
  cr_assert_null(weft_varq_complete(&q, true, true));
  cr_assert(weft_varq_idle(&q));

  /* The queue emptied: a run of writes claimed now is pure, and its cursor
   * walks to the run's end (a read queued after the claim is not part of
   * the segment). */
  weft_var_req v[5];
  for (int i = 0; i < 5; i++) {
    v[i] = sreq((void *)(uintptr_t)(10 + i), true);
    cr_assert_eq(weft_varq_append(&q, &v[i]), i == 0);
  }
  cr_assert_eq(weft_varq_complete(&q, true, true), &v[1]);
  cr_assert(v[1].pure, "a run of writes was not taken as one");
  weft_var_req late = sreq((void *)20, false);
  cr_assert_not(weft_varq_append(&q, &late));
  cr_assert_eq(weft_varq_pass(&v[1]), &v[2]);
  cr_assert(v[2].pure);
  cr_assert_eq(v[2].ahead, &v[4], "the cursor stopped short of the run's end");
  cr_assert_eq(weft_varq_pass(&v[2]), &v[3]);
  cr_assert_eq(weft_varq_pass(&v[3]), &v[4]);
  cr_assert_eq(weft_varq_complete(&q, true, true), &late);
  cr_assert_null(weft_varq_complete(&q, false, true));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, a_segment_given_back_keeps_its_read_known, .timeout = TU_TIMEOUT(10))
{
  /* w1 holds [w2 r3 w4] and fails: the rest goes back to the queue, and the
   * segment w2 claims from it again holds the read, so it is not pure. */
  weft_var_req w0 = sreq((void *)1, true), w1 = sreq((void *)2, true), w2 = sreq((void *)3, true);
  weft_var_req r3 = sreq((void *)4, false), w4 = sreq((void *)5, true);
  weft_varq q;
  weft_varq_init(&q);
  cr_assert(weft_varq_append(&q, &w0));
  weft_var_req *rs[] = {&w1, &w2, &r3, &w4};
  for (int i = 0; i < 4; i++)
    cr_assert_not(weft_varq_append(&q, rs[i]));
  cr_assert_eq(weft_varq_complete(&q, true, true), &w1);
  cr_assert_eq(weft_varq_claimed(&w1), &w2);
  weft_varq_unclaim(&q, &w1); /* as a failed completion does */
  cr_assert_eq(weft_varq_complete(&q, true, true), &w2);
  cr_assert_eq(weft_varq_claimed(&w2), &r3, "w2 did not claim the rest again");
  cr_assert_not(w2.pure, "a segment with a read, once given back, was taken for writes only");
  weft_varq_unclaim(&q, &w2);
  cr_assert_eq(weft_varq_complete(&q, true, true), &r3);
  cr_assert_eq(weft_varq_complete(&q, false, true), &w4);
  cr_assert_null(weft_varq_complete(&q, true, true));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, unclaim_puts_the_rest_back_in_order, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req w0 = sreq((void *)1, true), w1 = sreq((void *)2, true);
  weft_var_req r2 = sreq((void *)3, false), r3 = req((void *)4, false);
  weft_var_req w4 = req((void *)5, true), late = sreq((void *)6, true);
  cr_assert(weft_varq_append(&q, &w0));
  cr_assert_not(weft_varq_append(&q, &w1));
  cr_assert_not(weft_varq_append(&q, &r2));
  cr_assert_not(weft_varq_append(&q, &r3));
  cr_assert_not(weft_varq_append(&q, &w4));
  cr_assert_eq(weft_varq_complete(&q, true, true), &w1);
  cr_assert_eq(weft_varq_claimed(&w1), &r2);
  cr_assert_not(weft_varq_append(&q, &late));
  cr_assert_not(weft_varq_passable(&w1), "a read was passed on as a write");
  weft_varq_unclaim(&q, &w1);
  cr_assert_null(weft_varq_claimed(&w1), "the segment still held after unclaim");
  weft_var_req *g = weft_varq_complete(&q, true, true);
  cr_assert_eq(g, &r2, "the segment's rest lost its place");
  cr_assert_eq(g->next, &r3, "the reads behind were not granted together");
  cr_assert_null(g->next->next);
  cr_assert_null(weft_varq_complete(&q, false, true));
  g = weft_varq_complete(&q, false, true);
  cr_assert_eq(g, &w4, "the queue lost a request given back");
  cr_assert_null(weft_varq_claimed(&w4), "a non-simple write claimed");
  cr_assert_eq(weft_varq_complete(&q, true, true), &late, "a request pushed meanwhile was lost");
  cr_assert_null(weft_varq_complete(&q, true, true));
  cr_assert(weft_varq_idle(&q));
}

Test(var_queue, no_claim_when_the_caller_says_no, .timeout = TU_TIMEOUT(10))
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req w0 = sreq((void *)1, true), w1 = sreq((void *)2, true), w2 = sreq((void *)3, true);
  cr_assert(weft_varq_append(&q, &w0));
  cr_assert_not(weft_varq_append(&q, &w1));
  cr_assert_not(weft_varq_append(&q, &w2));
  cr_assert_eq(weft_varq_complete(&q, true, false), &w1);
  cr_assert_null(weft_varq_claimed(&w1), "claimed with fences (claim = false)");
  cr_assert_eq(q.head, &w2);
}

/* ------------------------------------------------------ reference model */

enum { REF_WAITING, REF_GRANTED, REF_DONE };

/* MXNet's rules over the whole history: a read may run once every write
 * pushed before it is done; a write once everything pushed before it is. */
static bool ref_grantable(const bool *write, const int *state, int i)
{
  for (int j = 0; j < i; j++)
    if (state[j] != REF_DONE && (write[i] || write[j]))
      return false;
  return true;
}

/* Returns the number of steps checked. */
static long random_history(unsigned seed, int n)
{
  weft_varq q;
  weft_varq_init(&q);
  weft_var_req *reqs = calloc((size_t)n, sizeof *reqs);
  bool *write = calloc((size_t)n, sizeof *write);
  int *state = calloc((size_t)n, sizeof *state);
  cr_assert(reqs && write && state);
  int pushed = 0;
  long steps = 0;
  for (;;) {
    int granted[64], ng = 0;
    for (int i = 0; i < pushed; i++)
      if (state[i] == REF_GRANTED && ng < 64)
        granted[ng++] = i;
    bool push = pushed < n && (ng == 0 || rand_r(&seed) % 2);
    if (!push && ng == 0)
      break;
    if (push) {
      int i = pushed++;
      write[i] = rand_r(&seed) % 3 == 0;
      reqs[i] = rand_r(&seed) % 4 ? sreq((void *)(uintptr_t)(i + 1), write[i])
                                   : req((void *)(uintptr_t)(i + 1), write[i]);
      bool now = weft_varq_append(&q, &reqs[i]);
      bool want = ref_grantable(write, state, i);
      cr_assert_eq(now, want, "seed %u step %ld: append of %s %d granted=%d, model says %d", seed,
                   steps, write[i] ? "write" : "read", i, now, want);
      if (now)
        state[i] = REF_GRANTED;
    } else {
      int i = granted[rand_r(&seed) % (unsigned)ng];
      state[i] = REF_DONE;
      /* As the engine: a claimed segment is handed on without the queue
       * unless the next request needs it (or, at random, a failure). */
      weft_var_req *g, *rest = weft_varq_claimed(&reqs[i]);
      if (rest && weft_varq_passable(&reqs[i]) && rand_r(&seed) % 8) {
        g = weft_varq_pass(&reqs[i]);
      } else {
        if (rest)
          weft_varq_unclaim(&q, &reqs[i]);
        g = weft_varq_complete(&q, write[i], true);
      }
      /* A granted write comes alone: its next links the segment it claimed. */
      for (; g; g = g->write ? NULL : g->next) {
        int k = (int)((uintptr_t)g->op - 1);
        cr_assert_eq(state[k], REF_WAITING, "seed %u: request %d granted twice", seed, k);
        state[k] = REF_GRANTED;
      }
      /* Everything the model allows is now granted, and nothing else. */
      for (int k = 0; k < pushed; k++)
        if (state[k] != REF_DONE)
          cr_assert_eq(state[k] == REF_GRANTED, ref_grantable(write, state, k),
                       "seed %u step %ld: request %d granted=%d, model says otherwise", seed,
                       steps, k, state[k] == REF_GRANTED);
    }
    steps++;
  }
  for (int i = 0; i < n; i++)
    cr_assert_eq(state[i], REF_DONE, "seed %u: request %d never ran", seed, i);
  cr_assert(weft_varq_idle(&q));
  free(reqs);
  free(write);
  free(state);
  return steps;
}

Test(var_queue, random_histories_match_the_model, .timeout = TU_TIMEOUT(60))
{
  long steps = 0;
  for (unsigned seed = 1; seed <= (unsigned)tu_scaled(200, 20); seed++)
    steps += random_history(seed, 300);
  cr_assert_gt(steps, 0);
}

/* ------------------------------------------- concurrent registration */

#define NVARS 16
#define MAXV 4

typedef struct stress_op {
  int nvars;
  int var[MAXV];                /* ascending, distinct */
  bool write[MAXV];
  bool simple;                  /* its requests may claim segments */
  weft_var_req req[MAXV];
  _Atomic int wait;             /* grants missing, +1 until registered */
  long seq;                     /* push order, for the checks */
  _Atomic int ran;
} stress_op;

typedef struct stress_var {
  weft_varq q;
  _Atomic int readers, writers; /* running now */
  _Atomic long value;           /* seq of the last write that ran */
  long last_write_pushed;       /* under q.lock: seq of the last write pushed */
} stress_var;

typedef struct stress {
  stress_var var[NVARS];
  stress_op *ops;
  long nops;
  _Atomic long next_op;         /* the next op to push */
  _Atomic long done;
  pthread_mutex_t ready_lock;   /* ready list (ops whose grants are all in) */
  stress_op **ready;
  long nready;
  _Atomic int bad;
  long *expect_read;            /* [op * MAXV + k]: value a read must see */
} stress;

static void make_ready(stress *s, stress_op *op)
{
  pthread_mutex_lock(&s->ready_lock);
  s->ready[s->nready++] = op;
  pthread_mutex_unlock(&s->ready_lock);
}

static void grant(stress *s, stress_op *op)
{
  if (atomic_fetch_sub(&op->wait, 1) == 1)
    make_ready(s, op);
}

static void push_op(stress *s, long i)
{
  stress_op *op = &s->ops[i];
  atomic_store(&op->wait, op->nvars + 1);
  for (int k = 0; k < op->nvars; k++) /* index order: no cycles */
    weft_spin_lock(&s->var[op->var[k]].q.lock);
  for (int k = 0; k < op->nvars; k++) {
    stress_var *v = &s->var[op->var[k]];
    s->expect_read[i * MAXV + k] = v->last_write_pushed;
    if (op->write[k])
      v->last_write_pushed = op->seq;
    op->req[k].op = op;
    op->req[k].write = op->write[k];
    op->req[k].simple = op->simple;
    if (weft_varq_append(&v->q, &op->req[k]))
      atomic_fetch_sub(&op->wait, 1);
  }
  for (int k = op->nvars - 1; k >= 0; k--)
    weft_spin_unlock(&s->var[op->var[k]].q.lock);
  grant(s, op); /* the +1 */
}

static void run_op(stress *s, stress_op *op)
{
  long i = op - s->ops;
  if (atomic_fetch_add(&op->ran, 1) != 0)
    atomic_store(&s->bad, 1); /* ran twice */
  for (int k = 0; k < op->nvars; k++) {
    stress_var *v = &s->var[op->var[k]];
    if (op->write[k]) {
      if (atomic_fetch_add(&v->writers, 1) != 0 || atomic_load(&v->readers) != 0)
        atomic_store(&s->bad, 2); /* a writer overlapped */
    } else {
      atomic_fetch_add(&v->readers, 1);
      if (atomic_load(&v->writers) != 0)
        atomic_store(&s->bad, 3); /* a reader overlapped a writer */
    }
    if (atomic_load(&v->value) != s->expect_read[i * MAXV + k])
      atomic_store(&s->bad, 4); /* saw a value other than the last write pushed before */
  }
  for (volatile int spin = 0; spin < 50; spin++) {
  }
  for (int k = 0; k < op->nvars; k++) {
    stress_var *v = &s->var[op->var[k]];
    if (op->write[k]) {
      atomic_store(&v->value, op->seq);
      atomic_fetch_sub(&v->writers, 1);
    } else {
      atomic_fetch_sub(&v->readers, 1);
    }
  }
  for (int k = 0; k < op->nvars; k++) {
    stress_var *v = &s->var[op->var[k]];
    weft_var_req *g, *rest = weft_varq_claimed(&op->req[k]);
    if (rest && weft_varq_passable(&op->req[k])) { /* as weft_opr_complete */
      g = weft_varq_pass(&op->req[k]);
    } else {
      weft_spin_lock(&v->q.lock);
      if (rest)
        weft_varq_unclaim(&v->q, &op->req[k]);
      g = weft_varq_complete(&v->q, op->write[k], true);
      weft_spin_unlock(&v->q.lock);
    }
    while (g) {
      /* g may run (and be reused) once granted; a write comes alone */
      weft_var_req *next = g->write ? NULL : g->next;
      grant(s, g->op);
      g = next;
    }
  }
  atomic_fetch_add(&s->done, 1);
}

static void *stress_thread(void *arg)
{
  stress *s = arg;
  while (atomic_load(&s->done) < s->nops && !atomic_load(&s->bad)) {
    stress_op *op = NULL;
    pthread_mutex_lock(&s->ready_lock);
    if (s->nready)
      op = s->ready[--s->nready];
    pthread_mutex_unlock(&s->ready_lock);
    if (op) {
      run_op(s, op);
      continue;
    }
    long i = atomic_fetch_add(&s->next_op, 1);
    if (i < s->nops)
      push_op(s, i);
    else
      sched_yield();
  }
  return NULL;
}

/* Returns the number of ops that ran. */
static long concurrent_stress(int threads, long nops, unsigned seed)
{
  stress *s = calloc(1, sizeof *s);
  cr_assert(s);
  s->nops = nops;
  s->ops = calloc((size_t)nops, sizeof *s->ops);
  s->ready = calloc((size_t)nops, sizeof *s->ready);
  s->expect_read = calloc((size_t)nops * MAXV, sizeof *s->expect_read);
  cr_assert(s->ops && s->ready && s->expect_read);
  pthread_mutex_init(&s->ready_lock, NULL);
  for (int v = 0; v < NVARS; v++) {
    weft_varq_init(&s->var[v].q);
    atomic_init(&s->var[v].value, -1);
    s->var[v].last_write_pushed = -1;
  }
  for (long i = 0; i < nops; i++) {
    stress_op *op = &s->ops[i];
    op->seq = i;
    op->simple = rand_r(&seed) % 4 != 0;
    int want = 1 + (int)(rand_r(&seed) % MAXV);
    while (op->nvars < want) { /* distinct vars, kept sorted */
      int v = (int)(rand_r(&seed) % NVARS), k = op->nvars;
      bool dup = false;
      for (int j = 0; j < op->nvars; j++)
        dup |= op->var[j] == v;
      if (dup)
        continue;
      while (k > 0 && op->var[k - 1] > v) {
        op->var[k] = op->var[k - 1];
        op->write[k] = op->write[k - 1];
        k--;
      }
      op->var[k] = v;
      op->write[k] = rand_r(&seed) % 2;
      op->nvars++;
    }
  }
  /* Pushes race with runs: the push counter hands out ops in order, but two
   * threads may register theirs in either order; the read expectations are
   * taken under the locks, so they follow the order of registration. */
  pthread_t t[8];
  for (int i = 0; i < threads; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, stress_thread, s), 0);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  cr_assert_eq(atomic_load(&s->bad), 0, "invariant %d broken (1 ran twice, 2 writer overlap, "
               "3 reader overlapped a writer, 4 stale or early read)", atomic_load(&s->bad));
  long ran = 0;
  for (long i = 0; i < nops; i++)
    ran += atomic_load(&s->ops[i].ran);
  cr_assert_eq(ran, nops, "%ld of %ld ops ran", ran, nops);
  for (int v = 0; v < NVARS; v++)
    cr_assert(weft_varq_idle(&s->var[v].q), "var %d still busy", v);
  pthread_mutex_destroy(&s->ready_lock);
  free(s->expect_read);
  free(s->ready);
  free(s->ops);
  free(s);
  return ran;
}

Test(var_queue, concurrent_registration_2_threads, .timeout = TU_TIMEOUT(60))
{
  long n = tu_scaled(100000, 2000);
  cr_assert_eq(concurrent_stress(2, n, 7), n);
}

Test(var_queue, concurrent_registration_4_threads, .timeout = TU_TIMEOUT(60))
{
  long n = tu_scaled(100000, 2000);
  cr_assert_eq(concurrent_stress(4, n, 11), n);
}
