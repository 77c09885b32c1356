/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi (src/mpi) under mpirun: derived datatypes whose data do not fill
 * count * extent bytes from the buffer's origin. A column of a matrix
 * resized to one element, an indexed type, a type with a negative true lower
 * bound, and structs with holes (one at the start): each travels from its
 * owner (rank 0) to the last rank, is checked and rewritten there, and comes
 * back. Every byte of the type's data must arrive, no byte outside it may
 * change, and the cache weft allocates must cover the type's whole span
 * (before the fix it held count * extent bytes and MPI unpacked past it).
 */
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_layout.h"
#include "mpi_tap.h"
#include <weft/weft_mpi.h>

static unsigned char pattern(size_t k, int round)
{
  return (unsigned char)(k * 7 + 1 + round * 0x5a);
}

#define GAP 0xEE /* the owner's bytes outside the type's data */

typedef struct check_op {
  weft_mpi *mpi;
  weft_var *var;
  const layout *l;
  int expect_round; /* the pattern the data must hold */
  int write_round;  /* -1: read only; else rewrite the data with it */
  bool check_gaps;  /* the owner: bytes outside the data still GAP */
  bool check_cache; /* a weft cache: its block covers the span */
  int bad;          /* bytes found wrong */
  size_t usable;    /* the cache block's usable size */
  int ran;
} check_op;

static int check_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  check_op *o = arg;
  const layout *l = o->l;
  unsigned char *origin = weft_mpi_var_data(o->mpi, o->var);
  o->ran++;
  if (!origin) {
    o->bad = -1;
    return 0;
  }
  unsigned char *base = origin + l->lo;
  if (o->check_cache) /* white-box: the block starts at the span (submit.c) */
    o->usable = malloc_usable_size(base);
  for (size_t k = 0; k < l->bytes; k++) {
    if (l->mask[k] && base[k] != pattern(k, o->expect_round))
      o->bad++;
    if (!l->mask[k] && o->check_gaps && base[k] != GAP)
      o->bad++;
  }
  if (o->write_round >= 0)
    for (size_t k = 0; k < l->bytes; k++)
      if (l->mask[k])
        base[k] = pattern(k, o->write_round);
  return 0;
}

static int push_check(weft_mpi *mpi, check_op *o, bool writes, int exec)
{
  weft_op_desc d = {0};
  d.fn = check_fn;
  d.arg = o;
  if (writes) {
    d.writes = &o->var;
    d.num_writes = 1;
  } else {
    d.reads = &o->var;
    d.num_reads = 1;
  }
  return weft_mpi_push(mpi, &d, exec);
}

/* Owner 0 -> last rank (read, checked, rewritten) -> owner (checked). */
static void round_trip(mt_ctx *t, MPI_Datatype type, int count, const char *what)
{
  layout l = {0};
  if (!describe(t, &l, type, count))
    return;
  int last = t->size - 1;
  unsigned char *owned = NULL;
  if (t->rank == 0) {
    owned = malloc(l.bytes);
    MT_CHECK(t, owned != NULL, "allocation");
    for (size_t k = 0; k < l.bytes; k++)
      owned[k] = l.mask[k] ? pattern(k, 0) : GAP;
  }
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "%s: engine and attach", what);
  weft_var *v = NULL;
  weft_var_new(eng, &v);
  int rc = weft_mpi_var_register(mpi, v, 0, owned ? owned - l.lo : NULL, count, type);
  MT_CHECK(t, rc == 0, "%s: register returned %d", what, rc);
  check_op there = {mpi, v, &l, 0, 1, false, last != 0, 0, 0, 0};
  check_op back = {mpi, v, &l, 1, -1, true, false, 0, 0, 0};
  if (rc == 0) {
    MT_CHECK(t, push_check(mpi, &there, true, last) == 0, "%s: push there", what);
    MT_CHECK(t, push_check(mpi, &back, false, 0) == 0, "%s: push back", what);
  }
  MT_CHECK(t, weft_mpi_wait_all(mpi) == 0, "%s: wait_all", what);
  if (rc == 0 && t->rank == last) {
    MT_CHECK(t, there.ran == 1 && there.bad == 0, "%s: on rank %d: ran %d, %d bytes wrong", what,
             last, there.ran, there.bad);
    if (there.check_cache)
      MT_CHECK(t, there.usable >= l.bytes, "%s: the cache holds %zu bytes, the type spans %zu",
               what, there.usable, l.bytes);
  }
  if (rc == 0 && t->rank == 0)
    MT_CHECK(t, back.ran == 1 && back.bad == 0, "%s: back on the owner: ran %d, %d bytes wrong",
             what, back.ran, back.bad);
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "%s: detach", what);
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "%s: engine destroy", what);
  free(owned);
  free(l.mask);
}

