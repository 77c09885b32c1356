/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi (src/mpi) under mpirun: what the ranks compare of a var's
 * datatype (src/mpi/typesig.c). Rank 1 registers a var with a datatype
 * that differs from the other ranks' only in ways its count and size do not
 * show: MPI_FLOAT for MPI_INT, a contiguous type for a vector, a resized
 * type for its original, a struct whose holes lie elsewhere, a struct whose
 * vector field holds another named type, a C++ named type for the C one.
 * Every rank's wait returns WEFT_EMISMATCH with the message, and the
 * attachment is then unusable. Types built alike on every rank, each
 * created separately (a dup standing for its original), are no mismatch,
 * and their data travel. A datatype past the walk's limits is refused on
 * every rank and leaves the sequence intact.
 *
 * MPI calls of the test's own (building and freeing types) come before
 * attach and after detach: the progress thread calls MPI in between.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tunables.h"
#include "mpi_layout.h"
#include "mpi_tap.h"
#include <weft/weft_mpi.h>

/* ------------------------------------------------------------ stderr */

/* The library's messages during a call: stderr goes to a file (not a pipe:
 * nothing can block on it) from capture_begin to capture_end, which copies
 * what came to the real stderr too. */
typedef struct capture {
  int file, saved;
  char text[4096];
} capture;

static void capture_begin(mt_ctx *t, capture *c)
{
  char path[] = "/tmp/weft-mpi-type-XXXXXX";
  fflush(stderr);
  c->file = mkstemp(path);
  c->saved = dup(2);
  c->text[0] = '\0';
  MT_CHECK(t, c->file >= 0 && c->saved >= 0, "mkstemp/dup");
  if (c->file >= 0) {
    unlink(path);
    dup2(c->file, 2);
  }
}

static void capture_end(capture *c)
{
  fflush(stderr);
  if (c->saved >= 0) {
    dup2(c->saved, 2);
    close(c->saved);
  }
  if (c->file < 0)
    return;
  ssize_t n = pread(c->file, c->text, sizeof c->text - 1, 0);
  c->text[n > 0 ? (size_t)n : 0] = '\0';
  close(c->file);
  fputs(c->text, stderr);
}

/* ------------------------------------------------------------ layouts */

static unsigned char pattern(size_t k) { return (unsigned char)(k * 13 + 5); }

/* -------------------------------------------------------- mismatches */

/* Every rank registers one var owned by rank 0 with count elements of its
 * own type (rank 1's differs from the others'); the wait, a later push
 * and detach return WEFT_EMISMATCH on every rank, and the wait says why. */
static void expect_mismatch(mt_ctx *t, MPI_Datatype type, int count, const char *what)
{
  layout l = {0};
  if (!describe(t, &l, type, count))
    return;
  unsigned char *owned = t->rank == 0 ? calloc(l.bytes, 1) : NULL;
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "%s: engine and attach", what);
  weft_var *v = NULL;
  weft_var_new(eng, &v);
  int rc = weft_mpi_var_register(mpi, v, 0, owned ? owned - l.lo : NULL, count, type);
  MT_CHECK(t, rc == 0, "%s: register returned %d", what, rc);
  capture c;
  capture_begin(t, &c);
  rc = weft_mpi_wait_all(mpi);
  capture_end(&c);
  MT_CHECK(t, rc == WEFT_EMISMATCH, "%s: wait_all returned %d on rank %d, want WEFT_EMISMATCH",
           what, rc, t->rank);
  MT_CHECK(t, strstr(c.text, "submitted different sequences") != NULL,
           "%s: the wait printed no mismatch message on rank %d", what, t->rank);
  rc = mt_push(mpi, mt_nop, NULL, NULL, v, 0, WEFT_MPI_OWNER);
  MT_CHECK(t, rc == WEFT_EMISMATCH, "%s: push after the mismatch returned %d", what, rc);
  rc = weft_mpi_detach(mpi);
  MT_CHECK(t, rc == WEFT_EMISMATCH, "%s: detach returned %d", what, rc);
  weft_engine_destroy(eng);
  free(owned);
  free(l.mask);
}

/* 8 x MPI_INT here, 8 x MPI_FLOAT on rank 1: the same count and size. */
static void int_vs_float(mt_ctx *t)
{
  expect_mismatch(t, t->rank == 1 ? MPI_FLOAT : MPI_INT, 8, "MPI_INT vs MPI_FLOAT");
}

