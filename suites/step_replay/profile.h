// The step profile the replay proxy reads: `dtnn.step_profile/1` (analysis/perfmodel/STEP_PROFILE.md). Header
// only and free of dtnn's engine, so that one translation unit compiles with the real MPI's compiler and with
// SimGrid's smpicxx alike (suites/CMakeLists.txt builds it both ways).
//
// Checked here, not trusted: the schema string, non-negative finite times, buckets whose ready_after is a layer
// index (or the layer count), and (non_blocking) buckets that cover total_floats exactly once, as plan_buckets' buckets do (the first
// one carries the loss/metric tail). A profile that breaks one of these is refused with the reason.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace step_replay {

struct ProfileLayer {
  int64_t id = 0;
  std::string type;
  int64_t params = 0;
  double forward_s = 0.0, backward_s = 0.0;
};

struct ProfileBucket {
  int64_t floats = 0;
  size_t ready_after = 0;  // index into layers
  int64_t begin = 0;       // offset in the replay's slab: buckets laid out in launch order (derived, not read)
};

struct Profile {
  std::string model, mode;
  int64_t batch_size = 0;
  std::vector<ProfileLayer> layers;
  double loss_s = 0.0, update_s_per_float = 0.0, other_s = 0.0;
  std::vector<ProfileBucket> buckets;
  int64_t total_floats = 0;

  double compute_s() const {  // one rank's busy time per step (what a 1-rank replay measures)
    double t = other_s + loss_s + update_s_per_float * static_cast<double>(total_floats);
    for (const ProfileLayer& l : layers) t += l.forward_s + l.backward_s;
    return t;
  }
};

namespace detail {

inline double seconds(const nlohmann::json& j, const char* key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) throw std::runtime_error(where + ": missing \"" + key + "\"");
    return 0.0;
  }
  const double v = j.at(key).get<double>();
  if (!std::isfinite(v) || v < 0) throw std::runtime_error(where + ": \"" + key + "\" must be a finite time >= 0");
  return v;
}

// An integer that fits int64 (nlohmann's get<int64_t> would cast a 1e30 or a 2^64-1 out of range).
inline int64_t integer(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    throw std::runtime_error(what + " must be an integer that fits 64 bits");
  return v.get<int64_t>();
}

inline int64_t count(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw std::runtime_error(where + ": missing \"" + key + "\"");
  const int64_t v = integer(j.at(key), where + ": \"" + key + "\"");
  if (v < 0) throw std::runtime_error(where + ": \"" + key + "\" must be >= 0");
  return v;
}

}  // namespace detail

// mode_override: "" keeps the profile's mode; "blocking" / "non_blocking" replace it (one profile, both modes).
inline Profile parse_profile(const nlohmann::json& j, const std::string& mode_override = "") {
  using detail::count;
  using detail::seconds;
  const std::string schema = j.value("schema", "");
  if (schema != "dtnn.step_profile/1")
    throw std::runtime_error("schema is \"" + schema + "\", expected \"dtnn.step_profile/1\"");
  Profile p;
  p.model = j.value("model", "");
  p.batch_size = j.contains("batch_size") ? count(j, "batch_size", "profile") : 0;
  if (!j.contains("layers") || !j.at("layers").is_array() || j.at("layers").empty())
    throw std::runtime_error("profile: \"layers\" must be a non-empty array");
  for (size_t i = 0; i < j.at("layers").size(); ++i) {
    const nlohmann::json& l = j.at("layers")[i];
    const std::string where = "layers[" + std::to_string(i) + "]";
    ProfileLayer layer;
    layer.id = l.contains("id") ? detail::integer(l.at("id"), where + ".id") : static_cast<int64_t>(i);
    layer.type = l.value("type", "");
    layer.params = l.contains("params") ? count(l, "params", where) : 0;
    layer.forward_s = seconds(l, "forward_s", where);
    layer.backward_s = seconds(l, "backward_s", where);
    p.layers.push_back(layer);
  }
  // The first layer is the input, which backward never runs (analysis/perfmodel/step_model.cpp alike).
  if (p.layers[0].backward_s != 0)
    throw std::runtime_error("layers[0] is the input layer, which backward never runs: its backward_s must be 0");
  p.loss_s = seconds(j, "loss_s", "profile", false);
  p.update_s_per_float = seconds(j, "update_s_per_float", "profile", false);
  p.other_s = seconds(j, "other_s", "profile", false);
  p.total_floats = count(j, "total_floats", "profile");
  if (p.total_floats > INT32_MAX) throw std::runtime_error("profile: total_floats above INT_MAX is not replayed");
  p.mode = mode_override.empty() ? j.value("mode", "blocking") : mode_override;
  if (p.mode != "blocking" && p.mode != "non_blocking")
    throw std::runtime_error("mode is \"" + p.mode + "\", expected blocking or non_blocking");
  int64_t offset = 0;
  if (j.contains("buckets")) {
    for (size_t i = 0; i < j.at("buckets").size(); ++i) {
      const nlohmann::json& b = j.at("buckets")[i];
      const std::string where = "buckets[" + std::to_string(i) + "]";
      ProfileBucket bucket;
      bucket.floats = count(b, "floats", where);
      const int64_t ready = count(b, "ready_after", where);
      // (== the layer count: plan_buckets' bucket of a model without parameters, started at the first chance)
      if (ready > static_cast<int64_t>(p.layers.size()))
        throw std::runtime_error(where + ": ready_after " + std::to_string(ready) + " is past the layers");
      bucket.ready_after = static_cast<size_t>(ready);
      // (checked before adding: two huge buckets would overflow the offset)
      if (bucket.floats > p.total_floats - offset)
        throw std::runtime_error(where + ": the buckets hold more than total_floats (" +
                                 std::to_string(p.total_floats) + ")");
      bucket.begin = offset;
      offset += bucket.floats;
      p.buckets.push_back(bucket);
    }
  }
  if (p.mode == "non_blocking" && offset != p.total_floats)
    throw std::runtime_error("non_blocking: the buckets hold " + std::to_string(offset) +
                             " floats, total_floats is " + std::to_string(p.total_floats));
  return p;
}

inline Profile load_profile(const std::string& path, const std::string& mode_override = "") {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON (" + e.what() + ")");
  }
  try {
    return parse_profile(j, mode_override);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

// Strong scaling (STEP_PROFILE.md): a global batch over `ranks` ranks scales every per-layer time (and the
// loss) by (global_batch / ranks) / batch_size; the update and other_s are per step, not per sample.
inline void rescale_for_global_batch(Profile& p, int64_t global_batch, int ranks) {
  if (p.batch_size <= 0) throw std::runtime_error("--global-batch needs the profile's batch_size");
  const double f = static_cast<double>(global_batch) / ranks / static_cast<double>(p.batch_size);
  for (ProfileLayer& l : p.layers) {
    l.forward_s *= f;
    l.backward_s *= f;
  }
  p.loss_s *= f;
}

}  // namespace step_replay
