#include "analysis/perfmodel/step_profile.h"

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "analysis/perfmodel/json_fields.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "core/file_io.h"

namespace dtnn::perf {

namespace {

using nlohmann::json;

const json& field(const json& j, const char* name, const std::string& where) {
  const auto it = j.find(name);
  DTNN_CHECK(it != j.end(), where, ": missing \"", name, "\"");
  return *it;
}

double number(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  DTNN_CHECK(v.is_number(), where, ": \"", name, "\" must be a number");
  const double d = v.get<double>();
  DTNN_CHECK(std::isfinite(d) && d >= 0, where, ": \"", name, "\" must be finite and >= 0 (got ", d, ")");
  return d;
}

int64_t integer(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  DTNN_CHECK(v.is_number_integer(), where, ": \"", name, "\" must be an integer");
  DTNN_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX), where, ": \"", name,
             "\" is too large");
  return v.get<int64_t>();
}

}  // namespace

void check_step_profile(const StepProfile& p, const std::string& where) {
  DTNN_CHECK(p.batch_size > 0, where, ": batch_size must be > 0 (got ", p.batch_size, ")");
  DTNN_CHECK(!p.layers.empty(), where, ": no layers");
  DTNN_CHECK(p.mode == "blocking" || p.mode == "non_blocking", where, ": mode must be blocking or non_blocking (got \"",
             p.mode, "\")");
  for (size_t i = 0; i < p.layers.size(); ++i) {
    const ProfileLayer& l = p.layers[i];
    DTNN_CHECK(std::isfinite(l.forward_s) && l.forward_s >= 0 && std::isfinite(l.backward_s) && l.backward_s >= 0,
               where, ": layers[", i, "] times must be finite and >= 0");
    DTNN_CHECK(l.params >= 0, where, ": layers[", i, "].params must be >= 0");
  }
  // The first layer is the input: backward stops before it (step_model.cpp, step_replay.cpp alike), so a time
  // there would be counted as compute but never scheduled.
  DTNN_CHECK(p.layers[0].backward_s == 0, where, ": layers[0] is the input layer, which backward never runs: its "
             "backward_s must be 0 (got ", p.layers[0].backward_s, ")");
  for (double v : {p.loss_s, p.update_s_per_float, p.other_s})
    DTNN_CHECK(std::isfinite(v) && v >= 0, where, ": loss_s, update_s_per_float and other_s must be finite and >= 0");
  DTNN_CHECK(p.total_floats >= 0, where, ": total_floats must be >= 0");
  int64_t sum = 0;
  for (size_t b = 0; b < p.buckets.size(); ++b) {
    DTNN_CHECK(p.buckets[b].floats > 0, where, ": buckets[", b, "].floats must be > 0");
    // (checked before summing: two huge buckets would overflow the sum)
    DTNN_CHECK(p.buckets[b].floats <= p.total_floats - sum, where, ": the buckets hold more than total_floats (",
               p.total_floats, ") floats");
    // ready_after == layers: a model without parameters, whose tail is started at the first chance.
    DTNN_CHECK(p.buckets[b].ready_after <= p.layers.size(), where, ": buckets[", b, "].ready_after ",
               p.buckets[b].ready_after, " is past the last layer (", p.layers.size() - 1, ")");
    sum += p.buckets[b].floats;
  }
  DTNN_CHECK(p.buckets.empty() || sum == p.total_floats, where, ": the buckets hold ", sum,
             " floats but total_floats is ", p.total_floats);
  DTNN_CHECK(p.mode == "blocking" || !p.buckets.empty() || p.total_floats == 0, where,
             ": non_blocking needs buckets");
}

