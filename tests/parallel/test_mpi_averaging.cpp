// Run under `mpirun -np 2`: synchronous model averaging every 3 steps (local SGD) on dislib's blocks. Each
// rank trains 2 epochs of 3 local steps of 8 samples with the Trainer (--model_averaging=synchronous,
// --average_every_steps=3, unshuffled blocks: rank r owns samples [40r, 40r + 40) of 80) and, beside it,
// hand-runs the same local steps on a second copy of the model with the model's own forward/backward and
// the optimizer (not the trainer): the reference's weights, BatchNormalization statistics (and, in the
// second case, momentum) are exchanged by broadcasts and averaged here, (a + b) / 2, after steps 3 and 6.
// The trainer's weights and statistics must equal those means, on both ranks (identical weights to continue
// from), after each epoch; the averaging figures must count 1 average per epoch and its bytes. Cases:
// optimizer state kept local (the default), then averaged. Then, as early stopping restoring each rank's own
// snapshot does, weights that differ between the ranks and Trainer::weights_replaced(): finish_training()
// must leave both ranks with their mean. Prints "N passed, M failed" and exits 0/1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "parallel/communicator.h"
#include "train/losses.h"
#include "train/trainer.h"

using namespace dtnn;

namespace {

constexpr int64_t kBatch = 8, kSteps = 3, kPerRank = 40;

// conv-BN-tanh, average pool, FC, softmax: BatchNormalization running statistics to average.
std::unique_ptr<Model> bn_cnn(const TrainOptions& o) {
  auto m = std::make_unique<Model>("avg_cnn");
  m->add(make_input(28, 28, 1));
  Conv2DSpec conv;
  conv.nfilters = 3;
  conv.padding = 1;
  m->add(make_conv2d(conv));
  m->add(make_batchnorm(), "tanh");
  Pool2DSpec pool;
  pool.pool_shape = {4, 4};
  pool.stride = 4;
  m->add(make_avg_pool2d(pool));
  m->add(make_flatten());
  m->add(make_fc(10), "softmax");
  BuildContext ctx;
  ctx.max_batch = o.batch_size;
  m->build(ctx, o.seed, Trainer::reduce_tail_floats(o));
  return m;
}

// Both ranks' copies of `mine`, averaged as (a + b) * 0.5f.
std::vector<float> mean_of_ranks(Communicator& comm, const float* mine, int64_t n) {
  std::vector<float> a(mine, mine + n), b(mine, mine + n);
  comm.broadcast(a.data(), n, 0);
  comm.broadcast(b.data(), n, 1);
  for (int64_t i = 0; i < n; ++i) a[i] = (a[i] + b[i]) * 0.5f;
  return a;
}

// The reference: local steps on this rank's block, by hand; then the average of both ranks, in place.
struct Reference {
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> opt;
  std::vector<float> x, y;

