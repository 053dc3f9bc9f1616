#include "analysis/perfmodel/predict_command.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "analysis/perfmodel/collective_fit.h"
#include "analysis/perfmodel/predict_ceiling.h"
#include "analysis/perfmodel/profile_from_report.h"
#include "analysis/perfmodel/step_model.h"
#include "core/error.h"
#include "core/file_io.h"
#include "results/store.h"

namespace dtnn::perf {

namespace {

using nlohmann::json;

constexpr const char* kModelVersion = "dtnn-perfmodel/4";  // 4: ranks wait for the slowest (step jitter)

std::string printf_str(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_str(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string describe_link(const LinkCost& l) {
  return printf_str("alpha %.3g us, 1/beta %.3g GB/s, gamma %.3g ns/B", l.alpha * 1e6,
                    l.beta > 0 ? 1e-9 / l.beta : INFINITY, l.gamma * 1e9);
}

std::string describe_platform(const Platform& p) {
  std::string s = p.name + " (" + describe_link(p.inter);
  if (p.ranks_per_node > 1) s += printf_str("; %d ranks/node: ", p.ranks_per_node) + describe_link(p.intra);
  return s + ")";
}

struct Row {
  int ranks = 1;
  double samples_per_rank = 0, step_s = 0, compute_s = 0, exposed_s = 0, comm_s = 0, samples_per_s = 0,
         efficiency = 0;
  std::string algorithms;
};

void print_rows(std::ostream& out, const std::vector<Row>& rows) {
  out << printf_str("%6s %12s %12s %12s %12s %12s %11s  %s\n", "ranks", "step ms", "compute ms", "exposed ms",
                    "comm ms", "samples/s", "efficiency", "allreduce");
  for (const Row& r : rows)
    out << printf_str("%6d %12.3f %12.3f %12.3f %12.3f %12.1f %10.1f%%  %s\n", r.ranks, r.step_s * 1e3,
                      r.compute_s * 1e3, r.exposed_s * 1e3, r.comm_s * 1e3, r.samples_per_s, r.efficiency * 100,
                      r.algorithms.empty() ? "-" : r.algorithms.c_str());
}

json rows_json(const std::vector<Row>& rows) {
  json a = json::array();
  for (const Row& r : rows)
    a.push_back({{"ranks", r.ranks}, {"samples_per_rank", r.samples_per_rank}, {"step_s", r.step_s},
                 {"compute_s", r.compute_s}, {"exposed_s", r.exposed_s}, {"comm_s", r.comm_s},
                 {"samples_per_s", r.samples_per_s}, {"efficiency", r.efficiency}, {"allreduce", r.algorithms}});
  return a;
}

// The platform with the fitted link, printing (or collecting) the fit.
Platform calibrated(const PredictCommandOptions& o, Platform platform, json& report, std::ostream& out) {
  std::vector<FitPoint> points;
  if (o.fit_collectives == "db") {
    points = load_store_points(ResultStore::open_read_only(o.db), o.fit_transport);
  } else {
    points = load_bench_points(o.fit_collectives);
  }
  FitOptions f;
  f.rules = parse_rules(o.collectives);
  f.fit_gamma = o.fit_gamma;
  f.gamma = platform.inter.gamma;
  DTNN_CHECK(o.fit_op == "allreduce" || o.fit_op == "iallreduce" || o.fit_op == "both",
             "--fit-op must be allreduce, iallreduce or both (got '", o.fit_op, "')");
  f.op = o.fit_op == "both" ? "" : o.fit_op;
  if (o.fit_max_bytes > 0) f.max_bytes = o.fit_max_bytes;
  const FitResult fit = fit_link(points, f);
  DTNN_CHECK(fit.link.alpha >= 0 && fit.link.beta > 0 && fit.link.gamma >= 0, "--fit-collectives: the fit gives alpha ",
             fit.link.alpha, " s, beta ", fit.link.beta, " s/B, gamma ", fit.link.gamma,
             " s/B; a negative value means these sizes do not follow the model (fix gamma, narrow the range)");
  platform.name += "+fit";
  platform.source = "fitted to " + o.fit_collectives;
  platform.inter = platform.intra = fit.link;
  if (o.json) {
    report["fit"] = {{"alpha", fit.link.alpha}, {"beta", fit.link.beta}, {"gamma", fit.link.gamma},
                     {"gamma_fitted", fit.gamma_fitted}, {"points", fit.points.size()}, {"rms_rel", fit.rms_rel},
                     {"max_abs_rel", fit.max_abs_rel}, {"condition", fit.condition}, {"notes", fit.notes}};
  } else {
    out << "collective fit (" << o.fit_collectives << ", " << rules_name(f.rules) << " rules):\n"
        << describe_fit(fit) << "\n";
  }
  return platform;
}

// --inter_gbps, --inter_alpha_us, --intra_gbps, --intra_alpha_us, --ranks_per_node over the preset.
void describe_cluster(const PredictCommandOptions& o, Platform& platform) {
  const auto rate = [](const std::optional<double>& gbps, const char* name, double& beta) {
    if (!gbps) return false;
    DTNN_CHECK(*gbps > 0 && std::isfinite(*gbps), name, " must be a positive rate in Gb/s (got ", *gbps, ")");
    beta = 8e-9 / *gbps;
    return true;
  };
  const auto latency = [](const std::optional<double>& us, const char* name, double& alpha) {
    if (!us) return false;
    DTNN_CHECK(*us >= 0 && std::isfinite(*us), name, " must be >= 0 microseconds (got ", *us, ")");
    alpha = *us * 1e-6;
    return true;
  };
  bool changed = rate(o.inter_gbps, "--inter_gbps", platform.inter.beta);
  changed |= latency(o.inter_alpha_us, "--inter_alpha_us", platform.inter.alpha);
  changed |= rate(o.intra_gbps, "--intra_gbps", platform.intra.beta);
  changed |= latency(o.intra_alpha_us, "--intra_alpha_us", platform.intra.alpha);
  if (o.ranks_per_node) {
    DTNN_CHECK(*o.ranks_per_node >= 1, "--ranks_per_node must be >= 1 (got ", *o.ranks_per_node, ")");
    platform.ranks_per_node = *o.ranks_per_node;
    changed = true;
  }
  if (changed) {
    platform.name += "*";
    platform.source += "; changed by --inter_*/--intra_*/--ranks_per_node";
  }
}

StepProfile load_profile(const PredictCommandOptions& o) {
  ReportOptions r;
  r.bucket_mb = o.bucket_mb;
  if (o.from_run) return profile_from_stored_run(ResultStore::open_read_only(o.db), *o.from_run, r);
  if (!o.from_report.empty()) return profile_from_report_file(o.from_report, r);
  DTNN_CHECK(!o.bucket_mb, "--bucket_mb re-plans the buckets of a run: give --from-run or --from-report");
  return read_step_profile(o.profile);
}

int predict_pydtnn(const PredictCommandOptions& o, const Platform& platform, const std::vector<int>& ranks,
                   const StepProfile* profile, json& report, std::ostream& out) {
  DTNN_CHECK(!o.model.empty() || profile, "--model_kind pydtnn needs --model (a zoo model name)");
  const std::string model = o.model.empty() ? profile->model : o.model;
  PydtnnParams prm;
  prm.cpu_speed = o.cpu_speed.value_or(prm.cpu_speed);
  prm.memory_bw = o.memory_bw.value_or(prm.memory_bw);
  prm.network_bw = o.network_bw.value_or(8.0 / platform.inter.beta);
  prm.network_lat = o.network_lat.value_or(platform.inter.alpha);
  prm.network_alg = o.network_alg;
  for (double v : {prm.cpu_speed, prm.memory_bw, prm.network_bw})
    DTNN_CHECK(v > 0 && std::isfinite(v), "--cpu_speed, --memory_bw and --network_bw must be positive");
  DTNN_CHECK(prm.network_lat >= 0 && std::isfinite(prm.network_lat), "--network_lat must be finite and >= 0");
  const int64_t batch = o.batch_size > 0 ? o.batch_size : profile ? profile->batch_size : 64;
  const bool strong = o.scaling == "strong";
  const double global = o.global_batch > 0 ? o.global_batch : static_cast<double>(batch);
  const bool blocking = (o.mode.empty() ? std::string("blocking") : o.mode) == "blocking";
  // PyDTNN's batch per rank: global_batch_size // comm_size (model.py get_batch_size).
  const auto per_rank = [&](int p) { return strong ? std::floor(global / p) : static_cast<double>(batch); };
  const auto step_of = [&](int p) {
    const double b = per_rank(p);
    DTNN_CHECK(b >= 1, "strong scaling: a global batch of ", global, " gives ", p, " ranks no sample each (PyDTNN's ",
               "batch is global // ranks)");
    return pydtnn_calculate_time(pydtnn_layers(model, b, prm), p, blocking, prm);
  };
  const double one = step_of(1).total;
  std::vector<Row> rows;
  for (int p : ranks) {
    const PTime t = step_of(p);
    Row r;
    r.ranks = p;
    r.samples_per_rank = per_rank(p);
    r.step_s = t.total;
    r.compute_s = t.comp + t.mem;
    r.comm_s = t.net;
    r.exposed_s = std::max(0.0, t.total - r.compute_s);
    r.samples_per_s = t.total > 0 ? p * r.samples_per_rank / t.total : 0;
    r.efficiency = t.total > 0 ? (strong ? one / (p * t.total) : one / t.total) : 0.0;
    r.algorithms = "pydtnn-" + prm.network_alg;
    rows.push_back(r);
  }
  const std::string head =
      printf_str("dtnn predict (PyDTNN's model, pydtnn/performance_models.py): %s, %lld samples per rank%s, %s, %s "
                 "scaling\nparameters: cpu_speed %.3g FLOP/s, memory_bw %.3g B/s, network_bw %.3g bit/s, "
                 "network_lat %.3g s, network_alg %s",
                 model.c_str(), static_cast<long long>(batch), strong ? " at 1 rank" : "",
                 blocking ? "blocking" : "non_blocking", strong ? "strong" : "weak", prm.cpu_speed, prm.memory_bw,
                 prm.network_bw, prm.network_lat, prm.network_alg.c_str());
  if (o.json) {
    report["model_kind"] = "pydtnn";
    report["model"] = model;
    report["batch_size"] = batch;  // the store's batch_size column: per rank (strong: the 1-rank batch)
    report["parameters"] = {{"cpu_speed", prm.cpu_speed}, {"memory_bw", prm.memory_bw},
                            {"network_bw", prm.network_bw}, {"network_lat", prm.network_lat},
                            {"network_alg", prm.network_alg}};
    report["mode"] = blocking ? "blocking" : "non_blocking";
    report["variant"] = prediction_variant(o);
    report["scaling"] = o.scaling;
    report["rows"] = rows_json(rows);
    out << report.dump(2) << "\n";
    return 0;
  }
  out << head << "\n";
  print_rows(out, rows);
  out << "Every row is a prediction of PyDTNN's analytic model (roofline compute, " << prm.network_alg
      << " allreduce), not a measurement.\n";
  return 0;
}

}  // namespace

std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<long long> values;
  bool dots = false;
  size_t dots_at = 0, pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item == "...") {
      DTNN_CHECK(!dots && values.size() >= 2, "--ranks: \"...\" needs two rank counts before it (e.g. 1,2,4,...,256)");
      dots = true;
      dots_at = values.size();
    } else {
      DTNN_CHECK(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos,
                 "--ranks: expected positive integers separated by commas, e.g. 1,2,4,...,256 (got '", text, "')");
      DTNN_CHECK(item.size() <= 7, "--ranks: ", item, " is not in 1..1048576");
      values.push_back(std::stoll(item));
      DTNN_CHECK(values.back() >= 1 && values.back() <= 1048576, "--ranks: ", values.back(), " is not in 1..1048576");
    }
    pos = comma + 1;
  }
  std::vector<int> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (dots && i == dots_at) {
      const long long a = values[i - 2], b = values[i - 1], last = values[i];
      const bool geometric = a > 0 && b % a == 0 && b / a > 1;
      DTNN_CHECK(b > a, "--ranks: the counts before \"...\" must increase");
      DTNN_CHECK(last > b, "--ranks: the count after \"...\" (", last, ") must be above those before it");
      for (long long v = geometric ? b * (b / a) : b + (b - a); v < last; v = geometric ? v * (b / a) : v + (b - a))
        out.push_back(static_cast<int>(v));
    }
    out.push_back(static_cast<int>(values[i]));
  }
  DTNN_CHECK(!dots || dots_at < values.size(), "--ranks: \"...\" needs a last rank count after it");
  // One row per rank count, in order: a repeated or decreasing count is a typing slip (and stored twice).
  for (size_t i = 1; i < out.size(); ++i)
    DTNN_CHECK(out[i] > out[i - 1], "--ranks: the counts must increase (", out[i], " after ", out[i - 1], ")");
  return out;
}

