/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the dependency engine (docs/reliability.md,
 * "Resource failures, fork, soak and fuzzing").
 *
 * The input bytes decode into a program of engine API calls (a config byte,
 * then one action per opcode byte with its operands): var_new / var_delete
 * over a few var slots, pushes with random read and write sets (repeats, a
 * var both read and written, deleted handles, NULL, forged handles), ops that
 * fail with a given status, NOSKIP, prioritized ops, async ops signalled
 * inline, reusable operators (op_new / op_push / op_delete), var_wait,
 * wait_all, calls with invalid arguments, and destroy. The program runs on
 * the naive engine (the model) and then on the threaded engine with the
 * decoded thread count and max_inflight; the two must agree on:
 *  - every call's return code;
 *  - each op body's run count (0 or 1 for a one-shot op; a reusable op's
 *    count), and the final value of every var instance: an op writes
 *    hash(its id, the values it read) into its writes, so the values are
 *    deterministic under the engine's ordering rules;
 *  - the final var_wait status of every live var;
 *  - weft_wait_all / weft_engine_destroy: zero exactly when no op failed
 *    since the previous wait_all, else the status of one of those failures
 *    (equal to the model's when all of them share one status: with several,
 *    "first in completion order" may legitimately differ).
 * Inside the threaded engine, per-var guards check that no writer overlaps
 * another reader or writer of the same var.
 *
 * Built two ways: with clang -fsanitize=fuzzer (tests/reliability/fuzz.sh),
 * and with -DWEFT_FUZZ_REPLAY as a plain program that replays the files named
 * on its command line (the committed corpus and regression inputs: meson
 * test reliability/fuzz_replay, in every build).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

#include "../common/plain.h"

#define FZ_VARS 8       /* var slots the program names */
#define FZ_TMPLS 4      /* reusable-op slots */
#define FZ_MAX_ACTS 512 /* actions decoded from one input */
#define FZ_MAX_INST (FZ_MAX_ACTS + FZ_VARS)
#define FZ_MAXR 4
#define FZ_MAXW 3

static const int fz_statuses[] = {7, -3, 42, 1};

enum {
  A_VAR_NEW,
  A_VAR_DELETE,
  A_PUSH,
  A_OP_NEW,
  A_OP_PUSH,
  A_OP_DELETE,
  A_VAR_WAIT,
  A_WAIT_ALL,
  A_BAD,
  A_DESTROY,
};

/* A var operand: an instance (which may be deleted by then), NULL, or a
 * forged handle that is dead in every engine (an even generation). */
enum { REF_INST, REF_NULL, REF_FORGED };
typedef struct fz_ref {
  int kind;
  int inst;
  uint64_t forged;
} fz_ref;

enum { K_NORMAL, K_PRIO, K_PROP_ASYNC, K_ASYNC, K_ASYNC_PROP };

typedef struct fz_act {
  int type;
  int slot;            /* var or template slot */
  int inst;            /* A_VAR_NEW: the instance it creates */
  int nr, nw;
  fz_ref r[FZ_MAXR], w[FZ_MAXW];
  fz_ref target;       /* A_VAR_DELETE, A_VAR_WAIT */
  int status;          /* the op body's return */
  int kind, prio;
  bool noskip, check_inside;
  int bad;             /* A_BAD: which invalid call */
} fz_act;

typedef struct fz_prog {
  int threads, max_inflight;
  int n;
  int ninst;
  fz_act a[FZ_MAX_ACTS];
} fz_prog;

/* ------------------------------------------------------------- decoding */

typedef struct fz_in {
  const uint8_t *p;
  size_t n, i;
} fz_in;

static int fz_byte(fz_in *in)
{
  return in->i < in->n ? in->p[in->i++] : 0;
}

static fz_ref fz_dec_ref(fz_in *in, const int *slot_inst)
{
  int b = fz_byte(in);
  fz_ref r = {REF_INST, slot_inst[b % FZ_VARS], 0};
  if (b >= 248) {
    r.kind = REF_NULL;
  } else if (b >= 240) {
    r.kind = REF_FORGED;
    /* slot index b % 8 + 1, generation 0 or 2: never live. */
    r.forged = ((uint64_t)((b & 1) * 2) << 32) | (uint64_t)(b % 8 + 1);
  }
  return r;
}

