// Reading a contention ceiling file. See ingest_ceiling.h.
#include "results/ingest_ceiling.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/error.h"

namespace dtnn {
namespace {

using json = nlohmann::json;

const json& field(const json& j, const char* key, const std::string& path) {
  if (!j.contains(key)) fail(path, ": no '", key, "' field");
  return j[key];
}

std::string text(const json& j, const char* key, const std::string& path, bool nonempty) {
  const json& v = field(j, key, path);
  if (!v.is_string()) fail(path, ": '", key, "' is not a string");
  if (nonempty && v.get<std::string>().empty()) fail(path, ": '", key, "' is empty");
  return v.get<std::string>();
}

double positive(const json& j, const char* key, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    fail(path, ": '", key, "' is not a positive number");
  return v.get<double>();
}

int count(const json& j, const char* key, int lo, const std::string& path) {
  const json& v = field(j, key, path);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > (1 << 20))
    fail(path, ": '", key, "' is not an integer from ", lo);
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

bool is_contention_ceiling_json(const json& j) {
  return j.is_object() && j.contains("schema") && j["schema"] == kContentionCeilingSchema;
}

ContentionCeilingRow read_contention_ceiling(const json& j, const std::string& path) {
  ContentionCeilingRow r;
  r.machine_key = text(j, "machine_key", path, true);
  r.model = text(j, "model", path, true);
  r.dataset = text(j, "dataset", path, true);
  r.ranks = count(j, "ranks", 2, path);
  r.ceiling = positive(j, "ceiling", path);
  r.alone_samples_per_s = positive(j, "alone_samples_per_s", path);
  r.independent_samples_per_s = positive(j, "independent_samples_per_s", path);
  if (!field(j, "data_parallel_samples_per_s", path).is_null())
    r.data_parallel_samples_per_s = positive(j, "data_parallel_samples_per_s", path);
  if (!field(j, "step_jitter", path).is_null()) {
    const json& v = j["step_jitter"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1)
      fail(path, ": 'step_jitter' is not a number from 0 to 1");
    r.step_jitter = v.get<double>();
  }
  r.rounds = count(j, "rounds", 1, path);
  r.epochs = count(j, "epochs", 1, path);
  r.dtnn_commit = text(j, "dtnn_commit", path, false);
  r.measured_at = text(j, "measured_at", path, true);
  r.file = path;
  if (r.ceiling > 1.05 * r.ranks)
    fail(path, ": 'ceiling' ", r.ceiling, " for ", r.ranks, " ranks is not a contention ceiling (it lies in (0, ",
         1.05 * r.ranks, "])");
  const double ratio = r.independent_samples_per_s / r.alone_samples_per_s;
  if (std::fabs(r.ceiling - ratio) > 0.005 * ratio)
    fail(path, ": 'ceiling' ", r.ceiling, " is not independent_samples_per_s / alone_samples_per_s (", ratio, ")");
  return r;
}

}  // namespace dtnn
