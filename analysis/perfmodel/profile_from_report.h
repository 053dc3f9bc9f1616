// A step profile (step_profile.h) from a dtnn run report (schema dtnn.run_report/1: a --report file, or
// runs.report in the results store).
//
//   layers      model.layers[]: id, type, params; forward_ms / backward_ms (the mean per call over the run,
//               warm-up step and any evaluation forwards included) in seconds; layers without times get 0.
//   buckets     engine/parallel/gradient_reducer.h plan_buckets over the model's gradient slab, exactly as the
//               trainer plans them: each top-level layer's range is its parameters padded as Model::build
//               pads them (every tensor to 16 floats), taken from the zoo model with the run's fusion
//               options; the loss/metric tail (Trainer::reduce_tail_floats) rides with the first bucket.
//               The cap is the run's --gradient_bucket_mb unless one is given, lowered by the run's
//               --gradient_buckets_min (1 for reports older than that option). When the zoo model does not
//               match the report layer for layer, the report's unpadded counts are used (and a note says so).
//   total_floats  the padded slab plus the tail (blocking's one MPI_Allreduce).
//   mode        the run's --non_blocking_mpi.
//   loss_s, update_s_per_float, other_s:
//     traced runs (phases.source = "trace"): rank 0's loss (per step) and update_dw (per step, divided by
//       total_floats); other_s = the measured compute per step less every layer, the loss and the update
//       (input copy, bookkeeping, the layer timers' own cost), clamped at 0;
//     otherwise: the measured compute per step (epochs[].communication.rank0.compute_s / steps) less the
//       layers' forward and backward is attributed to the update (loss_s = other_s = 0) — an estimate, and
//       the profile's notes say so.
//   provenance  the run's ranks, threads, communication mode and mean measured step, compute and exposed
//               times per step (rank 0), for comparing a prediction with what was measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/perfmodel/step_profile.h"

namespace dtnn {
class ResultStore;
}

namespace dtnn::perf {

struct ReportOptions {
  std::optional<double> bucket_mb;     // default: the run's --gradient_bucket_mb
  std::optional<int64_t> source_run;   // recorded in the profile
};

// Throws dtnn::Error naming `where` when the report is not a run report or lacks per-layer times.
StepProfile profile_from_report(const std::string& report_json, const std::string& where, const ReportOptions& options);
StepProfile profile_from_report_file(const std::string& path, const ReportOptions& options);
// runs.report of run `run_id` (source_run is set to it).
StepProfile profile_from_stored_run(const ResultStore& store, int64_t run_id, ReportOptions options);

}  // namespace dtnn::perf
