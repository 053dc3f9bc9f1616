// NCCL device reductions (--enable_nccl), bootstrapped over MPI.
#include <nccl.h>

#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"
#include "parallel/communicator.h"

#define DTNN_NCCL_CHECK(expr)                                                                             \
  do {                                                                                                    \
    const ncclResult_t dtnn_status_ = (expr);                                                             \
    if (dtnn_status_ != ncclSuccess)                                                                      \
      ::dtnn::fail("NCCL error ", ncclGetErrorString(dtnn_status_), " in ", #expr, " at ", __FILE__, ":", \
                   __LINE__, " (", ncclGetLastError(nullptr), ")");                                      \
  } while (0)

namespace dtnn {
namespace {

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(Communicator& base) : base_(base) {
    DTNN_CHECK(gpu::initialised(), "NCCL needs the GPU backend initialised on this rank's device first");
    ncclUniqueId id;
    if (base.rank() == 0) DTNN_NCCL_CHECK(ncclGetUniqueId(&id));
    base.broadcast_bytes(&id, sizeof id, 0);
    DTNN_NCCL_CHECK(ncclCommInitRank(&comm_, base.size(), id, base.rank()));
    int v = 0;
    ncclGetVersion(&v);
    version_ = "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }

  int rank() const override { return base_.rank(); }
  int size() const override { return base_.size(); }
  int node_rank() const override { return base_.node_rank(); }
  int node_size() const override { return base_.node_size(); }
  void allreduce_sum(float* data, int64_t count) override { base_.allreduce_sum(data, count); }
  void broadcast(float* data, int64_t count, int root) override { base_.broadcast(data, count, root); }
  void broadcast_bytes(void* data, int64_t bytes, int root) override { base_.broadcast_bytes(data, bytes, root); }
  void allreduce_sum_device(float* data, int64_t count) override {
    // NCCL reports failures of earlier (asynchronous) operations, a peer's network error, only here.
    ncclResult_t earlier = ncclSuccess;
    DTNN_NCCL_CHECK(ncclCommGetAsyncError(comm_, &earlier));
    DTNN_NCCL_CHECK(earlier);
    DTNN_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum, comm_,
                                  static_cast<cudaStream_t>(gpu::stream_handle())));
  }
  void allreduce_sum_device_on(float* data, int64_t count, void* stream) override {
    ncclResult_t earlier = ncclSuccess;  // a peer's failure, reported here rather than as a hang
    DTNN_NCCL_CHECK(ncclCommGetAsyncError(comm_, &earlier));
    DTNN_NCCL_CHECK(earlier);
    DTNN_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum, comm_,
                                  static_cast<cudaStream_t>(stream)));
  }
  void reserve_device_staging(int64_t) override {}  // reduces in place on the device
  std::string device_library() const override { return version_; }
  double max(double value) override { return base_.max(value); }
  void allgather(const double* mine, int count, double* all) override { base_.allgather(mine, count, all); }
  void gather_bytes(const std::string& mine, std::vector<std::string>& all) override { base_.gather_bytes(mine, all); }
  void reserve_requests(int n) override { base_.reserve_requests(n); }
  void start_allreduce_sum(int slot, float* data, int64_t count) override { base_.start_allreduce_sum(slot, data, count); }
  bool test_request(int slot) override { return base_.test_request(slot); }
  void wait_request(int slot) override { base_.wait_request(slot); }
  void barrier() override { base_.barrier(); }
  void abort(int code) override { base_.abort(code); }
  std::string library_version() const override { return base_.library_version(); }

 private:
  Communicator& base_;
  ncclComm_t comm_ = nullptr;
  std::string version_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& base) {
  return std::make_unique<NcclCommunicator>(base);
}

}  // namespace dtnn
