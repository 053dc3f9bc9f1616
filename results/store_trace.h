// Internal to results/: the per-rank phases, stragglers and timeline of a run report, into their tables.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dtnn::store_detail {

// Inserts the report's "phases" rows and its "trace" stragglers and timeline (absent objects: nothing).
// Throws nlohmann::json::exception for a missing or mistyped field, dtnn::Error for a bad value.
void store_run_trace(sqlite3* db, const std::string& path, int64_t run_id, const nlohmann::json& report);

}  // namespace dtnn::store_detail
