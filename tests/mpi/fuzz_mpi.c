/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mpi: a fuzzer for the weft_mpi API, run under mpirun (CI:
 * 2 ranks, tests/mpi/meson.build).
 *
 *   fuzz_mpi [--seconds S] [--seed N] [--iters K] [--max-ops M] [--print] [--verbose]
 *
 * Each iteration draws a program from its seed (iteration i of a run with
 * seed N has seed N + i, so "--seed N+i --iters 1" replays it alone): vars
 * registered with random datatypes (from a catalog of basic, contiguous,
 * vector, resized-column, indexed, subarray and struct-with-holes types, some
 * with data before the origin or past count * extent), counts and owners,
 * some with a cache buffer of the application's on the other ranks; operators
 * reading and writing 0-3 of the live vars (repeats allowed) on a random rank
 * or WEFT_MPI_OWNER, a few failing or WEFT_OP_NOSKIP; deletions of vars; and
 * collective waits. Every rank draws the same program (the seed is rank 0's,
 * broadcast) and submits all of it through weft_mpi; each operator, on the
 * rank that runs it, folds the data bytes of the vars it reads into a hash and
 * rewrites every data byte of the vars it writes from that hash, the op's
 * index and the byte's old value (apply()).
 *
 * Every rank also runs the same program through a reference model: plain
 * byte arrays, one per var, each operator applied at once in push order
 * (sequential semantics), with the failure and skipping rules of weft_mpi.h
 * and its account of which rank holds a valid copy (hence which transfers
 * each push makes). At each weft_mpi_wait_all, on every rank:
 *   - the wait's result is 0, or one of the injected failures of operators
 *     that ran since the last wait (the model says which);
 *   - every var this rank owns (deleted ones too: the buffer is still the
 *     application's) holds the reference's bytes in its datatype's data bytes;
 *   - the bytes around them (gaps inside the span, and guard zones on both
 *     sides) of every buffer this rank gave weft are untouched;
 *   - every operator pushed since the last wait ran on its rank only, there
 *     exactly when the model says it runs (not skipped), once, saw the
 *     buffers weft_mpi.h promises, and read the bytes the reference read (its
 *     hash);
 *   - weft_mpi_get_stats matches the model's count of operators, transfers,
 *     bytes and cache hits.
 * A WEFT_OP_NOSKIP operator that runs on a failed copy sees whatever bytes
 * that copy kept (weft_mpi.h): the vars it writes are then unknown to the
 * reference and no longer compared (nor what later operators read of them).
 * A datatype's data bytes come from MPI itself, before the attachment (no MPI
 * call may overlap the progress thread's under MPI_THREAD_SERIALIZED):
 * MPI_Unpack of MPI_Pack_size bytes of 0xff into a zeroed span.
 *
 * Each iteration creates its pool, engine and attachment and ends with
 * detach; between iterations (nothing attached) rank 0 decides whether to go
 * on (--iters, --seconds: the bound is on the run, never an assertion) and
 * the ranks agree on the outcome. A failure names the seed, the rank, the op
 * index and the bytes; the run stops at the first failing iteration. TAP on
 * rank 0's stdout, diagnostics on each rank's stderr. Without --seed the
 * seed is WEFT_FUZZ_SEED's, else drawn from the clock (printed either way).
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_tap.h"
#include <weft/weft_mpi.h>

enum {
  MAX_USE = 3,          /* reads, and writes, of one operator */
  MAX_VARS = 96,        /* registrations in one program (past 48: the registry
                           rehashes, with operators looking vars up) */
  MAX_LIVE = 10,        /* vars registered and not deleted at once */
  SPAN_CAP = 1 << 16,   /* bytes of one var at most (large ones: rendezvous) */
  GUARD = 32,           /* bytes watched on each side of a buffer */
  MAX_REPORTS = 12,     /* failure messages per rank and iteration */
  MAX_TYPES = 24,
};

#define GUARD_BYTE 0xA5 /* the guard zones around every buffer given to weft */
#define GAP_BYTE 0xEE   /* bytes of an owner's span outside its data */
#define CACHE_GAP 0x5C  /* the same in a cache buffer of the application's */
#define CACHE_FILL 0xCD /* a cache's data bytes before the first transfer */

/* ------------------------------------------------------------ random bits */

static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s)
{
  return mix64(*s += 0x9e3779b97f4a7c15ull);
}

/* Uniform enough in [0, n) for n > 0. */
static int below(uint64_t *s, int n)
{
  return (int)(rnd(s) % (uint64_t)n);
}

/* ------------------------------------------------------ the datatype catalog */

typedef struct fz_type {
  char name[64];
  MPI_Datatype type;
  int max_count; /* elements before two of them would overlap */
  bool ours;     /* a derived type built here: freed at the end */
} fz_type;

typedef struct fz_catalog {
  fz_type t[MAX_TYPES];
  int n;
} fz_catalog;

static void add_type(fz_catalog *c, const char *name, MPI_Datatype type, int max_count, bool ours)
{
  fz_type *f = &c->t[c->n++];
  snprintf(f->name, sizeof f->name, "%s", name);
  if (ours)
    MPI_Type_commit(&type);
  f->type = type;
  f->max_count = max_count;
  f->ours = ours;
}

/* inner resized to [lb, lb + extent); inner is freed (the new type keeps
 * what it needs). */
static MPI_Datatype resized(MPI_Datatype inner, MPI_Aint lb, MPI_Aint extent)
{
  MPI_Datatype out;
  MPI_Type_create_resized(inner, lb, extent, &out);
  MPI_Type_free(&inner);
  return out;
}

