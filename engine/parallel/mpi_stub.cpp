// Built instead of mpi_communicator.cpp when DTNN_MPI is OFF.
#include "core/error.h"
#include "parallel/communicator.h"

namespace dtnn {

std::unique_ptr<Communicator> make_mpi_communicator() {
  fail("--parallel=data needs MPI, and this dtnn was built with DTNN_MPI=OFF");
}
bool mpi_available() { return false; }
std::string mpi_library_version() { return ""; }

}  // namespace dtnn
