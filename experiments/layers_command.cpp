#include "experiments/layers_command.h"

#include <array>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>
#include <map>
#include <ostream>

#include "backend/cpu/blas.h"
#include "backend/gpu_ops.h"
#include "conv/conv_select.h"
#include "conv/conv_timing.h"
#include "core/error.h"
#include "core/file_io.h"
#include "models/plan.h"

namespace dtnn {
namespace {

struct LayerProblem {
  ConvProblem problem;
  int count = 0;       // layers with this problem
  int first_layer = 0; // index of the first such conv layer (1-based, model order)
};

std::vector<LayerProblem> distinct_problems(const ModelPlan& plan, int64_t batch, Layout layout) {
  std::vector<LayerProblem> out;
  std::map<std::string, size_t> index;
  int layer = 0;
  for (const std::string& text : plan.conv_problems) {
    ++layer;
    ConvProblem p = ConvProblem::parse(text).with_batch(batch);
    p.layout = layout;
    auto [it, inserted] = index.emplace(p.str(), out.size());
    if (inserted) out.push_back({p, 0, layer});
    ++out[it->second].count;
  }
  return out;
}

std::string short_name(std::string_view full) {
  const auto dot = full.find('.');
  return std::string(dot == std::string_view::npos ? full : full.substr(dot + 1));
}

// "gpu.cudnn.fft" -> "fft", "gpu.cublas_1x1" -> "cublas_1x1": the GPU table's column names.
std::string gpu_column(std::string_view name) {
  std::string s = short_name(name);
  return s.rfind("cudnn.", 0) == 0 ? s.substr(6) : s;
}

// The --device gpu table (see layers_command.h).
int run_layers_gpu(const LayersCommandOptions& o, const std::vector<LayerProblem>& layers, std::ostream& out) {
  gpu::init(0);
  gpu::set_allow_tf32(o.allow_tf32);
  std::vector<const ConvAlgorithm*> algos;
  const ConvAlgorithm* find = nullptr;
  const ConvAlgorithm* fixed = nullptr;
  for (const ConvAlgorithm* a : conv_algorithms_named(o.algos, Device::gpu)) {
    if (a->name() == "gpu.cudnn_find") find = a;
    else if (a->name() == "gpu.cudnn.pydtnn_fixed") fixed = a;
    else algos.push_back(a);
  }
  if (!find) find = &find_conv_algorithm("gpu.cudnn_find");
  if (!fixed) fixed = &find_conv_algorithm("gpu.cudnn.pydtnn_fixed");
  TimingOptions topt;
  topt.samples = o.samples;
  topt.min_sample_ms = 5.0;
  out << o.model << ", batch " << o.batch_size << ", " << o.tensor_format << ", " << gpu::device_name()
      << (o.allow_tf32 ? ", TF32 allowed" : ", TF32 off") << ": ms per call (median of " << o.samples
      << " CUDA-event samples)\n";
  char line[512];
  std::string header;
  std::snprintf(line, sizeof line, "%-5s %-2s %-50s %-10s", "layer", "x", "problem", "dir");
  header = line;
  for (const ConvAlgorithm* a : algos) {
    std::snprintf(line, sizeof line, " %10.10s", gpu_column(a->name()).c_str());
    header += line;
  }
  out << header << "  fastest (TFLOP/s)            cudnn_find\n";
  nlohmann::json rows = nlohmann::json::array();
  double best_total = 0.0, find_total = 0.0, fixed_total = 0.0;
  int wrong = 0;
  for (const LayerProblem& l : layers) {
    ConvBench bench(l.problem);
    for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
      std::snprintf(line, sizeof line, "%-5d %-2d %-50s %-10s", l.first_layer, l.count, l.problem.str().c_str(),
                    conv_dir_name(d));
      std::string row = line;
      double best = std::numeric_limits<double>::infinity();
      std::string best_name = "-";
      for (const ConvAlgorithm* a : algos) {
        const Support s = a->supports_dir(l.problem, d);
        nlohmann::json j = {{"model", o.model}, {"layer", l.first_layer}, {"count", l.count},
                            {"problem", l.problem.str()}, {"algorithm", a->name()}, {"direction", conv_dir_name(d)},
                            {"device", "gpu"}, {"tf32", o.allow_tf32}};
        if (!s.ok()) {
          row += "          -";
          if (s.code != SupportCode::no_such_direction) {
            j["declined"] = s.why;
            rows.push_back(j);
          }
          continue;
        }
        if (const ConvCheck c = bench.check(*a, d); !c.ok()) {
          row += "      wrong";
          j["wrong"] = c.wrong();
          rows.push_back(j);
          ++wrong;
          continue;
        }
        const ConvTiming t = bench.time(*a, d, topt);
        j["ms"] = t.median_ms;
        j["min_ms"] = t.min_ms;
        j["max_ms"] = t.max_ms;
        j["tflops"] = t.gflops / 1e3;
        rows.push_back(j);
        std::snprintf(line, sizeof line, " %10.3f", t.median_ms);
        row += line;
        if (t.median_ms < best) {
          best = t.median_ms;
          best_name = gpu_column(a->name());
        }
      }
      // The reference columns, checked like the others: a wrong one's time is NaN, and so is its total.
      const auto checked_ms = [&](const ConvAlgorithm& a) {
        if (bench.check(a, d).ok()) return bench.time(a, d, topt).median_ms;
        ++wrong;
        return std::numeric_limits<double>::quiet_NaN();
      };
      const double find_ms = checked_ms(*find);
      best_total += l.count * best;
      find_total += l.count * find_ms;
      fixed_total += l.count * checked_ms(*fixed);
      const std::string chosen = find->chosen_for(l.problem, d);
      std::snprintf(line, sizeof line, "  %-20s %6.1f  %s %.3f ms", best_name.c_str(), l.problem.flops(d) / (best * 1e9),
                    chosen.substr(chosen.rfind('.') + 1).c_str(), find_ms);
      out << row << line << "\n" << std::flush;
    }
  }
  std::snprintf(line, sizeof line,
                "model total per step (fwd + bwd_data + bwd_filter of every conv layer): fastest per direction %.2f ms, "
                "gpu.cudnn_find %.2f ms, gpu.cudnn.pydtnn_fixed %.2f ms\n",
                best_total, find_total, fixed_total);
  out << line;
  if (wrong > 0) out << wrong << " algorithm x direction(s) computed wrong results (a bug): not timed\n";
  if (!o.json_path.empty()) {
    write_file_atomically(o.json_path,
                          nlohmann::json{{"model", o.model}, {"batch_size", o.batch_size}, {"device", gpu::device_name()},
                                         {"tensor_format", o.tensor_format}, {"tf32", o.allow_tf32},
                                         {"fastest_ms", best_total}, {"cudnn_find_ms", find_total},
                                         {"pydtnn_fixed_ms", fixed_total}, {"layers", rows}}
                                  .dump(1) + "\n");
  }
  return wrong > 0 ? 1 : 0;
}


// The first direction in which `a` computes the bench's problem wrongly ("bwd_data wrong: max rel. error
// ..."); empty when every direction passes its check against cpu.reference.
std::string wrong_direction(ConvBench& bench, const ConvAlgorithm& a) {
  for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
    const ConvCheck c = bench.check(a, d);
    if (!c.ok()) return std::string(conv_dir_name(d)) + " " + c.wrong();
  }
  return "";
}

