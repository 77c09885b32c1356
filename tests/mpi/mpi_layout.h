/* SPDX-License-Identifier: MIT */
/*
 * A datatype's layout as MPI itself describes it, for the suites that move
 * derived datatypes (test_mpi_types.c, test_mpi_type_match.c): the span of
 * count elements and a mask of the bytes that hold data. Described before
 * the attachment (no MPI call may overlap the progress thread's afterwards).
 */
#ifndef WEFT_TESTS_MPI_LAYOUT_H
#define WEFT_TESTS_MPI_LAYOUT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_tap.h"

typedef struct layout {
  MPI_Datatype type;
  int count;
  ptrdiff_t lo; /* the span: [origin + lo, origin + lo + bytes) */
  size_t bytes;
  unsigned char *mask; /* bytes: 1 where the type has data */
} layout;

/* The span and data mask of count elements of type (committed), from
 * MPI_Unpack of all-ones bytes; checks that the mask holds exactly count *
 * the type's size bytes. False if an allocation failed (checked). */
static inline bool describe(mt_ctx *t, layout *l, MPI_Datatype type, int count)
{
  MPI_Aint lb, extent, tlb, textent;
  MPI_Type_get_extent(type, &lb, &extent);
  MPI_Type_get_true_extent(type, &tlb, &textent);
  l->type = type;
  l->count = count;
  l->lo = tlb < 0 ? (ptrdiff_t)tlb : 0;
  ptrdiff_t hi = (ptrdiff_t)tlb + (ptrdiff_t)(count - 1) * (ptrdiff_t)extent + (ptrdiff_t)textent;
  l->bytes = (size_t)((hi > 0 ? hi : 0) - l->lo);
  l->mask = calloc(l->bytes, 1);
  int packed = 0;
  MPI_Pack_size(count, type, MPI_COMM_SELF, &packed);
  unsigned char *ones = malloc((size_t)packed);
  MT_CHECK(t, l->mask && ones, "allocation");
  if (!l->mask || !ones) {
    free(ones);
    return false;
  }
  memset(ones, 0xff, (size_t)packed);
  int pos = 0;
  MPI_Unpack(ones, packed, &pos, l->mask - l->lo, count, type, MPI_COMM_SELF);
  free(ones);
  size_t data = 0;
  for (size_t k = 0; k < l->bytes; k++) {
    l->mask[k] = l->mask[k] != 0;
    data += l->mask[k];
  }
  int tsize = 0;
  MPI_Type_size(type, &tsize);
  /* Every data byte unpacked as 0xff: the mask holds exactly size bytes. */
  MT_CHECK(t, data == (size_t)count * (size_t)tsize, "mask of %zu bytes, the type has %zu", data,
           (size_t)count * (size_t)tsize);
  return true;
}

#endif /* WEFT_TESTS_MPI_LAYOUT_H */
