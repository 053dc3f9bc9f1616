// Communicator: the collectives data-parallel training needs, over MPI or within one process.
//
// All calls are collective (every rank calls them in the same order) and blocking. Buffers are float32
// and summed in place. The MPI implementation exists only in builds with DTNN_MPI (mpi_communicator.cpp;
// mpi_stub.cpp otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dtnn {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void allreduce_sum(float* data, int64_t count) = 0;
  virtual void broadcast(float* data, int64_t count, int root) = 0;
  virtual double max(double value) = 0;  // allreduce MAX of one value (e.g. the slowest rank's time)
  virtual void barrier() = 0;
  // Ends every rank after a fatal error on one (MPI_Abort); a no-op for one process.
  virtual void abort(int code) = 0;
  virtual std::string library_version() const = 0;
};

// A single process (sequential training).
std::unique_ptr<Communicator> make_local_communicator();

// MPI_COMM_WORLD; initialises MPI on first use and finalises it when the last communicator is destroyed.
// Throws dtnn::Error in builds without MPI.
std::unique_ptr<Communicator> make_mpi_communicator();

bool mpi_available();                // this build has MPI
std::string mpi_library_version();   // "" without MPI; callable without MPI_Init

}  // namespace dtnn
