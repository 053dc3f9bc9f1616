// Run under `mpirun -np 2` (ctest labels mpi and gpu): the device reductions of data-parallel GPU training
// against MPI's host allreduce on the same data.
//   - the staged path (Communicator::allreduce_sum_device: device -> pinned host -> MPI -> device), with
//     the ranks on GPU rank % devices (both may share one GPU);
//   - synchronised batch normalization on the GPU (dtnn's kernels, statistics allreduced): 2 ranks x 16
//     samples normalise like 1 x 32 on rank 0;
//   - with the argument `nccl` instead (its own ctest entry): NCCL (make_nccl_communicator), which needs a
//     GPU per rank (NCCL refuses two ranks on one GPU).
// Without a CUDA device (or a CUDA build), or `nccl` with fewer GPUs than ranks, it prints why and exits
// 77 (tests/skip.h: ctest reports it skipped). Else prints "N passed, M failed" and exits 0/1.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "helpers.h"
#include "skip.h"
#include "parallel/communicator.h"

using namespace dtnn;

namespace {

int passed = 0, failed = 0;

void check(bool ok, const char* what, double value) {
  ok ? ++passed : ++failed;
  if (!ok) std::printf("FAILED: %s (%g)\n", what, value);
}

// Every rank's values differ; the sum is what MPI computes on the host.
void reduction(Communicator& device_comm, Communicator& mpi, const char* what) {
  const int64_t n = 100003;
  std::vector<float> v(n);
  Rng rng(7 + static_cast<uint64_t>(mpi.rank()));
  for (float& x : v) x = rng.uniform_f() - 0.5f;
  std::vector<float> expected = v;
  mpi.allreduce_sum(expected.data(), n);
  Tensor d = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu);
  gpu::copy_to_device_sync(d.data(), v.data(), n * sizeof(float));
  device_comm.reserve_device_staging(n);
  device_comm.allreduce_sum_device(d.data(), n);
  std::vector<float> got(n);
  gpu::copy_to_host(got.data(), d.data(), n * sizeof(float));
  check(test::max_rel_error(got, expected) <= 1e-6, what, test::max_rel_error(got, expected));
}

// Synchronised BN: each rank holds half of a 32-sample batch; rank 0 also normalises all of it alone.
void sync_batchnorm(Communicator& mpi) {
  BatchNormShape s;
  s.layout = Layout::nchw;
  s.c = 5;
  s.h = 6;
  s.w = 4;
  s.max_batch = 32;
  const int64_t per = s.c * s.h * s.w, half = 16;
  std::vector<float> all(32 * per), gb(2 * s.c, 1.0f);
  Rng rng(11);  // the same data on every rank
  for (float& x : all) x = 3.0f * rng.uniform_f() - 1.0f;
  for (int64_t c = 0; c < s.c; ++c) gb[c] = 0.5f + 0.1f * c, gb[s.c + c] = 0.05f * c;
  const auto dev = [](const std::vector<float>& h) {
    Tensor t = Tensor::zeros(Shape{static_cast<int64_t>(h.size())}, Layout::flat, Device::gpu);
    gpu::copy_to_device_sync(t.data(), h.data(), h.size() * sizeof(float));
    return t;
  };
  std::vector<float> stats(2 * s.c, 0.0f);
  for (int64_t c = 0; c < s.c; ++c) stats[s.c + c] = 1.0f;
  auto reduce = [](void* ctx, float* values, int64_t count) {
    static_cast<Communicator*>(ctx)->allreduce_sum_device(values, count);
  };
  const int r = mpi.rank();
  std::vector<float> mine(all.begin() + r * half * per, all.begin() + (r + 1) * half * per);
  Tensor x = dev(mine), y = dev(mine), gamma_beta = dev(gb), st = dev(stats);
  auto op = gpu::make_batchnorm(s, +reduce, &mpi);
  op->forward_training(half, x.data(), y.data(), gamma_beta.data(), gamma_beta.data() + s.c, st.data(),
                       st.data() + s.c);
  std::vector<float> out(mine.size()), running(2 * s.c);
  gpu::copy_to_host(out.data(), y.data(), out.size() * sizeof(float));
  gpu::copy_to_host(running.data(), st.data(), running.size() * sizeof(float));
  // Rank 0's reference: all 32 samples through cuDNN's (single-rank) batch normalization.
  std::vector<float> ref_out(all.size()), ref_running(2 * s.c);
  if (r == 0) {
    Tensor rx = dev(all), ry = dev(all), rst = dev(stats);
    auto ref = gpu::make_batchnorm(s, nullptr, nullptr);
    ref->forward_training(32, rx.data(), ry.data(), gamma_beta.data(), gamma_beta.data() + s.c, rst.data(),
                          rst.data() + s.c);
    gpu::copy_to_host(ref_out.data(), ry.data(), ref_out.size() * sizeof(float));
    gpu::copy_to_host(ref_running.data(), rst.data(), ref_running.size() * sizeof(float));
  }
  mpi.broadcast(ref_out.data(), static_cast<int64_t>(ref_out.size()), 0);
  mpi.broadcast(ref_running.data(), static_cast<int64_t>(ref_running.size()), 0);
  const std::vector<float> ref_mine(ref_out.begin() + r * half * per, ref_out.begin() + (r + 1) * half * per);
  check(test::max_rel_error(out, ref_mine) <= 1e-5, "synchronised BN output = the whole batch's", test::max_rel_error(out, ref_mine));
  check(test::max_rel_error(running, ref_running) <= 1e-5, "synchronised BN running statistics", test::max_rel_error(running, ref_running));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const bool nccl_part = argc > 1 && std::string(argv[1]) == "nccl";
    auto mpi = make_mpi_communicator();
    const int devices = gpu_device_count();
    // Every rank sees the same devices, so all ranks skip together (mpirun passes the 77 on).
    if (!gpu_built() || devices == 0) {
      if (mpi->rank() == 0) std::fprintf(stderr, "SKIPPED: no CUDA device (%s)\n", gpu_description().c_str());
      return test::kSkipExit;
    }
    if (nccl_part && devices < mpi->size()) {
      if (mpi->rank() == 0)
        std::fprintf(stderr, "SKIPPED: %d GPU(s) for %d ranks (NCCL needs one GPU per rank)\n", devices, mpi->size());
      return test::kSkipExit;
    }
    gpu::init(mpi->rank() % devices);
    if (nccl_part) {
      auto nccl = make_nccl_communicator(*mpi);
      reduction(*nccl, *mpi, "NCCL allreduce = MPI host allreduce");
    } else {
      reduction(*mpi, *mpi, "staged device allreduce = MPI host allreduce");
      sync_batchnorm(*mpi);
    }
    const double total_failed = [&] {
      float f = static_cast<float>(failed);
      mpi->allreduce_sum(&f, 1);
      return f;
    }();
    if (mpi->rank() == 0) std::printf("%d passed, %d failed (all ranks: %g failed)\n", passed, failed, total_failed);
    return total_failed > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_mpi_gpu: %s\n", e.what());
    return 1;
  }
}