std::string prediction_variant(const PredictCommandOptions& o) {
  std::vector<std::string> parts;
  const auto add = [&](bool set, const std::string& text) {
    if (set) parts.push_back(text);
  };
  add(o.inter_gbps.has_value(), printf_str("inter %g Gb/s", o.inter_gbps.value_or(0)));
  add(o.inter_alpha_us.has_value(), printf_str("inter alpha %g us", o.inter_alpha_us.value_or(0)));
  add(o.intra_gbps.has_value(), printf_str("intra %g Gb/s", o.intra_gbps.value_or(0)));
  add(o.intra_alpha_us.has_value(), printf_str("intra alpha %g us", o.intra_alpha_us.value_or(0)));
  add(o.ranks_per_node.has_value(), printf_str("%d ranks per node", o.ranks_per_node.value_or(0)));
  add(!o.fit_collectives.empty(),
      "fit of " + (o.fit_collectives == "db" ? "the store's " + o.fit_transport + " rows" : o.fit_collectives) +
          (o.fit_op == "allreduce" ? "" : " (" + o.fit_op + ")") +
          (o.fit_max_bytes > 0 ? printf_str(" up to %g B", o.fit_max_bytes) : "") + (o.fit_gamma ? ", gamma fitted" : ""));
  add(o.gamma.has_value(), printf_str("gamma %g s/B", o.gamma.value_or(0)));
  add(o.algorithm != "auto", o.algorithm + " forced");
  add(o.bucket_mb.has_value(), printf_str("buckets %g MiB", o.bucket_mb.value_or(0)));
  add(o.batch_size > 0 && o.model_kind == "dtnn", printf_str("batch %lld", static_cast<long long>(o.batch_size)));
  add(o.rank_samples_per_s > 0, printf_str("%g samples/s per rank", o.rank_samples_per_s));
  add(!o.ceiling.empty(), "ceiling " + o.ceiling);
  add(o.step_jitter.value_or(0) > 0, printf_str("step jitter %.4f", o.step_jitter.value_or(0)));
  add(o.scaling == "strong" && o.global_batch > 0, printf_str("global batch %g", o.global_batch));
  if (o.model_kind == "pydtnn") {  // PyDTNN's hidden options
    add(o.batch_size > 0, printf_str("batch %lld", static_cast<long long>(o.batch_size)));
    add(o.cpu_speed.has_value(), printf_str("cpu_speed %g", o.cpu_speed.value_or(0)));
    add(o.memory_bw.has_value(), printf_str("memory_bw %g", o.memory_bw.value_or(0)));
    add(o.network_bw.has_value(), printf_str("network_bw %g", o.network_bw.value_or(0)));
    add(o.network_lat.has_value(), printf_str("network_lat %g", o.network_lat.value_or(0)));
    add(o.network_alg != "vdg", "network_alg " + o.network_alg);
  }
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : "; ") + p;
  return text;
}

