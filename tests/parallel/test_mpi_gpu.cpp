// Run under `mpirun -np 2` (ctest labels mpi and gpu): the device reductions of data-parallel GPU training
// against MPI's host allreduce on the same data.
//   - the staged path (Communicator::allreduce_sum_device: device -> pinned host -> MPI -> device), with
//     the ranks on GPU rank % devices (both may share one GPU);
//   - synchronised batch normalization on the GPU (dtnn's kernels, statistics allreduced): 2 ranks x 16
//     samples normalise like 1 x 32 on rank 0;
//   - the trainer's gradient buckets on the GPU (--non_blocking_mpi, parallel/gpu_gradient_reducer.h) against
//     its blocking reduction: a CNN with BatchNormalization, 12 steps then a short epoch that leaves rank 1
//     without samples in its last step, buckets of one per layer, 1 KiB (small layers merged) and
//     25 MiB: the weights and BN statistics bit-identical to blocking (2 ranks: a sum of two floats does not
//     depend on how the slab is cut), the ranks' weights bit-identical, and the epoch's communication
//     figures present and consistent (mode, buckets per step, every step read once, comm > 0, the epoch's
//     device step time inside the host's time around the epoch);
//   - with the argument `nccl` instead (its own ctest entries): NCCL (make_nccl_communicator), which needs a
//     GPU per rank (NCCL refuses two ranks on one GPU), for the device reduction, NCCL on a side stream
//     ordered by events (the bucketed path's calls) and the buckets; under `mpirun -np 1` the first two
//     only (a 1-rank NCCL communicator: the calls and their order, on a machine with one GPU).
// Without a CUDA device (or a CUDA build), or `nccl` with fewer GPUs than ranks, it prints why and exits
// 77 (tests/skip.h: ctest reports it skipped). Else prints "N passed, M failed" and exits 0/1.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/rng.h"
#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "skip.h"
#include "train/trainer.h"

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

// NCCL on a side stream as the bucketed path queues it (parallel/gpu_gradient_reducer.cpp): the compute stream
// produces the data (a kernel), the side stream waits for it by an event, NCCL sums in place there and the
// side stream marks; the compute stream waits for the mark and consumes the sum (a second kernel). The host
// waits only at the end, so a missing order shows as a wrong value. With 1 rank (the only NCCL run one GPU
// allows) the sum is the data itself: that run checks the calls, their order and NCCL's completion on the
// side stream, not several ranks' arithmetic.
void side_stream_reduction(Communicator& nccl, Communicator& mpi) {
  const int64_t n = int64_t{1} << 22;  // 16 MiB: a kernel long enough to be caught half-way by a missing wait
  Tensor d = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu), out = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu);
  gpu::SideStream side(1);
  std::vector<float> got(n);
  bool ok = true;
  for (int round = 0; round < 3; ++round) {  // the events and stream reused, as every step reuses them
    const float mine = 1.0f + static_cast<float>(mpi.rank()) + static_cast<float>(round);
    gpu::fill(d.data(), mine, n);  // compute stream
    side.wait_compute(0);
    nccl.allreduce_sum_device_on(d.data(), n, side.handle());
    side.mark(0);
    side.compute_waits(0);
    gpu::fill(out.data(), 0.0f, n);
    gpu::add_into(out.data(), d.data(), n);  // compute stream: out = the sum
    gpu::copy_to_host(got.data(), out.data(), n * sizeof(float));  // waits for the compute stream
    float expected = mine;
    mpi.allreduce_sum(&expected, 1);
    for (int64_t i = 0; i < n && ok; ++i) ok = got[i] == expected;
    ok = ok && side.passed(0);
  }
  check(ok, "NCCL on a side stream, ordered by events both ways, 3 rounds", 0.0);
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

struct BucketRun {
  std::vector<float> params, state;
  EpochComm comm;
  int64_t samples = 0;
  double wall_s = 0.0;  // the host's clock around run_epoch: the epoch's device time must fit inside it
};

// One epoch on the GPU: `steps` steps of 16 per rank (0: the whole pool of `pool` samples).
BucketRun gpu_epoch(Communicator& comm, bool non_blocking, double bucket_mb, int64_t steps, int64_t pool) {
  TrainOptions o;
  o.batch_size = 16;
  o.steps_per_epoch = steps;
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = 0.05;
  o.optimizer.momentum = 0.9;
  o.seed = 3;
  o.enable_gpu = true;
  o.non_blocking_mpi = non_blocking;
  o.gradient_bucket_mb = bucket_mb;
  o.gradient_buckets_min = 1;  // the caps alone: the bucket counts below are worked out for them
  auto m = std::make_unique<Model>("gpu_bucket_cnn");
  m->add(make_input(28, 28, 1));
  Conv2DSpec conv;
  conv.nfilters = 8;
  conv.padding = 1;
  m->add(make_conv2d(conv));
  m->add(make_batchnorm(), "relu");
  Pool2DSpec pool2;
  pool2.stride = 2;
  m->add(make_max_pool2d(pool2));
  m->add(make_conv2d(conv), "relu");
  m->add(make_flatten());
  m->add(make_fc(32), "relu");
  m->add(make_fc(10), "softmax");
  BuildContext ctx;
  ctx.max_batch = o.batch_size;
  ctx.device = Device::gpu;
  ctx.conv_algo = "gpu.cudnn.pydtnn_fixed";  // deterministic cuDNN algorithms: runs comparable bit for bit
  m->build(ctx, o.seed, Trainer::reduce_tail_floats(o));
  m->seed_layers(o.seed, comm.rank());
  share_root_weights(*m, comm);
  DatasetShape shape = dataset_shape("mnist");
  if (pool > 0) shape.train_count = pool;
  auto data = make_synthetic(shape, 1);
  auto opt = make_optimizer(o.optimizer, m->slab_size(), Device::gpu);
  Trainer trainer(*m, *data, comm, *opt, o);
  const double t0 = now_s();
  const EpochRecord rec = trainer.run_epoch(1, 1, make_splits(*data, 0.0, false, o.seed));
  const double wall_s = now_s() - t0;
  m->download();
  BucketRun r;
  r.params.assign(m->host_param_slab(), m->host_param_slab() + m->slab_size());
  r.state.assign(m->host_state_slab(), m->host_state_slab() + m->state_size());
  r.comm = rec.comm;
  r.samples = rec.train.samples;
  r.wall_s = wall_s;
  return r;
}

