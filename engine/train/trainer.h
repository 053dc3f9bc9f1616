// Trainer: PyDTNN's training and evaluation loops over a built Model, distributed over a Communicator.
//
// An epoch is the sample schedule's walks (parallel/sample_schedule.h: which samples this rank trains, in
// what order), and a step is llm.c's: the next batch, forward, loss, backward, update, each one call. What
// the ranks do together is the distribution strategy's (parallel/distribution.h: gradient sums on CPUs or
// GPUs, synchronous averaging, asynchronous merges); what depends on where the model lives is the step
// device's (train/step_device.h). Neither is named here: a new mode or device is a new class.
//
// Data parallelism (the same on 1 rank): every rank draws the same per-epoch permutation from the seed;
// global batch k holds permutation entries [k*B, (k+1)*B) with B = global_batch(options, ranks) (weak
// scaling: batch_size * ranks; strong: --global_batch_size), and rank r takes its share (train/batch_shares.h:
// B split as evenly as possible, the remainder to the first ranks, or --rank_batch_shares; a short last batch
// likewise, so a rank may get none). Loss gradients are divided by the global batch count, and the strategy
// sums the gradient slab with the loss/metric sums packed behind it, so every rank applies the same update.
// Model averaging (--model_averaging, parallel/model_averaging.h): a global batch is one rank's --batch_size
// (the learning rate is not scaled) and the ranks' steps are their own. --dynamic_blocks: blocks claimed at
// run time (parallel/sample_schedule.h), so which rank trains which block depends on timing.
//
// Per-epoch randomness is a pure function of (seed, epoch): run_epoch(e) draws its shuffle from
// epoch_rng(seed, e) and reseeds the dropout streams with Model::seed_layers(epoch_seed(seed, e), rank),
// so a run resumed from a checkpoint at epoch e continues bit-identically.
//
// Data: batches come from a BatchLoader (data/loader.h). Each pass submits batch k + 1 before computing
// batch k, so with --prefetch (the default) the next batch is decoded, augmented and laid out on the
// loader thread while this one computes. Training batches get the augmentation of --flip_images /
// --crop_images (decided per sample by (seed, epoch, pool index)); validation and test batches never do.
//
// --straggler_ms=R:MS / --straggler_factor=R:F: rank R sleeps before every training step, to study stragglers.
// Nothing here allocates after construction: batch indices, labels and reduction buffers are sized for
// the largest batch up front.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/loader.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/distribution.h"
#include "parallel/sample_schedule.h"
#include "train/batch_shares.h"
#include "train/losses.h"
#include "train/options.h"
#include "train/step_device.h"

namespace dtnn {

// Means over the samples of a pass: values[0] is the loss, values[1..] the metrics in option order.
struct PassResult {
  int64_t samples = 0;
  double time_s = 0.0;
  std::vector<double> values;
  double samples_per_s() const { return time_s > 0 ? samples / time_s : 0.0; }
};

struct EpochRecord {
  int epoch = 0;  // 1-based
  double learning_rate = 0.0;  // the rate of the epoch's last training step
  PassResult train;
  std::optional<PassResult> val;
  EpochComm comm;  // the gradient reduction's cost over the epoch's training steps (CPU models)
  std::optional<AveragingStats> averaging;  // --model_averaging: the epoch's averages
};

// Receives progress from rank 0 (the others get none): called with the samples done so far, the
// epoch total, and the running means; `done` is true once per pass, at its end.
using ProgressFn = std::function<void(const std::string& label, int64_t done, int64_t total, double elapsed_s,
                                      const std::vector<double>& means, bool finished)>;

// The seed of epoch e's dropout streams and the generator of its shuffle (e is 1-based).
uint64_t epoch_seed(uint64_t seed, int epoch);
Rng epoch_rng(uint64_t seed, int epoch);

// Data parallelism starts from one set of weights: rank 0's parameters and state (BatchNormalization
// running statistics; rank 0 alone may have read them from a weights file) are broadcast from the host
// copies, then uploaded to the device (GPU models).
void share_root_weights(Model& model, Communicator& comm);

class Trainer {
 public:
  Trainer(Model& model, const Dataset& data, Communicator& comm, Optimizer& optimizer, const TrainOptions& options);

  // Trains one epoch over splits.train, then validates on splits.val when it is not empty. When the ranks'
  // figures are their own (asynchronous merges) each rank validates its own weights alone, and only rank 0
  // does (its figures are the ones reported; the others' rec.val is empty) unless set_validate_every_rank.
  // Synchronous averaging between averages (the ranks' models differ): rank 0's model over the whole
  // validation set, its figures on every rank.
  EpochRecord run_epoch(int epoch, int num_epochs, const Splits& splits);
  // Forward-only pass over the given samples of a pool (sharded across ranks), in evaluation mode.
  PassResult evaluate(Pool pool, const std::vector<int64_t>& indices, const std::string& label);
  // After the last epoch (collective): the strategy's final merge, so the model evaluated and saved is the
  // merged one, and the run's averaging totals; nothing for the gradient sums.
  std::optional<AveragingStats> finish_training();
  // The model's weights were replaced between epochs (early stopping's restore): tells the strategy.
  void weights_replaced() { dist_->weights_replaced(); }
  // --dynamic_blocks: the (epoch, block id) pairs this rank claimed and trained, in claim order.
  const std::vector<std::pair<int, int64_t>>& claimed_blocks() const { return schedule_.claimed(); }