static void fz_dec_op(fz_in *in, fz_act *a, const int *slot_inst)
{
  int b = fz_byte(in);
  a->nr = b % (FZ_MAXR + 1);
  a->nw = (b / (FZ_MAXR + 1)) % (FZ_MAXW + 1);
  for (int k = 0; k < a->nr; k++)
    a->r[k] = fz_dec_ref(in, slot_inst);
  for (int k = 0; k < a->nw; k++)
    a->w[k] = fz_dec_ref(in, slot_inst);
  int c = fz_byte(in);
  a->status = (c & 7) >= 5 ? fz_statuses[(c >> 3) & 3] : 0;
  a->kind = (c >> 5) % 5;
  a->noskip = (c & 0x80) && (c & 0x10);
  a->check_inside = (c & 0x3) == 0x3;
  a->prio = (c >> 2) & 3;
}

static void fz_decode(const uint8_t *data, size_t size, fz_prog *p)
{
  fz_in in = {data, size, 0};
  int c = fz_byte(&in);
  static const int caps[] = {0, 0, 1, 2, 3, 8};
  p->threads = 1 + c % 3;
  p->max_inflight = caps[(c / 3) % 6];
  int slot_inst[FZ_VARS];
  /* The first FZ_VARS instances exist from the start. */
  for (int s = 0; s < FZ_VARS; s++)
    slot_inst[s] = s;
  p->ninst = FZ_VARS;
  p->n = 0;
  while (in.i < in.n && p->n < FZ_MAX_ACTS) {
    fz_act *a = &p->a[p->n];
    memset(a, 0, sizeof *a);
    int op = fz_byte(&in) % 16;
    switch (op) {
    case 0:
      a->type = A_VAR_NEW;
      a->slot = fz_byte(&in) % FZ_VARS;
      a->inst = p->ninst++;
      slot_inst[a->slot] = a->inst;
      break;
    case 1:
      a->type = A_VAR_DELETE;
      a->target = fz_dec_ref(&in, slot_inst);
      break;
    case 7:
      a->type = A_OP_NEW;
      a->slot = fz_byte(&in) % FZ_TMPLS;
      fz_dec_op(&in, a, slot_inst);
      if (a->kind == K_PROP_ASYNC || a->kind == K_ASYNC_PROP)
        a->kind = K_NORMAL;
      break;
    case 8:
      a->type = A_OP_PUSH;
      a->slot = fz_byte(&in) % (FZ_TMPLS + 1); /* FZ_TMPLS: NULL */
      break;
    case 9:
      a->type = A_OP_DELETE;
      a->slot = fz_byte(&in) % (FZ_TMPLS + 1);
      break;
    case 10:
      a->type = A_VAR_WAIT;
      a->target = fz_dec_ref(&in, slot_inst);
      break;
    case 11:
      a->type = A_WAIT_ALL;
      break;
    case 12:
      a->type = A_BAD;
      a->bad = fz_byte(&in);
      break;
    case 13:
      /* destroy ends the program (rarely: one in four) */
      if (fz_byte(&in) % 4 == 0) {
        a->type = A_DESTROY;
        p->n++;
        return;
      }
      a->type = A_WAIT_ALL;
      break;
    default:
      a->type = A_PUSH;
      fz_dec_op(&in, a, slot_inst);
      break;
    }
    p->n++;
  }
}

/* ------------------------------------------------------------- running */

typedef struct fz_run fz_run;

typedef struct fz_guard {
  atomic_int readers, writers;
} fz_guard;

/* One op body: an action's push, or a template's pushes. */
typedef struct fz_body {
  fz_run *run;
  const fz_act *a;
  uint64_t id;
  int nrd, nwd, rd[FZ_MAXR + FZ_MAXW], wd[FZ_MAXW]; /* distinct instances */
  atomic_int ran;
} fz_body;

