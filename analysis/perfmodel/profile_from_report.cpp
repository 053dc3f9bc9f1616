#include <algorithm>

#include "analysis/perfmodel/profile_from_report.h"

#include "analysis/perfmodel/json_fields.h"
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_parse.h"
#include "core/file_io.h"
#include "layers/layers.h"
#include "models/model.h"
#include "results/store.h"
#include "parallel/gradient_reducer.h"
#include "train/options.h"
#include "train/trainer.h"

namespace dtnn::perf {

namespace {

using nlohmann::json;

std::string option(const json& options, const char* name, const std::string& fallback) {
  const auto it = options.find(name);
  return it != options.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool option_true(const json& options, const char* name) { return option(options, name, "False") == "True"; }

std::string fmt(const char* format, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Where each top-level layer's parameters start in the trainer's gradient slab (layers + 1 offsets), from the
// zoo model built shape-only with the run's fusion, padded as Model::build pads them. Empty when the zoo
// model does not match the report's layers (the reason in *why).
std::vector<int64_t> padded_param_begin(const json& options, const std::vector<ProfileLayer>& layers,
                                        std::string* why) {
  try {
    auto model = create_model(option(options, "model", ""));
    FusionOptions fusion;
    fusion.bn_relu = option_true(options, "enable_fused_bn_relu");
    fusion.conv_relu = option_true(options, "enable_fused_conv_relu");
    fusion.conv_bn = option_true(options, "enable_fused_conv_bn");
    fusion.conv_bn_relu = option_true(options, "enable_fused_conv_bn_relu");
    fusion.add_relu = option_true(options, "enable_fused_add_relu");
    model->fuse(fusion);
    if (model->num_layers() != layers.size()) {
      *why = "the zoo model has " + std::to_string(model->num_layers()) + " top-level layers, the report " +
             std::to_string(layers.size());
      return {};
    }
    BuildContext ctx;  // NHWC, batch 1: shapes only, as plan_model
    Shape shape;
    std::vector<int64_t> begin{0};
    for (size_t i = 0; i < model->num_layers(); ++i) {
      Layer& layer = model->layer(i);
      shape = layer.build(shape, ctx);
      if (layer.num_params() != layers[i].params) {
        *why = "layer " + std::to_string(i) + " has " + std::to_string(layer.num_params()) +
               " parameters in the zoo model, " + std::to_string(layers[i].params) + " in the report";
        return {};
      }
      std::vector<const Layer*> all = {&layer};
      for (const Layer* child : layer.children()) all.push_back(child);
      int64_t padded = 0;
      for (const Layer* l : all)
        for (const Param& p : l->params()) padded += (p.shape.numel() + 15) / 16 * 16;
      begin.push_back(begin.back() + padded);
    }
    return begin;
  } catch (const Error& e) {
    *why = e.what();
    return {};
  }
}

// The layers and their mean forward and backward times; returns their sum per step.
double read_layers(const json& r, const std::string& where, StepProfile& p) {
  bool timed = false;
  double layer_sum = 0.0;
  for (const json& l : r["model"]["layers"]) {
    const std::string at = where + ": model.layers[" + std::to_string(p.layers.size()) + "]";
    DTNN_CHECK(l.is_object(), at, " is not an object");
    ProfileLayer pl;
    pl.id = small_count_or(l, "id", 0, at);
    pl.type = string_or(l, "type", "", at);
    pl.params = count_or(l, "params", 0, at);
    pl.forward_s = number_or(l, "forward_ms", 0.0, at) * 1e-3;
    pl.backward_s = number_or(l, "backward_ms", 0.0, at) * 1e-3;
    timed |= l.contains("forward_ms");
    layer_sum += pl.forward_s + pl.backward_s;
    p.layers.push_back(pl);
  }
  DTNN_CHECK(!p.layers.empty(), where, ": model.layers is empty");
  DTNN_CHECK(timed, where, ": model.layers carry no forward_ms/backward_ms (a GPU run or a report without layer times)");
  p.provenance.notes.push_back("layer times: the report's mean per call (warm-up step and evaluation forwards included)");
  return layer_sum;
}

// The gradient slab as the trainer lays it out, and its buckets (plan_buckets with the run's options).
void plan_slab(const json& opts, const std::string& where, const ReportOptions& options, StepProfile& p) {
  std::string why;
  std::vector<int64_t> begin = padded_param_begin(opts, p.layers, &why);
  if (begin.empty()) {
    begin = {0};
    // (checked before adding; at most 2^50 floats, 4 PiB, so that plan_buckets' byte sizes stay exact doubles)
    for (const ProfileLayer& l : p.layers) {
      DTNN_CHECK(l.params <= (int64_t{1} << 50) - begin.back(), where, ": the layers' parameters add up past 2^50");
      begin.push_back(begin.back() + l.params);
    }
    p.provenance.notes.push_back("buckets from the report's unpadded parameter counts (" + why + ")");
  }
  TrainOptions train;
  train.metrics = option(opts, "metrics", train.metrics);
  const int64_t tail = Trainer::reduce_tail_floats(train);
  double bucket_mb = 25.0;
  try {
    bucket_mb = options.bucket_mb ? *options.bucket_mb : std::stod(option(opts, "gradient_bucket_mb", "25"));
  } catch (const std::exception&) {
    fail(where, ": options.gradient_bucket_mb is not a number");
  }
  // Reports written before --gradient_buckets_min existed planned with the cap alone.
  int64_t buckets_min = 1;
  try {
    buckets_min = std::stoll(option(opts, "gradient_buckets_min", "1"));
  } catch (const std::exception&) {
    fail(where, ": options.gradient_buckets_min is not a number");
  }
  DTNN_CHECK(buckets_min >= 1, where, ": options.gradient_buckets_min must be >= 1 (got ", buckets_min, ")");
  for (const GradientBucket& b : plan_buckets(begin, tail, bucket_mb, buckets_min))
    p.buckets.push_back({b.end - b.begin, b.ready_after});
  p.total_floats = begin.back() - begin.front() + tail;
  p.mode = option_true(opts, "non_blocking_mpi") ? "non_blocking" : "blocking";
  p.provenance.bucket_mb = bucket_mb;
}

// Measured per-step times (rank 0), over every epoch that measured them, and where the run ran.
void read_measured(const json& r, const std::string& where, Provenance& prov) {
  double step = 0, compute = 0, exposed = 0;
  int64_t steps = 0;
  if (r.contains("epochs") && r["epochs"].is_array())
    for (const json& e : r["epochs"]) {
      if (!e.contains("communication") || !e["communication"].is_object()) continue;
      const json& c = e["communication"];
      const std::string at = where + ": epochs[].communication";
      const std::string mode = string_or(c, "mode", "", at);
      if (mode.empty()) continue;
      prov.mode = mode;
      const int64_t n = count_or(c, "steps", 0, at);
      DTNN_CHECK(n <= INT64_MAX / 2 - steps, at, ": the steps add up past 2^62");
      steps += n;
      if (c.contains("rank0")) {
        DTNN_CHECK(c["rank0"].is_object(), at, ".rank0 is not an object");
        step += number_or(c["rank0"], "step_s", 0.0, at + ".rank0");
        compute += number_or(c["rank0"], "compute_s", 0.0, at + ".rank0");
        exposed += number_or(c["rank0"], "exposed_s", 0.0, at + ".rank0");
      }
    }
  if (r.contains("parallel") && r["parallel"].is_object()) {
    prov.ranks = small_count_or(r["parallel"], "ranks", 0, where + ": parallel");
    prov.threads = small_count_or(r["parallel"], "threads", 0, where + ": parallel");
  }
  if (r.contains("placement") && r["placement"].is_object()) {  // node_list: "n1,n2", the ranks' distinct hosts
    const std::string nodes = string_or(r["placement"], "node_list", "", where + ": placement");
    if (!nodes.empty()) prov.nodes = 1 + static_cast<int>(std::count(nodes.begin(), nodes.end(), ','));
  }
  if (r.contains("environment") && r["environment"].is_object() && r["environment"].contains("machine") &&
      r["environment"]["machine"].is_object())  // which stored contention ceiling applies (predict_ceiling.h)
    prov.machine_key = string_or(r["environment"]["machine"], "key", "", where + ": environment.machine");
  DTNN_CHECK(steps > 0, where, ": no epoch measured its steps (epochs[].communication): a GPU run cannot be profiled");
  prov.measured_step_s = step / steps;
  prov.measured_compute_s = compute / steps;
  prov.measured_exposed_s = exposed / steps;
}

// Loss, update and the rest of the step beyond the layers (`residual`: measured compute less the layers).
void split_residual(const json& r, const std::string& where, double residual, StepProfile& p) {
  Provenance& prov = p.provenance;
  const json* phases = r.contains("phases") && r["phases"].is_object() ? &r["phases"] : nullptr;
  if (phases && string_or(*phases, "source", "", where + ": phases") == "trace" && phases->contains("rows") &&
      (*phases)["rows"].is_array()) {
    double loss = 0, update = 0;
    int64_t traced_steps = 0;
    const std::string at = where + ": phases.rows[]";
    for (const json& row : (*phases)["rows"]) {
      DTNN_CHECK(row.is_object(), at, " is not an object");
      if (!row.contains("rank") || count_or(row, "rank", 0, at) != 0) continue;
      const std::string phase = string_or(row, "phase", "", at);
      if (phase == "step") traced_steps = count_or(row, "calls", 0, at);
      if (phase == "loss") loss = number_or(row, "total_s", 0.0, at);
      if (phase == "update_dw") update = number_or(row, "total_s", 0.0, at);
    }
    DTNN_CHECK(traced_steps > 0, where, ": phases (trace) have no step row for rank 0");
    p.loss_s = loss / traced_steps;
    p.update_s_per_float = p.total_floats > 0 ? update / traced_steps / p.total_floats : 0.0;
    p.other_s = std::max(0.0, residual - p.loss_s - update / traced_steps);
    prov.notes.push_back("loss and update from the trace (rank 0); other_s = measured compute - layers - loss - update");
  } else {
    p.update_s_per_float = p.total_floats > 0 ? std::max(0.0, residual) / p.total_floats : 0.0;
    prov.notes.push_back("estimated: no traced phases, so the measured compute per step less the layers (" +
                         fmt("%.3f ms", residual * 1e3) +
                         ": loss, update, input copy, timers) is all put in update_s_per_float; loss_s = other_s = 0");
  }
  if (residual < 0)
    prov.notes.push_back("the layers' mean times add up to more than the measured compute per step (" +
                         fmt("%.3f ms", -residual * 1e3) + " more): warm-up or evaluation calls weigh on the means");
}

}  // namespace

StepProfile profile_from_report(const std::string& text, const std::string& where, const ReportOptions& options) {
  const json r = parse_json(text, where);
  DTNN_CHECK(r.is_object() && r.contains("schema") && r["schema"] == "dtnn.run_report/1", where,
             ": not a dtnn run report (schema dtnn.run_report/1)");
  DTNN_CHECK(r.contains("options") && r["options"].is_object() && r.contains("model") && r["model"].is_object() &&
                 r["model"].contains("layers") && r["model"]["layers"].is_array(),
             where, ": a run report needs options and model.layers");
  const json& opts = r["options"];
  StepProfile p;
  p.model = option(opts, "model", string_or(r["model"], "name", "", where));
  try {
    p.batch_size = std::stoll(option(opts, "batch_size", "0"));
  } catch (const std::exception&) {
    fail(where, ": options.batch_size is not an integer");
  }
  p.source_run = options.source_run;
  const double layer_sum = read_layers(r, where, p);
  plan_slab(opts, where, options, p);
  read_measured(r, where, p.provenance);
  split_residual(r, where, p.provenance.measured_compute_s - layer_sum, p);
  check_step_profile(p, where);
  return p;
}

StepProfile profile_from_report_file(const std::string& path, const ReportOptions& options) {
  return profile_from_report(read_file(path, kMaxJsonFileBytes), path, options);
}

StepProfile profile_from_stored_run(const ResultStore& store, int64_t run_id, ReportOptions options) {
  const QueryResult q = store.query("SELECT report FROM runs WHERE id = " + std::to_string(run_id));
  DTNN_CHECK(!q.rows.empty(), "--from-run ", run_id, ": no such run in the store");
  DTNN_CHECK(q.rows[0][0].has_value(), "--from-run ", run_id, ": the run has no report (status not ok?)");
  options.source_run = run_id;
  return profile_from_report(*q.rows[0][0], "run " + std::to_string(run_id), options);
}

}  // namespace dtnn::perf