  void set_progress(ProgressFn fn) { progress_ = std::move(fn); }
  // Asynchronous modes: every rank validates after each epoch (its LR schedulers watch a val_ metric).
  void set_validate_every_rank(bool every) { validate_every_rank_ = every; }
  // Called before every training step (the LR schedulers' on_batch_begin); must not allocate.
  void set_batch_begin(std::function<void()> fn) { batch_begin_ = std::move(fn); }
  const std::vector<LossKind>& losses() const { return losses_; }
  const std::vector<MetricKind>& metrics() const { return loss_.metrics; }
  // Names of the values of a PassResult: loss name then metric names.
  std::vector<std::string> value_names() const;
  static int64_t reduce_tail_floats(const TrainOptions& options);
  const Distribution& distribution() const { return *dist_; }
  // --rank_batch_shares: the split in use (auto: measured after the first steps).
  const RankShares& shares() const { return shares_; }
  // Records steps, data waits, losses, evaluation passes, and (through the model and the strategy) layers
  // and communication into `tracer` (trace/tracer.h; null: none). GPU models: layers, the loss, the gradient
  // sum and the update timed by CUDA events on the stream (trace/gpu_trace.h), the data wait on lane 1.
  void set_tracer(Tracer* tracer);
  // GPU models: the device events still pending into the tracer (before the trace is written).
  void flush_trace() { device_->flush_trace(); }

 private:
  struct Pass;  // an epoch's label, total and start, for the progress line
  // This rank's share [offset, offset + count) of a global batch of `global` samples over `comm`'s ranks:
  // comm_'s by --rank_batch_shares, another communicator's evenly.
  void local_share(const Communicator& comm, int64_t global, int64_t* offset, int64_t* count) const;
  // The samples of global batch `step` of a walk, and this rank's share of them handed to the loader.
  int64_t global_count(const SampleWalk& walk, int64_t step) const;
  void submit(const SampleWalk& walk, int64_t step, int epoch);
  void train_walk(const SampleWalk& walk, int epoch, const Pass& pass);
  Batch next_batch();
  double straggle();
  // began: when the step began (before a --straggler_ms / --straggler_factor delay): the traced step's start.
  void train_step(const Batch& batch, int64_t global_n, double began);
  void finish_epoch(EpochRecord& rec, int num_epochs, const Pass& pass);
  void validate(EpochRecord& rec, const Splits& splits);
  // evaluate() over `comm`: comm_, or the one-process communicator, the rank then evaluating all the samples
  // on its own model without meeting the others.
  PassResult evaluate_on(Communicator& comm, Pool pool, const std::vector<int64_t>& indices, const std::string& label);

  Model& model_;
  const Dataset& data_;
  Communicator& comm_;
  Optimizer& optimizer_;
  const TrainOptions& options_;
  int64_t global_batch_;  // samples per global batch (train/options.h global_batch)
  std::vector<LossKind> losses_;  // exactly one
  StepLoss loss_;
  size_t top_ = 0;  // the layer backward starts at (below a fused Softmax)
  // Some layer communicates inside a training step (synchronised BN) and there are several ranks: a
  // final global batch smaller than the rank count is topped up so that every rank runs it.
  bool every_rank_steps_ = false;
  bool validate_every_rank_ = false;
  Rng shuffle_rng_;
  std::vector<int64_t> batch_indices_;
  std::vector<float> eval_sums_;
  std::vector<double> sums_, means_;  // a pass's sums and running means
  ProgressFn progress_;
  std::function<void()> batch_begin_;
  std::unique_ptr<Communicator> solo_;  // one process: a rank evaluating its own model
  SampleSchedule schedule_;             // which samples this rank walks each epoch
  std::unique_ptr<Distribution> dist_;  // what the ranks do together
  int64_t straggler_ms_ = 0;  // this rank's sleep before every step
  double slow_factor_ = 1.0;  // --straggler_factor: this rank's steps take this many times their compute
  double last_compute_s_ = 0.0;
  RankShares shares_;  // --rank_batch_shares
  Tracer* tracer_ = nullptr;
  int64_t steps_run_ = 0;
  float* tail_ = nullptr;  // the loss, metric sums and count behind the gradient slab (the model's memory)
  BatchLoader loader_;  // its thread stops before anything it could touch is destroyed
  // Declared after the loader so it is destroyed first: a GPU's destructor drains the copies that still read
  // the loader's page-locked slots.
  std::unique_ptr<StepDevice> device_;
};

}  // namespace dtnn
