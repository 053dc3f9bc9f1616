// The step profile (schema dtnn.step_profile/1, analysis/perfmodel/STEP_PROFILE.md): one training step of
// one rank, as the performance model (step_model.h) and the SimGrid step-replay proxy both read it.
//
// Besides the documented fields, dtnn writes a "provenance" object that readers may ignore: how each number
// was obtained (notes), the bucket cap, and the run it came from (ranks, mode, measured step time), so a
// prediction can be set beside the measurement it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtnn::perf {

struct ProfileLayer {
  int id = 0;
  std::string type;
  int64_t params = 0;
  double forward_s = 0.0, backward_s = 0.0;
};

struct ProfileBucket {
  int64_t floats = 0;
  size_t ready_after = 0;  // index into layers whose backward completes the bucket
};

struct Provenance {
  std::vector<std::string> notes;
  double bucket_mb = -1.0;         // < 0: unknown
  int ranks = 0;                   // of the run the times come from (0: unknown)
  std::string mode;                // that run's communication mode: none | blocking | non_blocking
  double measured_step_s = 0.0;    // that run's mean step time (communication step_s / steps), 0: unknown
  double measured_compute_s = 0.0, measured_exposed_s = 0.0;
  int threads = 0;
  int nodes = 0;                   // hosts that run's ranks ran on (its report's placement; 0: unknown)
  std::string machine_key;         // MachineIdentity::key() of that run's machine ("" unknown; not in the JSON)
};

struct StepProfile {
  std::string model;
  int64_t batch_size = 0;            // per rank
  std::optional<int64_t> source_run;
  std::vector<ProfileLayer> layers;  // top-level layers in forward order
  double loss_s = 0.0;
  double update_s_per_float = 0.0;
  double other_s = 0.0;
  std::string mode = "non_blocking"; // blocking | non_blocking
  std::vector<ProfileBucket> buckets;  // launch order
  int64_t total_floats = 0;
  Provenance provenance;
};

inline constexpr const char* kStepProfileSchema = "dtnn.step_profile/1";

// Parses and checks a profile; `where` names the source in errors (one line: the field and what is wrong).
StepProfile parse_step_profile(const std::string& json_text, const std::string& where);
StepProfile read_step_profile(const std::string& path);
// The JSON text (2-space indent, a final newline).
std::string step_profile_json(const StepProfile& profile);
// Throws dtnn::Error naming `where` and the field when the profile is inconsistent (negative or non-finite
// times, a bucket after the last layer, buckets that do not add up to total_floats).
void check_step_profile(const StepProfile& profile, const std::string& where);

// One rank's compute per step as step_model.h counts it: other_s + Σ forward_s + loss_s + Σ backward_s of
// layers 1.. (the Input layer has no backward) + total_floats · update_s_per_float.
double profile_compute_s(const StepProfile& profile);

// Restates the per-rank batch as `batch` (> 0): forward, backward and loss times scale by batch / batch_size
// (linear in the samples, as strong scaling in step_model.h assumes); other_s and the update (per float) do not.
// Adds a provenance note.
void restate_batch(StepProfile& profile, int64_t batch);

// Multiplies every compute time (layers, loss, other, update) by `factor` (> 0, finite): the profile's
// proportions kept, its speed set to another device's. Adds a provenance note saying why (`reason`).
void scale_compute(StepProfile& profile, double factor, const std::string& reason);

}  // namespace dtnn::perf