/* Every type the programs draw from, committed before any attachment. */
static void build_catalog(fz_catalog *c)
{
  c->n = 0;
  add_type(c, "MPI_INT", MPI_INT, INT_MAX, false);
  add_type(c, "MPI_DOUBLE", MPI_DOUBLE, INT_MAX, false);
  add_type(c, "MPI_BYTE", MPI_BYTE, INT_MAX, false);

  MPI_Datatype t;
  MPI_Type_contiguous(3, MPI_SHORT, &t); /* 6 bytes: odd alignment of elements */
  add_type(c, "contiguous(3, MPI_SHORT)", t, INT_MAX, true);

  MPI_Type_vector(3, 2, 4, MPI_INT, &t); /* gaps of 2 ints between blocks */
  add_type(c, "vector(3, 2, 4, MPI_INT)", t, INT_MAX, true);

  /* Columns of row-major matrices, resized to one element: count k is k
   * columns, the true extent reaches rows * cols elements. */
  MPI_Type_vector(6, 1, 5, MPI_DOUBLE, &t);
  add_type(c, "column of 6x5 doubles", resized(t, 0, sizeof(double)), 5, true);
  MPI_Type_vector(4, 1, 7, MPI_INT, &t);
  add_type(c, "column of 4x7 ints", resized(t, 0, sizeof(int)), 7, true);
  MPI_Type_vector(3, 2, 8, MPI_INT, &t); /* two columns at a time */
  add_type(c, "2 columns of 3x8 ints", resized(t, 0, 2 * sizeof(int)), 4, true);

  /* Indexed: blocks at ints 1, 5 and 9 (true lb 4: the origin's first
   * bytes are not data). */
  int lens[3] = {2, 1, 3}, disps[3] = {1, 5, 9};
  MPI_Type_indexed(3, lens, disps, MPI_INT, &t);
  add_type(c, "indexed {2,1,3} at {1,5,9} ints", t, INT_MAX, true);

  /* Data before the origin: doubles at -16 and 0 bytes. */
  int one[2] = {1, 1};
  MPI_Aint neg[2] = {-16, 0};
  MPI_Type_create_hindexed(2, one, neg, MPI_DOUBLE, &t);
  add_type(c, "hindexed doubles at -16, 0 bytes", t, INT_MAX, true);

  /* A negative lower bound without data before the origin. */
  MPI_Type_contiguous(2, MPI_INT, &t);
  add_type(c, "contiguous(2, MPI_INT) resized to [-4, 8)", resized(t, -4, 12), INT_MAX, true);

  /* Structs with holes: padding inside and at the end, and one whose first
   * field is skipped. */
  struct rec {
    char c;
    double d;
    short s;
    int i;
  };
  int lens4[4] = {1, 1, 1, 1};
  MPI_Aint d4[4] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, s),
                    offsetof(struct rec, i)};
  MPI_Datatype ty4[4] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT, MPI_INT};
  MPI_Type_create_struct(4, lens4, d4, ty4, &t);
  MPI_Datatype rec = resized(t, 0, sizeof(struct rec));
  MPI_Type_commit(&rec);
  MPI_Type_create_struct(3, lens4 + 1, d4 + 1, ty4 + 1, &t);
  add_type(c, "struct {char, double, short, int} without the char",
           resized(t, 0, sizeof(struct rec)), INT_MAX, true);
  /* Nested: every third record, two of them per element. */
  MPI_Type_vector(2, 1, 3, rec, &t);
  add_type(c, "vector(2, 1, 3, struct {char, double, short, int})", t, INT_MAX, true);
  add_type(c, "struct {char, double, short, int}", rec, INT_MAX, true); /* commits rec again */

  /* A 2x3 block inside a 4x6 int matrix. */
  int full[2] = {4, 6}, sub[2] = {2, 3}, start[2] = {1, 2};
  MPI_Type_create_subarray(2, full, sub, start, MPI_ORDER_C, MPI_INT, &t);
  add_type(c, "subarray 2x3 at (1,2) of 4x6 ints", t, INT_MAX, true);
}

static void free_catalog(fz_catalog *c)
{
  for (int i = 0; i < c->n; i++)
    if (c->t[i].ours)
      MPI_Type_free(&c->t[i].type);
  c->n = 0;
}

/* ------------------------------------------------------------- the program */

/* Where count elements of a type put their data, relative to the start of
 * the span [origin + lo, origin + lo + bytes) (weft_mpi.h). */
typedef struct fz_layout {
  ptrdiff_t lo;
  size_t bytes;
  size_t type_size;   /* data bytes: count * MPI_Type_size */
  unsigned char *mask; /* bytes: 1 where the type has data */
  /* The same as runs of consecutive data bytes, ascending. */
  struct fz_data_run {
    uint32_t off, len;
  } *runs;
  size_t nruns;
} fz_layout;

typedef struct fz_var {
  int type, count, owner;
  bool app_cache; /* the other ranks register a buffer of their own */
  uint64_t init;  /* the seed of its initial data */
  fz_layout l;    /* filled in before the attachment */
} fz_var;

typedef struct fz_op {
  int nr, nw;
  int r[MAX_USE], w[MAX_USE]; /* var indexes; repeats allowed */
  int exec;                   /* WEFT_MPI_OWNER or a rank */
  int status;                 /* 0, or the failure it returns (before writing) */
  unsigned flags;
  int delay_us; /* sleeps this long first (other interleavings) */
} fz_op;

typedef enum { A_REG, A_PUSH, A_DEL, A_WAIT } fz_act_kind;

typedef struct fz_act {
  fz_act_kind kind;
  int idx; /* A_REG, A_DEL: the var; A_PUSH: the op */
} fz_act;

typedef struct fz_prog {
  uint64_t seed;
  int threads;      /* the pool's workers on every rank */
  bool no_timeout;  /* timeout_ms 0 instead of automatic */
  int nvars, nops, nacts, nwaits, cap_ops, cap_acts;
  fz_var vars[MAX_VARS];
  fz_op *ops;
  fz_act *acts;
} fz_prog;

static void add_act(fz_prog *p, fz_act_kind kind, int idx)
{
  if (p->nacts == p->cap_acts) {
    p->cap_acts = p->cap_acts ? 2 * p->cap_acts : 64;
    p->acts = realloc(p->acts, (size_t)p->cap_acts * sizeof *p->acts);
    if (!p->acts)
      abort();
  }
  p->acts[p->nacts++] = (fz_act){kind, idx};
  p->nwaits += kind == A_WAIT;
}

/* A count for type: mostly a few elements, sometimes tens, sometimes as many
 * as SPAN_CAP holds; never more than max_count. */
static int draw_count(uint64_t *s, const fz_type *ty)
{
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(ty->type, &lb, &extent);
  MPI_Type_get_true_extent(ty->type, &tlb, &textent);
  long fit = (SPAN_CAP - (long)textent - 16) / (long)extent + 1;
  int r = below(s, 10);
  long n = r < 6   ? 1 + below(s, 4)
           : r < 9 ? 1 + below(s, 32)
                   : fit / 2 + below(s, (int)(fit / 2 + 1));
  if (n > fit)
    n = fit;
  if (n > ty->max_count)
    n = ty->max_count;
  return n < 1 ? 1 : (int)n;
}

/* Draws the program of one iteration; the same on every rank for the same
 * seed and size. max_ops >= 0 caps the operators (the program is then a
 * prefix of the uncapped one, and a wait). */