/* Every other int of 15 here, 8 ints in a row on rank 1: 32 bytes each. */
static void vector_vs_contiguous(mt_ctx *t)
{
  MPI_Datatype type;
  if (t->rank == 1)
    MPI_Type_contiguous(8, MPI_INT, &type);
  else
    MPI_Type_vector(8, 1, 2, MPI_INT, &type);
  MPI_Type_commit(&type);
  expect_mismatch(t, type, 1, "a vector vs a contiguous type");
  MPI_Type_free(&type);
}

/* Pairs of ints, 8 bytes apart here, 16 on rank 1 (resized): the same
 * basic types, size and count, another extent. */
static void resized_vs_original(mt_ctx *t)
{
  MPI_Datatype pair, wide;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_create_resized(pair, 0, 16, &wide);
  MPI_Type_commit(&pair);
  MPI_Type_commit(&wide);
  expect_mismatch(t, t->rank == 1 ? wide : pair, 4, "a resized type vs its original");
  MPI_Type_free(&wide);
  MPI_Type_free(&pair);
}

/* An int and a double in 24 bytes: the double at 8 here, at 16 on rank 1.
 * Size, lower bound, extent and basic types alike; only the hole moves. */
static void holes_elsewhere(mt_ctx *t)
{
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, t->rank == 1 ? 16 : 8};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, s, rec;
  MPI_Type_create_struct(2, lens, disps, types, &s);
  MPI_Type_create_resized(s, 0, 24, &rec);
  MPI_Type_commit(&rec);
  expect_mismatch(t, rec, 3, "a struct whose hole lies elsewhere");
  MPI_Type_free(&rec);
  MPI_Type_free(&s);
}

/* A struct of an int and a vector of two ints (floats on rank 1), the
 * same size, displacements and extent: the difference is two levels down. */
static void deep_difference(mt_ctx *t)
{
  MPI_Datatype vec, s;
  MPI_Type_vector(2, 1, 2, t->rank == 1 ? MPI_FLOAT : MPI_INT, &vec);
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_INT, vec};
  MPI_Type_create_struct(2, lens, disps, types, &s);
  MPI_Type_commit(&s);
  expect_mismatch(t, s, 2, "a named type inside a struct's vector");
  MPI_Type_free(&s);
  MPI_Type_free(&vec);
}

/* MPI_C_FLOAT_COMPLEX here, MPI_CXX_FLOAT_COMPLEX on rank 1: 8 bytes each,
 * the second one of the named types signed by name. */
static void named_by_name(mt_ctx *t)
{
  MT_CHECK(t, MPI_CXX_FLOAT_COMPLEX != MPI_C_FLOAT_COMPLEX, "the two are one handle here");
  expect_mismatch(t, t->rank == 1 ? MPI_CXX_FLOAT_COMPLEX : MPI_C_FLOAT_COMPLEX, 4,
                  "MPI_C_FLOAT_COMPLEX vs MPI_CXX_FLOAT_COMPLEX");
}

/* ------------------------------------------------------ built alike */

typedef struct read_op {
  weft_mpi *mpi;
  weft_var *var;
  const layout *l;
  int bad; /* data bytes found wrong, -1: no buffer */
  int ran;
} read_op;

static int read_fn(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  read_op *o = arg;
  const unsigned char *origin = weft_mpi_var_data(o->mpi, o->var);
  o->ran++;
  if (!origin) {
    o->bad = -1;
    return 0;
  }
  const unsigned char *base = origin + o->l->lo;
  for (size_t k = 0; k < o->l->bytes; k++)
    if (o->l->mask[k] && base[k] != pattern(k))
      o->bad++;
  return 0;
}

enum { ALIKE = 5 };

/* Each rank builds its types itself, as the others do: a vector created
 * twice (rank 0 registers the first, the others the second), a struct with
 * holes resized, a subarray, a vector that rank 1 registers as a dup, and
 * a named type signed by name. The wait returns 0 everywhere and each
 * var's data reach the last rank. */
