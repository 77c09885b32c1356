/* SPDX-License-Identifier: MIT */
/*
 * The registry of distributed vars: weft_var * -> mpi_dvar *, and the calls
 * that register, look up and delete them.
 *
 * Open addressing with linear probing; a deleted slot holds TOMBSTONE. The
 * submitting thread inserts and removes, operator threads look up (through
 * weft_mpi_var_data): all under map_lock.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_int.h"

static mpi_dvar tombstone_;
#define TOMBSTONE (&tombstone_)

static size_t slot_of(const weft_var *var, size_t cap)
{
  uint64_t h = (uint64_t)(uintptr_t)var * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

/* Under map_lock. */
static mpi_dvar **find_slot(const weft_mpi *mpi, const weft_var *var)
{
  if (!mpi->map_cap)
    return NULL;
  for (size_t i = slot_of(var, mpi->map_cap), n = 0; n < mpi->map_cap;
       i = (i + 1) & (mpi->map_cap - 1), n++) {
    mpi_dvar *d = mpi->map[i];
    if (!d)
      return NULL;
    if (d != TOMBSTONE && d->var == var)
      return &mpi->map[i];
  }
  return NULL;
}

mpi_dvar *mpi_lookup(const weft_mpi *mpi, const weft_var *var, bool live)
{
  weft_mpi *m = (weft_mpi *)mpi; /* the lock is not part of the value */
  pthread_mutex_lock(&m->map_lock);
  mpi_dvar **s = find_slot(m, var);
  mpi_dvar *d = s && !(live && (*s)->deleted) ? *s : NULL;
  pthread_mutex_unlock(&m->map_lock);
  return d;
}

/* Under map_lock: room for one more, rehashing without tombstones. */
static int map_reserve(weft_mpi *mpi)
{
  if ((mpi->map_used + 1) * 4 <= mpi->map_cap * 3)
    return 0;
  size_t cap = mpi->map_cap ? mpi->map_cap * 2 : 64;
  mpi_dvar **map = calloc(cap, sizeof *map);
  if (!map)
    return WEFT_ENOMEM;
  size_t used = 0;
  for (size_t i = 0; i < mpi->map_cap; i++) {
    mpi_dvar *d = mpi->map[i];
    if (!d || d == TOMBSTONE)
      continue;
    size_t j = slot_of(d->var, cap);
    while (map[j])
      j = (j + 1) & (cap - 1);
    map[j] = d;
    used++;
  }
  free(mpi->map);
  mpi->map = map;
  mpi->map_cap = cap;
  mpi->map_used = used;
  return 0;
}

void mpi_dvar_free(mpi_dvar *d)
{
  if (d->cache_ours && !d->abandoned) /* else MPI may still use it: left */
    free((char *)d->buf + d->span_lo); /* the block's start (submit.c) */
  free(d->valid);
  free(d);
}

void mpi_registry_after_wait(weft_mpi *mpi, bool failed)
{
  pthread_mutex_lock(&mpi->map_lock);
  for (size_t i = 0; i < mpi->map_cap; i++) {
    mpi_dvar *d = mpi->map[i];
    if (!d || d == TOMBSTONE)
      continue;
    d->failed = 0;
    if (failed) {
      memset(d->valid, 0, mpi->valid_words * sizeof *d->valid);
      d->valid[d->owner / 64] |= 1ull << (d->owner % 64);
    }
  }
  pthread_mutex_unlock(&mpi->map_lock);
}

void mpi_registry_free(weft_mpi *mpi)
{
  for (size_t i = 0; i < mpi->map_cap; i++)
    if (mpi->map[i] && mpi->map[i] != TOMBSTONE)
      mpi_dvar_free(mpi->map[i]);
  free(mpi->map);
  mpi->map = NULL;
  mpi->map_cap = mpi->map_used = 0;
}