struct fz_run {
  weft_engine *eng;
  bool naive;
  uint64_t val[FZ_MAX_INST];
  fz_guard guard[FZ_MAX_INST];
  weft_var *handle[FZ_MAX_INST];
  weft_op *tmpl[FZ_TMPLS];
  int tmpl_act[FZ_TMPLS]; /* the action that made it, -1 */
  fz_body body[FZ_MAX_ACTS];
  int rc[FZ_MAX_ACTS];
  unsigned fail_mask_at[FZ_MAX_ACTS]; /* wait_all / destroy: failures since the last */
  atomic_uint fail_mask;              /* statuses of bodies that failed since */
  atomic_uint all_mask;               /* statuses of every body that failed */
  int final_status[FZ_MAX_INST];      /* var_wait at the end; 1 = not live */
  atomic_int errors;
  char errmsg[256];
  atomic_int flag; /* shared by the bodies: first error */
};

static void fz_error(fz_run *r, const char *msg, long x)
{
  if (atomic_fetch_add(&r->errors, 1) == 0)
    snprintf(r->errmsg, sizeof r->errmsg, "%s (%ld)", msg, x);
}

static int fz_status_bit(int status)
{
  for (int i = 0; i < 4; i++)
    if (fz_statuses[i] == status)
      return i;
  return 4;
}

/* The body proper; returns its status. */
static int fz_exec(fz_body *b)
{
  fz_run *r = b->run;
  const fz_act *a = b->a;
  atomic_fetch_add(&b->ran, 1);
  for (int k = 0; k < b->nwd; k++) {
    if (atomic_fetch_add(&r->guard[b->wd[k]].writers, 1) != 0)
      fz_error(r, "two writers of one var at once", b->wd[k]);
    if (atomic_load(&r->guard[b->wd[k]].readers) != 0)
      fz_error(r, "a writer ran with a reader of its var", b->wd[k]);
  }
  for (int k = 0; k < b->nrd; k++) {
    atomic_fetch_add(&r->guard[b->rd[k]].readers, 1);
    if (atomic_load(&r->guard[b->rd[k]].writers) != 0)
      fz_error(r, "a reader ran with a writer of its var", b->rd[k]);
  }
  uint64_t h = te_mix(b->id + 1);
  for (int k = 0; k < a->nr; k++)
    if (a->r[k].kind == REF_INST)
      h = te_mix(h ^ r->val[a->r[k].inst]);
  for (int k = 0; k < a->nw; k++)
    if (a->w[k].kind == REF_INST)
      r->val[a->w[k].inst] = te_mix(r->val[a->w[k].inst] + h + (uint64_t)k);
  if (a->check_inside) {
    int inst = b->nwd ? b->wd[0] : b->nrd ? b->rd[0] : -1;
    int wrc = inst >= 0 ? weft_var_wait(r->eng, r->handle[inst]) : WEFT_EDEADLK;
    /* The threaded engine may run the op after a later weft_var_delete made
     * the handle dead: then WEFT_EINVAL is right. */
    if (wrc != WEFT_EDEADLK && !(wrc == WEFT_EINVAL && !r->naive)) {
      fprintf(stderr, "fuzz_engine: %s engine, op %llu (kind %d, %d reads, %d writes): "
              "weft_var_wait(own var instance %d) = %d\n", r->naive ? "naive" : "threaded",
              (unsigned long long)b->id, a->kind, b->nrd, b->nwd, inst, wrc);
      fz_error(r, "weft_var_wait on its own var inside an op is not WEFT_EDEADLK", wrc);
    }
    if (weft_wait_all(r->eng) != WEFT_EDEADLK)
      fz_error(r, "weft_wait_all inside an op is not WEFT_EDEADLK", 0);
  }
  for (int k = 0; k < b->nrd; k++)
    atomic_fetch_sub(&r->guard[b->rd[k]].readers, 1);
  for (int k = 0; k < b->nwd; k++)
    atomic_fetch_sub(&r->guard[b->wd[k]].writers, 1);
  if (a->status) {
    atomic_fetch_or(&r->fail_mask, 1u << fz_status_bit(a->status));
    atomic_fetch_or(&r->all_mask, 1u << fz_status_bit(a->status));
  }
  return a->status;
}

static int fz_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  return fz_exec(arg);
}

static void fz_async(const weft_run_ctx *rc, void *arg, weft_done *done)
{
  (void)rc;
  weft_done_signal(done, fz_exec(arg));
}

