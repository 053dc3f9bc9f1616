#include "train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "core/error.h"
#include "io/npz_values.h"
#include "train/losses.h"
#include "train/option_table.h"
#include "train/output.h"

namespace dtnn {
namespace {

constexpr int64_t kVersion = 1;

std::string num(int64_t v) { return std::to_string(v); }

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The options a resumed run must share with the checkpointed one: the table's must-match rows (tensor_format
// resolved), and the rank count.
Pairs must_match(const TrainOptions& o, int ranks) {
  Pairs out;
  for (const OptionSpec& spec : train_option_table())
    if (spec.flags & kOptMustMatch)
      out.emplace_back(spec.name, spec.name == std::string("tensor_format") ? resolved_tensor_format(o) : option_text(spec, o));
  out.emplace_back("ranks", num(static_cast<int64_t>(ranks)));
  return out;
}

// Numbers compare as numbers: checkpoints of version 1 wrote them with %.17g, the table writes the shortest
// text that reads back as the same double.
bool same_value(const std::string& key, const std::string& a, const std::string& b) {
  if (a == b) return true;
  const OptionSpec* spec = find_option(key);
  if (!spec || spec->kind != OptionKind::number) return false;
  char* ea = nullptr;
  char* eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  return *ea == '\0' && *eb == '\0' && !a.empty() && !b.empty() && x == y;
}

// Options that may differ, at the price of bit-identity.
Pairs may_differ(const TrainOptions& o) { return {{"threads", num(static_cast<int64_t>(o.threads))}, {"conv_algo", o.conv_algo}}; }

std::string to_text(const Pairs& must, const Pairs& may) {
  std::string t;
  for (const auto& [k, v] : must) t += k + "=" + v + "\n";
  for (const auto& [k, v] : may) t += "~" + k + "=" + v + "\n";  // '~': informative only
  return t;
}

Pairs parse_text(const std::string& text) {
  Pairs out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

// The value recorded under `key`, or null.
const std::string* find_value(const Pairs& pairs, const std::string& key) {
  for (const auto& [k, v] : pairs)
    if (k == key) return &v;
  return nullptr;
}

// The checkpoint's options record, checked against this run's: each option named once, the must-match ones
// equal (by name, with both values in the refusal), the informative ones that differ warned about.
Pairs check_options(const io::NpyArrayMap& arrays, const std::string& path, const TrainOptions& options, int ranks,
                    std::ostream* warn) {
  const Pairs stored = parse_text(io::read_text(arrays, "dtnn_options", path));
  std::set<std::string> named;  // a record naming an option twice (two seeds) is no record dtnn wrote
  for (const auto& [key, value] : stored)
    DTNN_CHECK(named.insert(key).second, path, ": array 'dtnn_options' names ", key, " twice: not a checkpoint dtnn wrote");
  const auto lookup = [&](const std::string& key) { return find_value(stored, key); };
  for (const auto& [key, value] : must_match(options, ranks)) {
    const std::string* was = lookup(key);
    // Keys that became must-match later (sync_batchnorm, rank_batch_shares) are absent from older
    // checkpoints: accepted when this run keeps the default, as nearly every run of that time did.
    const OptionSpec* spec = find_option(key);
    if (!was && spec && value == option_default_text(*spec)) continue;
    DTNN_CHECK(was != nullptr, path, ": checkpoint does not record --", key);
    DTNN_CHECK(same_value(key, *was, value), path, ": checkpoint was written with ", key == "ranks" ? "" : "--", key, "=", *was,
               ", this run has ", key == "ranks" ? "" : "--", key, "=", value, " (a resumed run must use the same)");
  }
  if (warn)
    for (const auto& [key, value] : may_differ(options)) {
      const std::string* was = lookup("~" + key);
      if (was && *was != value)
        *warn << "**** Warning: checkpoint was written with --" << key << "=" << *was << ", this run has --" << key
              << "=" << value << ": training continues, but not bit-identically to an uninterrupted run\n";
    }
  return stored;
}

}  // namespace

void save_checkpoint(const std::string& path, const Model& model, Optimizer& optimizer, const LRSchedulers& schedulers,
                     const TrainOptions& options, int ranks, const CheckpointState& state) {
  std::vector<io::NpyArray> arrays = weight_arrays(model);
  arrays.push_back(io::make_i64("dtnn_checkpoint_version", kVersion));
  arrays.push_back(io::make_i64("dtnn_epoch", state.epoch));
  arrays.push_back(io::make_i64("dtnn_stopped", state.stopped ? 1 : 0));
  arrays.push_back(io::make_f64("dtnn_learning_rate", {optimizer.learning_rate()}));
  arrays.push_back(io::make_i64("dtnn_optimizer_steps", optimizer.steps()));
  for (const auto& [name, t] : optimizer.state()) {
    Tensor host = Tensor::zeros(t->shape());  // the state may live on the GPU
    host.copy_from(*t);
    arrays.push_back(io::make_f32("dtnn_optimizer_" + name, {t->numel()}, host.data()));
  }
  arrays.push_back(io::make_f32("dtnn_state_slab", {model.state_size()}, model.host_state_slab()));
  schedulers.save_state(arrays);

  const size_t k = 1 + parse_metrics(options.metrics).size();
  std::vector<double> rows;
  for (const EpochRecord& e : state.epochs) {
    DTNN_ASSERT(e.train.values.size() == k && (!e.val || e.val->values.size() == k));
    rows.insert(rows.end(), {static_cast<double>(e.epoch), e.learning_rate, static_cast<double>(e.train.samples),
                             e.train.time_s});
    rows.insert(rows.end(), e.train.values.begin(), e.train.values.end());
    rows.insert(rows.end(), {e.val ? 1.0 : 0.0, e.val ? static_cast<double>(e.val->samples) : 0.0,
                             e.val ? e.val->time_s : 0.0});
    for (size_t v = 0; v < k; ++v) rows.push_back(e.val ? e.val->values[v] : 0.0);
  }
  arrays.push_back(io::make_f64("dtnn_epochs", rows,
                                {static_cast<int64_t>(state.epochs.size()), static_cast<int64_t>(7 + 2 * k)}));
  std::string text = to_text(must_match(options, ranks), may_differ(options));
  if (state.initial_weights) {  // one line: a newline in the path would start another
    std::string initial = *state.initial_weights;
    std::replace(initial.begin(), initial.end(), '\n', '?');
    text += "~initial_weights=" + initial + "\n";
  }
  arrays.push_back(io::make_text("dtnn_options", text));
  // Uncompressed: the file is rewritten every epoch and optimizer slabs barely compress.
  io::write_npz(path, arrays, false);
}

CheckpointState load_checkpoint(const std::string& path, Model& model, Optimizer& optimizer, LRSchedulers& schedulers,
                                const TrainOptions& options, int ranks, std::ostream* warn) {
  io::NpyArrayMap arrays;
  for (io::NpyArray& a : io::read_npz(path)) arrays.emplace(a.name, std::move(a));
  DTNN_CHECK(arrays.count("dtnn_checkpoint_version"), path,
             ": not a dtnn checkpoint (no array 'dtnn_checkpoint_version'; a weights file is loaded with "
             "--weights_and_bias_filename)");
  const int64_t version = io::read_i64(arrays, "dtnn_checkpoint_version", path);
  DTNN_CHECK(version == kVersion, path, ": checkpoint version ", version, " is not supported (this dtnn reads ", kVersion, ")");

  // Options first: a checkpoint of another run is refused by name, before any shape check.
  const Pairs stored = check_options(arrays, path, options, ranks, warn);
  const auto lookup = [&](const std::string& key) { return find_value(stored, key); };

  CheckpointState state;
  state.epoch = io::read_i64(arrays, "dtnn_epoch", path);
  DTNN_CHECK(state.epoch >= 0, path, ": negative epoch count");
  if (const std::string* initial = lookup("~initial_weights")) state.initial_weights = *initial;
  else state.initial_weights = std::nullopt;  // written before dtnn recorded it
  const int64_t stopped = io::read_i64(arrays, "dtnn_stopped", path);
  DTNN_CHECK(stopped == 0 || stopped == 1, path, ": array 'dtnn_stopped' must be 0 or 1 (holds ", stopped, ")");
  state.stopped = stopped == 1;
  const std::vector<double> lr = io::read_f64(arrays, "dtnn_learning_rate", path);
  DTNN_CHECK(lr.size() == 1 && lr[0] > 0 && std::isfinite(lr[0]), path,
             ": array 'dtnn_learning_rate' must hold one positive finite rate");
  const int64_t steps = io::read_i64(arrays, "dtnn_optimizer_steps", path);
  DTNN_CHECK(steps >= 0, path, ": array 'dtnn_optimizer_steps' holds a negative step count (", steps, ")");

  const size_t k = 1 + parse_metrics(options.metrics).size(), cols = 7 + 2 * k;
  const io::NpyArray& ea = io::require_array(arrays, "dtnn_epochs", path);
  DTNN_CHECK(ea.shape.size() == 2 && ea.shape[0] == state.epoch && ea.shape[1] == static_cast<int64_t>(cols), path,
             ": array 'dtnn_epochs' must have shape (", state.epoch, ", ", cols, ")");
  const std::vector<double> rows = io::read_f64(arrays, "dtnn_epochs", path);
  io::require_finite(rows.data(), rows.size(), "dtnn_epochs", path);  // a NaN loss in the history
  for (int64_t e = 0; e < state.epoch; ++e) {
    const double* r = rows.data() + e * cols;
    EpochRecord rec;
    rec.epoch = static_cast<int>(std::min<int64_t>(io::whole_count(r[0], "dtnn_epochs", path), INT32_MAX));
    rec.learning_rate = r[1];
    rec.train.samples = io::whole_count(r[2], "dtnn_epochs", path);
    rec.train.time_s = r[3];
    rec.train.values.assign(r + 4, r + 4 + k);
    if (r[4 + k] != 0.0) {
      PassResult val;
      val.samples = io::whole_count(r[5 + k], "dtnn_epochs", path);
      val.time_s = r[6 + k];
      val.values.assign(r + 7 + k, r + 7 + 2 * k);
      rec.val = val;
    }
    state.epochs.push_back(std::move(rec));
  }

  // Every step trained at least one sample: more steps than the recorded epochs trained samples is a count
  // from elsewhere (Adam's bias correction would read it).
  int64_t trained = 0;
  for (const EpochRecord& rec : state.epochs) trained += std::min<int64_t>(rec.train.samples, INT64_MAX / 2 - trained);
  DTNN_CHECK(steps <= trained, path, ": array 'dtnn_optimizer_steps' holds ", steps, " steps, more than the ", trained,
             " samples its ", state.epoch, " epoch", state.epoch == 1 ? "" : "s", " trained");

  // Check every remaining array's presence and size before changing anything.
  for (const auto& [name, t] : optimizer.state()) {
    const io::NpyArray& a = io::require_array(arrays, "dtnn_optimizer_" + name, path);
    DTNN_CHECK(a.dtype == io::NpyDType::f32 && a.numel() == t->numel(), path, ": array 'dtnn_optimizer_", name,
               "' must hold ", t->numel(), " float32 values (has ", a.numel(), ")");
  }
  const io::NpyArray& sa = io::require_array(arrays, "dtnn_state_slab", path);
  DTNN_CHECK(sa.dtype == io::NpyDType::f32 && sa.numel() == model.state_size(), path,
             ": array 'dtnn_state_slab' must hold ", model.state_size(), " float32 values (has ", sa.numel(), ")");

  std::vector<Tensor> slabs;  // read and checked before anything changes, in optimizer.state()'s order
  for (const auto& [name, t] : optimizer.state()) {
    Tensor host = Tensor::zeros(t->shape());
    io::read_f32_into(arrays, "dtnn_optimizer_" + name, path, host.data(), t->numel());
    io::require_finite(host.data(), static_cast<size_t>(t->numel()), "dtnn_optimizer_" + name, path);
    slabs.push_back(std::move(host));
  }
  std::vector<float> state_slab(static_cast<size_t>(model.state_size()));
  io::read_f32_into(arrays, "dtnn_state_slab", path, state_slab.data(), model.state_size());
  io::require_finite(state_slab.data(), state_slab.size(), "dtnn_state_slab", path);

  load_weights(model, path);  // checks every key, shape and value before it changes anything
  std::copy(state_slab.begin(), state_slab.end(), model.host_state_slab());
  model.upload();
  const auto state_slabs = optimizer.state();
  for (size_t i = 0; i < slabs.size(); ++i) state_slabs[i].second->copy_from(slabs[i]);
  optimizer.set_steps(steps);
  optimizer.set_learning_rate(lr[0]);
  schedulers.load_state(arrays, path);
  return state;
}

}  // namespace dtnn
