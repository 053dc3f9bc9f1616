#include "train/trainer.h"

#include <chrono>
#include <cstring>

#include "core/error.h"

namespace dtnn {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int64_t Trainer::reduce_tail_floats(const TrainOptions& options) {
  return 2 + static_cast<int64_t>(parse_metrics(options.metrics).size());  // loss, metrics, count
}

Trainer::Trainer(Model& model, const Dataset& data, Communicator& comm, Optimizer& optimizer,
                 const TrainOptions& options)
    : model_(model), data_(data), comm_(comm), optimizer_(optimizer), options_(options),
      loss_{parse_loss(options.loss_func)}, metrics_(parse_metrics(options.metrics)),
      shuffle_rng_(options.seed ^ 0x5F1FF1E5ull) {
  const Shape out = model.output_shape();
  DTNN_CHECK(out.rank() == 1, "model ", model.name(), " must end in a flat output, not ", out.str());
  classes_ = out[0];
  DTNN_CHECK(classes_ == data.shape().classes, "model ", model.name(), " has ", classes_, " outputs but dataset ",
             data.shape().name, " has ", data.shape().classes, " classes");
  const Shape in = model.input_shape();
  DTNN_CHECK(in.numel() == data.shape().h * data.shape().w * data.shape().c, "model ", model.name(),
             " expects inputs of shape ", in.str(), ", dataset ", data.shape().name, " has ", data.shape().h, "x",
             data.shape().w, "x", data.shape().c);
  fused_softmax_ = loss_[0] == LossKind::categorical_cross_entropy &&
                   model.layer(model.num_layers() - 1).type() == "Softmax" && model.num_layers() >= 3;
  batch_indices_.resize(model.max_batch());
  labels_ = Tensor::zeros(Shape{model.max_batch(), classes_});
  eval_sums_.resize(2 + metrics_.size());
  permutation_.reserve(data.count(Pool::train));
}

std::vector<std::string> Trainer::value_names() const {
  std::vector<std::string> names{loss_name(loss_[0])};
  for (MetricKind m : metrics_) names.push_back(metric_name(m));
  return names;
}

void Trainer::local_share(int64_t global, int64_t* offset, int64_t* count) const {
  const int64_t p = comm_.size(), r = comm_.rank();
  const int64_t base = global / p, extra = global % p;
  *count = base + (r < extra ? 1 : 0);
  *offset = r * base + std::min(r, extra);
}

void Trainer::train_step(const int64_t* indices, int64_t n, int64_t global_n) {
  const size_t last = model_.num_layers() - 1;
  float* tail = model_.reduce_tail();
  if (n > 0) {
    data_.load_batch(Pool::train, indices, n, model_.layout(), model_.input().data(), labels_.data());
    model_.forward(n, Mode::train);
    const Tensor p = model_.output(n);
    double loss;
    if (fused_softmax_) {
      const Tensor dz = model_.gradient(last - 1, n);
      loss = cce_from_logits(model_.activation(last - 1, n).data(), labels_.data(), n, classes_,
                             static_cast<double>(global_n), dz.data());
      model_.backward(n, last - 1);
    } else {
      loss = loss_from_output(loss_[0], p.data(), labels_.data(), n, classes_, static_cast<double>(global_n),
                              model_.gradient(last, n).data());
      model_.backward(n, last);
    }
    tail[0] = static_cast<float>(loss);
    for (size_t m = 0; m < metrics_.size(); ++m)
      tail[1 + m] = static_cast<float>(metric_sum(metrics_[m], p.data(), labels_.data(), n, classes_));
  } else {
    std::memset(model_.grad_slab(), 0, model_.slab_size() * sizeof(float));
    for (size_t m = 0; m <= metrics_.size(); ++m) tail[m] = 0.0f;
  }
  tail[1 + metrics_.size()] = static_cast<float>(n);
  if (comm_.size() > 1) comm_.allreduce_sum(model_.grad_slab(), model_.slab_size() + 2 + metrics_.size());
  optimizer_.step(model_.param_slab(), model_.grad_slab());
}

EpochRecord Trainer::run_epoch(int epoch, int num_epochs, const Splits& splits) {
  EpochRecord rec;
  rec.epoch = epoch;
  rec.learning_rate = optimizer_.learning_rate();
  const int64_t ntrain = static_cast<int64_t>(splits.train.size());
  // Same permutation on every rank (Fisher-Yates from the shared seed stream).
  permutation_.assign(splits.train.begin(), splits.train.end());
  for (int64_t i = ntrain - 1; i > 0; --i)
    std::swap(permutation_[i], permutation_[shuffle_rng_.below(static_cast<uint64_t>(i + 1))]);

  const int64_t global_batch = options_.batch_size * comm_.size();
  const int64_t steps = options_.steps_per_epoch > 0 ? options_.steps_per_epoch
                                                     : (ntrain + global_batch - 1) / global_batch;
  const int64_t total = options_.steps_per_epoch > 0 ? steps * global_batch : ntrain;
  const std::string label = "Epoch " + std::to_string(epoch) + "/" + std::to_string(num_epochs);
  std::vector<double> sums(1 + metrics_.size(), 0.0), means(sums.size());
  int64_t done = 0;
  const float* tail = model_.reduce_tail();
  const double t0 = now_s();
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t start = step * global_batch;
    const int64_t global_n = std::min(global_batch, total - start);
    int64_t offset, n;
    local_share(global_n, &offset, &n);
    for (int64_t i = 0; i < n; ++i) batch_indices_[i] = permutation_[(start + offset + i) % ntrain];
    train_step(batch_indices_.data(), n, global_n);
    for (size_t v = 0; v < sums.size(); ++v) sums[v] += tail[v];
    done += static_cast<int64_t>(tail[sums.size()]);
    if (progress_) {
      for (size_t v = 0; v < sums.size(); ++v) means[v] = sums[v] / static_cast<double>(done);
      progress_(label, done, total, now_s() - t0, means, false);
    }
  }
  rec.train.time_s = comm_.max(now_s() - t0);
  rec.train.samples = done;
  rec.train.values.resize(sums.size());
  for (size_t v = 0; v < sums.size(); ++v) rec.train.values[v] = done ? sums[v] / static_cast<double>(done) : 0.0;
  if (progress_) progress_(label, done, total, rec.train.time_s, rec.train.values, true);
  if (!splits.val.empty()) rec.val = evaluate(splits.val_pool, splits.val, "");
  return rec;
}

