#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "parallel/communicator.h"
#include "parallel/init_watchdog.h"
#include "parallel/mpi_check.h"

namespace dtnn {
namespace {

constexpr int64_t kChunk = INT_MAX;  // MPI counts are int

// MPI's user operation summing bf16 numbers (MPI_UINT16_T carries them): added in float32, rounded back.
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = to_bf16(from_bf16(a[i]) + from_bf16(b[i]));
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    // Joining waits for every rank (MPI_Init, then the first collective): bounded, so that a rank that never
    // comes does not hold this one forever.
    const InitWatchdog watchdog(mpi_init_timeout_s(), "joining the MPI job (MPI_Init)");
    int initialized = 0;
    DTNN_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      int provided = 0;
      DTNN_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
      owns_init_ = true;
      // The loader's and OpenMP's threads run beside the MPI calls, which only the main thread makes.
      DTNN_CHECK(provided >= MPI_THREAD_FUNNELED, "the MPI library gives thread level ", provided,
                 ", below MPI_THREAD_FUNNELED: dtnn's loader and OpenMP threads need it");
    }
    DTNN_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    DTNN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    MPI_Comm node;  // the ranks sharing this one's memory, whatever the launcher (mpirun, srun, hydra)
    DTNN_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    DTNN_MPI_CHECK(MPI_Comm_rank(node, &node_rank_));
    DTNN_MPI_CHECK(MPI_Comm_size(node, &node_size_));
    ranks_sharing_cores_ = count_sharing_cores(node, node_size_);
    DTNN_MPI_CHECK(MPI_Comm_free(&node));
    DTNN_MPI_CHECK(MPI_Op_create(&sum_bf16, 1, &sum_bf16_));
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (sum_bf16_ != MPI_OP_NULL && !finalized) MPI_Op_free(&sum_bf16_);
    if (owns_init_ && !finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_rank() const override { return node_rank_; }
  int node_size() const override { return node_size_; }
  int ranks_sharing_cores() const override { return ranks_sharing_cores_; }

  void allreduce_sum(float* data, int64_t count) override {
    for (int64_t done = 0; done < count; done += INT_MAX) {
      const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      DTNN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    }
  }
  void allreduce_sum_bf16(uint16_t* data, int64_t count) override {
    for (int64_t done = 0; done < count; done += INT_MAX) {
      const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      DTNN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_UINT16_T, bf16_op(), MPI_COMM_WORLD));
    }
  }
  void broadcast(float* data, int64_t count, int root) override {
    for (int64_t done = 0; done < count; done += INT_MAX) {
      const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      DTNN_MPI_CHECK(MPI_Bcast(data + done, n, MPI_FLOAT, root, MPI_COMM_WORLD));
    }
  }
  void broadcast_bytes(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    for (int64_t done = 0; done < bytes; done += INT_MAX) {
      const int n = static_cast<int>(std::min<int64_t>(bytes - done, INT_MAX));
      DTNN_MPI_CHECK(MPI_Bcast(p + done, n, MPI_BYTE, root, MPI_COMM_WORLD));
    }
  }
  double max(double value) override {
    double out = value;
    DTNN_MPI_CHECK(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return out;
  }
  void allgather(const double* mine, int count, double* all) override {
    DTNN_MPI_CHECK(MPI_Allgather(mine, count, MPI_DOUBLE, all, count, MPI_DOUBLE, MPI_COMM_WORLD));
  }
  void gather_bytes(const std::string& mine, std::vector<std::string>& all) override {
    const int64_t n = static_cast<int64_t>(mine.size());
    std::vector<int64_t> sizes(static_cast<size_t>(size_));
    DTNN_MPI_CHECK(MPI_Gather(&n, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, 0, MPI_COMM_WORLD));
    std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[r] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
      counts[r] = static_cast<int>(std::min<int64_t>(sizes[r], INT_MAX));
      total += sizes[r];
    }
    // Rank 0 alone knows the total: it says whether the gather can go ahead, so no rank is left waiting.
    double ok = rank_ != 0 || total <= INT_MAX ? 1.0 : 0.0;
    DTNN_MPI_CHECK(MPI_Bcast(&ok, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (ok != 1.0) fail("gathering ", total, " bytes at rank 0: more than 2 GiB");
    std::string buffer(rank_ == 0 ? static_cast<size_t>(total) : 0, '\0');
    DTNN_MPI_CHECK(MPI_Gatherv(mine.data(), static_cast<int>(n), MPI_BYTE, buffer.data(), counts.data(), displs.data(),
                               MPI_BYTE, 0, MPI_COMM_WORLD));
    all.clear();
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r) all.push_back(buffer.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(counts[r])));
  }
  void reserve_requests(int n) override {
    if (n > static_cast<int>(requests_.size())) requests_.resize(static_cast<size_t>(n), MPI_REQUEST_NULL);
  }
  void start_allreduce_sum(int slot, float* data, int64_t count) override {
    DTNN_ASSERT(slot >= 0 && slot < static_cast<int>(requests_.size()) && requests_[slot] == MPI_REQUEST_NULL &&
                count <= INT_MAX);
    DTNN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                  &requests_[slot]));
  }
  void start_allreduce_sum_bf16(int slot, uint16_t* data, int64_t count) override {
    DTNN_ASSERT(slot >= 0 && slot < static_cast<int>(requests_.size()) && requests_[slot] == MPI_REQUEST_NULL &&
                count <= INT_MAX);
    DTNN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_UINT16_T, bf16_op(),
                                  MPI_COMM_WORLD, &requests_[slot]));
  }
  bool test_request(int slot) override {
    int done = 0;
    DTNN_MPI_CHECK(MPI_Test(&requests_[slot], &done, MPI_STATUS_IGNORE));  // a finished request becomes NULL
    return done != 0;
  }
  void wait_request(int slot) override { DTNN_MPI_CHECK(MPI_Wait(&requests_[slot], MPI_STATUS_IGNORE)); }
  void barrier() override { DTNN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); }
  void abort(int code) override {
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::string library_version() const override { return mpi_library_version(); }

 private:
  MPI_Op bf16_op() const { return sum_bf16_; }
  MPI_Op sum_bf16_ = MPI_OP_NULL;  // sum_bf16 as an MPI operation (commutative), for the communicator's life
  // The node's ranks whose affinity masks meet this rank's (Communicator::ranks_sharing_cores), from one
  // allgather of the masks when the communicator is built.
  static int count_sharing_cores(MPI_Comm node, int node_size) {
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (::sched_getaffinity(0, sizeof mine, &mine) != 0) return node_size;  // unknown: assume all share
    std::vector<cpu_set_t> all(static_cast<size_t>(node_size));
    DTNN_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node));
    int sharing = 0;
    for (cpu_set_t& other : all) {
      cpu_set_t both;
      CPU_AND(&both, &mine, &other);
      if (CPU_COUNT(&both) > 0) ++sharing;
    }
    return std::max(1, sharing);
  }

  int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1, ranks_sharing_cores_ = 1;
  bool owns_init_ = false;
  std::vector<MPI_Request> requests_;  // reserve_requests(); MPI_REQUEST_NULL when idle
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

bool mpi_available() { return true; }

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string s(version, static_cast<size_t>(len));
  const auto comma = s.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  return comma == std::string::npos ? s : s.substr(0, comma);
}

}  // namespace dtnn
