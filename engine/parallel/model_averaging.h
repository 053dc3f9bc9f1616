// ModelAveraging: the distribution strategy of dislib.eddl's modes (--model_averaging): every rank's step is
// local (a GradientReducer over a one-process communicator: no gradient sum, the loss divided by the rank's
// own batch count) and a WeightMerger merges the ranks' models now and then: synchronous averages
// (parallel/model_averager.h) or asynchronous merges through a window on rank 0 (parallel/async_merger.h).
//
// Figures: synchronous averaging sums the epoch's loss and metric sums over the ranks once, in end_epoch()
// after the epoch's average (the first collective after the loop is where the ranks wait for the slowest, and
// that wait belongs to the average); asynchronous merges keep them rank-local, as they keep the epoch's timing
// and validation (no rank meets another between merges). Nothing is allocated after construction.
#pragma once

#include <memory>
#include <vector>

#include "parallel/distribution.h"
#include "parallel/gradient_reducer.h"
#include "parallel/model_averager.h"

namespace dtnn {

class ModelAveraging final : public Distribution {
 public:
  // Collective (the asynchronous modes open their window). `tail` as make_distribution's.
  ModelAveraging(const TrainOptions& options, Communicator& comm, Model& model, Optimizer& optimizer, int64_t tail);

  void begin_step() override { steps_.begin_step(); }
  BackwardHook* hook() override { return steps_.hook(); }
  void finish_step(Optimizer& optimizer, float* params) override { steps_.finish_step(optimizer, params); }
  void after_update() override { merger_->after_step(); }
  void end_block() override { merger_->end_block(); }
  std::optional<AveragingStats> end_epoch(int epoch, bool last, std::vector<double>& sums, int64_t* done) override;
  std::optional<AveragingStats> end_training() override { return merger_->finish(); }

  EpochFigures figures() const override { return merger_->asynchronous() ? EpochFigures::own : EpochFigures::summed_at_end; }
  bool ranks_agree() const override { return merger_->ranks_agree(); }
  void weights_replaced() override { merger_->weights_replaced(); }

  const RankTimes& times() const override { return steps_.times(); }
  void reset_times() override { steps_.reset_times(); }
  EpochComm gather_epoch() override;
  const std::vector<GradientBucket>& buckets() const override { return steps_.buckets(); }
  bool overlapped() const override { return steps_.overlapped(); }
  void set_tracer(Tracer* tracer, GpuTrace* gpu_trace) override { steps_.set_tracer(tracer, gpu_trace); }

 private:
  Communicator& comm_;
  std::unique_ptr<Communicator> local_;  // declared before steps_, which reduces over it
  GradientReducer steps_;
  std::unique_ptr<WeightMerger> merger_;
  std::vector<float> epoch_sums_;  // the epoch's sums and count, summed over the ranks (synchronous)
};

}  // namespace dtnn
