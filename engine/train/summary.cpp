// The model table and the parameter dump, in PyDTNN's format.
#include <cstdio>

#include "train/output.h"

namespace dtnn {
namespace {

std::string center(const std::string& s, size_t width) {
  if (s.size() >= width) return s;
  const size_t left = (width - s.size()) / 2;
  return std::string(left, ' ') + s + std::string(width - s.size() - left, ' ');
}

}  // namespace

void print_model_memory(std::ostream& out, const Model& model) {
  const Model::Memory& m = model.memory();
  const auto mib = [](int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return std::string(buf);
  };
  out << "**** Model buffers (" << device_name(model.device()) << "): " << mib(m.total()) << ": activations "
      << mib(m.activations) << ", activation gradients " << mib(m.gradients) << ", workspace " << mib(m.workspace)
      << ", parameters with their gradients and state " << mib(m.parameters) << "\n";
}

void print_model_table(std::ostream& out, const Model& model) {
  const std::string line = "+-------+--------------------------+---------+---------------+-------------------+"
                           "-------------------------------------+";
  out << "**** " << model.name() << " model...\n" << line << "\n";
  out << "|" << center("Layer", 7) << "|" << center("Type", 26) << "|" << center("#Params", 9) << "|"
      << center("Output shape", 15) << "|" << center("Weights shape", 19) << "|" << center("Parameters", 37)
      << "|\n" << line << "\n";
  // Layers inside blocks follow their block, their type indented by nesting depth; a block's #Params
  // is the total of its children.
  std::vector<std::pair<const Layer*, int>> rows;
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const Layer& top = model.layer(i);
    rows.emplace_back(&top, 0);
    for (const Layer* c : top.children()) rows.emplace_back(c, 1);
  }
  // Nested blocks: a child listed in an inner block's children() sits one level deeper.
  for (size_t i = 0; i < rows.size(); ++i)
    for (const Layer* c : rows[i].first->children())
      for (size_t j = i + 1; j < rows.size(); ++j)
        if (rows[j].first == c) rows[j].second = std::max(rows[j].second, rows[i].second + 1);
  for (const auto& [layer, depth] : rows) {
    const Layer& l = *layer;
    const Shape w = l.weights_shape();
    std::string details = l.describe();
    if (!l.algorithm_name().empty()) {
      details += (details.empty() ? "" : ", ") + l.algorithm_name();
      const std::string how = l.algorithm_choice();
      if (how.rfind("best_of", 0) == 0 || how == "auto (cache)") details += " [" + how.substr(0, how.find(' ')) + "]";
    }
    out << "|" << center(std::to_string(l.id), 7) << "|" << center(std::string(2 * depth, ' ') + l.type(), 26) << "|"
        << center(std::to_string(l.num_params()), 9) << "|" << center(l.output_shape().str(), 15) << "|"
        << center(w.rank() ? w.str() : "", 19) << "|" << center(details, 37) << "|\n";
  }
  char total[160];
  std::snprintf(total, sizeof total, "|%22s%12lld%9.2f MBytes", "Total parameters",
                static_cast<long long>(model.num_params()), model.num_params() * 4.0 / (1024.0 * 1024.0));
  std::string row = total;
  row += std::string(line.size() - 1 - row.size(), ' ') + "|";
  out << row << "\n" << line << "\n";
  for (const Layer* l : model.all_layers())
    if (!l->algorithm_note().empty())
      out << "Note: layer " << l->id << " runs " << l->algorithm_name() << " because " << l->algorithm_note() << "\n";
}

