// The predictions table (migration 8): predicted rows and the measured runs they were calibrated from. See
// store.h.
#include <sqlite3.h>

#include <cmath>

#include "core/error.h"
#include "results/sqlite_util.h"
#include "results/store.h"

namespace dtnn {

using namespace store_detail;

namespace {

// The schema's CHECKs would refuse these too, but with "CHECK constraint failed": say which field instead.
void check_row(const std::string& path, const PredictionRow& r) {
  DTNN_CHECK(r.source == "model" || r.source == "simgrid", path, ": a prediction's source must be model or simgrid (got '",
             r.source, "')");
  DTNN_CHECK(r.model_kind == "dtnn" || r.model_kind == "pydtnn", path, ": a prediction's model_kind must be dtnn or ",
             "pydtnn (got '", r.model_kind, "')");
  DTNN_CHECK(r.mode == "blocking" || r.mode == "non_blocking", path, ": a prediction's mode must be blocking or ",
             "non_blocking (got '", r.mode, "')");
  DTNN_CHECK(r.scaling == "weak" || r.scaling == "strong", path, ": a prediction's scaling must be weak or strong (got '",
             r.scaling, "')");
  DTNN_CHECK(r.ranks > 0, path, ": a prediction's ranks must be positive (got ", r.ranks, ")");
  DTNN_CHECK(!r.model_version.empty() && !r.model.empty() && !r.platform.empty(), path,
             ": a prediction needs its model version, model and platform");
  for (double v : {r.samples_per_rank, r.global_batch, r.step_s, r.compute_s, r.exposed_s, r.comm_s, r.samples_per_s,
                   r.speedup, r.efficiency})
    DTNN_CHECK(std::isfinite(v) && v >= 0, path, ": a prediction of ", r.ranks, " ranks has a negative or non-finite ",
               "time or rate");
  DTNN_CHECK(r.step_s > 0, path, ": a prediction of ", r.ranks, " ranks has no step time");
}

}  // namespace

std::vector<int64_t> ResultStore::add_predictions(const std::vector<PredictionRow>& rows) {
  for (const PredictionRow& r : rows) check_row(path_, r);
  std::vector<int64_t> ids;
  Transaction tx(db_, path_);
  Statement st(db_, path_,
               "INSERT INTO predictions (source, model_version, model_kind, model, platform, platform_params, rules, "
               "mode, scaling, ranks, batch_size, samples_per_rank, global_batch, step_s, compute_s, exposed_s, comm_s, "
               "samples_per_s, speedup, efficiency, algorithms, provenance, environment_id, config_key, matrix_id, "
               "trial_key, label, variant) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
               "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)");
  Statement link(db_, path_, "INSERT OR IGNORE INTO prediction_runs (prediction_id, run_id) VALUES (?, ?)");
  for (const PredictionRow& r : rows) {
    st.reset();
    st.bind(1, r.source).bind(2, r.model_version).bind(3, r.model_kind).bind(4, r.model).bind(5, r.platform);
    st.bind(6, r.platform_params).bind(7, r.rules).bind(8, r.mode).bind(9, r.scaling).bind(10, r.ranks);
    st.bind(11, r.batch_size).bind(12, r.samples_per_rank).bind(13, r.global_batch).bind(14, r.step_s);
    st.bind(15, r.compute_s).bind(16, r.exposed_s).bind(17, r.comm_s).bind(18, r.samples_per_s);
    st.bind(19, r.speedup).bind(20, r.efficiency).bind(21, r.algorithms).bind(22, r.provenance);
    st.bind(23, r.environment_id).bind(24, r.config_key).bind(25, r.matrix_id).bind(26, r.trial_key);
    st.bind(27, r.label).bind(28, r.variant);
    st.run();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    ids.push_back(id);
    for (int64_t run : r.calibration_runs) {
      link.reset();
      link.bind(1, id).bind(2, run);
      link.run();
    }
  }
  tx.commit();
  return ids;
}

int ResultStore::count_predictions(int64_t matrix_id, int64_t environment_id, const std::string& trial_key) {
  Statement st(db_, path_, "SELECT count(*) FROM predictions WHERE matrix_id = ? AND environment_id = ? AND trial_key = ?");
  st.bind(1, matrix_id).bind(2, environment_id).bind(3, trial_key);
  st.step();
  return static_cast<int>(st.int_column(0));
}

}  // namespace dtnn