/* The everyday one: column j of an 8 x 8 row-major matrix, resized so that
 * count 8 is the whole matrix column by column (true extent 456 bytes,
 * extent 8: 512 bytes from 8 elements, not 64). */
static void column(mt_ctx *t)
{
  MPI_Datatype col, col1;
  MPI_Type_vector(8, 1, 8, MPI_DOUBLE, &col);
  MPI_Type_create_resized(col, 0, sizeof(double), &col1);
  MPI_Type_commit(&col1);
  round_trip(t, col1, 8, "column");
  MPI_Type_free(&col1);
  MPI_Type_free(&col);
}

/* Indexed: blocks at int 3 (2 ints) and int 10 (1 int): lower bound 12
 * bytes (refused before), extent 32. */
static void indexed(mt_ctx *t)
{
  MPI_Datatype ix;
  int lens[2] = {2, 1}, disps[2] = {3, 10};
  MPI_Type_indexed(2, lens, disps, MPI_INT, &ix);
  MPI_Type_commit(&ix);
  round_trip(t, ix, 3, "indexed");
  MPI_Type_free(&ix);
}

/* Data before the origin: doubles at -16 and 0 bytes (true lb -16). */
static void negative_lb(mt_ctx *t)
{
  MPI_Datatype neg;
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {-16, 0};
  MPI_Type_create_hindexed(2, lens, disps, MPI_DOUBLE, &neg);
  MPI_Type_commit(&neg);
  round_trip(t, neg, 3, "negative true lb");
  MPI_Type_free(&neg);
}

/* A struct with holes: char, double, int (offsets 0, 8, 16; 24 bytes), and
 * one whose first field is skipped (true lb 8). */
static void structs(mt_ctx *t)
{
  struct rec {
    char c;
    double d;
    int i;
  };
  int lens[3] = {1, 1, 1};
  MPI_Aint disps[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i)};
  MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, s, s1, tail, tail1;
  MPI_Type_create_struct(3, lens, disps, types, &s);
  MPI_Type_create_resized(s, 0, sizeof(struct rec), &s1);
  MPI_Type_commit(&s1);
  round_trip(t, s1, 4, "struct with holes");
  MPI_Type_create_struct(2, lens + 1, disps + 1, types + 1, &tail);
  MPI_Type_create_resized(tail, 0, sizeof(struct rec), &tail1);
  MPI_Type_commit(&tail1);
  round_trip(t, tail1, 4, "struct, first field skipped");
  MPI_Type_free(&tail1);
  MPI_Type_free(&tail);
  MPI_Type_free(&s1);
  MPI_Type_free(&s);
}

/* Still refused: a type whose elements overlap or run backwards. */
static void bad_extent(mt_ctx *t)
{
  MPI_Datatype zero;
  MPI_Type_create_resized(MPI_DOUBLE, 0, 0, &zero);
  MPI_Type_commit(&zero);
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "engine and attach");
  weft_var *v = NULL;
  weft_var_new(eng, &v);
  double x[4];
  MT_CHECK(t, weft_mpi_var_register(mpi, v, 0, t->rank == 0 ? x : NULL, 4, zero) == WEFT_EINVAL,
           "extent 0 refused");
  MT_CHECK(t, weft_mpi_var_register(mpi, v, 0, t->rank == 0 ? x : NULL, 4, MPI_DOUBLE) == 0,
           "the same var with a plain type");
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "detach");
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "engine destroy");
  MPI_Type_free(&zero);
}

int main(int argc, char **argv)
{
  static const mt_case cases[] = {
      {"column", column, 1},
      {"indexed", indexed, 1},
      {"negative_true_lb", negative_lb, 1},
      {"structs_with_holes", structs, 1},
      {"bad_extent", bad_extent, 1},
  };
  return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
