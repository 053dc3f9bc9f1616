// Communicator: the collectives data-parallel training needs, over MPI or within one process.
//
// All calls are collective (every rank calls them in the same order). Buffers are float32 and summed in
// place. Everything blocks but the request calls (start_allreduce_sum / test_request / wait_request), which
// the overlapped gradient reduction (parallel/gradient_reducer.h) uses. One-sided communication (the window
// of asynchronous merges, the claim counters of dynamic blocks) is parallel/one_sided.h's, for the strategies
// and schedules that use it. The MPI implementation exists only in builds with DTNN_MPI
// (mpi_communicator.cpp; mpi_stub.cpp otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtnn {

class Communicator {
 public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks on its node (shared-memory domain), and how many share the node:
  // the GPU a rank takes is node_rank() % devices, its default thread count cores / node_size(). The base
  // versions (one process) are rank() and size().
  virtual int node_rank() const { return rank(); }
  virtual int node_size() const { return size(); }
  // How many ranks of this node may run on some core this rank may run on (this one included): the ranks
  // sharing its CPU affinity mask. 1 when the launcher bound each rank to cores of its own; node_size() when
  // none is bound, or all share one cpuset (a container, mpirun's per-socket binding of -np > 2 on one
  // socket). The default thread count divides this rank's cores by it.
  virtual int ranks_sharing_cores() const { return node_size(); }
  virtual void allreduce_sum(float* data, int64_t count) = 0;
  virtual void broadcast(float* data, int64_t count, int root) = 0;
  virtual void broadcast_bytes(void* data, int64_t bytes, int root) = 0;
  // Sums `count` floats of GPU memory over the ranks, in place (a GPU model's gradients). This base
  // version stages them through pinned host memory and allreduce_sum() (PyDTNN's GPU path without NCCL);
  // the NCCL communicator reduces on the device. A no-op for one process. reserve_device_staging(count)
  // allocates the staging buffer up front (the trainer calls it when it is built, so no step allocates);
  // the NCCL communicator needs none.
  virtual void allreduce_sum_device(float* data, int64_t count);
  virtual void reserve_device_staging(int64_t count);
  // "NCCL 2.28.9" when device reductions use NCCL, else "".
  virtual std::string device_library() const { return ""; }
  // Device reductions only (device_library() not empty): queues the in-place sum of `count` floats of GPU
  // memory on `stream` (a cudaStream_t, e.g. gpu::SideStream's) and returns without waiting; every rank
  // queues its reductions in the same order. The base version throws (MPI reduces host memory: the staged
  // path of parallel/gpu_gradient_reducer.h).
  virtual void allreduce_sum_device_on(float* data, int64_t count, void* stream);
  virtual double max(double value) = 0;  // allreduce MAX of one value (e.g. the slowest rank's time)
  // Every rank's `count` doubles, rank-major, into all[size() * count] on every rank (the per-rank
  // communication figures of an epoch). The base version (one process) copies.
  virtual void allgather(const double* mine, int count, double* all);
  // Every rank's bytes to rank 0 (collective; at the end of a run, e.g. traces): at rank 0 `all` gets
  // size() strings, rank-major; elsewhere it is left empty. At most 2 GiB in all. The base version copies.
  virtual void gather_bytes(const std::string& mine, std::vector<std::string>& all);

  // Non-blocking in-place sums. start_allreduce_sum(slot, ...) begins summing `count` floats (at most
  // INT_MAX) over the ranks into request slot `slot` (0 <= slot < the reserved count; the slot must be
  // idle); the buffer must not be touched until wait_request(slot) returns. test_request(slot) says
  // whether it finished, and drives the library's progress: Open MPI 4.1 advances non-blocking
  // collectives only inside MPI calls, so the trainer calls it between layers. reserve_requests(n) sizes
  // the request table once (no step allocates). Every rank starts its requests in the same order. The
  // base versions (one process) have nothing to sum: a started request is already complete.
  virtual void reserve_requests(int n) {}
  virtual void start_allreduce_sum(int slot, float* data, int64_t count) {}
  // The same two sums over bfloat16 numbers (core/bf16.h; --allreduce_dtype=bfloat16): each pairwise addition
  // is done in float32 and rounded back to bf16, so a sum over n ranks is rounded n - 1 times. The base
  // versions (one process) have nothing to sum.
  virtual void allreduce_sum_bf16(uint16_t* data, int64_t count) {}
  virtual void start_allreduce_sum_bf16(int slot, uint16_t* data, int64_t count) {}
  virtual bool test_request(int slot) { return true; }
  virtual void wait_request(int slot) {}
  virtual void barrier() = 0;
  // Ends every rank after a fatal error on one (MPI_Abort); a no-op for one process.
  virtual void abort(int code) = 0;
  virtual std::string library_version() const = 0;

 private:
  float* staging_ = nullptr;  // pinned host memory (GPU builds)
  int64_t staging_count_ = 0;
};

// A single process (sequential training).
std::unique_ptr<Communicator> make_local_communicator();

// MPI_COMM_WORLD; initialises MPI on first use and finalises it when the last communicator is destroyed.
// Throws dtnn::Error in builds without MPI.
std::unique_ptr<Communicator> make_mpi_communicator();

// Wraps `base` (MPI): device reductions through NCCL on the GPU backend's stream, with the communicator
// bootstrapped by broadcasting NCCL's unique id over `base`; every other call goes to `base`, which must
// outlive it. The GPU backend must be initialised (gpu::init) on this rank's device first. Throws
// dtnn::Unsupported in builds without CUDA/NCCL.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& base);

bool mpi_available();                // this build has MPI
std::string mpi_library_version();   // "" without MPI; callable without MPI_Init

}  // namespace dtnn