static void gen(fz_prog *p, const fz_catalog *c, uint64_t seed, int size, int max_ops)
{
  memset(p, 0, sizeof *p);
  uint64_t s = seed;
  p->seed = seed;
  p->threads = 1 + below(&s, 3);
  p->no_timeout = below(&s, 4) == 0;
  bool failures = below(&s, 8) == 0;
  /* Now and then a program that registers and deletes vars all along. */
  int churn = below(&s, 4) == 0 ? 15 : 4;
  int target = below(&s, 4) == 0 ? 20 + below(&s, 400) : 5 + below(&s, 120);
  if (max_ops >= 0 && target > max_ops)
    target = max_ops;
  p->cap_ops = target > 0 ? target : 1;
  p->ops = calloc((size_t)p->cap_ops, sizeof *p->ops);
  if (!p->ops)
    abort();
  int live[MAX_VARS], nlive = 0;
  int first = 1 + below(&s, 4);
  for (int k = 0;; k++) {
    int r = k < first ? 0 : below(&s, 100);
    if (k >= first && p->nops >= target)
      break;
    if (r < 1 + churn && p->nvars < MAX_VARS && nlive < MAX_LIVE) {
      fz_var *v = &p->vars[p->nvars];
      v->type = below(&s, c->n);
      v->count = draw_count(&s, &c->t[v->type]);
      v->owner = below(&s, size);
      v->app_cache = below(&s, 4) == 0;
      v->init = rnd(&s);
      live[nlive++] = p->nvars;
      add_act(p, A_REG, p->nvars++);
    } else if (r < 1 + 2 * churn && nlive > 1) {
      int i = below(&s, nlive);
      add_act(p, A_DEL, live[i]);
      live[i] = live[--nlive];
    } else if (r < 5 + 2 * churn) {
      add_act(p, A_WAIT, 0);
    } else {
      fz_op *o = &p->ops[p->nops];
      o->nr = below(&s, MAX_USE + 1);
      o->nw = below(&s, MAX_USE + 1);
      if (o->nr + o->nw == 0 && below(&s, 4) != 0)
        o->nw = 1; /* an operator without vars now and then */
      for (int i = 0; i < o->nr; i++)
        o->r[i] = live[below(&s, nlive)];
      for (int i = 0; i < o->nw; i++)
        o->w[i] = live[below(&s, nlive)];
      o->exec = o->nw && below(&s, 3) != 0 ? WEFT_MPI_OWNER : below(&s, size);
      o->status = failures && below(&s, 40) == 0 ? 1000 + p->nops : 0;
      o->flags = below(&s, 10) == 0 ? WEFT_OP_NOSKIP : 0;
      o->delay_us = below(&s, 16) == 0 ? 1 + below(&s, 300) : 0;
      add_act(p, A_PUSH, p->nops++);
    }
  }
  if (p->acts[p->nacts - 1].kind != A_WAIT)
    add_act(p, A_WAIT, 0);
}

static void free_prog(fz_prog *p)
{
  for (int v = 0; v < p->nvars; v++) {
    free(p->vars[v].l.mask);
    free(p->vars[v].l.runs);
  }
  free(p->ops);
  free(p->acts);
}

static void print_prog(const fz_prog *p, const fz_catalog *c)
{
  printf("# program of seed %llu: %d threads, timeout %s\n", (unsigned long long)p->seed,
         p->threads, p->no_timeout ? "0" : "automatic");
  for (int a = 0; a < p->nacts; a++) {
    const fz_act *x = &p->acts[a];
    if (x->kind == A_REG) {
      const fz_var *v = &p->vars[x->idx];
      printf("#   register v%d: owner %d, %d x %s%s\n", x->idx, v->owner, v->count,
             c->t[v->type].name, v->app_cache ? ", the application's cache elsewhere" : "");
    } else if (x->kind == A_DEL) {
      printf("#   delete v%d\n", x->idx);
    } else if (x->kind == A_WAIT) {
      printf("#   wait_all\n");
    } else {
      const fz_op *o = &p->ops[x->idx];
      printf("#   op %d: reads", x->idx);
      for (int i = 0; i < o->nr; i++)
        printf(" v%d", o->r[i]);
      printf(", writes");
      for (int i = 0; i < o->nw; i++)
        printf(" v%d", o->w[i]);
      if (o->exec == WEFT_MPI_OWNER)
        printf(", on the owner");
      else
        printf(", on rank %d", o->exec);
      if (o->status)
        printf(", fails with %d", o->status);
      if (o->flags & WEFT_OP_NOSKIP)
        printf(", NOSKIP");
      if (o->delay_us)
        printf(", sleeps %d us", o->delay_us);
      printf("\n");
    }
  }
  fflush(stdout);
}

/* The data bytes of count elements of type: MPI unpacks 0xff into a zeroed
 * span. Before the attachment (it calls MPI). */
static bool layout_of(mt_ctx *t, fz_layout *l, const fz_type *ty, int count)
{
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(ty->type, &lb, &extent);
  MPI_Type_get_true_extent(ty->type, &tlb, &textent);
  int tsize = 0, packed = 0;
  MPI_Type_size(ty->type, &tsize);
  l->lo = tlb < 0 ? (ptrdiff_t)tlb : 0;
  ptrdiff_t hi = (ptrdiff_t)tlb + (ptrdiff_t)(count - 1) * (ptrdiff_t)extent + (ptrdiff_t)textent;
  l->bytes = (size_t)((hi > 0 ? hi : 0) - l->lo);
  l->type_size = (size_t)count * (size_t)tsize;
  l->mask = calloc(l->bytes ? l->bytes : 1, 1);
  l->runs = malloc((l->type_size ? l->type_size : 1) * sizeof *l->runs);
  l->nruns = 0;
  MPI_Pack_size(count, ty->type, MPI_COMM_SELF, &packed);
  unsigned char *ones = malloc(packed ? (size_t)packed : 1);
  if (!l->mask || !l->runs || !ones) {
    MT_CHECK(t, 0, "out of memory");
    free(ones);
    return false;
  }
  memset(ones, 0xff, (size_t)packed);
  int pos = 0;
  MPI_Unpack(ones, packed, &pos, l->mask - l->lo, count, ty->type, MPI_COMM_SELF);
  free(ones);
  size_t n = 0;
  for (size_t k = 0; k < l->bytes; k++) {
    l->mask[k] = l->mask[k] != 0;
    if (l->mask[k] && n < l->type_size) {
      if (l->nruns && l->runs[l->nruns - 1].off + l->runs[l->nruns - 1].len == k)
        l->runs[l->nruns - 1].len++;
      else
        l->runs[l->nruns++] = (struct fz_data_run){(uint32_t)k, 1};
    }
    n += l->mask[k];
  }
  /* A self-check of the catalog: every data byte unpacked, none twice. */
  MT_CHECK(t, n == l->type_size, "%d x %s: %zu data bytes in the mask, the type has %zu", count,
           ty->name, n, l->type_size);
  return n == l->type_size;
}