  void local_steps(const Dataset& data, int rank) {
    const size_t last = model->num_layers() - 1;
    std::vector<int64_t> idx(kBatch);
    for (int64_t k = 0; k < kSteps; ++k) {  // batch k of the worker's unshuffled block
      for (int64_t i = 0; i < kBatch; ++i) idx[i] = rank * kPerRank + k * kBatch + i;
      data.load_batch(Pool::train, idx.data(), kBatch, model->layout(), x.data(), y.data());
      std::memcpy(model->input().data(), x.data(), x.size() * sizeof(float));
      model->forward(kBatch, Mode::train);
      cce_from_logits(model->activation(last - 1, kBatch).data(), y.data(), kBatch, 10, kBatch,
                      model->gradient(last - 1, kBatch).data());
      model->backward(kBatch, last - 1);
      opt->step(model->param_slab(), model->grad_slab());
    }
  }
  void average(Communicator& comm, bool optimizer_state) {
    const auto p = mean_of_ranks(comm, model->param_slab(), model->slab_size());
    std::copy(p.begin(), p.end(), model->param_slab());
    const auto s = mean_of_ranks(comm, model->state_slab(), model->state_size());
    std::copy(s.begin(), s.end(), model->state_slab());
    if (optimizer_state)
      for (auto& [name, slab] : opt->state()) {
        const auto v = mean_of_ranks(comm, slab->data(), opt->size());
        std::copy(v.begin(), v.end(), slab->data());
      }
  }
};

double spread_from_root(Communicator& comm, const float* mine, int64_t n) {
  std::vector<float> root(mine, mine + n), own(mine, mine + n);
  comm.broadcast(root.data(), n, 0);
  return comm.max(test::max_rel_error(own, root));
}

// Returns the number of failed checks (on this rank).
// Synchronous averaging of SGD at 0.1 on unshuffled blocks of kSteps batches; each case sets its period.
TrainOptions averaging_options() {
  TrainOptions o;
  o.batch_size = kBatch;
  o.optimizer.name = "sgd";
  o.optimizer.learning_rate = 0.1;
  o.seed = 5;
  o.model_averaging = "synchronous";
  o.num_batches_per_worker = kSteps;
  o.shuffle_blocks = false;
  o.shuffle_block_data = false;
  return o;
}

// Synthetic MNIST-shaped data: kPerRank training samples per rank.
std::unique_ptr<Dataset> averaging_data() {
  DatasetShape shape = dataset_shape("mnist");
  shape.train_count = 2 * kPerRank;
  return make_synthetic(shape, 2);
}

int run_case(Communicator& comm, bool optimizer_state) {
  TrainOptions o = averaging_options();
  o.optimizer.momentum = 0.9;
  o.average_every_steps = kSteps;
  o.average_optimizer_state = optimizer_state;
  auto data = averaging_data();
  const Splits splits = make_splits(*data, 0.0, false, o.seed);

  auto model = bn_cnn(o);
  share_root_weights(*model, comm);
  auto opt = make_optimizer(o.optimizer, model->slab_size());
  Trainer trainer(*model, *data, comm, *opt, o);

  Reference ref{bn_cnn(o), make_optimizer(o.optimizer, model->slab_size()), {}, {}};
  share_root_weights(*ref.model, comm);
  ref.x.resize(kBatch * 28 * 28);
  ref.y.resize(kBatch * 10);
  int failed = 0;
  const int64_t floats = model->slab_size() + model->state_size() + (optimizer_state ? model->slab_size() : 0);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const EpochRecord rec = trainer.run_epoch(epoch, 2, splits);
    ref.local_steps(*data, comm.rank());
    ref.average(comm, optimizer_state);
    const std::vector<float> w(model->param_slab(), model->param_slab() + model->slab_size());
    const std::vector<float> s(model->state_slab(), model->state_slab() + model->state_size());
    const std::vector<float> rw(ref.model->param_slab(), ref.model->param_slab() + model->slab_size());
    const std::vector<float> rs(ref.model->state_slab(), ref.model->state_slab() + model->state_size());
    const double dw = comm.max(test::max_rel_error(w, rw)), ds = comm.max(test::max_rel_error(s, rs));
    const double spread = std::max(spread_from_root(comm, w.data(), static_cast<int64_t>(w.size())),
                                   spread_from_root(comm, s.data(), static_cast<int64_t>(s.size())));
    const bool counted = rec.averaging && rec.averaging->averages == 1 &&
                         rec.averaging->bytes == 4.0 * static_cast<double>(floats) && rec.averaging->max_wait_s > 0;
    const bool ok = dw <= 1e-6 && ds <= 1e-6 && spread == 0.0 && counted && rec.train.samples == 2 * kSteps * kBatch;
    if (comm.rank() == 0)
      std::printf("optimizer state %s, after epoch %d (step %lld): weights vs the mean of the hand-run local "
                  "trainings %.3g relative, BN statistics %.3g (%zu values); ranks differ by %.3g; %lld average(s), "
                  "%.0f bytes (expected %lld), %lld samples: %s\n",
                  optimizer_state ? "averaged" : "local", epoch, static_cast<long long>(epoch * kSteps), dw, ds,
                  s.size(), spread, rec.averaging ? static_cast<long long>(rec.averaging->averages) : -1LL,
                  rec.averaging ? rec.averaging->bytes : -1.0, static_cast<long long>(4 * floats),
                  static_cast<long long>(rec.train.samples), ok ? "ok" : "FAILED");
    failed += ok ? 0 : 1;
  }
  // Early stopping restoring each rank's own snapshot of an epoch that ended without an average: weights
  // that differ between the ranks, which finish_training() must average (it had nothing left to average).
  for (int64_t i = 0; i < model->slab_size(); ++i) model->param_slab()[i] += 0.25f * static_cast<float>(comm.rank() + 1);
  const std::vector<float> restored_mean = mean_of_ranks(comm, model->param_slab(), model->slab_size());
  trainer.weights_replaced();
  const std::optional<AveragingStats> totals = trainer.finish_training();
  const std::vector<float> w(model->param_slab(), model->param_slab() + model->slab_size());
  const double d_restored = comm.max(test::max_rel_error(w, restored_mean));
  const double spread = spread_from_root(comm, w.data(), static_cast<int64_t>(w.size()));
  const bool totals_ok = totals && totals->averages == 3 && d_restored <= 1e-6 && spread == 0.0;
  if (comm.rank() == 0)
    std::printf("after a restore of per-rank weights, finish: weights vs the ranks' mean %.3g relative, ranks "
                "differ by %.3g; run totals %lld averages (expected 3: the restore's included): %s\n",
                d_restored, spread, totals ? static_cast<long long>(totals->averages) : -1LL, totals_ok ? "ok" : "FAILED");
  return failed + (totals_ok ? 0 : 1);
}

