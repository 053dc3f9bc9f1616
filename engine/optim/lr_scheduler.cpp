#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/strings.h"
#include "models/model.h"

namespace dtnn {
namespace {

// A watched value: which pass, which entry, and which direction is better.
struct Watched {
  std::string name;  // as the user wrote it (printed in messages, like PyDTNN)
  bool val = false;
  size_t index = 0;
  bool greater = false;

  double value(const std::vector<double>& train, const std::vector<double>* val_values) const {
    DTNN_ASSERT(!val || val_values != nullptr);
    const std::vector<double>& v = val ? *val_values : train;
    DTNN_ASSERT(index < v.size());
    return v[index];
  }
  bool better(double a, double b) const { return greater ? a > b : a < b; }
  double worst() const { return greater ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity(); }
};

Watched resolve(const std::string& option, const std::string& name, const SchedulerSetup& s) {
  std::vector<std::string> valid = s.value_names;
  if (s.has_validation)
    for (const std::string& n : s.value_names) valid.push_back("val_" + n);
  Watched w;
  w.name = name;
  w.val = name.rfind("val_", 0) == 0;
  const std::string base = w.val ? name.substr(4) : name;
  size_t i = 0;
  while (i < s.value_names.size() && s.value_names[i] != base) ++i;
  DTNN_CHECK(i < s.value_names.size(), "--", option, ": unknown metric '", name, "' (valid: ", join(valid, ", "), ")");
  DTNN_CHECK(!w.val || s.has_validation, "--", option, "=", name,
             " needs a validation set (--validation_split > 0 or --test_as_validation=True); without one the valid "
             "names are: ", join(valid, ", "));
  w.index = i;
  w.greater = name.find("accuracy") != std::string::npos;
  return w;
}

void print(const SchedulerSetup& s, const std::string& line) {
  if (s.root && s.out) *s.out << line << "\n" << std::flush;
}

std::string format(const char* fmt, const std::string& a, double b) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a.c_str(), b);
  return buf;
}

class WarmUp final : public LRScheduler {
 public:
  WarmUp(const LRSchedulerOptions& o, const SchedulerSetup& s) : optimizer_(*s.optimizer) {
    DTNN_CHECK(o.warm_up_epochs >= 0, "--warm_up_epochs must be non-negative (got ", o.warm_up_epochs, ")");
    total_ = s.steps_per_epoch * o.warm_up_epochs;
    init_lr_ = optimizer_.learning_rate();
    base_lr_ = init_lr_ / s.ranks;
  }
  const char* name() const override { return "warm_up"; }
  void on_batch_begin() override {
    if (total_ > 0 && batch_count_ <= total_) {
      optimizer_.set_learning_rate(base_lr_ + static_cast<double>(batch_count_) * (init_lr_ - base_lr_) /
                                                  static_cast<double>(total_));
      ++batch_count_;
    }
  }
  void on_epoch_end(const std::vector<double>&, const std::vector<double>*) override { ++epoch_count_; }

 protected:
  std::vector<double> numbers() const override {
    return {static_cast<double>(batch_count_), static_cast<double>(total_), base_lr_, init_lr_};
  }
  void set_numbers(const std::vector<double>& v) override {
    batch_count_ = io::whole_count(v[0], "batch count", "");
    total_ = io::whole_count(v[1], "total", "");
    base_lr_ = v[2];
    init_lr_ = v[3];
  }

 private:
  Optimizer& optimizer_;
  int64_t total_ = 0, batch_count_ = 0;
  double base_lr_ = 0.0, init_lr_ = 0.0;
};