/* --------------------------------------------------------- the computation */

/* Up to 8 bytes at p as a word (the rest zero), and back. */
static uint64_t load(const unsigned char *p, size_t n)
{
  uint64_t w = 0;
  memcpy(&w, p, n);
  return w;
}

static void store(unsigned char *p, uint64_t w, size_t n)
{
  memcpy(p, &w, n);
}

/* Operator j on the spans of the vars it reads (rb) and writes (wb): folds
 * the read vars' data bytes into a hash (in order), then rewrites the data
 * bytes of each written var from that hash, their place and their old value
 * (8 at a time: an odd multiply, a bijection, then a pseudo-random xor). A
 * var read and written is read first; one written twice is rewritten twice.
 * The same code runs inside weft's operators and in the reference. */
static uint64_t apply(const fz_prog *p, int j, unsigned char *const *rb, unsigned char *const *wb)
{
  const fz_op *o = &p->ops[j];
  uint64_t h = mix64(p->seed ^ ((uint64_t)j << 24) ^ 0x6f70);
  for (int i = 0; i < o->nr; i++) {
    const fz_layout *l = &p->vars[o->r[i]].l;
    for (size_t k = 0; k < l->nruns; k++)
      for (size_t at = 0; at < l->runs[k].len; at += 8) {
        size_t n = l->runs[k].len - at < 8 ? l->runs[k].len - at : 8;
        h = (h ^ load(rb[i] + l->runs[k].off + at, n)) * 0x100000001b3ull;
        h ^= h >> 29;
      }
    h = mix64(h + (uint64_t)i);
  }
  for (int i = 0; i < o->nw; i++) {
    const fz_layout *l = &p->vars[o->w[i]].l;
    uint64_t s = mix64(h ^ ((uint64_t)(i + 1) << 56));
    for (size_t k = 0; k < l->nruns; k++)
      for (size_t at = 0; at < l->runs[k].len; at += 8) {
        size_t n = l->runs[k].len - at < 8 ? l->runs[k].len - at : 8;
        unsigned char *b = wb[i] + l->runs[k].off + at;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        store(b, (load(b, n) * 0x9e3779b97f4a7c15ull) ^ mix64(s), n);
      }
  }
  return h;
}

/* What a run covered (rank 0 prints the sums). */
typedef struct fz_totals {
  unsigned long long regs, large, dels, ops, fails, waits; /* the programs */
  unsigned long long sends, bytes;                         /* this rank's */
} fz_totals;

static void count_prog(fz_totals *tot, const fz_prog *p)
{
  for (int a = 0; a < p->nacts; a++) {
    const fz_act *x = &p->acts[a];
    tot->regs += x->kind == A_REG;
    tot->large += x->kind == A_REG && p->vars[x->idx].count > 64;
    tot->dels += x->kind == A_DEL;
    tot->waits += x->kind == A_WAIT;
    tot->ops += x->kind == A_PUSH;
    tot->fails += x->kind == A_PUSH && p->ops[x->idx].status != 0;
  }
}

/* ------------------------------------------------------------ one iteration */

/* One operator's run on its executing rank (the arg weft calls it with). */
typedef struct fz_exec {
  const fz_prog *p;
  weft_mpi *mpi;
  int op;
  weft_var *rv[MAX_USE], *wv[MAX_USE];
  /* The origin weft_mpi_var_data must give for each, NULL: any (a cache
   * weft allocates). */
  unsigned char *r_origin[MAX_USE], *w_origin[MAX_USE];
  /* Written by the operator, read after a wait. */
  int ran;
  int bad_ptr; /* 1 + the use whose buffer was not the one expected */
  uint64_t hash;
} fz_exec;

typedef struct fz_run {
  mt_ctx *t;
  const fz_prog *p;
  const fz_catalog *c;
  weft_mpi *mpi;
  weft_var *var[MAX_VARS];
  bool registered[MAX_VARS], deleted[MAX_VARS];
  /* This rank's buffer of each var (the owner's, or the application's cache
   * elsewhere; NULL if none): GUARD bytes, the span, GUARD bytes. */
  unsigned char *mine[MAX_VARS];
  /* The reference: each var's span, its last writer, the failure its value
   * stands for, and the ranks holding a valid copy (weft_mpi.h's account). */
  unsigned char *ref[MAX_VARS];
  int last_writer[MAX_VARS];
  int failed[MAX_VARS];
  /* The reference does not know the var's bytes: a WEFT_OP_NOSKIP operator
   * ran on a failed copy (which keeps whatever bytes it held, weft_mpi.h)
   * and wrote it, or wrote it from such a var. Not compared from then on. */
  bool unknown[MAX_VARS];
  uint64_t valid[MAX_VARS];
  fz_exec *exec;      /* per op (only this rank's are pushed) */
  uint64_t *ref_hash; /* per op */
  bool *ref_ran;      /* per op: not skipped */
  bool *ref_known;    /* per op: the reference knows what it reads */
  int *ref_exec;      /* per op: the executing rank */
  int round_first_op; /* the first op since the last wait */
  int nround_fail;    /* injected failures that ran since the last wait */
  int *round_fail;
  weft_mpi_stats model; /* this rank's, as weft_mpi.h tells it */
  int reports;
  int first_bad_op; /* the smallest op index a failure names, INT_MAX */
} fz_run;

static void report(fz_run *r, int op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A failure: recorded, and printed (up to MAX_REPORTS) with the seed and the
 * op index. */
static void report(fz_run *r, int op, const char *fmt, ...)
{
  r->t->failed = true;
  if (op < r->first_bad_op)
    r->first_bad_op = op;
  if (r->reports++ >= MAX_REPORTS)
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fuzz_mpi: rank %d: seed %llu: op %d: %s\n", r->t->rank,
          (unsigned long long)r->p->seed, op, msg);
}

