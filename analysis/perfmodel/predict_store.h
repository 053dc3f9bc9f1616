// `dtnn predict --store`: the predicted rows of a dtnn.prediction/1 document (what `dtnn predict --json`
// prints) into the store's predictions table (migration 8), with the run they were calibrated from and the
// measured group that run belongs to, so v_scaling and `dtnn report` draw them beside the measured points.
// Predicted rows never go to the runs table.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/perfmodel/predict_command.h"
#include "results/store.h"

namespace dtnn::perf {

// Where a prediction comes from and what it is grouped with.
struct PredictionOrigin {
  std::string source = "model";          // model | simgrid
  std::vector<int64_t> calibration_runs; // the measured runs the profile came from
  std::optional<int64_t> environment_id, matrix_id;
  std::optional<std::string> config_key, trial_key, label;
  std::string profile;                   // "run 12", "report FILE", "profile FILE", "" (PyDTNN's formulas alone)
};

// The calibration run `run_id` of `store` as an origin: its environment, configuration and matrix. Throws
// dtnn::Error (one line) when there is no such run.
PredictionOrigin origin_of_run(const ResultStore& store, int64_t run_id);

// One row per entry of the document's "rows": global batch = samples_per_rank × ranks, speedup = efficiency ×
// ranks (both against the document's 1-rank prediction), the provenance (profile, measured step, notes,
// fit, PyDTNN's parameters) as JSON. Throws dtnn::Error when the document is not a dtnn.prediction/1.
std::vector<PredictionRow> prediction_rows(const nlohmann::json& prediction, const PredictionOrigin& origin);

// Makes the prediction (as --json, into a string: an error there writes nothing), stores its rows in
// options.db (which must exist), then prints what `dtnn predict` prints without --store, and in table form
// one more line naming the stored rows.
int run_predict_and_store(const PredictCommandOptions& options, std::ostream& out);

// `dtnn predict --from-simgrid FILE --store`: the dtnn.prediction/1 document suites/step_replay/simgrid_replay.sh writes
// (PREDICTION_JSON; "source": "simgrid") into the predictions table of `db` with source simgrid, calibrated from
// the document's source_run (the run its profile came from) when that run is in `db`. Prints one line. Throws
// dtnn::Error (nothing stored) on a file that is not such a document or a source_run missing from `db`.
int store_simgrid_prediction(const std::string& file, const std::string& db, std::ostream& out);

}  // namespace dtnn::perf