class EarlyStopping final : public LRScheduler {
 public:
  EarlyStopping(const LRSchedulerOptions& o, const SchedulerSetup& s)
      : setup_(s), watched_(resolve("early_stopping_metric", o.early_stopping_metric, s)),
        patience_(o.early_stopping_patience), filename_(o.early_stopping_weights_filename) {
    DTNN_CHECK(patience_ >= 0, "--early_stopping_patience must be non-negative (got ", patience_, ")");
    DTNN_ASSERT(s.model != nullptr);
    DTNN_ASSERT(filename_.empty() || s.save_weights);
    best_ = watched_.worst();
    snapshot_.resize(static_cast<size_t>(s.model->slab_size() + s.model->state_size()));  // once, here
  }
  const char* name() const override { return "early_stopping"; }
  void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) override {
    ++epoch_count_;
    const double v = watched_.value(train, val);
    Model& m = *setup_.model;
    if (watched_.better(v, best_)) {
      best_ = v;
      best_epoch_ = epoch_count_;
      m.download();  // GPU models: refresh the host copies first
      std::memcpy(snapshot_.data(), m.host_param_slab(), static_cast<size_t>(m.slab_size()) * sizeof(float));
      if (m.state_size() > 0)
        std::memcpy(snapshot_.data() + m.slab_size(), m.host_state_slab(),
                    static_cast<size_t>(m.state_size()) * sizeof(float));
      has_snapshot_ = true;
      if (!filename_.empty() && setup_.root) setup_.save_weights(filename_);
    } else if (epoch_count_ - best_epoch_ >= patience_) {
      stop_training_ = true;
      if (has_snapshot_) {
        std::memcpy(m.host_param_slab(), snapshot_.data(), static_cast<size_t>(m.slab_size()) * sizeof(float));
        if (m.state_size() > 0)
          std::memcpy(m.host_state_slab(), snapshot_.data() + m.slab_size(),
                      static_cast<size_t>(m.state_size()) * sizeof(float));
        m.upload();
        if (setup_.weights_restored) setup_.weights_restored();
      }
      char buf[512];
      std::snprintf(buf, sizeof buf, "LRScheduler EarlyStopping: metric %s did not improve for %lld epochs, stop training!",
                    watched_.name.c_str(), static_cast<long long>(patience_));
      print(setup_, buf);
    }
  }
  void save_state(const std::string& prefix, std::vector<io::NpyArray>& arrays) const override {
    LRScheduler::save_state(prefix, arrays);
    arrays.push_back(io::make_f32(prefix + "_snapshot", {static_cast<int64_t>(snapshot_.size())}, snapshot_.data()));
  }
  void load_state(const std::string& prefix, const io::NpyArrayMap& arrays, const std::string& path) override {
    LRScheduler::load_state(prefix, arrays, path);
    io::read_f32_into(arrays, prefix + "_snapshot", path, snapshot_.data(), static_cast<int64_t>(snapshot_.size()));
  }

 protected:
  std::vector<double> numbers() const override {
    return {best_, static_cast<double>(best_epoch_), has_snapshot_ ? 1.0 : 0.0};
  }
  void set_numbers(const std::vector<double>& v) override {
    best_ = v[0];
    best_epoch_ = io::whole_count(v[1], "best epoch", "");
    has_snapshot_ = v[2] != 0.0;
  }

 private:
  const SchedulerSetup& setup_;
  Watched watched_;
  bool watches_validation() const override { return watched_.val; }
  int64_t patience_, best_epoch_ = 0;
  double best_;
  std::string filename_;
  std::vector<float> snapshot_;
  bool has_snapshot_ = false;
};