void buckets(Communicator& comm, Communicator& mpi, const char* path) {
  for (int64_t pool : {int64_t{0}, int64_t{2 * 16 * 3 + 1}}) {  // 12 steps; 3 full steps and one sample
    const int64_t steps = pool ? 0 : 12;
    const int64_t want_steps = pool ? 4 : 12;  // 2 ranks x 16: 97 samples are 3 full steps and one of 1
    const BucketRun blocking = gpu_epoch(comm, false, 25.0, steps, pool);
    const bool ok_b = blocking.comm.mode == "blocking" && blocking.comm.buckets_per_step == 1 &&
                      blocking.comm.steps == want_steps && blocking.comm.rank0.comm_s > 0 &&
                      blocking.comm.rank0.exposed_s > 0 && blocking.comm.rank0.exposed_s <= blocking.comm.rank0.step_s &&
                      blocking.comm.rank0.step_s <= blocking.wall_s;
    check(ok_b, "blocking GPU run: mode 'blocking', 1 bucket, every step read once, communication measured",
          blocking.comm.rank0.comm_s);
    // Buckets counted by hand (reverse layer order, layers never split, the tail with the first; tensors take
    // multiples of 16 floats in the slab): fc10 336 floats, fc32 50,208, conv2 592, BN 32, conv1 96. Per
    // layer: 5. 1 KiB (256 floats): fc10, fc32 and conv2 close one each, BN + conv1 the last: 4. 25 MiB (the
    // first at most 1 MiB): all in one. tests/train/test_buckets.cpp checks the same plan on the CPU.
    const std::pair<double, int64_t> caps[] = {{0.0, 5}, {1.0 / 1024, 4}, {25.0, 1}};
    for (const auto& [mb, want_buckets] : caps) {
      const BucketRun nb = gpu_epoch(comm, true, mb, steps, pool);
      const bool bitwise = nb.params == blocking.params && nb.state == blocking.state;
      std::vector<float> root = nb.params;
      mpi.broadcast(root.data(), static_cast<int64_t>(root.size()), 0);
      const bool ranks_same = mpi.max(root == nb.params ? 0.0 : 1.0) == 0.0;
      const RankTimes& t = nb.comm.rank0;
      // compute = step - exposed by definition on the GPU: what can go wrong is a step lost or read twice by
      // the two-step lag of the event reads, a span that ends before it begins, or a wrong unit: the device
      // time of the epoch's steps, queued and read back inside run_epoch, must fit in the host's time around it.
      const bool figures = nb.comm.mode == "non_blocking" && nb.comm.buckets_per_step == want_buckets &&
                           nb.comm.steps == want_steps && t.comm_s > 0 && t.step_s > 0 && t.exposed_s >= 0 &&
                           t.exposed_s <= t.step_s && t.step_s <= nb.wall_s && nb.samples == blocking.samples;
      if (mpi.rank() == 0)
        std::printf("%s buckets of %g MiB (%lld per step), %s: weights %s blocking (max rel %.3g), BN statistics %s; "
                    "ranks %s; rank 0 per epoch: step %.4f s, compute %.4f s, comm %.4f s, exposed %.4f s "
                    "(blocking: exposed %.4f s)\n",
                    path, mb, static_cast<long long>(nb.comm.buckets_per_step), pool ? "short last step" : "12 steps",
                    nb.params == blocking.params ? "=" : "!=", test::max_rel_error(nb.params, blocking.params),
                    nb.state == blocking.state ? "=" : "!=", ranks_same ? "identical" : "DIFFER", t.step_s,
                    t.compute_s, t.comm_s, t.exposed_s, blocking.comm.rank0.exposed_s);
      std::fflush(stdout);  // a configuration that hangs after this one is the next, not this
      check(bitwise, "GPU buckets: weights and BN statistics bit-identical to blocking", test::max_rel_error(nb.params, blocking.params));
      check(ranks_same, "GPU buckets: the ranks' weights bit-identical", 0.0);
      check(figures, "GPU buckets: communication figures (mode, buckets counted by hand, every step read once, "
                     "comm > 0, 0 <= exposed <= step <= the host's epoch time)", t.comm_s);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<Communicator> mpi;
  try {
    const bool nccl_part = argc > 1 && std::string(argv[1]) == "nccl";
    mpi = make_mpi_communicator();
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
      side_stream_reduction(*nccl, *mpi);
      if (mpi->size() > 1) {
        buckets(*nccl, *mpi, "NCCL");
      } else {  // the trainer reduces nothing on one rank: its buckets need two
        std::printf("NCCL at 1 rank: the API calls and stream order only; the buckets need 2 ranks, 2 GPUs\n");
      }
    } else {
      reduction(*mpi, *mpi, "staged device allreduce = MPI host allreduce");
      sync_batchnorm(*mpi);
      buckets(*mpi, *mpi, "MPI-staged");
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
    // The other rank may be inside a collective this one will never join: end the job rather than let both
    // wait for the test's timeout.
    if (mpi && mpi->size() > 1) mpi->abort(1);
    return 1;
  }
}