static void fz_body_init(fz_run *r, fz_body *b, const fz_act *a, uint64_t id)
{
  b->run = r;
  b->a = a;
  b->id = id;
  atomic_init(&b->ran, 0);
  b->nwd = b->nrd = 0;
  for (int k = 0; k < a->nw; k++) {
    if (a->w[k].kind != REF_INST)
      continue;
    bool dup = false;
    for (int j = 0; j < b->nwd; j++)
      dup |= b->wd[j] == a->w[k].inst;
    if (!dup)
      b->wd[b->nwd++] = a->w[k].inst;
  }
  for (int k = 0; k < a->nr; k++) {
    if (a->r[k].kind != REF_INST)
      continue;
    bool dup = false;
    for (int j = 0; j < b->nwd; j++)
      dup |= b->wd[j] == a->r[k].inst;
    for (int j = 0; j < b->nrd; j++)
      dup |= b->rd[j] == a->r[k].inst;
    if (!dup)
      b->rd[b->nrd++] = a->r[k].inst;
  }
}

static weft_var *fz_handle(fz_run *r, fz_ref ref)
{
  if (ref.kind == REF_NULL)
    return NULL;
  if (ref.kind == REF_FORGED)
    return (weft_var *)(uintptr_t)ref.forged;
  return r->handle[ref.inst];
}

static weft_op_desc fz_desc(fz_run *r, const fz_act *a, fz_body *b, weft_var **rv, weft_var **wv)
{
  for (int k = 0; k < a->nr; k++)
    rv[k] = fz_handle(r, a->r[k]);
  for (int k = 0; k < a->nw; k++)
    wv[k] = fz_handle(r, a->w[k]);
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fz_fn;
  d.arg = b;
  d.reads = a->nr ? rv : NULL;
  d.num_reads = (size_t)a->nr;
  d.writes = a->nw ? wv : NULL;
  d.num_writes = (size_t)a->nw;
  d.ctx.type = WEFT_DEV_CPU;
  d.flags = a->noskip ? WEFT_OP_NOSKIP : 0;
  d.name = "fuzz";
  switch (a->kind) {
  case K_PRIO:
    d.prop = WEFT_PROP_PRIORITIZED;
    d.priority = a->prio;
    break;
  case K_PROP_ASYNC:
    d.prop = WEFT_PROP_ASYNC;
    break;
  case K_ASYNC:
    d.fn = NULL;
    d.async_fn = fz_async;
    break;
  case K_ASYNC_PROP:
    d.fn = NULL;
    d.async_fn = fz_async;
    d.prop = WEFT_PROP_ASYNC;
    break;
  default:
    break;
  }
  return d;
}

/* An invalid call: the expected code, and the code the engine returned. */
static int fz_bad(fz_run *r, int which, int *expect)
{
  weft_engine *e = r->eng;
  weft_op_desc d;
  memset(&d, 0, sizeof d);
  d.fn = fz_fn;
  d.arg = NULL; /* never runs */
  weft_var *forged = (weft_var *)(uintptr_t)((2ull << 32) | 3);
  weft_var *two[2] = {forged, NULL};
  weft_op *op = NULL;
  *expect = WEFT_EINVAL;
  switch (which % 16) {
  case 0:
    return weft_push(e, NULL);
  case 1:
    d.async_fn = fz_async; /* both fn and async_fn */
    return weft_push(e, &d);
  case 2:
    d.fn = NULL; /* neither */
    return weft_push(e, &d);
  case 3:
    d.num_reads = 2; /* reads NULL */
    return weft_push(e, &d);
  case 4:
    d.prop = (weft_prop)99;
    return weft_push(e, &d);
  case 5:
    d.ctx.type = (weft_dev_type)7;
    return weft_push(e, &d);
  case 6:
    d.ctx.type = WEFT_DEV_GPU; /* no devices (WEFT_GPU_BACKEND=none) */
    *expect = WEFT_ENODEV;
    return weft_push(e, &d);
  case 7:
    d.prop = WEFT_PROP_COPY_TO_GPU; /* a copy on the CPU */
    return weft_push(e, &d);
  case 8:
    return weft_var_new(e, NULL);
  case 9:
    return weft_var_wait(NULL, forged);
  case 10:
    return weft_op_new(e, NULL, &op);
  case 11:
    return weft_op_push(e, (weft_op *)(uintptr_t)((4ull << 32) | 1));
  case 12:
    return weft_op_delete(e, NULL);
  case 13:
    return weft_wait_all(NULL);
  case 14:
    d.writes = two;
    d.num_writes = 2;
    return weft_push(e, &d);
  default:
    d.num_writes = 1; /* writes NULL */
    return weft_op_new(e, &d, &op);
  }
}