class ReduceLROnPlateau final : public LRScheduler {
 public:
  ReduceLROnPlateau(const LRSchedulerOptions& o, const SchedulerSetup& s)
      : setup_(s), watched_(resolve("reduce_lr_on_plateau_metric", o.reduce_lr_on_plateau_metric, s)),
        factor_(o.reduce_lr_on_plateau_factor), min_lr_(o.reduce_lr_on_plateau_min_lr),
        patience_(o.reduce_lr_on_plateau_patience) {
    DTNN_CHECK(patience_ >= 0, "--reduce_lr_on_plateau_patience must be non-negative (got ", patience_, ")");
    DTNN_CHECK(factor_ > 0, "--reduce_lr_on_plateau_factor must be positive (got ", factor_, ")");
    best_ = watched_.worst();
  }
  const char* name() const override { return "reduce_lr_on_plateau"; }
  void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) override {
    ++epoch_count_;
    const double v = watched_.value(train, val);
    Optimizer& opt = *setup_.optimizer;
    if (watched_.better(v, best_)) {
      best_ = v;
      best_epoch_ = epoch_count_;
    } else if (epoch_count_ - best_epoch_ >= patience_ && opt.learning_rate() * factor_ >= min_lr_) {
      opt.set_learning_rate(opt.learning_rate() * factor_);
      best_epoch_ = epoch_count_;
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "LRScheduler ReduceLROnPlateau: metric %s did not improve for %lld epochs, setting learning rate to %.8f",
                    watched_.name.c_str(), static_cast<long long>(patience_), opt.learning_rate());
      print(setup_, buf);
    }
  }

 protected:
  std::vector<double> numbers() const override { return {best_, static_cast<double>(best_epoch_)}; }
  void set_numbers(const std::vector<double>& v) override {
    best_ = v[0];
    best_epoch_ = io::whole_count(v[1], "best epoch", "");
  }

 private:
  const SchedulerSetup& setup_;
  Watched watched_;
  bool watches_validation() const override { return watched_.val; }
  double factor_, min_lr_, best_;
  int64_t patience_, best_epoch_ = 0;
};

class ReduceLREveryNEpochs final : public LRScheduler {
 public:
  ReduceLREveryNEpochs(const LRSchedulerOptions& o, const SchedulerSetup& s)
      : setup_(s), factor_(o.reduce_lr_every_nepochs_factor), min_lr_(o.reduce_lr_every_nepochs_min_lr),
        nepochs_(o.reduce_lr_every_nepochs_nepochs) {
    DTNN_CHECK(nepochs_ > 0, "--reduce_lr_every_nepochs_nepochs must be positive (got ", nepochs_, ")");
    DTNN_CHECK(factor_ > 0, "--reduce_lr_every_nepochs_factor must be positive (got ", factor_, ")");
  }
  const char* name() const override { return "reduce_lr_every_nepochs"; }
  void on_epoch_end(const std::vector<double>&, const std::vector<double>*) override {
    ++epoch_count_;
    Optimizer& opt = *setup_.optimizer;
    if (epoch_count_ % nepochs_ == 0 && opt.learning_rate() * factor_ >= min_lr_) {
      opt.set_learning_rate(opt.learning_rate() * factor_);
      char buf[256];
      std::snprintf(buf, sizeof buf, "LRScheduler ReduceLREveryNEpochs: setting learning rate to %.8f", opt.learning_rate());
      print(setup_, buf);
    }
  }

 private:
  const SchedulerSetup& setup_;
  double factor_, min_lr_;
  int64_t nepochs_;
};

class StopAtLoss final : public LRScheduler {
 public:
  StopAtLoss(const LRSchedulerOptions& o, const SchedulerSetup& s)
      : setup_(s), watched_(resolve("stop_at_loss_metric", o.stop_at_loss_metric, s)),
        threshold_(o.stop_at_loss_threshold) {}
  const char* name() const override { return "stop_at_loss"; }
  void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) override {
    ++epoch_count_;
    if (watched_.better(watched_.value(train, val), threshold_)) {
      stop_training_ = true;
      print(setup_, format("LRScheduler StopAtLoss: metric %s reached threshold value %f, stop training!", watched_.name,
                           threshold_));
    }
  }

 private:
  const SchedulerSetup& setup_;
  Watched watched_;
  bool watches_validation() const override { return watched_.val; }
  double threshold_;
};