static void built_alike(mt_ctx *t)
{
  MPI_Datatype vec1, vec2, s, rec, sub, vec3, dup3;
  MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vec1);
  MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vec2);
  int lens[3] = {1, 1, 1};
  MPI_Aint disps[3] = {0, 8, 16};
  MPI_Datatype fields[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT};
  MPI_Type_create_struct(3, lens, disps, fields, &s);
  MPI_Type_create_resized(s, 0, 24, &rec);
  int full[2] = {6, 5}, part[2] = {3, 2}, start[2] = {1, 2};
  MPI_Type_create_subarray(2, full, part, start, MPI_ORDER_C, MPI_INT, &sub);
  MPI_Type_vector(3, 2, 3, MPI_SHORT, &vec3);
  MPI_Type_dup(vec3, &dup3);
  MPI_Type_commit(&vec1);
  MPI_Type_commit(&vec2);
  MPI_Type_commit(&rec);
  MPI_Type_commit(&sub);
  MPI_Type_commit(&vec3);
  MPI_Type_commit(&dup3);
  MPI_Datatype mine[ALIKE] = {t->rank == 0 ? vec1 : vec2, rec, sub,
                              t->rank == 1 ? dup3 : vec3, MPI_CXX_FLOAT_COMPLEX};
  const int counts[ALIKE] = {3, 4, 1, 2, 5};
  const char *names[ALIKE] = {"two vectors", "a struct with holes", "a subarray",
                              "a vector and its dup", "MPI_CXX_FLOAT_COMPLEX"};
  layout l[ALIKE] = {{0}};
  unsigned char *owned[ALIKE] = {0};
  bool ok = true;
  for (int i = 0; i < ALIKE; i++) {
    ok = describe(t, &l[i], mine[i], counts[i]) && ok;
    if (ok && t->rank == 0) {
      owned[i] = malloc(l[i].bytes);
      MT_CHECK(t, owned[i] != NULL, "allocation");
      ok = owned[i] != NULL;
      for (size_t k = 0; ok && k < l[i].bytes; k++)
        owned[i][k] = pattern(k);
    }
  }
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "engine and attach");
  int last = t->size - 1;
  read_op ops[ALIKE];
  for (int i = 0; i < ALIKE; i++) {
    weft_var *v = NULL;
    weft_var_new(eng, &v);
    int rc = weft_mpi_var_register(mpi, v, 0, owned[i] ? owned[i] - l[i].lo : NULL, counts[i],
                                   mine[i]);
    MT_CHECK(t, rc == 0, "%s: register returned %d", names[i], rc);
    ops[i] = (read_op){mpi, v, &l[i], 0, 0};
    weft_op_desc d = {0};
    d.fn = read_fn;
    d.arg = &ops[i];
    d.reads = &ops[i].var;
    d.num_reads = 1;
    MT_CHECK(t, ok && weft_mpi_push(mpi, &d, last) == 0, "%s: push", names[i]);
  }
  int rc = weft_mpi_wait_all(mpi);
  MT_CHECK(t, rc == 0, "wait_all returned %d on rank %d, want 0", rc, t->rank);
  if (t->rank == last)
    for (int i = 0; i < ALIKE; i++)
      MT_CHECK(t, ops[i].ran == 1 && ops[i].bad == 0, "%s: on rank %d: ran %d, %d bytes wrong",
               names[i], last, ops[i].ran, ops[i].bad);
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "detach");
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "engine destroy");
  for (int i = 0; i < ALIKE; i++) {
    free(owned[i]);
    free(l[i].mask);
  }
  MPI_Type_free(&dup3);
  MPI_Type_free(&vec3);
  MPI_Type_free(&sub);
  MPI_Type_free(&rec);
  MPI_Type_free(&s);
  MPI_Type_free(&vec2);
  MPI_Type_free(&vec1);
}

/* ------------------------------------------------------------ limits */

/* A struct of n fields (overlapping: every one at 0), each the type field.
 * The walk visits field n times. */
static MPI_Datatype struct_of(int n, MPI_Datatype field)
{
  int *lens = malloc((size_t)n * sizeof *lens);
  MPI_Aint *disps = calloc((size_t)n, sizeof *disps);
  MPI_Datatype *types = malloc((size_t)n * sizeof *types), s = MPI_DATATYPE_NULL;
  if (lens && disps && types) {
    for (int i = 0; i < n; i++) {
      lens[i] = 1;
      types[i] = field;
    }
    MPI_Type_create_struct(n, lens, disps, types, &s);
    MPI_Type_commit(&s);
  }
  free(lens);
  free(disps);
  free(types);
  return s;
}

/* The type is refused on every rank, with a message saying which limit;
 * the var then registers with MPI_INT, and the wait finds the sequences
 * alike (the refusal folded nothing). */
