/* SPDX-License-Identifier: MIT */
/*
 * weft_mpi_attach refuses MPI initialized below MPI_THREAD_SERIALIZED (its
 * progress thread makes the MPI calls), with WEFT_EINVAL and no attachment.
 */
#include <stdio.h>

#include <weft/weft_mpi.h>

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  weft_engine *eng = NULL;
  weft_mpi *mpi = (weft_mpi *)&provided;
  int made = weft_engine_create(&eng, NULL);
  int rc = weft_mpi_attach(eng, MPI_COMM_WORLD, NULL, &mpi);
  printf("1..1\n%sok 1 - attach under MPI_THREAD_FUNNELED returns WEFT_EINVAL (%d)\n",
         made == 0 && rc == WEFT_EINVAL && mpi == NULL ? "" : "not ", rc);
  weft_engine_destroy(eng);
  MPI_Finalize();
  return 0;
}
