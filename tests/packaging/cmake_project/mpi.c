/* SPDX-License-Identifier: MIT */
/* Built against an installed libweft_mpi with CMake (weft::weft_mpi: libweft,
 * libweft_mpi and MPI, <mpi.h> on the include path). Run without mpirun and
 * without MPI_Init: weft_mpi_config_default, MPI_Initialized (which MPI
 * allows before MPI_Init) and weft_version; weft_mpi_attach, which takes MPI
 * types, is only linked. */
#include <weft/weft_mpi.h>
#include <stdio.h>
#include <string.h>

#ifndef MPI_VERSION
#error "<mpi.h> was not found: weft::weft_mpi must bring MPI's include directory"
#endif

int main(int argc, char **argv)
{
  (void)argv;
  weft_mpi_config c;
  memset(&c, 0x55, sizeof c);
  weft_mpi_config_default(&c);
  int initialized = -1;
  int rc = MPI_Initialized(&initialized);
  if (argc > 100) /* never: makes the program link weft_mpi_attach */
    return weft_mpi_attach(NULL, MPI_COMM_WORLD, &c, NULL);
  int ok = c.timeout_ms == -1 && c.reserved[0] == NULL && rc == MPI_SUCCESS && initialized == 0 &&
           strcmp(weft_version(), WEFT_VERSION_STRING) == 0;
  printf("consumer_mpi: weft %s, weft_mpi_config_default: timeout_ms %d, MPI_Initialized: %d\n",
         weft_version(), c.timeout_ms, initialized);
  return !ok;
}
