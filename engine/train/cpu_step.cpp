// The CPU's StepDevice (train/step_device.h).
#include <cstring>

#include "core/clock.h"
#include "trace/tracer.h"
#include "train/step_device.h"

namespace dtnn {
namespace {

class CpuStep final : public StepDevice {
 public:
  CpuStep(Model& model, const StepLoss& loss)
      : model_(model), loss_(loss), last_(model.num_layers() - 1), sums_(1 + loss.metrics.size()) {}

  GpuTrace* set_tracer(Tracer* tracer) override {
    tracer_ = tracer;
    model_.set_tracer(tracer);
    return nullptr;
  }
  void pause_layer_tracing() override { model_.set_tracer(nullptr); }
  void resume_layer_tracing() override { model_.set_tracer(tracer_); }

  void begin_pass() override {
    std::fill(sums_.begin(), sums_.end(), 0.0);
    done_ = 0;
  }
  void begin_step(int64_t step) override {
    if (tracer_) tracer_->set_step(step);
  }
  void load(const Batch& batch) override {
    std::memcpy(model_.input().data(), batch.x, sizeof(float) * batch.count * model_.input_shape().numel());
    labels_ = batch.y;
  }
  void loss(int64_t n, int64_t global_n, float* tail) override;
  void no_samples(float* tail) override {
    std::memset(model_.grad_slab(), 0, model_.slab_size() * sizeof(float));
    for (size_t v = 0; v < sums_.size(); ++v) tail[v] = 0.0f;
    tail[sums_.size()] = 0.0f;
  }
  void end_step(const float* tail, int64_t, double began) override {
    for (size_t v = 0; v < sums_.size(); ++v) sums_[v] += tail[v];
    done_ += static_cast<int64_t>(tail[sums_.size()]);
    if (tracer_) tracer_->add(TraceKind::step, -1, began, now_s());
  }
  void add_evaluation(const Batch& batch) override;

  int64_t done() const override { return done_; }
  bool means(bool, std::vector<double>& means) override {
    for (size_t v = 0; v < sums_.size(); ++v) means[v] = sums_[v] / static_cast<double>(done_);
    return true;
  }
  void totals(std::vector<double>& sums, int64_t* done) override {
    sums = sums_;
    *done = done_;
  }

 private:
  Model& model_;
  const StepLoss loss_;
  const size_t last_;
  std::vector<double> sums_;
  int64_t done_ = 0;
  const float* labels_ = nullptr;  // the loaded batch's one-hot labels, in the loader's buffer
  Tracer* tracer_ = nullptr;
};

void CpuStep::loss(int64_t n, int64_t global_n, float* tail) {
  const double t0 = tracer_ ? now_s() : 0.0;
  const int64_t k = loss_.classes;
  const Tensor p = model_.output(n);
  const double loss =
      loss_.fused_softmax
          ? cce_from_logits(model_.activation(last_ - 1, n).data(), labels_, n, k, static_cast<double>(global_n),
                            model_.gradient(last_ - 1, n).data())
          : loss_from_output(loss_.loss, p.data(), labels_, n, k, static_cast<double>(global_n),
                             model_.gradient(last_, n).data());
  tail[0] = static_cast<float>(loss);
  for (size_t m = 0; m < loss_.metrics.size(); ++m)
    tail[1 + m] = static_cast<float>(metric_sum(loss_.metrics[m], p.data(), labels_, n, k));
  tail[1 + loss_.metrics.size()] = static_cast<float>(n);
  if (tracer_) tracer_->add(TraceKind::loss, -1, t0, now_s());
}

void CpuStep::add_evaluation(const Batch& batch) {
  const int64_t n = batch.count, k = loss_.classes;
  const float* p = model_.output(n).data();
  const float* logits = loss_.fused_softmax ? model_.activation(last_ - 1, n).data() : nullptr;
  sums_[0] += loss_value(loss_.loss, logits, p, batch.y, n, k);
  for (size_t m = 0; m < loss_.metrics.size(); ++m) sums_[1 + m] += metric_sum(loss_.metrics[m], p, batch.y, n, k);
  done_ += n;
}

}  // namespace

std::unique_ptr<StepDevice> make_cpu_step(Model& model, const StepLoss& loss) {
  return std::make_unique<CpuStep>(model, loss);
}

std::unique_ptr<StepDevice> make_step_device(Model& model, const StepLoss& loss, BatchLoader& loader) {
  return model.device() == Device::gpu ? make_gpu_step(model, loss, loader) : make_cpu_step(model, loss);
}

}  // namespace dtnn
