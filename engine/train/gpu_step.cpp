// The GPU's StepDevice (train/step_device.h).
#include <cstdlib>

#include "backend/gpu_ops.h"
#include "core/error.h"
#include "trace/gpu_trace.h"
#include "trace/tracer.h"
#include "train/step_device.h"

namespace dtnn {
namespace {

class GpuStep final : public StepDevice {
 public:
  GpuStep(Model& model, const StepLoss& loss, BatchLoader& loader);

  GpuTrace* set_tracer(Tracer* tracer) override {
    tracer_ = tracer;
    // Marks per step: two per layer forward and backward, loss, gradient sum and update, the step's own two.
    trace_ = tracer ? std::make_unique<GpuTrace>(*tracer, static_cast<int>(4 * model_.num_layers() + 16)) : nullptr;
    model_.set_gpu_trace(trace_.get());
    return trace_.get();
  }
  void flush_trace() override {
    if (trace_) trace_->flush();
  }
  int wait_lane() const override { return 1; }
  void pause_layer_tracing() override {  // the pass is timed on the host: the stream must be idle at its start
    model_.set_tracer(nullptr);
    if (!trace_) return;
    trace_->flush();
    model_.set_gpu_trace(nullptr);
  }
  void resume_layer_tracing() override {
    if (trace_) model_.set_gpu_trace(trace_.get());
  }
  void before_refill() override { input_.wait_host_read(); }

  void begin_pass() override {
    gpu::memset_zero(sums_dev_.data(), sums_host_.size() * sizeof(float));
    done_ = 0;
  }
  void begin_step(int64_t step) override;
  void load(const Batch& batch) override {
    const int64_t n = batch.count;
    input_.upload(batch.x, sizeof(float) * n * model_.input_shape().numel(), model_.input().data(), batch.y,
                  sizeof(float) * n * loss_.classes, labels_dev_.data());
  }
  void loss(int64_t n, int64_t global_n, float* tail) override;
  void no_samples(float* tail) override {
    gpu::memset_zero(model_.grad_slab(), (model_.slab_size() + values_) * sizeof(float));
    gpu::set_value(tail + values_, 0.0f);
  }
  void end_step(const float* tail, int64_t global_n, double) override;
  void add_evaluation(const Batch& batch) override {
    device_loss(batch.count, 1.0, false, sums_dev_.data(), true);
    done_ += batch.count;
  }

  int64_t done() const override { return done_; }
  bool means(bool due, std::vector<double>& means) override {
    if (!due) return false;
    gpu::copy_to_host(sums_host_.data(), sums_dev_.data(), sums_host_.size() * sizeof(float));
    for (int64_t v = 0; v < values_; ++v) means[v] = sums_host_[v] / static_cast<double>(done_);
    return true;
  }
  void totals(std::vector<double>& sums, int64_t* done) override {
    gpu::copy_to_host(sums_host_.data(), sums_dev_.data(), sums_host_.size() * sizeof(float));  // waits
    for (int64_t v = 0; v < values_; ++v) sums[v] = sums_host_[v];
    *done = done_;
  }

 private:
  // Queues the loss/metric kernels for n samples into out[0, values); grad: the loss's gradient (training).
  void device_loss(int64_t n, double global_n, bool training, float* out, bool accumulate);

