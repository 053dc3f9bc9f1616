// Typed reads of optional fields of a JSON document a user names (a run report, a step profile's
// provenance): absent, or `j` not an object, gives the fallback; a field of another type or out of range
// throws dtnn::Error "<where>: ..." naming the field. nlohmann's value() threw its own type_error, without the
// file's name, and cast a 1e30 to an integer (undefined behaviour).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/json_int.h"

namespace dtnn::perf {


inline double number_or(const nlohmann::json& j, const char* key, double fallback, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const nlohmann::json& v = j[key];
  DTNN_CHECK(v.is_number() && std::isfinite(v.get<double>()), where, ": \"", key, "\" must be a finite number");
  return v.get<double>();
}

// A count in [0, 2^53] (json_int's range).
inline int64_t count_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  int64_t v = 0;
  try {
    v = json_int(j[key], key);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  DTNN_CHECK(v >= 0, where, ": \"", key, "\" must be >= 0 (got ", v, ")");
  return v;
}

inline int small_count_or(const nlohmann::json& j, const char* key, int fallback, const std::string& where) {
  const int64_t v = count_or(j, key, fallback, where);
  DTNN_CHECK(v <= INT32_MAX, where, ": \"", key, "\" is too large (", v, ")");
  return static_cast<int>(v);
}

inline std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback,
                             const std::string& where) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  DTNN_CHECK(j[key].is_string(), where, ": \"", key, "\" must be a string");
  return j[key].get<std::string>();
}

}  // namespace dtnn::perf