/* A var's failure status, model m and threaded t. An op skipped because it
 * uses several failed vars passes on the status of the first of them in the
 * engine's internal var order (slot index), and the two engines number
 * slots differently (the naive engine reuses a deleted var's slot at once):
 * with failures of more than one status in the program, any of them may be
 * passed on. Otherwise the statuses must be equal. */
static bool fz_same_status(const fz_run *m, const fz_run *t, int sm, int st)
{
  (void)t;
  if (sm == st)
    return true;
  unsigned all = atomic_load(&((fz_run *)m)->all_mask);
  return sm != 0 && st != 0 && (all & (all - 1)) != 0 && (all & (1u << fz_status_bit(st)));
}

static unsigned fz_take_mask(fz_run *r)
{
  return atomic_exchange(&r->fail_mask, 0);
}

/* Runs p on a new engine of kind; results into r. Returns the number of
 * actions run (the index after destroy, or p->n). */
static void fz_run_prog(const fz_prog *p, fz_run *r, bool naive, weft_pool *pool)
{
  memset(r, 0, sizeof *r);
  r->naive = naive;
  for (int i = 0; i < FZ_MAX_INST; i++) {
    r->val[i] = te_mix((uint64_t)i * 7 + 3);
    r->final_status[i] = 1;
  }
  for (int t = 0; t < FZ_TMPLS; t++)
    r->tmpl_act[t] = -1;
  weft_engine_config cfg;
  weft_engine_config_default(&cfg);
  cfg.pool = pool;
  cfg.kind = naive ? "naive" : "threaded";
  cfg.max_inflight = p->max_inflight;
  int rc = weft_engine_create(&r->eng, &cfg);
  if (rc) {
    fprintf(stderr, "fuzz_engine: weft_engine_create = %d\n", rc);
    abort();
  }
  bool live[FZ_MAX_INST] = {false};
  for (int i = 0; i < FZ_VARS; i++) {
    if (weft_var_new(r->eng, &r->handle[i]) != 0)
      abort();
    live[i] = true;
  }
  bool destroyed = false;
  for (int i = 0; i < p->n && !destroyed; i++) {
    const fz_act *a = &p->a[i];
    weft_var *rv[FZ_MAXR], *wv[FZ_MAXW];
    switch (a->type) {
    case A_VAR_NEW:
      r->rc[i] = weft_var_new(r->eng, &r->handle[a->inst]);
      live[a->inst] = r->rc[i] == 0;
      break;
    case A_VAR_DELETE:
      r->rc[i] = weft_var_delete(r->eng, fz_handle(r, a->target));
      if (r->rc[i] == 0 && a->target.kind == REF_INST)
        live[a->target.inst] = false;
      break;
    case A_PUSH: {
      fz_body_init(r, &r->body[i], a, (uint64_t)i);
      weft_op_desc d = fz_desc(r, a, &r->body[i], rv, wv);
      r->rc[i] = weft_push(r->eng, &d);
      break;
    }
    case A_OP_NEW: {
      fz_body_init(r, &r->body[i], a, (uint64_t)i + 100000);
      weft_op_desc d = fz_desc(r, a, &r->body[i], rv, wv);
      weft_op *op = NULL;
      r->rc[i] = weft_op_new(r->eng, &d, &op);
      if (r->rc[i] == 0) {
        r->tmpl[a->slot] = op; /* a template left in the slot stays until destroy */
        r->tmpl_act[a->slot] = i;
      }
      break;
    }
    case A_OP_PUSH:
      r->rc[i] = weft_op_push(r->eng, a->slot < FZ_TMPLS ? r->tmpl[a->slot] : NULL);
      break;
    case A_OP_DELETE:
      r->rc[i] = weft_op_delete(r->eng, a->slot < FZ_TMPLS ? r->tmpl[a->slot] : NULL);
      break;
    case A_VAR_WAIT:
      r->rc[i] = weft_var_wait(r->eng, fz_handle(r, a->target));
      break;
    case A_WAIT_ALL:
      r->rc[i] = weft_wait_all(r->eng);
      r->fail_mask_at[i] = fz_take_mask(r);
      break;
    case A_BAD: {
      int expect = 0;
      r->rc[i] = fz_bad(r, a->bad, &expect);
      if (r->rc[i] != expect)
        fz_error(r, "an invalid call returned an unexpected code", r->rc[i]);
      break;
    }
    case A_DESTROY:
      r->rc[i] = weft_engine_destroy(r->eng);
      r->fail_mask_at[i] = fz_take_mask(r);
      r->eng = NULL;
      destroyed = true;
      break;
    }
  }
  if (!destroyed) {
    /* Every live var's failure status, then the rest. */
    for (int i = 0; i < p->ninst; i++)
      if (live[i])
        r->final_status[i] = weft_var_wait(r->eng, r->handle[i]);
    (void)weft_wait_all(r->eng); /* unchecked: the var waits reported the failures */
    (void)fz_take_mask(r);
    rc = weft_engine_destroy(r->eng);
    if (rc != 0)
      fz_error(r, "destroy after wait_all returned a failure", rc);
    r->eng = NULL;
  }
}