  Model& model_;
  const StepLoss loss_;
  const size_t last_;
  const int64_t values_;  // loss and metrics
  // One-hot labels of the current batch, the loss kernel's scratch, the pass's running sums (values + count),
  // metric codes, the host copy of the sums.
  Tensor labels_dev_, loss_scratch_, sums_dev_;
  std::vector<int> metric_codes_;
  std::vector<float> sums_host_;
  int64_t done_ = 0;
  int64_t profile_step_ = -1, step_ = -1;  // DTNN_CUDA_PROFILE_STEP: the step in the profiler window
  Tracer* tracer_ = nullptr;
  std::unique_ptr<GpuTrace> trace_;
  // Batches to the device on a copy stream; its destructor drains the copies that still read the loader's
  // page-locked slots (the trainer destroys this object before its loader).
  gpu::InputStager input_;
};

GpuStep::GpuStep(Model& model, const StepLoss& loss, BatchLoader& loader)
    : model_(model), loss_(loss), last_(model.num_layers() - 1), values_(1 + static_cast<int64_t>(loss.metrics.size())),
      input_(sizeof(float) * model.max_batch() * model.input_shape().numel(),
             sizeof(float) * model.max_batch() * loss.classes) {
  static_assert(static_cast<int>(MetricKind::categorical_accuracy) == 0 &&
                    static_cast<int>(MetricKind::regression_mae) == 5,
                "GPU metric codes follow MetricKind (backend/gpu/loss.cu)");
  static_assert(static_cast<int>(LossKind::binary_cross_entropy) == static_cast<int>(gpu::LossCode::binary_cross_entropy),
                "GPU loss codes follow LossKind");
  DTNN_CHECK(loss.metrics.size() <= 8, "at most 8 metrics on the GPU");
  for (MetricKind m : loss.metrics) metric_codes_.push_back(static_cast<int>(m));
  labels_dev_ = Tensor::zeros(Shape{model.max_batch(), loss.classes}, Layout::flat, Device::gpu);
  loss_scratch_ = Tensor::zeros(Shape{model.max_batch() * gpu::kLossScratchPerRow}, Layout::flat, Device::gpu);
  sums_dev_ = Tensor::zeros(Shape{values_ + 1}, Layout::flat, Device::gpu);
  sums_host_.resize(static_cast<size_t>(values_ + 1));
  if (const char* step = std::getenv("DTNN_CUDA_PROFILE_STEP"); step && *step) {
    char* end = nullptr;
    profile_step_ = std::strtoll(step, &end, 10);
    DTNN_CHECK(*end == '\0' && profile_step_ >= 0, "DTNN_CUDA_PROFILE_STEP='", step,
               "': expected a training step number (0, 1, ...)");
  }
  loader.pin_host_memory();
}

void GpuStep::device_loss(int64_t n, double global_n, bool training, float* out, bool accumulate) {
  const float* logits = loss_.fused_softmax ? model_.activation(last_ - 1, n).data() : nullptr;
  float* grad = nullptr;
  if (training) grad = (loss_.fused_softmax ? model_.gradient(last_ - 1, n) : model_.gradient(last_, n)).data();
  gpu::loss_and_metrics(static_cast<gpu::LossCode>(loss_.loss), logits, model_.output(n).data(), labels_dev_.data(),
                        n, loss_.classes, static_cast<float>(1.0 / global_n), grad, metric_codes_.data(),
                        static_cast<int>(metric_codes_.size()), out, accumulate, loss_scratch_.data());
}

void GpuStep::begin_step(int64_t step) {
  step_ = step;
  if (step_ == profile_step_) gpu::profiler_start();
  if (!trace_) return;
  tracer_->set_step(step);
  trace_->begin_step(step);
}

void GpuStep::loss(int64_t n, int64_t global_n, float* tail) {
  const int loss_begin = trace_ ? trace_->mark() : -1;
  device_loss(n, static_cast<double>(global_n), true, tail, false);
  if (trace_) trace_->span(TraceKind::loss, -1, loss_begin);
  gpu::set_value(tail + values_, static_cast<float>(n));
}

void GpuStep::end_step(const float* tail, int64_t global_n, double) {
  gpu::accumulate(sums_dev_.data(), tail, values_ + 1);
  done_ += global_n;
  if (trace_) trace_->end_step();
  if (step_ == profile_step_) gpu::profiler_stop();
}

}  // namespace

std::unique_ptr<StepDevice> make_gpu_step(Model& model, const StepLoss& loss, BatchLoader& loader) {
  return std::make_unique<GpuStep>(model, loss, loader);
}

}  // namespace dtnn