StepProfile parse_step_profile(const std::string& text, const std::string& where) {
  const json j = parse_json(text, where);
  DTNN_CHECK(j.is_object(), where, ": not a JSON object");
  const json& schema = field(j, "schema", where);
  DTNN_CHECK(schema.is_string() && schema.get<std::string>() == kStepProfileSchema, where, ": schema must be \"",
             kStepProfileSchema, "\"");
  StepProfile p;
  const json& model = field(j, "model", where);
  DTNN_CHECK(model.is_string(), where, ": \"model\" must be a string");
  p.model = model.get<std::string>();
  p.batch_size = integer(j, "batch_size", where);
  if (j.contains("source_run") && !j["source_run"].is_null()) p.source_run = integer(j, "source_run", where);
  const json& layers = field(j, "layers", where);
  DTNN_CHECK(layers.is_array(), where, ": \"layers\" must be an array");
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string at = where + ": layers[" + std::to_string(i) + "]";
    DTNN_CHECK(layers[i].is_object(), at, " must be an object");
    ProfileLayer l;
    const int64_t id = integer(layers[i], "id", at);
    DTNN_CHECK(id >= INT32_MIN && id <= INT32_MAX, at, ".id does not fit an int");
    l.id = static_cast<int>(id);
    if (layers[i].contains("type") && layers[i]["type"].is_string()) l.type = layers[i]["type"].get<std::string>();
    l.params = integer(layers[i], "params", at);
    l.forward_s = number(layers[i], "forward_s", at);
    l.backward_s = number(layers[i], "backward_s", at);
    p.layers.push_back(l);
  }
  p.loss_s = number(j, "loss_s", where);
  p.update_s_per_float = number(j, "update_s_per_float", where);
  p.other_s = number(j, "other_s", where);
  const json& mode = field(j, "mode", where);
  DTNN_CHECK(mode.is_string(), where, ": \"mode\" must be a string");
  p.mode = mode.get<std::string>();
  if (j.contains("buckets")) {
    const json& buckets = j["buckets"];
    DTNN_CHECK(buckets.is_array(), where, ": \"buckets\" must be an array");
    for (size_t b = 0; b < buckets.size(); ++b) {
      const std::string at = where + ": buckets[" + std::to_string(b) + "]";
      DTNN_CHECK(buckets[b].is_object(), at, " must be an object");
      const int64_t ready = integer(buckets[b], "ready_after", at);
      DTNN_CHECK(ready >= 0, at, ".ready_after must be >= 0");
      p.buckets.push_back({integer(buckets[b], "floats", at), static_cast<size_t>(ready)});
    }
  }
  p.total_floats = integer(j, "total_floats", where);
  if (j.contains("provenance") && j["provenance"].is_object()) {
    const json& v = j["provenance"];
    const std::string at = where + ": provenance";
    if (v.contains("notes") && v["notes"].is_array())
      for (const json& n : v["notes"])
        if (n.is_string()) p.provenance.notes.push_back(n.get<std::string>());
    p.provenance.bucket_mb = number_or(v, "bucket_mb", -1.0, at);
    p.provenance.ranks = small_count_or(v, "ranks", 0, at);
    p.provenance.mode = string_or(v, "mode", "", at);
    p.provenance.measured_step_s = number_or(v, "measured_step_s", 0.0, at);
    p.provenance.measured_compute_s = number_or(v, "measured_compute_s", 0.0, at);
    p.provenance.measured_exposed_s = number_or(v, "measured_exposed_s", 0.0, at);
    p.provenance.threads = small_count_or(v, "threads", 0, at);
    p.provenance.nodes = small_count_or(v, "nodes", 0, at);
  }
  check_step_profile(p, where);
  return p;
}

StepProfile read_step_profile(const std::string& path) { return parse_step_profile(read_file(path, kMaxJsonFileBytes), path); }

std::string step_profile_json(const StepProfile& p) {
  json j;
  j["schema"] = kStepProfileSchema;
  j["model"] = p.model;
  j["batch_size"] = p.batch_size;
  if (p.source_run) j["source_run"] = *p.source_run;
  json layers = json::array();
  for (const ProfileLayer& l : p.layers)
    layers.push_back({{"id", l.id}, {"type", l.type}, {"params", l.params}, {"forward_s", l.forward_s},
                      {"backward_s", l.backward_s}});
  j["layers"] = layers;
  j["loss_s"] = p.loss_s;
  j["update_s_per_float"] = p.update_s_per_float;
  j["other_s"] = p.other_s;
  j["mode"] = p.mode;
  json buckets = json::array();
  for (const ProfileBucket& b : p.buckets) buckets.push_back({{"floats", b.floats}, {"ready_after", b.ready_after}});
  j["buckets"] = buckets;
  j["total_floats"] = p.total_floats;
  const Provenance& v = p.provenance;
  json prov = {{"notes", v.notes}};
  if (v.bucket_mb >= 0) prov["bucket_mb"] = v.bucket_mb;
  if (v.ranks > 0) prov["ranks"] = v.ranks;
  if (!v.mode.empty()) prov["mode"] = v.mode;
  if (v.measured_step_s > 0) {
    prov["measured_step_s"] = v.measured_step_s;
    prov["measured_compute_s"] = v.measured_compute_s;
    prov["measured_exposed_s"] = v.measured_exposed_s;
  }
  if (v.threads > 0) prov["threads"] = v.threads;
  if (v.nodes > 0) prov["nodes"] = v.nodes;
  j["provenance"] = prov;
  return j.dump(2) + "\n";
}

double profile_compute_s(const StepProfile& p) {
  double t = p.other_s + p.loss_s + static_cast<double>(p.total_floats) * p.update_s_per_float;
  for (size_t i = 0; i < p.layers.size(); ++i) t += p.layers[i].forward_s + (i > 0 ? p.layers[i].backward_s : 0.0);
  return t;
}

void restate_batch(StepProfile& p, int64_t batch) {
  DTNN_CHECK(batch > 0, "the batch per rank must be > 0 (got ", batch, ")");
  if (batch == p.batch_size) return;
  const double f = static_cast<double>(batch) / static_cast<double>(p.batch_size);
  for (ProfileLayer& l : p.layers) {
    l.forward_s *= f;
    l.backward_s *= f;
  }
  p.loss_s *= f;
  p.provenance.notes.push_back("batch restated from " + std::to_string(p.batch_size) + " to " +
                               std::to_string(batch) + " samples per rank: layer and loss times scaled linearly");
  p.batch_size = batch;
}

void scale_compute(StepProfile& p, double factor, const std::string& reason) {
  DTNN_CHECK(factor > 0 && std::isfinite(factor), "compute scale must be positive and finite (got ", factor, ")");
  for (ProfileLayer& l : p.layers) {
    l.forward_s *= factor;
    l.backward_s *= factor;
  }
  p.loss_s *= factor;
  p.other_s *= factor;
  p.update_s_per_float *= factor;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", factor);
  p.provenance.notes.push_back(std::string("every compute time scaled by ") + buf + ": " + reason);
}

}  // namespace dtnn::perf
