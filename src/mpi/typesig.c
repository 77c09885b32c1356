/* SPDX-License-Identifier: MIT */
/*
 * The signature of a registered var's datatype (weft_mpi_var_register folds
 * it into the sequence hash): what "the same datatype" means across ranks,
 * whose handles are their own (weft_mpi.h, docs/mpi.md "Ranks that disagree
 * or die").
 *
 * The signature hashes the type's construction: the tree that
 * MPI_Type_get_envelope and MPI_Type_get_contents describe, walked in
 * pre-order down to the named types. Each constructor folds its combiner
 * and every integer and address it was built with (counts, block lengths,
 * strides, displacements, a resized type's lower bound and extent, a
 * subarray's sizes and starts, ...), then its subtypes in order; a dup
 * folds nothing (it is its original). A named type folds its identity: a
 * number from the table below, or, for a named type the table lacks
 * (Fortran and C++ types, an implementation's own), its name
 * (MPI_Type_get_name) and size. A vector of a million blocks is three
 * integers and its subtype: the walk's work is the size of the type's
 * description, never its element count.
 *
 * The construction determines the type map (basic types and displacements)
 * and the extent, so types that differ in either always sign differently;
 * types built alike from the same named types sign alike. The same type map
 * built two ways (a contiguous type, and the one-block vector equal to it)
 * signs differently too: the ranks must build their types alike.
 *
 * A subtype used several times (a struct's fields) is walked each time, so
 * a walk is bounded (tunables.h): WEFT_MPI_TYPE_CONSTRUCTORS_MAX
 * constructors, WEFT_MPI_TYPE_WORDS_MAX words of their arguments in all.
 */
#include <stdlib.h>
#include <string.h>

#include "common/tunables.h"
#include "mpi/mpi_int.h"

/* The C named types, each with its number (synonyms share one, whether or
 * not the implementation gives them one handle). */
typedef struct named_entry {
  MPI_Datatype type;
  int id;
} named_entry;

static const named_entry named_table[] = {
    {MPI_CHAR, 1},
    {MPI_SIGNED_CHAR, 2},
    {MPI_UNSIGNED_CHAR, 3},
    {MPI_BYTE, 4},
    {MPI_WCHAR, 5},
    {MPI_SHORT, 6},
    {MPI_UNSIGNED_SHORT, 7},
    {MPI_INT, 8},
    {MPI_UNSIGNED, 9},
    {MPI_LONG, 10},
    {MPI_UNSIGNED_LONG, 11},
    {MPI_LONG_LONG_INT, 12},
    {MPI_LONG_LONG, 12},
    {MPI_UNSIGNED_LONG_LONG, 13},
    {MPI_FLOAT, 14},
    {MPI_DOUBLE, 15},
    {MPI_LONG_DOUBLE, 16},
    {MPI_C_BOOL, 17},
    {MPI_INT8_T, 18},
    {MPI_INT16_T, 19},
    {MPI_INT32_T, 20},
    {MPI_INT64_T, 21},
    {MPI_UINT8_T, 22},
    {MPI_UINT16_T, 23},
    {MPI_UINT32_T, 24},
    {MPI_UINT64_T, 25},
    {MPI_C_FLOAT_COMPLEX, 26},
    {MPI_C_COMPLEX, 26},
    {MPI_C_DOUBLE_COMPLEX, 27},
    {MPI_C_LONG_DOUBLE_COMPLEX, 28},
    {MPI_AINT, 29},
    {MPI_OFFSET, 30},
    {MPI_COUNT, 31},
    {MPI_PACKED, 32},
    {MPI_FLOAT_INT, 33},
    {MPI_DOUBLE_INT, 34},
    {MPI_LONG_INT, 35},
    {MPI_2INT, 36},
    {MPI_SHORT_INT, 37},
    {MPI_LONG_DOUBLE_INT, 38},
};

/* Folded first by every record of the walk: a named type from the table,
 * one by name, a constructor. */
enum {
  TAG_NAMED = 0x4e414d45,  /* "NAME" */
  TAG_BYNAME = 0x42594e4d, /* "BYNM" */
  TAG_BUILT = 0x4255494c,  /* "BUIL" */
};

