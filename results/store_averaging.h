// Internal to results/: a run report's model averaging figures into run_averaging and epoch_averaging
// (migration 9).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dtnn::store_detail {

// Inserts the report's top-level "averaging" object (mode from parallel.model_averaging; merges_per_rank, the
// asynchronous modes' per-rank counts, as a JSON array) and every
// epochs[].averaging. A report without "averaging" stores nothing, and then an epoch with one is refused,
// as is an "averaging" object whose parallel.model_averaging is not synchronous, asynchronous or
// partially_asynchronous, or a negative count, byte count or wait. Throws nlohmann::json::exception for a
// missing or mistyped field, dtnn::Error for a bad value.
void store_run_averaging(sqlite3* db, const std::string& path, int64_t run_id, const nlohmann::json& report);

}  // namespace dtnn::store_detail