constexpr double kNone = std::numeric_limits<double>::infinity();

// The CPU table's measurements: per layer x algorithm, the fwd + bwd_data + bwd_filter ms (kNone where
// declined or wrong) and whether the algorithm failed its check there; per layer, the fastest per direction.
struct CpuTimes {
  std::vector<std::vector<double>> ms;
  std::vector<std::vector<bool>> wrong;
  std::vector<std::array<double, 3>> dir_best;
};

// The model-level totals rows (see layers_command.h); returns them with the best_of figures in `summary`.
std::string model_totals(const std::vector<LayerProblem>& layers, const std::vector<const ConvAlgorithm*>& algos,
                         const CpuTimes& m, const TimingOptions& topt, nlohmann::json& summary) {
  // A fixed algorithm runs each layer where it is supported, else what select_conv_algorithm falls back to
  // (timed here if it is a contender, else checked and measured now); one wrong on a layer has no total.
  std::vector<double> fixed(algos.size(), 0.0);
  std::vector<bool> fell_back(algos.size(), false), wrong(algos.size(), false);
  double best_of = 0.0, best_per_layer = 0.0;  // per layer and direction (dtnn's best_of) / one per layer
  for (size_t li = 0; li < layers.size(); ++li) {
    double layer_best = kNone;
    for (size_t ai = 0; ai < algos.size(); ++ai) layer_best = std::min(layer_best, m.ms[li][ai]);
    best_per_layer += layers[li].count * layer_best;
    best_of += layers[li].count * (m.dir_best[li][0] + m.dir_best[li][1] + m.dir_best[li][2]);
    for (size_t ai = 0; ai < algos.size(); ++ai) {
      double t = m.ms[li][ai];
      if (m.wrong[li][ai]) wrong[ai] = true;
      if (t == kNone && !m.wrong[li][ai]) {
        fell_back[ai] = true;
        const ConvAlgorithm& fb = *select_conv_algorithm(algos[ai]->name(), layers[li].problem).algo[0];
        for (size_t bi = 0; bi < algos.size(); ++bi)
          if (algos[bi] == &fb) t = m.ms[li][bi], wrong[ai] = wrong[ai] || m.wrong[li][bi];
        if (t == kNone && !wrong[ai]) {
          ConvBench bench(layers[li].problem);
          if (!wrong_direction(bench, fb).empty()) {
            wrong[ai] = true;
            continue;
          }
          t = 0.0;
          for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) t += bench.time(fb, d, topt).median_ms;
        }
      }
      fixed[ai] += layers[li].count * t;
    }
  }
  double best_fixed = kNone;
  char line[512];
  std::snprintf(line, sizeof line, "%-5s  %-2s %-52s", "", "", "model total, ms per step (* = with fallbacks)");
  std::string rows = line;
  for (size_t ai = 0; ai < algos.size(); ++ai) {
    if (wrong[ai]) {
      rows += "         wrong ";
      continue;
    }
    std::snprintf(line, sizeof line, "%13.2f%s", fixed[ai], fell_back[ai] ? "*" : " ");
    rows += line;
    best_fixed = std::min(best_fixed, fixed[ai]);
  }
  std::snprintf(line, sizeof line,
                "\nbest_of (fastest per layer and direction): %.2f ms per step = %.3f x the best fixed algorithm\n"
                "one algorithm per layer (PyDTNN's BestOf):  %.2f ms per step = %.3f x\n",
                best_of, best_of / best_fixed, best_per_layer, best_per_layer / best_fixed);
  summary = {{"best_of_ms", best_of}, {"best_per_layer_ms", best_per_layer}, {"best_fixed_ms", best_fixed}};
  return rows + line;
}

