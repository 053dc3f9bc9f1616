// Checkpoints: `--checkpoint_file PATH` (rank 0 rewrites it atomically at the end of every epoch) and
// `--resume_from PATH` (every rank reads it: the path must be readable by all ranks, as for PyDTNN's
// weights files). A resumed run continues where the checkpoint left off; with the same seed, rank count
// and thread count its final weights and per-epoch losses are bit-identical to an uninterrupted run's
// (the trainer's shuffles and dropout streams are pure functions of (seed, epoch)).
//
// The file is an NPZ (numpy.load reads it) that doubles as a weights file: the weights and buffers under
// PyDTNN's keys (1_Conv2D_weights, ...; what save_weights writes), plus, under a dtnn_ prefix:
//   dtnn_checkpoint_version  int64 scalar (1)
//   dtnn_epoch               int64 scalar: epochs completed
//   dtnn_stopped             int64 scalar: 1 when a scheduler stopped training (resuming trains no more)
//   dtnn_learning_rate       float64 (1,): the optimizer's rate after that epoch's schedulers
//   dtnn_optimizer_steps     int64 scalar: the optimizer's step count (adam's bias correction)
//   dtnn_optimizer_<slab>    float32: the optimizer's state slabs (velocity; cache; m, v), flat, in the
//                            parameter slab's order
//   dtnn_state_slab          float32: the model's non-trainable state slab (BatchNorm running statistics)
//   dtnn_scheduler_<i>_<name>[_...]  the state of the i-th --lr_schedulers entry
//   dtnn_epochs              float64 (epochs, 7 + 2k), k = 1 + metrics: per epoch [epoch, lr,
//                            train samples, train time_s, k train values, has_val, val samples,
//                            val time_s, k val values], so a resumed run's history and report list every epoch
//   dtnn_options             uint8 text, "name=value" lines: the options that must match on resume
//                            (model, dataset, layout, batch size, ranks, seed, data split, loss, metrics,
//                            optimizer and its hyper-parameters, learning rate, schedulers and theirs).
//                            --num_epochs may differ (that is how a run is extended; dtnn train refuses a
//                            checkpoint past --num_epochs unless --evaluate_only); --threads and --conv_algo
//                            may too, with a warning that the result is then not bit-identical. Lines
//                            starting '~' are informative: those two, and ~initial_weights=PATH, the weights
//                            file the checkpointed run began from (empty: seeded initialization), so a
//                            resumed run's report still says whether it trained from scratch.
// Errors (one line naming the file, non-zero exit): not an NPZ, truncated or corrupt, a missing or
// malformed dtnn_ key, an option that differs (naming it and both values), weights of another model, a NaN or
// infinite value in any weight, slab or epoch row, a negative optimizer step count.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "models/model.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "train/options.h"
#include "train/trainer.h"

namespace dtnn {

struct CheckpointState {
  int64_t epoch = 0;               // epochs completed
  bool stopped = false;            // a scheduler stopped training
  std::vector<EpochRecord> epochs; // every completed epoch's record, in order
  // The weights training began from: "" the seeded initialization, else the weights file loaded. nullopt
  // when resumed from a checkpoint written before dtnn recorded it.
  std::optional<std::string> initial_weights = std::string();
};

// Writes the checkpoint atomically (a temporary file renamed into place). Call on rank 0 only.
void save_checkpoint(const std::string& path, const Model& model, Optimizer& optimizer, const LRSchedulers& schedulers,
                     const TrainOptions& options, int ranks, const CheckpointState& state);

// Checks the file against this run's options and rank count, then restores the model's parameters and
// state slab, the optimizer's slabs, step count and learning rate, and the schedulers' state. Nothing is
// changed when it throws. Warnings (a different thread count or conv algorithm) go to `warn` when given.
CheckpointState load_checkpoint(const std::string& path, Model& model, Optimizer& optimizer, LRSchedulers& schedulers,
                                const TrainOptions& options, int ranks, std::ostream* warn);

}  // namespace dtnn