static int op_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  fz_exec *x = arg;
  const fz_op *o = &x->p->ops[x->op];
  x->ran++;
  if (o->delay_us)
    nanosleep(&(struct timespec){0, o->delay_us * 1000L}, NULL);
  if (o->status)
    return o->status; /* fails before it touches anything */
  unsigned char *rb[MAX_USE], *wb[MAX_USE];
  for (int i = 0; i < o->nr + o->nw; i++) {
    bool w = i >= o->nr;
    int k = w ? i - o->nr : i;
    const fz_layout *l = &x->p->vars[w ? o->w[k] : o->r[k]].l;
    unsigned char *origin = weft_mpi_var_data(x->mpi, w ? x->wv[k] : x->rv[k]);
    unsigned char *want = w ? x->w_origin[k] : x->r_origin[k];
    if (!origin || (want && origin != want)) {
      x->bad_ptr = 1 + i;
      return 0; /* writes nothing: the data check shows it too */
    }
    (w ? wb : rb)[k] = origin + l->lo;
  }
  x->hash = apply(x->p, x->op, rb, wb);
  return 0;
}

/* The origin of this rank's buffer of var v (NULL: none). */
static unsigned char *origin_of(const fz_run *r, int v)
{
  return r->mine[v] ? r->mine[v] + GUARD - r->p->vars[v].l.lo : NULL;
}

static bool is_valid(const fz_run *r, int v, int rank)
{
  return r->valid[v] >> rank & 1;
}

/* The model's account of one transfer of v from src to dst (a failure
 * travels as an empty message: counted as a send, not as data, and not as
 * a receive; progress.c and weft_mpi_stats). */
static void model_transfer(fz_run *r, int v, int src, int dst, bool failure)
{
  uint64_t bytes = r->p->vars[v].l.type_size;
  if (r->t->rank == src) {
    r->model.sends++;
    if (!failure)
      r->model.bytes_sent += bytes;
  }
  if (r->t->rank == dst && !failure) {
    r->model.recvs++;
    r->model.bytes_received += bytes;
  }
}

/* Operator j in the reference, as weft_mpi.h describes a push: the copies
 * it needs, whether it runs or is skipped, its writes, the copies back. */
static void model_push(fz_run *r, int j)
{
  const fz_prog *p = r->p;
  const fz_op *o = &p->ops[j];
  int rank = r->t->rank;
  int exec = o->exec == WEFT_MPI_OWNER ? p->vars[o->w[0]].owner : o->exec;
  r->ref_exec[j] = exec;
  /* The vars, writes first, each once (a var read and written is written). */
  int use[2 * MAX_USE], n = 0, nwrite = 0;
  for (int i = 0; i < o->nw + o->nr; i++) {
    int v = i < o->nw ? o->w[i] : o->r[i - o->nw];
    int k = 0;
    while (k < n && use[k] != v)
      k++;
    if (k == n) {
      use[n++] = v;
      nwrite += i < o->nw;
    }
  }
  for (int i = 0; i < n; i++) {
    int v = use[i], owner = p->vars[v].owner;
    if (is_valid(r, v, exec)) {
      if (exec != owner && rank == exec)
        r->model.cache_hits++;
      continue;
    }
    model_transfer(r, v, owner, exec, r->failed[v] != 0);
    r->valid[v] |= 1ull << exec;
  }
  if (rank == exec)
    r->model.ops_pushed++;

  int status = 0;
  bool skipped = false;
  if (!(o->flags & WEFT_OP_NOSKIP))
    for (int i = 0; i < n && !skipped; i++)
      if (r->failed[use[i]]) {
        status = r->failed[use[i]];
        skipped = true;
      }
  r->ref_ran[j] = !skipped;
  /* What it reads is known unless it runs on a failed copy (NOSKIP) or
   * reads a var whose bytes the reference lost. */
  bool known = true;
  for (int i = 0; i < n; i++)
    known = known && !(r->failed[use[i]] && !skipped);
  for (int i = 0; i < o->nr; i++)
    known = known && !r->unknown[o->r[i]];
  r->ref_known[j] = known;
  if (!skipped && o->status) {
    status = o->status;
    r->round_fail[r->nround_fail++] = status;
  }
  if (!status) {
    unsigned char *rb[MAX_USE], *wb[MAX_USE];
    for (int i = 0; i < o->nr; i++)
      rb[i] = r->ref[o->r[i]];
    for (int i = 0; i < o->nw; i++)
      wb[i] = r->ref[o->w[i]];
    r->ref_hash[j] = apply(p, j, rb, wb);
  }
  for (int i = 0; i < nwrite; i++) {
    int v = use[i], owner = p->vars[v].owner;
    r->failed[v] = status;
    if (!status) {
      r->last_writer[v] = j;
      r->unknown[v] = r->unknown[v] || !known;
    }
    r->valid[v] = 1ull << exec;
    if (exec != owner) {
      model_transfer(r, v, exec, owner, status != 0);
      r->valid[v] |= 1ull << owner;
    }
  }
}

/* A buffer of GUARD + span + GUARD bytes: guards, then data or gap bytes. */
static unsigned char *new_buffer(const fz_layout *l, uint64_t init, bool owner)
{
  unsigned char *b = malloc(l->bytes + 2 * GUARD);
  if (!b)
    return NULL;
  memset(b, GUARD_BYTE, l->bytes + 2 * GUARD);
  unsigned char *span = b + GUARD;
  for (size_t k = 0; k < l->bytes; k++)
    span[k] = owner ? GAP_BYTE : CACHE_GAP;
  for (size_t k = 0; k < l->bytes; k++)
    if (l->mask[k])
      span[k] = owner ? (unsigned char)(mix64(init + k) >> 56) : CACHE_FILL;
  return b;
}

/* The checks at a wait (the file's comment); last_op: the last operator
 * pushed before it (-1: none). */
