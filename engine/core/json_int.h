// Whole numbers read from JSON documents dtnn did not necessarily write (run reports, benchmark files).
// nlohmann::json's get<int64_t>() of a floating-point value casts it: "epoch": 1e300 is undefined behaviour
// (UBSan), and "layer": -1e300 was stored as -9223372036854775808. These accept an integer, or a float that
// is a whole number within +-2^53, and throw dtnn::Error naming the key otherwise.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace dtnn {

inline int64_t json_int(const nlohmann::json& v, const std::string& key) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    DTNN_CHECK(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), "field '", key, "' holds ", u,
               ", too large for a count");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  DTNN_CHECK(v.is_number_float(), "field '", key, "' holds a ", v.type_name(), " where a whole number belongs");
  const double d = v.get<double>();
  DTNN_CHECK(std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= 9007199254740992.0, "field '", key,
             "' holds ", d, " where a whole number (within 2^53) belongs");
  return static_cast<int64_t>(d);
}

inline int64_t json_int_at(const nlohmann::json& j, const std::string& key) { return json_int(j.at(key), key); }

inline int64_t json_int_or(const nlohmann::json& j, const std::string& key, int64_t fallback) {
  return j.is_object() && j.contains(key) ? json_int(j[key], key) : fallback;
}

}  // namespace dtnn