// The CPU table (see layers_command.h). Returns 1 when an algorithm computed a layer wrongly, else 0.
int run_layers_cpu(const LayersCommandOptions& o, const std::vector<LayerProblem>& layers, std::ostream& out) {
  const std::vector<const ConvAlgorithm*> algos = conv_algorithms_named(o.algos);
  cpu::set_threads(o.threads);
  TimingOptions topt;
  topt.samples = o.samples;
  out << o.model << ", batch " << o.batch_size << ", " << o.tensor_format << ", " << o.threads
      << " thread(s): ms per call of fwd + bwd_data + bwd_filter (sum of medians of " << o.samples
      << " samples), each algorithm checked against cpu.reference before it is timed\n";
  char line[512];
  std::string header = "layer  x  ";
  std::snprintf(line, sizeof line, "%-52s", "problem");
  header += line;
  for (const ConvAlgorithm* a : algos) {
    std::snprintf(line, sizeof line, "%14s", short_name(a->name()).c_str());
    header += line;
  }
  out << header << "   fastest\n";

  nlohmann::json rows = nlohmann::json::array();
  CpuTimes m{std::vector<std::vector<double>>(layers.size(), std::vector<double>(algos.size(), kNone)),
             std::vector<std::vector<bool>>(layers.size(), std::vector<bool>(algos.size(), false)),
             std::vector<std::array<double, 3>>(layers.size(), {kNone, kNone, kNone})};
  int wrong = 0;
  for (size_t li = 0; li < layers.size(); ++li) {
    const LayerProblem& l = layers[li];
    ConvBench bench(l.problem);
    std::snprintf(line, sizeof line, "%-5d  %-2d %-52s", l.first_layer, l.count, l.problem.str().c_str());
    std::string row = line;
    size_t best = algos.size();
    for (size_t ai = 0; ai < algos.size(); ++ai) {
      const Support s = algos[ai]->supports(l.problem);
      nlohmann::json j = {{"model", o.model}, {"layer", l.first_layer}, {"count", l.count},
                          {"problem", l.problem.str()}, {"algorithm", algos[ai]->name()}, {"threads", o.threads}};
      if (!s.ok()) {
        row += "             -";
        j["declined"] = s.why;
        rows.push_back(j);
        continue;
      }
      const std::string bad = wrong_direction(bench, *algos[ai]);
      if (!bad.empty()) {
        row += "         wrong";
        j["wrong"] = bad;
        rows.push_back(j);
        m.wrong[li][ai] = true;
        ++wrong;
        continue;
      }
      double total = 0.0;
      for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
        const ConvTiming t = bench.time(*algos[ai], d, topt);
        total += t.median_ms;
        double& b = m.dir_best[li][static_cast<int>(d)];
        b = std::min(b, t.median_ms);
        j[std::string(conv_dir_name(d)) + "_ms"] = t.median_ms;
        j[std::string(conv_dir_name(d)) + "_min_ms"] = t.min_ms;
        j[std::string(conv_dir_name(d)) + "_max_ms"] = t.max_ms;
      }
      m.ms[li][ai] = total;
      if (best == algos.size() || total < m.ms[li][best]) best = ai;
      std::snprintf(line, sizeof line, "%14.3f", total);
      row += line;
      rows.push_back(j);
    }
    out << row << "   " << (best < algos.size() ? short_name(algos[best]->name()) : "-") << "\n" << std::flush;
  }
  nlohmann::json summary;
  out << model_totals(layers, algos, m, topt, summary);
  if (wrong > 0) out << wrong << " algorithm x layer(s) computed wrong results (a bug): not timed\n";
  if (!o.json_path.empty()) {
    summary.update(nlohmann::json{{"model", o.model}, {"batch_size", o.batch_size}, {"threads", o.threads},
                                  {"tensor_format", o.tensor_format}, {"layers", rows}});
    write_file_atomically(o.json_path, summary.dump(1) + "\n");
  }
  return wrong > 0 ? 1 : 0;
}

}  // namespace