static int named_id(MPI_Datatype type)
{
  for (size_t i = 0; i < sizeof named_table / sizeof named_table[0]; i++)
    if (named_table[i].type == type)
      return named_table[i].id;
  return 0;
}

/* A subtype still to walk. */
typedef struct pending {
  MPI_Datatype type;
  bool ours; /* MPI_Type_get_contents gave it: freed once read, if derived */
} pending;

/* One walk's state: the submitting thread's, on its stack. */
typedef struct walk {
  weft_mpi *mpi;
  uint32_t id; /* the var, for messages */
  uint64_t h;
  pending *stack; /* subtypes to walk, the next on top */
  size_t depth, stack_cap;
  /* MPI_Type_get_contents' arrays, reused from one constructor to the next. */
  int *ints;
  MPI_Aint *addrs;
  MPI_Datatype *types;
  size_t ints_cap, addrs_cap, types_cap;
  long constructors;
  long long words;
} walk;

/* *p holds at least n elements of size bytes each (n > 0). */
static bool reserve(void **p, size_t *cap, size_t n, size_t size)
{
  if (n <= *cap)
    return true;
  size_t c = *cap ? *cap : 16;
  while (c < n)
    c *= 2;
  void *q = realloc(*p, c * size);
  if (!q)
    return false;
  *p = q;
  *cap = c;
  return true;
}

/* The walk's step, a multiply-rotate round: with the sequence hash's
 * byte-wise step, 65 million words of an indexed type took 1.9 s to walk on
 * the 2-vCPU VM, with this one 0.09 s. The signature gets the sequence
 * hash's own mixing when registry.c folds it. */
static void fold(walk *w, uint64_t v)
{
  uint64_t h = w->h ^ (v * 0x9e3779b97f4a7c15ull);
  w->h = ((h << 27) | (h >> 37)) * 0xbf58476d1ce4e5b9ull;
}

static void fold_bytes(walk *w, const char *s, size_t n)
{
  fold(w, n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = 0;
    memcpy(&v, s + i, n - i < 8 ? n - i : 8);
    fold(w, v);
  }
}

/* Frees what the walk holds: the subtypes left on its stack that MPI gave
 * it (derived ones only: a named type is never freed), and its arrays. */