int weft_mpi_var_register(weft_mpi *mpi, weft_var *var, int owner, void *buf, int count,
                          MPI_Datatype type)
{
  if (!mpi || !var)
    return WEFT_EINVAL;
  if (mpi->ended)
    return mpi->ended;
  if (owner < 0 || owner >= mpi->size) {
    mpi_log(mpi, "weft_mpi_var_register: owner %d is not a rank of the communicator (size %d)",
            owner, mpi->size);
    return WEFT_EINVAL;
  }
  if (count <= 0 || type == MPI_DATATYPE_NULL) {
    mpi_log(mpi, "weft_mpi_var_register: count %d: a var holds at least one element", count);
    return WEFT_EINVAL;
  }
  if (owner == mpi->rank && !buf) {
    mpi_log(mpi, "weft_mpi_var_register: var %u is owned by this rank and has no buffer",
            mpi->next_id);
    return WEFT_EINVAL;
  }
  int tsize = 0, size_rc, extent_rc, true_rc;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  pthread_mutex_lock(mpi->call_lock); /* the progress thread calls MPI too */
  size_rc = MPI_Type_size(type, &tsize);
  extent_rc = MPI_Type_get_extent(type, &lb, &extent);
  true_rc = MPI_Type_get_true_extent(type, &true_lb, &true_extent);
  pthread_mutex_unlock(mpi->call_lock);
  if (size_rc != MPI_SUCCESS || tsize <= 0 || extent_rc != MPI_SUCCESS ||
      true_rc != MPI_SUCCESS) {
    mpi_log(mpi, "weft_mpi_var_register: var %u: not a datatype, or one of size 0",
            mpi->next_id);
    return WEFT_EINVAL;
  }
  if (extent <= 0) {
    mpi_log(mpi, "weft_mpi_var_register: var %u: a datatype with extent %ld (count elements "
                 "must follow each other: extent > 0)", mpi->next_id, (long)extent);
    return WEFT_EINVAL;
  }
  ptrdiff_t span_lo = 0;
  size_t span = 0;
  if (!mpi_type_span(count, extent, true_lb, true_extent, &span_lo, &span)) {
    mpi_log(mpi, "weft_mpi_var_register: var %u: %d elements of extent %ld (true extent %ld) "
                 "span more bytes than this machine can address", mpi->next_id, count,
            (long)extent, (long)true_extent);
    return WEFT_EINVAL;
  }
  if ((long)mpi->next_id + 1 > (long)mpi->tag_ub) {
    mpi_log(mpi, "weft_mpi_var_register: more vars than the communicator has tags (%d)",
            mpi->tag_ub);
    return WEFT_EINVAL;
  }
  if (mpi_lookup(mpi, var, false)) {
    mpi_log(mpi, "weft_mpi_var_register: the var is registered already (or its deletion is "
                 "still pending)");
    return WEFT_EINVAL;
  }
  /* What the ranks compare of the datatype: its construction (typesig.c),
   * and the size, lower bound and extent MPI gives it. */
  uint64_t sig = 0;
  int sig_rc = mpi_type_signature(mpi, mpi->next_id, type, &sig);
  if (sig_rc)
    return sig_rc;
  sig = mpi_hash_fold(sig, (uint64_t)(unsigned)tsize);
  sig = mpi_hash_fold(sig, (uint64_t)(int64_t)lb);
  sig = mpi_hash_fold(sig, (uint64_t)(int64_t)extent);

  mpi_dvar *d = calloc(1, sizeof *d);
  uint64_t *valid = calloc(mpi->valid_words, sizeof *valid);
  if (!d || !valid) {
    free(d);
    free(valid);
    return WEFT_ENOMEM;
  }
  d->var = var;
  d->id = mpi->next_id;
  d->owner = owner;
  d->count = count;
  d->type = type;
  d->span_lo = span_lo;
  d->bytes = span;
  d->type_size = (size_t)count * (size_t)tsize;
  d->buf = buf;
  d->valid = valid;
  d->valid[owner / 64] |= 1ull << (owner % 64);

  pthread_mutex_lock(&mpi->map_lock);
  int rc = map_reserve(mpi);
  if (!rc) {
    size_t i = slot_of(var, mpi->map_cap);
    while (mpi->map[i] && mpi->map[i] != TOMBSTONE)
      i = (i + 1) & (mpi->map_cap - 1);
    if (!mpi->map[i])
      mpi->map_used++;
    mpi->map[i] = d;
  }
  pthread_mutex_unlock(&mpi->map_lock);
  if (rc) {
    mpi_dvar_free(d);
    return rc;
  }
  mpi->next_id++;
  mpi_seq_fold(mpi, 0x7265670000000000ull ^ ((uint64_t)d->id << 32) ^ (uint64_t)owner);
  mpi_seq_fold(mpi, mpi_hash_fold(sig, (uint64_t)(unsigned)count));
  return 0;
}

int weft_mpi_var_owner(const weft_mpi *mpi, const weft_var *var)
{
  mpi_dvar *d = mpi && var ? mpi_lookup(mpi, var, true) : NULL;
  return d ? d->owner : WEFT_EINVAL;
}

void *weft_mpi_var_data(const weft_mpi *mpi, const weft_var *var)
{
  mpi_dvar *d = mpi && var ? mpi_lookup(mpi, var, false) : NULL;
  return d ? d->buf : NULL;
}

typedef struct free_arg {
  weft_mpi *mpi;
  mpi_dvar *d;
} free_arg;

/* The operator var_delete pushes: it writes the var, so it runs after every
 * operator and transfer before it on the var (they may still look the var
 * up); it takes the dvar out of the registry and frees it. */
static int free_dvar_op(const weft_run_ctx *rc, void *arg)
{
  (void)rc;
  free_arg *f = arg;
  pthread_mutex_lock(&f->mpi->map_lock);
  mpi_dvar **s = find_slot(f->mpi, f->d->var);
  if (s)
    *s = TOMBSTONE;
  pthread_mutex_unlock(&f->mpi->map_lock);
  mpi_dvar_free(f->d);
  free(f);
  return 0;
}

int weft_mpi_var_delete(weft_mpi *mpi, weft_var *var)
{
  if (!mpi || !var)
    return WEFT_EINVAL;
  if (mpi->ended)
    return mpi->ended;
  mpi_dvar *d = mpi_lookup(mpi, var, true);
  if (!d) {
    mpi_log(mpi, "weft_mpi_var_delete: the var is not registered");
    return WEFT_EINVAL;
  }
  free_arg *f = malloc(sizeof *f);
  if (!f)
    return WEFT_ENOMEM;
  f->mpi = mpi;
  f->d = d;
  uint32_t id = d->id;
  weft_op_desc desc = {0};
  desc.fn = free_dvar_op;
  desc.arg = f;
  desc.writes = &var;
  desc.num_writes = 1;
  desc.flags = WEFT_OP_NOSKIP;
  desc.name = "weft_mpi free";
  /* Before the push: from then on the operator may free d at any time. */
  pthread_mutex_lock(&mpi->map_lock);
  d->deleted = true;
  pthread_mutex_unlock(&mpi->map_lock);
  int rc = weft_push(mpi->eng, &desc);
  if (rc) {
    pthread_mutex_lock(&mpi->map_lock);
    d->deleted = false; /* not pushed: d is still the registry's */
    pthread_mutex_unlock(&mpi->map_lock);
    free(f);
    return rc;
  }
  /* A failed weft_var_delete (WEFT_ENOMEM) leaves the var live but no longer
   * registered. */
  rc = weft_var_delete(mpi->eng, var);
  mpi_seq_fold(mpi, 0x64656c0000000000ull ^ id);
  return rc;
}