int run_layers_command(const LayersCommandOptions& o, std::ostream& out) {
  const ModelPlan plan = plan_model(o.model);
  DTNN_CHECK(o.dataset.empty() || o.dataset == plan.dataset, "--dataset: model ", o.model, " is built for dataset ",
             plan.dataset, " (got '", o.dataset, "')");
  DTNN_CHECK(o.batch_size >= 1, "--batch_size must be at least 1 (got ", o.batch_size, ")");
  DTNN_CHECK(o.threads >= 1 && o.threads <= 1024, "--threads must be in [1, 1024] (got ", o.threads, ")");
  // (a billion timed calls was accepted and would have run for months)
  DTNN_CHECK(o.samples >= 1 && o.samples <= 100000, "--samples must be in [1, 100000] (got ", o.samples, ")");
  DTNN_CHECK(!o.list || o.json_path.empty(), "--json records measurements; --list measures nothing");
  DTNN_CHECK(!plan.conv_problems.empty(), "model ", o.model, " has no convolution layers");
  DTNN_CHECK(o.device == "cpu" || o.device == "gpu", "--device must be cpu or gpu (got '", o.device, "')");
  // Before anything is measured: an unknown algorithm (also with --list, which then measures nothing) and an
  // output that cannot be written (`--json nodir/x.json` failed after minutes of timing).
  for (const std::string& name : o.algos) check_conv_algorithm_to_time(name);
  check_outputs_writable({{"--json", o.json_path}});
  const Layout layout = parse_layout(o.tensor_format);
  const std::vector<LayerProblem> layers = distinct_problems(plan, o.batch_size, layout);
  if (o.list) {
    out << "# " << o.model << "'s convolutions at batch " << o.batch_size << " (" << plan.conv_problems.size()
        << " layers, " << layers.size() << " distinct; `dtnn layers --model " << o.model << " --list`)\n";
    for (const LayerProblem& l : layers) out << l.problem.str() << "  # x" << l.count << "\n";
    return 0;
  }
  if (o.device == "gpu") return run_layers_gpu(o, layers, out);
  return run_layers_cpu(o, layers, out);
}

}  // namespace dtnn
