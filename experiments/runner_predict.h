// A matrix's predicted trials (mode = "predict"): no process is started; `dtnn predict` (the analytic model,
// analysis/perfmodel) makes the trial's rank count on its platform (default ib100), calibrated from a measured
// run of the same configuration in the same store, and its row goes to the predictions table grouped with
// that run's measured group (v_scaling and `dtnn report` draw it beside the measured points). Predicted
// rows never go to the runs table; a predicted trial that cannot be made is recorded there as a failed run
// with the line saying what to add.
#pragma once

#include <cstdint>
#include <string>

#include "experiments/matrix.h"
#include "results/store.h"

namespace dtnn {

// The parameters that tell a predicted trial from the measured one it is calibrated from.
bool is_prediction_param(const std::string& name);  // mode, platform, predictor

bool is_predicted(const Trial& trial);  // mode = "predict"

// What a dry run prints for a predicted trial.
std::string predicted_description(const Trial& trial);

// The measured run a predicted trial is calibrated from: an ok run of `store` in environment `env_id` (this
// machine and commit: another's run calibrated the curve before, and it was stored under that environment)
// that trained samples, whose parameters equal the trial's except ranks and the prediction parameters; the
// smallest rank count, then the newest. 0 if none.
int64_t calibration_run(const ResultStore& store, const Trial& trial, int64_t env_id);

struct PredictedOutcome {
  std::string status;  // ok (stored in predictions) | failed | unsupported (with the error line)
  std::string error;
  std::string command;  // the equivalent dtnn predict command line
};

// Makes and stores the trial's prediction (matrix_id: the matrix that declares it; env_id: the runner's
// environment, where its calibration run must be). Never throws for the trial's own problems (they are the
// outcome); throws when the store cannot be written.
PredictedOutcome run_predicted_trial(ResultStore& store, int64_t matrix_id, const Trial& trial, int64_t env_id);

}  // namespace dtnn
