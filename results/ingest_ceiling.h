// Reading experiments/contention_ceiling.sh's result file (schema dtnn.contention_ceiling/1) for `dtnn ingest`:
//   {"schema": "dtnn.contention_ceiling/1", "machine_key": MachineIdentity::key() of the machine measured,
//    "model", "dataset", "ranks" (>= 2), "ceiling" (independent / alone), "alone_samples_per_s",
//    "independent_samples_per_s", "data_parallel_samples_per_s" (or null), "step_jitter" (the copies'
//    relative step-time standard deviation, or null), "rounds", "epochs",
//    "dtnn_commit", "measured_at" (UTC ISO 8601)}
// Everything is checked before anything is stored: a missing or mistyped field, an empty machine key (a machine
// nobody described cannot be matched), a ceiling outside (0, 1.05 * ranks] or one that is not independent /
// alone (to 0.5 %) is an error naming the file and the field.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "results/store.h"

namespace dtnn {

inline constexpr const char* kContentionCeilingSchema = "dtnn.contention_ceiling/1";

bool is_contention_ceiling_json(const nlohmann::json& j);
ContentionCeilingRow read_contention_ceiling(const nlohmann::json& j, const std::string& path);

}  // namespace dtnn