static void expect_refused(mt_ctx *t, MPI_Datatype type, const char *said, const char *what)
{
  MT_CHECK(t, type != MPI_DATATYPE_NULL, "%s: no type", what);
  int buf[1] = {0};
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "%s: engine and attach", what);
  weft_var *v = NULL;
  weft_var_new(eng, &v);
  void *mybuf = t->rank == 0 ? buf : NULL; /* never used: refused */
  capture c;
  capture_begin(t, &c);
  int rc = weft_mpi_var_register(mpi, v, 0, mybuf, 1, type);
  capture_end(&c);
  MT_CHECK(t, rc == WEFT_EINVAL, "%s: register returned %d, want WEFT_EINVAL", what, rc);
  MT_CHECK(t, strstr(c.text, "var 0") && strstr(c.text, said),
           "%s: no message naming var 0 and \"%s\"", what, said);
  rc = weft_mpi_var_register(mpi, v, 0, mybuf, 1, MPI_INT);
  MT_CHECK(t, rc == 0, "%s: the same var with MPI_INT: %d", what, rc);
  rc = weft_mpi_wait_all(mpi);
  MT_CHECK(t, rc == 0, "%s: wait_all returned %d", what, rc);
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "%s: detach", what);
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "%s: engine destroy", what);
}

/* As many constructors as the walk takes, then one more: a struct of
 * WEFT_MPI_TYPE_CONSTRUCTORS_MAX - 1 one-int contiguous types registers
 * (and the ranks agree on it), one of WEFT_MPI_TYPE_CONSTRUCTORS_MAX is
 * refused. */
static void too_many_constructors(mt_ctx *t)
{
  MPI_Datatype one;
  MPI_Type_contiguous(1, MPI_INT, &one);
  MPI_Datatype most = struct_of(WEFT_MPI_TYPE_CONSTRUCTORS_MAX - 1, one);
  MPI_Datatype over = struct_of(WEFT_MPI_TYPE_CONSTRUCTORS_MAX, one);
  MT_CHECK(t, most != MPI_DATATYPE_NULL, "no type");
  int buf[1] = {0};
  weft_engine *eng = NULL;
  weft_mpi *mpi = NULL;
  MT_CHECK(t, mt_attach(60000, &eng, &mpi), "engine and attach");
  weft_var *v = NULL;
  weft_var_new(eng, &v);
  int rc = weft_mpi_var_register(mpi, v, 0, t->rank == 0 ? buf : NULL, 1, most);
  MT_CHECK(t, rc == 0, "%d constructors: register returned %d", WEFT_MPI_TYPE_CONSTRUCTORS_MAX,
           rc);
  MT_CHECK(t, weft_mpi_wait_all(mpi) == 0, "%d constructors: wait_all",
           WEFT_MPI_TYPE_CONSTRUCTORS_MAX);
  MT_CHECK(t, weft_mpi_detach(mpi) == 0, "detach");
  MT_CHECK(t, weft_engine_destroy(eng) == 0, "engine destroy");
  expect_refused(t, over, "constructors", "too many constructors");
  if (over != MPI_DATATYPE_NULL)
    MPI_Type_free(&over);
  if (most != MPI_DATATYPE_NULL)
    MPI_Type_free(&most);
  MPI_Type_free(&one);
}

/* Arguments past WEFT_MPI_TYPE_WORDS_MAX in few constructors: a struct
 * whose fields are all one indexed type of 4096 blocks (8194 words a
 * visit). */
static void too_many_words(mt_ctx *t)
{
  enum { BLOCKS = 4096 };
  int *lens = malloc(BLOCKS * sizeof *lens), *disps = malloc(BLOCKS * sizeof *disps);
  MPI_Datatype ix = MPI_DATATYPE_NULL, s = MPI_DATATYPE_NULL;
  if (lens && disps) {
    for (int i = 0; i < BLOCKS; i++) {
      lens[i] = 1;
      disps[i] = i;
    }
    MPI_Type_indexed(BLOCKS, lens, disps, MPI_INT, &ix);
    s = struct_of((int)(WEFT_MPI_TYPE_WORDS_MAX / (2 * BLOCKS)) + 1, ix);
  }
  free(lens);
  free(disps);
  expect_refused(t, s, "integers, addresses and subtypes", "too many words");
  if (s != MPI_DATATYPE_NULL)
    MPI_Type_free(&s);
  if (ix != MPI_DATATYPE_NULL)
    MPI_Type_free(&ix);
}

int main(int argc, char **argv)
{
  static const mt_case cases[] = {
      {"int_vs_float_is_a_mismatch", int_vs_float, 2},
      {"vector_vs_contiguous_is_a_mismatch", vector_vs_contiguous, 2},
      {"resized_vs_original_is_a_mismatch", resized_vs_original, 2},
      {"holes_elsewhere_is_a_mismatch", holes_elsewhere, 2},
      {"difference_inside_a_subtype_is_a_mismatch", deep_difference, 2},
      {"named_type_by_name_is_a_mismatch", named_by_name, 2},
      {"types_built_alike_match", built_alike, 1},
      {"too_many_constructors_refused", too_many_constructors, 1},
      {"too_many_words_refused", too_many_words, 1},
  };
  return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