PassResult Trainer::evaluate(Pool pool, const std::vector<int64_t>& indices, const std::string& label) {
  const size_t last = model_.num_layers() - 1;
  const int64_t total = static_cast<int64_t>(indices.size());
  const int64_t global_batch = options_.batch_size * comm_.size();
  std::vector<double> local(1 + metrics_.size(), 0.0);
  int64_t local_count = 0;
  const double t0 = now_s();
  for (int64_t start = 0; start < total; start += global_batch) {
    int64_t offset, n;
    local_share(std::min(global_batch, total - start), &offset, &n);
    if (n == 0) continue;
    for (int64_t i = 0; i < n; ++i) batch_indices_[i] = indices[start + offset + i];
    data_.load_batch(pool, batch_indices_.data(), n, model_.layout(), model_.input().data(), labels_.data());
    model_.forward(n, Mode::evaluate);
    const float* p = model_.output(n).data();
    const float* logits = fused_softmax_ ? model_.activation(last - 1, n).data() : nullptr;
    local[0] += loss_value(loss_[0], logits, p, labels_.data(), n, classes_);
    for (size_t m = 0; m < metrics_.size(); ++m) local[1 + m] += metric_sum(metrics_[m], p, labels_.data(), n, classes_);
    local_count += n;
    if (progress_ && !label.empty() && comm_.size() == 1) {
      std::vector<double> means(local.size());
      for (size_t v = 0; v < local.size(); ++v) means[v] = local[v] / static_cast<double>(local_count);
      progress_(label, local_count, total, now_s() - t0, means, false);
    }
  }
  for (size_t v = 0; v < local.size(); ++v) eval_sums_[v] = static_cast<float>(local[v]);
  eval_sums_[local.size()] = static_cast<float>(local_count);
  comm_.allreduce_sum(eval_sums_.data(), static_cast<int64_t>(eval_sums_.size()));
  PassResult result;
  result.time_s = comm_.max(now_s() - t0);
  result.samples = static_cast<int64_t>(eval_sums_[local.size()]);
  for (size_t v = 0; v < local.size(); ++v)
    result.values.push_back(result.samples ? eval_sums_[v] / static_cast<double>(result.samples) : 0.0);
  if (progress_ && !label.empty()) progress_(label, result.samples, total, result.time_s, result.values, true);
  return result;
}

}  // namespace dtnn