static void check_wait(fz_run *r, int wait_rc, int last_op)
{
  const fz_prog *p = r->p;
  int rank = r->t->rank;
  /* The result: 0, or one of the failures injected since the last wait. */
  bool ok = r->nround_fail == 0 ? wait_rc == 0 : false;
  for (int i = 0; i < r->nround_fail && !ok; i++)
    ok = wait_rc == r->round_fail[i];
  if (!ok)
    report(r, last_op, "weft_mpi_wait_all returned %d (%s); the model: %s%d", wait_rc,
           weft_err_name(wait_rc) ? weft_err_name(wait_rc) : "an operator's status",
           r->nround_fail ? "a failure such as " : "", r->nround_fail ? r->round_fail[0] : 0);

  /* What weft_mpi_var_data and weft_mpi_var_owner say after a wait: nothing
   * of a deleted var (its last operator has run), this rank's buffer of a
   * live one where the application gave one. */
  for (int v = 0; v < p->nvars; v++) {
    if (!r->registered[v])
      continue;
    void *data = weft_mpi_var_data(r->mpi, r->var[v]);
    int owner = weft_mpi_var_owner(r->mpi, r->var[v]);
    if (r->deleted[v] ? data != NULL || owner != WEFT_EINVAL
                      : (r->mine[v] && data != origin_of(r, v)) || owner != p->vars[v].owner)
      report(r, last_op, "v%d%s: weft_mpi_var_data %p (this rank's buffer %p), owner %d", v,
             r->deleted[v] ? " (deleted)" : "", data, (void *)origin_of(r, v), owner);
  }

  for (int v = 0; v < p->nvars; v++) {
    if (!r->registered[v] || !r->mine[v])
      continue;
    const fz_var *fv = &p->vars[v];
    const fz_layout *l = &fv->l;
    const unsigned char *b = r->mine[v], *span = b + GUARD;
    bool owner = fv->owner == rank;
    for (size_t k = 0; k < GUARD; k++)
      if (b[k] != GUARD_BYTE || span[l->bytes + k] != GUARD_BYTE) {
        report(r, last_op, "v%d (%s buffer): a guard byte %s the span changed", v,
               owner ? "the owner's" : "a cache", b[k] != GUARD_BYTE ? "before" : "after");
        break;
      }
    for (size_t k = 0; k < l->bytes; k++) {
      if (!l->mask[k] && span[k] != (owner ? GAP_BYTE : CACHE_GAP)) {
        report(r, last_op, "v%d (%d x %s, %s buffer): gap byte %td from the origin is 0x%02x",
               v, fv->count, r->c->t[fv->type].name, owner ? "the owner's" : "a cache",
               (ptrdiff_t)k + l->lo, span[k]);
        break;
      }
      if (owner && l->mask[k] && !r->unknown[v] && span[k] != r->ref[v][k]) {
        report(r, last_op,
               "v%d (%d x %s, owner %d%s): data byte %td from the origin is 0x%02x, the "
               "reference 0x%02x (last written by op %d)",
               v, fv->count, r->c->t[fv->type].name, fv->owner, r->deleted[v] ? ", deleted" : "",
               (ptrdiff_t)k + l->lo, span[k], r->ref[v][k], r->last_writer[v]);
        break;
      }
    }
  }

  for (int j = r->round_first_op; j <= last_op; j++) {
    const fz_exec *x = &r->exec[j];
    if (r->ref_exec[j] != rank) {
      if (x->ran)
        report(r, j, "ran %d times on rank %d; its rank is %d", x->ran, rank, r->ref_exec[j]);
      continue;
    }
    if (x->ran != (int)r->ref_ran[j])
      report(r, j, "ran %d times; the model: %s", x->ran, r->ref_ran[j] ? "once" : "skipped");
    else if (x->bad_ptr)
      report(r, j, "weft_mpi_var_data of its use %d was not this rank's buffer", x->bad_ptr - 1);
    else if (x->ran && !p->ops[j].status && r->ref_known[j] && x->hash != r->ref_hash[j])
      report(r, j, "read other bytes than the reference (hash %016llx, the reference %016llx)",
             (unsigned long long)x->hash, (unsigned long long)r->ref_hash[j]);
  }

  weft_mpi_stats st;
  int src = weft_mpi_get_stats(r->mpi, &st);
  const weft_mpi_stats *m = &r->model;
  if (src || st.ops_pushed != m->ops_pushed || st.sends != m->sends || st.recvs != m->recvs ||
      st.bytes_sent != m->bytes_sent || st.bytes_received != m->bytes_received ||
      st.cache_hits != m->cache_hits)
    report(r, last_op,
           "weft_mpi_get_stats (%d): ops %llu, sends %llu, recvs %llu, bytes out %llu, in %llu, "
           "cache hits %llu; the model %llu, %llu, %llu, %llu, %llu, %llu",
           src, (unsigned long long)st.ops_pushed, (unsigned long long)st.sends,
           (unsigned long long)st.recvs, (unsigned long long)st.bytes_sent,
           (unsigned long long)st.bytes_received, (unsigned long long)st.cache_hits,
           (unsigned long long)m->ops_pushed, (unsigned long long)m->sends,
           (unsigned long long)m->recvs, (unsigned long long)m->bytes_sent,
           (unsigned long long)m->bytes_received, (unsigned long long)m->cache_hits);

  /* What a wait does to the model: failures forgotten and, when it reported
   * one, every cached copy dropped. */
  for (int v = 0; v < p->nvars; v++) {
    r->failed[v] = 0;
    if (r->nround_fail)
      r->valid[v] = 1ull << p->vars[v].owner;
  }
  r->nround_fail = 0;
  r->round_first_op = last_op + 1;
}

/* Runs program p through weft_mpi and the reference on this rank; failures
 * go to t->failed (and stderr). Returns the smallest op index a failure
 * named (INT_MAX: none). */
