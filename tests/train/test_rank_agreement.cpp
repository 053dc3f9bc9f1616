// The options ranks of one job must share (train/rank_agreement.h collective_options): devices are free (a
// GPU rank beside CPU ranks), except where their collectives come in another order: synchronised BN with
// non-blocking buckets (a CPU rank starts its buckets inside backward, between BN's allreduces; a GPU rank
// after them). The collective check itself runs under mpirun in tests/parallel (mpi.train_cli_2_ranks).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "train/options.h"
#include "train/rank_agreement.h"

using namespace dtnn;

namespace {
// The first line where two ranks' lists differ, or "" when they agree.
std::string first_difference(const TrainOptions& a, const TrainOptions& b) {
  const std::vector<std::string> x = collective_options(a), y = collective_options(b);
  for (size_t i = 0; i < x.size() && i < y.size(); ++i)
    if (x[i] != y[i]) return x[i] + " | " + y[i];
  return x.size() == y.size() ? "" : "(lengths differ)";
}
}  // namespace

TEST_CASE("rank agreement: a GPU rank may join CPU ranks unless synchronised BN meets non-blocking buckets",
          "[train][ranks]") {
  TrainOptions cpu;
  cpu.model_name = "resnet18_d2l";
  cpu.tensor_format = "NHWC";  // AUTO resolves per device (NHWC on the CPU, NCHW on the GPU): an MPMD job names one
  TrainOptions gpu = cpu;
  gpu.enable_gpu = true;
  gpu.threads = 7;  // threads are a rank's own too
  SECTION("blocking, synchronised BN: the same collectives in the same order") {
    cpu.sync_batchnorm = gpu.sync_batchnorm = true;
    CHECK(first_difference(cpu, gpu).empty());
  }
  SECTION("non-blocking, BN per rank: no collective inside backward but the buckets'") {
    cpu.non_blocking_mpi = gpu.non_blocking_mpi = true;
    CHECK(first_difference(cpu, gpu).empty());
  }
  SECTION("non-blocking and synchronised BN: refused, naming the device and why") {
    cpu.sync_batchnorm = gpu.sync_batchnorm = true;
    cpu.non_blocking_mpi = gpu.non_blocking_mpi = true;
    const std::string d = first_difference(cpu, gpu);
    CHECK(d.find("--enable_gpu=False") != std::string::npos);
    CHECK(d.find("--enable_gpu=True") != std::string::npos);
    CHECK(d.find("--sync_batchnorm with --non_blocking_mpi") != std::string::npos);
    gpu.enable_gpu = false;  // two CPU ranks of that job agree
    CHECK(first_difference(cpu, gpu).empty());
  }
  SECTION("a rank's update rule is not its own") {
    gpu.optimizer.learning_rate = cpu.optimizer.learning_rate * 2;
    CHECK(first_difference(cpu, gpu).find("--learning_rate=") == 0);
  }
}