namespace {

// The options' values and combinations; returns how many profile sources were given (0 or 1).
int check_predict_options(const PredictCommandOptions& o) {
  DTNN_CHECK(o.model_kind == "dtnn" || o.model_kind == "pydtnn", "--model_kind must be dtnn or pydtnn (got '",
             o.model_kind, "')");
  DTNN_CHECK(o.scaling == "weak" || o.scaling == "strong", "--scaling must be weak or strong (got '", o.scaling, "')");
  DTNN_CHECK(o.mode.empty() || o.mode == "blocking" || o.mode == "non_blocking",
             "--mode must be blocking or non_blocking (got '", o.mode, "')");
  // A whole number of samples (a fraction was stored as its floor beside a variant naming the fraction).
  DTNN_CHECK(o.global_batch >= 0 && o.global_batch <= 1e9 && o.global_batch == std::floor(o.global_batch),
             "--global_batch must be a whole number of samples from 0 (the profile's batch) to 1e9 (got ",
             o.global_batch, ")");
  DTNN_CHECK(!o.bucket_mb || (*o.bucket_mb >= 0 && std::isfinite(*o.bucket_mb)), "--bucket_mb must be >= 0");
  const int sources = (o.from_run ? 1 : 0) + (o.from_report.empty() ? 0 : 1) + (o.profile.empty() ? 0 : 1);
  DTNN_CHECK(sources <= 1, "give one of --from-run, --from-report and --profile");
  check_outputs_writable({{"--write-profile", o.write_profile}});
  // --write-profile=p.json beside --profile=p.json would replace the measured profile with a restated one.
  check_files_distinct({{"--write-profile", o.write_profile, true},
                        {"--profile", o.profile, false},
                        {"--from-report", o.from_report, false},
                        {"--db", o.db, false},
                        {"--from-simgrid", o.from_simgrid, false},
                        {"--fit-collectives", o.fit_collectives == "db" ? std::string() : o.fit_collectives, false},
                        {"--platform", o.platform, false}});
  // The fit replaces both links: link overrides given with it would be dropped without a word.
  DTNN_CHECK(o.fit_collectives.empty() || !(o.inter_gbps || o.inter_alpha_us || o.intra_gbps || o.intra_alpha_us),
             "--fit-collectives replaces both links: give it without --inter_gbps/--inter_alpha_us/--intra_gbps/"
             "--intra_alpha_us");
  DTNN_CHECK(o.rank_samples_per_s >= 0 && std::isfinite(o.rank_samples_per_s), "--rank_samples_per_s must be > 0");
  DTNN_CHECK(o.batch_size >= 0, "--batch_size must be > 0 (got ", o.batch_size, ")");
  return sources;
}

// The platform predicted on: the preset, its cluster overrides, --gamma, or the fit of measured collectives;
// recorded in the report.
Platform predict_platform(const PredictCommandOptions& o, json& report, std::ostream& out) {
  Platform platform = find_platform(o.platform);
  describe_cluster(o, platform);
  if (o.gamma) {
    DTNN_CHECK(*o.gamma >= 0 && std::isfinite(*o.gamma), "--gamma must be >= 0 (seconds per byte)");
    platform.inter.gamma = platform.intra.gamma = *o.gamma;
  }
  if (!o.fit_collectives.empty()) platform = calibrated(o, platform, report, out);
  report["platform"] = {{"name", platform.name},
                        {"inter", {{"alpha", platform.inter.alpha}, {"beta", platform.inter.beta}, {"gamma", platform.inter.gamma}}},
                        {"intra", {{"alpha", platform.intra.alpha}, {"beta", platform.intra.beta}, {"gamma", platform.intra.gamma}}},
                        {"ranks_per_node", platform.ranks_per_node}, {"source", platform.source}};
  return platform;
}

// The measured profile, restated to --batch_size and rescaled to --rank_samples_per_s (the dtnn model), and
// written to --write-profile; none without a source.
std::optional<StepProfile> predict_profile(const PredictCommandOptions& o, int sources) {
  std::optional<StepProfile> profile;
  if (sources == 1) profile = load_profile(o);
  if (profile && !o.model.empty())
    DTNN_CHECK(profile->model == o.model, "--model ", o.model, " but the profile is of ", profile->model);
  if (profile && o.model_kind == "dtnn") {
    if (o.batch_size > 0) restate_batch(*profile, o.batch_size);
    if (o.rank_samples_per_s > 0)
      scale_compute(*profile,
                    static_cast<double>(profile->batch_size) / o.rank_samples_per_s / profile_compute_s(*profile),
                    printf_str("one rank computes %.6g samples/s (--rank_samples_per_s)", o.rank_samples_per_s));
  } else {
    DTNN_CHECK(o.rank_samples_per_s == 0, "--rank_samples_per_s scales measured layer times: it needs the dtnn model "
                                          "and a profile (--from-run, --from-report or --profile)");
  }
  if (!o.write_profile.empty()) {
    DTNN_CHECK(profile, "--write-profile needs measured times: --from-run, --from-report or --profile");
    write_file_atomically(o.write_profile, step_profile_json(*profile));
  }
  return profile;
}

// Why the profile's run cannot be compared with the prediction for its rank count ("" when it can). A restated
// batch or rescaled compute is no longer the run it came from, and (past one rank) a platform, collective
// algorithm, reduction rate or bucket cap the run did not have predicts another run. A run on one host (or of
// unknown placement: dtnn before placements ran on one) had this machine's links: localhost2*, or a fit of its
// measured collectives.
std::string why_not_compared(const PredictCommandOptions& o, const Provenance& v, const Platform& platform) {
  const bool communicates = v.ranks > 1, one_host = v.nodes <= 1;
  const bool local_platform = platform.name.rfind("localhost", 0) == 0 || !o.fit_collectives.empty();
  if (o.batch_size > 0 || o.rank_samples_per_s > 0) return "--batch_size/--rank_samples_per_s changed the profile";
  if (communicates && (o.algorithm != "auto" || o.gamma || o.bucket_mb))
    return "--algorithm/--gamma/--bucket_mb changed what is predicted";
  if (communicates && platform.name.find('*') != std::string::npos)
    return "--inter_*/--intra_*/--ranks_per_node changed the platform";
  if (communicates && one_host && !local_platform)
    return "the run had one host's links, the prediction is for " + platform.name +
           " (compare with localhost2, localhost2_tcp or --fit-collectives)";
  return "";
}

// The run the profile came from, beside the prediction for its rank count and mode: a line and its JSON.
struct MeasuredNote {
  std::string text;
  json fields;
};

MeasuredNote measured_note(const PredictCommandOptions& o, const StepProfile& profile, const Platform& platform,
                           const std::vector<StepPrediction>& preds, const StepOptions& so) {
  const Provenance& v = profile.provenance;
  MeasuredNote m;
  if (!(v.measured_step_s > 0 && v.ranks > 0)) return m;
  const std::string mmode = v.mode == "none" ? "none" : v.mode;
  m.text = printf_str("measured: %s at %d rank%s (%s, %d thread%s): step %.3f ms (compute %.3f, exposed %.3f)",
                      profile.source_run ? ("run " + std::to_string(*profile.source_run)).c_str() : "the report",
                      v.ranks, v.ranks == 1 ? "" : "s", mmode.c_str(), v.threads, v.threads == 1 ? "" : "s",
                      v.measured_step_s * 1e3, v.measured_compute_s * 1e3, v.measured_exposed_s * 1e3);
  m.fields = {{"ranks", v.ranks}, {"mode", mmode}, {"step_s", v.measured_step_s},
              {"compute_s", v.measured_compute_s}, {"exposed_s", v.measured_exposed_s}};
  const std::string why_not = why_not_compared(o, v, platform);
  if (!why_not.empty()) m.text += "; not compared (" + why_not + ")";
  for (const StepPrediction& s : preds)
    if (why_not.empty() && s.ranks == v.ranks && (v.ranks == 1 || mmode == so.mode) && !so.strong) {
      const double err = (s.step_s - v.measured_step_s) / v.measured_step_s;
      m.text += printf_str("; predicted on %s %.3f ms (%+.1f %%)", platform.name.c_str(), s.step_s * 1e3, err * 100);
      m.fields["predicted_step_s"] = s.step_s;
      m.fields["error"] = err;
    }
  return m;
}

void print_dtnn_prediction(const PredictCommandOptions& o, const StepProfile& profile, const Platform& platform,
                           const StepOptions& so, const std::vector<Row>& rows, const MeasuredNote& measured,
                           std::ostream& out) {
  out << printf_str("dtnn predict: %s, %lld samples per rank%s, %s, %s scaling, %s collectives\n",
                    profile.model.c_str(), static_cast<long long>(profile.batch_size),
                    so.strong ? printf_str(" (global batch %.0f)", so.global_batch > 0 ? so.global_batch
                                                                                       : double(profile.batch_size))
                                    .c_str()
                              : "",
                    so.mode.c_str(), o.scaling.c_str(), rules_name(so.rules));
  out << "platform: " << describe_platform(platform) << "\n";
  out << printf_str("profile: %zu layers, %lld floats summed per step, %zu buckets", profile.layers.size(),
                    static_cast<long long>(profile.total_floats), profile.buckets.size());
  if (profile.provenance.bucket_mb >= 0) out << printf_str(" (cap %g MiB)", profile.provenance.bucket_mb);
  out << "\n";
  print_rows(out, rows);
  if (!measured.text.empty()) out << measured.text << "\n";
  for (const std::string& n : profile.provenance.notes) out << "note: " << n << "\n";
  out << "Every row is a prediction (" << kModelVersion << ", analysis/perfmodel/step_model.h), not a measurement.\n";
}

}  // namespace