static void fz_dump_ref(fz_ref f)
{
  if (f.kind == REF_INST)
    fprintf(stderr, " v%d", f.inst);
  else
    fprintf(stderr, f.kind == REF_NULL ? " NULL" : " forged");
}

/* WEFT_FUZZ_TRACE=1: the decoded program and both engines' return codes. */
static void fz_dump(const fz_prog *p, const fz_run *m, const fz_run *t)
{
  static const char *names[] = {"var_new", "var_delete", "push", "op_new", "op_push",
                                "op_delete", "var_wait", "wait_all", "bad", "destroy"};
  fprintf(stderr, "program: threads %d, max_inflight %d\n", p->threads, p->max_inflight);
  for (int i = 0; i < p->n; i++) {
    const fz_act *a = &p->a[i];
    fprintf(stderr, "%3d %-10s rc %d/%d", i, names[a->type], m->rc[i], t->rc[i]);
    if (a->type == A_VAR_NEW)
      fprintf(stderr, " -> v%d", a->inst);
    if (a->type == A_VAR_DELETE || a->type == A_VAR_WAIT)
      fz_dump_ref(a->target);
    if (a->type >= A_OP_NEW && a->type <= A_OP_DELETE)
      fprintf(stderr, " slot %d", a->slot);
    if (a->type == A_PUSH || a->type == A_OP_NEW) {
      fprintf(stderr, " R");
      for (int k = 0; k < a->nr; k++)
        fz_dump_ref(a->r[k]);
      fprintf(stderr, " W");
      for (int k = 0; k < a->nw; k++)
        fz_dump_ref(a->w[k]);
      fprintf(stderr, " status %d kind %d%s%s ran %d/%d", a->status, a->kind,
              a->noskip ? " NOSKIP" : "", a->check_inside ? " inside" : "",
              atomic_load(&m->body[i].ran), atomic_load(&t->body[i].ran));
    }
    fprintf(stderr, "\n");
  }
}

static fz_run fz_runs[2];
static fz_prog fz_p;

static void fz_fail(const fz_prog *p, const char *what, int i, long x, long y)
{
  if (getenv("WEFT_FUZZ_TRACE"))
    fz_dump(p, &fz_runs[0], &fz_runs[1]);
  fprintf(stderr, "fuzz_engine: MISMATCH (threads %d, max_inflight %d): %s at %d: %ld vs %ld\n",
          p->threads, p->max_inflight, what, i, x, y);
  if (i >= 0 && i < p->n && strstr(what, "instance") == NULL)
    fprintf(stderr, "fuzz_engine: action %d: type %d slot %d nr %d nw %d status %d kind %d\n", i,
            p->a[i].type, p->a[i].slot, p->a[i].nr, p->a[i].nw, p->a[i].status, p->a[i].kind);
  abort();
}