static int run_iteration(mt_ctx *t, fz_prog *p, const fz_catalog *c, fz_totals *tot)
{
  fz_run *r = calloc(1, sizeof *r);
  if (!r) {
    MT_CHECK(t, 0, "out of memory");
    return INT_MAX;
  }
  r->t = t;
  r->p = p;
  r->c = c;
  r->first_bad_op = INT_MAX;
  int nops = p->nops ? p->nops : 1;
  r->exec = calloc((size_t)nops, sizeof *r->exec);
  r->ref_hash = calloc((size_t)nops, sizeof *r->ref_hash);
  r->ref_ran = calloc((size_t)nops, sizeof *r->ref_ran);
  r->ref_known = calloc((size_t)nops, sizeof *r->ref_known);
  r->ref_exec = calloc((size_t)nops, sizeof *r->ref_exec);
  r->round_fail = calloc((size_t)nops, sizeof *r->round_fail);
  bool ok = r->exec && r->ref_hash && r->ref_ran && r->ref_known && r->ref_exec && r->round_fail;
  MT_CHECK(t, ok, "out of memory");

  /* Before the attachment: layouts (MPI calls), buffers, the reference. */
  for (int v = 0; v < p->nvars && ok; v++) {
    fz_var *fv = &p->vars[v];
    ok = layout_of(t, &fv->l, &c->t[fv->type], fv->count);
    if (!ok)
      break;
    unsigned char *init = new_buffer(&fv->l, fv->init, true);
    r->ref[v] = init ? malloc(fv->l.bytes ? fv->l.bytes : 1) : NULL;
    ok = r->ref[v] != NULL;
    if (ok)
      memcpy(r->ref[v], init + GUARD, fv->l.bytes);
    free(init);
    if (ok && (fv->owner == t->rank || fv->app_cache)) {
      r->mine[v] = new_buffer(&fv->l, fv->init, fv->owner == t->rank);
      ok = r->mine[v] != NULL;
    }
    r->valid[v] = 1ull << fv->owner;
    r->last_writer[v] = -1;
    MT_CHECK(t, ok, "out of memory");
  }
  /* Every rank goes on alike: a failure here stops the iteration everywhere. */
  int mine_ok = ok, all_ok = 0;
  MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  weft_pool *pool = NULL;
  weft_engine *eng = NULL;
  weft_mpi_config mc;
  weft_mpi_config_default(&mc);
  if (p->no_timeout)
    mc.timeout_ms = 0;
  if (all_ok) {
    weft_pool_config pc;
    weft_pool_config_default(&pc);
    pc.num_threads = p->threads;
    weft_engine_config ec;
    weft_engine_config_default(&ec);
    ec.kind = "threaded";
    int prc = weft_pool_create(&pool, &pc);
    ec.pool = pool;
    int erc = prc ? prc : weft_engine_create(&eng, &ec);
    MT_CHECK(t, prc == 0 && erc == 0, "pool %d, engine %d", prc, erc);
    /* attach is collective: only if every rank has its engine. */
    mine_ok = prc == 0 && erc == 0;
    MPI_Allreduce(&mine_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  }
  if (all_ok) {
    int arc = weft_mpi_attach(eng, MPI_COMM_WORLD, &mc, &r->mpi);
    MT_CHECK(t, arc == 0, "seed %llu: weft_mpi_attach returned %d", (unsigned long long)p->seed,
             arc);
    if (arc)
      r->mpi = NULL;
  }

  if (r->mpi) {
    if (weft_mpi_rank(r->mpi) != t->rank || weft_mpi_size(r->mpi) != t->size)
      report(r, -1, "weft_mpi_rank %d, weft_mpi_size %d", weft_mpi_rank(r->mpi),
             weft_mpi_size(r->mpi));
    int last_op = -1;
    for (int a = 0; a < p->nacts; a++) {
      const fz_act *x = &p->acts[a];
      int v = x->idx, rc = 0;
      switch (x->kind) {
      case A_REG: {
        const fz_var *fv = &p->vars[v];
        rc = weft_var_new(eng, &r->var[v]);
        if (!rc)
          rc = weft_mpi_var_register(r->mpi, r->var[v], fv->owner, origin_of(r, v), fv->count,
                                     c->t[fv->type].type);
        r->registered[v] = true;
        if (rc)
          report(r, last_op, "registering v%d: %d", v, rc);
        else if (weft_mpi_var_owner(r->mpi, r->var[v]) != fv->owner)
          report(r, last_op, "v%d: weft_mpi_var_owner %d, registered with %d", v,
                 weft_mpi_var_owner(r->mpi, r->var[v]), fv->owner);
        break;
      }
      case A_DEL:
        rc = weft_mpi_var_delete(r->mpi, r->var[v]);
        r->deleted[v] = true;
        if (rc)
          report(r, last_op, "weft_mpi_var_delete of v%d: %d", v, rc);
        break;
      case A_PUSH: {
        int j = v;
        const fz_op *o = &p->ops[j];
        fz_exec *e = &r->exec[j];
        e->p = p;
        e->mpi = r->mpi;
        e->op = j;
        for (int i = 0; i < o->nr; i++) {
          e->rv[i] = r->var[o->r[i]];
          e->r_origin[i] = origin_of(r, o->r[i]);
        }
        for (int i = 0; i < o->nw; i++) {
          e->wv[i] = r->var[o->w[i]];
          e->w_origin[i] = origin_of(r, o->w[i]);
        }
        weft_op_desc d = {0};
        d.fn = op_fn;
        d.arg = e;
        d.reads = e->rv;
        d.num_reads = (size_t)o->nr;
        d.writes = e->wv;
        d.num_writes = (size_t)o->nw;
        d.flags = o->flags;
        d.name = "fuzz_mpi op";
        /* On the other ranks fn and arg are not used (x->ran stays 0 there). */
        rc = weft_mpi_push(r->mpi, &d, o->exec);
        if (rc)
          report(r, j, "weft_mpi_push: %d", rc);
        model_push(r, j);
        last_op = j;
        break;
      }
      case A_WAIT:
        check_wait(r, weft_mpi_wait_all(r->mpi), last_op);
        break;
      }
    }
    weft_mpi_stats st;
    if (weft_mpi_get_stats(r->mpi, &st) == 0) {
      tot->sends += st.sends;
      tot->bytes += st.bytes_sent;
    }
    int drc = weft_mpi_detach(r->mpi);
    if (drc)
      report(r, last_op, "weft_mpi_detach: %d", drc);
  }
  if (eng) {
    int rc = weft_engine_destroy(eng);
    MT_CHECK(t, rc == 0, "weft_engine_destroy: %d", rc);
  }
  if (pool)
    weft_pool_destroy(pool);

  int bad = r->first_bad_op;
  for (int v = 0; v < p->nvars; v++) {
    free(r->mine[v]);
    free(r->ref[v]);
  }
  free(r->exec);
  free(r->ref_hash);
  free(r->ref_ran);
  free(r->ref_known);
  free(r->ref_exec);
  free(r->round_fail);
  free(r);
  return bad;
}

/* ----------------------------------------------------------------- watchdog */

/* Names the iteration that runs for long, so that a hang killed by the
 * test's timeout leaves its seed in the log. It only prints: a slow machine
 * is not a failure. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  bool stop;
  uint64_t gen;  /* iterations started */
  uint64_t seed; /* the current one's */
  int rank;
} watch = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0, 0};

static void *watchdog(void *arg)
{
  (void)arg;
  enum { PERIOD_S = 30 };
  pthread_mutex_lock(&watch.lock);
  uint64_t seen = watch.gen;
  int periods = 0;
  while (!watch.stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += PERIOD_S;
    int rc = 0;
    while (!watch.stop && rc == 0)
      rc = pthread_cond_timedwait(&watch.cv, &watch.lock, &until);
    if (watch.stop)
      break;
    if (watch.gen != seen) {
      seen = watch.gen;
      periods = 0;
    } else {
      periods++; /* it started before the last wake-up */
      fprintf(stderr, "fuzz_mpi: rank %d: the iteration of seed %llu has run for more than %d s\n",
              watch.rank, (unsigned long long)watch.seed, periods * PERIOD_S);
    }
  }
  pthread_mutex_unlock(&watch.lock);
  return NULL;
}