// Synchronous averaging every 2 epochs, after epoch 1 (no average yet): the ranks hold different models,
// and the validation figure must be rank 0's model's over the whole validation set, the same on both ranks
// (it was a pass sharded over the two models: the score of no model). Returns the failed checks.
int validation_case(Communicator& comm) {
  TrainOptions o = averaging_options();
  o.average_every_epochs = 2;
  auto data = averaging_data();
  const Splits splits = make_splits(*data, 0.25, false, o.seed);  // 20 validation samples
  auto model = bn_cnn(o);
  share_root_weights(*model, comm);
  auto opt = make_optimizer(o.optimizer, model->slab_size());
  Trainer trainer(*model, *data, comm, *opt, o);
  const EpochRecord rec = trainer.run_epoch(1, 2, splits);
  // The reference: this rank's own model over every validation sample, by hand (probabilities, not logits).
  double own = 0.0;
  std::vector<float> x(kBatch * 28 * 28), y(kBatch * 10);
  const int64_t n_val = static_cast<int64_t>(splits.val.size());
  for (int64_t start = 0; start < n_val; start += kBatch) {
    const int64_t n = std::min(kBatch, n_val - start);
    data->load_batch(splits.val_pool, splits.val.data() + start, n, model->layout(), x.data(), y.data());
    std::memcpy(model->input().data(), x.data(), static_cast<size_t>(n) * 28 * 28 * sizeof(float));
    model->forward(n, Mode::evaluate);
    own += loss_value(LossKind::categorical_cross_entropy, nullptr, model->output(n).data(), y.data(), n, 10);
  }
  own /= static_cast<double>(n_val);
  double root_own = own;
  comm.broadcast_bytes(&root_own, sizeof root_own, 0);
  const double spread = spread_from_root(comm, model->param_slab(), model->slab_size());
  const double got = rec.val ? rec.val->values.at(0) : -1.0;
  const bool ok = rec.val && rec.val->samples == n_val && std::fabs(got - root_own) <= 1e-5 * root_own && spread > 0;
  if (comm.rank() == 0 || !ok)
    std::printf("rank %d: epoch 1 of 2 before the first average (ranks' weights differ by %.3g): validation loss "
                "%.9g over %lld samples, rank 0's model alone %.9g over %lld: %s\n",
                comm.rank(), spread, got, rec.val ? static_cast<long long>(rec.val->samples) : -1LL, root_own,
                static_cast<long long>(n_val), ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  try {
    auto world = make_mpi_communicator();
    if (world->size() != 2) {
      std::fprintf(stderr, "test_mpi_averaging: run with mpirun -np 2 (got %d ranks)\n", world->size());
      return 1;
    }
    int failed = 0;
    for (bool optimizer_state : {false, true}) failed += run_case(*world, optimizer_state);
    failed += validation_case(*world);
    float total = static_cast<float>(failed);
    world->allreduce_sum(&total, 1);
    if (world->rank() == 0) std::printf("%s\n", total == 0.0f ? "all passed" : "some checks FAILED");
    return total == 0.0f ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_mpi_averaging: %s\n", e.what());
    return 1;
  }
}
