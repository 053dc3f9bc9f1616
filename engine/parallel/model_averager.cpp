#include "parallel/model_averager.h"

#include "parallel/async_merger.h"

#include "core/clock.h"
#include "core/error.h"

namespace dtnn {

std::unique_ptr<WeightMerger> make_weight_merger(const TrainOptions& options, Communicator& comm, Model& model,
                                                 Optimizer& optimizer) {
  if (options.model_averaging == "none") return nullptr;
  if (options.model_averaging == "synchronous")
    return std::make_unique<ModelAverager>(options, comm, model, optimizer);
  if (options.model_averaging == "asynchronous" || options.model_averaging == "partially_asynchronous")
    return std::make_unique<AsyncMerger>(options, comm, model, options.model_averaging == "partially_asynchronous");
  fail("--model_averaging=", options.model_averaging, ": unknown mode");
}

ModelAverager::ModelAverager(const TrainOptions& options, Communicator& comm, Model& model, Optimizer& optimizer)
    : comm_(comm), model_(model), optimizer_(optimizer), every_epochs_(options.average_every_epochs),
      every_steps_(options.average_every_steps), optimizer_state_(options.average_optimizer_state),
      bn_statistics_(options.average_bn_statistics) {
  DTNN_CHECK(model.device() == Device::cpu, "model averaging runs on CPU models only");
  DTNN_CHECK(every_epochs_ >= 1 && every_steps_ >= 0, "model averaging: bad period");
  if (optimizer_state_) state_slabs_ = optimizer_.state();
}

void ModelAverager::average_slab(float* data, int64_t count) {
  if (count <= 0) return;
  comm_.allreduce_sum(data, count);
  const float scale = 1.0f / static_cast<float>(comm_.size());
  for (int64_t i = 0; i < count; ++i) data[i] *= scale;
  epoch_.bytes += 4.0 * static_cast<double>(count);
}

void ModelAverager::average(bool final) {
  dirty_ = false;
  if (bn_statistics_ || final) state_local_ = false;
  ++epoch_.averages;
  if (comm_.size() == 1) return;  // the mean of one model is itself
  const double t0 = now_s();
  average_slab(model_.param_slab(), model_.slab_size());
  if (bn_statistics_ || final) average_slab(model_.state_slab(), model_.state_size());
  if (optimizer_state_)
    for (auto& [name, slab] : state_slabs_) average_slab(slab->data(), optimizer_.size());
  epoch_.wait_s += now_s() - t0;
}

void ModelAverager::after_step() {
  ++steps_;
  dirty_ = true;
  state_local_ |= !bn_statistics_ && model_.state_size() > 0;
  if (every_steps_ > 0 && steps_ % every_steps_ == 0) average(false);
}

void ModelAverager::weights_replaced() {
  dirty_ = true;
  state_local_ |= model_.state_size() > 0;  // the snapshot's BN statistics are this rank's too
}

AveragingStats ModelAverager::gather(const AveragingStats& mine) {
  AveragingStats all = mine;
  all.max_wait_s = comm_.max(mine.wait_s);
  return all;
}

AveragingStats ModelAverager::end_epoch(int epoch, bool last) {
  if ((dirty_ || (last && state_local_)) && (last || (every_steps_ == 0 && epoch % every_epochs_ == 0)))
    average(last);
  const AveragingStats mine = epoch_;
  run_.averages += mine.averages;
  run_.bytes += mine.bytes;
  run_.wait_s += mine.wait_s;
  epoch_ = AveragingStats{};
  return gather(mine);
}

AveragingStats ModelAverager::finish() {
  if (dirty_ || state_local_) average(true);
  run_.averages += epoch_.averages;
  run_.bytes += epoch_.bytes;
  run_.wait_s += epoch_.wait_s;
  epoch_ = AveragingStats{};
  return gather(run_);
}

}  // namespace dtnn