/* -------------------------------------------------------------------- main */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool parse_u64(const char *s, unsigned long long *out)
{
  char *end;
  if (!s || !*s || *s == '-')
    return false;
  *out = strtoull(s, &end, 10);
  return *end == '\0';
}

static void usage(void)
{
  fprintf(stderr, "usage: fuzz_mpi [--seconds S] [--seed N] [--iters K] [--max-ops M] [--print]\n"
                  "  --seconds S  start no iteration after S seconds (default 20)\n"
                  "  --seed N     the first iteration's seed (default: WEFT_FUZZ_SEED, else\n"
                  "               from the clock)\n"
                  "  --iters K    at most K iterations (default 1000000)\n"
                  "  --max-ops M  at most M operators per program (a prefix of it)\n"
                  "  --print      print each program (rank 0)\n"
                  "  --verbose    print a line per iteration (rank 0)\n");
}

int main(int argc, char **argv)
{
  mt_ctx t = {0};
  if (!mt_init(&argc, &argv, &t.rank, &t.size))
    return 1;
  double seconds = 20;
  unsigned long long seed = 0, iters = 1000000, max_ops = 0;
  bool have_seed = false, have_max_ops = false, print = false, verbose = false, bad_args = false;
  for (int i = 1; i < argc && !bad_args; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--print") || !strcmp(a, "--verbose")) {
      print = print || !strcmp(a, "--print");
      verbose = true;
      continue;
    }
    if (!strcmp(a, "--seconds")) {
      char *end;
      seconds = val ? strtod(val, &end) : -1;
      bad_args = !val || *end || !(seconds >= 0);
    } else if (!strcmp(a, "--seed")) {
      bad_args = !parse_u64(val, &seed);
      have_seed = true;
    } else if (!strcmp(a, "--iters")) {
      bad_args = !parse_u64(val, &iters) || iters == 0;
    } else if (!strcmp(a, "--max-ops")) {
      bad_args = !parse_u64(val, &max_ops) || max_ops > INT_MAX;
      have_max_ops = true;
    } else {
      bad_args = true;
    }
    i++;
  }
  if (bad_args || t.size > 64) {
    if (t.rank == 0) {
      if (t.size > 64)
        fprintf(stderr, "fuzz_mpi: at most 64 ranks\n");
      usage();
    }
    MPI_Finalize();
    return 2;
  }
  /* Rank 0's seed for everyone. */
  const char *env_seed = getenv("WEFT_FUZZ_SEED");
  if (!have_seed && env_seed && *env_seed && !parse_u64(env_seed, &seed)) {
    if (t.rank == 0)
      fprintf(stderr, "fuzz_mpi: WEFT_FUZZ_SEED=\"%s\": expected a number\n", env_seed);
    MPI_Finalize();
    return 2;
  }
  if (!have_seed && !(env_seed && *env_seed))
    seed = (unsigned long long)time(NULL) % 100000000ull * 1000ull + (unsigned)getpid() % 1000u;
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  fz_catalog cat;
  build_catalog(&cat);
  if (t.rank == 0) {
    printf("1..1\n# fuzz_mpi: %d ranks, seed %llu, at most %llu iterations and %g s\n", t.size,
           seed, iters, seconds);
    fflush(stdout);
  }
  watch.rank = t.rank;
  pthread_t watcher;
  bool watching = pthread_create(&watcher, NULL, watchdog, NULL) == 0;
  fz_totals tot = {0};
  double start = now_s();
  unsigned long long done = 0;
  int any_failed = 0, bad_op = INT_MAX;
  uint64_t bad_seed = 0;
  for (;;) {
    /* Rank 0 decides; nothing is attached here, so MPI is ours. */
    int go = done == 0 || (done < iters && now_s() - start < seconds);
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!go)
      break;
    fz_prog p;
    gen(&p, &cat, seed + done, t.size, have_max_ops ? (int)max_ops : -1);
    if (t.rank == 0 && verbose) {
      printf("# iteration %llu: seed %llu: %d vars, %d ops, %d waits, %d threads\n", done,
             (unsigned long long)p.seed, p.nvars, p.nops, p.nwaits, p.threads);
      if (print)
        print_prog(&p, &cat);
      fflush(stdout);
    }
    pthread_mutex_lock(&watch.lock);
    watch.gen++;
    watch.seed = p.seed;
    pthread_mutex_unlock(&watch.lock);
    count_prog(&tot, &p);
    int first_bad = run_iteration(&t, &p, &cat, &tot);
    free_prog(&p);
    int mine = t.failed;
    MPI_Allreduce(&mine, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&first_bad, &bad_op, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    done++;
    if (any_failed) {
      bad_seed = seed + done - 1;
      break;
    }
  }
  if (watching) {
    pthread_mutex_lock(&watch.lock);
    watch.stop = true;
    pthread_cond_signal(&watch.cv);
    pthread_mutex_unlock(&watch.lock);
    pthread_join(watcher, NULL);
  }
  /* What the run covered: the programs, and every rank's transfers. */
  unsigned long long mine_tr[2] = {tot.sends, tot.bytes}, all_tr[2] = {0};
  MPI_Reduce(mine_tr, all_tr, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (t.rank == 0) {
    printf("# %llu programs: %llu registrations (%llu of more than 64 elements), %llu "
           "deletions, %llu operators (%llu injected failures), %llu waits; %llu transfers, "
           "%llu bytes\n",
           done, tot.regs, tot.large, tot.dels, tot.ops, tot.fails, tot.waits, all_tr[0],
           all_tr[1]);
    if (any_failed) {
      if (bad_op != INT_MAX)
        printf("# seed %llu failed at op %d: replay with fuzz_mpi --seed %llu --iters 1 "
               "[--print] [--max-ops %d]\n",
               (unsigned long long)bad_seed, bad_op, (unsigned long long)bad_seed, bad_op + 1);
      else
        printf("# seed %llu failed (see stderr): replay with fuzz_mpi --seed %llu --iters 1\n",
               (unsigned long long)bad_seed, (unsigned long long)bad_seed);
    }
    printf("%sok 1 - fuzz_mpi: %llu iterations, seeds %llu..%llu, %d ranks, %.1f s\n",
           any_failed ? "not " : "", done, seed, seed + done - 1, t.size, now_s() - start);
    fflush(stdout);
  }
  free_catalog(&cat);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
