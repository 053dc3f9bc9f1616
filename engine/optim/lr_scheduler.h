// Learning-rate schedulers: PyDTNN's callbacks that change the optimizer's learning rate, stop training,
// or save weights (research notes §5.4), selected by --lr_schedulers (a comma list, applied in list
// order) with PyDTNN's option names and defaults.
//
// Hooks: on_batch_begin() before every training step (warm_up; no allocation), on_epoch_end() after an
// epoch's training and validation pass with that epoch's means (values[0] the loss, values[1..] the
// metrics in --metrics order). After on_epoch_end the trainer stops when stop_training() is true (every
// scheduler of the list runs first, as in PyDTNN). Every rank runs the schedulers on the same allreduced
// values, so they take the same decisions; only rank 0 prints and writes files.
//
// Metric names (the *_metric options): the loss function's name or a metric name, as the values are
// named (categorical_cross_entropy, categorical_accuracy, ...), or either with a `val_` prefix for the
// validation pass. A value "improves" when it is strictly greater than the best so far for names that
// contain "accuracy", strictly smaller otherwise; the best starts at -inf/+inf, so epoch 1 improves.
// epoch_count counts the on_epoch_end calls (epoch 1 is count 1).
//
//   warm_up                  W = steps_per_epoch * --warm_up_epochs (5) steps, with steps_per_epoch the
//                            steps per epoch the trainer really runs on a rank (the global batches; with
//                            --model_averaging the rank's own, --num_batches_per_worker). Before step b (b = 0, 1, ...)
//                            while b <= W: lr = lr0/ranks + b * (lr0 - lr0/ranks) / W, lr0 the optimizer's
//                            rate at start-up (already scaled by the rank count for sgd). With 1 rank it
//                            sets lr0 throughout (a no-op, as in PyDTNN). Prints nothing.
//   early_stopping           --early_stopping_metric (val_categorical_cross_entropy), _patience (10).
//                            On improvement: remember the value and epoch and copy the parameter slab and
//                            the state slab (BatchNorm running statistics) into an in-memory snapshot; also
//                            store them as a weights file when --early_stopping_weights_filename is set.
//                            Else, when epoch_count - best_epoch >= patience: restore the snapshot, stop,
//                            print "LRScheduler EarlyStopping: metric <m> did not improve for <p> epochs,
//                            stop training!".
//   reduce_lr_on_plateau     --reduce_lr_on_plateau_metric (val_categorical_cross_entropy), _factor (0.1),
//                            _patience (5), _min_lr (0). On improvement: remember it. Else, when
//                            epoch_count - best_epoch >= patience and lr*factor >= min_lr: lr *= factor,
//                            best_epoch = epoch_count (the patience restarts, the best value is kept),
//                            print "LRScheduler ReduceLROnPlateau: metric %s did not improve for %d epochs,
//                            setting learning rate to %.8f".
//   reduce_lr_every_nepochs  --reduce_lr_every_nepochs_factor (0.1), _nepochs (5), _min_lr (0). When
//                            epoch_count % nepochs == 0 and lr*factor >= min_lr: lr *= factor, print
//                            "LRScheduler ReduceLREveryNEpochs: setting learning rate to %.8f".
//   stop_at_loss             --stop_at_loss_metric (categorical_cross_entropy), _threshold (0). Stops when
//                            the value is better than the threshold (greater for accuracies, smaller
//                            otherwise), printing "LRScheduler StopAtLoss: metric %s reached threshold value
//                            %f, stop training!".
//   model_checkpoint         --model_checkpoint_metric (val_categorical_cross_entropy), _save_freq (2). On
//                            improvement and only when epoch_count % save_freq == 0: store the weights (the
//                            weights-file format) as ./model-<model>-epoch-<epoch_count>-<YYYYMMDD>.npz,
//                            delete the file it stored before, print "LRScheduler ModelCheckpoint: saving
//                            model weights and bias in <file>".
//
// PyDTNN's traps, removed (same semantics otherwise):
//   - --lr_schedulers defaults to "" (none). PyDTNN's default early_stopping,reduce_lr_on_plateau,
//     model_checkpoint watches val_ metrics that are all 0 without a validation set (its default), so
//     training stopped after 10 epochs and silently went back to the epoch-1 weights.
//   - --lr_schedulers="" means no scheduler (PyDTNN crashed on the empty name); an unknown name is an error.
//   - An unknown metric name is an error at start-up listing the valid names (PyDTNN silently watched the
//     loss instead), and so is a val_ name when there is no validation set (PyDTNN watched zeros).
//   - model_checkpoint looks its metric up like the others (PyDTNN kept the val_ prefix in the lookup and
//     so always watched the loss).
//   - stop_at_loss's default metric is the training loss (PyDTNN's default "val_accuracy" named no value,
//     fell back to the val loss and, containing "accuracy", stopped as soon as that was above 0).
//   - early_stopping restores the best weights from memory (the snapshot is allocated once, at start-up)
//     instead of writing a dated file to the working directory on every improvement and reading it back;
//     if the metric never improved (NaN from the start) nothing is restored (PyDTNN crashed).
//   - warm_up with W = 0 (0 warm-up epochs) does nothing (PyDTNN divided by zero), and W counts the steps
//     the trainer runs (PyDTNN used --steps_per_epoch, 0 by default, so the default also divided by zero).
//   - "Better" is greater for accuracy-like metrics in every scheduler.
// Checkpoints: save_state()/load_state() carry every scheduler's counters, best values, early stopping's
// snapshot and model_checkpoint's last file, so a resumed run takes the same decisions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "io/npz_values.h"
#include "optim/optimizer.h"