int run_predict_command(const PredictCommandOptions& given, std::ostream& out) {
  PredictCommandOptions o = given;  // its ceiling becomes the one applied (predict_ceiling.h), once known
  const int sources = check_predict_options(o);
  const std::vector<int> ranks = parse_rank_list(o.ranks);
  StepOptions so;
  so.rules = parse_rules(o.collectives);
  if (o.algorithm != "auto") so.algorithm = parse_algorithm(o.algorithm);
  if (!o.ceiling.empty() && o.ceiling != "none") parse_ceiling(o.ceiling);  // refused before anything is read
  json report = {{"schema", "dtnn.prediction/1"}, {"model_version", kModelVersion}};
  const Platform platform = predict_platform(o, report, out);
  std::optional<StepProfile> profile = predict_profile(o, sources);
  if (o.model_kind == "pydtnn") return predict_pydtnn(o, platform, ranks, profile ? &*profile : nullptr, report, out);
  DTNN_CHECK(profile, "the dtnn model needs measured times: --from-run ID, --from-report FILE or --profile FILE "
                      "(or --model_kind pydtnn for PyDTNN's formulas)");
  const CeilingChoice ceiling = choose_ceiling(o, *profile, platform);
  so.ceiling = ceiling.ceiling;
  so.step_jitter = ceiling.step_jitter;
  o.ceiling = ceiling.text;  // the prediction's variant names the ceiling and jitter applied, given or stored
  o.step_jitter = ceiling.step_jitter;
  if (!ceiling.note.empty()) profile->provenance.notes.push_back(ceiling.note);
  so.mode = o.mode.empty() ? profile->mode : o.mode;
  so.strong = o.scaling == "strong";
  so.global_batch = o.global_batch;
  DTNN_CHECK(so.mode == "blocking" || !profile->buckets.empty(), "non_blocking needs the profile's buckets");
  const std::vector<StepPrediction> preds = predict_scaling(*profile, platform, ranks, so);
  std::vector<Row> rows;
  for (const StepPrediction& s : preds)
    rows.push_back({s.ranks, s.samples_per_rank, s.step_s, s.compute_s, s.exposed_s, s.comm_s, s.samples_per_s,
                    s.efficiency, s.algorithms});
  const MeasuredNote measured = measured_note(o, *profile, platform, preds, so);
  if (!o.json) {
    print_dtnn_prediction(o, *profile, platform, so, rows, measured, out);
    return 0;
  }
  report["model_kind"] = "dtnn";
  report["model"] = profile->model;
  report["batch_size"] = profile->batch_size;
  if (profile->source_run) report["source_run"] = *profile->source_run;
  report["mode"] = so.mode;
  report["scaling"] = o.scaling;
  report["rules"] = rules_name(so.rules);
  report["variant"] = prediction_variant(o);
  report["rows"] = rows_json(rows);
  if (!measured.fields.is_null()) report["measured"] = measured.fields;
  report["notes"] = profile->provenance.notes;
  out << report.dump(2) << "\n";
  return 0;
}

}  // namespace dtnn::perf