class ModelCheckpoint final : public LRScheduler {
 public:
  ModelCheckpoint(const LRSchedulerOptions& o, const SchedulerSetup& s)
      : setup_(s), watched_(resolve("model_checkpoint_metric", o.model_checkpoint_metric, s)),
        save_freq_(o.model_checkpoint_save_freq) {
    DTNN_CHECK(save_freq_ > 0, "--model_checkpoint_save_freq must be positive (got ", save_freq_, ")");
    DTNN_ASSERT(s.save_weights);
    best_ = watched_.worst();
  }
  const char* name() const override { return "model_checkpoint"; }
  void on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) override {
    ++epoch_count_;
    const double v = watched_.value(train, val);
    if (!watched_.better(v, best_)) return;
    best_ = v;
    best_epoch_ = epoch_count_;
    if (epoch_count_ % save_freq_ != 0) return;
    char date[16];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::strftime(date, sizeof date, "%Y%m%d", &tm);
    const std::string file =
        "./model-" + setup_.model_name + "-epoch-" + std::to_string(epoch_count_) + "-" + date + ".npz";
    if (setup_.root) {
      setup_.save_weights(file);
      print(setup_, "LRScheduler ModelCheckpoint: saving model weights and bias in " + file);
      if (!last_file_.empty() && last_file_ != file) {
        if (setup_.remove_file) {
          setup_.remove_file(last_file_);
        } else {
          std::error_code ec;  // a file someone already removed is not an error
          std::filesystem::remove(last_file_, ec);
        }
      }
    }
    last_file_ = file;
  }
  void save_state(const std::string& prefix, std::vector<io::NpyArray>& arrays) const override {
    LRScheduler::save_state(prefix, arrays);
    arrays.push_back(io::make_text(prefix + "_last_file", last_file_));
  }
  bool is_own_file(const std::string& name) const {
    const std::string head = "./model-" + setup_.model_name + "-epoch-";
    if (name.rfind(head, 0) != 0 || name.size() < head.size() + 14) return false;
    const std::string rest = name.substr(head.size());  // "<N>-<YYYYMMDD>.npz"
    const size_t dash = rest.find('-');
    const auto digits = [](const std::string& t) {
      return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
    };
    return dash != std::string::npos && digits(rest.substr(0, dash)) && rest.size() == dash + 13 &&
           digits(rest.substr(dash + 1, 8)) && rest.compare(dash + 9, 4, ".npz") == 0;
  }
  void load_state(const std::string& prefix, const io::NpyArrayMap& arrays, const std::string& path) override {
    LRScheduler::load_state(prefix, arrays, path);
    const std::string last = io::read_text(arrays, prefix + "_last_file", path);
    // The next save removes this file: only a name this scheduler writes for this model
    // ("./model-<model>-epoch-<N>-<YYYYMMDD>.npz"), never a path a crafted checkpoint names.
    DTNN_CHECK(last.empty() || is_own_file(last), path, ": array '", prefix, "_last_file' names '", last,
               "', not a weights file model_checkpoint writes for ", setup_.model_name, " (it would be removed)");
    last_file_ = last;
  }

 protected:
  std::vector<double> numbers() const override { return {best_, static_cast<double>(best_epoch_)}; }
  void set_numbers(const std::vector<double>& v) override {
    best_ = v[0];
    best_epoch_ = io::whole_count(v[1], "best epoch", "");
  }

 private:
  const SchedulerSetup& setup_;
  Watched watched_;
  bool watches_validation() const override { return watched_.val; }
  int64_t save_freq_, best_epoch_ = 0;
  double best_;
  std::string last_file_;
};

}  // namespace

const std::vector<std::string>& lr_scheduler_names() {
  static const std::vector<std::string> names{"warm_up",      "early_stopping", "reduce_lr_on_plateau",
                                              "reduce_lr_every_nepochs", "stop_at_loss", "model_checkpoint"};
  return names;
}