static void fz_check_failure_rc(const fz_prog *p, int i, int rc, unsigned mask, const char *who)
{
  bool ok = mask == 0 ? rc == 0 : (rc != 0 && (mask & (1u << fz_status_bit(rc))));
  if (!ok) {
    fprintf(stderr, "fuzz_engine: %s engine: wait_all/destroy %d returned %d, failures 0x%x\n",
            who, i, rc, mask);
    fz_fail(p, "a failure report", i, rc, (long)mask);
  }
}


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static bool env_done;
  if (!env_done) {
    setenv("WEFT_GPU_BACKEND", "none", 1);
    unsetenv("WEFT_PROFILE");
    env_done = true;
  }
  if (size == 0)
    return 0;
  fz_prog *p = &fz_p;
  fz_decode(data, size, p);
  weft_pool_config pc;
  weft_pool_config_default(&pc);
  pc.num_threads = p->threads;
  pc.spin_count = 4;
  pc.affinity = "none";
  pc.name = "fuzz";
  weft_pool *pool = NULL;
  if (weft_pool_create(&pool, &pc) != 0)
    abort();
  fz_run *m = &fz_runs[0], *t = &fz_runs[1];
  fz_run_prog(p, m, true, pool);
  fz_run_prog(p, t, false, pool);
  if (weft_pool_destroy(pool) != 0)
    abort();
  for (int k = 0; k < 2; k++)
    if (atomic_load(&fz_runs[k].errors))
      fz_fail(p, fz_runs[k].errmsg, -1, k, 0);
  for (int i = 0; i < p->n; i++) {
    const fz_act *a = &p->a[i];
    if (a->type == A_WAIT_ALL || a->type == A_DESTROY) {
      if (m->fail_mask_at[i] != t->fail_mask_at[i])
        fz_fail(p, "failed statuses since the last wait_all", i, m->fail_mask_at[i],
                t->fail_mask_at[i]);
      fz_check_failure_rc(p, i, m->rc[i], m->fail_mask_at[i], "naive");
      fz_check_failure_rc(p, i, t->rc[i], t->fail_mask_at[i], "threaded");
      unsigned mask = m->fail_mask_at[i];
      if ((mask & (mask - 1)) == 0 && m->rc[i] != t->rc[i])
        fz_fail(p, "wait_all / destroy", i, m->rc[i], t->rc[i]);
    } else if (a->type == A_VAR_WAIT) {
      if (!fz_same_status(m, t, m->rc[i], t->rc[i]))
        fz_fail(p, "var_wait", i, m->rc[i], t->rc[i]);
    } else if (m->rc[i] != t->rc[i]) {
      fz_fail(p, "return code", i, m->rc[i], t->rc[i]);
    }
    if (a->type == A_PUSH || a->type == A_OP_NEW) {
      int rm = atomic_load(&m->body[i].ran), rt = atomic_load(&t->body[i].ran);
      if (rm != rt || (a->type == A_PUSH && rm > 1))
        fz_fail(p, "op body runs", i, rm, rt);
    }
  }
  for (int i = 0; i < p->ninst; i++) {
    if (m->val[i] != t->val[i])
      fz_fail(p, "final value of var instance", i, (long)m->val[i], (long)t->val[i]);
    if (!fz_same_status(m, t, m->final_status[i], t->final_status[i]))
      fz_fail(p, "final var_wait status of instance", i, m->final_status[i],
              t->final_status[i]);
  }
  return 0;
}

#ifdef WEFT_FUZZ_REPLAY
#include <dirent.h>

static int fz_replay_file(const char *path)
{
  static uint8_t buf[1 << 16];
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    exit(1);
  }
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, len);
  return 1;
}

/* Replays the files named on the command line, and every file in the
 * directories named there; prints how many. */
int main(int argc, char **argv)
{
  int n = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      n += fz_replay_file(argv[i]);
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      n += fz_replay_file(path);
    }
    closedir(d);
  }
  printf("fuzz_replay: %d input(s) replayed, no mismatch\n", n);
  return n > 0 ? 0 : 1;
}
#endif