void print_layer_times(std::ostream& out, const Model& model) {
  out << "**** Time per training batch, by layer (rank 0):\n";
  char buf[200];
  std::snprintf(buf, sizeof buf, "  %5s  %-14s %10s %10s  %s\n", "layer", "type", "fwd ms", "bwd ms", "algorithm");
  out << buf;
  double total_f = 0.0, total_b = 0.0;
  for (size_t i = 1; i < model.num_layers(); ++i) {
    const Model::LayerTime& t = model.layer_times()[i];
    if (t.forward_calls == 0) continue;
    const double f = 1e3 * t.forward_s / t.forward_calls;
    const double b = t.backward_calls ? 1e3 * t.backward_s / t.backward_calls : 0.0;
    total_f += f;
    total_b += b;
    std::snprintf(buf, sizeof buf, "  %5d  %-14s %10.3f %10.3f  %s\n", model.layer(i).id, model.layer(i).type().c_str(), f,
                  b, model.layer(i).algorithm_name().c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "  %5s  %-14s %10.3f %10.3f\n", "", "total", total_f, total_b);
  out << buf;
}

void print_communication(std::ostream& out, const std::vector<EpochRecord>& epochs) {
  EpochComm total;
  for (const EpochRecord& e : epochs) {
    if (e.comm.mode.empty() || e.comm.mode == "none") continue;
    total.mode = e.comm.mode;
    total.steps += e.comm.steps;
    total.buckets_per_step = e.comm.buckets_per_step;
    total.bytes_per_step = e.comm.bytes_per_step;
    for (auto [sum, add] : {std::pair{&total.rank0, &e.comm.rank0}, {&total.min, &e.comm.min},
                            {&total.median, &e.comm.median}, {&total.max, &e.comm.max}}) {
      sum->step_s += add->step_s;
      sum->compute_s += add->compute_s;
      sum->comm_s += add->comm_s;
      sum->exposed_s += add->exposed_s;
    }
  }
  if (total.mode.empty() || total.steps == 0) return;
  const double per = 1e3 / static_cast<double>(total.steps);
  char buf[256];
  std::snprintf(buf, sizeof buf, "**** Communication (%s, %lld bucket%s of %.3f MiB in all per step), ms per step:\n",
                total.mode.c_str(), static_cast<long long>(total.buckets_per_step), total.buckets_per_step == 1 ? "" : "s",
                total.bytes_per_step / (1 << 20));
  out << buf;
  std::snprintf(buf, sizeof buf, "  %-8s %10s %10s %10s %10s %9s\n", "", "step", "compute", "in comm", "exposed", "exposed %");
  out << buf;
  for (auto [name, t] : {std::pair{"rank 0", &total.rank0}, {"min", &total.min}, {"median", &total.median},
                         {"max", &total.max}}) {
    std::snprintf(buf, sizeof buf, "  %-8s %10.3f %10.3f %10.3f %10.3f %8.1f%%\n", name, per * t->step_s,
                  per * t->compute_s, per * t->comm_s, per * t->exposed_s,
                  t->step_s > 0 ? 100.0 * t->exposed_s / t->step_s : 0.0);
    out << buf;
  }
  out << "  (min/median/max: each column over the ranks)\n";
}

void print_averaging(std::ostream& out, const char* what, const AveragingStats& stats) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %lld average%s, %.3f MiB per rank, %.4f s waiting in them (rank 0), %.4f s "
                "(slowest rank)\n", what, static_cast<long long>(stats.averages), stats.averages == 1 ? "" : "s",
                stats.bytes / (1 << 20), stats.wait_s, stats.max_wait_s);
  out << buf;
  if (!stats.merges_per_rank.empty()) {
    out << "  merges per rank (asynchronous):";
    for (int64_t m : stats.merges_per_rank) out << " " << m;
    out << "\n";
  }
  if (stats.blocks_per_rank.empty()) return;
  out << "  blocks claimed per rank (dynamic):";
  for (int64_t b : stats.blocks_per_rank) out << " " << b;
  out << "\n";
}

void print_parameters(std::ostream& out, const TrainOptions& options) {
  out << "**** Parameters:\n";
  char buf[512];
  for (const auto& [name, value] : options_list(options)) {
    std::snprintf(buf, sizeof buf, "  %-31s: %s\n", name.c_str(), value.c_str());
    out << buf;
  }
}

}  // namespace dtnn