static void walk_free(walk *w)
{
  pthread_mutex_lock(w->mpi->call_lock);
  for (size_t i = 0; i < w->depth; i++) {
    int ni, na, nd, comb;
    if (w->stack[i].ours &&
        MPI_Type_get_envelope(w->stack[i].type, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
        comb != MPI_COMBINER_NAMED)
      MPI_Type_free(&w->stack[i].type);
  }
  pthread_mutex_unlock(w->mpi->call_lock);
  free(w->stack);
  free(w->ints);
  free(w->addrs);
  free(w->types);
}

/* A named type's record. Under call_lock (it may ask MPI for the name). */
static int fold_named(walk *w, MPI_Datatype type)
{
  int id = named_id(type);
  if (id) {
    fold(w, TAG_NAMED);
    fold(w, (uint64_t)id);
    return 0;
  }
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0, size = 0;
  if (MPI_Type_get_name(type, name, &len) != MPI_SUCCESS ||
      MPI_Type_size(type, &size) != MPI_SUCCESS)
    return WEFT_EINVAL;
  if (len < 0 || len > MPI_MAX_OBJECT_NAME)
    len = 0;
  fold(w, TAG_BYNAME);
  fold(w, (uint64_t)(unsigned)size);
  fold_bytes(w, name, (size_t)len);
  return 0;
}

static int cannot_describe(const walk *w)
{
  mpi_log(w->mpi, "weft_mpi_var_register: var %u: MPI cannot describe its datatype "
                  "(MPI_Type_get_envelope, MPI_Type_get_contents or MPI_Type_get_name failed)",
          w->id);
  return WEFT_EINVAL;
}

/* Walks the subtype on top of the stack: folds its record and pushes its
 * own subtypes. */
static int walk_one(walk *w)
{
  pending p = w->stack[--w->depth];
  int ni = 0, na = 0, nd = 0, comb = 0, rc = 0;
  pthread_mutex_lock(w->mpi->call_lock);
  bool ok = MPI_Type_get_envelope(p.type, &ni, &na, &nd, &comb) == MPI_SUCCESS;
  if (ok && comb == MPI_COMBINER_NAMED) /* never freed */
    rc = fold_named(w, p.type);
  pthread_mutex_unlock(w->mpi->call_lock);
  if (!ok || rc)
    return cannot_describe(w); /* a handle MPI cannot read is left alone */
  if (comb == MPI_COMBINER_NAMED)
    return 0;
  w->constructors++;
  w->words += 1 + (long long)ni + na + nd;
  if (ni < 0 || na < 0 || nd < 0) {
    rc = cannot_describe(w);
  } else if (w->constructors > WEFT_MPI_TYPE_CONSTRUCTORS_MAX) {
    mpi_log(w->mpi, "weft_mpi_var_register: var %u: its datatype is built from more than %d "
                    "constructors (a subtype counting each time it is used): more than the "
                    "ranks compare", w->id, WEFT_MPI_TYPE_CONSTRUCTORS_MAX);
    rc = WEFT_EINVAL;
  } else if (w->words > WEFT_MPI_TYPE_WORDS_MAX) {
    mpi_log(w->mpi, "weft_mpi_var_register: var %u: its datatype's constructors take more than "
                    "%lld integers, addresses and subtypes in all (a subtype counting each time "
                    "it is used): more than the ranks compare", w->id,
            (long long)WEFT_MPI_TYPE_WORDS_MAX);
    rc = WEFT_EINVAL;
  } else if (!reserve((void **)&w->ints, &w->ints_cap, (size_t)ni + 1, sizeof *w->ints) ||
             !reserve((void **)&w->addrs, &w->addrs_cap, (size_t)na + 1, sizeof *w->addrs) ||
             !reserve((void **)&w->types, &w->types_cap, (size_t)nd + 1, sizeof *w->types) ||
             !reserve((void **)&w->stack, &w->stack_cap, w->depth + (size_t)nd + 1,
                      sizeof *w->stack)) {
    rc = WEFT_ENOMEM; /* (one more element each above: MPI may not take a NULL array) */
  }
  pthread_mutex_lock(w->mpi->call_lock);
  if (!rc)
    ok = MPI_Type_get_contents(p.type, ni, na, nd, w->ints, w->addrs, w->types) == MPI_SUCCESS;
  /* Read (or given up): the subtypes MPI gave are handles of their own. */
  if (p.ours)
    MPI_Type_free(&p.type);
  pthread_mutex_unlock(w->mpi->call_lock);
  if (rc)
    return rc;
  if (!ok)
    return cannot_describe(w);
  for (int i = nd - 1; i >= 0; i--) /* the first subtype on top: walked next */
    w->stack[w->depth++] = (pending){w->types[i], true};
  if (comb == MPI_COMBINER_DUP)
    return 0;
  fold(w, TAG_BUILT);
  fold(w, (uint64_t)(unsigned)comb);
  fold(w, (uint64_t)(unsigned)ni);
  fold(w, (uint64_t)(unsigned)na);
  fold(w, (uint64_t)(unsigned)nd);
  for (int i = 0; i < ni; i += 2) /* two to a word (ni is folded: no ambiguity) */
    fold(w, (uint64_t)(uint32_t)w->ints[i] |
                (i + 1 < ni ? (uint64_t)(uint32_t)w->ints[i + 1] << 32 : 0));
  for (int i = 0; i < na; i++)
    fold(w, (uint64_t)(int64_t)w->addrs[i]);
  return 0;
}

int mpi_type_signature(weft_mpi *mpi, uint32_t id, MPI_Datatype type, uint64_t *sig)
{
  walk w;
  memset(&w, 0, sizeof w);
  w.mpi = mpi;
  w.id = id;
  int rc = 0;
  if (!reserve((void **)&w.stack, &w.stack_cap, 1, sizeof *w.stack))
    return WEFT_ENOMEM;
  w.stack[w.depth++] = (pending){type, false}; /* the application's: never freed */
  while (!rc && w.depth)
    rc = walk_one(&w);
  walk_free(&w);
  *sig = w.h;
  return rc;
}