namespace dtnn {

class Model;

// The *_metric defaults are PyDTNN's; with another --loss_func, resolve_options() makes the ones not given
// follow the loss (val_<loss>, or <loss> for stop_at_loss).
struct LRSchedulerOptions {
  std::string names;  // --lr_schedulers, comma list; "" = none (dtnn's default; see above)
  int64_t warm_up_epochs = 5;
  std::string early_stopping_metric = "val_categorical_cross_entropy";
  int64_t early_stopping_patience = 10;
  std::string early_stopping_weights_filename;  // dtnn: also store the best weights here ("" = memory only)
  std::string reduce_lr_on_plateau_metric = "val_categorical_cross_entropy";
  double reduce_lr_on_plateau_factor = 0.1;
  int64_t reduce_lr_on_plateau_patience = 5;
  double reduce_lr_on_plateau_min_lr = 0.0;
  double reduce_lr_every_nepochs_factor = 0.1;
  int64_t reduce_lr_every_nepochs_nepochs = 5;
  double reduce_lr_every_nepochs_min_lr = 0.0;
  std::string stop_at_loss_metric = "categorical_cross_entropy";
  double stop_at_loss_threshold = 0.0;
  std::string model_checkpoint_metric = "val_categorical_cross_entropy";
  int64_t model_checkpoint_save_freq = 2;
};

// The known scheduler names, in PyDTNN's spelling.
const std::vector<std::string>& lr_scheduler_names();

// What the schedulers watch and act on. The optimizer, model and callbacks must outlive the schedulers.
struct SchedulerSetup {
  std::vector<std::string> value_names;  // loss name, then metric names (Trainer::value_names())
  bool has_validation = false;           // whether on_epoch_end gets validation values
  int64_t steps_per_epoch = 0;           // a rank's training steps per epoch (warm_up; run.cpp)
  int ranks = 1;
  std::string model_name;                // model_checkpoint's file names
  Optimizer* optimizer = nullptr;        // required
  Model* model = nullptr;                // required by early_stopping (its snapshot)
  bool root = true;                      // rank 0: prints and writes files
  std::ostream* out = nullptr;           // where rank 0 prints the schedulers' messages (null: silent)
  // Stores the model's weights as a weights file (rank 0 only; early_stopping's optional file and
  // model_checkpoint). Required when those need it.
  std::function<void(const std::string& path)> save_weights;
  // Called after early_stopping restored the best epoch's weights (the trainer's weight merger must know:
  // parallel/model_averager.h); may be empty.
  std::function<void()> weights_restored;
  // Deletes a file (model_checkpoint's previous one); defaults to std::filesystem::remove.
  std::function<void(const std::string& path)> remove_file;
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  virtual const char* name() const = 0;  // PyDTNN's option spelling, e.g. "early_stopping"
  virtual void on_batch_begin() {}
  // val is null when there is no validation set.
  virtual void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) = 0;
  bool stop_training() const { return stop_training_; }
  // Whether on_epoch_end reads the validation figures (a val_ metric is watched).
  virtual bool watches_validation() const { return false; }
  // Appends this scheduler's state under keys starting with prefix / reads it back (throws naming the
  // file and key when something is missing or malformed).
  virtual void save_state(const std::string& prefix, std::vector<io::NpyArray>& arrays) const;
  virtual void load_state(const std::string& prefix, const io::NpyArrayMap& arrays, const std::string& path);

 protected:
  virtual std::vector<double> numbers() const { return {}; }
  virtual void set_numbers(const std::vector<double>& /*values*/) {}
  int64_t epoch_count_ = 0;
  bool stop_training_ = false;
};

class LRSchedulers {
 public:
  // Parses options.names and checks every option of the selected schedulers (unknown names, metric names,
  // a val_ metric without validation, non-positive periods): throws dtnn::Error with one line.
  LRSchedulers(const LRSchedulerOptions& options, const SchedulerSetup& setup);
  ~LRSchedulers();
  LRSchedulers(const LRSchedulers&) = delete;
  LRSchedulers& operator=(const LRSchedulers&) = delete;

  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  const LRScheduler& at(size_t i) const { return *list_[i]; }

  void on_batch_begin() {
    for (auto& s : list_) s->on_batch_begin();
  }
  void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val);
  bool stop_training() const;
  // Whether any scheduler reads the validation figures: the asynchronous model-averaging modes then
  // validate on every rank (each rank's schedulers act on its own figures), else on rank 0 only.
  bool watch_validation() const;

  // Checkpoint state under "dtnn_scheduler_<i>_<name>..." keys.
  void save_state(std::vector<io::NpyArray>& arrays) const;
  void load_state(const io::NpyArrayMap& arrays, const std::string& path);

 private:
  SchedulerSetup setup_;  // the schedulers refer to this copy (so LRSchedulers neither copies nor moves)
  std::vector<std::unique_ptr<LRScheduler>> list_;
};

}  // namespace dtnn
