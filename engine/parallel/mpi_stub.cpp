// Built instead of mpi_communicator.cpp when DTNN_MPI is OFF.
#include "core/error.h"
#include "parallel/communicator.h"
#include "parallel/one_sided.h"

namespace dtnn {

std::unique_ptr<Communicator> make_mpi_communicator() {
  fail("--parallel=data needs MPI, and this dtnn was built with DTNN_MPI=OFF");
}
bool mpi_available() { return false; }
std::string mpi_library_version() { return ""; }
std::unique_ptr<GeneralWindow> open_mpi_general_window(Communicator&, const float*, int64_t) {
  fail("one-sided general weights need MPI, and this dtnn was built with DTNN_MPI=OFF");
}
std::unique_ptr<BlockCounter> open_mpi_block_counter(Communicator&, int64_t) {
  fail("shared block counters need MPI, and this dtnn was built with DTNN_MPI=OFF");
}

}  // namespace dtnn
