// DTNN_MPI_CHECK(call): an MPI call whose error becomes a dtnn::Error naming the call, the file and line, and
// MPI's message. Internal to the MPI sources of parallel/.
#pragma once

#include <mpi.h>

#include "core/error.h"

#define DTNN_MPI_CHECK(call)                                                              \
  do {                                                                                    \
    const int dtnn_mpi_rc = (call);                                                       \
    if (dtnn_mpi_rc != MPI_SUCCESS) {                                                     \
      char dtnn_mpi_msg[MPI_MAX_ERROR_STRING];                                            \
      int dtnn_mpi_len = 0;                                                               \
      MPI_Error_string(dtnn_mpi_rc, dtnn_mpi_msg, &dtnn_mpi_len);                         \
      ::dtnn::fail("MPI call ", #call, " failed at ", __FILE__, ":", __LINE__, ": ", dtnn_mpi_msg); \
    }                                                                                     \
  } while (0)
