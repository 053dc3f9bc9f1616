// Trainer: PyDTNN's training and evaluation loops over a built Model, data parallel over a Communicator.
//
// Data parallelism (the same on 1 rank): every rank draws the same per-epoch permutation from the seed;
// global batch k holds permutation entries [k*B, (k+1)*B) with B = global_batch(options, ranks) (weak
// scaling: batch_size * ranks; strong: --global_batch_size), and rank r takes its contiguous share (B split
// as evenly as possible, the remainder to the first ranks; a short last batch likewise, so a rank may get
// none). Loss gradients are divided by the global batch count, the gradient slab (with the loss/metric sums
// packed behind it) is summed over ranks by the GradientReducer (one blocking allreduce, or buckets
// overlapped with the backward pass: train/gradient_reducer.h), and every rank applies the same optimizer
// step, so the weights stay identical without further communication.
//
// Per-epoch randomness is a pure function of (seed, epoch): run_epoch(e) draws its shuffle from
// epoch_rng(seed, e) and reseeds the dropout streams with Model::seed_layers(epoch_seed(seed, e), rank),
// so a run resumed from a checkpoint at epoch e continues bit-identically.
//
// Nothing here allocates after construction: batch indices, labels and reduction buffers are sized for
// the largest batch up front.
//
// GPU models (Model::device() == gpu): the loader's two batch buffers are page-locked, and each batch is
// copied to the device asynchronously on the backend's stream (an event marks when the copy has read its
// buffer, before the loader may refill it), so the copy overlaps the previous step's kernels. Loss, metric
// sums, the optimizer update and the epoch's running sums stay on the device; the host reads the sums back
// only every kProgressEvery steps (for the progress line) and at the end of a pass, so steps are queued
// without waiting for the GPU. Gradients are reduced with Communicator::allreduce_sum_device (NCCL or
// staged through host memory).
//
// Model averaging (--model_averaging, train/model_averager.h): the gradient reducer works on a one-process
// communicator (each rank's step is local: no gradient sum, loss divided by the rank's own batch count), a
// global batch is one rank's --batch_size (the learning rate is not scaled), and rank r's batches are its
// own blocks (data/worker_blocks.h; parallel/sample_schedule.h hands every schedule's samples out) in
// order, cycling when --num_batches_per_worker / --steps_per_epoch asks for more; without a fixed count
// every rank runs ceil(largest worker's samples / batch_size) steps, batch k holding
// min(batch_size, largest - k * batch_size) samples (a smaller worker wraps to its start), so the
// ranks' collectives match. The WeightMerger runs after every step and at the end of every epoch (before
// validation); the epoch's loss and metric sums are summed over the ranks once, at its end. On one rank with
// one block per worker and --shuffle_block_data this is plain training, bit for bit.
//
// --dynamic_blocks (asynchronous and partially asynchronous modes): no fixed share. In dislib each "train on
// a block" is a PyCOMPSs task that the runtime hands to whichever worker is free, so a fast worker trains
// more blocks and a straggler fewer, and an epoch ends when its blocks are done. Here the epoch's block
// order and contents are drawn from the seed as above (WorkerBlocks::draw), and each rank repeatedly claims
// the next position of that order from a shared counter (Communicator::open_block_counter: one counter per
// epoch index, MPI_Fetch_and_op on rank 0; no rank waits for another but inside that call). A piece of work
// is one block: ceil(block / batch_size) batches (the last short), or --num_batches_per_worker batches
// cycling through the block; then the merger's end_block() (partially asynchronous merges there) and the
// next claim. A rank whose claim finds the epoch's blocks all taken goes on to the next epoch without
// waiting: ranks are never synchronised per epoch, a fast one may claim epoch e + 1's blocks while a slow
// one still trains epoch e's. Every block of every epoch is trained exactly once, but which rank trains
// which block (hence the weights) depends on timing: not reproducible with several ranks. One rank claims
// every position in order: the static order, identical to the static mode when every block is a whole
// number of batches (batches never span two blocks here). The counters are opened by the first epoch (for
// num_epochs of them, collective) and closed by finish_training().
//
// --straggler_ms=R:MS: rank R sleeps before every training step (any mode), to study stragglers.
//
// Data: batches come from a BatchLoader (data/loader.h). Each pass submits batch k + 1 before computing
// batch k, so with --prefetch (the default) the next batch is decoded, augmented and laid out on the
// loader thread while this one computes; the ready batch is copied into model.input() (one memcpy) and
// its one-hot labels are used in place. Training batches get the augmentation of --flip_images /
// --crop_images (decided per sample by (seed, epoch, pool index)); validation and test batches never do,
// even when validation samples come from the training pool. The epoch's order comes from
// Dataset::shuffle (Fisher-Yates, or shard-grouped for ImageNet).
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
#include "parallel/sample_schedule.h"
#include "train/gpu_gradient_reducer.h"
#include "train/batch_shares.h"
#include "train/gradient_reducer.h"
#include "train/losses.h"
#include "train/model_averager.h"
#include "train/options.h"

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

  // Trains one epoch over splits.train, then validates on splits.val when it is not empty. In the
  // asynchronous model-averaging modes each rank validates its own weights alone, and only rank 0 does
  // (its figures are the ones reported; the others' rec.val is empty) unless set_validate_every_rank.
  // Synchronous averaging between averages (the ranks' models differ): rank 0's model over the whole
  // validation set, its figures on every rank.
  EpochRecord run_epoch(int epoch, int num_epochs, const Splits& splits);
  // Forward-only pass over the given samples of a pool (sharded across ranks), in evaluation mode.
  PassResult evaluate(Pool pool, const std::vector<int64_t>& indices, const std::string& label);
  // After the last epoch (collective): the merger's final merge, so the model evaluated and saved is the
  // merged one, and the run's averaging totals; nothing without --model_averaging.
  std::optional<AveragingStats> finish_training();
  // The model's weights were replaced between epochs (early stopping's restore): tells the merger.
  void weights_replaced() {
    if (merger_) merger_->weights_replaced();
  }
  // --dynamic_blocks: the (epoch, block id) pairs this rank claimed and trained, in claim order.
  const std::vector<std::pair<int, int64_t>>& claimed_blocks() const { return schedule_.claimed(); }

  void set_progress(ProgressFn fn) { progress_ = std::move(fn); }
  // Asynchronous modes: every rank validates after each epoch (its LR schedulers watch a val_ metric).
  void set_validate_every_rank(bool every) { validate_every_rank_ = every; }
  // Called before every training step (the LR schedulers' on_batch_begin); must not allocate.
  void set_batch_begin(std::function<void()> fn) { batch_begin_ = std::move(fn); }
  const std::vector<LossKind>& losses() const { return loss_; }
  const std::vector<MetricKind>& metrics() const { return metrics_; }
  // Names of the values of a PassResult: loss name then metric names.
  std::vector<std::string> value_names() const;
  static int64_t reduce_tail_floats(const TrainOptions& options);
  const GradientReducer& reducer() const { return reducer_; }
  // --rank_batch_shares: the split in use (auto: measured after the first steps).
  const RankShares& shares() const { return shares_; }
  // Records steps, data waits, losses, evaluation passes, and (through the model and the reducer) layers
  // and communication into `tracer` (trace/tracer.h; null: none). GPU models: layers, the loss, the gradient
  // sum and the update timed by CUDA events on the stream (trace/gpu_trace.h), the data wait on lane 1.
  void set_tracer(Tracer* tracer);
  // GPU models: the device events still pending into the tracer (before the trace is written).
  void flush_trace();

 private:
  // This rank's share [offset, offset + count) of a global batch of `global` samples over `comm`'s ranks:
  // comm_'s by --rank_batch_shares, another communicator's evenly.
  void local_share(const Communicator& comm, int64_t global, int64_t* offset, int64_t* count) const;
  // The seconds this rank's reducer has counted as compute so far (GPU: the device timeline, a step late).
  double compute_so_far() const;
  // evaluate() over `comm`: comm_, or (asynchronous model averaging, between epochs) the one-process
  // communicator, each rank then evaluating all the samples on its own model without meeting the others.
  PassResult evaluate_on(Communicator& comm, Pool pool, const std::vector<int64_t>& indices, const std::string& label);
  // began: when the step began (now_s(), before a --straggler_ms / --straggler_factor delay): the traced step's
  // start; read only when tracing.
  void train_step(const Batch& batch, int64_t global_n, double began);
  void train_step_gpu(const Batch& batch, int64_t global_n);
  // GPU: queues the loss/metric kernels for the n samples on the device; grad null in evaluation.
  void gpu_loss(int64_t n, double global_n, bool training, float* out, bool accumulate);
  // GPU: copies a batch's inputs and labels to the device (asynchronously).
  void gpu_upload(const Batch& batch);

  Model& model_;
  const Dataset& data_;
  Communicator& comm_;
  Optimizer& optimizer_;
  const TrainOptions& options_;
  int64_t global_batch_;  // samples per global batch (train/options.h global_batch)
  std::vector<LossKind> loss_;  // exactly one
  std::vector<MetricKind> metrics_;
  bool fused_softmax_ = false;
  // Some layer communicates inside a training step (synchronised BN) and there are several ranks: a
  // final global batch smaller than the rank count is topped up so that every rank runs it.
  bool every_rank_steps_ = false;
  bool validate_every_rank_ = false;
  int64_t classes_ = 0;
  Rng shuffle_rng_;
  std::vector<int64_t> batch_indices_;
  std::vector<float> eval_sums_;
  ProgressFn progress_;
  std::function<void()> batch_begin_;
  // Model averaging: the one-process communicator the reducer works on (declared before it), the merger
  // and the epoch's sums over the ranks.
  std::unique_ptr<Communicator> local_comm_;
  GradientReducer reducer_;  // CPU models' gradient sums and updates
  std::unique_ptr<WeightMerger> merger_;
  SampleSchedule schedule_;  // which samples this rank walks each epoch
  std::vector<float> epoch_sums_;
  int64_t straggler_ms_ = 0;  // this rank's sleep before every step
  double slow_factor_ = 1.0;  // --straggler_factor: this rank's steps take this many times their compute
  double last_compute_s_ = 0.0;
  RankShares shares_;  // --rank_batch_shares
  Tracer* tracer_ = nullptr;
  std::unique_ptr<GpuTrace> gpu_trace_;  // GPU models with a tracer
  std::unique_ptr<GpuGradientReducer> gpu_reducer_;  // GPU models: the gradient sum and update
  // GPU state (empty on the CPU): one-hot labels of the current batch, the loss kernel's scratch, the
  // epoch's running sums (values + count), metric codes, the host copy of the sums, the input-copy event.
  bool gpu_ = false;
  Tensor labels_dev_, loss_scratch_, sums_dev_;
  std::vector<int> metric_codes_;
  std::vector<float> sums_host_;
  int64_t steps_run_ = 0, profile_step_ = -1;  // DTNN_CUDA_PROFILE_STEP: the step in the profiler window
  BatchLoader loader_;  // its thread stops before anything it could touch is destroyed
  // Batches to the device on a copy stream; declared after the loader so it is destroyed first: its
  // destructor drains the copies that still read the loader's page-locked slots.
  std::unique_ptr<gpu::InputStager> input_;
};

}  // namespace dtnn
