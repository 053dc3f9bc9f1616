// Distribution: how the ranks' training steps make one training. The trainer drives a strategy through a few
// verbs, in this order, and never asks which strategy it holds:
//   begin_step()                  before a step's forward pass
//   hook()->after_layer(i)        after each top-level layer's backward (a null hook: nothing to do there)
//   finish_step(optimizer, p)     after backward: the gradients summed over the ranks (or kept local) and the
//                                 optimizer's update applied to the parameters p
//   after_update()                after the update (model averaging's merges)
//   end_block()                   after each block of work a rank claimed (--dynamic_blocks)
//   end_epoch(e, last, sums, n)   after epoch e's training loop, before its validation pass
//   end_training()                once after the last epoch (collective)
// The strategies:
//   GradientReducer     the gradient sum on CPUs, blocking or bucketed (parallel/gradient_reducer.h)
//   GpuGradientReducer  the gradient sum on GPUs, NCCL or staged through MPI (parallel/gpu_gradient_reducer.h)
//   ModelAveraging      local steps with synchronous averages or asynchronous merges (parallel/model_averaging.h)
// A new distributed mode is a new implementation of this interface, not a branch in the trainer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"

namespace dtnn {

class Tracer;
class GpuTrace;
struct TrainOptions;

struct GradientBucket {
  int64_t begin = 0, end = 0;  // floats [begin, end) of the gradient slab (the first bucket: tail included)
  size_t ready_after = 0;      // the top-level layer whose backward completes it (its lowest layer)
};

// Sums of one rank's step times over the steps of an epoch (seconds); parallel/gradient_reducer.h says what
// each covers.
struct RankTimes {
  double step_s = 0.0, compute_s = 0.0, comm_s = 0.0, exposed_s = 0.0;
};

// An epoch's communication: rank 0's times and each field's minimum, median and maximum over the ranks.
struct EpochComm {
  // "blocking", "non_blocking", "none" (one rank: nothing reduced, the step is all compute); GPU models
  // measure on the device timeline (parallel/gpu_gradient_reducer.h)
  std::string mode;
  int64_t steps = 0;
  int64_t buckets_per_step = 0;
  double bytes_per_step = 0.0;  // bytes each rank contributes to the sums in one step
  RankTimes rank0, min, median, max;
  std::vector<RankTimes> ranks;  // every rank's, in rank order (the run's per-rank phase summary)
};

// Model averaging's merges over an epoch or a run (parallel/model_averager.h).
struct AveragingStats {
  int64_t averages = 0;
  double bytes = 0.0;        // per rank
  double wait_s = 0.0;       // rank 0's seconds inside the averages
  double max_wait_s = 0.0;   // the largest over the ranks
  // Asynchronous modes, for the run (finish()): each rank's merges, rank-major (averages, bytes and wait_s
  // are then rank 0's). Empty otherwise.
  std::vector<int64_t> merges_per_rank;
  // --dynamic_blocks, for the run: the blocks each rank claimed and trained, rank-major. Empty otherwise.
  std::vector<int64_t> blocks_per_rank;
};

// Whose samples a step's loss and metric sums cover, hence over which ranks an epoch's figures, its timing
// and its validation pass are.
enum class EpochFigures {
  global,         // every rank's: the sums ride with the gradients (data parallelism)
  summed_at_end,  // this rank's own until end_epoch() sums them over the ranks (synchronous averaging)
  own,            // this rank's own for good: no rank meets another between merges (asynchronous merges)
};

class Distribution {
 public:
  virtual ~Distribution() = default;

  virtual void begin_step() = 0;
  // The backward pass's hook, or null when nothing happens between layers.
  virtual BackwardHook* hook() = 0;
  // Sums what is still unsummed and applies the optimizer's step to `params` from the model's gradients.
  virtual void finish_step(Optimizer& optimizer, float* params) = 0;
  virtual void after_update() {}
  virtual void end_block() {}
  // `sums` holds the epoch's loss and metric sums, `done` its samples, as this rank counted them; a strategy
  // whose figures are summed_at_end sums both over the ranks here. Returns the epoch's merges (model
  // averaging) or nothing. Collective unless figures() is own.
  virtual std::optional<AveragingStats> end_epoch(int epoch, bool last, std::vector<double>& sums, int64_t* done) {
    return std::nullopt;
  }
  // After the last epoch (collective): the final merge, so the model evaluated and saved is the merged one,
  // and the run's merges; nothing for the gradient sums.
  virtual std::optional<AveragingStats> end_training() { return std::nullopt; }

  virtual EpochFigures figures() const { return EpochFigures::global; }
  // Whether every rank holds the same model now (summed_at_end: after an average with nothing trained since).
  virtual bool ranks_agree() const { return true; }
  // Something other than a training step replaced the weights (early stopping's restore).
  virtual void weights_replaced() {}

  // This rank's step times since reset_times() (GPU: read from the device a step or two late; read_pending()
  // catches up, waiting for the device), and the epoch's figures over the ranks the figures cover
  // (collective over them).
  virtual const RankTimes& times() const = 0;
  virtual void reset_times() = 0;
  virtual void read_pending() {}
  virtual EpochComm gather_epoch() = 0;

  // The gradient buckets a step sums (tracing names them), and whether they are summed during backward.
  virtual const std::vector<GradientBucket>& buckets() const = 0;
  virtual bool overlapped() const = 0;
  // Records communication into `tracer` (CPU) or `gpu_trace` (GPU timelines); null: none.
  virtual void set_tracer(Tracer* tracer, GpuTrace* gpu_trace) = 0;
};

// The strategy of these options for `model` over `comm`: model averaging when options.model_averaging asks,
// else the gradient sum on the model's device. `tail` floats follow the model's gradient slab and are summed
// with it (the trainer's loss, metric sums and count); layers_communicate: some layer makes collective calls
// inside a step (synchronised BatchNormalization). Collective (every rank builds one).
std::unique_ptr<Distribution> make_distribution(const TrainOptions& options, Communicator& comm, Model& model,
                                                Optimizer& optimizer, int64_t tail, bool layers_communicate);

}  // namespace dtnn