void LRScheduler::save_state(const std::string& prefix, std::vector<io::NpyArray>& arrays) const {
  std::vector<double> v{static_cast<double>(epoch_count_), stop_training_ ? 1.0 : 0.0};
  for (double x : numbers()) v.push_back(x);
  arrays.push_back(io::make_f64(prefix, v));
}

void LRScheduler::load_state(const std::string& prefix, const io::NpyArrayMap& arrays, const std::string& path) {
  const std::vector<double> v = io::read_f64(arrays, prefix, path);
  DTNN_CHECK(v.size() == 2 + numbers().size(), path, ": array '", prefix, "' has ", v.size(), " values, expected ",
             2 + numbers().size());
  // The counts must be whole numbers (a cast of 1e300 or NaN is undefined behaviour); the messages of
  // set_numbers' checks name this file and array.
  try {
    epoch_count_ = io::whole_count(v[0], "epoch count", "");
    stop_training_ = v[1] != 0.0;
    set_numbers(std::vector<double>(v.begin() + 2, v.end()));
  } catch (const Error& e) {
    std::string why = e.what();
    if (why.rfind(": ", 0) == 0) why.erase(0, 2);  // whole_count's empty path
    fail(path, ": array '", prefix, "': ", why);
  }
}

LRSchedulers::LRSchedulers(const LRSchedulerOptions& o, const SchedulerSetup& setup) : setup_(setup) {
  DTNN_ASSERT(setup_.optimizer != nullptr);
  std::vector<std::string> names;
  size_t start = 0;
  while (start < o.names.size()) {
    size_t end = o.names.find(',', start);
    if (end == std::string::npos) end = o.names.size();
    std::string name = o.names.substr(start, end - start);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    start = end + 1;
    if (name.empty() || (name == "none" && o.names == "none")) continue;  // "none": the help's spelling of the default
    const auto& known = lr_scheduler_names();
    DTNN_CHECK(std::find(known.begin(), known.end(), name) != known.end(), "--lr_schedulers: unknown scheduler '", name,
               "' (known: ", join(known, ", "), ")");
    names.push_back(name);
  }
  for (const std::string& name : names) {
    if (name == "warm_up") {
      list_.push_back(std::make_unique<WarmUp>(o, setup_));
    } else if (name == "early_stopping") {
      list_.push_back(std::make_unique<EarlyStopping>(o, setup_));
    } else if (name == "reduce_lr_on_plateau") {
      list_.push_back(std::make_unique<ReduceLROnPlateau>(o, setup_));
    } else if (name == "reduce_lr_every_nepochs") {
      list_.push_back(std::make_unique<ReduceLREveryNEpochs>(o, setup_));
    } else if (name == "stop_at_loss") {
      list_.push_back(std::make_unique<StopAtLoss>(o, setup_));
    } else {
      list_.push_back(std::make_unique<ModelCheckpoint>(o, setup_));
    }
  }
}

LRSchedulers::~LRSchedulers() = default;

void LRSchedulers::on_epoch_end(const std::vector<double>& train, const std::vector<double>* val) {
  for (auto& s : list_) s->on_epoch_end(train, val);
}

bool LRSchedulers::watch_validation() const {
  for (const auto& s : list_)
    if (s->watches_validation()) return true;
  return false;
}

bool LRSchedulers::stop_training() const {
  for (const auto& s : list_)
    if (s->stop_training()) return true;
  return false;
}

void LRSchedulers::save_state(std::vector<io::NpyArray>& arrays) const {
  for (size_t i = 0; i < list_.size(); ++i)
    list_[i]->save_state("dtnn_scheduler_" + std::to_string(i) + "_" + list_[i]->name(), arrays);
}

void LRSchedulers::load_state(const io::NpyArrayMap& arrays, const std::string& path) {
  for (size_t i = 0; i < list_.size(); ++i)
    list_[i]->load_state("dtnn_scheduler_" + std::to_string(i) + "_" + list_[i]->name(), arrays, path);
}

}  // namespace dtnn
