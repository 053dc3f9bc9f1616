#include "parallel/model_averaging.h"

#include "train/options.h"

namespace dtnn {

ModelAveraging::ModelAveraging(const TrainOptions& options, Communicator& comm, Model& model, Optimizer& optimizer,
                               int64_t tail)
    : comm_(comm), local_(make_local_communicator()),
      steps_(*local_, model, tail, options.non_blocking_mpi, options.gradient_bucket_mb, options.gradient_buckets_min),
      merger_(make_weight_merger(options, comm, model, optimizer)), epoch_sums_(static_cast<size_t>(tail)) {}

std::optional<AveragingStats> ModelAveraging::end_epoch(int epoch, bool last, std::vector<double>& sums,
                                                        int64_t* done) {
  std::optional<AveragingStats> stats = merger_->end_epoch(epoch, last);
  if (figures() == EpochFigures::summed_at_end && comm_.size() > 1) {
    const size_t values = sums.size();
    for (size_t v = 0; v < values; ++v) epoch_sums_[v] = static_cast<float>(sums[v]);
    epoch_sums_[values] = static_cast<float>(*done);
    comm_.allreduce_sum(epoch_sums_.data(), static_cast<int64_t>(values + 1));
    for (size_t v = 0; v < values; ++v) sums[v] = epoch_sums_[v];
    *done = static_cast<int64_t>(epoch_sums_[values]);
  }
  return stats;
}

EpochComm ModelAveraging::gather_epoch() { return steps_.gather_epoch_over(figures() == EpochFigures::own ? *local_ : comm_); }

}  // namespace dtnn
