// What `dtnn train` prints and writes: the model table and parameter dump (PyDTNN's format), the
// progress bar, the JSON run report, the history file and weight files.
// Files are written atomically (core/file_io.h): a failed run never leaves half a file.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/environment.h"
#include "io/npz.h"
#include "models/model.h"
#include "parallel/placement.h"
#include "train/memory_use.h"
#include "train/options.h"
#include "train/trainer.h"
#include "trace/trace_summary.h"

namespace dtnn {

void print_model_table(std::ostream& out, const Model& model);
// One line: the bytes of the model's buffers by kind (Model::memory()), on its device.
void print_model_memory(std::ostream& out, const Model& model);
void print_parameters(std::ostream& out, const TrainOptions& options);
// Per-layer forward/backward milliseconds per batch during training (the Model's layer timers).
void print_layer_times(std::ostream& out, const Model& model);

// Data-parallel runs: ms per step of step time, compute, time in communication calls and exposed
// communication, for rank 0 and min/median/max over the ranks, summed over the epochs (nothing on 1 rank
// or on the GPU).
void print_communication(std::ostream& out, const std::vector<EpochRecord>& epochs);

// Model averaging: "<what>: N averages, X MiB per rank, Y s waiting (rank 0), Z s (slowest rank)".
void print_averaging(std::ostream& out, const char* what, const AveragingStats& stats);

// A progress printer for rank 0: a live bar redrawn in place on a terminal, one line per pass otherwise.
ProgressFn make_progress_printer(std::ostream& out, bool terminal, const Trainer& trainer);
// "cce: 0.1234567, acc: 91.25%" for a PassResult's values, with an optional prefix ("val_", "test_").
std::string format_values(const Trainer& trainer, const std::vector<double>& values, const std::string& prefix);

// Where the run's weights came from: the report's "start" (check judges only runs trained from scratch).
struct TrainingStart {
  std::optional<std::string> initial_weights = std::string();  // as CheckpointState::initial_weights
  std::string resumed_from;                                     // --resume_from, when given
  int64_t resumed_after_epoch = 0;
  bool evaluate_only = false;
  // Trained by this recipe from the seeded initialization (resumed sittings included): what a target judges.
  bool trained_from_scratch() const { return !evaluate_only && initial_weights && initial_weights->empty(); }
};

struct RunSummary {
  int ranks = 1, threads = 1;
  TrainingStart start;
  std::vector<EpochRecord> epochs;
  double train_time_s = 0.0;  // sum of the epochs' training loops (what samples/s is computed from)
  double wall_time_s = 0.0;   // training including validation passes
  int64_t train_samples = 0;
  std::optional<PassResult> test;
  // Non-empty when training stopped because its loss became NaN or infinite: the one-line reason. The report
  // then says "status": "diverged" (else "ok") and lists the epochs up to and including that one.
  std::string diverged;
  // --tracing: what the report keeps of the trace (trace/trace_summary.h) and the files written.
  std::optional<TraceSummary> trace;
  std::vector<std::string> trace_files;
  std::string trace_write_error;  // why a trace output could not be written ("" when all were)
  // --model_averaging: the run's averages (Trainer::finish_training).
  std::optional<AveragingStats> averaging;
  // Where the ranks ran and what started them (rank 0's copy; parallel/placement.h).
  Placement placement;
  // Data parallelism: the first epoch after which a rank's weights were not rank 0's (0: never). They are
  // equal by construction (one summed gradient, one update rule); a rank on another device may round the
  // update otherwise (an FMA the CPU code has not), and its copy would drift apart unseen.
  int weights_differ_after_epoch = 0;
  // The options as given (options_list of them), before the run resolved defaults and scalings (SGD's rate times
  // the ranks, the per-rank share of --global_batch_size, --threads=0): a recipe is stated as given.
  std::vector<std::pair<std::string, std::string>> options_given;
  // Every rank's measured memory (train/memory_use.h), gathered after training; empty when not measured.
  std::vector<RankMemory> memory;
};

// The dtnn.run_report/1 JSON, written atomically. "options" are the options as the run used them; "options_given"
// lists those whose given value (run.options_given) differs, as given. It carries "run_nonce" copied from
// $DTNN_RUN_NONCE when that is set: the runner passes one per attempt and ingests only a report that names it.
void write_report(const std::string& path, const TrainOptions& options, const Environment& env, const Model& model,
                  const Trainer& trainer, const RunSummary& run);
// PyDTNN's history format: one line per epoch, "%3d" (0-based) then "%20.4f" for loss, metrics,
// val_loss, val_metrics.
void write_history(const std::string& path, const RunSummary& run);

// NPZ with PyDTNN's keys "<layer id>_<Type>_<variable>" (e.g. 1_Conv2D_weights), arrays in dtnn's
// storage layout (which is PyDTNN's CPU layout).
void save_weights(const Model& model, const std::string& path);
// Loads every parameter; throws dtnn::Error naming the first missing key, mismatching shape or array holding
// NaN or an infinity, and then changes nothing.
void load_weights(Model& model, const std::string& path);
// The arrays save_weights writes (checkpoints add their own keys to them).
std::vector<io::NpyArray> weight_arrays(const Model& model);

}  // namespace dtnn
